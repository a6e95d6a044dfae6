"""Cluster sizing: for a job that fits nowhere, the smallest GPU count, and the GPUs, that would.

The count is searched over whole nodes (powers of two below one node): doubling until some
layout fits within the memory margin and the policies, then bisecting between the last count
that failed and the first that fitted. With a global batch the user fixed, divisibility can
make fitting non-monotone in the count, so the answer is the smallest count this walk found.
"""
from __future__ import annotations

from shardwise.kb import catalog
from shardwise.kb.facts import job_facts
from shardwise.kb.job import Job
from shardwise.kb.resolve import global_batch

from .table import apply_constraints, scored_table

MAX_GPUS = 16384          # the largest --gpus kb/build.py accepts


def node_size(c) -> int:
    """GPUs per node: the cluster's own when it spans nodes; the GPU's usual server when the job
    is smaller than one node (kb/build.py caps gpus_per_node at the GPU count)."""
    return c.gpus_per_node if c.gpus > c.gpus_per_node else c.gpu.gpus_per_node


def with_cluster(job: Job, gpus: int, gpu=None) -> Job:
    c = job.cluster
    g = gpu or c.gpu
    node = node_size(c) if gpu is None else g.gpus_per_node
    update = {"gpus": gpus, "gpus_per_node": min(node, gpus)}
    if gpu is not None:
        update.update(gpu=g, intra=catalog.link(g.intra_link))
    return Job(job.model, c.model_copy(update=update), job.training)


def _fits(job: Job, constraints, pins=None) -> bool:
    """Whether some layout of micro-batch 1 meets every hard constraint on this cluster, and
    fits in the GPU's memory whatever the rules say (decision/run.py)."""
    gb, _ = global_batch(job)
    t = scored_table(job, gb, pins, fit_only=True)
    t.facts = job_facts(job, gb).__getitem__
    return bool(len(t)) and bool((apply_constraints(t, constraints)[0] & (t.peak_gib <= t.capacity)).any())


def smallest_count(job: Job, constraints=(), pins=None) -> int | None:
    c = job.cluster
    node = node_size(c)
    counts = [n for n in (1, 2, 4, 8, 16, 32, 64) if n < node] + [node * k for k in range(1, MAX_GPUS // node + 1)]
    counts = [n for n in counts if n > c.gpus]
    if not counts:
        return None
    lo, hi, i = -1, None, 0
    while i < len(counts):                      # doubling
        if _fits(with_cluster(job, counts[i]), constraints, pins):
            hi = i
            break
        lo = i
        i = 2 * i + 1
    if hi is None:
        if lo != len(counts) - 1 and _fits(with_cluster(job, counts[-1]), constraints, pins):
            hi = len(counts) - 1
        else:
            return None
    while hi - lo > 1:                          # bisection between a failing and a fitting count
        mid = (lo + hi) // 2
        if _fits(with_cluster(job, counts[mid]), constraints, pins):
            hi = mid
        else:
            lo = mid
    return counts[hi]


def gpus_that_fit(job: Job, constraints=(), pins=None) -> list[str]:
    """Catalog GPUs on which the job fits at its own GPU count."""
    out = []
    for name in catalog.gpu_names():
        g = catalog.gpu(name)
        if name == job.cluster.gpu.name or (job.training.precision == "fp8" and not g.tflops_fp8):
            continue
        if job.cluster.gpus > g.gpus_per_node and job.cluster.gpus % g.gpus_per_node:
            continue
        if _fits(with_cluster(job, job.cluster.gpus, g), constraints, pins):
            out.append(name)
    return out


def sizing(job: Job, constraints=(), pins=None, policies: bool = False) -> dict:
    """``constraints`` include the memory margin; ``policies``: whether house policies are among them."""
    n = smallest_count(job, constraints, pins)
    others = gpus_that_fit(job, constraints, pins)
    parts = []
    if n:
        parts.append(f"it would fit on {n} x {job.cluster.gpu.name}")
    else:
        parts.append(f"no count of {job.cluster.gpu.name} up to {MAX_GPUS} fits it"
                     + (" within the house policies" if policies else ""))
    if others:
        g = job.cluster.gpus
        parts.append(f"on {g} GPU{'s' if g > 1 else ''} of type {', '.join(others)}")
    return {"smallest_gpus": n, "gpus_that_fit": others, "summary": "; or ".join(parts)}
