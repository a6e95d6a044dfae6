"""Static checks of a rulebook beyond what loading refuses: rules that can never fire and
settings two rules fight over at the same priority."""
from __future__ import annotations

import math

from .loader import Rule


def _bounds(node, acc: dict) -> None:
    """Interval bounds per fact from top-level 'and' atoms ``path OP number``."""
    if node.op == "and":
        for a in node.args:
            _bounds(a, acc)
        return
    if node.op == "cmp" and node.args[0].op == "path" and node.args[1].op == "num":
        path, v, op = node.args[0].value, node.args[1].value, node.value
        lo, hi = acc.get(path, (-math.inf, math.inf))
        if op in (">", ">="):
            lo = max(lo, v + (1e-9 if op == ">" else 0))
        elif op in ("<", "<="):
            hi = min(hi, v - (1e-9 if op == "<" else 0))
        elif op == "==":
            lo, hi = max(lo, v), min(hi, v)
        acc[path] = (lo, hi)


def never_fires(rule: Rule) -> str | None:
    if rule.when.op == "bool" and rule.when.value is False:
        return "its condition is the constant false"
    acc: dict = {}
    _bounds(rule.when, acc)
    for path, (lo, hi) in acc.items():
        if lo > hi:
            return f"its condition needs {path} above {lo:g} and below {hi:g} at once"
    return None


def lint(rules: list[Rule], skip_files: set[str] = frozenset()) -> list[str]:
    out = []
    for r in rules:
        why = never_fires(r)
        if why and r.file not in skip_files:
            out.append(f"{r.where}: rule {r.id} can never fire: {why}")
    seen: dict = {}
    for r in rules:
        for s in r.sets():
            key = (s, r.priority)
            if key in seen and (r.file not in skip_files or seen[key].file not in skip_files):
                o = seen[key]
                out.append(f"{r.where}: rule {r.id} sets {s} at priority {r.priority}, as does {o.id} ({o.where}); "
                           "which one wins depends on file order")
            seen.setdefault(key, r)
    return out
