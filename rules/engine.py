"""Forward chaining over layout states: the playbook's rules, house policies, the firing trace.

A run starts from a plain layout (TP = PP = CP = 1, all GPUs data-parallel, no ZeRO) and its
state of facts (rules/facts.py). A rule whose condition holds on the current state fires; its
``set`` actions make a new layout, which the estimators evaluate into a new state (facts are
only ever added: a decision never edits a state). Rules then match the new state; firings on
an older state that were still pending are skipped. The run ends when no rule fires on the
current state (quiescence).

Why states rather than every candidate layout as a fact (the other shape
docs/reference/durable-rules.md describes): a trace of states reads like the playbook
itself -- "TP 1 -> 8 because 140 GB do not fit in 80", "PP 4 because ..." -- and each step
shows the estimates that justified it. Ranking all candidates is the search's job.

Actions: set (a new layout; refused with the reason when the layout is invalid or breaks a
constraint), require / forbid (constraints later layouts must keep), warn, note.
A rule that fires again on a later state with nothing new (no setting, its constraint already
in force, its text already said) is not repeated in the trace.
Loop guard: a layout visited twice is a cycle -- the run stops naming the rules that went
round -- and no run fires more than MAX_FIRINGS rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from shardwise.kb.errors import InputError
from shardwise.kb.job import Job, check_layout
from shardwise.kb.layout import Layout

from . import expr
from .compiler import CompiledRulebook, derived_fields
from .facts import LazyFacts, build_state

MAX_FIRINGS = 300


class RuleLoopError(InputError):
    """A rule set that would not terminate."""


@dataclass
class State:
    index: int
    layout: Layout
    facts: dict
    memory: object
    step: object


@dataclass
class RunResult:
    states: list
    trace: list
    warnings: list
    notes: list
    constraints: list
    global_batch: int

    @property
    def final(self) -> State:
        return self.states[-1]


def nest(flat: dict) -> dict:
    out: dict = {}
    for k, v in flat.items():
        node = out
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


def make_layout(job: Job, cur: Layout, settings: dict, gb: int) -> Layout:
    """The layout a set of changes gives: dp is what remains, ga follows from the global batch."""
    g = job.cluster.gpus
    tp, pp, cp = settings.get("tp", cur.tp), settings.get("pp", cur.pp), settings.get("cp", cur.cp)
    for k in ("tp", "pp", "cp", "vp", "ep", "mbs", "zero"):
        v = settings.get(k, getattr(cur, k))
        if isinstance(v, bool) or not float(v).is_integer():
            raise InputError(f"{k}={v} is not a whole number")
    tp, pp, cp = int(tp), int(pp), int(cp)
    if tp < 1 or pp < 1 or cp < 1 or g % (tp * pp * cp):
        raise InputError(f"tp x pp x cp = {tp}x{pp}x{cp} does not divide the {g} GPUs")
    dp = g // (tp * pp * cp)
    mbs = int(settings.get("mbs", cur.mbs))
    if mbs < 1 or gb % (mbs * dp):
        raise InputError(f"the global batch of {gb} sequences is not a multiple of mbs x dp = {mbs}x{dp}")
    sp = bool(settings.get("sp", cur.sp)) and tp > 1
    lay = Layout(tp=tp, pp=pp, vp=int(settings.get("vp", cur.vp)) if pp > 1 else 1, dp=dp, cp=cp,
                 ep=int(settings.get("ep", cur.ep)), zero=int(settings.get("zero", cur.zero)), sp=sp, mbs=mbs,
                 grad_accum=gb // (mbs * dp), recompute=str(settings.get("recompute", cur.recompute)))
    check_layout(job, lay)
    return lay


class Run:
    """One recommendation run; ``fire`` is called by the agenda (durable or reference)."""

    def __init__(self, job: Job, book: CompiledRulebook, start: Layout, gb: int, mbs_fixed: bool, rc_fixed: bool):
        self.job, self.book, self.gb = job, book, gb
        self.flags = (mbs_fixed, rc_fixed)
        self.states: list[State] = []
        self.trace: list[dict] = []
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self.constraints: list[tuple[str, object, object]] = []   # (kind, node, rule)
        self.seen: dict = {}
        self.fired_count = 0
        self._push(start)

    # --- states ---------------------------------------------------------------------
    def _key(self, lay: Layout):
        return tuple(sorted(lay.as_dict().items()))

    def _push(self, lay: Layout) -> dict:
        flat, mem, st = build_state(self.job, lay, self.gb, *self.flags)
        state = State(len(self.states), lay, flat, mem, st)
        self.states.append(state)
        self.seen[self._key(lay)] = state.index
        return self.fact(state)

    def fact(self, state: State) -> dict:
        look = state.facts.__getitem__
        d = nest(state.facts)
        d.update(derived_fields(self.book, look))
        d.update(kind="state", id=f"s{state.index}")
        return d

    @property
    def current(self) -> State:
        return self.states[-1]

    def holds(self, rule_index: int) -> bool:
        return bool(expr.evaluate(self.book.rules[rule_index].when, self.current.facts.__getitem__))

    # --- one firing -----------------------------------------------------------------
    def fire(self, rule_index: int, state_id: str) -> list[dict]:
        if state_id != f"s{self.current.index}" or not self.holds(rule_index):
            return []                                   # superseded by a newer state
        self.fired_count += 1
        rule = self.book.rules[rule_index]
        if self.fired_count > MAX_FIRINGS:
            raise RuleLoopError(f"rules fired more than {MAX_FIRINGS} times without settling; last: "
                                f"{rule.id} ({rule.where})")
        cur = self.current
        look = cur.facts.__getitem__
        settings, outcome, new_fact = {}, "applied", []
        added = False
        for a in rule.actions:
            if a.kind == "set":
                settings[a.setting] = expr.evaluate(a.node, look)
            elif a.kind in ("require", "forbid"):
                if not any(k == a.kind and n == a.node for k, n, _ in self.constraints):
                    self.constraints.append((a.kind, a.node, rule))
                    added = True
            elif a.kind == "warn":
                added |= self._add(self.warnings, expr.render(a.text, look))
            else:
                added |= self._add(self.notes, expr.render(a.text, look))
        if not settings and not added:
            return []           # fired again on a later state with nothing new to say: not repeated in the trace
        because = expr.render(rule.because, look)
        if settings:
            changed = {k: v for k, v in settings.items() if getattr(cur.layout, k) != v}
            if not changed:
                outcome = "no change"
            else:
                try:
                    lay = make_layout(self.job, cur.layout, settings, self.gb)
                    violated = self._violation(lay)
                    if violated:
                        outcome = f"refused: {violated}"
                    elif self._key(lay) in self.seen:
                        since = self.seen[self._key(lay)]
                        cycle = [t["rule"] for t in self.trace if t["state"] >= since and t["outcome"] == "applied"]
                        raise RuleLoopError(f"rules cycle back to an earlier layout ({lay.describe()}): "
                                            f"{' -> '.join(cycle + [rule.id])}")
                    else:
                        new_fact = [self._push(lay)]
                except RuleLoopError:
                    raise
                except InputError as e:
                    outcome = f"refused: {e}"
        self.trace.append({
            "seq": len(self.trace) + 1, "rule": rule.id, "title": rule.title, "file": rule.file, "line": rule.line,
            "priority": rule.priority, "state": cur.index,
            "read": {p: _round(look(p)) for p in sorted(rule.reads)},
            "set": {k: _round(v) for k, v in settings.items()}, "outcome": outcome, "because": because,
        })
        return new_fact

    def _violation(self, lay: Layout) -> Optional[str]:
        if not self.constraints:
            return None
        facts = LazyFacts(self.job, lay, self.gb, *self.flags)
        for kind, node, rule in self.constraints:
            ok = bool(expr.evaluate(node, facts.__getitem__))
            if (kind == "require" and not ok) or (kind == "forbid" and ok):
                return f"{kind} '{_text(rule, node)}' of rule {rule.id} ({rule.where})"
        return None

    @staticmethod
    def _add(lst: list, text: str) -> bool:
        if text in lst:
            return False
        lst.append(text)
        return True

    def result(self) -> RunResult:
        final = self.current
        for kind, node, rule in self.constraints:
            ok = bool(expr.evaluate(node, final.facts.__getitem__))
            if (kind == "require" and not ok) or (kind == "forbid" and ok):
                self._add(self.warnings, f"the final layout breaks {kind} '{_text(rule, node)}' of rule {rule.id}")
        return RunResult(self.states, self.trace, self.warnings, self.notes,
                         [{"kind": k, "expr": _text(r, n), "rule": r.id, "file": r.file, "line": r.line}
                          for k, n, r in self.constraints], self.gb)


def _text(rule, node) -> str:
    for a in rule.actions:
        if a.node is node:
            return a.expr_text
    return "?"


def _round(v):
    return round(v, 4) if isinstance(v, float) else v


# --- agendas ----------------------------------------------------------------------------

def reference_agenda(run: Run) -> None:
    """Plain-Python semantics of a run, the oracle of the differential test: on the current
    state, the rule of highest priority (then file order) that holds and has not fired on it."""
    fired: set[int] = set()
    state = run.current.index
    while True:
        cands = [i for i in range(len(run.book.rules)) if i not in fired and run.holds(i)]
        if not cands:
            return
        i = min(cands, key=lambda k: (-run.book.rules[k].priority, k))
        run.fire(i, f"s{state}")
        if run.current.index != state:
            state, fired = run.current.index, set()
        else:
            fired.add(i)


def durable_agenda(ruleset) -> Callable[[Run], None]:
    def agenda(run: Run) -> None:
        def on_fire(rname: str, fact: dict) -> list[dict]:
            if rname == "__sink__":
                return []
            return run.fire(int(rname[1:]), fact["id"])
        ruleset.run([run.fact(run.current)], on_fire)
    return agenda
