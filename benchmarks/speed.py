"""Speed of the estimators. Run: python benchmarks/speed.py

Prints the time to score one layout (memory + step time) in-process, and cold commands
(new process, import to printed answer) against a bare `python -c pass` in the same run.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

from shardwise.kb.build import build_job
from shardwise.kb.memory import estimate_memory
from shardwise.kb.perf import step_time
from shardwise.kb.resolve import resolve_layout


def per_layout() -> None:
    job = build_job(model="llama-3-70b", gpus=64, gpu="h100-sxm", seq_len=8192, global_batch=128)
    lay, _ = resolve_layout(job, "tp=4,pp=8,vp=5,mbs=1,zero=1,recompute=selective")
    for name, fn in (("memory", estimate_memory), ("step time", step_time)):
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            fn(job, lay)
        print(f"{name:<10} {1e6 * (time.perf_counter() - t0) / n:8.1f} us per layout")


def cold(cmd: list[str], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    per_layout()
    bare = cold([sys.executable, "-c", "pass"])
    cmd = cold([sys.executable, "-m", "shardwise.cli.main", "memory", "--model", "llama-3-70b", "--gpus", "32",
                "--seq-len", "8192", "--layout", "tp=8,pp=4,mbs=1,recompute=selective"])
    print(f"cold `shardwise memory`: {1e3 * cmd:.0f} ms; bare python: {1e3 * bare:.0f} ms; ratio {cmd / bare:.1f}x")
    rec = cold([sys.executable, "-m", "shardwise.cli.main", "recommend", "--model", "llama-3-70b", "--gpus", "32",
                "--seq-len", "8192", "--mbs", "4"])
    print(f"cold `shardwise recommend`: {1e3 * rec:.0f} ms; ratio to bare python {rec / bare:.1f}x")


if __name__ == "__main__":
    main()
