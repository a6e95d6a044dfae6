"""Load rule files (YAML) into checked Rule objects, with file:line for every rule.

A rule file is a list of rules, or a mapping with ``rules:`` and optionally ``disable:`` (ids
of earlier rules this file turns off). A rule:

    - id: tp.fit-in-node              # lower-case letters, digits, . _ -; unique
      title: Shard weights with TP inside one NVLink domain first
      priority: 900                   # 0-1000, higher fires first; ties: file order
      when: "not memory.fits and next.tp > layout.tp"     # an expression (rules/expr.py)
      then:                           # one or more actions
        - set: {tp: "next.tp"}        # tp pp vp cp ep zero sp mbs recompute
        - require: "layout.pp <= 8"   # constraints the layout (and the search) must keep
        - forbid: "layout.tp > 8"
        - warn: "text with {fact.path:.1f}"
        - note: "text"
      because: "{model.name} needs {memory.peak_gib:.1f} GiB per GPU at TP={layout.tp}"
      override: true                  # replace an earlier rule with the same id

Anything else is refused before anything runs, naming the file, the line and what is allowed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


from shardwise.kb.errors import InputError
from shardwise.kb.user_yaml import UserYamlLoader, load_user_yaml

from . import expr
from .facts import RECOMPUTE_VALUES, SCHEMA, SETTINGS

RULE_KEYS = {"id", "title", "priority", "when", "then", "because", "override"}
ACTIONS = ("set", "require", "forbid", "warn", "note")
_ID = re.compile(r"[a-z0-9][a-z0-9_.-]{0,79}")
MAX_FILE_BYTES = 1_000_000
MAX_RULES = 400          # durable-rules: more distinct literals at one alpha node hang (reference P18)


@dataclass
class Action:
    kind: str
    setting: str = ""
    expr_text: str = ""
    node: object = None
    text: str = ""


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

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def sets(self) -> set[str]:
        return {a.setting for a in self.actions if a.kind == "set"}


def _fail(file: str, line: int, msg: str):
    raise InputError(f"{file}:{line}: {msg}")


class _LineLoader(UserYamlLoader):
    """Keeps the line of every mapping (1-based) under the key '__line__'."""

    def construct_mapping(self, node, deep=False):
        mapping = super().construct_mapping(node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping


def read_rule_file(path: Path, display: str | None = None) -> tuple[list[Rule], list[str]]:
    """Rules and the disabled ids of one file."""
    name = display or str(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"{name}: cannot read rule file ({e.strerror})")
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"{name}: rule file larger than {MAX_FILE_BYTES // 1000} kB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name}: rule file is not UTF-8 text")
    data = load_user_yaml(text, name, _LineLoader)
    disable: list[str] = []
    if data is None:
        return [], []
    if isinstance(data, dict):
        line = data.pop("__line__", 1)
        extra = set(data) - {"rules", "disable"}
        if extra:
            _fail(name, line, f"unknown top-level key(s) {sorted(map(str, extra))}; allowed: rules, disable")
        disable = data.get("disable") or []
        if not isinstance(disable, list) or not all(isinstance(d, str) for d in disable):
            _fail(name, line, "'disable' must be a list of rule ids")
        data = data.get("rules") or []
    if not isinstance(data, list):
        _fail(name, 1, "a rule file holds a list of rules (or 'rules:' and 'disable:')")
    if len(data) > MAX_RULES:
        _fail(name, 1, f"more than {MAX_RULES} rules in one file")
    return [_rule(item, name) for item in data], disable


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
    if not isinstance(title, str):
        _fail(file, line, f"rule {rid}: title must be text")
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
        if not isinstance(a, dict) or len(a) != 1:
            _fail(file, aline, f"rule {rid}: each action is one of {', '.join(ACTIONS)}, e.g. '- set: {{tp: 8}}'")
        (kind, arg), = a.items()
        if kind not in ACTIONS:
            _fail(file, aline, f"rule {rid}: unknown action {kind!r}; allowed: {', '.join(ACTIONS)}")
        if kind == "set":
            if not isinstance(arg, dict) or not {k for k in arg if k != "__line__"}:
                _fail(file, aline, f"rule {rid}: 'set' takes settings, e.g. set: {{tp: \"next.tp\"}}")
            arg.pop("__line__", None)
            for setting, value in arg.items():
                if setting not in SETTINGS:
                    _fail(file, aline, f"rule {rid}: cannot set {setting!r}; settings: {', '.join(SETTINGS)} "
                                       "(dp is what remains, ga follows from the global batch)")
                text = _literal_text(value)
                node = _expr(text, SETTINGS[setting], file, aline, rid, f"set {setting}")
                if setting == "recompute" and node.op == "str" and node.value not in RECOMPUTE_VALUES:
                    _fail(file, aline, f"rule {rid}: recompute must be one of {', '.join(RECOMPUTE_VALUES)}")
                actions.append(Action("set", setting, text, node))
        elif kind in ("require", "forbid"):
            actions.append(Action(kind, "", str(arg), _expr(arg, "bool", file, aline, rid, kind)))
        else:
            if not isinstance(arg, str):
                _fail(file, aline, f"rule {rid}: '{kind}' takes a text")
            _template(arg, file, aline, rid)
            actions.append(Action(kind, text=arg))
    because = item["because"]
    _template(because, file, line, rid)
    override = item.get("override", False)
    if not isinstance(override, bool):
        _fail(file, line, f"rule {rid}: override must be true or false")
    reads = expr.paths(when) | expr.template_paths(because)
    for a in actions:
        if a.node is not None:
            reads |= expr.paths(a.node)
        if a.text:
            reads |= expr.template_paths(a.text)
    return Rule(rid, title, prio, str(when_text), when, actions, because, file, line, override, reads)


def _literal_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # a bare word that is a recompute mode is a string literal, not a fact path
        return f"'{value}'" if value in RECOMPUTE_VALUES else value
    raise InputError(f"a setting's value must be a number, true/false or an expression, got {type(value).__name__}")


def _expr(text, want: str, file: str, line: int, rid: str, where: str):
    if isinstance(text, bool):
        text = "true" if text else "false"
    if isinstance(text, (int, float)):
        text = repr(text)
    if not isinstance(text, str):
        _fail(file, line, f"rule {rid}: '{where}' must be an expression (text)")
    try:
        node = expr.parse(text)
        got = expr.typecheck(node, SCHEMA)
    except expr.ExprError as e:
        _fail(file, line, f"rule {rid}: {where}: {e}")
    except RecursionError:
        _fail(file, line, f"rule {rid}: {where}: expression nests too deeply")
    if got != want:
        _fail(file, line, f"rule {rid}: {where} must be a {expr._name(want)}, but {text!r} is a {expr._name(got)}")
    return node


def _template(text, file, line, rid):
    try:
        expr.check_template(text, SCHEMA)
    except expr.ExprError as e:
        _fail(file, line, f"rule {rid}: {e}")


def load_rulebook(paths: list[Path], displays: list[str] | None = None) -> list[Rule]:
    """Rules of several files (folders: their *.yaml, sorted), later files overriding earlier
    ones only where they say so."""
    rules: list[Rule] = []
    files: list[tuple[Path, str]] = []
    for i, p in enumerate(paths):
        disp = displays[i] if displays else str(p)
        if p.is_dir():
            files += [(f, f"{disp.rstrip('/')}/{f.name}") for f in sorted(p.glob("*.yaml"))]
        elif p.exists():
            files.append((p, disp))
        else:
            raise InputError(f"--rules: no such file or folder '{disp}'")
    by_id: dict[str, int] = {}
    for f, disp in files:
        new, disable = read_rule_file(f, disp)
        for d in disable:
            if d not in by_id:
                raise InputError(f"{disp}: disable: no earlier rule has id {d!r}")
            rules[by_id[d]] = None
            del by_id[d]
        for r in new:
            if r.id in by_id:
                if not r.override:
                    prev = rules[by_id[r.id]]
                    raise InputError(f"{r.where}: rule id {r.id!r} already used at {prev.where}; "
                                     "add 'override: true' to replace it")
                rules[by_id[r.id]] = r
            else:
                by_id[r.id] = len(rules)
                rules.append(r)
    return [r for r in rules if r is not None]
