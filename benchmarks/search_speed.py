"""How fast the search scores layouts, and how long the whole decision takes.

    python benchmarks/search_speed.py

Scoring runs the single-layout estimators over NumPy arrays (search/score.py), one call per
(pipeline degree, recomputation) group, so the rate grows with the layouts per group. "decide s"
is the whole decision (decision/run.py: rules, the table, feasibility, preferences, the choice)
on a warm process: what `recommend` adds to its start-up.
"""
from __future__ import annotations

import time

from shardwise.kb.build import build_job
from shardwise.kb.resolve import global_batch
from shardwise.decision.run import decide
from shardwise.search.score import score
from shardwise.search.space import build_space

JOBS = [
    dict(model="llama-3-8b", gpus=8),
    dict(model="llama-3-70b", gpus=64, seq_len=8192),
    dict(model="mixtral-8x22b", gpus=256),
    dict(model="deepseek-v3", gpus=1024),
    dict(model="llama-3.1-405b", gpus=16384, seq_len=8192),
]


def best_of(fn, n=3):
    t = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def main() -> None:
    print(f"{'job':28} {'valid':>8} {'space s':>8} {'score s':>8} {'scored/s':>10} {'decide s':>9}")
    for kw in JOBS:
        job = build_job(**kw)
        gb, _ = global_batch(job)
        t_space, space = best_of(lambda: build_space(job, gb))
        t_score, _ = best_of(lambda: score(job, space))
        t_all, _ = best_of(lambda: decide(job))
        print(f"{kw['model'] + ' / ' + str(kw['gpus']):28} {len(space):8,} {t_space:8.3f} {t_score:8.3f} "
              f"{len(space) / t_score:10,.0f} {t_all:9.3f}")


if __name__ == "__main__":
    main()
