"""The facts rules read, by group, with their types: the one vocabulary of rules and search.

Facts never change during a run. They come in groups, and a rule may read a group only where
its value is known (rules/loader.py checks this at load, with file:line):

* job facts (model.*, cluster.*, train.*): the input. Stratum 1 reads only these and adds hard
  constraints (require / forbid / pin).
* layout facts (layout.*) and estimate facts (memory.*, metrics.*): one value per layout. They
  are read inside a constraint's or preference's expression, where they are judged for every
  layout of the search's table; in a rule's ``when`` they mean the answer (stratum 3: warnings
  and notes about the chosen layout).
* feasibility facts (fit.*, best.*): aggregates of the one scored table under the hard
  constraints, each with its witness layout (search/feasibility.py). Stratum 2 reads them and
  adds soft preferences (prefer / avoid with a worth).
* neighbour facts (same.*): one value per layout, about the same layout with one setting
  changed ("the same layout with a lower ZeRO stage is allowed"). Only preferences read them:
  a preference is judged per layout against its own neighbours (docs/reference/decision-prototype.md).
"""
from __future__ import annotations

from typing import get_args

from .catalog import gpu_names, link_names
from .choices import (RECOMPUTE, Attention, CudaGraphs, Framework, Optimizer, Precision, TrainingType,
                      ZeroGrad)

N, S, B = "num", "str", "bool"

# The settings a decision explains, in the order people read them (explain --why takes these)
SETTINGS = ("tp", "pp", "vp", "dp", "cp", "ep", "zero", "sp", "mbs", "recompute", "offload")
SETTING_NAMES = {"tp": "TP", "pp": "PP", "vp": "VP", "dp": "DP", "cp": "CP", "ep": "EP", "zero": "ZeRO stage",
                 "sp": "SP", "mbs": "micro-batch", "recompute": "recomputation",
                 "offload": "offloaded layers"}


def shown_setting(value) -> str:
    """A setting's value as people read it: on/off for true/false."""
    return ("on" if value else "off") if isinstance(value, bool) else str(value)

JOB = {
    "model.name": S, "model.params_b": N, "model.active_params_b": N, "model.layers": N, "model.hidden": N,
    "model.heads": N, "model.kv_heads": N, "model.vocab": N, "model.is_moe": B, "model.experts": N,
    "model.inferred": B, "model.max_positions": N,
    "cluster.gpu": S, "cluster.gpus": N, "cluster.gpus_per_node": N, "cluster.nodes": N,
    "cluster.nvlink_domain": N, "cluster.gpu_memory_gib": N, "cluster.intra": S, "cluster.intra_kind": S,
    "cluster.inter": S, "cluster.inter_kind": S, "cluster.mxfp8": B, "cluster.speed_checked": B,
    "cluster.custom_speed": B, "cluster.host_memory_gib": N,
    "train.seq_len": N, "train.global_batch": N, "train.training": S, "train.precision": S,
    "train.framework": S, "train.attention": S, "train.cuda_graphs": S, "train.optimizer": S, "train.zero_grad": S,
    "train.allocator": S,
    "train.sequence_parallel": B,
    "train.mbs_given": B, "train.recompute_given": B, "train.expert_parallel": B,
}
LAYOUT = {
    "layout.tp": N, "layout.pp": N, "layout.vp": N, "layout.dp": N, "layout.cp": N, "layout.ep": N,
    "layout.zero": N, "layout.sp": B, "layout.mbs": N, "layout.ga": N, "layout.recompute": S,
    "layout.global_batch": N, "layout.offload": N,
}
ESTIMATE = {
    "memory.peak_gib": N, "memory.capacity_gib": N, "memory.used_pct": N, "memory.headroom_gib": N,
    "memory.fits": B, "memory.split_peak_pct": N, "memory.largest_block_gib": N, "memory.host_offload_gib": N,
    "metrics.step_time_s": N, "metrics.tokens_per_s": N, "metrics.tokens_per_s_per_gpu": N,
    "metrics.mfu_pct": N, "metrics.bubble_pct": N, "metrics.comm_overhead_pct": N, "metrics.moe_host_pct": N,
}
FEASIBILITY = {
    "fit.any": B, "fit.count": N, "fit.without_pp": B, "fit.in_one_node": B, "fit.without_cp": B,
    "fit.without_recompute": B, "fit.min_tp": N, "fit.min_pp": N, "fit.min_cp": N, "fit.min_zero": N,
    "best.tokens_per_s": N, "best.pp1.tokens_per_s": N, "best.cp1.tokens_per_s": N,
}
NEIGHBOUR = {"same.min_zero": N, "same.min_recompute": S, "same.pp1_fits": B, "same.pp1_dp": N,
             "same.pp1_batch_divides": B, "same.min_offload": N}

