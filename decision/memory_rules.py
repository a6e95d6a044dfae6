"""The playbook's memory rules on one layout the user names (`memory --layout`, `export
--layout`), outside the search: "fits" must not mean there what the recommendation would refuse.

The estimate fits a layout whose peak is at most the GPU's memory; the playbook's hard memory
rules (rules/memory.yaml memory.fit-margin: at most 95%, for the estimate's own error) are
stricter, and a house policy may be stricter still. Only unconditional rules (``when: true``)
are judged here: a conditional one needs the strata the decision runs.
"""
from __future__ import annotations

from shardwise.kb.facts import job_facts, layout_facts, memory_facts
from shardwise.kb.job import Job
from shardwise.kb.layout import Layout
from shardwise.rules import expr
from shardwise.rules import playbook as pb


def broken_memory_rules(job: Job, lay: Layout, mem, rules: list[str] | None = None,
                        playbook: str | None = None) -> list[str]:
    """One line for each unconditional hard rule on memory.* facts that the layout breaks."""
    facts = {**job_facts(job, lay.global_batch), **layout_facts(lay), **memory_facts(mem)}
    out = []
    for r in pb.load(rules or [], playbook).rules:
        if r.kind != "hard" or r.when_text.strip() != "true":
            continue
        for a in r.actions:
            if a.kind not in ("require", "forbid") or not any(p.startswith("memory.") for p in expr.paths(a.node)):
                continue
            if bool(expr.evaluate_columns(a.node, facts.get)) != (a.kind == "require"):
                out.append(f"{r.id} ({r.where}): {r.title}")
    return out
