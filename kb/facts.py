"""The fact base for one job and layout: what the estimators say, as one plain dict.

This is what the rule engine reads and what `--format json` prints (keys per DESIGN.md):
``layout.*``, ``memory.*`` and ``metrics.*``.
"""
from __future__ import annotations

from .job import Job
from .layout import Layout
from .memory import estimate_memory
from .params import active_params, total_params
from .perf import step_time


def job_summary(job: Job) -> dict:
    m, c, t = job.model, job.cluster, job.training
    return {
        "model": m.name, "params_b": round(total_params(m) / 1e9, 3),
        "active_params_b": round(active_params(m) / 1e9, 3),
        "shape_inferred": m.inferred,
        "gpu": c.gpu.name, "gpus": c.gpus, "gpus_per_node": c.gpus_per_node, "nodes": c.nodes,
        "intra_link": c.intra.name, "inter_link": c.inter.name,
        "seq_len": t.seq_len, "training": t.training, "precision": t.precision,
        "framework": t.framework, "attention": t.attention,
    }


def layout_dict(lay: Layout) -> dict:
    return {"tp": lay.tp, "pp": lay.pp, "vp": lay.vp, "dp": lay.dp, "cp": lay.cp, "ep": lay.ep, "etp": lay.etp,
            "zero_stage": lay.zero, "shard_group": lay.shard_group, "sp": lay.sp, "mbs": lay.mbs,
            "grad_accum": lay.grad_accum, "global_batch": lay.global_batch, "recompute": lay.recompute}


def evaluate(job: Job, lay: Layout) -> dict:
    mem = estimate_memory(job, lay)
    st = step_time(job, lay)
    return {"job": job_summary(job), "layout": layout_dict(lay), "memory": mem.as_dict(),
            "metrics": st.metrics(job)}
