"""kforge_torch.patch: swap a model's modules for kforge's ops.

A patch map is {target: op}; a target is a module class name
("Qwen3RMSNorm") or an fnmatch pattern over qualified module names
("model.layers.*.mlp"); the op is one of PATCH_OPS. apply(model, pmap)
changes the matching modules in place (their forward, and for the fused
projections their weights: q|k|v and gate|up are concatenated once, the
separate projections dropped) and returns {target: count}. A class name
the model does not have raises UnknownTarget listing the classes it has;
an op that does not fit a matched module raises ValueError naming both.

Every patched forward calls torch.ops.kforge.* (C++), so under
torch.compile the ops are single opaque nodes with fake implementations:
no graph break, but no Inductor fusion across them either.
"""
import fnmatch
import types

import torch
import torch.nn.functional as F


class UnknownTarget(ValueError):
    """A patch target that names no module; .target and .classes (the
    model's module class names) say which and what there is."""

    def __init__(self, target, classes):
        super().__init__(f"patch '{target}': no module of the model matches; its classes "
                         "are " + ", ".join(classes))
        self.target, self.classes = target, classes


def _eps(m):
    for k in ("variance_epsilon", "eps"):
        if hasattr(m, k):
            return float(getattr(m, k))
    raise ValueError(f"{type(m).__name__} has no eps / variance_epsilon")


def _rmsnorm(m):
    if not hasattr(m, "weight"):
        raise ValueError(f"{type(m).__name__}: rmsnorm needs a module with .weight")
    eps = _eps(m)

    def fwd(self, x):
        return torch.ops.kforge.rmsnorm(x.contiguous(), self.weight, eps)
    return fwd


def _layernorm(m):
    eps = _eps(m)

    def fwd(self, x):
        return torch.ops.kforge.layernorm(x.contiguous(), self.weight, self.bias, eps)
    return fwd


def _cat_linears(m, names, new_name):
    """Replaces the Linear children `names` of m by one Linear new_name whose
    weight rows are theirs concatenated (one GEMM instead of several)."""
    lins = [getattr(m, n) for n in names]
    if any(not isinstance(li, torch.nn.Linear) for li in lins):
        raise ValueError(f"{type(m).__name__}: expected nn.Linear children {names}")
    bias = lins[0].bias is not None
    cat = torch.nn.Linear(lins[0].in_features, sum(li.out_features for li in lins), bias=bias,
                          device=lins[0].weight.device, dtype=lins[0].weight.dtype)
    with torch.no_grad():
        cat.weight.copy_(torch.cat([li.weight for li in lins], 0))
        if bias:
            cat.bias.copy_(torch.cat([li.bias for li in lins], 0))
    for n in names:
        delattr(m, n)
    setattr(m, new_name, cat)


def _gate_up_silu(m):
    _cat_linears(m, ["gate_proj", "up_proj"], "gate_up_proj")

    def fwd(self, x):
        return self.down_proj(torch.ops.kforge.silu_and_mul(self.gate_up_proj(x)))
    return fwd


