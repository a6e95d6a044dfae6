"""The expression language of rule files: parsed and evaluated by this module, never by Python.

Grammar (lowest precedence first):
    expr    := or
    or      := and ('or' and)*
    and     := not ('and' not)*
    not     := 'not' not | cmp
    cmp     := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum | 'in' '[' literal (',' literal)* ']')?
    sum     := prod (('+' | '-') prod)*
    prod    := unary (('*' | '/' | '//' | '%') unary)*
    unary   := '-' unary | atom
    atom    := NUMBER | STRING | 'true' | 'false' | PATH | FUNC '(' expr (',' expr)* ')' | '(' expr ')'
A PATH is a dotted fact name such as ``memory.peak_gib`` (kb/fact_schema.py); FUNC is one of
FUNCTIONS. Types are checked before anything runs: numbers with numbers, strings only with
== / != / in, booleans only with and / or / not / == / !=. No attribute access, indexing,
names outside the fact schema, or calls outside FUNCTIONS exist in the language, so a rule
file cannot reach Python objects whatever it contains.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

MAX_LENGTH = 1000
MAX_DEPTH = 40
MAX_NUMBER = 1e18


class ExprError(ValueError):
    """An expression that does not parse, does not type-check or cannot be evaluated."""


def _pow2ceil(x: float) -> float:
    if x <= 1:
        return 1
    return float(2 ** math.ceil(math.log2(x)))


def _log2(x: float) -> float:
    if x <= 0:
        raise ExprError(f"log2 of {x}")
    return math.log2(x)


FUNCTIONS: dict[str, tuple[int, int, Callable]] = {
    # name: (min args, max args, implementation) -- all take and return numbers
    "min": (1, 8, min),
    "max": (1, 8, max),
    "abs": (1, 1, abs),
    "ceil": (1, 1, lambda x: float(math.ceil(x))),
    "floor": (1, 1, lambda x: float(math.floor(x))),
    "round": (1, 1, lambda x: float(round(x))),
    "log2": (1, 1, _log2),
    "pow2ceil": (1, 1, _pow2ceil),
}

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<str>'[^'\\\n]{0,200}'|"[^"\\\n]{0,200}")
  | (?P<op>==|!=|<=|>=|//|[-+*/%<>(),\[\]])
  | (?P<name>[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*)
""", re.VERBOSE)

KEYWORDS = {"and", "or", "not", "in", "true", "false"}


@dataclass(frozen=True)
class Node:
    op: str                 # num str bool path call neg not and or cmp arith in
    args: tuple = ()
    value: Any = None


def tokenize(text: str) -> list[tuple[str, str]]:
    if not isinstance(text, str):
        raise ExprError(f"an expression must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExprError(f"unexpected character {text[pos]!r} at column {pos + 1}{_instead(text, pos)}; "
                            f"operators: {OPERATORS}")
        pos = m.end()
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group()))
    return out


OPERATORS = "== != < <= > >= + - * / // % and or not in [..], 'text' in quotes"
# other languages' spellings of our operators, named where a rule writer uses them
_OTHER_SPELLINGS = {"=>": ">=", "=<": "<=", "&&": "and", "||": "or", "!": "not", "&": "and", "|": "or",
                    "=": "=="}


def _instead(text: str, pos: int) -> str:
    """' ('=>' is written '>=')' where the text at pos is another language's operator."""
    for other, ours in sorted(_OTHER_SPELLINGS.items(), key=lambda kv: -len(kv[0])):
        start = max(0, pos - len(other) + 1)
        for at in range(start, pos + 1):
            if text.startswith(other, at):
                return f" ({other!r} is written {ours!r})"
    return ""


