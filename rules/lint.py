"""Static checks of rule files beyond what loading refuses: conditions that can never hold,
constraints and preferences that cannot change the answer, two pins of one setting that can
fire together with different values, two hard rules that can fire together and that no layout
meets at once, and preferences whose worths add up past 100%.

``lint_files`` checks exactly the files it is given. The playbook is context only: a file may
``disable`` or ``override`` a playbook rule by id, and a preference's worth counts with the
playbook's. A given file named like a playbook file (``tp.yaml``) stands in for that file, so
the shipped folder, one of its files, or an edited copy (``rules init``) lint as themselves.
"""
from __future__ import annotations

import math
from pathlib import Path

from shardwise.kb.errors import InputError
from shardwise.kb.fact_schema import GROUP_OF, VALUES

from . import expr
from .loader import Rule, SOFT, expand, read_rule_file

# The objective is tokens/s x (1 - worths broken), clipped at 0 (search/choice.py): past 100%
# in all, a layout breaking them scores 0 whatever its speed.
MAX_WORTH_SUM = 100.0
# Facts with a known finite set of values: a test excluding all of them can never hold (a test
# for any other value is refused at load, kb/fact_schema.VALUES).
DOMAINS = {path: set(values) for path, values in VALUES.items()}
# Numeric facts with a known range (kb/schema.py, kb/layout.py bounds): a comparison outside
# it can never hold. Counts and degrees are at least 1; ZeRO is a stage 0-3.
_COUNT = (1, math.inf)
RANGES = {"cluster.gpus": (1, 16384), "cluster.gpus_per_node": (1, 72), "cluster.nodes": _COUNT,
          "cluster.nvlink_domain": _COUNT, "cluster.gpu_memory_gib": (8, 320), "model.layers": _COUNT,
          "model.hidden": _COUNT, "model.heads": _COUNT, "model.kv_heads": _COUNT, "model.vocab": _COUNT,
          "model.experts": (0, math.inf), "train.seq_len": (1, 2 ** 24), "train.global_batch": _COUNT,
          **{f"layout.{k}": _COUNT for k in ("tp", "pp", "vp", "dp", "cp", "ep", "mbs")}, "layout.zero": (0, 3)}
# Groups whose facts differ from layout to layout (a constraint or preference that reads none
# of them treats every layout alike).
PER_LAYOUT = {"layout", "estimate", "neighbour"}


def _conjuncts(node) -> list:
    return _conjuncts(node.args[0]) + _conjuncts(node.args[1]) if node.op == "and" else [node]


def _flip(op: str) -> str:
    return {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)


