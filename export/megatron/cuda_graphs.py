"""Full-iteration CUDA graphs in Megatron-LM: the flags that capture the whole step and, for
MoE, make the layer's shapes fixed (HybridEP capacity, fused grouped MLP, paged stash), and
the environment the launch sets for them."""
from __future__ import annotations

from shardwise.kb.frameworks import RANK_CAPACITY_FACTOR
from shardwise.kb.memory.activations import PAGED_STASH_FACTOR
from shardwise.kb.validity import graphed_moe as validity_graphed_moe

from ..target import Target, allocator_environment, allocator_option


def graphed_moe(tg: Target) -> bool:
    """A MoE job on full-iteration CUDA graphs (kb/build.py admits it with MXFP8 on Blackwell only;
    kb/validity.graphed_moe, which refuses offloading beside its paged stash)."""
    return validity_graphed_moe(tg.job)


def cuda_graph_args(tg: Target) -> list:
    """--cuda-graphs full-iteration: the whole step captured in one graph (--cuda-graph-impl
    full_iteration, which validate_args requires to run without the NaN check), and for MoE what
    makes the layer's shapes fixed, as Megatron-Bridge v0.5.0's full-iteration recipes set it
    (set_full_iter_cg_configs; utils/overrides.py cutedsl_fused_grouped_mlp): HybridEP's per-rank
    capacity (kb/frameworks.RANK_CAPACITY_FACTOR), which TransformerConfig accepts only with the
    Transformer Engine op fuser, whose fused grouped MLP reads GLU weights interleaved in blocks
    of 32 (--moe-mlp-glu-interleave-size; graph_environment turns the fused kernel on), and the
    paged stash for the routed activations (kb/memory/activations.PAGED_STASH_FACTOR) with a
    host buffer it spills to rather than rerun the step."""
    if tg.job.training.cuda_graphs != "full-iteration":
        return []
    a = ["--cuda-graph-impl", "full_iteration", "--no-check-for-nan-in-loss-and-grad"]
    if graphed_moe(tg):
        a += ["--use-transformer-engine-op-fuser", "--moe-mlp-glu-interleave-size", 32,
              "--moe-expert-rank-capacity-factor", RANK_CAPACITY_FACTOR, "--moe-paged-stash",
              "--moe-paged-stash-buffer-size-factor-cuda", PAGED_STASH_FACTOR,
              "--moe-paged-stash-buffer-size-factor-cpu", 1.0]
    return a


def graph_environment(tg: Target) -> list[str]:
    """The environment Megatron-Bridge's launcher sets for a full-iteration graph
    (perf_plugins.py v0.5.0: the allocator may reuse stream-recorded blocks during capture, and
    NCCL must record its streams) and, for MoE, for the fused grouped MLP
    (NVTE_CUTEDSL_FUSED_GROUPED_MLP, without which Megatron-Core's experts refuse the op fuser:
    moe/experts.py _is_fused_impl_supported) -- with what the run needs installed."""
    if tg.job.training.cuda_graphs != "full-iteration":
        return []
    lines = allocator_option("graph_capture_record_stream_reuse:True") + ["export TORCH_NCCL_AVOID_RECORD_STREAMS=0"]
    if allocator_environment(tg.job):
        # Megatron-Bridge's CUDA-graph guide: expandable segments "requires NCCL_GRAPH_REGISTER=0"
        # (docs/training/cuda-graphs.mdx; its DeepSeek-V3 perf recipes set both)
        lines.append("export NCCL_GRAPH_REGISTER=0")
    if graphed_moe(tg):
        lines = [f"# full-iteration CUDA graphs with MoE need HybridEP (DeepEP's hybrid-ep kernels) and Transformer "
                 f"Engine's CuTe DSL fused grouped MLP (TE >= 2.14), with MXFP8 on Blackwell, as NVIDIA runs them "
                 f"(NeMo 26.06 container); a step whose routing overflows a rank's {RANK_CAPACITY_FACTOR}x "
                 f"capacity or the stash is run again without the graph (and the next steps until it is captured "
                 f"again)",
                 "# --moe-mlp-glu-interleave-size 32 keeps the experts' gate and up weights interleaved in blocks of "
                 "32: a checkpoint converted from Hugging Face, or one read by a run without it, needs that layout "
                 "converted (Megatron-Bridge's checkpointing does it; Megatron-LM's own training script does not)"] \
            + lines + ["export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1"]
    return lines
