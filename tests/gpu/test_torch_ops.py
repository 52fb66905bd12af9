#!/usr/bin/env python3
"""test_torch_ops: the kforge torch ops (kernels/torch/) on the local GPU.

Each op against the PyTorch formula the models use (bf16 and f32, a width
that is not a multiple of the vector width where the kernel allows it),
torch.library.opcheck (schema, fake implementation, dispatch), clear errors
for a non-contiguous and a wrong-dtype input, torch.compile(fullgraph=True)
with no graph break, and a CUDA-graph capture and replay. Skips with a line
when torch or a GPU is missing. Exit status 1 on any failure.
"""
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("test_torch_ops: SKIP (no torch)")
    sys.exit(0)
if not torch.cuda.is_available():
    print("test_torch_ops: SKIP (no CUDA GPU)")
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels",
                                "torch"))
import kforge_torch  # noqa: E402

kforge_torch.load()
K = torch.ops.kforge
FAILS = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}", flush=True)
    if not ok:
        FAILS.append(name)


def close(name, got, want, tol):
    err = float((got.float() - want.float()).abs().max())
    scale = float(want.float().abs().max()) or 1.0
    check(name, err <= tol * scale, f"max err {err:.3g} (scale {scale:.3g})")


def rms_ref(x, w, eps):
    v = x.float().pow(2).mean(-1, keepdim=True)
    y = x.float() * torch.rsqrt(v + eps)
    return y * w.float() if w is not None else y


def rope_hf(x, cos, sin):
    h = x.shape[-1] // 2
    rot = torch.cat((-x[..., h:], x[..., :h]), -1)
    return x * cos + rot * sin


def qk_ref(qkv, qw, kw, cos, sin, H, KV, eps):
    B, S, N = qkv.shape
    dh = N // (H + 2 * KV)
    q = qkv[..., :H * dh].float().view(B, S, H, dh)
    k = qkv[..., H * dh:(H + KV) * dh].float().view(B, S, KV, dh)
    if qw is not None:
        q, k = rms_ref(q, qw, eps), rms_ref(k, kw, eps)
    c, s = cos.float()[:, :, None], sin.float()[:, :, None]
    return rope_hf(q, c, s), rope_hf(k, c, s)


