"""Parameter counts from the architecture, exactly as Hugging Face transformers builds them.

Each function counts one kind of module for one layer and says how tensor parallelism splits
it (Megatron-LM's column/row-parallel layout, Shoeybi et al. 2019): weights of the
projections are divided by TP, norms / row-parallel biases / routers are replicated, routed
experts are divided by EP x expert-TP. ``total_params`` must equal ``model.num_parameters()``
of the transformers class (tests/test_params.py checks the published counts).
"""
from __future__ import annotations

from dataclasses import dataclass

from .schema import ModelSpec


@dataclass(frozen=True)
class LayerParams:
    """Parameters of one decoder layer, split by how a rank shards them."""

    tp_sharded: int        # divided by TP (attention/MLP projections, column-parallel biases)
    replicated: int        # whole on every TP rank (norms, row-parallel biases, router)
    experts: int           # routed experts: divided by EP x expert-TP
    active_experts: int    # the top-k experts one token passes through (for FLOPs)

    @property
    def total(self) -> int:
        return self.tp_sharded + self.replicated + self.experts


def norm_params(m: ModelSpec) -> int:
    """One normalisation layer: RMSNorm has a weight (h), LayerNorm a weight and bias (2h)."""
    return m.hidden * (2 if m.norm == "layernorm" else 1)


def norms_per_layer(m: ModelSpec) -> int:
    """Pre-attention and pre-MLP norms; Gemma 2/3 add post-attention/post-MLP norms."""
    return 4 if m.sandwich_norm else 2


# transformers families whose attention projects q, k and v in one linear and whose MLP
# projects gate and up in one (modeling_phi3.py: qkv_proj, gate_up_proj)
FUSED_PROJECTIONS = ("phi3",)


def mla_up_projections(m: ModelSpec) -> list[tuple[int, int]]:
    """(in, out) features of MLA's up-projections: q_b (q_lora_rank -> heads x (nope + rope)), or
    the one q_proj from the hidden state of a model without a q LoRA (DeepSeek-V2-Lite), and kv_b
    (kv_lora_rank -> heads x (nope + v)) (modeling_deepseek_v3.py) -- the linears Megatron-Core's
    mla_up_proj recomputation reruns (megatron/core/transformer/multi_latent_attention.py,
    get_query_key_value_tensors: qkv_up_proj_and_rope_apply, checkpointed whole)."""
    return [(m.q_lora_rank or m.hidden, m.heads * (m.qk_nope_dim + m.qk_rope_dim)),
            (m.kv_lora_rank, m.heads * (m.qk_nope_dim + m.v_head_dim))]


def attention_projections(m: ModelSpec, fused: bool | None = None) -> list[tuple[int, int]]:
    """(in, out) features of each linear of one attention block, as transformers builds them:
    q, k, v, o; with ``fused`` one qkv linear and o (default: the family's, FUSED_PROJECTIONS'
    qkv_proj; Megatron's linear_qkv always); MLA q_a and q_b (or one q_proj), kv_a_proj_with_mqa,
    kv_b, o (modeling_deepseek_v3.py) either way. LoRA puts one adapter on each
    (adapter_params)."""
    h = m.hidden
    if m.is_mla:
        q_up, kv_up = mla_up_projections(m)
        q_down = [(h, m.q_lora_rank)] if m.q_lora_rank else []
        return q_down + [q_up, (h, m.kv_lora_rank + m.qk_rope_dim), kv_up, (m.heads * m.v_head_dim, h)]
    if m.family in FUSED_PROJECTIONS if fused is None else fused:
        return [(h, m.q_width + 2 * m.kv_width), (m.attn_out_width, h)]
    return [(h, m.q_width), (h, m.kv_width), (h, m.kv_width), (m.attn_out_width, h)]


def mlp_projections(m: ModelSpec, width: int, fused: bool | None = None) -> list[tuple[int, int]]:
    """(in, out) features of each linear of one MLP of ``width``: gate, up and down where it is
    gated (SwiGLU, GeGLU), up and down otherwise; with ``fused`` gate and up one linear (default:
    the family's, FUSED_PROJECTIONS' gate_up_proj; GraniteMoeShared's shared input_linear and
    Megatron's linear_fc1 too). LoRA puts one adapter on each (adapter_params)."""
    h = m.hidden
    if m.mlp not in ("swiglu", "geglu"):
        return [(h, width), (width, h)]
    if m.family in FUSED_PROJECTIONS if fused is None else fused:
        return [(h, 2 * width), (width, h)]
    return [(h, width), (h, width), (width, h)]


def adapter_params(rank: int, projections: list[tuple[int, int]]) -> int:
    """LoRA parameters of one adapter a linear: r x (in + out) each (Hu et al. 2021)."""
    return rank * sum(i + o for i, o in projections)