# The values a string fact takes where they are a closed set (kb/choices.py): a rule that
# compares one with anything else ('ful', 'Megatron') can never match it, a typo that
# rules/loader.py refuses with file:line rather than a rule that silently never fires.
VALUES: dict[str, tuple[str, ...]] = {
    "train.training": get_args(TrainingType), "train.precision": get_args(Precision),
    "train.framework": get_args(Framework), "train.attention": get_args(Attention),
    "train.cuda_graphs": get_args(CudaGraphs), "train.optimizer": get_args(Optimizer),
    "train.zero_grad": get_args(ZeroGrad), "train.allocator": ("caching", "expandable"),
    "layout.recompute": RECOMPUTE, "same.min_recompute": RECOMPUTE,
    # the kinds of kb/data/links.yaml's links, as kb/facts.py names them (tests/test_catalogs.py
    # checks that these are all of them)
    "cluster.intra_kind": ("nvlink", "pcie", "infinity-fabric"), "cluster.inter_kind": ("infiniband", "roce", "ethernet"),
    # catalog names (kb/catalog.py): jobs name GPUs and links by them, so 'h100' or the alias
    # 'infiniband' in a rule is a typo for h100-sxm or infiniband-ndr that would never match
    "cluster.gpu": tuple(gpu_names()), "cluster.intra": tuple(link_names()), "cluster.inter": tuple(link_names()),
}

GROUPS = {"job": JOB, "layout": LAYOUT, "estimate": ESTIMATE, "feasibility": FEASIBILITY, "neighbour": NEIGHBOUR}
SCHEMA: dict[str, str] = {p: t for g in GROUPS.values() for p, t in g.items()}
GROUP_OF = {p: name for name, g in GROUPS.items() for p in g}

# Facts whose values are not integers: compared by our evaluator, never by durable (rules/compiler.py)
FLOAT_PATHS = ({p for p in SCHEMA if p.startswith(("memory.", "metrics.", "best."))}
               | {"model.params_b", "model.active_params_b", "cluster.gpu_memory_gib"})

