"""recipes: the models benchmark_model builds offline with random weights.

qwen3, llama: transformers' Qwen3ForCausalLM / LlamaForCausalLM from a
config (nothing is downloaded), SDPA attention. dit: a stack of DiT-style
transformer blocks in plain PyTorch with diffusers' module names and
structure (AdaLayerNormZero modulation, Attention with to_q/to_k/to_v/
to_out and per-head RMSNorm norm_q/norm_k, FeedForward with GEGLU or
GELU-tanh, SDPA), as LTX-Video and Flux blocks are built.

Each recipe returns (model, make_inputs) where make_inputs(batch, seq,
generator) gives the forward's keyword arguments.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LLM_DEFAULTS = {"layers": 8, "hidden": 4096, "intermediate": 12288, "heads": 32, "kv_heads": 8,
                "head_dim": 128, "vocab": 151936}
DIT_DEFAULTS = {"layers": 4, "hidden": 2048, "heads": 32, "head_dim": 64, "ff_mult": 4,
                "activation": "geglu", "norm": "rms_norm"}


class RMSNorm(nn.Module):
    """diffusers.models.normalization.RMSNorm (fp32 statistics)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dt = x.dtype
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + self.eps)).to(dt) * self.weight


class AdaLayerNormZero(nn.Module):
    """diffusers AdaLayerNormZero: six modulation vectors from the
    conditioning embedding, LayerNorm without affine, x * (1 + scale) + shift."""

    def __init__(self, dim):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, 6 * dim)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, emb):
        e = self.linear(self.silu(emb))
        shift, scale, gate, shift_mlp, scale_mlp, gate_mlp = e.chunk(6, dim=1)
        x = self.norm(x) * (1 + scale[:, None]) + shift[:, None]
        return x, gate, shift_mlp, scale_mlp, gate_mlp


class Attention(nn.Module):
    def __init__(self, dim, heads, head_dim, qk_norm):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        inner = heads * head_dim
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(dim, inner)
        self.to_v = nn.Linear(dim, inner)
        self.norm_q = RMSNorm(head_dim) if qk_norm == "rms_norm" else nn.LayerNorm(head_dim)
        self.norm_k = RMSNorm(head_dim) if qk_norm == "rms_norm" else nn.LayerNorm(head_dim)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(0.0)])

    def forward(self, x):
        B, S, _ = x.shape
        shp = (B, S, self.heads, self.head_dim)
        q = self.norm_q(self.to_q(x).view(shp)).transpose(1, 2)
        k = self.norm_k(self.to_k(x).view(shp)).transpose(1, 2)
        v = self.to_v(x).view(shp).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v)
        o = o.transpose(1, 2).reshape(B, S, -1)
        return self.to_out[1](self.to_out[0](o))


class GELU(nn.Module):
    """diffusers.models.activations.GELU: proj, then gelu (tanh approximation)."""

    def __init__(self, dim, inner, approximate="tanh"):
        super().__init__()
        self.proj = nn.Linear(dim, inner)
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(self.proj(x), approximate=self.approximate)


class GEGLU(nn.Module):
    """diffusers.models.activations.GEGLU: proj to 2*inner, hidden * gelu(gate)."""

    def __init__(self, dim, inner, approximate="none"):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * inner)
        self.approximate = approximate

    def forward(self, x):
        h, gate = self.proj(x).chunk(2, dim=-1)
        return h * F.gelu(gate, approximate=self.approximate)


class FeedForward(nn.Module):
    def __init__(self, dim, mult, activation):
        super().__init__()
        inner = dim * mult
        act = GEGLU(dim, inner) if activation == "geglu" else GELU(dim, inner, "tanh")
        self.net = nn.ModuleList([act, nn.Dropout(0.0), nn.Linear(inner, dim)])

    def forward(self, x):
        for m in self.net:
            x = m(x)
        return x


