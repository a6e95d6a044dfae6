"""Where NVIDIA's tuned layouts rank in our search, and the predicted gap to our best.

For every NVIDIA-tuned published run (Megatron-Bridge / NeMo performance tables, DGX Cloud
benchmarks: benchmarks/calibration/published_runs.yaml) the search runs on the same job --
model, GPU type and count, sequence length, global batch, precision -- with micro-batch and
recomputation free, as a user would ask. The published layout's rank is that of the best
variant with its TP, PP, VP, CP, EP, DP and micro-batch (ZeRO stage, SP and recomputation are
not always published). The gap is how much faster our best is predicted to be than the
published layout as published.

    python benchmarks/published_layouts.py [-v]
"""
from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict

import numpy as np

from calibration import throughput_cases

TUNED = ("megatron_bridge_perf_summary", "dgxc_benchmarking", "nemo_perf_summary_24.07", "nemo_docs_pages_excerpt")
CORE = ("tp", "pp", "vp", "cp", "ep", "dp", "mbs")


def rank_row(case) -> dict:
    from shardwise.kb.job import Job
    from shardwise.kb.perf import step_time
    from shardwise.search.rank import search

    job, lay = case["job"], case["layout"]
    job = Job(job.model, job.cluster, job.training.model_copy(update={"global_batch": lay.global_batch}))
    res = search(job, lay.global_batch)
    a = res.space.arrays
    match = np.ones(len(res.space), dtype=bool)
    for k in CORE:
        match &= a[k] == getattr(lay, k)
    in_space = bool(match.any())
    fitting = match[res.order]
    rank = int(np.argmax(fitting)) + 1 if fitting.any() else None
    published_tps = step_time(job, lay).tokens_per_s
    best_tps = float(res.scores["tokens_per_s"][res.order[0]]) if len(res.order) else None
    return {"id": case["row"]["id"], "gpu": case["row"]["gpu_type"], "moe": job.model.is_moe, "rank": rank,
            "in_space": in_space, "fit": len(res.order), "valid": len(res.space),
            "gap_pct": 100 * (best_tps / published_tps - 1) if best_tps else None,
            "best": res.space.layout(int(res.order[0])).describe() if len(res.order) else None,
            "published": lay.describe()}


def main(verbose: bool) -> None:
    cases = [c for c in throughput_cases() if c["row"]["source_family"] in TUNED]
    rows, t0 = [], time.perf_counter()
    for c in cases:
        rows.append(rank_row(c))
    took = time.perf_counter() - t0
    groups = defaultdict(list)
    for r in rows:
        groups["dense" if not r["moe"] else "moe"].append(r)
        groups["all"].append(r)
    print(f"{len(rows)} NVIDIA-tuned rows, searched in {took:.1f} s")
    print(f"{'group':8} {'rows':>5} {'top1':>5} {'top5':>5} {'top20':>6} {'gap<=5%':>8} {'not fit':>8} {'not in space':>12} "
          f"{'median gap':>11}")
    for g in ("dense", "moe", "all"):
        rs = groups[g]
        if not rs:
            continue
        top = lambda n: sum(1 for r in rs if r["rank"] and r["rank"] <= n)
        gaps = [r["gap_pct"] for r in rs if r["gap_pct"] is not None]
        print(f"{g:8} {len(rs):5} {top(1):5} {top(5):5} {top(20):6} {sum(1 for x in gaps if x <= 5):8} "
              f"{sum(1 for r in rs if r['in_space'] and r['rank'] is None):8} "
              f"{sum(1 for r in rs if not r['in_space']):12} {statistics.median(gaps):10.1f}%")
    if verbose:
        for r in sorted(rows, key=lambda r: (r["moe"], r["id"])):
            print(f"{r['id']:58} rank {str(r['rank']):>6} of {r['fit']:6}  gap {r['gap_pct']:6.1f}%  "
                  f"published {r['published']}  best {r['best']}")


if __name__ == "__main__":
    main("-v" in sys.argv)