DESCRIPTIONS = {
    "model.name": "the model's name (catalog, config.json or inferred-<size>)",
    "model.params_b": "parameters, billions (all experts counted)",
    "model.active_params_b": "parameters a token passes through, billions (top-k experts for MoE)",
    "model.layers": "decoder layers", "model.hidden": "hidden size", "model.heads": "attention (query) heads",
    "model.kv_heads": "key/value heads (grouped-query attention)", "model.vocab": "vocabulary size",
    "model.is_moe": "the model has mixture-of-experts layers", "model.experts": "routed experts per MoE layer (0 if dense)",
    "model.inferred": "the shape was inferred from a parameter count",
    "model.max_positions": "the context the model was trained for (config.json max_position_embeddings, else its config class's default; 0 if not known)",
    "cluster.gpu": "the GPU's catalog name", "cluster.gpus": "GPUs in the job",
    "cluster.gpus_per_node": "GPUs per node", "cluster.nodes": "nodes in the job",
    "cluster.nvlink_domain": "GPUs of this job that share one fast intra-node link domain: the node, or the job's equal share of each NVL72 rack it runs on (72 on 144 GB200, 68 on 136)",
    "cluster.gpu_memory_gib": "memory of one GPU, GiB", "cluster.intra": "the link inside a node (catalog name)",
    "cluster.intra_kind": "its kind: nvlink, pcie or infinity-fabric", "cluster.inter": "the link between nodes (catalog name)",
    "cluster.inter_kind": "its kind: infiniband, roce or ethernet",
    "cluster.mxfp8": "the GPU's tensor cores run microscaled FP8 (Blackwell)",
    "cluster.speed_checked": "measured or published training runs on this GPU (or its silicon) check the step time "
                             "(kb/data/gpus.yaml speed_checked_on)",
    "cluster.host_memory_gib": ("host memory per GPU where the GPU comes with its host (a Grace superchip: "
                                "kb/data/gpus.yaml host_memory_gib); 0 where the server decides"),
    "memory.host_offload_gib": "activations a rank keeps in host memory under offloading (layout.offload)",
    "cluster.custom_speed": "the GPU's TFLOP/s or memory bandwidth are the user's own figures (--gpu-tflops, "
                            "--gpu-fp8-tflops, --gpu-hbm-gbps; kb/custom_gpu.py), not the catalog's",
    "train.seq_len": "tokens per sequence", "train.global_batch": "sequences per optimizer step",
    "train.training": "pretrain, finetune, lora, qlora or rlhf", "train.precision": "bf16, pure-bf16 or fp8",
    "train.framework": "megatron, deepspeed, fsdp or hf", "train.attention": "flash, sdpa, flash2 or eager",
    "train.cuda_graphs": "none, or full-iteration (Megatron's whole-step CUDA graph)",
    "train.optimizer": "the optimizer and its implementation (adamw = the framework's default)",
    "train.zero_grad": "set-to-none (gradients freed between steps, PyTorch's default) or zeros (kept)",
    "train.allocator": "PyTorch's CUDA allocator as the run sets it: caching (its default) or expandable "
                       "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
    "layout.tp": "tensor-parallel degree", "layout.pp": "pipeline stages",
    "layout.vp": "virtual stages (model chunks) per pipeline rank", "layout.dp": "data-parallel replicas",
    "layout.cp": "context-parallel degree (each sequence split over this many GPUs)",
    "layout.ep": "expert-parallel degree", "layout.zero": "ZeRO stage 0-3 (3 = FSDP full shard)",
    "layout.sp": "sequence parallelism on", "layout.mbs": "micro-batch, sequences",
    "layout.ga": "micro-batches per replica per step (gradient accumulation)",
    "layout.recompute": "recomputation: none, selective, full or modules",
    "layout.offload": ("layers whose activations Megatron keeps in host memory between forward and backward "
                       "(--cpu-offloading-num-layers; 0 = none)"),
    "layout.global_batch": "sequences per step (mbs x ga x dp)",
    "memory.peak_gib": "the estimated peak per GPU, GiB (worst stage and phase)",
    "memory.capacity_gib": "the GPU's memory, GiB", "memory.headroom_gib": "capacity less the peak, GiB",
    "memory.split_peak_pct": "under the caching allocator, the peak as a share of memory if the step's largest "
                             "tensor finds the previous step's copy's cached segment split by smaller ones "
                             "(0 under expandable segments)",
    "memory.largest_block_gib": "the step's largest single tensor, GiB: one fp32 copy of a micro-batch's (or a "
                                "loss chunk's) logits on a rank",
    "metrics.step_time_s": "seconds per optimizer step", "metrics.tokens_per_s": "tokens per second, whole job",
    "metrics.tokens_per_s_per_gpu": "tokens per second per GPU",
    "metrics.mfu_pct": "model FLOPs utilisation, % of the GPUs' dense peak",
    "metrics.bubble_pct": "pipeline bubble, % of the step",
    "metrics.comm_overhead_pct": "communication not hidden behind compute, % of the step",
    "metrics.moe_host_pct": "the MoE layers' host-side dispatch and launch time, % of the step "
                            "(what --cuda-graphs full-iteration removes)",
    "fit.any": "some layout meets every hard constraint (the memory margin included)",
    "fit.count": "how many layouts meet every hard constraint",
    "fit.without_pp": "some layout with PP = 1 meets every hard constraint",
    "fit.in_one_node": "some layout whose TP x PP x CP ranks sit in one node meets every hard constraint",
    "fit.without_cp": "some layout with CP = 1 meets every hard constraint",
    "fit.without_recompute": "some layout without recomputation meets every hard constraint",
    "fit.min_tp": "the smallest TP of a layout that meets every hard constraint (0 if none)",
    "fit.min_pp": "the smallest PP of a layout that meets every hard constraint (0 if none)",
    "fit.min_cp": "the smallest CP of a layout that meets every hard constraint (0 if none)",
    "fit.min_zero": "the lowest ZeRO stage of a layout that meets every hard constraint (-1 if none)",
    "best.tokens_per_s": "tokens/s of the fastest layout that meets every hard constraint",
    "best.pp1.tokens_per_s": "tokens/s of the fastest such layout with PP = 1 (0 if none)",
    "best.cp1.tokens_per_s": "tokens/s of the fastest such layout with CP = 1 (0 if none)",
    "same.min_zero": "the lowest ZeRO stage at which this layout, otherwise unchanged, meets every hard constraint",
    "same.min_recompute": "the least recomputation with which this layout, otherwise unchanged, meets every hard constraint",
    "same.pp1_fits": ("a layout with PP = 1 and this layout's TP and CP, its EP inside the NVLink domain or no wider "
                      "than this layout's, meets every hard constraint"),
    "same.min_offload": ("the fewest offloaded layers with which this layout, otherwise unchanged but at any "
                         "micro-batch, meets every hard constraint"),
    "same.pp1_dp": "the data-parallel degree a layout with PP = 1 and this layout's TP and CP has (DP x PP)",
    "same.pp1_batch_divides": "the global batch is a multiple of same.pp1_dp (mbs x DP must divide it)",
    "memory.fits": "the estimated peak is at most the GPU's memory",
    "memory.used_pct": "the estimated peak as a share of the GPU's memory",
    "train.sequence_parallel": "the framework has sequence parallelism (kb/data/frameworks.yaml)",
    "train.mbs_given": "the job fixed the micro-batch",
    "train.recompute_given": "the job fixed the recomputation",
    "train.expert_parallel": "the framework can run expert parallelism for this model (kb/validity.py expert_parallel_runs)",
}
