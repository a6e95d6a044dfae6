"""Load rule files (YAML) into checked Rule objects, with file:line for every rule.

A rule file is a list of rules, or a mapping with ``rules:`` and optionally ``disable:`` (ids
of earlier rules this file turns off). A rule:

    - id: pp.only-when-needed         # lower-case letters, digits, . _ -; unique
      title: Pipeline stages only when the layout's TP and CP do not fit without them
      priority: 500                   # 0-1000, higher fires first; ties: file order
      when: "cluster.nodes > 1"       # an expression (rules/expr.py) over job/feasibility facts
      then:                           # one or more actions: hard ones or soft ones, not both
        - require: "layout.tp <= cluster.nvlink_domain"   # hard: layouts that break it are out
        - forbid: "layout.pp > 8"
        - pin: {mbs: 4}               # hard: the setting takes this value
        - avoid: "layout.pp > 1 and same.pp1_fits"        # soft, judged per layout...
          worth: 5                    # ...giving up at most 5% of throughput to honour it
        - prefer: "layout.sp"
          worth: 1
        - warn: "text with {fact.path:.1f}"
        - note: "text"
      because: "the playbook sentence this rule encodes"
      override: true                  # replace an earlier rule with the same id

Strata (kb/fact_schema.py) are inferred and checked here: a rule with a hard action reads only
job facts in ``when`` (stratum 1); one with a preference may read feasibility facts too
(stratum 2); a rule whose ``when`` reads the answer's layout, memory or metrics may only warn or
note (stratum 3). Anything else is refused before anything runs, naming the file, the line and
what is allowed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


import yaml

from shardwise.kb.errors import InputError, refuse_empty_path
from shardwise.kb.user_yaml import UserYamlLoader, load_user_yaml

from shardwise.kb.fact_schema import FLOAT_PATHS, GROUP_OF, N, SCHEMA, VALUES
from shardwise.kb.layout import RECOMPUTE

from . import expr

RULE_KEYS = {"id", "title", "priority", "when", "then", "because", "override"}
ACTIONS = ("require", "forbid", "pin", "prefer", "avoid", "warn", "note")
HARD, SOFT = ("require", "forbid", "pin"), ("prefer", "avoid")
# Settings a pin may fix, with the type of value (dp is what remains, ga follows from the batch)
SETTINGS = {"tp": "num", "pp": "num", "vp": "num", "cp": "num", "ep": "num", "zero": "num", "sp": "bool",
            "mbs": "num", "recompute": "str", "offload": "num"}
MAX_WORTH = 100.0
# What each place in a rule may read (kb/fact_schema.py groups)
_PREDICATE = {"require": {"job", "layout", "estimate"}, "forbid": {"job", "layout", "estimate"},
              "prefer": {"job", "layout", "estimate", "feasibility", "neighbour"},
              "avoid": {"job", "layout", "estimate", "feasibility", "neighbour"}}
_ID = re.compile(r"[a-z0-9][a-z0-9_.-]{0,79}")
MAX_FILE_BYTES = 1_000_000
MAX_PIN = 16384          # no degree or micro-batch past the largest cluster (kb/schema.py: gpus <= 16384)
MAX_RULES = 400          # durable-rules: more distinct literals at one alpha node hang (reference P18)


def location(file: str, line: int) -> str:
    """Where a rule is written: file:line, or the file alone for the decision's own constraint,
    which has no line (decision/run.FITS_THE_GPU)."""
    return f"{file}:{line}" if line else file


@dataclass
class Action:
    kind: str
    setting: str = ""
    expr_text: str = ""
    node: object = None
    text: str = ""
    worth: float = 0.0
    line: int = 0


@dataclass
class Rule:
    id: str
    title: str
    priority: int
    when_text: str
    when: object
    actions: list[Action]
    because: str
    file: str
    line: int
    override: bool = False
    reads: set = field(default_factory=set)
    stratum: int = 1

    @property
    def where(self) -> str:
        return location(self.file, self.line)

    @property
    def kind(self) -> str:
        """hard, soft or info: what the rule adds."""
        kinds = {a.kind for a in self.actions}
        return "hard" if kinds & set(HARD) else "soft" if kinds & set(SOFT) else "info"

    def pins(self) -> set[str]:
        return {a.setting for a in self.actions if a.kind == "pin"}


def _fail(file: str, line: int, msg: str):
    raise InputError(f"{file}:{line}: {msg}")


class _Lines:
    """Keeps the line of every mapping (1-based) under the key '__line__', and, in the file's
    top-level mapping only, of each id its 'disable:' list names under '__disable_lines__' (a
    refusal of that id points at its line; a 'disable' elsewhere is refused by its own name)."""

    def construct_document(self, node):
        self._top = node
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        mapping = super().construct_mapping(node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        if node is getattr(self, "_top", None):
            for k, v in node.value:
                if k.value == "disable" and isinstance(v, yaml.SequenceNode):
                    mapping["__disable_lines__"] = [item.start_mark.line + 1 for item in v.value]
        return mapping


class _LineLoader(_Lines, UserYamlLoader):
    """A user's rule file: the loader that refuses aliases (kb/user_yaml.py)."""


