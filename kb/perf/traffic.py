"""Bytes per token the memory-bound kernels around a layer's GEMMs move, each counted from the
source of the kernel that runs it, not fitted: a training dropout, the fp32 residual stream of
fp32 weights under autocast, the LoRA adapters and PEFT's merged expert weights. The step-time
model divides them by the HBM bandwidth (kb/perf/compute.layer_time); they live apart from
compute.py, which keeps the fitted efficiencies and the layer's assembly of terms.
"""
from __future__ import annotations

from ..layout import Layout
from ..memory.activations import fp32_weights_under_autocast
from ..memory.peft_experts import ADAPTED_EXPERT_FAMILIES, merges_experts, peft_on_transformers, shared_projections
from ..memory.states import megatron_adapter_linears
from ..params import attention_projections, mlp_projections
from ..schema import ModelSpec, TrainingSpec
from ..vec import where

def dropout_traffic(element: float, forward_only: bool = False) -> float:
    """Bytes a dropout in training moves per element of ``element`` bytes, through the fused kernel
    a GPU runs (native_dropout, aten/src/ATen/native/cuda/Dropout.cu): forward it reads the input
    (e) and writes the output (e) and the bool mask (1); backward native_dropout_backward reads the
    gradient (e) and the mask (1) and writes the input's gradient (e): 2 e + 1 forward, 4 e + 2 in
    all. Counted, not fitted."""
    return 2.0 * element + 1.0 if forward_only else 4.0 * element + 2.0



def fp32_residual_bytes(t: TrainingSpec, lay: Layout):
    """Extra elementwise bytes per token per hidden unit when the Trainer runs fp32 weights under
    bf16 autocast (the residual stream stays fp32, kb/memory/activations.fp32_residual_extra):
    autocast casts activations on every use, with no cache (it caches weights only), so the
    norm output feeding q, k and v is cast three times and the one feeding gate and up twice
    (5 x (4 + 2) = 30) and the two residual adds read and write fp32 (+8): 38 forward. Backward
    casts the five bf16 input gradients back to fp32 (5 x (2 + 4) = 30), sums them into the two
    norm outputs' gradients (3 fp32 adds x 12 = 36) and adds the residual gradients in fp32 (+8):
    74. 112 bytes in all, on top of the 288 of the bf16 layer the profile was fitted on
    (h100_hf_layer_compute.jsonl). Counted, not fitted."""
    return where(fp32_weights_under_autocast(t, lay), FP32_RESIDUAL_BYTES, 0.0)


# 38 forward + 74 backward, counted in fp32_residual_bytes' docstring
FP32_RESIDUAL_BYTES = 112.0


# LoRA freezes the base weights: their backward computes the input gradient but no weight
# gradient, 2 of the 3 GEMMs (PEFT: requires_grad=False on the base layer).
FROZEN_GEMM_SHARE = 2.0 / 3.0
# PEFT LoRA on a linear layer, bytes per token per input feature and per output feature
# (peft/tuners/lora/layer.py Linear.forward). With fp32 adapters the input is cast to the adapter
# dtype (_cast_input_dtype: read 2 + write 4) and back to bf16 by autocast for lora_A (read 4 +
# write 2), which reads it (2): 14 forward, about twice that backward -> 42 per input feature;
# with bf16 adapters, or QLoRA's under autocast, which skips that cast (activations.adapter_input_cast),
# lora_A only reads it (2), about twice that backward -> 6. lora_B writes its
# output (2), the scaled result is added to the base output (read 2 + 2, write 2): 8 forward,
# about three times that backward -> 32 per output feature. The rank-r GEMMs are memory-bound at
# r = 16-64. Counted, not fitted.
LORA_IN_BYTES_FP32 = 42.0
LORA_IN_BYTES_BF16 = 6.0
LORA_OUT_BYTES = 32.0
# PEFT's lora_dropout > 0, per input feature of each adapter: its dropout's kernel on the adapter's
# input (dropout_traffic), bf16, or fp32 where fp32 adapters run it on their fp32 cast: 10 and 18
LORA_DROPOUT_BYTES_BF16 = dropout_traffic(2.0)
LORA_DROPOUT_BYTES_FP32 = dropout_traffic(4.0)


# PEFT's merged expert weights (kb/memory/peft_experts), bytes per routed-expert parameter of a
# layer per micro-batch: the merge reads W and writes W + B A (2 + 2); backward writes the merged
# weight's gradient and reads it for B's and A's gradients (2 + 2 + 2). Counted, not fitted.
MERGED_BYTES_PER_PARAM = 10.0


def megatron_adapter_projections(m: ModelSpec, moe: bool) -> list[tuple[int, int]]:
    """(in, out) features per token of the adapters Megatron-Bridge's LoRA runs in one layer
    (states.megatron_adapter_linears): a dense layer's, or an MoE layer's outside its routed
    experts and the routed experts' shared pair on each of a token's top_k routed copies."""
    dense, rest, pair = megatron_adapter_linears(m)
    return rest + pair * m.top_k if moe else dense


def lora_bytes_per_token(m: ModelSpec, t: TrainingSpec, moe: bool, fp32_adapters) -> float:
    """Memory traffic the adapters add per token of one layer (all-linear targets). Where the
    adapters are PEFT's (peft_on_transformers) an MoE layer's routed experts run no adapter per
    token (peft_experts: merged into the weights, or not adapted); its MLP adapters are the
    shared expert's, where PEFT keeps them (lora_params). Megatron-Bridge's are its own
    (megatron_adapter_projections). With lora_dropout each adapter's dropout reads and writes
    its input once more each way (LORA_DROPOUT_BYTES_*)."""
    if not peft_on_transformers(t):
        projections = megatron_adapter_projections(m, moe)
    elif not moe:
        # PEFT maps gate/up/down_proj onto the fused experts' parameters, so a dense layer's MLP of
        # those names (DeepSeek's leading layers) keeps no adapter (kb/memory/states.lora_params);
        # gate and up read the MLP's input each, a fused gate_up_proj once (FUSED_PROJECTIONS)
        projections = attention_projections(m) + ([] if merges_experts(m, t) else mlp_projections(m, m.ffn))
    else:
        # the linears lora_params counts: the shared expert's, GraniteMoeShared's fused input_linear
        # one adapter, Qwen2-MoE's shared_expert_gate one more (every MoE family PEFT runs fuses its
        # experts: FUSED_EXPERT_FAMILIES; Llama 4's is refused, PEFT_FAILS)
        projections = attention_projections(m) + (shared_projections(m) if m.family not in ADAPTED_EXPERT_FAMILIES
                                                  else [])
    ins, outs = sum(i for i, _ in projections), sum(o for _, o in projections)
    per_in = where(fp32_adapters, LORA_IN_BYTES_FP32, LORA_IN_BYTES_BF16)
    if t.lora_dropout > 0:
        per_in = per_in + where(fp32_adapters, LORA_DROPOUT_BYTES_FP32, LORA_DROPOUT_BYTES_BF16)
    return per_in * ins + LORA_OUT_BYTES * outs