class _Parser:
    def __init__(self, text: str):
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self, k: int = 0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("end", "")

    def take(self, value: str | None = None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise ExprError(f"expected {value!r}, found {tok[1] or 'end of expression'!r}")
        self.i += 1
        return tok

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"expression nests deeper than {MAX_DEPTH}")

    def parse(self) -> Node:
        node = self.or_()
        if self.peek()[0] != "end":
            raise ExprError(f"unexpected {self.peek()[1]!r} after a complete expression; operators: {OPERATORS}")
        return node

    def or_(self):
        self.enter()
        node = self.and_()
        while self.peek() == ("name", "or"):
            self.take()
            node = Node("or", (node, self.and_()))
        self.depth -= 1
        return node

    def and_(self):
        node = self.not_()
        while self.peek() == ("name", "and"):
            self.take()
            node = Node("and", (node, self.not_()))
        return node

    def not_(self):
        if self.peek() == ("name", "not"):
            self.take()
            self.enter()
            node = Node("not", (self.not_(),))
            self.depth -= 1
            return node
        return self.cmp()

    def cmp(self):
        left = self.sum_()
        tok = self.peek()
        if tok[0] == "op" and tok[1] in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return Node("cmp", (left, self.sum_()), tok[1])
        if tok == ("name", "in"):
            self.take()
            self.take("[")
            items = [self.literal()]
            while self.peek()[1] == ",":
                self.take()
                items.append(self.literal())
            self.take("]")
            return Node("in", (left,), tuple(items))
        return left

    def literal(self):
        node = self.unary()
        if node.op not in ("num", "str", "bool"):
            raise ExprError("a list after 'in' may hold only numbers, strings, true or false")
        return node.value

    def sum_(self):
        node = self.prod()
        while self.peek()[0] == "op" and self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            node = Node("arith", (node, self.prod()), op)
        return node

    def prod(self):
        node = self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in ("*", "/", "//", "%"):
            op = self.take()[1]
            node = Node("arith", (node, self.unary()), op)
        return node

    def unary(self):
        if self.peek() == ("op", "-"):
            self.take()
            self.enter()
            node = Node("neg", (self.unary(),))
            self.depth -= 1
            return node
        return self.atom()

    def atom(self):
        kind, text = self.take()
        if kind == "num":
            v = float(text)
            if not math.isfinite(v) or abs(v) > MAX_NUMBER:
                raise ExprError(f"number {text} is out of range (|x| <= {MAX_NUMBER:g})")
            return Node("num", value=int(v) if v.is_integer() and "." not in text and "e" not in text.lower() else v)
        if kind == "str":
            return Node("str", value=text[1:-1])
        if kind == "op" and text == "(":
            self.enter()
            node = self.or_()
            self.depth -= 1
            self.take(")")
            return node
        if kind == "name":
            if text in ("true", "false"):
                return Node("bool", value=text == "true")
            if text in KEYWORDS:
                raise ExprError(f"unexpected keyword {text!r}; {_values()}")
            if self.peek()[1] == "(":
                if text not in FUNCTIONS:
                    raise ExprError(f"unknown function {text!r}; allowed: {', '.join(sorted(FUNCTIONS))}")
                self.take("(")
                self.enter()
                args = [self.or_()]
                while self.peek()[1] == ",":
                    self.take()
                    args.append(self.or_())
                self.take(")")
                self.depth -= 1
                lo, hi, _ = FUNCTIONS[text]
                if not lo <= len(args) <= hi:
                    raise ExprError(f"{text}() takes {lo}{'' if lo == hi else f' to {hi}'} arguments, got {len(args)}")
                return Node("call", tuple(args), text)
            return Node("path", value=text)
        raise ExprError(f"unexpected {text or 'end of expression'!r}; {_values()}")


def _values() -> str:
    """What may stand where a value is expected: said where a rule puts something else there."""
    return ("expected a value: a number, 'text', true/false, a fact (`shardwise rules facts`), "
            f"a function ({', '.join(sorted(FUNCTIONS))}) or ( ... )")


def parse(text: str) -> Node:
    return _Parser(text).parse()