class _ShippedLineLoader(_Lines, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The playbook shipped with shardwise: trusted data, read by libyaml's C parser (start-up
    pays for the rule files on every decision: benchmarks/speed.py)."""



def _shipped(path: Path) -> bool:
    """A file of the playbook shipped in this package (not a user's copy of it)."""
    return path.resolve().parent == Path(__file__).resolve().parent


def read_rule_file(path: Path, display: str | None = None,
                   problems: list[str] | None = None) -> tuple[list[Rule], list[tuple[str, int]]]:
    """Rules and the disabled ids of one file, each with its line. With a ``problems`` list, a rule that does not
    load is added to it and skipped, so that `rules lint` reports every bad rule of a file at
    once; a file that does not load at all still raises."""
    name = display or str(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)        # never more: /dev/zero is refused, not read whole
    except OSError as e:
        raise InputError(f"{name}: cannot read rule file ({e.strerror})")
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"{name}: rule file larger than {MAX_FILE_BYTES // 1000} kB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name}: rule file is not UTF-8 text")
    data = load_user_yaml(text, name, _ShippedLineLoader if _shipped(path) else _LineLoader)
    disable: list[str] = []
    if data is None:        # a house policy that says nothing is a file that lost its rules
        raise InputError(f"{name}: the rule file is empty; it holds a list of rules (or 'rules:' and 'disable:')")
    if isinstance(data, dict):
        line = data.pop("__line__", 1)
        lines = data.pop("__disable_lines__", [])
        extra = set(data) - {"rules", "disable"}
        if extra:
            # a policy test file saved in a rules folder is read as a rule file by --rules FOLDER
            tests = (" (a policy test file: run it with `shardwise rules test`, and keep it out of the folders "
                     "given to --rules, whose *.yaml files are all read as rule files)" if "cases" in extra else "")
            _fail(name, line, f"unknown top-level key(s) {sorted(map(str, extra))}; allowed: rules, disable{tests}")
        disable = data.get("disable") or []
        if not isinstance(disable, list) or not all(isinstance(d, str) for d in disable):
            _fail(name, line, "'disable' must be a list of rule ids")
        disable = list(zip(disable, lines))
        data = data.get("rules") or []
    if not isinstance(data, list):
        _fail(name, 1, "a rule file holds a list of rules (or 'rules:' and 'disable:')")
    if len(data) > MAX_RULES:
        _fail(name, 1, f"more than {MAX_RULES} rules in one file")
    if not data and not disable:    # 'rules:' with every rule commented out: the policy would silently vanish
        _fail(name, 1, "the rule file holds no rules (and disables none); it holds a list of rules (or 'rules:' "
                       "and 'disable:')")
    if problems is None:
        return [_rule(item, name) for item in data], disable
    rules = []
    for item in data:
        try:
            rules.append(_rule(item, name))
        except InputError as e:
            problems.append(str(e))
    return rules, disable


