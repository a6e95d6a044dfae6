"""The optimizer: bytes of state per trained parameter, and what its step allocates on top.

One function per question, one row per implementation (``--optimizer``):

  name           states / param       step temporaries              source
  adamw-fused    2 x state dtype      none                          torch.optim.AdamW(fused=True): _fused_adamw_ updates
                                                                    params, exp_avg, exp_avg_sq in place (torch/optim/adam.py _fused_adam)
  adamw-foreach  2 x state dtype      1 x state dtype, all params   torch/optim/adam.py _multi_tensor_adam:
                                                                    exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs),
                                                                    one new tensor per parameter, alive until _foreach_addcdiv_
  adamw-single   2 x state dtype      2 x the largest tensor        torch/optim/adam.py _single_tensor_adam:
                                                                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt) -- two
                                                                    temporaries of one parameter at a time
  adamw-8bit     1 + 1 byte + absmax  none                          bitsandbytes AdamW8bit: blockwise 8-bit moments, one fp32
                                                                    absmax per 256-value block each (Dettmers et al. 2022,
                                                                    arXiv:2110.02861 section 2), updated in place by its kernels
  adafactor      ~0 (factored)        3 x the largest tensor, fp32  transformers.optimization.Adafactor (the Trainer's
                 (1 x state dtype                                   optim="adafactor"): row and column second-moment vectors,
                 under DeepSpeed's ZeRO:                            (a full one on DeepSpeed ZeRO's flattened partitions,
                 adafactor_unfactored)                               adafactor_unfactored),
                                                                    no first moment (beta1=None); step() loops over parameters
                                                                    with fp32 grad**2, the factored estimate and -update alive
  sgd            1 x state dtype      none                          torch.optim.SGD(momentum>0): one momentum buffer, foreach
                                                                    in place when weight_decay=0

"adamw" means the framework's own AdamW (``FRAMEWORK_ADAMW``): every profile runs a fused one.
The state dtype is fp32 in mixed precision and the parameters' bf16 under pure-bf16 (torch
optimizers create states like the parameter, torch.zeros_like(p)).
"""
from __future__ import annotations

from ..schema import ModelSpec, TrainingSpec
from ..vec import where

# What "adamw" is in each framework profile, as each runs by default:
#   hf: transformers' Trainer defaults to optim="adamw_torch_fused" when torch >= 2.8
#       (transformers PR #37358, training_args.py); measured fused in h100_hf_trainer_steps.jsonl.
#   fsdp: torchtitan's optimizer config has implementation="fused" by default
#       (torchtitan/config/job_config.py Optimizer.implementation; components/optimizer.py passes fused=True).
#   megatron: the distributed optimizer wraps Transformer Engine's FusedAdam (Apex FusedAdam as
#       fallback): megatron/core/optimizer/__init__.py / distrib_optimizer.py imports
#       transformer_engine.pytorch.optimizers.FusedAdam -- multi_tensor_apply, in place.
#   deepspeed: "type": "AdamW" builds DeepSpeed's FusedAdam (deepspeed/ops/adam/fused_adam.py,
#       multi_tensor_apply) unless torch_adam is set.
FRAMEWORK_ADAMW = {"hf": "adamw-fused", "fsdp": "adamw-fused", "megatron": "adamw-fused", "deepspeed": "adamw-fused"}

# bitsandbytes 8-bit optimizers quantise blockwise with 256 values per block (Dettmers et al.
# 2022, section 2.1: block size 2048 in the paper; bitsandbytes' optimizer kernels use 256),
# one fp32 absmax per block per moment.
BNB_BLOCK = 256


def implementation(t: TrainingSpec) -> str:
    """The concrete optimizer the job runs: ``adamw`` resolved to the framework's default."""
    return FRAMEWORK_ADAMW[t.framework] if t.optimizer == "adamw" else t.optimizer


def state_bytes(t: TrainingSpec, dtype_bytes: float) -> float:
    """Bytes of optimizer state per trained parameter (see the table above); ``dtype_bytes`` is
    4 for fp32 states, 2 for bf16."""
    name = implementation(t)
    if name.startswith("adamw") and name != "adamw-8bit":
        return 2.0 * dtype_bytes
    if name == "adamw-8bit":
        return 2.0 + 2.0 * 4.0 / BNB_BLOCK
    if name == "sgd":
        return 1.0 * dtype_bytes
    return 0.0          # adafactor: factored rows + columns, under 0.1% of the parameters at h >= 1024


def adafactor_unfactored(t: TrainingSpec, zero, pp: int = 1):
    """Whether Adafactor steps unfactored here: DeepSpeed hands the optimizer its fp32 copy
    flattened, one 1-D tensor per parameter group -- ZeRO 1-3 their partitions
    (deepspeed/runtime/zero/stage_1_and_2.py single_partition_of_fp32_groups; stage3.py
    fp32_partitioned_groups_flat), and at ZeRO-0 in bf16 under its pipeline engine BF16_Optimizer's
    flat fp32 groups (runtime/bf16_optimizer.py fp32_groups_flat_partition) -- and transformers' Adafactor factors
    only tensors of two or more dimensions (optimization.py Adafactor.step: factored =
    len(grad_shape) >= 2). So it keeps a full second moment, one state-dtype value a parameter,
    and its step's grad**2 and update span the whole partition. The Trainer without ZeRO is its
    own data parallelism, on the model's tensors. A boolean, or one per layout."""
    if implementation(t) != "adafactor":
        return False
    if t.framework == "deepspeed":
        # ZeRO-0 without the pipeline engine is FP16_UnfusedOptimizer, which keeps a per-parameter
        # fp32 copy of each tensor's shape (fp16/unfused_optimizer.py): factored there
        return (zero >= 1) | ((zero == 0) & (pp > 1) & (t.precision in ("bf16", "fp8")))
    return (zero >= 1) if t.framework == "hf" else False


def largest_tensor(m: ModelSpec, tp) -> float:
    """Elements of the largest parameter tensor on a rank: the embedding or LM head (V x h), an
    MLP projection (F x h), or transformers' fused expert tensor (E x 2F x h, MixtralExperts)."""
    biggest = max(m.vocab * m.hidden, m.ffn * m.hidden)
    if m.is_moe:
        biggest = max(biggest, m.experts * 2 * m.expert_ffn * m.hidden)
    return biggest / tp


def step_temporaries(t: TrainingSpec, opt_params, largest, dtype_bytes: float, unfactored=False):
    """Bytes the optimizer step allocates on top of the states (see the table above).
    ``opt_params``: parameters this rank's optimizer updates; ``largest``: its largest tensor.
    Adafactor on DeepSpeed's flattened partition (``unfactored``, adafactor_unfactored) steps
    it as one tensor whose fp32 gradient DeepSpeed already holds: two partition-sized fp32
    temporaries at a time (grad**2 and the update it becomes; the update and the rsqrt of the
    second moment; the update and its negation: Adafactor.step)."""
    name = implementation(t)
    if name == "adamw-foreach":
        return dtype_bytes * opt_params
    if name == "adamw-single":
        return 2.0 * dtype_bytes * largest
    if name == "adafactor":
        return where(unfactored, 2.0 * 4.0 * opt_params, 3.0 * 4.0 * largest)
    return 0.0 * opt_params