def paths(node: Node) -> set[str]:
    """Fact paths an expression reads."""
    if node.op == "path":
        return {node.value}
    out: set[str] = set()
    for a in node.args:
        out |= paths(a)
    return out


def _check_values(path_node: Node, literals, values: dict | None) -> None:
    """A string fact with a closed set of values (kb/fact_schema.VALUES) compared with a
    literal outside it can never match: refused, naming the allowed values."""
    if not values or path_node.op != "path" or path_node.value not in values:
        return
    allowed = values[path_node.value]
    for v in literals:
        if isinstance(v, str) and v not in allowed:
            raise ExprError(f"{path_node.value} is never {v!r}; it is one of {', '.join(allowed)}")


def _check_whole(path_node: Node, literals, whole) -> None:
    """A fact that counts something (a whole number) compared for equality with a fraction can
    never equal it ('layout.cp == 1.5', or 'in [1.5]'; '!=' always holds): refused."""
    if path_node.op != "path" or path_node.value not in whole:
        return
    for v in literals:
        if isinstance(v, float) and not isinstance(v, bool) and not v.is_integer():
            raise ExprError(f"{path_node.value} is a whole number, never {v:g}")


def typecheck(node: Node, schema: dict[str, str], values: dict | None = None, whole=frozenset()) -> str:
    """Return 'num', 'str' or 'bool'; raise ExprError naming the problem. ``schema`` maps each
    fact path to its type; ``values`` the string facts with a closed set of values to theirs;
    ``whole`` the numeric facts that are whole numbers."""
    op = node.op
    if op in ("num", "str", "bool"):
        return op
    if op == "path":
        if node.value not in schema:
            import difflib
            near = difflib.get_close_matches(node.value, list(schema), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(near)}?" if near else "; `shardwise rules facts` lists the facts"
            if "." not in node.value:       # every fact has a dot: a bare word is a value left unquoted
                hint = f"; a text value is written in quotes, '{node.value}'" + hint
            raise ExprError(f"unknown fact {node.value!r}{hint}")
        return schema[node.value]
    if op == "neg":
        if typecheck(node.args[0], schema, values, whole) != "num":
            raise ExprError("'-' needs a number")
        return "num"
    if op == "arith":
        for a in node.args:
            if typecheck(a, schema, values, whole) != "num":
                raise ExprError(f"'{node.value}' needs numbers on both sides")
        return "num"
    if op == "call":
        for a in node.args:
            if typecheck(a, schema, values, whole) != "num":
                raise ExprError(f"{node.value}() takes numbers")
        return "num"
    if op == "not":
        if typecheck(node.args[0], schema, values, whole) != "bool":
            raise ExprError("'not' needs a true/false value")
        return "bool"
    if op in ("and", "or"):
        for a in node.args:
            if typecheck(a, schema, values, whole) != "bool":
                raise ExprError(f"'{op}' needs true/false values on both sides")
        return "bool"
    if op == "cmp":
        lt, rt = typecheck(node.args[0], schema, values, whole), typecheck(node.args[1], schema, values, whole)
        if lt != rt:
            raise ExprError(f"cannot compare a {lt} with a {rt} ({_name(lt)} vs {_name(rt)})")
        if lt != "num" and node.value not in ("==", "!="):
            raise ExprError(f"'{node.value}' compares numbers only")
        a, b = node.args
        _check_values(a, [b.value] if b.op == "str" else [], values)
        _check_values(b, [a.value] if a.op == "str" else [], values)
        if node.value in ("==", "!="):
            _check_whole(a, [b.value] if b.op == "num" else [], whole)
            _check_whole(b, [a.value] if a.op == "num" else [], whole)
        return "bool"
    if op == "in":
        t = typecheck(node.args[0], schema, values, whole)
        for v in node.value:
            vt = "bool" if isinstance(v, bool) else "num" if isinstance(v, (int, float)) else "str"
            if vt != t:
                raise ExprError(f"'in' list holds a {_name(vt)} but the left side is a {_name(t)}")
        _check_values(node.args[0], node.value, values)
        _check_whole(node.args[0], node.value, whole)
        return "bool"
    raise ExprError(f"unknown node {op}")