def _rule(item, file: str) -> Rule:
    if not isinstance(item, dict):
        _fail(file, 1, f"each rule must be a mapping with id, priority, when, then, because; got {type(item).__name__}")
    line = item.pop("__line__", 1)
    unknown = set(item) - RULE_KEYS
    if unknown:
        _fail(file, line, f"unknown key(s) {sorted(map(str, unknown))} in a rule; allowed: {', '.join(sorted(RULE_KEYS))}")
    for k in ("id", "priority", "then", "because"):
        if k not in item:
            _fail(file, line, f"rule is missing '{k}'")
    rid = item["id"]
    if not isinstance(rid, str) or not _ID.fullmatch(rid):
        _fail(file, line, f"id {rid!r} must be lower-case letters, digits, '.', '_' or '-' (at most 80)")
    prio = item["priority"]
    if isinstance(prio, bool) or not isinstance(prio, int) or not 0 <= prio <= 1000:
        _fail(file, line, f"rule {rid}: priority {prio!r} must be an integer from 0 to 1000")
    title = item.get("title", rid)
    if not isinstance(title, str) or not title.strip():
        _fail(file, line, f"rule {rid}: title must be text" + (", not blank (leave 'title' out to show the id)"
                                                               if isinstance(title, str) else ""))
    when_text = item.get("when", "true")
    when = _expr(when_text, "bool", file, line, rid, "when")
    then = item["then"]
    if isinstance(then, dict):
        then = [then]
    if not isinstance(then, list) or not then:
        _fail(file, line, f"rule {rid}: 'then' must be a list of actions ({', '.join(ACTIONS)})")
    actions = []
    for a in then:
        aline = a.pop("__line__", line) if isinstance(a, dict) else line
        actions += _action(a, file, aline, rid)
    because = item["because"]
    _template(because, file, line, rid)
    if not because.strip():     # explain, the trace and the graph give this as the rule's reason
        _fail(file, line, f"rule {rid}: 'because' is blank; it is the reason explain and the trace give for the rule")
    override = item.get("override", False)
    if not isinstance(override, bool):
        _fail(file, line, f"rule {rid}: override must be true or false")
    reads = expr.paths(when) | expr.template_paths(because)
    for a in actions:
        if a.node is not None:
            reads |= expr.paths(a.node)
        if a.text:
            reads |= expr.template_paths(a.text)
    stratum = _stratum(when, actions, file, line, rid)
    return Rule(rid, title, prio, str(when_text), when, actions, because, file, line, override, reads, stratum)


def _stratum(when, actions, file: str, line: int, rid: str) -> int:
    """1, 2 or 3 from what ``when`` reads and what the rule adds; refuses the mixes that would let
    a fact depend on itself."""
    groups = {GROUP_OF[p] for p in expr.paths(when)}
    kinds = {a.kind for a in actions}
    # a neighbour fact in 'when' is the answer's own neighbour: a fact about the answer (stratum 3)
    stratum = 3 if groups & {"layout", "estimate", "neighbour"} else 2 if "feasibility" in groups else 1
    if kinds & set(HARD) and stratum > 1:
        p = sorted(p for p in expr.paths(when) if GROUP_OF[p] != "job")[0]
        _fail(file, line, f"rule {rid}: a hard constraint ({'/'.join(sorted(kinds & set(HARD)))}) may depend only on "
                          f"job facts (model.*, cluster.*, train.*: stratum 1), but 'when' reads {p}; "
                          "feasibility comes from the search the constraints shape, and a layout's own facts belong "
                          "in the require/forbid expression. Use prefer/avoid with a worth for what depends on "
                          "feasibility")
    if kinds & set(HARD) and kinds & set(SOFT):
        # the constraints of a stratum-2 firing would never reach the search (decision/run.py)
        _fail(file, line, f"rule {rid}: a rule adds hard constraints (require/forbid/pin, stratum 1) or "
                          "preferences (prefer/avoid, stratum 2), not both; split it into two rules")
    if kinds & set(SOFT) and stratum > 2:
        p = sorted(p for p in expr.paths(when) if GROUP_OF[p] in ("layout", "estimate", "neighbour"))[0]
        _fail(file, line, f"rule {rid}: a preference's 'when' cannot read {p} (the answer it helps choose); "
                          "put the layout condition inside the prefer/avoid expression")
    return max(stratum, 2 if kinds & set(SOFT) else 1)


