/* kforge_ops: kforge's library kernels (kernels/*.cu, unchanged) and the
 * fused qk_norm_rope as PyTorch custom ops in the `kforge` namespace.
 * Each op is C++ end to end (no Python on the call path): it checks
 * device, dtype, shape and contiguity with TORCH_CHECK messages that name
 * the argument and what would be right, allocates its outputs through
 * torch's caching allocator, launches on the current CUDA stream (so it is
 * CUDA-graph capturable) and raises the launch error. The fake (meta)
 * implementations that torch.compile traces with are in
 * kforge_torch/__init__.py; the two must agree on output shapes. */
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "kernels/activation.h"
#include "kernels/adaln.h"
#include "kernels/layernorm.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/torch/qk_norm_rope.h"

namespace
{

enum kf_dtype dt_of(const at::Tensor &t, const char *op, const char *name)
{
	switch (t.scalar_type()) {
	case at::kFloat: return KF_DT_F32;
	case at::kHalf: return KF_DT_F16;
	case at::kBFloat16: return KF_DT_BF16;
	default:
		TORCH_CHECK(false, "kforge::", op, ": '", name, "' has dtype ", t.scalar_type(),
			    "; expected float32, float16 or bfloat16");
	}
	return KF_DT_F32;
}

/* x: a CUDA tensor, contiguous, of a supported dtype, rank >= min_rank. */
enum kf_dtype check_x(const at::Tensor &x, const char *op, int64_t min_rank)
{
	TORCH_CHECK(x.is_cuda(), "kforge::", op, ": 'x' is on ", x.device(),
		    "; expected a CUDA tensor");
	TORCH_CHECK(x.is_contiguous(), "kforge::", op, ": 'x' of shape ", x.sizes(),
		    " and strides ", x.strides(), " is not contiguous; call .contiguous() first");
	TORCH_CHECK(x.dim() >= min_rank, "kforge::", op, ": 'x' has shape ", x.sizes(),
		    "; expected at least ", min_rank, " dimensions");
	return dt_of(x, op, "x");
}

/* t: on x's device, x's dtype, contiguous, of exactly shape. */
void check_like(const at::Tensor &t, const at::Tensor &x, at::IntArrayRef shape, const char *op,
		const char *name)
{
	TORCH_CHECK(t.device() == x.device(), "kforge::", op, ": '", name, "' is on ", t.device(),
		    "; expected ", x.device(), " like 'x'");
	TORCH_CHECK(t.scalar_type() == x.scalar_type(), "kforge::", op, ": '", name, "' has dtype ",
		    t.scalar_type(), "; expected ", x.scalar_type(),
		    " like 'x' (cast the weight to the activation dtype)");
	TORCH_CHECK(t.sizes() == shape, "kforge::", op, ": '", name, "' has shape ", t.sizes(),
		    "; expected ", shape);
	TORCH_CHECK(t.is_contiguous(), "kforge::", op, ": '", name, "' is not contiguous");
}

void check_launch(cudaError_t e, const char *op)
{
	TORCH_CHECK(e == cudaSuccess, "kforge::", op, ": launch failed: ", cudaGetErrorString(e));
}

const void *opt_ptr(const std::optional<at::Tensor> &t, const at::Tensor &x, int64_t D,
		    const char *op, const char *name)
{
	if (!t.has_value())
		return nullptr;
	check_like(*t, x, {D}, op, name);
	return t->data_ptr();
}

at::Tensor rmsnorm(const at::Tensor &x, const std::optional<at::Tensor> &w, double eps)
{
	enum kf_dtype dt = check_x(x, "rmsnorm", 1);
	int64_t D = x.size(-1), T = D ? x.numel() / D : 0;
	const void *wp = opt_ptr(w, x, D, "rmsnorm", "weight");
	c10::cuda::CUDAGuard g(x.device());
	at::Tensor y = at::empty_like(x);
	check_launch(rmsnorm_launch(dt, y.data_ptr(), x.data_ptr(), wp, T, D, (float)eps,
				    at::cuda::getCurrentCUDAStream()),
		     "rmsnorm");
	return y;
}

std::tuple<at::Tensor, at::Tensor> add_rmsnorm(const at::Tensor &x, const at::Tensor &res,
					       const at::Tensor &w, double eps)
{
	enum kf_dtype dt = check_x(x, "add_rmsnorm", 1);
	int64_t D = x.size(-1), T = D ? x.numel() / D : 0;
	check_like(res, x, x.sizes(), "add_rmsnorm", "residual");
	check_like(w, x, {D}, "add_rmsnorm", "weight");
	c10::cuda::CUDAGuard g(x.device());
	at::Tensor y = at::empty_like(x), r = at::empty_like(x);
	check_launch(add_rmsnorm_launch(dt, y.data_ptr(), r.data_ptr(), x.data_ptr(),
					res.data_ptr(), w.data_ptr(), T, D, (float)eps,
					at::cuda::getCurrentCUDAStream()),
		     "add_rmsnorm");
	return {y, r};
}

at::Tensor layernorm(const at::Tensor &x, const std::optional<at::Tensor> &w,
		     const std::optional<at::Tensor> &b, double eps)
{
	enum kf_dtype dt = check_x(x, "layernorm", 1);
	int64_t D = x.size(-1), T = D ? x.numel() / D : 0;
	const void *wp = opt_ptr(w, x, D, "layernorm", "weight");
	const void *bp = opt_ptr(b, x, D, "layernorm", "bias");
	c10::cuda::CUDAGuard g(x.device());
	at::Tensor y = at::empty_like(x);
	check_launch(layernorm_launch(dt, y.data_ptr(), x.data_ptr(), wp, bp, T, D, (float)eps,
				      at::cuda::getCurrentCUDAStream()),
		     "layernorm");
	return y;
}

at::Tensor act(const at::Tensor &x, enum kf_act_op op, const char *name, bool gated)
{
	enum kf_dtype dt = check_x(x, name, 1);
	int64_t W = x.size(-1);
	TORCH_CHECK(!gated || W % 2 == 0, "kforge::", name, ": 'x' has last dimension ", W,
		    "; a gated op needs an even width (gate half, then the multiplier half)");
	int64_t D = gated ? W / 2 : W, T = W ? x.numel() / W : 0;
	std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
	shape.back() = D;
	c10::cuda::CUDAGuard g(x.device());
	at::Tensor y = at::empty(shape, x.options());
	check_launch(activation_launch(op, dt, y.data_ptr(), x.data_ptr(), T, D,
				       at::cuda::getCurrentCUDAStream()),
		     name);
	return y;
}

bool tanh_of(const std::string &approximate, const char *op)
{
	TORCH_CHECK(approximate == "none" || approximate == "tanh", "kforge::", op,
		    ": approximate='", approximate, "'; expected 'none' or 'tanh'");
	return approximate == "tanh";
}

at::Tensor silu_and_mul(const at::Tensor &x)
{
	return act(x, KF_ACT_SILU_AND_MUL, "silu_and_mul", true);
}

at::Tensor geglu(const at::Tensor &x, const std::string &approximate)
{
	return tanh_of(approximate, "geglu") ? act(x, KF_ACT_GEGLU_TANH, "geglu", true)
					     : act(x, KF_ACT_GEGLU, "geglu", true);
}

at::Tensor gelu(const at::Tensor &x, const std::string &approximate)
{
	return tanh_of(approximate, "gelu") ? act(x, KF_ACT_GELU_TANH, "gelu", false)
					    : act(x, KF_ACT_GELU, "gelu", false);
}

/* x (T, H, Dh); cos, sin (T, Dh/2) float32. */
at::Tensor rope(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin, bool neox)
{
	enum kf_dtype dt = check_x(x, "rope", 3);
	TORCH_CHECK(x.dim() == 3, "kforge::rope: 'x' has shape ", x.sizes(),
		    "; expected (T, H, Dh)");
	int64_t T = x.size(0), H = x.size(1), Dh = x.size(2);
	TORCH_CHECK(Dh % 2 == 0, "kforge::rope: head dim ", Dh, " is odd; expected even");
	for (const at::Tensor *t : {&cos, &sin}) {
		const char *n = t == &cos ? "cos" : "sin";
		TORCH_CHECK(t->device() == x.device() && t->scalar_type() == at::kFloat &&
				    t->is_contiguous() &&
				    t->sizes() == at::IntArrayRef({T, Dh / 2}),
			    "kforge::rope: '", n, "' is ", t->scalar_type(), " ", t->sizes(),
			    " on ", t->device(), "; expected contiguous float32 (", T, ", ", Dh / 2,
			    ") on ", x.device());
	}
	c10::cuda::CUDAGuard g(x.device());
	at::Tensor y = at::empty_like(x);
	check_launch(rope_launch(neox, dt, y.data_ptr(), x.data_ptr(), cos.data_ptr<float>(),
				 sin.data_ptr<float>(), T, H, Dh, at::cuda::getCurrentCUDAStream()),
		     "rope");
	return y;
}

/* x (B, S, D); scale, shift (B, D). */
at::Tensor adaln_modulate(const at::Tensor &x, const at::Tensor &scale, const at::Tensor &shift)
{
	enum kf_dtype dt = check_x(x, "adaln_modulate", 3);
	TORCH_CHECK(x.dim() == 3, "kforge::adaln_modulate: 'x' has shape ", x.sizes(),
		    "; expected (B, S, D)");
	int64_t B = x.size(0), S = x.size(1), D = x.size(2);
	check_like(scale, x, {B, D}, "adaln_modulate", "scale");
	check_like(shift, x, {B, D}, "adaln_modulate", "shift");
	c10::cuda::CUDAGuard g(x.device());
	at::Tensor y = at::empty_like(x);
	check_launch(adaln_modulate_launch(dt, y.data_ptr(), x.data_ptr(), scale.data_ptr(),
					   shift.data_ptr(), B, S, D,
					   at::cuda::getCurrentCUDAStream()),
		     "adaln_modulate");
	return y;
}

/* qkv (B, S, (H+2KV)*Dh) with unit last stride; cos, sin (B or 1, S, Dh).
 * Returns q (B, S, H, Dh), k (B, S, KV, Dh). */
std::tuple<at::Tensor, at::Tensor> qk_norm_rope(const at::Tensor &qkv,
						const std::optional<at::Tensor> &q_w,
						const std::optional<at::Tensor> &k_w,
						const at::Tensor &cos, const at::Tensor &sin,
						int64_t H, int64_t KV, double eps)
{
	const char *op = "qk_norm_rope";
	TORCH_CHECK(qkv.is_cuda() && qkv.dim() == 3 && qkv.stride(2) == 1 &&
			    qkv.stride(0) == qkv.size(1) * qkv.stride(1),
		    "kforge::qk_norm_rope: 'qkv' has shape ", qkv.sizes(), " and strides ",
		    qkv.strides(), " on ", qkv.device(),
		    "; expected a CUDA (B, S, N) tensor with rows of unit stride");
	enum kf_dtype dt = dt_of(qkv, op, "qkv");
	int64_t B = qkv.size(0), S = qkv.size(1);
	TORCH_CHECK(H >= 1 && KV >= 1 && qkv.size(2) % (H + 2 * KV) == 0,
		    "kforge::qk_norm_rope: width ", qkv.size(2),
		    " is not (H + 2*KV) * Dh for H=", H, ", KV=", KV);
	int64_t Dh = qkv.size(2) / (H + 2 * KV);
	TORCH_CHECK(Dh == 64 || Dh == 128 || Dh == 256, "kforge::qk_norm_rope: head dim ", Dh,
		    "; expected 64, 128 or 256");
	TORCH_CHECK(q_w.has_value() == k_w.has_value(),
		    "kforge::qk_norm_rope: pass both q_weight and k_weight, or neither");
	const void *qw = opt_ptr(q_w, qkv, Dh, op, "q_weight");
	const void *kw = opt_ptr(k_w, qkv, Dh, op, "k_weight");
	TORCH_CHECK(cos.dim() == 3 && (cos.size(0) == B || cos.size(0) == 1) && cos.size(1) == S &&
			    cos.size(2) == Dh,
		    "kforge::qk_norm_rope: 'cos' has shape ", cos.sizes(), "; expected (", B,
		    " or 1, ", S, ", ", Dh, ")");
	check_like(cos, qkv, cos.sizes(), op, "cos");
	check_like(sin, qkv, cos.sizes(), op, "sin");
	c10::cuda::CUDAGuard g(qkv.device());
	at::Tensor q = at::empty({B, S, H, Dh}, qkv.options());
	at::Tensor k = at::empty({B, S, KV, Dh}, qkv.options());
	int bcast = cos.size(0) == 1 && B > 1;
	check_launch(qk_norm_rope_launch(dt, q.data_ptr(), k.data_ptr(), qkv.data_ptr(), qw, kw,
					 cos.data_ptr(), sin.data_ptr(), B * S, H, KV, Dh,
					 qkv.stride(1), S, bcast, (float)eps,
					 at::cuda::getCurrentCUDAStream()),
		     op);
	return {q, k};
}

} // namespace

