"""The rule graph: which rules read facts that other rules write.

A rule writes a setting; a setting moves the facts computed from it (the layout's own facts,
the next valid values, and every estimator answer: rules/facts.depends_on); a rule reading one
of those facts is downstream of the rule that wrote the setting. networkx then answers:

- cycles: groups of rules that feed each other (strongly connected components). One rule
  escalating its own setting (tp.fit-in-node reads memory.fits and raises TP) is the playbook
  working; two rules in one group setting the same setting can undo each other, and then only
  the engine's loop guard (a layout visited twice stops the run, naming the rules) ends it;
- unreachable rules: no run can make their condition true -- lint proves the condition
  contradictory, or it needs a setting away from its starting value (VP 1, CP 1, EP 1, ZeRO 0,
  SP off) that no reachable rule ever sets;
- influence: every rule with a path to a setting (``--setting zero``), directly or through the
  facts it moves.
"""
from __future__ import annotations

import graphviz
import networkx as nx

from shardwise.rules.facts import SCHEMA, SETTINGS, depends_on
from shardwise.rules.lint import _bounds, never_fires
from shardwise.rules.loader import Rule

# Settings every run starts from the same value (rules/recommend.start_layout): TP and PP can
# start higher when the batch does not split, and the user can fix mbs and recompute.
START = {"vp": 1, "cp": 1, "ep": 1, "zero": 0}


def rule(rid: str) -> str:
    return f"rule:{rid}"


def fact(path: str) -> str:
    return f"fact:{path}"


def setting(name: str) -> str:
    return f"setting:{name}"


def build(book: list[Rule]) -> nx.DiGraph:
    """facts -> rules that read them -> settings they set -> facts computed from those."""
    g = nx.DiGraph()
    for s in SETTINGS:
        g.add_node(setting(s), kind="setting", label=s)
    for r in book:
        g.add_node(rule(r.id), kind="rule", label=r.id, where=r.where, priority=r.priority)
        for p in sorted(r.reads):
            g.add_node(fact(p), kind="fact", label=p, derived=bool(depends_on(p)))
            g.add_edge(fact(p), rule(r.id))
        for s in sorted(r.sets()):
            g.add_edge(rule(r.id), setting(s))
    for p in SCHEMA:
        if fact(p) in g:
            for s in depends_on(p):
                g.add_edge(setting(s), fact(p))
    return g


def rule_to_rule(g: nx.DiGraph) -> nx.DiGraph:
    """Rule A -> rule B when B reads a fact that a setting A sets moves."""
    rr = nx.DiGraph()
    rules = [n for n, d in g.nodes(data=True) if d["kind"] == "rule"]
    rr.add_nodes_from(rules)
    for a in rules:
        for s in g.successors(a):
            for f in g.successors(s):
                for b in g.successors(f):
                    rr.add_edge(a, b, via=f"{g.nodes[s]['label']} -> {g.nodes[f]['label']}")
    return rr


def cycles(g: nx.DiGraph, book: list[Rule]) -> list[dict]:
    """Groups of rules that feed each other, and the settings two of them fight over."""
    rr = rule_to_rule(g)
    sets = {rule(r.id): r.sets() for r in book}
    out = []
    for comp in sorted(nx.strongly_connected_components(rr), key=lambda c: sorted(c)):
        members = sorted(comp)
        if len(members) == 1 and not rr.has_edge(members[0], members[0]):
            continue
        contested = []
        for s in sorted(SETTINGS):
            writers = [m for m in members if s in sets[m]]
            if len(writers) > 1:
                a, b = writers[0], writers[1]
                loop = nx.shortest_path(rr, a, b)[:-1] + nx.shortest_path(rr, b, a)
                contested.append({"setting": s, "rules": [w[5:] for w in writers],
                                  "example": " -> ".join(n[5:] for n in loop)})
        out.append({"rules": [m[5:] for m in members], "contested": contested,
                    "could_loop": bool(contested)})
    return out


