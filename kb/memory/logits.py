"""Logits and loss on the last pipeline stage.

At long sequences and large vocabularies this dominates (Llama 3: 128,256 entries per token).
* transformers / torch-native loss (``hf``, ``torch``): bf16 logits, then ``.float()`` for
  cross-entropy: 5.95-5.99 bytes per token per vocab entry kept after the forward, 12.95-13.74
  at the backward peak (benchmarks/calibration/h100_hf_logits.jsonl, 4 rows; 13.35 is their
  mean, within 3.1% of each).
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
from .activations import profile, tokens_local

HF_SAVED_PER_LOGIT = 6.0          # h100_hf_logits.jsonl saved_extra_over_sv: 5.952-5.988
HF_PEAK_PER_LOGIT = 13.35         # h100_hf_logits.jsonl peak_extra_over_sv: 12.95-13.74, mean
MEGATRON_SAVED_PER_LOGIT = 4.0    # the fp32 softmax (cross_entropy.py, see above)
MEGATRON_PEAK_PER_LOGIT = 6.0     # fp32 gradient in place of it + its bf16 cast


def logits_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> tuple[float, float]:
    """(kept after forward, all of it at the loss's backward peak) for one micro-batch on one
    rank; both include what is kept."""
    n = tokens_local(t, lay) * m.vocab
    if profile(t) == "megatron":
        return MEGATRON_SAVED_PER_LOGIT * n / lay.tp, MEGATRON_PEAK_PER_LOGIT * n / lay.tp
    return HF_SAVED_PER_LOGIT * n / lay.tp, HF_PEAK_PER_LOGIT * n / lay.tp