TORCH_LIBRARY(kforge, m)
{
	m.def("rmsnorm(Tensor x, Tensor? weight, float eps) -> Tensor");
	m.def("add_rmsnorm(Tensor x, Tensor residual, Tensor weight, float eps) -> (Tensor, Tensor)");
	m.def("layernorm(Tensor x, Tensor? weight, Tensor? bias, float eps) -> Tensor");
	m.def("silu_and_mul(Tensor x) -> Tensor");
	m.def("geglu(Tensor x, str approximate='none') -> Tensor");
	m.def("gelu(Tensor x, str approximate='none') -> Tensor");
	m.def("rope(Tensor x, Tensor cos, Tensor sin, bool neox=True) -> Tensor");
	m.def("adaln_modulate(Tensor x, Tensor scale, Tensor shift) -> Tensor");
	m.def("qk_norm_rope(Tensor qkv, Tensor? q_weight, Tensor? k_weight, Tensor cos, "
	      "Tensor sin, int num_heads, int num_kv_heads, float eps) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(kforge, CUDA, m)
{
	m.impl("rmsnorm", &rmsnorm);
	m.impl("add_rmsnorm", &add_rmsnorm);
	m.impl("layernorm", &layernorm);
	m.impl("silu_and_mul", &silu_and_mul);
	m.impl("geglu", &geglu);
	m.impl("gelu", &gelu);
	m.impl("rope", &rope);
	m.impl("adaln_modulate", &adaln_modulate);
	m.impl("qk_norm_rope", &qk_norm_rope);
}
