"""LoRA and QLoRA on the routed experts of a transformers 5 MoE model, as PEFT 0.21 runs them.

transformers 5 stores each MoE layer's routed experts as stacked 3-D parameters (MixtralExperts,
Qwen3MoeExperts, DeepseekV3NaiveMoe, ...: gate_up_proj E x 2F x h and down_proj E x h x F),
no longer as one nn.Linear per expert. Two things follow wherever adapters are PEFT's
(peft_on_transformers):

- bitsandbytes quantises nn.Linear modules only (transformers integrations/bitsandbytes.py
  replace_with_bnb_linear: `type(module) is nn.Linear`), so under QLoRA the routed experts --
  most of an MoE model's weights -- stay in bf16;
- PEFT's "all-linear" maps the v4 expert names onto the fused parameters for the families of
  transformers' conversion mapping (peft utils/transformers_weight_conversion.py
  _convert_peft_config_moe: Mixtral; Qwen3-MoE, DeepSeek-V2 and V3 by the qwen2_moe pattern,
  which Qwen2-MoE itself is not in) and wraps them in ParamWrapper: each forward builds the
  merged weight W + scale B A for all the layer's experts (torch.baddbmm in
  _LoraFactorsProxy, cached by nn.utils.parametrize.cached for the forward), and the experts'
  matmuls keep it for backward. So every adapted MoE layer holds a bf16 copy of its experts
  from its forward to its backward, and its backward computes their full weight gradient (of
  the merged weight, for B and A) where a frozen nn.Linear computes none.

Measured on CPU layers (torch 2.14.1, transformers 5.24.0, peft 0.21.2; benchmarks/calibration/
measure_peft_experts.py -> cpu_peft_experts.jsonl): the merged weights are what a Mixtral and a
Qwen3-MoE layer keep beyond full fine-tuning's tensors, to 0.4%; its backward adds the down
projection's merged-weight gradient, a third of them, over the end of forward; Qwen2-MoE and
gpt-oss adapt no routed expert (Qwen2-MoE its attention and shared expert, gpt-oss its attention).

Under expert parallelism (DeepSpeed AutoEP, torchtitan's EP) the MoE layer is another's, not the
one PEFT wrapped: LoRA / QLoRA with EP is refused outside Megatron (kb/validity.py,
adapters-expert-parallel), so these terms always meet transformers' own layer.
"""
from __future__ import annotations

from ..defaults import ADAPTERS
from ..params import adapter_params, mlp_projections
from ..schema import ModelSpec, TrainingSpec
from ..vec import where
from .activations import FUSED_SHARED_MLP, adapters_in_fp32, own_input_copies

# model types whose routed experts transformers 5 stores as fused 3-D parameters (every MoE
# family shardwise reads: modeling_mixtral/qwen2_moe/qwen3_moe/deepseek_v2/deepseek_v3/gpt_oss,
# and modeling_glm4_moe.py's Glm4MoeExperts, DeepSeek-V3's module under another name;
# modeling_olmoe.py OlmoeExperts; modeling_granitemoe.py and _granitemoeshared.py GraniteMoeExperts;
# modeling_dots1.py Dots1Experts, GLM-4.5's)
FUSED_EXPERT_FAMILIES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss", "glm4_moe",
                         "olmoe", "granitemoe", "granitemoeshared", "dots1")
# of those, the ones PEFT 0.21's all-linear adapts through ParamWrapper (above; transformers 5.24
# conversion_mapping.py maps glm4_moe, olmoe and dots1 to the qwen2_moe pattern, as it does deepseek_v3;
# granitemoe and granitemoeshared to a granitemoe pattern PEFT has no expert targets for:
# peft utils/transformers_weight_conversion.py _MOE_TARGET_MODULE_MAPPING)
ADAPTED_EXPERT_FAMILIES = ("mixtral", "qwen3_moe", "deepseek_v2", "deepseek_v3", "glm4_moe", "olmoe", "dots1")
# model types whose LoRA under PEFT 0.21's all-linear does not run: Llama 4's router is an
# nn.Linear subclass whose forward returns (scores, logits) (modeling_llama4.py Llama4Router),
# which all-linear wraps, and LoRA's Linear.forward then takes the tuple for a tensor
# (peft tuners/lora/layer.py: result.dtype -> "AttributeError: 'tuple' object has no attribute
# 'dtype'" at the first forward; a 2-layer llama4_text model, peft 0.21.2, transformers 5.24)
PEFT_FAILS = {"llama4": "its router (Llama4Router) is an nn.Linear subclass returning (scores, logits), which "
                        "all-linear wraps, and LoRA's forward fails on the tuple (peft 0.21.2: AttributeError: "
                        "'tuple' object has no attribute 'dtype')"}
