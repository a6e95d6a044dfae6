"""Compile rules to a durable_rules ruleset that stays inside the measured safe subset.

docs/reference/durable-rules.md found that cross-fact comparisons can segfault or be
skipped (P9, P10), that $not breaks other rules (P11), that weak typing makes "8" == 8 (P13)
and that some floats crash the engine (P15; measured here: 1e-05 segfaults). So:
* every rule has one pattern, on the one fact of its stratum (job facts, then job and
  feasibility facts, then the answer): no joins, no beta comparisons;
* a condition is split at its top-level ``and``s; an atom of the form ``path OP literal``
  (or a boolean path, or ``not`` one) becomes a durable alpha test, type-checked first;
* every other atom (arithmetic, functions, two paths, or/not of compound terms, 'in') is
  evaluated by our own evaluator and stored on the state as a boolean field ``w<rule>_<k>``,
  which durable tests for true -- negation never reaches durable;
* priorities 0-1000 (higher first) become durable's pri = 1000 - priority (lower first);
* a sink rule that never fires keeps every fact "handled" (P4).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from . import expr
from shardwise.kb.fact_schema import FLOAT_PATHS
from .loader import Rule

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_DURABLE_OP = {"<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte", "!=": "$neq"}


@dataclass
class CompiledRulebook:
    rules: list[Rule]
    durable: dict                    # rule name -> durable rule (without 'run')
    derived: list[tuple[str, object]]  # (state field, expression node) evaluated in Python per state
    digest: str


def _conjuncts(node) -> list:
    if node.op == "and":
        return _conjuncts(node.args[0]) + _conjuncts(node.args[1])
    return [node]


def _safe_literal(v) -> bool:
    if isinstance(v, bool) or isinstance(v, str):
        return True
    if isinstance(v, int):
        return abs(v) < 1e15
    return "e" not in repr(v) and abs(v) < 1e15


def _exact(path: str) -> bool:
    """Facts durable may compare: integers, strings and booleans. Float facts are compared by
    our evaluator, so that durable's 4-decimal rounding can never flip a comparison."""
    return path not in FLOAT_PATHS


def _alpha(atom):
    """A durable alpha test for ``atom``, or None if it must be evaluated in Python."""
    if atom.op == "path":
        return {atom.value: True}
    if atom.op == "not" and atom.args[0].op == "path":
        return {atom.args[0].value: False}
    if atom.op == "cmp":
        a, b = atom.args
        op = atom.value
        if a.op != "path" and b.op == "path":
            a, b, op = b, a, _FLIP[op]
        if a.op == "path" and _exact(a.value) and b.op in ("num", "str", "bool") and _safe_literal(b.value):
            if op == "==":
                return {a.value: b.value}
            return {_DURABLE_OP[op]: {a.value: b.value}}
    return None


def compile_rules(rules: list[Rule]) -> CompiledRulebook:
    durable, derived = {}, []
    for i, r in enumerate(rules):
        tests = [{"kind": "state"}]
        if not (r.when.op == "bool" and r.when.value is True):
            for k, atom in enumerate(_conjuncts(r.when)):
                if atom.op == "bool":
                    if atom.value:
                        continue
                    name = f"w{i}_{k}"          # constant false: a field that is never true
                    derived.append((name, atom))
                    tests.append({name: True})
                    continue
                test = _alpha(atom)
                if test is None:
                    name = f"w{i}_{k}"
                    derived.append((name, atom))
                    test = {name: True}
                tests.append(test)
        durable[f"r{i}"] = {"pri": 1000 - r.priority, "all": [{"s": {"$and": tests}}]}
    durable["__sink__"] = {"pri": 65535, "all": [{"m": {"$ex": {"kind": 1}}}, {"never": {"__never__": 1}}]}
    blob = json.dumps({"d": durable, "ids": [r.id for r in rules]}, sort_keys=True)
    return CompiledRulebook(rules, durable, derived, hashlib.sha256(blob.encode()).hexdigest()[:12])


def derived_fields(book: CompiledRulebook, facts) -> dict:
    """Evaluate the Python-side atoms of every rule on one state."""
    out = {}
    for name, node in book.derived:
        out[name] = bool(expr.evaluate(node, facts))
    return out
