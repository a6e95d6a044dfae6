"""The fact base for one job and layout: what the estimators say, as one plain dict.

This is what the rule engine reads and what `--format json` prints (keys per DESIGN.md):
``layout.*``, ``memory.*`` and ``metrics.*``.
"""
from __future__ import annotations

from .defaults import ADAPTERS
from .job import Job
from .layout import Layout
from .memory import estimate_memory
from .memory.logits import loss_chunks
from .memory.overheads import allocator
from .params import active_params, total_params
from .perf import step_time
from . import track_record


def job_summary(job: Job) -> dict:
    m, c, t = job.model, job.cluster, job.training
    return {
        "model": m.name, "params_b": round(total_params(m) / 1e9, 3),
        "active_params_b": round(active_params(m) / 1e9, 3),
        "shape_inferred": m.inferred,
        "gpu": c.gpu.name, "gpus": c.gpus, "gpus_per_node": c.gpus_per_node, "nodes": c.nodes,
        "intra_link": c.intra.name, "inter_link": c.inter.name,
        "seq_len": t.seq_len, "training": t.training, "precision": t.precision,
        "framework": t.framework, "attention": t.attention, "cuda_graphs": t.cuda_graphs,
        "zero_grad": t.zero_grad, "loss_chunks": loss_chunks(t), "optimizer": t.optimizer,
        "allocator": allocator(t),
        # an adapter job's LoRA settings (None for a job that trains every weight)
        "lora_rank": t.lora_rank if t.training in ADAPTERS else None,
        "lora_dropout": t.lora_dropout if t.training in ADAPTERS else None,
    }


def layout_dict(lay: Layout) -> dict:
    return {"tp": lay.tp, "pp": lay.pp, "vp": lay.vp, "dp": lay.dp, "cp": lay.cp, "ep": lay.ep, "etp": lay.etp,
            "zero_stage": lay.zero, "shard_group": lay.shard_group, "sp": lay.sp, "mbs": lay.mbs,
            "grad_accum": lay.grad_accum, "global_batch": lay.global_batch, "recompute": lay.recompute,
            "offload": lay.offload}


def evaluate(job: Job, lay: Layout, mem=None, st=None) -> dict:
    """One layout's job, settings, memory and metrics; ``mem`` and ``st`` where the caller has them."""
    mem = estimate_memory(job, lay) if mem is None else mem
    st = step_time(job, lay) if st is None else st
    return {"job": job_summary(job), "layout": layout_dict(lay),
            "memory": dict(mem.as_dict(), checked=track_record.memory_checked(job, mem)), "metrics": st.metrics(job)}


def _intra_kind(name: str) -> str:
    # one kind per fabric, whatever its generation (nvlink4, infinity-fabric-4): the kinds a rule may name
    for kind in ("pcie", "nvlink", "infinity-fabric"):
        if name.startswith(kind):
            return kind
    return name


def job_facts(job: Job, global_batch: int) -> dict:
    """model.*, cluster.*, train.*: the job facts every stratum reads (kb/fact_schema.JOB)."""
    from .frameworks import has_sequence_parallel
    from .validity import expert_parallel_runs
    m, c, t = job.model, job.cluster, job.training
    return {
        "model.name": m.name, "model.params_b": total_params(m) / 1e9, "model.active_params_b": active_params(m) / 1e9,
        "model.layers": m.layers, "model.hidden": m.hidden, "model.heads": m.heads, "model.kv_heads": m.kv_heads,
        "model.vocab": m.vocab, "model.is_moe": m.is_moe, "model.experts": m.experts, "model.inferred": m.inferred,
        "model.max_positions": m.max_positions,
        # the catalog name, not --gpu-memory's 'h100-sxm (64 GiB)': a policy on the GPU must
        # hold whatever memory the job gives (that is cluster.gpu_memory_gib)
        "cluster.gpu": track_record.catalog_gpu(c.gpu.name), "cluster.gpus": c.gpus, "cluster.gpus_per_node": c.gpus_per_node,
        "cluster.nodes": c.nodes, "cluster.nvlink_domain": c.domain_block, "cluster.gpu_memory_gib": c.gpu.memory_gib,
        "cluster.intra": c.intra.name, "cluster.intra_kind": _intra_kind(c.intra.name), "cluster.inter": c.inter.name,
        "cluster.inter_kind": c.inter.name.split("-")[0], "cluster.mxfp8": c.gpu.mxfp8,
        "cluster.speed_checked": bool(c.gpu.speed_checked_on),
        "cluster.host_memory_gib": c.gpu.host_memory_gib or 0.0,
        "cluster.custom_speed": c.gpu.custom_speed,
        "train.seq_len": t.seq_len, "train.global_batch": global_batch, "train.training": t.training,
        "train.precision": t.precision, "train.framework": t.framework, "train.attention": t.attention,
        "train.cuda_graphs": t.cuda_graphs, "train.optimizer": t.optimizer, "train.zero_grad": t.zero_grad,
        "train.allocator": allocator(t),
        "train.sequence_parallel": has_sequence_parallel(t.framework),
        "train.mbs_given": bool(t.mbs), "train.recompute_given": t.recompute != "auto",
        "train.expert_parallel": expert_parallel_runs(job),
    }


def layout_facts(lay: Layout) -> dict:
    """layout.*: one layout's settings as facts (kb/fact_schema.LAYOUT)."""
    return {"layout.tp": lay.tp, "layout.pp": lay.pp, "layout.vp": lay.vp, "layout.dp": lay.dp, "layout.cp": lay.cp,
            "layout.ep": lay.ep, "layout.zero": lay.zero, "layout.sp": lay.sp, "layout.mbs": lay.mbs,
            "layout.ga": lay.grad_accum, "layout.recompute": lay.recompute, "layout.global_batch": lay.global_batch,
            "layout.offload": lay.offload}


def memory_facts(mem) -> dict:
    """memory.*: the memory estimate of one layout as facts."""
    return {"memory.peak_gib": mem.peak_gib, "memory.capacity_gib": mem.capacity_gib,
            "memory.used_pct": 100 * mem.peak_gib / mem.capacity_gib,
            "memory.headroom_gib": mem.capacity_gib - mem.peak_gib, "memory.fits": bool(mem.fits),
            "memory.split_peak_pct": 100 * mem.split_peak_gib / mem.capacity_gib,
            "memory.largest_block_gib": mem.largest_block_gib, "memory.host_offload_gib": mem.host_offload_gib}


def estimate_facts(job: Job, mem, st) -> dict:
    """memory.*, metrics.*: the estimators' answer for one layout (kb/fact_schema.ESTIMATE)."""
    mt = st.metrics(job)
    return {
        **memory_facts(mem),
        "metrics.step_time_s": mt["step_time_s"], "metrics.tokens_per_s": mt["tokens_per_s"],
        "metrics.tokens_per_s_per_gpu": mt["tokens_per_s_per_gpu"], "metrics.mfu_pct": mt["mfu_pct"],
        "metrics.bubble_pct": mt["bubble_pct"], "metrics.comm_overhead_pct": mt["comm_overhead_pct"],
        "metrics.moe_host_pct": mt["moe_host_pct"],
    }
