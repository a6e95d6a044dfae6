"""The rule graph: which facts each rule reads, and which settings it bears on.

Facts never change during a run and no rule moves a setting (rules/engine.py), so the graph
has no cycles to find: it reads left to right, fact groups -> facts -> rules (by stratum) ->
settings. A rule's ``when`` reads facts (solid edges); its expressions' other facts (job,
feasibility, neighbour) are dashed. A rule bears on a setting directly when it pins it or its
require/forbid/prefer/avoid expression reads ``layout.<setting>``, and through the estimates
when an expression reads memory.*, metrics.* or same.* facts, which depend on every setting
(the same test decision/reasons.py uses for a setting's reasons).

networkx answers: rules whose condition can never hold (rules/lint.never_fires), rules that add
constraints or preferences yet bear on no setting, and (``--setting zero``) every rule that
bears on one setting, direct ones first.
"""
from __future__ import annotations

import graphviz
import networkx as nx

from shardwise.decision.reasons import SETTINGS
from shardwise.kb.fact_schema import GROUP_OF
from shardwise.rules import expr
from shardwise.rules.lint import never_fires
from shardwise.rules.loader import Rule

ESTIMATES = "estimates"                 # the hub: memory, speed and neighbour facts of a layout
_INDIRECT = {"estimate", "neighbour"}
_GROUP_LABEL = {"job": "job facts\nmodel, cluster, train", "feasibility": "feasibility facts\nfit, best",
                "layout": "the answer's layout", "estimate": "the answer's estimates\nmemory, metrics",
                "neighbour": "neighbour facts\nsame"}


def rule(rid: str) -> str:
    return f"rule:{rid}"


def fact(path: str) -> str:
    return f"fact:{path}"


def setting(name: str) -> str:
    return f"setting:{name}"


def group(name: str) -> str:
    return f"group:{name}"


def bears_on(r: Rule) -> dict[str, list[str]]:
    """setting -> how the rule bears on it directly ("pin 8", "require 'layout.tp <= 8'")."""
    out: dict[str, list[str]] = {}
    for a in r.actions:
        if a.kind == "pin":
            out.setdefault(a.setting, []).append(f"pin {a.setting} = {a.expr_text}")
        elif a.node is not None:
            for p in sorted(expr.paths(a.node)):
                s = p.split(".", 1)[1]
                if GROUP_OF[p] == "layout" and s in SETTINGS:
                    worth = f" (worth {a.worth:g}%)" if a.worth else ""
                    out.setdefault(s, []).append(f"{a.kind} '{a.expr_text}'{worth}")
    return {s: list(dict.fromkeys(v)) for s, v in out.items()}


def through_estimates(r: Rule) -> list[str]:
    """The rule's actions whose expression reads an estimate or neighbour fact."""
    return [f"{a.kind} '{a.expr_text}'" + (f" (worth {a.worth:g}%)" if a.worth else "")
            for a in r.actions if a.node is not None and a.kind != "pin"
            and {GROUP_OF[p] for p in expr.paths(a.node)} & _INDIRECT]


def build(book: list[Rule]) -> nx.DiGraph:
    g = nx.DiGraph()
    for s in SETTINGS:
        g.add_node(setting(s), kind="setting", label=s)
    g.add_node(ESTIMATES, kind="hub", label="estimates\n(memory, metrics, neighbours)")
    for s in SETTINGS:
        g.add_edge(ESTIMATES, setting(s), how="every setting moves the estimates")
    for r in book:
        g.add_node(rule(r.id), kind="rule", label=r.id, where=r.where, stratum=r.stratum, rule_kind=r.kind,
                   title=r.title)
        when = expr.paths(r.when)
        in_exprs = set().union(*(expr.paths(a.node) for a in r.actions if a.node is not None))
        for p in sorted(when | {q for q in in_exprs if GROUP_OF[q] in ("job", "feasibility", "neighbour")}):
            grp = GROUP_OF[p]
            g.add_node(group(grp), kind="group", label=_GROUP_LABEL[grp])
            g.add_node(fact(p), kind="fact", label=p, group=grp)
            g.add_edge(group(grp), fact(p))
            g.add_edge(fact(p), rule(r.id), read="when" if p in when else "expression")
        for s, how in bears_on(r).items():
            g.add_edge(rule(r.id), setting(s), how="; ".join(how), direct=True)
        indirect = through_estimates(r)
        if indirect:
            g.add_edge(rule(r.id), ESTIMATES, how="; ".join(indirect), direct=False)
    return g


