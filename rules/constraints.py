"""What the rules add to the decision: hard constraints and soft preferences, one type each.

Both hold an expression over a layout's facts (rules/expr.py) and are judged for every layout
of the search's table at once: ``columns(path)`` returns a NumPy array (one value per layout)
for layout/estimate/neighbour facts and a plain value for job and feasibility facts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kb.errors import InputError
from . import expr
from .loader import Rule


def holds(node, columns, n: int, rule: Rule, what: str, row=None) -> np.ndarray:
    """An expression judged for each of the table's n layouts. Where it has no value for some
    (expr.judge_columns: a division by zero, log2 of a number not above 0), that is the
    rule's fault, not a 'false' that quietly moves the answer: an InputError naming the rule,
    how many layouts and one of them (``row(i)``, the i-th layout's description)."""
    value, undefined = expr.judge_columns(node, columns)
    undefined = np.broadcast_to(np.asarray(undefined, dtype=bool), (n,))
    if undefined.any():
        i = int(np.argmax(undefined))
        example = f", e.g. {row(i)}" if row is not None else ""
        raise InputError(f"rule {rule.id} ({rule.where}): {what} has no value for {int(undefined.sum()):,} of "
                         f"{n:,} layouts (a division by zero, log2 of a number not above 0, or a number out of "
                         f"range){example}; give it a guard that settles those layouts first ('layout.pp == 1 or ...', '... and ...')")
    return np.broadcast_to(np.asarray(value, dtype=bool), (n,))


@dataclass(frozen=True)
class Constraint:
    """A hard rule: ``require`` (a layout must make it true) or ``forbid`` (must not)."""
    kind: str
    node: object
    text: str
    rule: Rule

    def allows(self, columns, n: int, row=None) -> np.ndarray:
        v = holds(self.node, columns, n, self.rule, f"{self.kind} '{self.text}'", row)
        return v if self.kind == "require" else ~v

    def describe(self) -> str:
        return f"{self.kind} '{self.text}' ({self.rule.id}, {self.rule.where})"


@dataclass(frozen=True)
class Preference:
    """A soft rule: ``prefer`` (a layout should make it true) or ``avoid``, with its worth: the
    percent of predicted throughput the team gives up to honour it."""
    kind: str
    node: object
    text: str
    worth: float
    rule: Rule

    def broken(self, columns, n: int, row=None) -> np.ndarray:
        v = holds(self.node, columns, n, self.rule, f"{self.kind} '{self.text}'", row)
        return ~v if self.kind == "prefer" else v

    def describe(self) -> str:
        return f"{self.kind} '{self.text}' (worth {self.worth:g}%, {self.rule.id}, {self.rule.where})"


def from_firings(firings) -> tuple[list[Constraint], dict, list[Preference]]:
    """The constraints, pins (setting -> (value, rule)) and preferences the firings added, in
    firing order. A later pin of the same setting at lower priority does not move an earlier
    one; two different pins of one setting are a conflict the caller reports."""
    constraints, pins, prefs = [], {}, []
    for f in firings:
        for a in f.rule.actions:
            if a.kind in ("require", "forbid"):
                constraints.append(Constraint(a.kind, a.node, a.expr_text, f.rule))
            elif a.kind in ("prefer", "avoid"):
                prefs.append(Preference(a.kind, a.node, a.expr_text, a.worth, f.rule))
        for add in f.added:
            if add["kind"] == "pin":
                pins.setdefault(add["setting"], []).append((add["value"], f.rule))
    return constraints, pins, prefs
