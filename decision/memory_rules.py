"""The playbook's memory rules on one layout the user names (`memory --layout`, `export
--layout`), outside the search: "fits" must not mean there what the recommendation would refuse.

The estimate fits a layout whose peak is at most the GPU's memory; the playbook's hard memory
rules (rules/memory.yaml memory.fit-margin: at most 95%, for the estimate's own error) are
stricter, and a house policy may be stricter still. Only rules whose condition (if any) and
constraint read facts one layout's estimate gives are judged here (offload.fits-host-memory on a
GPU whose host the catalog knows): one that reads the search's feasibility or neighbour facts
needs the decision.

The warnings and notes the recommendation would print for the layout are given the same way
(layout_texts): those whose condition and text read only the job's, the layout's and its
estimate's facts -- the tight-memory warning among them, which a layout the user names needs as
much as a recommended one.
"""
from __future__ import annotations

from shardwise.kb.facts import estimate_facts, job_facts, layout_facts
from shardwise.kb.job import Job
from shardwise.kb.layout import Layout
from shardwise.rules import expr
from shardwise.rules import playbook as pb
from shardwise.rules.constraints import Constraint


def broken_memory_rules(job: Job, lay: Layout, mem, st, rules: list[str] | None = None,
                        playbook: str | None = None) -> list[str]:
    """One line for each hard rule on memory.* facts, its condition holding, that the layout
    breaks; ``mem`` and ``st`` are its memory estimate and step time."""
    facts = {**job_facts(job, lay.global_batch), **layout_facts(lay), **estimate_facts(job, mem, st)}
    out = []
    for r in pb.load(rules or [], playbook).rules:
        if r.kind != "hard" or not expr.paths(r.when) <= facts.keys() or not expr.evaluate(r.when, facts.get):
            continue
        for a in r.actions:
            if a.kind not in ("require", "forbid"):
                continue
            paths = expr.paths(a.node)
            if not any(p.startswith("memory.") for p in paths) or not paths <= facts.keys():
                continue
            if not Constraint(a.kind, a.node, a.expr_text, r).allows(facts.get, 1)[0]:
                out.append(f"{r.id} ({r.where}): {r.title}")
    return out


def layout_texts(job: Job, lay: Layout, mem, st, rules: list[str] | None = None,
                 playbook: str | None = None) -> tuple[list[str], list[str]]:
    """(warnings, notes) of the rules whose condition holds for the layout, in the order of their
    priority, rendered on its facts; a rule reading a fact only the search knows (same.*,
    search.*) is left to the decision."""
    facts = {**job_facts(job, lay.global_batch), **layout_facts(lay), **estimate_facts(job, mem, st)}
    warnings, notes = [], []
    book = pb.load(rules or [], playbook)
    for r in sorted(book.rules, key=lambda r: -r.priority):
        texts = [a for a in r.actions if a.kind in ("warn", "note")]
        reads = expr.paths(r.when).union(*(expr.template_paths(a.text) for a in texts))
        if not texts or not reads <= facts.keys() or not expr.evaluate(r.when, facts.get):
            continue
        for a in texts:
            text = expr.render(a.text, facts.get)
            lst = warnings if a.kind == "warn" else notes
            if text not in lst:
                lst.append(text)
    return warnings, notes
