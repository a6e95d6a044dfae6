"""Rank the scored space, check it against the rules' constraints, and say why not.

Order: fastest first (predicted tokens/s), then the lower memory peak, then the smaller
settings -- a total order, so the same job always ranks the same way. Only layouts whose peak
fits the GPU are ranked. The best layout is the first one the house policies allow that also
keeps the playbook's memory margin (rules/facts.FIT_MARGIN_PCT); policies are the rules'
``require``/``forbid`` constraints, evaluated on the same facts the rules read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardwise.kb.facts import layout_dict
from shardwise.kb.job import Job
from shardwise.kb.layout import Layout
from shardwise.kb.resolve import global_batch
from shardwise.rules import expr
from shardwise.rules.facts import FIT_MARGIN_PCT, LazyFacts, build_state

from .score import score
from .space import FIELDS, Space, build_space, index_of

# ranked layouts checked against the policies before giving up: a bound on time (each check
# builds the rules' facts, ~0.3 ms), not a measured quantity
POLICY_SCAN = 2000
COMPARED = ("tp", "pp", "vp", "cp", "ep", "dp", "zero", "sp", "mbs", "recompute")


@dataclass
class Policy:
    """One require/forbid constraint of the rules: (kind, parsed expression, its text, rule)."""
    kind: str
    node: object
    text: str
    rule: str
    where: str

    def broken_by(self, facts: dict) -> bool:
        ok = bool(expr.evaluate(self.node, facts.__getitem__))
        return (self.kind == "require" and not ok) or (self.kind == "forbid" and ok)


@dataclass
class SearchResult:
    job: Job
    global_batch: int
    space: Space
    scores: dict
    order: np.ndarray                     # indices into the space of the fitting layouts, best first
    policies: list = field(default_factory=list)
    _states: dict = field(default_factory=dict)

    @property
    def capacity(self) -> float:
        return self.job.cluster.gpu.memory_gib

    def _fact_args(self, i: int) -> tuple:
        """What the rules' facts for layout i are built from (rules/facts.py)."""
        t = self.job.training
        return self.job, self.space.layout(i), self.global_batch, bool(t.mbs), t.recompute != "auto"

    def state(self, i: int) -> dict:
        if i not in self._states:
            self._states[i] = build_state(*self._fact_args(i))
        return self._states[i][0]

    def blocked_by(self, i: int):
        """The first policy layout i breaks, or None. Facts are built as late as they are needed:
        a policy on the layout alone needs no estimate, and one that forbids every layout would
        otherwise cost the estimators POLICY_SCAN times per search."""
        if not self.policies:
            return None
        facts = self._states[i][0] if i in self._states else LazyFacts(*self._fact_args(i))
        return next((p for p in self.policies if p.broken_by(facts)), None)

    def within_margin(self, i: int) -> bool:
        return 100 * self.scores["peak_gib"][i] / self.capacity <= FIT_MARGIN_PCT

    def margin_count(self, first: int | None = None) -> int:
        """How many layouts (of the first `first` ranked) fit within the memory margin, policies aside."""
        used = 100 * self.scores["peak_gib"][self.order[:first]] / self.capacity
        return int(np.count_nonzero(used <= FIT_MARGIN_PCT))

    def best(self):
        """Index of the fastest layout the policies allow within the memory margin, or None."""
        for i in self.order[:POLICY_SCAN]:
            i = int(i)
            if self.within_margin(i) and self.blocked_by(i) is None:
                return i
        return None

    def rank_of(self, lay: Layout):
        """1-based rank of a layout among the fitting ones (None if it does not fit or is outside the space)."""
        i = index_of(self.space, lay)
        if i is None:
            return None
        hits = np.flatnonzero(self.order == i)
        return int(hits[0]) + 1 if len(hits) else None

    def entry(self, i: int, rank: int, pick: Layout | None = None, pick_tps: float | None = None) -> dict:
        flat = self.state(i)
        _, mem, st = self._states[i]
        lay = self.space.layout(i)
        mt = st.metrics(self.job)
        keep = ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu_pct", "bubble_pct",
                "comm_overhead_pct", "time_to_train_h", "cost")
        return {
            "rank": rank, "layout": layout_dict(lay), "describe": lay.describe(),
            "memory": {"peak_gib": round(mem.peak_gib, 2), "capacity_gib": round(mem.capacity_gib, 2),
                       "used_pct": round(flat["memory.used_pct"], 1), "fits": bool(mem.fits)},
            "metrics": {k: mt[k] for k in keep if k in mt},
            "why_not": self.why_not(i, pick, pick_tps),
        }

    def why_not(self, i: int, pick: Layout | None, pick_tps: float | None) -> str | None:
        lay = self.space.layout(i)
        if pick is not None and lay == pick:
            return None
        p = self.blocked_by(i)
        if p is not None:
            return f"house policy: {p.kind} '{p.text}' of rule {p.rule} ({p.where})"
        used = 100 * self.scores["peak_gib"][i] / self.capacity
        if used > FIT_MARGIN_PCT:
            return (f"sits at {used:.0f}% of memory; the rules keep {100 - FIT_MARGIN_PCT:.0f}% headroom "
                    "for the estimate's error")
        if pick is None or not pick_tps:
            return None
        gap = 100 * (self.scores["tokens_per_s"][i] / pick_tps - 1)
        diff = differences(lay, pick)
        if gap < -0.05:
            return f"{-gap:.1f}% slower than the rule pick ({diff})"
        if gap <= 0.05:
            return f"as fast as the rule pick within 0.1% ({diff})"
        return f"{gap:.1f}% faster than the rule pick and allowed; the playbook's order did not reach it ({diff})"


def differences(a: Layout, b: Layout) -> str:
    """'tp 4 instead of 8, pp 8 instead of 4': what layout a changes from b."""
    out = []
    for k in COMPARED:
        va, vb = getattr(a, k), getattr(b, k)
        if va != vb:
            if isinstance(va, bool):
                va, vb = ("on" if va else "off"), ("on" if vb else "off")
            out.append(f"{k} {va} instead of {vb}")
    if a.shard != b.shard:
        out.append("HSDP within the node" if a.shard else "ZeRO over all replicas")
    return ", ".join(out) or "same layout"


def policies_of(constraints) -> list[Policy]:
    """The engine's (kind, node, rule) constraints as Policies (rules/engine.Run.constraints)."""
    out = []
    for kind, node, rule in constraints:
        text = next((a.expr_text for a in rule.actions if a.node is node), "?")
        out.append(Policy(kind, node, text, rule.id, rule.where))
    return out


def search(job: Job, gb: int | None = None, constraints=(), fit_only: bool = False) -> SearchResult:
    if gb is None:
        gb, _ = global_batch(job, multiple=job.cluster.gpus * (job.training.mbs or 1))
    space = build_space(job, gb, fit_only)
    sc = score(job, space)
    fits = np.flatnonzero(sc["peak_gib"] <= job.cluster.gpu.memory_gib)
    keys = [space.arrays[k][fits] for k in reversed(FIELDS)] + [sc["peak_gib"][fits], -sc["tokens_per_s"][fits]]
    order = fits[np.lexsort(keys)]
    return SearchResult(job, gb, space, sc, order, policies_of(constraints))