def _needs(node, acc: dict) -> str | None:
    """Collect what the top-level 'and' atoms of ``node`` demand of each fact (numeric bounds,
    one exact value, excluded values); return the first contradiction found, or None."""
    for atom in _conjuncts(node):
        if atom.op == "bool" and atom.value is False:
            return "its condition is the constant false"
        path, op, v = None, None, None
        if atom.op == "path":
            path, op, v = atom.value, "==", True
        elif atom.op == "not" and atom.args[0].op == "path":
            path, op, v = atom.args[0].value, "==", False
        elif atom.op == "cmp":
            a, b = atom.args
            op = atom.value
            if a.op != "path" and b.op == "path":
                a, b, op = b, a, _flip(op)
            if a.op == "path" and b.op in ("num", "str", "bool"):
                path, v = a.value, b.value
        if path is None:
            continue
        if path in RANGES and isinstance(v, (int, float)) and not isinstance(v, bool) and \
                not _can_hold(op, v, *RANGES[path]):
            lo, hi = RANGES[path]
            return f"{path} {op} {v:g} never holds: {path} is " + (f"from {lo:g} to {hi:g}" if hi < math.inf
                                                                       else f"at least {lo:g}")
        n = acc.setdefault(path, {"lo": -math.inf, "hi": math.inf, "eq": None, "ne": set()})
        if op == "==":
            if n["eq"] is not None and n["eq"] != v:
                return f"it needs {path} == {v!r} and == {n['eq']!r} at once"
            n["eq"] = v
        elif op == "!=":
            n["ne"].add(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if op in (">", ">="):
                n["lo"] = max(n["lo"], v + (1e-9 if op == ">" else 0))
            else:
                n["hi"] = min(n["hi"], v - (1e-9 if op == "<" else 0))
        eq = n["eq"]
        if eq in n["ne"]:
            return f"it needs {path} == {eq!r} and != {eq!r} at once"
        if n["lo"] > n["hi"]:
            return f"it needs {path} above {n['lo']:g} and below {n['hi']:g} at once"
        if isinstance(eq, (int, float)) and not isinstance(eq, bool) and not n["lo"] <= eq <= n["hi"]:
            return f"it needs {path} == {eq:g} outside {n['lo']:g}..{n['hi']:g}"
        if path in DOMAINS and isinstance(eq, str) and eq not in DOMAINS[path]:
            return f"{path} is never {eq!r} (it is one of {', '.join(sorted(DOMAINS[path]))})"
        if path in DOMAINS and DOMAINS[path] <= n["ne"]:
            return f"it excludes every value of {path}"
    return None


def _can_hold(op: str, v: float, lo: float, hi: float) -> bool:
    """Whether ``x op v`` holds for some x in [lo, hi]."""
    return {"<": lo < v, "<=": lo <= v, ">": hi > v, ">=": hi >= v, "==": lo <= v <= hi}.get(op, True)


def impossible(node) -> str | None:
    """Why ``node`` can never be true (as far as its top-level 'and' atoms show), or None."""
    return _needs(node, {})


def never_fires(rule: Rule) -> str | None:
    return impossible(rule.when)


def _jointly_impossible(a, b) -> bool:
    acc: dict = {}
    return _needs(a, acc) is not None or _needs(b, acc) is not None


_NEVER_TRUE = {"require": "removes every layout (its expression can never hold: {why})",
               "forbid": "removes nothing (its expression can never hold: {why})",
               "avoid": "is never broken, so it never changes the answer (its expression can never hold: {why})",
               "prefer": "is broken by every layout, so it never changes the answer (its expression can never "
                         "hold: {why})"}


def _bans_the_job(r: Rule, a) -> bool:
    """``forbid: "true"`` under a 'when' that reads the job: a house policy that refuses such
    jobs outright ("no DeepSpeed above 256 GPUs"), not a layout test misplaced; the run answers
    NO LAYOUT naming the rule. (``require: "false"`` stays flagged as removing every layout.)"""
    return a.kind == "forbid" and a.node.op == "bool" and a.node.value is True and bool(expr.paths(r.when))


def check_rule(r: Rule) -> list[str]:
    """Problems of one rule on its own."""
    out = []
    why = never_fires(r)
    if why:
        out.append(f"{r.where}: rule {r.id} can never fire: {why}")
        return out
    for a in r.actions:
        if a.kind not in _NEVER_TRUE:
            continue
        at = f"{r.file}:{a.line or r.line}"
        why = impossible(a.node)
        if why:
            out.append(f"{at}: rule {r.id}: {a.kind} '{a.expr_text}' {_NEVER_TRUE[a.kind].format(why=why)}")
        elif _bans_the_job(r, a):
            continue                    # the 'when' picks the jobs; every layout of them is out
        elif not {GROUP_OF[p] for p in expr.paths(a.node)} & PER_LAYOUT:
            out.append(f"{at}: rule {r.id}: {a.kind} '{a.expr_text}' reads no layout, memory, metrics or "
                       "neighbour fact, so it treats every layout alike (all or none); put a job condition in "
                       "'when' and the layout condition here")
    return out


def _pin_values(r: Rule) -> dict:
    return {a.setting: a.expr_text for a in r.actions if a.kind == "pin"}


def check_pins(given: list[Rule], effective: list[Rule]) -> list[str]:
    """Two rules pinning one setting to different values whose conditions can hold together:
    a job where both fire is refused (decision/run.py)."""
    out = []
    for r in given:
        for s, v in _pin_values(r).items():
            for o in effective:
                if o is r or s not in _pin_values(o) or _pin_values(o)[s] == v:
                    continue
                if o in given and given.index(o) < given.index(r):
                    continue            # the pair was reported at the first of the two
                if _jointly_impossible(r.when, o.when):
                    continue
                out.append(f"{r.where}: rule {r.id} pins {s} = {v}, but {o.id} ({o.where}) pins {s} = "
                           f"{_pin_values(o)[s]}; a job where both fire is refused (give one of them a 'when' "
                           "that excludes the other)")
    return out


_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _demands(r: Rule) -> list[tuple[str, object]]:
    """What each hard action of ``r`` demands of a layout, as an expression whose top-level 'and'
    atoms _needs reads: a require's own, a forbid of one comparison negated, a constant pin as
    layout.<setting> == value (a forbid of anything else demands nothing _needs can read)."""
    out = []
    for a in r.actions:
        if a.kind == "require":
            out.append((f"require '{a.expr_text}'", a.node))
        elif a.kind == "forbid" and a.node.op == "cmp" and a.node.value in _NEGATED:
            out.append((f"forbid '{a.expr_text}'", expr.Node("cmp", a.node.args, _NEGATED[a.node.value])))
        elif a.kind == "pin" and a.node.op in ("num", "str", "bool"):
            out.append((f"pin {a.setting} = {a.expr_text}",
                        expr.Node("cmp", (expr.Node("path", (), f"layout.{a.setting}"), a.node), "==")))
    return out


def check_clashes(given: list[Rule], effective: list[Rule]) -> list[str]:
    """Two hard rules whose conditions can hold together and whose constraints no layout meets
    at once (require CP >= 2 beside forbid CP > 1): every job where both fire gets NO LAYOUT."""
    out = []
    for r in given:
        for o in effective:
            if o is r or o.kind != "hard" or (o in given and given.index(o) < given.index(r)):
                continue            # each pair once, at the first of the two
            if r.kind != "hard" or _jointly_impossible(r.when, o.when):
                continue
            for what, node in _demands(r):
                for other, onode in _demands(o):
                    if what.startswith("pin ") and other.startswith("pin "):
                        continue    # two pins: check_pins reports them (the job is refused, not NO LAYOUT)
                    if _jointly_impossible(node, onode):
                        out.append(f"{r.where}: rule {r.id} ({what}) and {o.id} ({o.where}: {other}) can fire "
                                   "together, and no layout meets both: every such job gets NO LAYOUT")
    return out


def check_worths(given: list[Rule], effective: list[Rule]) -> list[str]:
    prefs = [(a.worth, r) for r in effective for a in r.actions if a.kind in SOFT]
    total = sum(w for w, _ in prefs)
    mine = [(w, r) for w, r in prefs if r in given]
    if total <= MAX_WORTH_SUM or not mine:
        return []
    w, r = max(mine, key=lambda p: (p[0], -given.index(p[1])))
    return [f"{r.where}: rule {r.id}: worth {w:g} brings the preferences' worths to {total:g}% in all "
            f"(at most {MAX_WORTH_SUM:g}): a layout that breaks enough of them scores 0 whatever its speed; "
            "lower the worths"]


def lint(rules: list[Rule], given: list[Rule] | None = None) -> list[str]:
    """Problems of ``given`` (default: all of ``rules``), with ``rules`` the effective rulebook."""
    given = rules if given is None else given
    out = []
    for r in given:
        out += check_rule(r)
    out += check_pins(given, rules)
    out += check_clashes(given, rules)
    out += check_worths(given, rules)
    return out


def _expand(paths: list[str]) -> list[tuple[Path, str]]:
    return [f for p in paths for f in expand(p, flag="rules lint")]


def lint_files(paths: list[str], context: list[tuple[Path, str]]) -> tuple[list[Rule], list[str]]:
    """Lint exactly the files in ``paths`` (folders: their *.yaml), over ``context`` (the
    playbook's files: (path, shown name)). Returns the given files' rules and the problems,
    each 'file:line: ...'; a file that does not load is one problem and is skipped."""
    files = _expand(paths)
    names = {f.name for f, _ in files}
    base: dict[str, Rule] = {}
    for f, shown in context:
        if f.name not in names:
            for r in read_rule_file(f, shown)[0]:
                base[r.id] = r
    problems: list[str] = []
    given: list[Rule] = []
    mine: dict[str, Rule] = {}
    disabled: dict[str, str] = {}       # id -> where it was turned off
    for f, shown in files:
        try:
            rules, disable = read_rule_file(f, shown, problems)
        except InputError as e:
            problems.append(str(e))
            continue
        for d, line in disable:
            if d in mine:
                given.remove(mine.pop(d))
            elif d in base:
                del base[d]
            elif d in disabled:
                problems.append(f"{shown}:{line}: disable: rule {d!r} is disabled already, at {disabled[d]}; "
                                "name each rule once")
                continue
            else:
                problems.append(f"{shown}:{line}: disable: no earlier rule (in these files or the playbook) has id {d!r}")
                continue
            disabled[d] = f"{shown}:{line}"
        for r in rules:
            prev = mine.get(r.id) or base.get(r.id)
            if prev is not None and not r.override:
                problems.append(f"{r.where}: rule id {r.id!r} already used at {prev.where}; add 'override: true' "
                                "to replace it")
                continue
            if prev is None and r.override:
                problems.append(f"{r.where}: rule {r.id!r} says 'override: true', but no earlier rule (in these "
                                "files or the playbook) has that id; drop 'override' to add a new rule")
                continue
            if r.id in mine:
                given[given.index(mine[r.id])] = r
            else:
                given.append(r)
            mine[r.id] = r
            base.pop(r.id, None)
    effective = list(base.values()) + given
    return given, problems + lint(effective, given)