def _name(t: str) -> str:
    return {"num": "number", "str": "string", "bool": "true/false"}[t]


def evaluate(node: Node, facts: Callable[[str], Any]) -> Any:
    """Evaluate a type-checked expression; ``facts(path)`` returns a fact's value."""
    op = node.op
    if op in ("num", "str", "bool"):
        return node.value
    if op == "path":
        return facts(node.value)
    if op == "neg":
        return -evaluate(node.args[0], facts)
    if op == "not":
        return not evaluate(node.args[0], facts)
    if op == "and":
        return bool(evaluate(node.args[0], facts)) and bool(evaluate(node.args[1], facts))
    if op == "or":
        return bool(evaluate(node.args[0], facts)) or bool(evaluate(node.args[1], facts))
    if op == "in":
        return evaluate(node.args[0], facts) in node.value
    if op == "call":
        args = [evaluate(a, facts) for a in node.args]
        return _finite(FUNCTIONS[node.value][2](*args))
    a, b = evaluate(node.args[0], facts), evaluate(node.args[1], facts)
    if op == "cmp":
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[node.value]
    if op == "arith":
        if node.value in ("/", "//", "%") and b == 0:
            raise ExprError(f"division by zero ({node.value})")
        r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
             "//": lambda: float(a // b), "%": lambda: a % b}[node.value]()
        return _finite(r)
    raise ExprError(f"unknown node {op}")


def evaluate_columns(node: Node, facts: Callable[[str], Any]):
    """Evaluate a type-checked expression where facts may be NumPy arrays (one value per layout
    of the search's table) or plain values (job and feasibility facts): the same language,
    element by element. Division by zero and out-of-range results give NaN, which no comparison
    holds for, instead of stopping the search."""
    import numpy as np
    op = node.op
    if op in ("num", "str", "bool"):
        return node.value
    if op == "path":
        return facts(node.value)
    if op == "neg":
        return -evaluate_columns(node.args[0], facts)
    if op == "not":
        return np.logical_not(evaluate_columns(node.args[0], facts))
    if op in ("and", "or"):
        f = np.logical_and if op == "and" else np.logical_or
        return f(evaluate_columns(node.args[0], facts), evaluate_columns(node.args[1], facts))
    if op == "in":
        return _compare(node, evaluate_columns(node.args[0], facts))
    if op == "call":
        args = [np.asarray(evaluate_columns(a, facts), dtype=float) for a in node.args]
        with np.errstate(all="ignore"):
            return _COLUMN_FUNCTIONS[node.value](*args)
    a, b = evaluate_columns(node.args[0], facts), evaluate_columns(node.args[1], facts)
    if op == "cmp":
        return _compare(node, a, b)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(all="ignore"):
        r = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "//": np.floor_divide,
             "%": np.mod}[node.value](a, b)
        return np.where(np.isfinite(r) & (np.abs(r) <= MAX_NUMBER), r, np.nan)


def _compare(node: Node, a, b=None):
    """A comparison ('cmp', of a and b) or an 'in' (of a) on evaluated operands, element by element."""
    import operator

    import numpy as np
    if node.op == "in":
        return np.isin(a, list(node.value))
    return {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}[node.value](a, b)


_BOOLEAN = ("cmp", "in", "and", "or", "not")