def attention_params(m: ModelSpec) -> tuple[int, int]:
    """(TP-sharded, replicated) parameters of one attention block.

    Standard/GQA: q h*(a*d), k and v h*(g*d) each, o (a*d)*h; biases on q,k,v (Qwen2) are
    column-parallel (sharded), the o bias of GPT-style models is row-parallel (replicated).
    Qwen3's q_norm/k_norm are per-head-dim RMSNorms (replicated); OLMo 2's span the whole q and k
    projections (modeling_olmo2.py Olmo2Attention: q_norm of a*d, k_norm of g*d). gpt-oss's attention sinks are
    one learned logit per head (modeling_gpt_oss.py GptOssAttention.sinks), split with the heads.
    MLA (DeepSeek-V2/V3, modeling_deepseek_v3.py): q_a (h x q_lora) + q_a_norm + q_b
    (q_lora x a*(nope+rope)), kv_a (h x (kv_lora+rope)) + kv_a_norm + kv_b
    (kv_lora x a*(nope+v)), o (a*v x h). Megatron shards the up-projections; the small
    down-projections are counted as sharded too (a simplification below 3% of the layer).
    """
    h = m.hidden
    if m.is_mla:
        norms = m.kv_lora_rank + (m.q_lora_rank if m.q_lora_rank else 0)
        return sum(i * o for i, o in attention_projections(m)), norms
    q, kv = m.q_width, m.kv_width
    sharded = h * q + 2 * h * kv + q * h
    replicated = 0
    if m.qkv_bias or m.linear_bias:
        sharded += q + 2 * kv
    if m.linear_bias or m.o_bias:
        replicated += h                 # o_proj's bias (Seed-OSS: attention_out_bias, modular_seed_oss.py)
    if m.qk_norm:
        replicated += (q + kv) if m.qk_norm_full else 2 * m.hd
    if m.attn_sinks:
        sharded += m.heads
    return sharded, replicated


def mlp_params(m: ModelSpec, ffn: int) -> tuple[int, int]:
    """(TP-sharded, replicated) parameters of one MLP of width ``ffn``.

    Gated (SwiGLU/GeGLU): gate, up (h x F) and down (F x h) = 3hF; plain GELU: 2hF.
    Biases (GPT-3/BLOOM): the up bias is column-parallel, the down bias row-parallel.
    """
    gated = m.mlp in ("swiglu", "geglu")
    sharded = (3 if gated else 2) * m.hidden * ffn
    replicated = 0
    if m.linear_bias:
        sharded += (2 if gated else 1) * ffn
        replicated += m.hidden
    return sharded, replicated


def router_params(m: ModelSpec) -> int:
    """Router of an MoE layer: E x h (+ E: DeepSeek-V3's correction bias, or the router's own bias
    where every linear is biased, gpt-oss's GptOssTopKRouter; + h x 1 shared gate)."""
    bias = m.experts if (m.router_bias or m.linear_bias) else 0
    return m.experts * m.hidden + bias + (m.hidden if m.shared_gate else 0)


def layer_params(m: ModelSpec, moe: bool) -> LayerParams:
    """All parameters of one decoder layer, dense or MoE."""
    a_sh, a_rep = attention_params(m)
    rep = a_rep + norms_per_layer(m) * norm_params(m)
    if not moe:
        f_sh, f_rep = mlp_params(m, m.ffn)
        return LayerParams(a_sh + f_sh, rep + f_rep, 0, 0)
    one_expert = sum(mlp_params(m, m.expert_ffn))     # each expert has its own biases (gpt-oss)
    shared = mlp_params(m, m.shared_width)[0] if m.shared_width else 0
    return LayerParams(a_sh + shared, rep + router_params(m), m.experts * one_expert, m.top_k * one_expert)


def embedding_params(m: ModelSpec) -> int:
    """Token embedding V x h (vocab-parallel), plus a learned position table (GPT-3) and the
    embedding LayerNorm of BLOOM."""
    return m.vocab * m.hidden + m.learned_pos * m.hidden + (norm_params(m) if m.embed_norm else 0)


def head_params(m: ModelSpec) -> int:
    """Final norm plus the LM head (V x h) when it is not tied to the embedding."""
    return norm_params(m) + (0 if m.tied else m.vocab * m.hidden)


def total_params(m: ModelSpec) -> int:
    """Every parameter, counted once (tied weights once), as transformers reports it."""
    dense = layer_params(m, moe=False).total * m.dense_layers
    moe = layer_params(m, moe=True).total * m.moe_layers if m.is_moe else 0
    return embedding_params(m) + dense + moe + head_params(m)


def active_params(m: ModelSpec) -> int:
    """Parameters one token passes through (MoE: top-k routed experts instead of all)."""
    if not m.is_moe:
        return total_params(m)
    lp = layer_params(m, moe=True)
    return total_params(m) - m.moe_layers * (lp.experts - lp.active_experts)
