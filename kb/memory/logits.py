"""Logits and loss on the last pipeline stage.

At long sequences and large vocabularies this dominates (Llama 3: 128,256 entries per token).
* transformers / torch-native loss (``hf``, ``torch``): bf16 logits, then ``.float()`` for
  cross-entropy: 5.95-5.99 bytes per token per vocab entry kept after the forward, 12.95-13.74
  at the backward peak (benchmarks/calibration/h100_hf_logits.jsonl, 4 rows; 13.35 is their
  mean, within 3.1% of each).
* Megatron's vocab-parallel cross-entropy: bf16 logits (2) + the fp32 softmax it keeps for
  backward (4) per vocab entry on this TP rank, and the fp32 gradient it writes at the peak
  (+4): Megatron's theoretical_memory_usage.py counts the fp32 term as 4 s b V / t.
"""
from __future__ import annotations

from ..layout import Layout
from ..schema import ModelSpec, TrainingSpec
from .activations import profile, tokens_local

HF_SAVED_PER_LOGIT = 6.0          # h100_hf_logits.jsonl saved_extra_over_sv: 5.952-5.988
HF_PEAK_PER_LOGIT = 13.35         # h100_hf_logits.jsonl peak_extra_over_sv: 12.95-13.74, mean
MEGATRON_SAVED_PER_LOGIT = 6.0    # bf16 logits + fp32 softmax (vocab-parallel CE)
MEGATRON_PEAK_PER_LOGIT = 10.0    # + fp32 gradient of the logits


def logits_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> tuple[float, float]:
    """(kept after forward, extra at the backward peak) for one micro-batch on one rank."""
    n = tokens_local(t, lay) * m.vocab
    if profile(t) == "megatron":
        return MEGATRON_SAVED_PER_LOGIT * n / lay.tp, MEGATRON_PEAK_PER_LOGIT * n / lay.tp
    return HF_SAVED_PER_LOGIT * n / lay.tp, HF_PEAK_PER_LOGIT * n / lay.tp
