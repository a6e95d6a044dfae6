"""Bytes per token the attention block keeps for backward: the kernel's q, k, v, output and
log-sum-exp (or eager attention's scores), the dense masks and expanded K/V that SDPA keeps on
sliding-window and chunked layers, and the per-layer RoPE and query-scale copies of some
families; with one rank's attention widths under tensor parallelism."""
from __future__ import annotations

from ...layout import Layout
from ...params import FUSED_PROJECTIONS
from ...schema import ModelSpec, TrainingSpec
from ...vec import maximum, where
from .eager_scores import BF16_SOFTMAX_FAMILIES, eager_per_score
from .implementation import fp32_weights_under_autocast, profile


def local_layers(m: ModelSpec) -> int:
    """Layers with a local attention pattern: sliding-window (ModelSpec.sliding_window) or
    chunked (ModelSpec.attn_chunk) ones -- a model has one pattern or none (ModelSpec._check)."""
    return m.sliding_layers + m.chunked_layers


def dense_local_mask(m: ModelSpec, t: TrainingSpec) -> bool:
    """Whether transformers runs the local layers (local_layers) through SDPA with a dense mask.
    create_sliding_window_causal_mask and create_chunked_causal_mask (transformers 5.24
    masking_utils.py) pass the window or chunk to sdpa_mask as local_size, and
    _ignore_causal_mask_sdpa keeps the mask where kv_length >= local_attention_size -- the whole
    sequence in training (no cache, or an empty one) -- so sdpa_mask builds a bool [b, 1, s, s]
    tensor and sdpa_attention_forward passes it with is_causal False. Below the window or chunk
    the mask is dropped for SDPA's causal flag. That is --attention sdpa on the hf and deepspeed
    profiles, and "flash" on Llama 4's chunked layers too: transformers' Llama 4 has no
    FlashAttention path (kb/build.py NO_FLASH_ATTENTION_2), where flash-attn's window_size runs a
    sliding window itself. Megatron-Core has no chunked attention (runs the layers causal), and
    eager masks its score matrix whatever the pattern (forward_mask_bytes)."""
    span = m.sliding_window or m.attn_chunk
    sdpa = t.attention == "sdpa" or (t.attention == "flash" and m.chunked_layers > 0)
    return local_layers(m) > 0 and t.framework in ("hf", "deepspeed") and sdpa and t.seq_len >= span


def sdpa_gets_mask(lay: Layout):
    """Whether the model's dense local mask (dense_local_mask) reaches SDPA: not under DeepSpeed's
    Ulysses (cp > 1 on the hf and deepspeed profiles, kb/frameworks.ULYSSES_FRAMEWORKS), whose
    wrapper around every attention function sets attention_mask = None before the core attention
    runs (deepspeed/runtime/sequence_parallel/ulysses_sp.py, UlyssesSPAttentionHF
    .register_with_transformers: uattn_wrapper, "attention_mask has to be None"). SDPA then runs
    is_causal with enable_gqa (transformers 5.24 integrations/sdpa_attention.py: use_gqa_in_sdpa
    with no mask): no additive copy, no repeated k and v, no window or chunk."""
    return where(lay.cp > 1, False, True)


def local_mask_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, s_local) -> float:
    """Per token, averaged over the layers: what SDPA keeps of the dense mask on a local layer
    (dense_local_mask). scaled_dot_product_attention turns the bool mask into an additive one in
    the query's dtype, a new [b, 1, s, s] tensor each call (aten/src/ATen/native/transformers/
    attention.cpp: convert_boolean_attn_mask, or _cudnn, before the efficient or cuDNN kernel),
    and both kernels save it for their backward (derivatives.yaml:
    _scaled_dot_product_efficient_attention_backward and _cudnn_attention_backward take
    attn_bias): 2 bytes a score, s_local of them a token, on each local layer. Seen on a CPU
    Mistral layer (saved-tensor hooks: a bf16 [1, 1, s, s] tensor past the window, none below).
    None where Ulysses drops the mask (sdpa_gets_mask)."""
    if not dense_local_mask(m, t):
        return 0.0
    return where(sdpa_gets_mask(lay), 2.0 * s_local * local_layers(m) / m.layers, 0.0)


