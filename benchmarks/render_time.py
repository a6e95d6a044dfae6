"""What drawing a trace graph costs. Run: python benchmarks/render_time.py [repeats]

Each figure is the median over fresh Python processes (a user's command is one cold process):
- importing wasmtime (wall time, and the cumulative figure from `python -X importtime`);
- the WebAssembly path on the decision trace of the README's 70B job: the first render in a
  process (wasmtime compiles graphviz.wasm then) and a second render in the same process;
- the system `dot` on the same graph, where it is on PATH;
- the whole `shardwise explain --graph` command writing .svg against writing .dot (the
  difference is what drawing adds to a user's command).
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOB = ["--model", "llama-3-70b", "--gpus", "32", "--why", "tp"]
TRACE = ("from shardwise.explain.trace_graph import trace_graph; from shardwise.kb.build import build_job; "
         "from shardwise.decision.run import decide; from shardwise.decision.result import as_dict; "
         "src = trace_graph(as_dict(decide(build_job(model='llama-3-70b', gpus=32)))).source; ")
WASM = TRACE + ("import time; from shardwise.explain import render; t0 = time.perf_counter(); render._with_wasm(src, 'x'); "
                "t1 = time.perf_counter(); render._with_wasm(src, 'x'); t2 = time.perf_counter(); "
                "print(t1 - t0, t2 - t1, len(src.splitlines()))")
DOT = TRACE + ("import time, shutil; from shardwise.explain import render; t0 = time.perf_counter(); "
               "render._with_dot(shutil.which('dot'), src, 'svg', 'x'); print(time.perf_counter() - t0)")


def python(code: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True)


def median_of(repeats: int, run) -> list[float]:
    rows = [run() for _ in range(repeats)]
    return [statistics.median(col) for col in zip(*rows)]


def import_wasmtime() -> list[float]:
    t0 = time.perf_counter()
    done = python("import wasmtime", "-X", "importtime")
    wall = time.perf_counter() - t0
    base0 = time.perf_counter()
    python("pass")
    bare = time.perf_counter() - base0
    cumulative_us = max(int(m) for m in re.findall(r"\|\s*(\d+)\s*\|\s*wasmtime$", done.stderr, re.M))
    return [wall - bare, cumulative_us / 1e6]


def cli(path: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([shutil.which("shardwise") or "shardwise", "explain", *JOB, "--graph", path],
                   capture_output=True, check=True, env={**os.environ, "PATH": str(Path(sys.executable).parent)})
    return time.perf_counter() - t0


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    wall, cumulative = median_of(repeats, import_wasmtime)
    print(f"import wasmtime: {wall * 1e3:.0f} ms wall over a bare interpreter, "
          f"{cumulative * 1e3:.0f} ms cumulative (-X importtime); median of {repeats}")
    first, second, lines = median_of(repeats, lambda: [float(x) for x in python(WASM).stdout.split()])
    print(f"WebAssembly, trace graph of {' '.join(JOB)} ({lines:.0f} DOT lines): first render in a process "
          f"{first * 1e3:.0f} ms (includes compiling graphviz.wasm), second {second * 1e3:.0f} ms")
    if shutil.which("dot"):
        (by_dot,) = median_of(repeats, lambda: [float(python(DOT).stdout)])
        print(f"system dot ({shutil.which('dot')}), same graph: {by_dot * 1e3:.0f} ms")
    else:
        print("system dot: not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        svg, dot = median_of(repeats, lambda: [cli(f"{tmp}/t.svg"), cli(f"{tmp}/t.dot")])
    print(f"shardwise explain {' '.join(JOB)} --graph t.svg (no dot on PATH): {svg:.2f} s; "
          f"--graph t.dot: {dot:.2f} s; drawing adds {svg - dot:.2f} s")


if __name__ == "__main__":
    main()
