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

from ..layout import Layout
from ..schema import ModelSpec, TrainingSpec
from ..vec import where
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


def adapter_output_bytes(t: TrainingSpec, adapters: float) -> float:
    """Bytes a token each adapter's linear_out keeps of its input, linear_in's rank-r output:
    2 r (bf16), whole r on every TP rank (ColumnParallelLinear linear_in with gather_output=True;
    a RowParallelLinear linear_in all-reduces its output) and whole-sequence under sequence
    parallelism (the adapter's linears run with sequence_parallel=False), so not divided by TP
    or SP. ``adapters``: the adapters a layer holds, per token."""
    return 2.0 * t.lora_rank * adapters


def norm_output_copy_bytes(t: TrainingSpec, lay: Layout, h: int):
    """Bytes a token linear_in of an adapter on a fused LayerNorm-linear (linear_qkv, linear_fc1)
    keeps of the norm output it reads, beyond what TE keeps. TE returns the norm output to the
    adapter and keeps it too (layernorm_linear.py L427-429), so in bf16 without sequence
    parallelism the adapter's saved input is that storage: nothing more. It is a copy of its own,
    2 h whole-sequence, where (a) sequence parallelism gathers it (TE returns the gathered output,
    return_layernorm_output_gathered, and keeps only its local shard; or the adapter gathers it
    itself under TP overlap), (b) FP8 quantizes TE's kept copy (L287-317: the returned bf16 value
    is not the one TE keeps), or (c) the adapter's dropout replaces its input (2 h dropped-out copy
    and the 1 h bool mask of F.dropout's fused kernel)."""
    own = lay.sp | (t.precision == "fp8") | (t.lora_dropout > 0)
    return where(own, 2.0 * h, 0.0) + (1.0 * h if t.lora_dropout > 0 else 0.0)


def megatron_adapter_saved_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, moe: bool):
    """What Megatron-Bridge's LoRA changes in what a Megatron-Core layer keeps for backward, bytes
    per token (activations.layer_bytes_per_token's units; its megatron profile is the full
    fine-tuning count). With dropout 0 in bf16 without SP: 8 r, four adapters' rank-r tensors.

    - linear_qkv and linear_fc1 (TE LayerNormColumnParallelLinear, frozen): TE keeps the norm input
      and output as for a trained weight, since it returns the output to the adapter; the adapter
      adds norm_output_copy_bytes (per adapter: 2 for a dense layer, the attention's alone in an
      MoE layer, whose router and experts read a separate norm's output);
    - linear_proj and linear_fc2 (TE RowParallelLinear, frozen): TE keeps no input (linear.py
      L303); linear_in keeps the same tensor instead -- the attention output flash attention keeps
      anyway, the SwiGLU output fc2 kept -- so nothing changes in bf16 without dropout. Under FP8
      TE kept fc2's input in FP8 (1 byte, activations/mlp.py), the adapter keeps it bf16: + F/tp. A
      dropout keeps its dropped-out copy and mask (3 bytes an element) and frees fc2's own input,
      which nothing else keeps (Megatron's fused SwiGLU keeps its input, not its output);
    - every adapter: adapter_output_bytes.
    The routed experts' shared adapter pair (is_expert) reads the permuted tokens the grouped
    linears kept: 2 r x 2 a routed copy; what their dropout or FP8 changes is not sized."""
    h = m.hidden
    norms = norm_output_copy_bytes(t, lay, h) * (1 if moe else 2)
    q, drop = m.q_width / lay.tp, t.lora_dropout > 0
    proj = 3.0 * q if drop else 0.0
    if moe:
        routed = where(lay.sp, lay.etp / lay.tp, 1.0) * m.top_k
        shared = 2 if m.shared_width else 0
        return norms + proj + adapter_output_bytes(t, 2 + shared + 2 * routed)
    f = m.ffn / lay.tp
    fc2_kept = 1.0 if t.precision == "fp8" else 2.0        # what TE kept of fc2's input, a trained weight
    fc2 = ((3.0 if drop else 2.0) - fc2_kept) * f
    return norms + proj + fc2 + adapter_output_bytes(t, 4)
