"""The decision trace as a Graphviz graph: facts -> rules that fired -> settings, in firing order.

DOT is always produced (the graphviz package writes text); SVG/PNG need the `dot` program
(Debian's graphviz package). Nothing is fetched and no browser is involved.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import graphviz

from shardwise.kb.errors import InputError

from .why import unit


def trace_graph(trace: list, only: str | None = None) -> graphviz.Digraph:
    g = graphviz.Digraph("decision_trace", graph_attr={"rankdir": "LR", "fontname": "Helvetica"},
                         node_attr={"fontname": "Helvetica", "fontsize": "10"})
    for t in trace:
        if only and only not in t["set"]:
            continue
        rid = f"r{t['seq']}"
        color = "palegreen" if t["outcome"] == "applied" else ("lightgrey" if t["outcome"] == "no change" else "khaki")
        g.node(rid, f"#{t['seq']} {t['rule']}\n{t['file']}:{t['line'] or ''}\n{t['outcome'][:40]}",
               shape="box", style="filled,rounded", fillcolor=color)
        for path, v in t["read"].items():
            fid = f"f{t['seq']}_{path}"
            g.node(fid, f"{path}\n= {v}{unit(path)}", shape="ellipse", fontsize="9")
            g.edge(fid, rid)
        for k, v in t["set"].items():
            sid = f"s{t['seq']}_{k}"
            g.node(sid, f"{k} = {v}", shape="diamond", style="filled", fillcolor="lightblue")
            g.edge(rid, sid, label=str(v))
    return g


def write_graph(g: graphviz.Digraph, path: str) -> list[str]:
    """Write DOT (always) and render SVG/PNG where `dot` exists; returns what was written and
    one line for what could not be."""
    p = Path(path)
    fmt = p.suffix.lstrip(".").lower()
    if fmt not in ("dot", "svg", "png"):
        raise InputError(f"--graph {path}: allowed endings .dot, .svg, .png")
    dot_path = p if fmt == "dot" else p.with_suffix(".dot")
    try:
        dot_path.write_text(g.source)
    except OSError as e:
        raise InputError(f"--graph {path}: cannot write ({e.strerror or e})")
    lines = [f"wrote {dot_path}"]
    if fmt != "dot":
        exe = shutil.which("dot")
        if exe is None:
            lines.append(f"cannot draw {p.name}: the Graphviz `dot` program is not installed (Debian: apt-get install "
                         f"graphviz); the DOT file {dot_path} was written")
        else:
            done = subprocess.run([exe, f"-T{fmt}", str(dot_path), "-o", str(p)], capture_output=True, text=True,
                                  timeout=120)
            if done.returncode:
                raise InputError(f"--graph {path}: Graphviz `dot` failed: "
                                 f"{(done.stderr.strip().splitlines() or ['no message'])[-1]}")
            lines.append(f"wrote {p}")
    return lines