def _qk_norm_rope(m):
    """Attention with q_proj/k_proj/v_proj/o_proj (+ optional q_norm/k_norm)
    as transformers' Llama and Qwen3 attention: q|k|v in one GEMM, then
    per-head norm + NeoX rope in one kernel; cache and attention kernel as
    the model's own (same attention interface)."""
    cfg = m.config
    H, KV = cfg.num_attention_heads, cfg.num_key_value_heads
    has_norm = hasattr(m, "q_norm")
    eps = _eps(m.q_norm) if has_norm else 0.0
    _cat_linears(m, ["q_proj", "k_proj", "v_proj"], "qkv_proj")
    dh = m.head_dim

    def fwd(self, hidden_states, position_embeddings, attention_mask=None, past_key_values=None,
            cache_position=None, **kwargs):
        B, S, _ = hidden_states.shape
        qkv = self.qkv_proj(hidden_states)
        cos, sin = position_embeddings
        qw = self.q_norm.weight if has_norm else None
        kw = self.k_norm.weight if has_norm else None
        q, k = torch.ops.kforge.qk_norm_rope(qkv, qw, kw, cos.contiguous(), sin.contiguous(),
                                             H, KV, eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = qkv[..., (H + KV) * dh:].view(B, S, KV, dh).transpose(1, 2)
        if past_key_values is not None:
            ck = {"sin": sin, "cos": cos, "cache_position": cache_position}
            k, v = past_key_values.update(k, v, self.layer_idx, ck)
        attn = _attention(self)
        o, w = attn(self, q, k, v, attention_mask, dropout=0.0, scaling=self.scaling,
                    sliding_window=getattr(self, "sliding_window", None), **kwargs)
        return self.o_proj(o.reshape(B, S, -1).contiguous()), w
    return fwd


def _gate_up(m):
    """gate|up in one GEMM, the activation left to PyTorch (and so to
    Inductor, which fuses it with its neighbours under torch.compile)."""
    act = m.act_fn
    _cat_linears(m, ["gate_proj", "up_proj"], "gate_up_proj")

    def fwd(self, x):
        g, u = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(act(g) * u)
    return fwd


def _fused_qkv(m):
    """q|k|v in one GEMM; the model's own q_norm/k_norm modules and rotary
    function after it (left to Inductor under torch.compile)."""
    import sys
    rotary = sys.modules[type(m).__module__].apply_rotary_pos_emb
    H, KV = m.config.num_attention_heads, m.config.num_key_value_heads
    _cat_linears(m, ["q_proj", "k_proj", "v_proj"], "qkv_proj")
    dh = m.head_dim

    def fwd(self, hidden_states, position_embeddings, attention_mask=None, past_key_values=None,
            cache_position=None, **kwargs):
        B, S, _ = hidden_states.shape
        q, k, v = self.qkv_proj(hidden_states).split([H * dh, KV * dh, KV * dh], dim=-1)
        q, k, v = q.view(B, S, H, dh), k.view(B, S, KV, dh), v.view(B, S, KV, dh)
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        cos, sin = position_embeddings
        q, k = rotary(q, k, cos, sin)
        if past_key_values is not None:
            ck = {"sin": sin, "cos": cos, "cache_position": cache_position}
            k, v = past_key_values.update(k, v, self.layer_idx, ck)
        attn = _attention(self)
        o, w = attn(self, q, k, v, attention_mask, dropout=0.0, scaling=self.scaling,
                    sliding_window=getattr(self, "sliding_window", None), **kwargs)
        return self.o_proj(o.reshape(B, S, -1).contiguous()), w
    return fwd


def _attention(m):
    """The attention function the model is configured with (as its own
    forward picks it)."""
    import sys
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    impl = m.config._attn_implementation
    if impl == "eager":
        return sys.modules[type(m).__module__].eager_attention_forward
    return ALL_ATTENTION_FUNCTIONS[impl]


def _add_rmsnorm(m):
    """Decoder layer (input_layernorm, self_attn, post_attention_layernorm,
    mlp): the residual add after attention and the following RMSNorm run
    as one kernel."""
    ln = m.post_attention_layernorm
    eps = _eps(ln)

    def fwd(self, hidden_states, attention_mask=None, position_ids=None, past_key_values=None,
            use_cache=False, cache_position=None, position_embeddings=None, **kwargs):
        h = self.input_layernorm(hidden_states)
        h, _ = self.self_attn(hidden_states=h, attention_mask=attention_mask,
                              position_ids=position_ids, past_key_values=past_key_values,
                              use_cache=use_cache, cache_position=cache_position,
                              position_embeddings=position_embeddings, **kwargs)
        shape = h.shape
        y, r = torch.ops.kforge.add_rmsnorm(h.contiguous(), hidden_states.contiguous(),
                                            self.post_attention_layernorm.weight, eps)
        return r + self.mlp(y.view(shape))
    return fwd


def _geglu(m):
    """diffusers GEGLU (proj -> hidden, gate; hidden * gelu(gate)): the
    proj rows are reordered once (gate half first), as kforge's geglu
    activates the first half."""
    approx = getattr(m, "approximate", "none")
    with torch.no_grad():
        w = m.proj.weight
        h = w.shape[0] // 2
        m.proj.weight.copy_(torch.cat([w[h:], w[:h]], 0))
        if m.proj.bias is not None:
            b = m.proj.bias
            m.proj.bias.copy_(torch.cat([b[h:], b[:h]], 0))

    def fwd(self, x, *a, **k):
        return torch.ops.kforge.geglu(self.proj(x), approx)
    return fwd


def _gelu(approx):
    def make(m):
        def fwd(self, x, *a, **k):
            return torch.ops.kforge.gelu(self.proj(x), approx)
        return fwd
    return make


def _adaln_zero(m):
    """diffusers AdaLayerNormZero (silu -> linear -> 6 chunks; layernorm
    without affine, then x * (1 + scale) + shift): layernorm and the
    modulation as kforge kernels."""
    eps = _eps(m.norm)

    def fwd(self, x, emb):
        e = self.linear(self.silu(emb))
        shift, scale, gate, shift_mlp, scale_mlp, gate_mlp = e.chunk(6, dim=1)
        n = torch.ops.kforge.layernorm(x.contiguous(), None, None, eps)
        y = torch.ops.kforge.adaln_modulate(n, scale.contiguous(), shift.contiguous())
        return y, gate, shift_mlp, scale_mlp, gate_mlp
    return fwd


PATCH_OPS = {
    "rmsnorm": _rmsnorm,
    "layernorm": _layernorm,
    "gate_up_silu": _gate_up_silu,
    "qk_norm_rope": _qk_norm_rope,
    "add_rmsnorm": _add_rmsnorm,
    "gate_up": _gate_up,
    "fused_qkv": _fused_qkv,
    "geglu": _geglu,
    "gelu_tanh": _gelu("tanh"),
    "gelu": _gelu("none"),
    "adaln_zero": _adaln_zero,
}


def model_classes(model):
    """Sorted names of the module classes in model."""
    return sorted({type(m).__name__ for m in model.modules()})


def matches(model, target):
    """[(qualified name, module)] that target names: a class name, else an
    fnmatch pattern over qualified names."""
    if any(c in target for c in "*?[."):
        return [(n, m) for n, m in model.named_modules() if fnmatch.fnmatch(n, target)]
    return [(n, m) for n, m in model.named_modules() if type(m).__name__ == target]


def apply(model, pmap):
    """Patches model in place; returns {target: number of modules patched}.
    Raises UnknownTarget (names the model's classes) or ValueError."""
    for target, op in pmap.items():
        if op not in PATCH_OPS:
            raise ValueError(f"patch '{target}': unknown op '{op}'; expected one of "
                             + ", ".join(sorted(PATCH_OPS)))
        if not matches(model, target):
            raise UnknownTarget(target, model_classes(model))
    counts = {}
    for target, op in pmap.items():
        ms = matches(model, target)
        for name, m in ms:
            try:
                fwd = PATCH_OPS[op](m)
            except (AttributeError, ValueError) as e:
                raise ValueError(f"patch '{target}' -> '{op}' does not fit module '{name}' "
                                 f"({type(m).__name__}): {e}") from None
            m.forward = types.MethodType(fwd, m)
        counts[target] = len(ms)
    return counts


def reference_rmsnorm(x, w, eps):
    """The Hugging Face formula, for tests."""
    v = x.float().pow(2).mean(-1, keepdim=True)
    return w * (x.float() * torch.rsqrt(v + eps)).to(x.dtype)


def reference_silu_and_mul(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]
