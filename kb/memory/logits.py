"""Logits and loss on the last pipeline stage.

At long sequences and large vocabularies this dominates (Llama 3: 128,256 entries per token).
* transformers / torch-native loss (``hf``, ``torch``): bf16 logits from the LM head, then
  ``.float()`` and cross-entropy (transformers loss_utils.ForCausalLMLoss; F.cross_entropy is
  log_softmax + nll_loss). A training step keeps only the loss (the Trainer's compute_loss
  returns ``outputs["loss"]``; a plain loop reads ``.loss``), so the bf16 logits and their fp32
  copy are freed after the forward: kept is the fp32 log-softmax that nll_loss saves, 4 bytes
  per token per vocab entry. The backward peak is that plus nll_loss's dense fp32 gradient and
  log_softmax's fp32 input gradient, 4 + 4 + 4 = 12, before the cast back to bf16 frees them.
  Read from the ops; checked on plain bf16 loops: 12.27 at the backward peak (h200_torch_loops.
  jsonl L04 at 32k tokens: peak less states and activations, over the logits; 12.2 on the
  held-out L06); h100_hf_logits.jsonl, whose script
  holds the model output through backward (2 bytes more), gives 5.95-5.99 kept and 12.95-13.74
  at the peak, i.e. 4.0 and 11.0-11.7 without it.
* Megatron's vocab-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py):
  VocabParallelCrossEntropy.calculate_logits_max casts the bf16 logits to fp32 (.float()), the
  forward turns that copy into the softmax in place (torch.exp(..., out=exp_logits),
  exp_logits.div_) and saves it for backward; nothing else keeps the bf16 logits. Kept: 4 bytes
  per vocab entry on this TP rank. Backward starts from grad_input = softmax and edits it in
  place (the fp32 gradient is written over the saved softmax), then autograd casts it back to
  bf16 for the output layer's backward while the fp32 one is alive: 4 + 2 = 6 at the peak (the
  forward has the same 2 + 4 while casting). Not the 10 that adds a separate fp32 gradient.
"""
from __future__ import annotations

from ..layout import Layout
from ..schema import ModelSpec, TrainingSpec
from .activations import profile, tokens_local, torchtitan_runs

HF_SAVED_PER_LOGIT = 4.0          # the fp32 log-softmax nll_loss saves (see above)
HF_PEAK_PER_LOGIT = 12.0          # it, its gradient and the logits' fp32 gradient (see above)
# what a caller that holds the model output through backward keeps on top: the bf16 logits
# (h100_hf_logits.jsonl's script does; benchmarks/calibration.logits_rows adds it there)
HELD_OUTPUT_PER_LOGIT = 2.0
# While the loss's forward runs, the bf16 logits, their fp32 copy and the log-softmax are all
# live: 2 + 4 + 4 = 10 (10.3 at the forward peak of the same L04 run); Megatron's
# bf16 logits and the fp32 copy it turns into the softmax in place: 2 + 4 = 6.
HF_FORWARD_PER_LOGIT = 10.0
MEGATRON_FORWARD_PER_LOGIT = 6.0
MEGATRON_SAVED_PER_LOGIT = 4.0    # the fp32 softmax (cross_entropy.py, see above)
MEGATRON_PEAK_PER_LOGIT = 6.0     # fp32 gradient in place of it + its bf16 cast


# torchtitan 0.3's recipes (llama3_8b/70b/405b, qwen3_*, deepseek_v3_*, gpt_oss_* in each
# models/*/config_registry.py) wrap the loss in ChunkedLossWrapper, num_chunks 8 by default
# (components/loss.py): the decoder's forward stops before the LM head, then each eighth of the
# sequence runs LM head, cross-entropy and their backward in turn, its gradient copied into an
# fp32 buffer of the hidden states (GradAccumulator(hidden_states, dtype=torch.float32)) that
# starts the decoder's backward. The export launches those recipes (export/torchtitan.py).
TORCHTITAN_LOSS_CHUNKS = 8
ACCUMULATOR_BYTES_PER_HIDDEN = 4.0