def _action(a, file: str, aline: int, rid: str) -> list[Action]:
    if not isinstance(a, dict) or not a:
        _fail(file, aline, f"rule {rid}: each action is one of {', '.join(ACTIONS)}, e.g. '- require: \"layout.tp <= 8\"'")
    kinds = [k for k in a if k in ACTIONS or k == "set"]
    extra = set(a) - set(kinds) - {"worth"}
    if len(kinds) > 1 and not extra:
        # two actions in one item ({require: .., forbid: ..}): each kind is allowed, the pairing is not
        _fail(file, aline, f"rule {rid}: one action per item, but this one has {' and '.join(map(repr, kinds))}; "
                           "write each as its own '- ' item under 'then'")
    if len(kinds) != 1 or extra:
        bad = sorted(map(str, extra)) or kinds
        _fail(file, aline, f"rule {rid}: unknown action {bad[0]!r}; allowed: {', '.join(ACTIONS)}"
                           + (" (prefer/avoid take a 'worth')" if "worth" in a else ""))
    kind = kinds[0]
    arg = a[kind]
    if kind == "set":
        _fail(file, aline, f"rule {rid}: 'set' is gone: rules no longer walk a layout step by step; use "
                           "'pin: {tp: 8}' (hard) or 'prefer: \"layout.tp == 8\"' with a worth (soft)")
    if ("worth" in a) != (kind in SOFT):
        _fail(file, aline, f"rule {rid}: " + (f"'{kind}' needs a worth: the percent of predicted throughput worth "
                                              "giving up to honour it, e.g. worth: 3" if kind in SOFT else
                                              f"'worth' belongs to prefer/avoid, not to '{kind}'"))
    if kind == "pin":
        if not isinstance(arg, dict) or not {k for k in arg if k != "__line__"}:
            _fail(file, aline, f"rule {rid}: 'pin' takes settings, e.g. pin: {{mbs: 4}}")
        arg.pop("__line__", None)
        out = []
        for setting, value in arg.items():
            if setting not in SETTINGS:
                _fail(file, aline, f"rule {rid}: cannot pin {setting!r}; settings: {', '.join(SETTINGS)} "
                                   "(dp is what remains, ga follows from the global batch)")
            if setting == "recompute" and isinstance(value, str) and re.fullmatch(r"[A-Za-z_]\w*", value) \
                    and value not in RECOMPUTE:
                _fail(file, aline, f"rule {rid}: pin recompute: {value!r} is not a mode; "
                                   f"modes: {', '.join(RECOMPUTE)}")
            text = _literal_text(value)
            node = _expr(text, SETTINGS[setting], file, aline, rid, f"pin {setting}")
            _only(node, {"job"}, file, aline, rid, f"pin {setting}")
            if not expr.paths(node):        # a constant: its value is known now, so is whether it can be pinned
                problem = pin_problem(setting, expr.evaluate(node, lambda p: None))
                if problem:
                    _fail(file, aline, f"rule {rid}: {problem}")
            out.append(Action("pin", setting, text, node, line=aline))
        return out
    if kind in ("require", "forbid", "prefer", "avoid"):
        node = _expr(arg, "bool", file, aline, rid, kind)
        _only(node, _PREDICATE[kind], file, aline, rid, kind)
        worth = 0.0
        if kind in SOFT:
            w = a["worth"]
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w <= MAX_WORTH:
                _fail(file, aline, f"rule {rid}: worth {w!r} must be a number of percent above 0 and at most "
                                   f"{MAX_WORTH:g}")
            worth = float(w)
        return [Action(kind, "", str(arg), node, worth=worth, line=aline)]
    if not isinstance(arg, str) or not arg.strip():     # a blank warning is printed as 'warning: '
        _fail(file, aline, f"rule {rid}: '{kind}' takes a text" + (", not a blank one" if isinstance(arg, str) else ""))
    _template(arg, file, aline, rid)
    return [Action(kind, text=arg, line=aline)]


def _only(node, groups: set, file: str, line: int, rid: str, where: str) -> None:
    for p in sorted(expr.paths(node)):
        if GROUP_OF[p] not in groups:
            _fail(file, line, f"rule {rid}: {where} reads {p} ({GROUP_OF[p]} fact); it may read "
                              f"{', '.join(sorted(groups))} facts (`shardwise rules facts` lists them)")


def pin_problem(setting: str, value) -> str | None:
    """Why ``value`` cannot be pinned for ``setting`` (None if it can). Degrees and the
    micro-batch are whole numbers of at least 1 (a degree of 0 divides by zero, a fraction would
    be truncated into another layout); ZeRO is a stage 0-3; sp true/false; recompute a mode."""
    if setting == "recompute":
        return None if value in RECOMPUTE else f"pin recompute = {value!r}: modes are {', '.join(RECOMPUTE)}"
    if setting == "sp":
        return None if isinstance(value, bool) else f"pin sp = {value!r}: sp takes true or false"
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()
    if setting == "zero":
        return None if ok and 0 <= value <= 3 else f"pin zero = {value!r}: ZeRO stages are 0, 1, 2, 3"
    if ok and 1 <= value <= MAX_PIN:
        return None
    return f"pin {setting} = {value!r}: {setting} takes a whole number from 1 to {MAX_PIN}"