def masked_gqa_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, q: float, kv: float) -> float:
    """Per token, averaged over the layers: the keys and values SDPA keeps expanded to all query
    heads on a local layer with a dense mask (dense_local_mask), over the kv-head ones it keeps
    otherwise. sdpa_attention_forward passes enable_gqa only where use_gqa_in_sdpa allows it --
    on CUDA, with no mask (transformers 5.24 integrations/sdpa_attention.py) -- so with the mask it
    calls repeat_kv, whose reshape of an expanded view copies k and v to q's width, and the kernel
    saves those copies, not the kv-head k and v nothing else keeps: 2 x 2 (q - kv) bytes a token
    (q, kv per-rank widths). Zero with as many kv heads as query heads. Seen on a CPU Mistral
    layer (saved-tensor hooks: a [1, 4, s, d] k and v past the window, [1, 1, s, d] below).
    None where Ulysses drops the mask (sdpa_gets_mask): enable_gqa again."""
    if not dense_local_mask(m, t):
        return 0.0
    return where(sdpa_gets_mask(lay), 4.0 * maximum(0.0, q - kv) * local_layers(m) / m.layers, 0.0)


def _attention_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, q: float, kv: float, heads: float, s_local: int) -> float:
    """Per token: what attention keeps (q, kv are per-rank widths; heads per rank). Flash / SDPA
    (package docstring): q, k (after RoPE), v and the output in bf16, 2q + 2kv + 2kv + 2q, and the
    fp32 log-sum-exp, 4 a head: 4q + 4kv + 4 heads -- measured to 0.1% in
    h100_hf_activations.jsonl. MLA: k as wide as q, v and the output v_head_dim a head,
    2q + 2q + 2v + 2v = 4q + 4v, and its two latents at 2 x 2 bytes an element (q_lora_rank,
    kv_lora_rank + the RoPE key: two bf16 tensors of each, an assumption not measured here).
    Eager (transformers' eager_attention_forward): no log-sum-exp, the K/V repeat_kv expands to
    every head, 4 (q - kv), and per score eager_per_score's saved bytes (+2 for a soft-capped
    score's tanh output), plus gpt-oss's row max index, 8 a head."""
    if m.is_mla:
        latent = 2 * 2 * (m.q_lora_rank or 0) + 2 * 2 * (m.kv_lora_rank + m.qk_rope_dim)
        v = heads * m.v_head_dim
        base = latent + 4 * q + 4 * v + 4 * heads
    else:
        base = 4 * q + 4 * kv + 4 * heads
    if t.attention == "eager":
        # soft-capped logits (Gemma 2): tanh keeps its bf16 output for its backward, 2 bytes a
        # score more (measured on a CPU layer, saved-tensor hooks)
        per_score = eager_per_score(m, t, lay)[0] + (2.0 if m.attn_softcap else 0.0)
        row_max = 8.0 * heads if m.family in BF16_SOFTMAX_FAMILIES else 0.0
        return base - 4 * heads + 4 * maximum(0.0, q - kv) + per_score * heads * s_local + row_max
    return base


# families whose RoPE builds fp32 cos and sin in each layer: ERNIE 4.5 repeats the shared
# cos / sin halves pairwise for its interleaved rotation (repeat_interleave, new tensors) and
# multiplies q.float() and k.float() by them (modular_ernie4_5.py apply_rotary_pos_emb)
LAYER_FP32_ROPE_FAMILIES = ("ernie4_5_moe",)


def layer_rope_bytes(m: ModelSpec, t: TrainingSpec) -> float:
    """Bytes per token of the fp32 cos and sin a LAYER_FP32_ROPE_FAMILIES layer makes and its
    multiplications keep: 2 x 4 x head size (the [b, 1, s, head_dim] pair; modular_ernie4_5.py
    apply_rotary_pos_emb). Measured on a CPU ERNIE 4.5 layer (cpu_family_saved_tensors.jsonl:
    two (1, 1, 256, 64) fp32 tensors a layer, whatever the weights)."""
    if profile(t) != "hf" or m.family not in LAYER_FP32_ROPE_FAMILIES:
        return 0.0
    return 2 * 4.0 * m.hd


