"""Speed of the estimators and of the command itself. Run: python benchmarks/speed.py [ROUNDS]

Prints the time to score one layout (memory + step time) in-process, then cold commands (a
new process, import to printed answer) as ratios to a bare `python -c pass` measured in the
same run. Each round runs every command once, in turn, so that a busy machine slows them all
alike; the figure is the median over the rounds. Goals (issue 16): `--help` <= 5x, the
README's quick-start `recommend` <= 15x.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from shardwise.kb.build import build_job
from shardwise.kb.memory import estimate_memory
from shardwise.kb.perf import step_time
from shardwise.kb.resolve import resolve_layout

# the console script a user runs (pip puts it beside this python); `python -m
# shardwise.cli.main` measured some 40 ms slower for recommend, for reasons not found
_SCRIPT = Path(sys.executable).with_name("shardwise")
SHARDWISE = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "shardwise.cli.main"]
QUICK_START = ["recommend", "--model", "llama-3-70b", "--gpus", "32", "--gpu", "h100-sxm", "--interconnect",
               "infiniband", "--seq-len", "8192", "--mbs", "4", "--token-budget", "100B", "--price-per-gpu-hour", "2.5"]
COLD = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import shardwise.cli.main": [sys.executable, "-c", "import shardwise.cli.main"],
    "shardwise --help": SHARDWISE + ["--help"],
    "shardwise kb gpus": SHARDWISE + ["kb", "gpus"],
    "shardwise memory": SHARDWISE + ["memory", "--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192",
                                     "--layout", "tp=8,pp=4,mbs=1,recompute=selective"],
    "quick-start recommend": SHARDWISE + QUICK_START,
}
GOALS = {"shardwise --help": 5, "quick-start recommend": 15}
# what a cold `recommend` cannot avoid importing today, each alone in a new process (the
# figure is the time over a bare python), and two it no longer loads
IMPORTS = ["numpy", "pydantic", "shardwise.kb.schema", "yaml", "click", "durable.engine", "networkx", "graphviz"]


def per_layout() -> None:
    job = build_job(model="llama-3-70b", gpus=64, gpu="h100-sxm", seq_len=8192, global_batch=128)
    lay, _ = resolve_layout(job, "tp=4,pp=8,vp=5,mbs=1,zero=1,recompute=selective")
    for name, fn in (("memory", estimate_memory), ("step time", step_time)):
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            fn(job, lay)
        print(f"{name:<10} {1e6 * (time.perf_counter() - t0) / n:8.1f} us per layout")


def cold(rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in COLD}
    for _ in range(rounds):
        for name, cmd in COLD.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    per_layout()
    med = cold(rounds)
    bare = med["python -c pass"]
    print(f"cold commands ({' '.join(SHARDWISE)}), median of {rounds} rounds, as a multiple of a bare "
          f"`python -c pass` ({1e3 * bare:.0f} ms):")
    for name, t in med.items():
        goal = f"   (goal <= {GOALS[name]}x)" if name in GOALS else ""
        print(f"  {name:<26} {1e3 * t:7.0f} ms  {t / bare:5.1f}x{goal}")
    COLD.clear()
    COLD["python -c pass"] = [sys.executable, "-c", "pass"]
    COLD.update({m: [sys.executable, "-c", f"import {m}"] for m in IMPORTS})
    med = cold(rounds)
    bare = med.pop("python -c pass")
    print("importing one package alone, time over a bare python (shardwise.kb.schema's includes pydantic):")
    for name, t in med.items():
        print(f"  {name:<26} {1e3 * (t - bare):7.0f} ms  {(t - bare) / bare:5.1f}x")


if __name__ == "__main__":
    main()