def unreachable(book: list[Rule]) -> dict[str, str]:
    """Rules no run can fire, each with the reason (fixpoint over the settings rules can move)."""
    dead = {r.id: why for r in book if (why := never_fires(r))}
    movable = set(SETTINGS) - set(START)
    needs = {}
    for r in book:
        acc: dict = {}
        _bounds(r.when, acc)
        needs[r.id] = {p.split(".", 1)[1] for p, (lo, hi) in acc.items()
                       if p.startswith("layout.") and p.split(".", 1)[1] in START
                       and not lo <= START[p.split(".", 1)[1]] <= hi}
    changed = True
    while changed:
        changed = False
        for r in book:
            if r.id not in dead and needs[r.id] <= movable and not r.sets() <= movable:
                movable |= r.sets()
                changed = True
    for r in book:
        if r.id not in dead and not needs[r.id] <= movable:
            missing = sorted(needs[r.id] - movable)
            dead[r.id] = (f"it needs {', '.join(missing)} away from its starting value "
                          f"({', '.join(f'{m} = {START[m]}' for m in missing)}) and no reachable rule sets it")
    return dict(sorted(dead.items()))


def influence(g: nx.DiGraph, name: str) -> list[dict]:
    """Rules with a path to a setting: those that set it, then the rest by distance."""
    target = setting(name)
    out = []
    for n in sorted(nx.ancestors(g, target)):
        if g.nodes[n]["kind"] != "rule":
            continue
        path = nx.shortest_path(g, n, target)
        out.append({"rule": n[5:], "where": g.nodes[n]["where"], "direct": len(path) == 2,
                    "path": " -> ".join(g.nodes[p]["label"] for p in path)})
    return sorted(out, key=lambda d: (not d["direct"], d["path"].count("->"), d["rule"]))


def analyse(book: list[Rule], only: str | None = None) -> dict:
    g = build(book)
    rules = [n for n, d in g.nodes(data=True) if d["kind"] == "rule"]
    facts = [n for n, d in g.nodes(data=True) if d["kind"] == "fact"]
    out = {"rules": len(rules), "facts_read": len(facts), "edges": g.number_of_edges(),
           "cycles": cycles(g, book), "unreachable": unreachable(book)}
    if only:
        out["influences"] = {only: influence(g, only)}
    return out


def draw(g: nx.DiGraph, only: str | None = None) -> graphviz.Digraph:
    """The graph for Graphviz; with ``only``, just what can reach that setting."""
    keep = set(g) if not only else nx.ancestors(g, setting(only)) | {setting(only)}
    d = graphviz.Digraph("rule_graph", graph_attr={"rankdir": "LR", "fontname": "Helvetica", "ranksep": "1.2"},
                         node_attr={"fontname": "Helvetica", "fontsize": "10"})
    style = {"rule": dict(shape="box", style="filled,rounded", fillcolor="palegreen"),
             "setting": dict(shape="diamond", style="filled", fillcolor="lightblue")}
    ids = {n: f"n{i}" for i, n in enumerate(sorted(keep))}   # DOT reads "a:b" as node a, port b
    for n in sorted(keep):
        a = g.nodes[n]
        if a["kind"] == "fact":
            d.node(ids[n], a["label"], shape="ellipse", style="filled" if a["derived"] else "",
                   fillcolor="khaki" if a["derived"] else "white", fontsize="9")
        else:
            label = f"{a['label']}\n{a['where']}" if a["kind"] == "rule" else a["label"]
            d.node(ids[n], label, **style[a["kind"]])
    # Every setting moves every estimator answer: one hub instead of settings x answers edges.
    hub = [n for n in sorted(keep) if g.nodes[n]["kind"] == "fact" and set(depends_on(g.nodes[n]["label"])) == set(SETTINGS)]
    if hub:
        d.node("estimators", "estimators\n(memory, metrics, what-ifs)", shape="box3d", style="filled",
               fillcolor="lightyellow")
    for u, v in sorted(g.edges()):
        if u in keep and v in keep and v not in hub:
            d.edge(ids[u], ids[v], color="grey50" if g.nodes[u]["kind"] == "setting" else "black")
    for s in sorted(n for n in keep if g.nodes[n]["kind"] == "setting" and any(g.has_edge(n, h) for h in hub)):
        d.edge(ids[s], "estimators", color="grey50")
    for h in hub:
        d.edge("estimators", ids[h], color="grey50")
    return d

