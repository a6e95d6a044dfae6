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

from .why import shown_value, unit


def trace_graph(trace: list, only: str | None = None) -> graphviz.Digraph:
    g = graphviz.Digraph("decision_trace", graph_attr={"rankdir": "LR", "fontname": "Helvetica"},
                         node_attr={"fontname": "Helvetica", "fontsize": "10"},
                         edge_attr={"fontname": "Helvetica", "fontsize": "10"})
    shown = [t for t in trace if not only or only in t["set"]]
    # Rules on one rank, chained by invisible edges: Graphviz then stacks them in firing order.
    with g.subgraph(name="firing_order") as order:
        order.attr(rank="same")
        for a, b in zip(shown, shown[1:]):
            order.edge(f"r{a['seq']}", f"r{b['seq']}", style="invis")
    for t in shown:
        rid = f"r{t['seq']}"
        color = "palegreen" if t["outcome"] == "applied" else ("lightgrey" if t["outcome"] == "no change" else "khaki")
        g.node(rid, f"#{t['seq']} {t['rule']}\n{t['file']}:{t['line'] or ''}\n{t['outcome'][:40]}",
               shape="box", style="filled,rounded", fillcolor=color)
        for path, v in t["read"].items():
            fid = f"f{t['seq']}_{path}"
            g.node(fid, f"{path}\n= {shown_value(v)}{unit(path)}", shape="ellipse", fontsize="9")
            g.edge(fid, rid)
        for k, v in t["set"].items():
            sid = f"s{t['seq']}_{k}"
            g.node(sid, f"{k} = {v}", shape="diamond", style="filled", fillcolor="lightblue")
            g.edge(rid, sid, label=str(v))
    return g


def graph_format(path: str) -> str:
    """The format a --graph path asks for, from its ending; refused unless dot, svg or png."""
    fmt = Path(path).suffix.lstrip(".").lower()
    if fmt not in ("dot", "svg", "png"):
        raise InputError(f"--graph {path}: allowed endings .dot, .svg, .png")
    return fmt


def checked_graph_path(ctx, param, path):
    """click callback: refuse a --graph path before any work is done (and anything printed)."""
    if path is not None:
        graph_format(path)
    return path


def write_graph(g: graphviz.Digraph, path: str) -> list[str]:
    """Write DOT (always) and render SVG/PNG where `dot` exists; returns what was written and
    one line for what could not be."""
    p = Path(path)
    fmt = graph_format(path)
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


def inline_svg(g: graphviz.Digraph) -> str | None:
    """The graph as an <svg> element to embed in HTML, or None where `dot` is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    done = subprocess.run([exe, "-Tsvg"], input=g.source, capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise InputError(f"Graphviz `dot` failed: {(done.stderr.strip().splitlines() or ['no message'])[-1]}")
    svg = done.stdout
    return svg[svg.index("<svg"):]     # drop the XML prolog and DOCTYPE, invalid inside HTML
