"""Memory traffic of the eager PyTorch ops Megatron-Core runs where its fused kernels stop.

The framework profile's elementwise figure (kb/data/frameworks.yaml, 40 bytes per token per
hidden unit for Megatron) prices fused kernels: fused RoPE, fused bias-activation, fused
permutation. Three model features send Megatron-Core down an unfused path instead, each a
chain of whole-tensor PyTorch ops whose reads and writes are counted below from the source
(Megatron-Core 0.19.2). Each function returns bytes per token (per routed token copy for the
experts) over forward and backward, already zero where the path does not run; the step-time
model divides them by the HBM bandwidth (kb/perf/compute.layer_time). Nothing is fitted;
recomputation's repeat of them is not counted.

Other frameworks run these models through their own code (transformers' GptOssExperts, ...):
not priced here, so zero for them.
"""
from __future__ import annotations

from ..schema import ModelSpec, TrainingSpec
from ..vec import maximum

# Per q/k element, bf16: the unfused RoPE (rope_utils._apply_rotary_pos_emb_bshd) runs
# forward -x2 (2: read + write of half the elements, 2 bytes each), cat of the rotated halves
# (4), t * cos (4), rotate_half(t) * sin (4), their sum (6) and the cat with the unrotated rest
# (4): 24 bytes; backward the two products' gradients (4 + 4), the negation's (2), the chunk's
# reassembly (4) and the sum of the two paths (6): 20 bytes. TE's fused kernel reads and
# writes each element once each way (8 bytes): 36 bytes more.
UNFUSED_ROPE_EXTRA_BYTES = 36.0

# Per element of a routed token copy's expert output (hidden wide): MoE experts'
# _apply_bias (transformer/moe/experts.py) adds bias x router probability per expert, in the
# probabilities' dtype: bf16, the router's input dtype, unless --moe-router-dtype fp32
# (router.py gating; moe_utils.topk_routing_with_score_function: probs.type_as(logits)), which
# neither NVIDIA's gpt-oss recipes nor the Megatron export set. Forward b * p written (2),
# t + that (2 + 2 read, 2 written), the cat over experts (2 + 2); the cast to bf16 is then a
# no-op -- 12 bytes; backward the products for the bias and probability gradients, each a
# read, a written product and its reduction (6 + 6) -- 12 bytes. (In fp32: 64.)
EXPERT_BIAS_BYTES = 24.0

# Per element of the first expert GEMM's output (2 x expert FFN wide, gate and up): the
# clamped GLU (fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl, clamp_value) clamps
# both halves and concatenates them in eager ops before the fused kernel: forward each half
# read and written (2 + 2) and the cat (2 + 2) -- 8 bytes; backward the clamps' masked
# gradients (grad, input, output: 6) and the gradient's reassembly (4) -- 10 bytes.
GLU_CLAMP_BYTES = 18.0


def _megatron_eager(t: TrainingSpec) -> bool:
    return t.framework == "megatron"


def _fused_experts(t: TrainingSpec) -> bool:
    """Under full-iteration CUDA graphs the experts run Transformer Engine's fused grouped MLP
    (the op fuser the Megatron export sets with them), which takes the bias x probability and
    the clamped activation inside its kernel (experts.py _make_fused_ops)."""
    return t.cuda_graphs == "full-iteration"


def unfused_rope_bytes(m: ModelSpec, t: TrainingSpec, tp=1):
    """Bytes per token per layer on one rank that RoPE costs above the fused kernel. Megatron
    runs YaRN unfused: Megatron-LM turns RoPE fusion off for any --position-embedding-type other
    than rope (megatron/training/arguments.py validate_args: "if args.position_embedding_type !=
    'rope': args.apply_rope_fusion = False"), which the Megatron export writes for a YaRN model,
    and Megatron-Core itself falls back where the YaRN attention factor is not 1, as gpt-oss's
    0.1 ln 32 + 1 = 1.35 under Megatron-Bridge (rope_utils.apply_rotary_pos_emb: "mscale=... is
    not supported by TE's fused RoPE. Using unfused implementation."). It rotates every query
    and key head the rank holds: heads / TP, and kv_heads / TP but at least one (a KV head is
    replicated where TP passes the KV heads). MLA models take their own fused YaRN kernel
    (fusions/fused_mla_yarn_rope_apply.py): not counted."""
    if not _megatron_eager(t) or m.is_mla or m.rope_scaling != "yarn":
        return 0.0
    return (m.heads / tp + maximum(m.kv_heads / tp, 1)) * m.hd * UNFUSED_ROPE_EXTRA_BYTES


def expert_bias_bytes(m: ModelSpec, t: TrainingSpec) -> float:
    """Bytes per routed token copy of the experts' output bias applied in eager ops
    (EXPERT_BIAS_BYTES per hidden unit): MoE models with biases on their linears (gpt-oss)
    outside the fused grouped MLP."""
    if not (_megatron_eager(t) and m.is_moe and m.linear_bias) or _fused_experts(t):
        return 0.0
    return EXPERT_BIAS_BYTES * m.hidden


def glu_clamp_bytes(m: ModelSpec, t: TrainingSpec, etp=1) -> float:
    """Bytes per routed token copy of the clamped GLU's eager clamps (GLU_CLAMP_BYTES per
    element of gate and up, 2 x expert FFN / expert TP wide): models whose GLU inputs are
    clamped (gpt-oss, swiglu_limit 7.0) outside the fused grouped MLP."""
    if not (_megatron_eager(t) and m.is_moe and m.glu_limit) or _fused_experts(t):
        return 0.0
    return GLU_CLAMP_BYTES * 2.0 * m.expert_ffn / etp