# families that multiply the rotated query by a position-dependent factor (Ministral 3:
# query_states * get_llama_4_attn_scale(...).to(query_states.dtype), modular_ministral3.py)
QUERY_SCALE_FAMILIES = ("ministral3",)


def query_scale_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """Bytes per token of the [b, 1, s, 1] query factor a QUERY_SCALE_FAMILIES layer keeps for
    the multiplication's backward, in the query's dtype: bf16, or fp32 with fp32 weights under
    autocast (RoPE's fp32 cos and sin promote the query). Measured on CPU Ministral 3 layers
    (cpu_family_saved_tensors.jsonl): 2 and 4 bytes a token over Mistral's."""
    if profile(t) != "hf" or m.family not in QUERY_SCALE_FAMILIES:
        return 0.0
    return where(fp32_weights_under_autocast(t, lay), 4.0, 2.0)


def local_widths(m: ModelSpec, lay: Layout) -> tuple:
    """(q, kv, heads) on one TP rank: q_width / tp, kv_width / tp but at least one head's width
    (kv heads replicated where TP exceeds their count; no such floor for MLA), heads / tp."""
    tp = lay.tp
    return m.q_width / tp, maximum(m.kv_width / tp, m.hd if not m.is_mla else 0), m.heads / tp


def kernel_training(t: TrainingSpec, rc: str) -> TrainingSpec:
    """The job as the attention its saved tensors are sized for runs: under selective or
    per-module recomputation (core_attn) the s^2 terms are recomputed, which leaves what a
    flash kernel keeps (package docstring: Megatron-LM issue #464)."""
    return t if rc not in ("selective", "modules") else t.model_copy(update={"attention": "flash"})


def mla_up_proj_bytes(m: ModelSpec, lay: Layout) -> float:
    """Per token on one rank: MLA's up-projected q, k (after RoPE) and v in bf16, 2q + 2q + 2v
    (k as wide as q, v v_head_dim a head; _attention_bytes). Megatron-Core's mla_up_proj
    recomputation (part of "modules" on an MLA model) checkpoints the up-projections and RoPE
    without their outputs and discards those once the core attention has run, restoring them
    before its backward (megatron/core/transformer/multi_latent_attention.py:
    qkv_up_checkpoint = CheckpointWithoutOutput around qkv_up_proj_and_rope_apply, then
    qkv_up_checkpoint.discard_output_and_register_recompute(core_attn_out)): the latents it reruns
    from and the attention output stay (and the log-sum-exp, counted though core_attn's checkpoint
    drops it too: 4 bytes a head, under 1% of what is freed). 0 for a model without MLA."""
    if not m.is_mla:
        return 0.0
    q, _, heads = local_widths(m, lay)
    return 4.0 * q + 2.0 * heads * m.v_head_dim


def attention_saved_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, rc: str, s_local: int) -> float:
    """Bytes per token the attention block keeps: the kernel's tensors (_attention_bytes, at
    kernel_training's attention) less what mla_up_proj recomputes under "modules"
    (mla_up_proj_bytes), masked GQA's expanded K/V, RoPE's and the query scale's copies;
    and with hf on a fused-qkv family (FUSED_PROJECTIONS, Phi-3) 2 (q + kv) more: q, k and v are
    views of one qkv_proj output, so the v the attention keeps holds the whole q + 2 kv storage
    alive (measured on a CPU layer: +4 h with MHA)."""
    q, kv, heads = local_widths(m, lay)
    attn = _attention_bytes(m, kernel_training(t, rc), lay, q, kv, heads, s_local)
    if rc == "modules":
        attn -= mla_up_proj_bytes(m, lay)
    attn += masked_gqa_bytes(m, t, lay, q, kv) + layer_rope_bytes(m, t) + query_scale_bytes(m, t, lay)
    if profile(t) == "hf" and m.family in FUSED_PROJECTIONS:
        attn += 2.0 * (q + kv)
    return attn