def judge_columns(node: Node, facts: Callable[[str], Any]):
    """A type-checked true/false expression over the table in one pass: its value, as
    evaluate_columns gives it, and where it has none (a mask, or False) -- a comparison or 'in'
    whose number is undefined there (evaluate_columns' NaN: a division by zero, log2 of a number
    not above 0, a result out of range). Kleene's logic for the connectives, so a guard works:
    'layout.pp > 1 and layout.dp / (layout.pp - 1) <= 100' is false, not undefined, where pp is 1."""
    import numpy as np
    op = node.op
    if op in ("cmp", "in"):
        sides, undefined = [], False
        for side in (node.args if op == "cmp" else node.args[:1]):
            if side.op in _BOOLEAN:              # '(x > 1) == false': the side's own undefined places
                v, u = judge_columns(side, facts)
            else:
                v = evaluate_columns(side, facts)
                u = np.isnan(v) if np.asarray(v).dtype.kind == "f" else False
            sides.append(v)
            undefined = undefined | u
        return _compare(node, *sides), undefined
    if op == "not":
        v, u = judge_columns(node.args[0], facts)
        return np.logical_not(v), u
    if op in ("and", "or"):
        (va, ua), (vb, ub) = judge_columns(node.args[0], facts), judge_columns(node.args[1], facts)
        value = (np.logical_and if op == "and" else np.logical_or)(va, vb)
        if not (np.any(ua) or np.any(ub)):
            return value, False
        va, vb = np.asarray(va, dtype=bool), np.asarray(vb, dtype=bool)
        # 'and' is false where either side is false and defined; 'or' true where either is true
        settled = (~ua & ~va) | (~ub & ~vb) if op == "and" else (~ua & va) | (~ub & vb)
        return value, (ua | ub) & ~settled
    return evaluate_columns(node, facts), False


def _column_functions() -> dict:
    import numpy as np

    def fold(f):
        def g(*xs):
            out = xs[0]
            for x in xs[1:]:
                out = f(out, x)
            return out
        return g
    return {"min": fold(np.minimum), "max": fold(np.maximum), "abs": np.abs, "ceil": np.ceil, "floor": np.floor,
            "round": np.round, "log2": lambda x: np.where(x > 0, np.log2(np.where(x > 0, x, 1)), np.nan),
            "pow2ceil": lambda x: np.where(x <= 1, 1.0, 2.0 ** np.ceil(np.log2(np.maximum(x, 1))))}


class _Lazy(dict):
    def __missing__(self, k):
        self.update(_column_functions())
        return self[k]


_COLUMN_FUNCTIONS = _Lazy()


def _finite(x):
    if isinstance(x, float) and (not math.isfinite(x) or abs(x) > MAX_NUMBER):
        raise ExprError(f"result {x} out of range")
    if isinstance(x, int) and abs(x) > MAX_NUMBER:
        raise ExprError("result out of range")
    return x


# {fact.path}, {fact.path:fmt}, and a count with its noun, {fact.path|noun} or {fact.path|noun|plural}:
# '1 GPU', '8 GPUs' (the plural is the noun + s unless given), so that a text reads right for one
# ("the 1 GPUs" was what '{cluster.nvlink_domain} GPUs' printed on a one-GPU node)
_NOUN = r"[A-Za-z](?:[A-Za-z -]{0,38}[A-Za-z])?"
_PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*)(?::([<>^]?\d{0,3}(?:\.\d{1,2})?[dfgs%]?))?"
                          rf"(?:\|({_NOUN})(?:\|({_NOUN}))?)?\}}")


def template_paths(text: str) -> set[str]:
    return {m.group(1) for m in _PLACEHOLDER.finditer(text)}