def test_values(dt, tol):
    g = torch.Generator(device="cuda").manual_seed(0)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g, dtype=dt)  # noqa: E731
    for D in (4096, 1000):
        x, w, res = r(37, D), r(D), r(37, D)
        close(f"rmsnorm {dt} D={D}", K.rmsnorm(x, w, 1e-6), rms_ref(x, w, 1e-6), tol)
        close(f"rmsnorm noweight {dt} D={D}", K.rmsnorm(x, None, 1e-6), rms_ref(x, None, 1e-6),
              tol)
        y, s = K.add_rmsnorm(x, res, w, 1e-6)
        close(f"add_rmsnorm sum {dt} D={D}", s, x + res, tol)
        close(f"add_rmsnorm y {dt} D={D}", y, rms_ref(s, w, 1e-6), tol)
        b = r(D)
        close(f"layernorm {dt} D={D}", K.layernorm(x, w, b, 1e-5),
              F.layer_norm(x.float(), (D,), w.float(), b.float(), 1e-5), tol)
        x2 = r(37, 2 * D)
        a, m = x2[:, :D].float(), x2[:, D:].float()
        close(f"silu_and_mul {dt} D={D}", K.silu_and_mul(x2), F.silu(a) * m, tol)
        close(f"geglu {dt} D={D}", K.geglu(x2, "none"), F.gelu(a) * m, tol)
        close(f"geglu tanh {dt} D={D}", K.geglu(x2, "tanh"), F.gelu(a, approximate="tanh") * m,
              tol)
        close(f"gelu tanh {dt} D={D}", K.gelu(x, "tanh"), F.gelu(x.float(), approximate="tanh"),
              tol)
        sc, sh = r(1, D), r(1, D)
        x3 = x.view(1, 37, D)
        close(f"adaln_modulate {dt} D={D}", K.adaln_modulate(x3, sc, sh),
              x3.float() * (1 + sc.float()[:, None]) + sh.float()[:, None], tol)
    T, H, dh = 19, 4, 128
    ang = torch.rand(T, dh // 2, device="cuda", generator=g) * 6.28
    xr = r(T, H, dh)
    c, s = torch.cat([ang.cos()] * 2, -1)[:, None], torch.cat([ang.sin()] * 2, -1)[:, None]
    close(f"rope neox {dt}", K.rope(xr, ang.cos().contiguous(), ang.sin().contiguous(), True),
          rope_hf(xr.float(), c, s), tol)
    for dh, B, cb in ((128, 3, 3), (128, 3, 1), (64, 2, 2), (256, 1, 1)):
        H, KV, S = 8, 2, 5
        qkv = r(B, S, (H + 2 * KV) * dh)
        qw, kw = r(dh), r(dh)
        ang = torch.rand(cb, S, dh // 2, device="cuda", generator=g) * 6.28
        cos = torch.cat([ang.cos()] * 2, -1).to(dt)
        sin = torch.cat([ang.sin()] * 2, -1).to(dt)
        q, k = K.qk_norm_rope(qkv, qw, kw, cos, sin, H, KV, 1e-6)
        qr, kr = qk_ref(qkv, qw, kw, cos, sin, H, KV, 1e-6)
        close(f"qk_norm_rope q {dt} dh={dh} cos batch {cb}", q, qr, tol)
        close(f"qk_norm_rope k {dt} dh={dh} cos batch {cb}", k, kr, tol)
        q, k = K.qk_norm_rope(qkv, None, None, cos, sin, H, KV, 0.0)
        qr, kr = qk_ref(qkv, None, None, cos, sin, H, KV, 0.0)
        close(f"qk rope only {dt} dh={dh}", q, qr, tol)


def raises(name, fn, words):
    try:
        fn()
    except (RuntimeError, NotImplementedError) as e:
        msg = str(e)
        check(name, all(w in msg for w in words), repr(msg.splitlines()[0][:160]))
        return
    check(name, False, "no error raised")


def test_errors():
    x = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(256, device="cuda", dtype=torch.bfloat16)
    raises("non-contiguous input", lambda: K.rmsnorm(x.t(), None, 1e-6),
           ["not contiguous", ".contiguous()"])
    raises("wrong dtype weight", lambda: K.rmsnorm(x, w.float(), 1e-6),
           ["'weight'", "Float", "BFloat16"])
    raises("integer input", lambda: K.silu_and_mul(x.to(torch.int32)), ["dtype", "Int"])
    raises("cpu input", lambda: K.rmsnorm(x.cpu(), None, 1e-6), ["CPU", "CUDA"])
    raises("wrong weight shape", lambda: K.rmsnorm(x, w[:100], 1e-6), ["[100]", "[256]"])
    raises("odd gated width", lambda: K.silu_and_mul(x[:, :255].contiguous()), ["even"])
    raises("bad head dim", lambda: K.qk_norm_rope(x.view(1, 8, 256), None, None,
                                                  x[:, :32].reshape(1, 8, 32),
                                                  x[:, :32].reshape(1, 8, 32), 2, 3, 0.0),
           ["head dim", "64, 128 or 256"])


def test_torch_integration():
    dt = torch.bfloat16
    x = torch.randn(16, 512, device="cuda", dtype=dt)
    w = torch.randn(512, device="cuda", dtype=dt)
    x2 = torch.randn(16, 1024, device="cuda", dtype=dt)
    qkv = torch.randn(2, 4, 8 * 128, device="cuda", dtype=dt)
    cos = torch.randn(1, 4, 128, device="cuda", dtype=dt)
    for name, op, args in (("rmsnorm", K.rmsnorm.default, (x, w, 1e-6)),
                           ("add_rmsnorm", K.add_rmsnorm.default, (x, x.clone(), w, 1e-6)),
                           ("silu_and_mul", K.silu_and_mul.default, (x2,)),
                           ("geglu", K.geglu.default, (x2, "tanh")),
                           ("layernorm", K.layernorm.default, (x, w, None, 1e-5)),
                           ("adaln_modulate", K.adaln_modulate.default,
                            (x.view(2, 8, 512), w.expand(2, 512).contiguous(),
                             w.expand(2, 512).contiguous())),
                           ("qk_norm_rope", K.qk_norm_rope.default,
                            (qkv, w[:128].contiguous(), w[:128].contiguous(), cos, cos, 4, 2, 1e-6))):
        try:
            torch.library.opcheck(op, args)
            check(f"opcheck {name}", True)
        except Exception as e:  # noqa: BLE001 - report any opcheck failure
            check(f"opcheck {name}", False, str(e).splitlines()[0][:200])

    def f(a, b):
        y, s = K.add_rmsnorm(a, b, w, 1e-6)
        return K.silu_and_mul(torch.cat([y, s], -1)) * 2
    want = f(x, x)
    try:
        got = torch.compile(f, fullgraph=True)(x, x)
        close("torch.compile fullgraph", got, want, 1e-2)
    except Exception as e:  # noqa: BLE001
        check("torch.compile fullgraph", False, str(e).splitlines()[0][:200])
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f(x, x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = f(x, x)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    close("cuda graph replay", out, f(x, x), 1e-2)


test_values(torch.bfloat16, 2e-2)
test_values(torch.float32, 1e-4)
test_errors()
test_torch_integration()
print(f"test_torch_ops: {len(FAILS)} failure(s)" + (": " + ", ".join(FAILS) if FAILS else ""))
sys.exit(1 if FAILS else 0)
