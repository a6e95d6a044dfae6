"""Run one stratum of rules over its facts, and record every firing.

Facts never change during a run (kb/fact_schema.py), so a stratum is one fact, asserted once:
durable_rules matches every rule of the stratum against it and fires those that hold, highest
priority first (then file order). A firing adds what its actions say -- constraints, pins,
preferences, warnings, notes -- and nothing it adds can change a fact another rule reads, so
every firing stays true of the answer. No loop is possible: each rule fires at most once.

``reference_agenda`` is the same semantics in plain Python: the oracle of the differential
test (tests/test_differential.py), which runs random rule sets through both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from shardwise.kb.errors import InputError

from . import expr
from .compiler import CompiledRulebook, derived_fields
from .loader import Rule


@dataclass
class Firing:
    seq: int
    rule: Rule
    stratum: int
    facts: dict                     # the facts its condition read, with their values
    added: list = field(default_factory=list)   # [{"kind", "text", "setting", "value", "worth"}]


def nest(flat: dict) -> dict:
    out: dict = {}
    for k, v in flat.items():
        node = out
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


def _round(v):
    return round(v, 4) if isinstance(v, float) else v


def fire(rule: Rule, stratum: int, seq: int, facts: Callable[[str], object]) -> Firing:
    """What one rule adds when it fires (pins are evaluated here: they read job facts only)."""
    added = []
    for a in rule.actions:
        if a.kind == "pin":
            added.append({"kind": "pin", "setting": a.setting, "value": _round(expr.evaluate(a.node, facts)),
                          "text": a.expr_text})
        elif a.kind in ("require", "forbid", "prefer", "avoid"):
            added.append({"kind": a.kind, "text": a.expr_text, **({"worth": a.worth} if a.worth else {})})
        else:
            added.append({"kind": a.kind, "text": a.text})
    read = {p: _round(facts(p)) for p in sorted(expr.paths(rule.when))}
    return Firing(seq, rule, stratum, read, added)


def reference_agenda(book: CompiledRulebook, facts: dict) -> list[int]:
    """Plain-Python semantics: the indices of the rules whose condition holds, highest priority
    first, then file order."""
    look = facts.__getitem__
    holds = [i for i, r in enumerate(book.rules) if bool(expr.evaluate(r.when, look))]
    return sorted(holds, key=lambda i: (-book.rules[i].priority, i))


_RULESETS: dict = {}


def durable_agenda(book: CompiledRulebook, facts: dict) -> list[int]:
    """The same, decided by durable_rules (rules/durable_adapter.py, the only importer of durable)."""
    if not book.rules:
        return []
    if book.digest not in _RULESETS:
        from .durable_adapter import Ruleset
        _RULESETS[book.digest] = Ruleset(book.durable, book.digest)
    fact = nest(facts)
    fact.update(derived_fields(book, facts.__getitem__))
    fact.update(kind="state", id="s0")
    fired: list[int] = []

    def on_fire(rname: str, _fact: dict) -> list:
        if rname != "__sink__":
            fired.append(int(rname[1:]))
        return []
    _RULESETS[book.digest].run([fact], on_fire)
    return fired


AGENDAS = {"durable": durable_agenda, "reference": reference_agenda}


def run_stratum(book: CompiledRulebook, stratum: int, facts: dict, engine: str = "durable",
                first_seq: int = 1) -> list[Firing]:
    """Fire the stratum's rules over ``facts`` (path -> value; every path a condition reads)."""
    look = facts.__getitem__
    try:
        order = AGENDAS[engine](book, facts)
    except expr.ExprError as e:
        raise _named(book.rules, lambda r: expr.evaluate(r.when, look), "condition", e)
    out = []
    for k, i in enumerate(order):
        try:
            out.append(fire(book.rules[i], stratum, first_seq + k, look))
        except expr.ExprError as e:
            raise _named([book.rules[i]], lambda r: fire(r, stratum, 0, look), "pin", e)
    return out


def _named(rules, evaluate, what: str, error: Exception) -> InputError:
    """The first of ``rules`` whose ``evaluate`` fails, named with its file:line (the agenda
    evaluates every condition at once, so the error alone does not say whose it was)."""
    for r in rules:
        try:
            evaluate(r)
        except expr.ExprError as e:
            return InputError(f"rule {r.id} ({r.where}): its {what} cannot be evaluated for this job: {e}")
    return InputError(f"a rule's {what} cannot be evaluated for this job: {error}")