def check_template(text: str, schema: dict[str, str]) -> None:
    if not isinstance(text, str):
        raise ExprError("a 'because' text must be a string")
    if len(text) > 2000:
        raise ExprError("a 'because' text is limited to 2000 characters")
    for m in re.finditer(r"\{[^}]*\}?", text):
        if not _PLACEHOLDER.fullmatch(m.group()):
            raise ExprError(f"placeholder {m.group()!r} must be {{fact.path}}, {{fact.path:.1f}} or, for a count "
                            "and its noun, {fact.path|GPU} or {fact.path|batch|batches}")
    for m in _PLACEHOLDER.finditer(text):
        kind = typecheck(Node("path", value=m.group(1)), schema)
        if m.group(3) and kind != "num":
            raise ExprError(f"placeholder {m.group()!r}: {m.group(1)} is {'true or false' if kind == 'bool' else 'a ' + _name(kind)}, "
                            "not a count to give a noun; allowed: a number fact, e.g. {cluster.gpus|GPU}")
        if m.group(2) and _spec_misfit(m.group(2), kind):
            # render() would print the raw value in its place ({memory.used_pct:d} as 87.23456),
            # and only for the job that reached this text
            what = "true or false" if kind == "bool" else f"a {_name(kind)}"
            raise ExprError(f"placeholder {m.group()!r}: {m.group(1)} is {what}, which ':{m.group(2)}' does not "
                            "format; allowed: " + _SPECS[kind])


# what a placeholder's format may be for each fact type (render(): booleans print true/false)
_SPECS = {"num": "a width and .N digits with d, f, g or %, e.g. {memory.used_pct:.0f}",
          "str": "a width or s, e.g. {cluster.gpu:>10}", "bool": "none, {memory.fits}"}


def _spec_misfit(spec: str, kind: str) -> bool:
    """Whether a validated ``[<>^]width.precision type`` spec cannot format a fact of ``kind``."""
    numeric = "." in spec or spec[-1] in "dfg%"
    return (kind == "bool") or (kind == "num" and spec[-1] == "s") or (kind == "str" and numeric)


def render(text: str, facts: Callable[[str], Any]) -> str:
    """Fill {path}, {path:fmt} and {path|noun|plural} placeholders. Only a fact's value is
    formatted (with a validated numeric/string spec); the user text itself is never passed to
    str.format."""
    def sub(m):
        shown = value(m)
        if not m.group(3):
            return shown
        # the number as printed decides: a 0.96 shown as '1' reads '1 GPU'
        one = re.fullmatch(r"\s*1(?:\.0*)?\s*", shown)
        return f"{shown} {m.group(3) if one else m.group(4) or m.group(3) + 's'}"

    def value(m):
        v = facts(m.group(1))
        spec = m.group(2) or ""
        try:
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, float) and not spec:
                # four significant digits, but no exponent: a rate of 76328.1 tokens/s reads 76,328,
                # where :.4g printed 7.633e+04
                return f"{v:,.0f}" if abs(v) >= 1e3 else f"{v:.4g}"
            if isinstance(v, int) and not spec:
                # with thousands separators, as the rest of the answer writes numbers ('131,072
                # tokens', '30,858 layouts'): a rule's text read '131072' beside them
                return f"{v:,}"
            if isinstance(v, float) and spec.endswith("d"):      # a whole number asked of a float fact
                return format(round(v), spec)
            return format(v, spec)
        except (ValueError, TypeError):
            return str(v)
    return _PLACEHOLDER.sub(sub, text)


def undefined(node: Node) -> str | None:
    """Why no job can evaluate ``node`` (a division or remainder by a constant 0, log2 of a
    constant at or below 0, a constant part that is itself out of range), or None. Constraints
    and preferences are evaluated on whole columns, where such a part would silently give NaN
    (nothing allowed, or a preference never broken), so the loader refuses them up front."""
    for a in node.args:         # the innermost first: a constant is evaluated once its parts can be
        if isinstance(a, Node) and (why := undefined(a)):
            return why

    def const(n):
        return None if paths(n) else evaluate(n, lambda p: None)
    try:
        if node.op == "arith" and node.value in ("/", "//", "%") and const(node.args[1]) == 0:
            return f"it divides by zero ('{node.value} 0')"
        if node.op == "call" and node.value == "log2" and (c := const(node.args[0])) is not None and c <= 0:
            return f"it takes log2 of {c:g}"
        if not paths(node):
            const(node)
    except ExprError as e:
        return str(e)
    return None
