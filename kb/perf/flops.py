"""FLOPs per token, as the MFU conventions count them.

Model FLOPs (MFU): Megatron-Core's num_floating_point_operations (training.py) --
3 x (forward) with the forward = 2 FLOPs per weight a token passes through (embeddings are a
lookup and count nothing; MoE counts the top-k routed experts, the shared experts and the
router) + causal attention 2 x s x (query width) per token (QK^T and AV, each 2 s d per head,
halved by the causal mask) + the LM head 2 h V. This is the basis NVIDIA's "model TFLOP/s"
tables use: 6(N - embedding) + causal attention reproduces their TFLOP/s-to-tokens/s ratio to
0.1% (Llama 3 70B at 8k: 449.2 GFLOP/token). PaLM's convention counts full attention; say
which one when comparing MFU across sources.
Sliding-window and chunked layers count the keys their window or chunk holds (attention_work):
the model needs no more. Megatron-Core's count has no window term and counts them as full causal
layers, so its TFLOP/s read higher for gpt-oss, Gemma 2/3 and Mistral 7B at sequences past the
window, and for Llama 4 past its chunk.
LoRA and QLoRA count 4(N - embedding) + causal attention: the frozen base computes input
gradients but no weight gradients, so 6N would credit the run with work it never does.
Hardware FLOPs (HFU) add what recomputation runs again: a whole forward of the layers (full)
or the attention core's forward (Megatron's selective core_attn), and with per-module
recomputation on an MLA model the up-projections' forward (mla_up_proj).
"""
from __future__ import annotations

from ..params import layer_params, mla_up_projections
from ..schema import ModelSpec


def layer_gemm_flops(m: ModelSpec, moe: bool) -> float:
    """Forward GEMM FLOPs per token of one layer: 2 x the weights a token multiplies."""
    lp = layer_params(m, moe)
    return 2.0 * (lp.tp_sharded + lp.active_experts + (m.experts * m.hidden if moe else 0))


def _attention_widths(m: ModelSpec) -> float:
    """qk + v: the widths QK^T reduces over and AV produces, over all heads."""
    if m.is_mla:
        return m.heads * (m.qk_nope_dim + m.qk_rope_dim) + m.heads * m.v_head_dim
    return 2.0 * m.q_width


def attention_flops_at(m: ModelSpec, keys: float) -> float:
    """Forward attention-core FLOPs per token where a query sees ``keys`` keys: QK^T over q/k head
    dims and AV over v, 2 x keys x width each."""
    return 2.0 * keys * _attention_widths(m)


def attention_flops(m: ModelSpec, seq: int) -> float:
    """Forward attention-core FLOPs per token, causal: seq / 2 keys per query on average."""
    return attention_flops_at(m, seq / 2.0)


def window_keys(seq: int, window: int) -> float:
    """Keys one query attends to, averaged over a causal sequence, under a sliding window of
    ``window`` tokens: seq / 2 where the window spans the sequence, else
    (w(w+1)/2 + (s - w) w) / s ~ w - w^2 / 2s (the first w queries see a growing prefix, the rest
    w keys each; the window's mask as Hugging Face's sliding_window_overlay and TE's window_size
    (w - 1, 0) apply it). Continuous at w = s."""
    if window <= 0 or window >= seq:
        return seq / 2.0
    return window - window * window / (2.0 * seq)


def chunk_keys(seq: int, chunk: int) -> float:
    """Keys one query attends to, averaged over a causal sequence cut into chunks of ``chunk``
    tokens (Llama 4's attention_chunk_size): the query at position i sees the keys of its own
    chunk up to itself, (i mod c) + 1 (transformers masking_utils.chunked_overlay and
    causal_mask_function: kv // c == q // c and kv <= q). Summed over the n = s // c full chunks and
    the tail of r = s - nc queries, each chunk of k queries taken at k^2 / 2 keys, as
    attention_flops' causal s / 2 counts a sequence (the diagonal's 1/2 a query left out, as
    Megatron's count does): (n c^2 + r^2) / 2s. seq / 2 where one chunk spans the sequence, and a
    query's cost is the same at any multiple of c."""
    if chunk <= 0 or chunk >= seq:
        return seq / 2.0
    n, r = divmod(seq, chunk)
    return (n * chunk * chunk + r * r) / (2.0 * seq)


def local_keys(m: ModelSpec, seq: int) -> float:
    """Keys a query attends to, averaged over the layers and the sequence: seq / 2 on full causal
    layers, window_keys on sliding-window ones, chunk_keys on chunked ones."""
    window, chunked = m.sliding_layers / m.layers, m.chunked_layers / m.layers
    return ((1.0 - window - chunked) * seq / 2.0 + window * window_keys(seq, m.sliding_window)
            + chunked * chunk_keys(seq, m.attn_chunk))


def attention_work(m: ModelSpec, seq: int) -> float:
    """Forward attention-core FLOPs per token the model needs, averaged over the layers: 2 x
    (keys seen, local_keys) x width. Flash kernels compute just that on sliding-window layers,
    skipping the blocks a window masks out (flash-attn 2/3 window_size, cuDNN's and Transformer
    Engine's sliding window). Equal to attention_flops without a window or chunks."""
    return attention_flops_at(m, local_keys(m, seq))


def mla_up_flops(m: ModelSpec) -> float:
    """Forward FLOPs per token of one layer's MLA up-projections, what Megatron-Core's
    mla_up_proj recomputation reruns: 2 x (q_lora_rank (the hidden size without a q LoRA) x
    heads (nope + rope) + kv_lora_rank x heads (nope + v)), over kb/params.mla_up_projections; 0
    without MLA."""
    if not m.is_mla:
        return 0.0
    return 2.0 * sum(inp * out for inp, out in mla_up_projections(m))


def head_flops(m: ModelSpec) -> float:
    """Forward FLOPs per token of the LM head, one h x V GEMM: 2 h V (the logit term of
    Megatron-Core's num_floating_point_operations, training.py; counted tied or not)."""
    return 2.0 * m.hidden * m.vocab


def model_flops_per_token(m: ModelSpec, seq: int, frozen: bool = False) -> float:
    """Training FLOPs per token, no recomputation: forward + backward = 3 x forward. With the base
    weights frozen (LoRA, QLoRA) their backward computes input gradients only, no weight
    gradients: 2 x forward for the GEMMs and the LM head, 3 x for the attention core, which has no
    weights (the rank-r adapters add well under 1%, not counted)."""
    gemm = m.dense_layers * layer_gemm_flops(m, False) + (m.moe_layers * layer_gemm_flops(m, True) if m.is_moe else 0.0)
    attn = m.layers * attention_work(m, seq)
    weights = gemm + head_flops(m)
    return (2.0 if frozen else 3.0) * weights + 3.0 * attn


def hardware_flops_per_token(m: ModelSpec, seq: int, recompute: str, frozen: bool = False) -> float:
    """Model FLOPs plus what recomputation repeats (full: the layers' forward; selective:
    the attention core's forward; modules: that, and MLA's up-projections, mla_up_flops)."""
    base = model_flops_per_token(m, seq, frozen)
    if recompute == "full":
        return base + model_flops_per_token(m, seq) / 3.0 - head_flops(m)
    if recompute == "modules":      # and elementwise work, which counts no FLOPs
        return base + m.layers * (attention_work(m, seq) + mla_up_flops(m))
    if recompute == "selective":
        return base + m.layers * attention_work(m, seq)
    return base
