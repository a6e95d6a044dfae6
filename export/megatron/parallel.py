"""The layout on Megatron-LM's command line (parallel_args): TP and SP, PP with a
--pipeline-model-parallel-layout where its own flags cannot build the estimate's split, VP,
CP, EP, the distributed optimizer or Megatron-FSDP for ZeRO, the batch sizes -- and the
precision and recomputation flags, which parallel_args writes too."""
from __future__ import annotations

import re

from shardwise.kb.frameworks import megatron_cp_a2a, megatron_ep_overlap_share, megatron_tp_overlap
from shardwise.kb.memory.states import megatron_grad_bytes
from shardwise.kb.stages import layers_on_stage, pipeline_slots

from ..target import Target, memory_as_run
from .cuda_graphs import graphed_moe


# --tp-comm-overlap is Transformer Engine's userbuffers, written for NVLink; ROCm's fork ported it
# only in 2026 (ROCm/TransformerEngine#367, merged March 2026: "HIP only supports P2P operations",
# the ring-exchange overlaps), so an AMD GPU's script says what the flag needs.
ROCM_TP_OVERLAP = ("--tp-comm-overlap on an AMD GPU needs a ROCm Transformer Engine with the userbuffers port "
                   "(ROCm/TransformerEngine#367, March 2026; P2P ring-exchange overlaps only): in an older ROCm "
                   "container drop the flag, and TP's all-gather / reduce-scatter then run unhidden, slower than "
                   "the estimate")


def _even(n: int, parts: int) -> list[int]:
    """n split into ``parts`` sizes that differ by at most one, the larger last: the interleaved
    warm-up runs a rank's early chunks most often (kb/layout.chunk_forwards_in_flight), so
    the extra layers there would hold more activations than the estimate's even spread."""
    base, extra = divmod(n, parts)
    return [base + (1 if j >= parts - extra else 0) for j in range(parts)]


def pipeline_layout(m, pp: int, vp: int) -> str | None:
    """The --pipeline-model-parallel-layout string for the split the estimate assumes
    (kb/stages.layers_on_stage per rank, spread as evenly as it goes over the rank's vp chunks),
    or None where Megatron's own flags build that split: an even split of L, or of L + 2 with
    the account-for flags, that vp divides.

    Megatron-Core refuses every other split with those flags (transformer_config.py: the layers
    per rank, first and last stage included, must divide by the virtual stages; arguments.py:
    --decoder-first-pipeline-num-layers puts all the extra layers on one stage). The layout
    string names each virtual stage's layers -- "E" embedding, "t" decoder layer, "L" loss,
    stages split by "|", virtual stage i = chunk x pp + rank
    (megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list) -- so any
    split is built as estimated. It replaces --num-virtual-stages-per-pipeline-rank, which
    arguments.py refuses beside it (the vp is the stage count / pp)."""
    if pp == 1:
        return None
    e, l = pipeline_slots(m, pp)
    slots = m.layers + e + l
    if slots % pp == 0 and slots // pp % vp == 0:
        return None
    chunks = {}
    for r in range(pp):
        n = sum(layers_on_stage(m, pp, r))
        head, tail = (e if r == 0 else 0), (l if r == pp - 1 else 0)
        sizes = _even(n + head + tail, vp)
        for j, size in enumerate(sizes):
            text = "t" * (size - (head if j == 0 else 0) - (tail if j == vp - 1 else 0))
            if r == 0 and j == 0:
                text = "E" + text
            if r == pp - 1 and j == vp - 1:
                text += "L"
            chunks[j * pp + r] = text
    stages = [chunks[i] for i in range(pp * vp)]
    return "|".join(re.sub(r"t{2,}", lambda g: f"t*{len(g.group())}", s) for s in stages)


