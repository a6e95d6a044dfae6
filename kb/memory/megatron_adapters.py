"""Megatron-Bridge's LoRA on Megatron-Core with Transformer Engine: what its adapters and its frozen
base hold, read from the source (the adapter count itself: states.megatron_lora_params).

Sources (commits of the mirrors read):
  Megatron-Bridge 067f987: src/megatron/bridge/peft/lora.py (LoRA.transform: targets linear_qkv,
    linear_proj, linear_fc1, linear_fc2; dropout_position "pre"), peft/utils.py
    (get_adapter_attributes_from_linear L549-667: return_layernorm_output on TE's
    LayerNormColumnParallelLinear, and return_layernorm_output_gathered under sequence
    parallelism; ParallelLinearAdapter L923-1275: linear_in a Megatron Column/RowParallelLinear,
    linear_out a ColumnParallelLinear, both bf16 under config.bf16, forward
    dropout(x) -> linear_in -> linear_out), peft/lora_layers.py LoRALinear.forward (the adapter
    reads the base's layernorm output), recipes/llama/h100/llama3.py peft configs
    (use_distributed_optimizer=False "PEFT disables this", grad_reduce_in_fp32=False).
  Transformer Engine d0067d0: pytorch/module/linear.py L303 (backward_needs_input = is_grad_enabled
    and weight.requires_grad: a frozen Linear keeps no input), layernorm_linear.py L244-318 (with
    the norm output returned the norm runs unquantized and, under sequence parallelism, the
    gathered output is returned), L427-429 (the norm output is dropped only for a frozen weight
    that does not return it), L467-536 (saved: the norm input, the local norm output, rsigma).
  Megatron-LM d98e8a6: core/tensor_parallel/layers.py L604 (LinearWithGradAccumulationAnd
    AsyncCommunication saves its input), core/distributed/distributed_data_parallel.py L179-181
    (frozen parameters get no grad buffer), core/optimizer/optimizer.py L1006-1012 (fp32 main
    params for trained parameters only), L1097 (main_param.grad = main_grad.float() at the step).
"""
from __future__ import annotations

from dataclasses import replace

from ..schema import TrainingSpec
from . import optimizers as opt
from .states import States, _shard, recipe


def megatron_adapter_states(t: TrainingSpec, frozen: States, ad: float, largest: float, zero) -> States:
    """States of Megatron-Bridge's adapters, ``ad`` parameters on this rank, beside the frozen
    base of ``frozen`` (states.adapter_states: bf16, 2 B a parameter, which Float16Module holds).

    Megatron's own mixed-precision recipe (states._recipe, megatron) applied to the adapters alone:
    bf16 parameters 2 (ParallelLinearAdapter calls self.bfloat16() under config.bf16), the DDP
    grad buffer of the trained parameters only (distributed_data_parallel.py L179-181 skips
    requires_grad=False) in the grad-buffer dtype (states.megatron_grad_bytes: bf16, as the PEFT
    recipes' grad_reduce_in_fp32=False), fp32 main params 4 (optimizer.py L1006-1012, trained
    parameters only) and Adam 8 -- 16 B a parameter held through the step -- and, for a bf16
    grad buffer, the fp32 copy of the grads the step makes (optimizer.py L1097,
    main_grad.float()), freed at the next zero_grad. No autocast: no bf16 compute copy. The frozen
    base keeps no gradient, main param or optimizer state (none is created for it), and no grad
    buffer. Megatron-Bridge's PEFT runs without the distributed optimizer (validity
    adapter-megatron refuses zero > 0), so nothing is sharded; ``_shard`` keeps the rule where
    ZeRO-1 would apply."""
    r = recipe(t, zero)
    sharded = _shard(ad, zero >= 1, 1)
    temp = opt.step_temporaries(t, sharded, largest, r.state_dtype) + r.main_grad_copy * sharded
    return replace(frozen, weights=ad * r.weights, grads=ad * r.grads, master=sharded * r.master,
                   optimizer=sharded * r.moments, compute_copy=0.0, persistent_grads=r.persistent_grads,
                   optimizer_temp=temp, loop_kept_grads=False)
