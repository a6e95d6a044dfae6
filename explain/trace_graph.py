"""The decision trace as a Graphviz graph, read left to right: the deciding facts -> the rules
that fired -> the constraints and preferences they added -> the search -> one row per setting.
Broken preferences are red, the runner-up layout is marked beside the search.

Built from the decision's data (decision/result.as_dict); explain/render.py draws it.
"""
from __future__ import annotations

import textwrap

import graphviz

from shardwise.decision.text import faster, shown_settings

from shardwise.rules.loader import location

from .why import shown_value, unit

_COLOR = {"hard": "#d9d9d9", "honoured": "#c9ecc9", "broken": "#f6b7b0", "pin": "#cfe0f7", "info": "#fff2c2"}


def _short(text: str, n: int = 48) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _wrap(text: str, width: int = 30, lines: int | None = 3) -> str:
    """A label in short lines, so that the graph stays narrow enough to read at page width; past
    ``lines`` lines it is cut (None: never -- a rule's condition, which a PNG shows nowhere else)."""
    out = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    if lines is not None and len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][:width - 1] + "…"
    return "\n".join(out)


def trace_graph(result: dict, only: str | None = None) -> graphviz.Digraph:
    g = graphviz.Digraph("decision_trace", graph_attr={"rankdir": "LR", "fontname": "Helvetica", "nodesep": "0.18",
                                                       "ranksep": "0.5", "newrank": "true"},
                         node_attr={"fontname": "Helvetica", "fontsize": "12", "margin": "0.18,0.08"},
                         edge_attr={"color": "#888888", "arrowsize": "0.6"})
    settings = result["settings"]
    bears: dict = {}                          # rule id -> settings it bears on, with its status
    for s, info in settings.items():
        for r in info["reasons"]:
            bears.setdefault(r["rule"], []).append((s, r["status"]))
    shown = [t for t in result["trace"] if not only or any(s == only for s, _ in bears.get(t["rule"], []))]
    facts, rules, added = [], [], []
    for n, t in enumerate(shown):
        rid = f"r{n}"
        rules.append(rid)
        where = location(t["file"], t["line"])
        stratum = f"  (stratum {t['stratum']})" if t["stratum"] else ""
        # a rule file's own texts keep their backslashes: DOT would read '\l' in them as a line break
        g.node(rid, f"{t['rule']}\n{where.replace('shardwise:', '')}{stratum}", shape="box",
               style="rounded,filled", fillcolor="white", tooltip=graphviz.escape(_short(t["because"], 300)))
        for path, v in t["facts"].items():
            fid = "f_" + path.replace(".", "_")
            if fid not in facts:
                facts.append(fid)
                shown = ("true" if v else "false") if isinstance(v, bool) else shown_value(v)
                g.node(fid, f"{path}\n= {shown}{unit(path)}", shape="note", fontsize="11")
            g.edge(fid, rid)
        statuses = dict(bears.get(t["rule"], []))
        for k, a in enumerate(t["added"]):
            aid = f"a{n}_{k}"
            added.append(aid)
            status = ("broken" if "broken" in statuses.values() else "honoured") if a["kind"] in ("prefer", "avoid") \
                else "pin" if a["kind"] == "pin" else "hard" if a["kind"] in ("require", "forbid") else "info"
            label = (f"pin {a['setting']} = {a['value']}" if a["kind"] == "pin" else
                     graphviz.escape(_wrap(f"{a['kind']}: {a['text']}",
                                           lines=None if status in ("hard", "honoured", "broken") else 3))
                     + (f"\nworth {a['worth']:g}% — {status}" if "worth" in a else ""))
            g.node(aid, label, shape="box", style="filled", fillcolor=_COLOR[status], penwidth="2" if status == "broken" else "1")
            g.edge(rid, aid)
            if a["kind"] not in ("warn", "note", "disabled", "overridden"):
                g.edge(aid, "search")
    s = result["search"]
    g.node("search", f"search: {s['valid']:,} valid layouts\n{s['allowed']:,} meet every hard rule\n"
                     f"headline = argmax of\ntokens/s × (1 − worths broken)",
           shape="box3d", style="filled", fillcolor="#eef5ff")
    if s.get("best") and s["departures"]:
        g.node("runner_up", "fastest, not taken:\n" + _wrap(s["best"]["layout"], 34) + "\n"
                            f"{faster(s['departures'][0]['cost_pct'])}; breaks\n"
                            + "\n".join(f"{d['rule']} ({d['worth_pct']:g}%)" for d in s["departures"]),
               shape="box", style="dashed,filled", fillcolor="#fff7e6")
        g.edge("search", "runner_up", style="dashed", arrowhead="none")
    # the settings the answer's table shows (offloading only where it was an option)
    names = [x for x in shown_settings(settings) if not only or x == only]
    for x in names:
        v = settings[x]["value"]
        g.node(f"s_{x}", f"{x} = {('on' if v else 'off') if isinstance(v, bool) else v}", shape="box",
               style="filled,bold", fillcolor="#dbe9ff")
        g.edge("search", f"s_{x}")
    for col in (facts, rules, added, names and [f"s_{x}" for x in names]):
        if col:
            with g.subgraph() as c:
                c.attr(rank="same")
                for n in col:
                    c.node(n)
    return g