def _literal_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # a bare word that is a recompute mode is a string literal, not a fact path
        return f"'{value}'" if value in RECOMPUTE else value
    raise InputError(f"a setting's value must be a number, true/false or an expression, got {type(value).__name__}")


# numeric facts that count something (kb/fact_schema: all but FLOAT_PATHS)
WHOLE = frozenset(p for p, t in SCHEMA.items() if t == N and p not in FLOAT_PATHS)


def _expr(text, want: str, file: str, line: int, rid: str, where: str):
    if isinstance(text, bool):
        text = "true" if text else "false"
    if isinstance(text, (int, float)):
        text = repr(text)
    if not isinstance(text, str):
        _fail(file, line, f"rule {rid}: '{where}' must be an expression (text)")
    try:
        node = expr.parse(text)
        got = expr.typecheck(node, SCHEMA, VALUES, WHOLE)
    except expr.ExprError as e:
        _fail(file, line, f"rule {rid}: {where}: {e}")
    except RecursionError:
        _fail(file, line, f"rule {rid}: {where}: expression nests too deeply")
    if got != want:
        _fail(file, line, f"rule {rid}: {where} must be a {expr._name(want)}, but {text!r} is a {expr._name(got)}")
    why = expr.undefined(node)
    if why:
        _fail(file, line, f"rule {rid}: {where} cannot be evaluated for any job: {why}")
    return node


def _template(text, file, line, rid):
    try:
        expr.check_template(text, SCHEMA)
    except expr.ExprError as e:
        _fail(file, line, f"rule {rid}: {e}")


def expand(path: str, shown: str | None = None, flag: str = "--rules") -> list[tuple[Path, str]]:
    """(file, shown name) of a rule file, or of a folder's *.yaml files in name order."""
    refuse_empty_path(path, flag, "a rule file or folder")
    p, shown = Path(path), shown or path
    if p.is_dir():
        files = [(f, f"{shown.rstrip('/')}/{f.name}") for f in sorted(p.glob("*.yaml"))]
        if not files:
            raise InputError(f"{flag}: folder '{shown}' holds no .yaml rule files")
        return files
    if p.exists():
        return [(p, shown)]
    raise InputError(f"{flag}: no such file or folder '{shown}'")


def load_rulebook(paths: list[Path], displays: list[str] | None = None, changes: list | None = None) -> list[Rule]:
    """Rules of several files (folders: their *.yaml, sorted), later files overriding earlier
    ones only where they say so. ``changes``, if given, receives what each override or disable
    did: {"rule", "change": "overridden" | "disabled", "by", "was"} (the trace shows them)."""
    rules: list[Rule] = []
    files: list[tuple[Path, str]] = []
    for i, p in enumerate(paths):
        files += expand(str(p), displays[i] if displays else str(p))
    by_id: dict[str, int] = {}
    disabled: dict[str, str] = {}       # id -> where it was turned off
    for f, disp in files:
        new, disable = read_rule_file(f, disp)
        for d, line in disable:
            if d not in by_id and d in disabled:    # the rule exists: naming it again is a slip, not a typo
                raise InputError(f"{disp}:{line}: disable: rule {d!r} is disabled already, at {disabled[d]}; "
                                 "name each rule once")
            if d not in by_id:
                raise InputError(f"{disp}:{line}: disable: no earlier rule has id {d!r}")
            disabled[d] = f"{disp}:{line}"
            if changes is not None:
                changes.append({"rule": d, "change": "disabled", "by": disp, "was": rules[by_id[d]].where})
            rules[by_id[d]] = None
            del by_id[d]
        for r in new:
            if r.id in by_id:
                if not r.override:
                    prev = rules[by_id[r.id]]
                    raise InputError(f"{r.where}: rule id {r.id!r} already used at {prev.where}; "
                                     "add 'override: true' to replace it")
                if changes is not None:
                    changes.append({"rule": r.id, "change": "overridden", "by": r.where,
                                    "was": rules[by_id[r.id]].where})
                rules[by_id[r.id]] = r
            elif r.override:        # a mistyped id would add a second rule and leave the one meant in force
                raise InputError(f"{r.where}: rule {r.id!r} says 'override: true', but no earlier rule has that id "
                                 "(`shardwise rules list` shows the ids); drop 'override' to add a new rule")
            else:
                by_id[r.id] = len(rules)
                rules.append(r)
    return [r for r in rules if r is not None]
