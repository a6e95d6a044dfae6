"""Who runs the job, and in which dtypes it keeps tensors: the implementation profile whose
activations apply (Megatron-Core, torch-native / torchtitan, transformers), whether the weights
are fp32 under bf16 autocast, and how a family's routed experts are run and cast."""
from __future__ import annotations

from ...defaults import ADAPTERS
from ...layout import Layout
from ...schema import ModelSpec, TrainingSpec
from ...vec import where


def profile(t: TrainingSpec) -> str:
    """Which implementation's activations apply: Megatron (TE), torch-native (FSDP/torchtitan)
    or transformers (HF Trainer and DeepSpeed, which trains transformers models)."""
    return {"megatron": "megatron", "fsdp": "torch"}.get(t.framework, "hf")


def torchtitan_runs(t: TrainingSpec) -> bool:
    """Whether torchtitan runs the job: the torch-native profile pre-training or fine-tuning every
    weight. An adapter or RLHF job under FSDP is the user's own transformers script (torchtitan
    has no adapter path: export/__init__.training_carried)."""
    return profile(t) == "torch" and t.training in ("pretrain", "finetune")


# transformers families whose MoE block runs every token through every routed expert, each copy
# scaled by its router score, which is 0 off the top k (modeling_llama4.py Llama4TextMoe:
# hidden_states.repeat(num_experts, 1) * router_scores, then Llama4TextExperts' bmm over all
# experts; Llama4TextConfig: "the experts take every token pre-scaled by its router score rather
# than the routing"): E copies a token, not top_k, in what is kept and in the GEMMs
ALL_EXPERTS_FAMILIES = ("llama4",)


def experts_cast_by_autocast(m: ModelSpec) -> bool:
    """Whether autocast casts the routed experts' fp32 weights to bf16 for their matmuls: Llama 4's
    Llama4TextExperts multiply by torch.bmm, on autocast's lower-precision list, where the other
    fused families' experts stay fp32 (expert_gemm_rate, states.compute_copy). Their activations
    are then bf16, as with bf16 weights, but for the fp32 repeat of the norm output each copy
    keeps (2 h more a copy: a CPU Llama 4 layer with fp32 weights, cpu_family_saved_tensors.jsonl)."""
    return m.family in ALL_EXPERTS_FAMILIES


def routed_copies(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """Copies of each token the routed experts compute and keep: top_k, or every expert on the
    transformers path of ALL_EXPERTS_FAMILIES (measured on a CPU Llama 4 layer,
    cpu_family_saved_tensors.jsonl: 4 h + 8 F a token per expert, 8 experts of top 1) -- but
    only at EP 1: with EP > 1 the transformers path's experts are not transformers' block but
    DeepSpeed's (AutoEP's layer, or deepspeed.moe.layer.MoE in the model code where AutoEP has no
    preset: export/deepspeed._experts; validity hf-expert-parallel), which routes each token to
    its top k (deepspeed/moe/sharded_moe.py topkgating). Works on the search's layout arrays."""
    if profile(t) == "hf" and m.family in ALL_EXPERTS_FAMILIES:
        return where(lay.ep > 1, m.top_k, m.experts)
    return m.top_k


def fp32_weights_under_autocast(t: TrainingSpec, lay: Layout):
    """Whether the weights are fp32 under bf16 autocast: transformers' Trainer with bf16=True on
    a model loaded in fp32 (hf, the bf16 recipe), but not under DeepSpeed (ZeRO >= 1 in the
    Trainer: bf16 weights) or LoRA/QLoRA (a bf16 or quantised base model). One condition for
    every term it sets, in memory and in time, so they agree on what runs (a boolean, or one per
    layout of the search's table)."""
    if t.framework != "hf" or t.precision != "bf16" or t.training in ADAPTERS:
        return False
    return lay.zero == 0
