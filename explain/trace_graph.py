"""The decision trace as a Graphviz graph: facts -> rules that fired -> settings, in firing order.

This builds the DOT text only (the graphviz package writes text); explain/render.py draws it.
"""
from __future__ import annotations

import graphviz

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