def loss_chunks(t: TrainingSpec) -> int:
    """Sequence chunks the loss runs in: the job's own figure, or its framework's -- torchtitan's
    (fsdp) 8 where torchtitan runs the job, pre-training or fine-tuning every weight; one for the
    others: transformers' ForCausalLMLoss and Megatron's cross-entropy take the whole logits, and
    an adapter or RLHF job under FSDP is the user's own transformers script (torchtitan has no
    adapter path: export/__init__.training_carried)."""
    if t.loss_chunks:
        return t.loss_chunks
    return TORCHTITAN_LOSS_CHUNKS if torchtitan_runs(t) else 1


def softcap_bytes_per_logit(m: ModelSpec, t: TrainingSpec) -> float:
    """What a final logit soft-cap keeps beside the loss, per logit: transformers' Gemma 2 (and any
    model with final_logit_softcapping) computes logits / cap, tanh, * cap in its forward
    (modeling_gemma2.py Gemma2ForCausalLM.forward, transformers 5.24); the divide and the multiply
    by a number save nothing, tanh saves its bf16 output for its backward (2 bytes), alive from
    the forward through the loss's backward. Megatron has no logit cap (the export says so)."""
    return 2.0 if m.final_softcap and profile(t) != "megatron" else 0.0


def _accumulator(m: ModelSpec, t: TrainingSpec, lay: Layout, chunks: int) -> float:
    """The fp32 gradient buffer of the hidden states a loss in ``chunks`` fills (0 unchunked)."""
    return ACCUMULATOR_BYTES_PER_HIDDEN * tokens_local(t, lay) * m.hidden if chunks > 1 else 0.0


def vocab_shards(t: TrainingSpec, lay: Layout):
    """Ranks the logits are split over: TP under Megatron's vocab-parallel cross-entropy and
    torchtitan's loss_parallel; none on the transformers path, whose tensor-parallel plan
    gathers the LM head's output onto every rank ("lm_head": "colwise_rep", modeling_llama.py
    LlamaForCausalLM._tp_plan) before the loss."""
    return 1 if profile(t) == "hf" else lay.tp


def logits_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> tuple[float, float]:
    """(kept after forward, all of it at the loss's backward peak) for one micro-batch on one
    rank; both include what is kept. A chunked loss (loss_chunks) has finished its backward
    before the decoder's starts: what it keeps is the fp32 gradient buffer, and its peak one
    chunk's logits on top of that buffer."""
    n = tokens_local(t, lay) * m.vocab / vocab_shards(t, lay)
    if profile(t) == "megatron":
        return MEGATRON_SAVED_PER_LOGIT * n, MEGATRON_PEAK_PER_LOGIT * n
    chunks, cap = loss_chunks(t), softcap_bytes_per_logit(m, t)
    if chunks > 1:
        acc = _accumulator(m, t, lay, chunks)
        return acc, (HF_PEAK_PER_LOGIT + cap) * n / chunks + acc
    return (HF_SAVED_PER_LOGIT + cap) * n, (HF_PEAK_PER_LOGIT + cap) * n


def largest_block_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """The step's largest single tensor on a rank: one fp32 copy of a micro-batch's logits (of a
    chunk's, under a chunked loss), 4 bytes a logit -- transformers' ForCausalLMLoss upcasts them
    (logits.float()) and its log-softmax output and gradient are as large; Megatron's
    vocab-parallel cross-entropy keeps the fp32 softmax (cross_entropy.py). The caching allocator
    gives such a block a segment of its own; freed, that segment is split by the smaller tensors
    of the next step, and the block's next request needs a new one (measured:
    benchmarks/calibration/h200_fresh_boundary.jsonl, L12 and t02's snapshots)."""
    n = tokens_local(t, lay) * m.vocab / vocab_shards(t, lay)
    return 4.0 * n / loss_chunks(t)


def logits_forward_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """What the loss's forward holds at once for one micro-batch on one rank (see the constants);
    chunked, one chunk's forward beside the gradient buffer."""
    n = tokens_local(t, lay) * m.vocab / vocab_shards(t, lay)
    if profile(t) == "megatron":
        return MEGATRON_FORWARD_PER_LOGIT * n
    chunks = loss_chunks(t)
    return (HF_FORWARD_PER_LOGIT + softcap_bytes_per_logit(m, t)) * n / chunks + _accumulator(m, t, lay, chunks)