# SwiGLU experts: down_proj is h x F of the 3 h F a expert holds
DOWN_SHARE = 1.0 / 3.0


def peft_on_transformers(t: TrainingSpec) -> bool:
    """Whether a LoRA / QLoRA job's adapters are PEFT's on a transformers model: everywhere but
    Megatron (Megatron-Bridge's own LoRA) -- the Trainer, DeepSpeed, and FSDP2, whose export hands
    the adapters to the user's PEFT script (torchtitan has none)."""
    return t.framework in ("hf", "deepspeed", "fsdp")


# MoE blocks whose router's weight PEFT wraps and merges like the experts' (Mixtral, Qwen3-MoE,
# OLMoE: F.linear over the bf16 post-attention norm output; lora_params' router adapter), so
# that the norm output stays kept; so does it where an adapted shared expert's lora_A reads it
# (Qwen2-MoE, GraniteMoeShared: moe_adapter_mlp_bytes). DeepSeek's router reads an fp32 copy and
# its frozen shared expert nothing; gpt-oss's and Granite MoE's routers are bare parameters PEFT
# leaves frozen: there the output goes (measured, cpu_peft_experts.jsonl).
NORM_OUTPUT_KEPT_FAMILIES = ("mixtral", "qwen3_moe", "olmoe")


def shared_input_linears(m: ModelSpec) -> int:
    """nn.Linear modules that read a shared expert's input: gate_proj and up_proj, or one fused
    input_linear (FUSED_SHARED_MLP), and Qwen2-MoE's shared_expert_gate."""
    return (1 if m.family in FUSED_SHARED_MLP else 2) + (1 if m.shared_gate else 0)


def shared_projections(m: ModelSpec) -> list[tuple[int, int]]:
    """(in, out) features of each nn.Linear PEFT adapts in one layer's shared expert where its
    routed experts are not adapted: gate, up and down, or a fused input_linear (h x 2S) and
    output_linear (FUSED_SHARED_MLP; modeling_granitemoeshared.py GraniteMoeSharedMLP), and
    Qwen2-MoE's shared_expert_gate (h x 1; modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock); none
    without a shared expert. The parameters (shared_adapter_params) and the per-token traffic
    (perf/traffic.lora_bytes_per_token) both read it."""
    if not m.shared_width:
        return []
    mlp = mlp_projections(m, m.shared_width, fused=m.family in FUSED_SHARED_MLP)
    return mlp + ([(m.hidden, 1)] if m.shared_gate else [])


def shared_adapter_params(m: ModelSpec, rank: int) -> int:
    """LoRA parameters PEFT gives one layer's shared expert (shared_projections), r (in + out)
    per nn.Linear: gate, up and down 3 r (h + S), or a fused input_linear and output_linear
    r (2h + 3S) (counted on a CPU GraniteMoeShared layer, cpu_peft_experts.jsonl), and Qwen2-MoE's
    gate r (h + 1); 0 without a shared expert."""
    return adapter_params(rank, shared_projections(m))