def parallel_args(tg: Target) -> tuple[list, list[str]]:
    lay, m, t = tg.layout, tg.job.model, tg.job.training
    caveats = []
    a = ["--tensor-model-parallel-size", lay.tp]
    if lay.sp:
        a += ["--sequence-parallel"]
    if megatron_tp_overlap(lay, tg.job.cluster):
        a += ["--tp-comm-overlap"]           # the estimate's `tp` overlap (kb/frameworks.py)
    a += ["--pipeline-model-parallel-size", lay.pp]
    custom = pipeline_layout(m, lay.pp, lay.vp)
    if custom:
        a += ["--pipeline-model-parallel-layout", custom]
    elif pipeline_slots(m, lay.pp) == (1, 1):
        # the split the estimate assumes (kb/stages.pipeline_slots): L + 2 over the stages
        a += ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
    if lay.vp > 1 and not custom:
        a += ["--num-virtual-stages-per-pipeline-rank", lay.vp]
    a += ["--context-parallel-size", lay.cp]
    if lay.cp > 1 and megatron_cp_a2a(m, t.seq_len):
        # TE's ring (the default p2p) refuses a masking window and sinks; the step times a2a
        a += ["--cp-comm-type", "a2a"]
    a += ["--expert-model-parallel-size", lay.ep]
    if megatron_ep_overlap_share(lay) > 0:
        a += ["--overlap-moe-expert-parallel-comm"]  # the estimate's `ep` overlap (kb/frameworks.py)
    if lay.etp != 1 or (m.is_moe and lay.tp > 1):
        a += ["--expert-tensor-parallel-size", lay.etp]
    if lay.zero == 1:
        a += ["--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"]
        if lay.shard:
            a += ["--num-distributed-optimizer-instances", lay.dp * lay.cp // lay.shard]
    elif lay.zero >= 2:
        a += ["--use-megatron-fsdp", "--data-parallel-sharding-strategy",
              "optim_grads" if lay.zero == 2 else "optim_grads_params", "--ckpt-format", "fsdp_dtensor"]
        if lay.shard:
            caveats.append(f"HSDP shard group {lay.shard}: Megatron-FSDP shards over all DP ranks here")
    a += ["--micro-batch-size", lay.mbs, "--global-batch-size", tg.global_batch]
    if t.precision == "pure-bf16":
        # the run the launch holds is Megatron's bf16 recipe (fp32 masters and states), not the one
        # sized (a pure-bf16 job is another framework's: kb/build.py refuses it under megatron)
        caveats.append("pure-bf16 (no fp32 master weights): Megatron keeps fp32 main params with --bf16 "
                       f"({memory_as_run(tg, precision='bf16', framework='megatron')})")
    a += ["--bf16"]
    if megatron_grad_bytes(t) == 2:
        # the gradient buffer the estimate sized (kb/data/frameworks.yaml grad_buffer_bytes, as
        # NVIDIA's recipes set it); plain --bf16 would keep it, and reduce it, in fp32
        a += ["--grad-reduce-in-bf16"]
    if t.precision == "fp8" and graphed_moe(tg):
        # MXFP8, the only recipe the fused grouped MLP of a captured MoE layer runs (cuda_graph_args),
        # as Megatron-Bridge's bf16_with_mxfp8_mixed: E4M3, FP8 primary weights gathered through the
        # gradient buffer (its 1 + 1 bytes of row- and column-wise data, plus a scale per 32, are
        # the 2 bytes kb/memory/states.py counts)
        a += ["--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"]
        if lay.zero >= 1:
            a += ["--fp8-param-gather"] + (["--reuse-grad-buf-for-mxfp8-param-ag"] if lay.zero == 1 else [])
    elif t.precision == "fp8":
        # per-tensor current scaling ("FP8-CS", as NVIDIA's published Megatron-Bridge runs): delayed
        # scaling cannot recompute norms or the experts' activation, which per-module recompute
        # does (TransformerConfig: "Delayed scaling does not support moe_act and layernorm recompute")
        a += ["--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"]
        if lay.zero >= 1:
            # FP8 primary weights, no bf16 weight + FP8 cache (kb/memory/states.py recipe); needs
            # the distributed optimizer or Megatron-FSDP, so ZeRO-0 is estimated with the cache
            a += ["--fp8-param-gather"]
    if lay.recompute == "selective":
        a += ["--recompute-granularity", "selective"]
    elif lay.recompute == "full":
        a += ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", 1]
    elif lay.recompute == "modules":
        from .. import recompute_modules
        a += ["--recompute-granularity", "selective", "--recompute-modules", *recompute_modules(m)]
    if lay.offload:
        # activation offloading to host memory (kb/perf/offload.py): the first N layers' saved
        # tensors; a positive count turns cpu_offloading on (megatron/training/arguments.py
        # validate_args: "if args.cpu_offloading_num_layers > 0: args.cpu_offloading = True")
        a += ["--cpu-offloading-num-layers", lay.offload]
        if tg.job.training.cuda_graphs == "full-iteration":
            # a graph replays its copies to the addresses it captured: Transformer Engine's docs
            # (cpu_offloading.rst, CPU Offloading and CUDA Graphs) need retain_pinned_cpu_buffers
            # before PyTorch 2.11 (pytorch#167507); Megatron passes it to get_cpu_offload_context
            # (transformer_block.py), and reusing the buffers costs no more host memory
            a += ["--cpu-offloading-retain-pinned-cpu-buffers"]
    return a, caveats


def needs_lines(tg: Target) -> list[str]:
    """What the flags parallel_args writes need installed, as comment lines of the script: the
    run can be launched as written, so these are not caveats (which say what Megatron cannot
    express). FP8 with the norms and the experts' activation recomputed: TransformerConfig
    refuses it below Transformer Engine 2.6 (transformer_config.py __post_init__: "moe_act and
    layernorm recompute for fp8 needs transformer-engine>=2.6.0dev0"); --tp-comm-overlap on ROCm
    (ROCM_TP_OVERLAP)."""
    lay, t = tg.layout, tg.job.training
    needs = []
    if megatron_tp_overlap(lay, tg.job.cluster) and tg.job.cluster.gpu.rocm:
        needs.append(ROCM_TP_OVERLAP)
    if lay.recompute == "modules" and t.precision == "fp8":
        needs.append("Transformer Engine >= 2.6, for FP8 with the norms (and the experts' activation) recomputed "
                     "(TransformerConfig checks it)")
    return [f"# needs: {n}" for n in needs]
