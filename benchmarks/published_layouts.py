"""The headline against NVIDIA's hand-tuned published layouts.

For every NVIDIA-tuned published run (Megatron-Bridge / NeMo performance tables, DGX Cloud
benchmarks: benchmarks/calibration/published_runs.yaml) the decision runs on the same job --
model, GPU type and count, sequence length, global batch, precision -- with micro-batch and
recomputation free, as a user would ask, under the shipped playbook. Reported: how often the
headline's TP x PP x CP equals the published one, and how far the published layout's predicted
speed is from the headline's (the published layout scored by the same estimators, at its
published micro-batch and recomputation).

    python benchmarks/published_layouts.py [-v]
"""
from __future__ import annotations

import statistics
import sys
import time
from collections import Counter, defaultdict

from calibration import throughput_cases

TUNED = ("megatron_bridge_perf_summary", "dgxc_benchmarking", "nemo_perf_summary_24.07", "nemo_docs_pages_excerpt")


def decide_row(case) -> dict:
    from shardwise.decision.run import decide
    from shardwise.kb.job import Job
    from shardwise.kb.perf import step_time

    job, lay = case["job"], case["layout"]
    job = Job(job.model, job.cluster, job.training.model_copy(update={"global_batch": lay.global_batch, "mbs": None,
                                                                       "recompute": "auto"}))
    d = decide(job)
    published_tps = step_time(job, lay).tokens_per_s
    out = {"id": case["row"]["id"], "gpu": case["row"]["gpu_type"], "moe": job.model.is_moe,
           "published": lay.describe(), "pub_core": (lay.tp, lay.pp, lay.cp)}
    if d.layout is None:
        return dict(out, headline=None, equal=False, gap_pct=None, why=d.nothing_allowed)
    head_tps = float(d.table.tokens_per_s[d.index])
    return dict(out, headline=d.layout.describe(), core=(d.layout.tp, d.layout.pp, d.layout.cp),
                equal=(d.layout.tp, d.layout.pp, d.layout.cp) == (lay.tp, lay.pp, lay.cp),
                gap_pct=100 * (1 - published_tps / head_tps))


def main(verbose: bool) -> None:
    cases = [c for c in throughput_cases() if c["row"]["source_family"] in TUNED]
    t0 = time.perf_counter()
    rows = [decide_row(c) for c in cases]
    took = time.perf_counter() - t0
    groups = defaultdict(list)
    for r in rows:
        groups["moe" if r["moe"] else "dense"].append(r)
        groups["all"].append(r)
    print(f"{len(rows)} NVIDIA-tuned rows, decided in {took:.1f} s")
    print(f"{'group':6} {'rows':>5} {'TPxPPxCP equal':>15} {'published within 5%':>20} {'median gap':>11} {'no layout':>10}")
    for g in ("dense", "moe", "all"):
        rs = groups[g]
        if not rs:
            continue
        gaps = [r["gap_pct"] for r in rs if r["gap_pct"] is not None]
        eq = sum(r["equal"] for r in rs)
        near = sum(1 for x in gaps if x <= 5)
        print(f"{g:6} {len(rs):5} {eq:8} ({100 * eq / len(rs):3.0f}%) {near:12} ({100 * near / len(rs):3.0f}%) "
              f"{statistics.median(gaps) if gaps else float('nan'):10.1f}% {sum(r['headline'] is None for r in rs):10}")
    diffs = Counter()
    for r in groups["dense"]:
        if r["headline"] and not r["equal"]:
            (t1, p1, c1), (t2, p2, c2) = r["core"], r["pub_core"]
            diffs[f"tp {t1} vs {t2}" if t1 != t2 else f"pp {p1} vs {p2}" if p1 != p2 else f"cp {c1} vs {c2}"] += 1
    print("dense rows where the core differs, first difference (headline vs published):",
          ", ".join(f"{k}: {v}" for k, v in diffs.most_common(8)))
    if verbose:
        for r in sorted(rows, key=lambda r: (r["moe"], r["id"])):
            gap = f"{r['gap_pct']:6.1f}%" if r["gap_pct"] is not None else "     -"
            print(f"{r['id']:58} {'=' if r['equal'] else ' '} gap {gap}  published {r['published']}\n"
                  f"{'':58}           headline  {r['headline'] or r.get('why')}")


if __name__ == "__main__":
    main("-v" in sys.argv)