def moe_adapter_mlp_bytes(m: ModelSpec, t: TrainingSpec, lay, fp32) -> float:
    """What PEFT's LoRA changes in what a transformers 5 MoE block keeps, bytes per token (the
    attention's part is activations.adapters._attention_adapter_bytes):

    - the post-attention norm's output, 2 h less outside NORM_OUTPUT_KEPT_FAMILIES;
    - routed experts PEFT does not adapt (gpt-oss, Qwen2-MoE: frozen fused parameters) keep
      neither each routed copy's input nor the product down_proj reads, k (2 h + 2 F) less;
      merged ones (ADAPTED_EXPERT_FAMILIES) run on weights that take a gradient and keep what
      full fine-tuning keeps;
    - a shared expert: frozen without adapters beside merged experts (DeepSeek: PEFT maps its
      names onto the fused ones), so its product goes, 2 F_shared less; adapted otherwise
      (Qwen2-MoE: gate, up, down and the shared-expert gate, 2 r each, and with fp32 adapters
      gate's, up's and the gate's copies of the norm output, less the one it replaces, 4 h;
      GraniteMoeShared: input_linear and output_linear, 2 r each, and input_linear's copy only,
      which replaces the norm output: shared_input_linears).

    Measured on CPU MoE layers of the five families (cpu_peft_experts.jsonl, the per-token slope
    of LoRA less full fine-tuning from 256 to 1,024 tokens): with the attention's part, within
    0.1 h a token for Mixtral, Qwen3-MoE, Qwen2-MoE and gpt-oss with either adapter dtype, and
    for DeepSeek-V3 with bf16 ones (fp32: 2 h, the CPU's math SDPA under MLA). Routed experts
    with per-expert nn.Linear adapters (a family transformers 5 does not fuse) are not counted.
    With lora_dropout > 0 (activations.own_input_copies) the shared expert's adapters keep
    dropped-out copies instead; measured on the Qwen2-MoE layer through native_dropout, 18.5 h a
    token over lora-bf16 and 8.5 h over fp32 adapters, as this gives with the attention's part.
    PEFT refuses dropout on merged experts (ParamWrapper: "does not work with lora_dropout != 0"),
    and so does kb/build.py."""
    if not (peft_on_transformers(t) and m.family in FUSED_EXPERT_FAMILIES):
        return 0.0
    h = m.hidden
    adapted = m.family in ADAPTED_EXPERT_FAMILIES
    kept = m.family in NORM_OUTPUT_KEPT_FAMILIES or (m.shared_width and not adapted)
    out = 0.0 if kept else -2.0 * h
    if not adapted:
        out -= m.top_k * 2.0 * (h + m.expert_ffn / lay.etp)
    if m.shared_width and adapted:
        out -= 2.0 * m.shared_width / lay.tp
    elif m.shared_width:
        readers = shared_input_linears(m)
        # the norm's output, which the shared expert's lora_As kept, and its product
        shared = m.shared_width / lay.tp
        out += 2.0 * t.lora_rank * (readers + 1) + own_input_copies(t, fp32, readers * h + shared, 2.0 * (h + shared))
    return out


def experts_stay_bf16(m: ModelSpec, t: TrainingSpec) -> bool:
    """QLoRA leaves transformers 5's fused routed experts in bf16 (bitsandbytes quantises
    nn.Linear only)."""
    return t.training == "qlora" and peft_on_transformers(t) and m.family in FUSED_EXPERT_FAMILIES


def merges_experts(m: ModelSpec, t: TrainingSpec) -> bool:
    """Whether the job's adapters merge the routed experts' weights (ParamWrapper): LoRA / QLoRA
    with PEFT (peft_on_transformers) on an ADAPTED_EXPERT_FAMILIES model."""
    return t.training in ADAPTERS and peft_on_transformers(t) and m.family in ADAPTED_EXPERT_FAMILIES


def expert_adapter_params(m: ModelSpec, rank: int) -> int:
    """LoRA parameters PEFT gives one layer's fused experts (ParamWrapper): gate_up at rank 2r per
    expert with a dense block-diagonal B, r E (2h + 4F), and down_proj, r E (F + h)."""
    return rank * m.experts * (2 * m.hidden + 4 * m.expert_ffn) + rank * m.experts * (m.expert_ffn + m.hidden)


def merged_expert_bytes(m: ModelSpec, t: TrainingSpec, lay, layer_expert_params: float):
    """Bytes one MoE layer keeps on a rank for its merged expert weights: 2 (bf16, the base
    weights' dtype: the merge runs in W's dtype) x the layer's routed-expert parameters, plus,
    with PEFT's fp32 adapters (activations.adapters_in_fp32), the bf16 casts of B and A that
    baddbmm keeps for their gradients (bf16 adapters are kept as themselves: parameters); 0 where
    merges_experts does not hold."""
    if not merges_experts(m, t):
        return 0.0
    factors = where(adapters_in_fp32(t, lay), 2.0 * expert_adapter_params(m, t.lora_rank), 0.0) / (lay.ep * lay.etp)
    return 2.0 * layer_expert_params + factors
