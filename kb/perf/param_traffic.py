"""Memory-bound work proportional to the parameters: the optimizer step once per step, and the
weight casts of autocast once per micro-batch. Both stream through HBM (kb/perf/step.py divides
by the achieved bandwidth).

Optimizer step, bytes per parameter the rank updates = element accesses x bytes per element:
  fused AdamW (one kernel): reads p, g, m, v and writes p, m, v -- 7 accesses
      (torch _fused_adamw_, Transformer Engine / Apex / DeepSpeed FusedAdam alike);
  foreach / single-tensor AdamW: one pass per op of torch/optim/adam.py -- lerp_(m, g) 3,
      mul_(v) 2, addcmul_(v, g, g) 4, sqrt(v) 2, div_ 2, add_(eps) 2, addcdiv_(p, m, denom) 4,
      mul_(p, 1 - lr wd) 2 -- 21 accesses (the held-out Trainer row t03 measures 46 extra bytes
      per parameter over fused t01, this counts 56);
  adamw-8bit: p, g and the updated p in the parameter dtype, 1-byte m and v read and written
      (bitsandbytes' blockwise kernel): 3 x dtype + 4;
  adafactor: g squared, row and column means, the factored estimate, update, RMS, scale and the
      parameter update, each a pass over the parameter: about 12 accesses (transformers Adafactor.step);
  sgd with momentum: buf r/w, g, p r/w -- 5 accesses.
  The recipes with fp32 master weights (megatron, deepspeed, and the Trainer at ZeRO 1-3, which
  is DeepSpeed's) keep 30 bytes for fused AdamW:
  main param 8, fp32 main grad 4, moments 16, and the bf16 copy written back 2.
  DeepSpeed at pure-bf16 (ZeRO 1-3 keep a bf16 master clone of the partition) adds two copies to
  the AdamW pass over bf16: the step flattens the partition's gradients into a new tensor, which
  .to(the master's dtype) returns as is (read 2 + write 2), and copies the stepped master back
  into the parameters (read 2 + write 2) -- deepspeed 0.19.8 runtime/zero/stage_1_and_2.py
  step(): flatten_dense_tensors_aligned, bit16_partitions[partition_id].data.copy_(fp32_partition).
  Gradient clipping (the Trainer's and torchtitan's default max_grad_norm 1.0:
  clip_grad_norm_ reads every grad for the norm and scales them in place): 3 accesses, on the
  recipes that keep grads in the parameter dtype (hf, fsdp).
Per micro-batch, QLoRA dequantises its NF4 weights for each GEMM; the Trainer with fp32 weights under bf16 autocast (hf, bf16 recipe, no ZeRO):
  each weight is cast to bf16 in forward (read 4 + write 2) -- again in a full recompute -- and
  its bf16 weight gradient is cast back and accumulated into the fp32 .grad (read 2 + write 4,
  + read 4 when a previous micro-batch's gradient is there).
"""
from __future__ import annotations

from ..layout import Layout
from ..memory import optimizers as opt
from ..memory.activations import fp32_weights_under_autocast
from ..schema import TrainingSpec
from ..vec import where

# Element accesses per parameter of each optimizer's step, gradient clipping's, DeepSpeed's two
# bf16 master copies (read 2 + write 2 each) and the fp32-master recipes' fused AdamW bytes: each
# counted in the module docstring from the source it names
ACCESSES = {"adamw-fused": 7, "adamw-foreach": 21, "adamw-single": 21, "adafactor": 12, "sgd": 5}
CLIP_ACCESSES = 3
DEEPSPEED_BF16_MASTER_COPIES = 2 * (2.0 + 2.0)
MASTER_RECIPE_FUSED_BYTES = 30.0
# 8-bit AdamW's two moments, each read and written, at 1 byte instead of fp32's 4: 2 x 2 x 3
EIGHT_BIT_MOMENT_SAVING = 12.0


def step_bytes_per_param(t: TrainingSpec, zero=0):
    """Bytes moved per updated parameter by the optimizer step (see the module docstring). The
    Trainer at ZeRO 1-3 (``zero``: a stage, or the search's array of them) hands its step to
    DeepSpeed's ZeRO optimizer, as its memory does (kb/memory/states.recipe)."""
    own = _step_bytes(t, t.framework)
    if t.framework != "hf":
        return own
    return where(zero > 0, _step_bytes(t, "deepspeed"), own)


def _step_bytes(t: TrainingSpec, framework: str) -> float:
    """Bytes per updated parameter of ``framework``'s optimizer step (module docstring):
    fp32-master recipes (megatron, deepspeed; not at pure-bf16): MASTER_RECIPE_FUSED_BYTES, + 4
    bytes per access an unfused AdamW adds over the fused one's 7; 8-bit AdamW there keeps the
    recipe's fp32 main parameter and gradient but reads and writes its two moments at 1 byte
    each instead of 4 (bitsandbytes' blockwise 8-bit state; its per-block scales are a few
    bytes per 2,048 parameters, not counted): 30 - 2 x 2 x 3 = 18 bytes. Otherwise accesses x the parameter
    dtype (8-bit AdamW: 3 x dtype + 4), + CLIP_ACCESSES x dtype for gradient clipping, +
    DEEPSPEED_BF16_MASTER_COPIES under DeepSpeed at pure-bf16."""
    name = opt.implementation(t)
    dtype = 2.0 if t.precision == "pure-bf16" else 4.0
    if framework in ("megatron", "deepspeed") and t.precision != "pure-bf16":
        extra = (ACCESSES.get(name, 7) - 7) * 4.0 if name != "adamw-8bit" else -EIGHT_BIT_MOMENT_SAVING
        return MASTER_RECIPE_FUSED_BYTES + extra
    body = 3.0 * dtype + 4.0 if name == "adamw-8bit" else ACCESSES[name] * dtype
    # DeepSpeed at pure-bf16 runs ZeRO 1-3 only (kb/validity.py deepspeed-pure-bf16-zero)
    copies = DEEPSPEED_BF16_MASTER_COPIES if framework == "deepspeed" else 0.0
    return body + CLIP_ACCESSES * dtype + copies


def microbatch_bytes_per_param(t: TrainingSpec, lay: Layout):
    """Bytes moved per parameter per micro-batch by autocast's weight casts (see the module
    docstring); 0 where the weights already are bf16."""
    if t.training == "qlora":
        # bitsandbytes dequantises each NF4 weight to bf16 for every GEMM that uses it: forward,
        # the input-gradient GEMM in backward, and the recomputed forward (read 0.5 + write 2)
        return 2.5 * where(lay.recompute == "full", 3.0, 2.0)
    fp32 = fp32_weights_under_autocast(t, lay)
    if fp32 is False:
        return 0.0
    fwd = 6.0 * where(lay.recompute == "full", 2.0, 1.0)
    bwd = 6.0 + 4.0 * (1.0 - 1.0 / lay.grad_accum)
    return where(fp32, fwd + bwd, 0.0)