def influence(g: nx.DiGraph, name: str) -> list[dict]:
    """Every rule that bears on a setting: direct ones (pins, expressions reading it), then
    those whose expressions read the estimates."""
    out = []
    for n in g.predecessors(setting(name)):
        if g.nodes[n]["kind"] == "rule":
            out.append(_row(g, n, True, g.edges[n, setting(name)]["how"]))
    for n in g.predecessors(ESTIMATES):
        if not g.has_edge(n, setting(name)):
            out.append(_row(g, n, False, g.edges[n, ESTIMATES]["how"]))
    return sorted(out, key=lambda d: (not d["direct"], d["stratum"], d["rule"]))


def _row(g: nx.DiGraph, n: str, direct: bool, how: str) -> dict:
    a = g.nodes[n]
    return {"rule": a["label"], "where": a["where"], "stratum": a["stratum"], "kind": a["rule_kind"],
            "direct": direct, "how": how}


def analyse(book: list[Rule], only: str | None = None) -> dict:
    g = build(book)
    rules = list(book)
    out = {"rules": len(rules), "strata": {str(s): sum(r.stratum == s for r in rules) for s in (1, 2, 3)},
           "facts_read": sum(1 for _, d in g.nodes(data=True) if d["kind"] == "fact"),
           "edges": g.number_of_edges(), "acyclic": nx.is_directed_acyclic_graph(g),
           "never_fires": {r.id: f"{r.where}: {why}" for r in rules if (why := never_fires(r))},
           "no_setting": {r.id: r.where for r in rules if r.kind != "info" and not g.out_degree(rule(r.id))},
           "info": [r.id for r in rules if r.kind == "info"],
           "settings": {s: sorted(g.nodes[n]["label"] for n in g.predecessors(setting(s))
                                  if g.nodes[n]["kind"] == "rule") for s in SETTINGS}}
    if only:
        out["influences"] = {only: influence(g, only)}
    return out


def draw(g: nx.DiGraph, only: str | None = None) -> graphviz.Digraph:
    """Graphviz DOT, left to right: fact groups, facts, rules by stratum, the estimates hub,
    settings. With ``only``: just what bears on that setting."""
    keep = set(g) if not only else nx.ancestors(g, setting(only)) | {setting(only)}
    if only:        # the hub reaches every setting: keep only the one asked about
        keep -= {setting(s) for s in SETTINGS if s != only}
    d = graphviz.Digraph("rule_graph", graph_attr={"rankdir": "LR", "fontname": "Helvetica", "ranksep": "1.0"},
                         node_attr={"fontname": "Helvetica", "fontsize": "10"})
    ids = {n: f"n{i}" for i, n in enumerate(sorted(keep))}   # DOT reads "a:b" as node a, port b
    fill = {"hard": "lightpink", "soft": "palegreen", "info": "lightgrey"}
    strata: dict[int, list[str]] = {}
    for n in sorted(keep):
        a = g.nodes[n]
        k = a["kind"]
        if k == "group":
            d.node(ids[n], a["label"], shape="folder", style="filled", fillcolor="white")
        elif k == "fact":
            d.node(ids[n], a["label"], shape="ellipse", fontsize="9")
        elif k == "setting":
            d.node(ids[n], a["label"], shape="diamond", style="filled", fillcolor="lightblue")
        elif k == "hub":
            d.node(ids[n], a["label"], shape="box3d", style="filled", fillcolor="lightyellow")
        else:
            strata.setdefault(a["stratum"], []).append(n)
    names = {1: "stratum 1: job facts -> hard constraints", 2: "stratum 2: + feasibility -> preferences",
             3: "stratum 3: the answer -> warnings, notes"}
    for s in sorted(strata):
        with d.subgraph(name=f"cluster_s{s}", graph_attr={"label": names[s], "style": "dashed"}) as sub:
            for n in strata[s]:
                a = g.nodes[n]
                sub.node(ids[n], f"{a['label']}\n{a['where']}\n{a['rule_kind']}", shape="box",
                         style="filled,rounded", fillcolor=fill[a["rule_kind"]])
    for u, v, e in sorted(g.edges(data=True), key=lambda x: (x[0], x[1])):
        if u in keep and v in keep:
            attrs = {}
            if e.get("read") == "expression":
                attrs["style"] = "dashed"
            if g.nodes[u]["kind"] == "hub" or e.get("direct") is False:
                attrs["color"] = "grey50"
            d.edge(ids[u], ids[v], **attrs)
    return d
