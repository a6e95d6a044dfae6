"""Bytes per attention score (head x query x key) that transformers' eager attention keeps for
backward and holds in it: the softmax's, in fp32 or, for gpt-oss, bf16, and the attention
dropout's mask and dropped copy."""
from __future__ import annotations

from ...layout import Layout
from ...schema import ModelSpec, TrainingSpec
from ...vec import where
from .implementation import fp32_weights_under_autocast, profile


# Eager attention's backward, per attention score (head x query x key) of one layer, on top of
# the 6 bytes it saved: transformers' eager_attention_forward computes softmax(..., dtype=fp32)
# and casts to bf16, so its backward holds the bf16 gradient of the probabilities (2), its fp32
# cast (4) and the softmax's fp32 input gradient (4) at once. Read from the ops; checked on the
# held-out rows, 9.5-10.0 at >= 20k tokens (h200_torch_loops.jsonl L09: peak less the estimate
# without it, over the scores). Megatron's unfused path runs its own fused softmax kernel in
# bf16 and is not counted.
EAGER_BACKWARD_PER_SCORE = 10.0
# What eager attention saves per score for its backward (the probabilities and what the softmax
# keeps): 6 bytes, from h100_hf_activations.jsonl's eager rows (the s^2 term flash removes).
EAGER_SAVED_PER_SCORE = 6.0
# gpt-oss's eager attention (modeling_gpt_oss.py eager_attention_forward) appends the sink logit
# to the scores and takes the softmax in their own dtype (softmax(..., dtype=combined_logits.
# dtype)), bf16, with no fp32 copy: it keeps the bf16 probabilities alone, which the value
# matmul keeps too (a view, one storage), 2 bytes a score -- measured on a CPU gpt-oss layer
# (cpu_peft_experts.jsonl, full rows: +16 bytes a token per key at 8 heads from 256 to 1,024
# tokens) -- and the max it subtracts keeps its int64 index per row, 8 bytes a head a token. Its
# backward holds the probabilities' bf16 gradient, padded for the sink column, and the softmax's
# bf16 input gradient: 4 bytes a score, read from the ops, not measured. With fp32 weights under
# autocast the sinks are an fp32 parameter, the concatenation promotes the scores to fp32 and the
# softmax keeps 4 bytes, the bf16 cast for the value matmul 2 more: Llama's 6 (measured, same
# CPU layer in fp32: 4 x 8 heads x 257 and 2 x 8 x 256 bytes a token).
BF16_SOFTMAX_FAMILIES = ("gpt_oss",)
BF16_SOFTMAX_SAVED_PER_SCORE = 2.0
BF16_SOFTMAX_BACKWARD_PER_SCORE = 4.0


def _bf16_softmax(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """Whether eager attention's softmax keeps bf16 (BF16_SOFTMAX_FAMILIES, bf16 weights): with
    fp32 weights under autocast the sinks promote the scores to fp32 (the comment above)."""
    return where(fp32_weights_under_autocast(t, lay), False, m.family in BF16_SOFTMAX_FAMILIES)


def eager_per_score(m: ModelSpec, t: TrainingSpec, lay: Layout) -> tuple:
    """(saved, backward) bytes per attention score of transformers' eager attention for this
    job: the fp32 softmax's 6 and 10, or the bf16 softmax's 2 and 4 (BF16_SOFTMAX_FAMILIES with
    bf16 weights), with the attention dropout's (eager_dropout_per_score) saved bytes on top."""
    bf16 = _bf16_softmax(m, t, lay)
    return (where(bf16, BF16_SOFTMAX_SAVED_PER_SCORE, EAGER_SAVED_PER_SCORE) + eager_dropout_per_score(m, t, lay),
            where(bf16, BF16_SOFTMAX_BACKWARD_PER_SCORE, EAGER_BACKWARD_PER_SCORE))


# What config.json's attention_dropout adds to eager attention's kept bytes per score, in training.
# eager_attention_forward (transformers 5.24 modeling_llama.py and every supported family's) runs
# nn.functional.dropout on the bf16 probabilities before the value matmul; on a CUDA tensor that is
# the fused native_dropout (aten/src/ATen/native/Dropout.cpp: dropout() takes it where
# is_fused_kernel_acceptable), which keeps its bool mask, 1 byte a score (derivatives.yaml
# native_dropout: the backward reads result1, the mask), and the value matmul keeps the dropped
# copy (2 bytes) in place of the probabilities, which nothing else keeps: +1 a score. Under gpt-oss's
# bf16 softmax the softmax keeps its own output, so the dropped copy is kept besides it: +3 (mask
# and copy); with fp32 weights its softmax is fp32, the copy is cast to bf16 for the matmul, and the
# fp32 copy is kept by nothing: +1. Measured on CPU layers through native_dropout
# (benchmarks/calibration/cpu_dropout_saved_tensors.jsonl, measure_dropout_layers.py: Llama, Gemma 2,
# gpt-oss, Seed-OSS; 2,048 / 6,144 bytes a token more at 8 heads x 256 keys). SDPA and flash-attn
# take the dropout inside the kernel and keep only its RNG state, no mask (derivatives.yaml:
# _scaled_dot_product_flash_attention_backward takes rng_state, the efficient and cuDNN backwards
# philox_seed and philox_offset): nothing a score. Its backward holds no more at once than the
# softmax's (EAGER_BACKWARD_PER_SCORE: the dropout's gradient is freed before the cast's).
EAGER_DROPOUT_MASK_PER_SCORE = 1.0
EAGER_DROPOUT_COPY_PER_SCORE = 2.0


def attention_dropout_applied(m: ModelSpec, t: TrainingSpec) -> bool:
    """Whether the estimate sizes config.json's attention dropout: the model has one and runs as
    transformers' layers (the hf profile). Megatron's export trains without, torchtitan's Llama has
    none (kb/resolve.model_dropout_scope says so). A plain bool whatever the layout: the dropout's
    kernel runs on every score whichever softmax precedes it."""
    return bool(m.attn_dropout) and profile(t) == "hf"


def eager_dropout_per_score(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """Bytes per score the attention dropout adds to what transformers' eager attention keeps:
    the mask (1), and the dropped copy (2) where the bf16 softmax keeps its own output
    (_bf16_softmax); 0 where it is not sized (attention_dropout_applied)."""
    if not attention_dropout_applied(m, t):
        return 0.0
    return EAGER_DROPOUT_MASK_PER_SCORE + where(_bf16_softmax(m, t, lay), EAGER_DROPOUT_COPY_PER_SCORE, 0.0)