class BasicTransformerBlock(nn.Module):
    """DiT block with AdaLN-Zero: gated attention and feed-forward residuals."""

    def __init__(self, dim, heads, head_dim, ff_mult, activation, qk_norm):
        super().__init__()
        self.norm1 = AdaLayerNormZero(dim)
        self.attn1 = Attention(dim, heads, head_dim, qk_norm)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff = FeedForward(dim, ff_mult, activation)

    def forward(self, hidden_states, emb):
        n, gate, shift_mlp, scale_mlp, gate_mlp = self.norm1(hidden_states, emb)
        hidden_states = hidden_states + gate[:, None] * self.attn1(n)
        n = self.norm2(hidden_states) * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
        return hidden_states + gate_mlp[:, None] * self.ff(n)


class DiTModel(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.transformer_blocks = nn.ModuleList([
            BasicTransformerBlock(d["hidden"], d["heads"], d["head_dim"], d["ff_mult"],
                                  d["activation"], d["norm"]) for _ in range(d["layers"])])

    def forward(self, hidden_states, emb):
        for b in self.transformer_blocks:
            hidden_states = b(hidden_states, emb)
        return hidden_states


def _init_dit(model, gen):
    """Random weights with the scale a trained DiT has (N(0, 1/fan_in)), the
    AdaLN projection small so modulations stay near identity."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
                if "norm1.linear" in name:
                    p.mul_(0.1)
            elif name.endswith("bias"):
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))


def build(recipe, dims, dtype, device, seed=0):
    """Returns (model, make_inputs, dims used). Raises ValueError for an
    unknown recipe or dimension."""
    gen = torch.Generator().manual_seed(seed)
    if recipe in ("qwen3", "llama"):
        d = dict(LLM_DEFAULTS)
        _merge(d, dims, recipe)
        import transformers
        common = dict(hidden_size=d["hidden"], intermediate_size=d["intermediate"],
                      num_hidden_layers=d["layers"], num_attention_heads=d["heads"],
                      num_key_value_heads=d["kv_heads"], head_dim=d["head_dim"],
                      vocab_size=d["vocab"], max_position_embeddings=32768,
                      tie_word_embeddings=False)
        if recipe == "qwen3":
            cfg = transformers.Qwen3Config(**common)
            cls = transformers.Qwen3ForCausalLM
        else:
            cfg = transformers.LlamaConfig(**common)
            cls = transformers.LlamaForCausalLM
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(seed)
        model = _on_device(lambda: cls(cfg), dtype, device)
        with torch.no_grad():  # norm weights near one but not exactly (a trained model's are not)
            for n, p in model.named_parameters():
                if p.dim() == 1:
                    p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
        model = model.to(device).eval()

        def make_inputs(batch, seq, g):
            ids = torch.randint(0, d["vocab"], (batch, seq), generator=g).to(device)
            return {"input_ids": ids}
        return model, make_inputs, d
    if recipe == "dit":
        d = dict(DIT_DEFAULTS)
        _merge(d, dims, recipe)
        if d["activation"] not in ("geglu", "gelu_tanh") or d["norm"] not in ("rms_norm",
                                                                            "layer_norm"):
            raise ValueError("dit: activation must be geglu or gelu_tanh, norm rms_norm or "
                             "layer_norm")
        model = _on_device(lambda: DiTModel(d), dtype, device)
        _init_dit(model, gen)
        model = model.eval()

        def make_inputs(batch, seq, g):
            x = torch.randn((batch, seq, d["hidden"]), generator=g).to(device, dtype)
            emb = torch.randn((batch, d["hidden"]), generator=g).to(device, dtype)
            return {"hidden_states": x, "emb": emb}
        return model, make_inputs, d
    raise ValueError(f"unknown recipe '{recipe}'; expected qwen3, llama or dit")


def _on_device(make, dtype, device):
    """Constructs the model straight on the device with its parameters in
    dtype (an 8-layer 4096-wide model is 11 GB in fp32: no CPU copy, no
    fp32 copy)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = make()
    finally:
        torch.set_default_dtype(old)
    for p in model.parameters():  # buffers (rotary inv_freq) keep their fp32
        p.data = p.data.to(dtype)
    return model


def _merge(d, dims, recipe):
    for k, v in (dims or {}).items():
        if k not in d:
            raise ValueError(f"{recipe}: unknown dimension '{k}'; expected one of "
                             + ", ".join(sorted(d)))
        d[k] = v
