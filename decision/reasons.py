"""Reasons that are true by construction: for each setting, the rules that bear on it and the
fastest layout with each other value, all read from the one Decision.

Texts are rendered on facts that never changed during the run and on the answer itself, so no
text can quote an intermediate layout. Alternatives are structured (value, layout, tokens/s,
delta, what rules it out), never prose about a layout that is not the answer.
"""
from __future__ import annotations

import numpy as np

from shardwise.kb.fact_schema import SETTINGS
from shardwise.kb.choices import RECOMPUTE_COST_RANK
from shardwise.kb.layout import RECOMPUTE
from shardwise.rules import expr
from shardwise.search.choice import order_by

from .run import Decision, UserPin
from .text import pct_value, slower

_FIELD = {"recompute": "rc"}
_LAYOUT_PATH = {s: f"layout.{s}" for s in SETTINGS}


def _reads(node, setting: str) -> bool:
    """A rule bears on a setting when its expression reads it, or reads an estimate (memory and
    speed depend on every setting)."""
    paths = expr.paths(node)
    return _LAYOUT_PATH[setting] in paths or any(p.startswith(("memory.", "metrics.")) for p in paths)


def reasons(d: Decision, setting: str) -> list[dict]:
    """The rules that bear on ``setting``: pins of it, and constraints and preferences whose
    expression reads it, each honoured or broken by the answer."""
    out = []
    src = d.pin_sources.get(setting)
    if isinstance(src, UserPin):
        out.append({"rule": f"job.{setting}", "title": "fixed by the job", "file": "job", "line": None, "kind": "pin",
                    "status": "pinned", "what": src.flag, "text": f"the job fixed it ({src.flag})", "direct": True})
    elif src is not None:
        out.append(dict(_entry(d, src, "pin", "pinned", f"pin {setting} = {d.pins[setting]}"), direct=True))
    col, value = _ordered(d, setting)
    near, other = _near(d, setting, col != value)
    mine = col == value
    below, above = _next_values(col, value, other, below=True), _next_values(col, value, other, below=False)
    better = _beats_the_headline(d) & (col != value)
    for k, c in enumerate(d.constraints):
        if _reads(c.node, setting):
            # costly: alone it rules out a layout with another value of this setting that the
            # choice would have taken (forbidding ZeRO-3 where ZeRO-3 is 10% faster explains
            # ZeRO 1, though ZeRO 3 is not the next value up)
            costly = bool(_ruled_out_alone(d, k, better).any())
            # binding: it rules out a layout with the next value of this setting up or down (a
            # cap on TP at the node size explains TP 8, not TP 1), or it is costly
            out.append(dict(_entry(d, c.rule, "hard", "honoured", f"{c.kind} '{c.text}'"),
                            direct=_LAYOUT_PATH[setting] in expr.paths(c.node),
                            binding=costly or bool(((below | above) & ~d.masks[k]).any()), costly=costly))
    for p, mask in zip(d.preferences, d.broken):
        if _reads(p.node, setting):
            status = "broken" if bool(mask[d.index]) else "honoured"
            # binding (the rest of the layout as near the answer as it goes): an honoured rule
            # when every layout with the next value of this setting, up or down, would break it
            # -- a rule about 512 ranks explains nothing on 64 GPUs, nor sequence parallelism
            # TP 1 (TP 2 may take SP on); a broken one when some other value would honour it and
            # no near layout with this value does (interleaving, not PP, breaks the chunk rule)
            differs = mask != mask[d.index]
            direct = _LAYOUT_PATH[setting] in expr.paths(p.node)
            if status == "broken":
                binding = bool((other & differs).any()) and not bool((near & mine & differs).any())
                # a rule on this setting itself binds too where honouring it takes another value:
                # an allowed layout honours it and none with this value does, near or not (pp=1 at
                # another mbs, where no near pp=1 divides the batch). Not where this value honours
                # it elsewhere: dp.zero3-at-scale reads CP, but dp x cp stays at its TP and PP
                binding |= direct and bool((d.allowed & differs).any()) and not bool((d.allowed & mine & differs).any())
                costly = False
            else:
                # costly, as a hard rule's: without its worth the choice would have taken a layout
                # with another value of this setting (a house preference against ZeRO-3 that the
                # 3.7% faster ZeRO-3 layout breaks explains ZeRO 1)
                # -- and only a faster layout: where the headline is faster than every such layout
                # (Llama 3 8B on 8 H100s: the fastest allowed, ZeRO 2, breaking memory.headroom),
                # honouring the rule cost no speed, and 'with zero=3: -1.1%' read as its price
                faster = d.table.tokens_per_s > d.table.tokens_per_s[d.index]
                costly = bool((d.allowed & (col != value) & mask & faster & (_score_without(d, p.worth, mask)
                                                                             > d.choice.objective[d.index])).any())
                binding = costly or any(side.any() and bool(differs[side].all()) for side in (below, above))
            out.append(dict(_entry(d, p.rule, "soft", status, f"{p.kind} '{p.text}' (worth {p.worth:g}%)"),
                            direct=direct, binding=binding, costly=costly))
    return out


def _score_without(d: Decision, worth: float, mask: np.ndarray) -> np.ndarray:
    """Each layout's objective (search/choice.py) were one preference, of ``worth`` percent,
    broken by ``mask``, not in the rules."""
    c = d.choice
    return d.table.tokens_per_s * np.clip(1 - (c.penalty - worth / 100 * mask), 0, None)


def without_costly(d: Decision, setting: str) -> list[dict]:
    """For each hard rule that alone rules out a layout the choice would have taken with
    another value of ``setting``: that layout (the best such by the objective) and its speed --
    what dropping the rule would change, judged on the same scored table and preferences."""
    col, value = _ordered(d, setting)
    better = _beats_the_headline(d) & (col != value)
    raw = d.choice.score
    head = float(d.table.tokens_per_s[d.index])
    out = []
    for k, c in enumerate(d.constraints):
        if _LAYOUT_PATH[setting] not in expr.paths(c.node):
            continue
        pool = _ruled_out_alone(d, k, better)
        if pool.any():
            i = int(order_by(d.table, raw, pool)[0])
            lay = d.table.layout(i)
            out.append({"rule": c.rule.id, "where": c.rule.where, "what": f"{c.kind} '{c.text}'",
                        "value": _shown(setting, _mine_of(lay, setting)), "layout": lay.describe(),
                        "delta_pct": pct_value(100 * (float(d.table.tokens_per_s[i]) / head - 1))})
    return out


def _mine_of(lay, setting: str):
    return RECOMPUTE.index(lay.recompute) if setting == "recompute" else int(getattr(lay, setting))


def _beats_the_headline(d: Decision) -> np.ndarray:
    """Layouts whose objective, the hard rules aside, is above the headline's (search/choice.py:
    tokens/s x (1 - the worths broken))."""
    c = d.choice
    return c.score > c.objective[c.index]


def _ruled_out_alone(d: Decision, k: int, among: np.ndarray) -> np.ndarray:
    """Of ``among``, the layouts the k-th hard constraint rules out and every other allows."""
    return among & ~d.masks[k] & _allowed_but(d, k)


def _allowed_but(d: Decision, k: int) -> np.ndarray:
    """Layouts that every hard constraint but the k-th allows."""
    ok = np.ones(len(d.table), dtype=bool)
    for j, m in enumerate(d.masks):
        if j != k:
            ok &= m
    return ok


def _mine(d: Decision, setting: str):
    return _mine_of(d.layout, setting)


def _ordered(d: Decision, setting: str) -> tuple[np.ndarray, int]:
    """The setting's value in every layout of the table and in the answer, recomputation by
    its cost (the next value of 'modules' is 'full' above and 'selective' below)."""
    col = d.table.array(_FIELD.get(setting, setting))
    if setting == "recompute":
        return np.array(RECOMPUTE_COST_RANK)[col], RECOMPUTE_COST_RANK[RECOMPUTE.index(d.layout.recompute)]
    return col, _mine(d, setting)


def _near(d: Decision, setting: str, differ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(near, other): the layouts as near the answer as ``setting`` lets them be -- the same in
    every other setting and HSDP group but DP (which the GPU count ties to the rest) and those
    ``setting`` constrains -- and of those, the ones that ``differ`` in it (where none does:
    every layout that differs)."""
    t = d.table
    near = t.array("shard") == d.layout.shard
    for s in SETTINGS:
        if s not in (setting, "dp") + _COUPLED.get(setting, ()):
            near &= t.array(_FIELD.get(s, s)) == _mine(d, s)
    return (near, near & differ) if (near & differ).any() else (near, differ)


def _next_values(col: np.ndarray, value, other: np.ndarray, below: bool) -> np.ndarray:
    """The ``other`` layouts whose value in ``col`` is the next one below (or above) ``value``;
    where none of them has one on that side (TP 16 at DP 1 needs other GPUs), the layouts with
    the next value there among all."""
    for pool in (other, col != value):
        side = col[pool]
        side = side[side < value] if below else side[side > value]
        if len(side):
            return pool & (col == (side.max() if below else side.min()))
    return np.zeros(len(col), dtype=bool)


# settings that cannot keep their value when this one changes: interleaving needs PP > 1,
# sequence parallelism TP > 1
_COUPLED = {"pp": ("vp",), "tp": ("sp",)}


def _entry(d: Decision, rule, kind: str, status: str, what: str = "") -> dict:
    return {"rule": rule.id, "title": rule.title, "file": rule.file, "line": rule.line, "kind": kind,
            "status": status, "what": what, "text": " ".join(d.render(rule.because).split())}


def _ruled_out(d: Decision, i: int, head_tps: float) -> str:
    """Why layout i (the best with its value) is not the answer."""
    t = d.table
    if not d.allowed[i]:
        out = []
        for k in d.broken_at(i):
            c = d.constraints[k]
            if any(p.startswith("memory.") for p in expr.paths(c.node)):
                out.append(f"memory: {float(t.peak_gib[i]):.1f} GiB of {t.capacity:.1f} breaks {c.rule.id} "
                           f"({c.kind} '{c.text}')")
            else:
                out.append(f"{c.rule.id} ({c.kind} '{c.text}')")
        return "; ".join(out)
    delta = 100 * (float(t.tokens_per_s[i]) / head_tps - 1)
    broke = [p for p, m in zip(d.preferences, d.broken) if m[i] and not m[d.index]]
    also = "; breaks " + ", ".join(f"{p.rule.id} (worth {p.worth:g}%)" for p in broke) if broke else ""
    if delta <= 0:
        return slower(delta) + also
    if not broke:               # faster, honours as much, yet not chosen: a tie broken by headroom or simplicity
        return "ties on the objective; the headline has more memory headroom or fewer moving parts"
    return "breaks " + ", ".join(f"{p.rule.id} (worth {p.worth:g}%)" for p in broke)


def alternatives(d: Decision, setting: str) -> list[dict]:
    """For every other value of ``setting``: the layout the choice would take with that value
    (the best by the objective among allowed ones), or, when no layout with it is allowed, the one
    nearest to allowed -- fewest hard constraints broken, then the lowest peak -- and what rules it out."""
    t = d.table
    col = t.array(_FIELD.get(setting, setting))
    mine = _mine(d, setting)
    head_tps = float(t.tokens_per_s[d.index])
    head_obj = float(d.choice.objective[d.index])
    # the objective's distance in percent of the headline's tokens/s: a difference, since the
    # headline's objective is 0 where its broken worths reach 100% (search/choice.py clips it)
    out = []
    values = sorted(set(np.unique(col).tolist()) - {mine})
    for v in values:
        has = col == v
        allowed = has & d.allowed
        if allowed.any():
            i = int(order_by(t, d.choice.objective, allowed)[0])
        else:
            i = _nearest_allowed(d, has)
        out.append({"value": _shown(setting, v), "layout": t.layout(i).describe(),
                    "tokens_per_s": round(float(t.tokens_per_s[i]), 1),
                    "delta_pct": pct_value(100 * (float(t.tokens_per_s[i]) / head_tps - 1)),
                    # by the objective the choice ranks on (tokens/s less the worths broken): which
                    # other value comes nearest to the headline, for the one-line why; None for a
                    # layout the hard rules do not allow (its objective is -inf)
                    "objective_delta_pct": (pct_value(100 * (float(d.choice.objective[i]) - head_obj) / head_tps)
                                            if d.allowed[i] else None),
                    # how near a layout the hard rules leave out comes to being allowed, for the
                    # one-line why where no other value is allowed: the hard rules it breaks, its peak
                    "hard_broken": len(d.broken_at(i)), "peak_gib": round(float(t.peak_gib[i]), 2),
                    "ruled_out_by": _ruled_out(d, i, head_tps)})
    for v, rule in t.space.blocked.get(setting, {}).items():
        out.append({"value": _shown(setting, v), "layout": None, "tokens_per_s": None, "delta_pct": None,
                    "objective_delta_pct": None, "ruled_out_by": f"validity: {rule}"})
    # in the setting's own order (vp 2, 3 ... 10, not as strings sort; recompute as RECOMPUTE
    # lists it), the values no layout has among the others; the sort is stable, so the priced
    # values keep their order and the one-line why its ties
    out.sort(key=lambda a: RECOMPUTE.index(a["value"]) if setting == "recompute" else a["value"])
    return out


def _nearest_allowed(d: Decision, mask: np.ndarray) -> int:
    """Of ``mask``'s layouts (none allowed), the one that breaks the fewest hard constraints; then,
    among those over a memory constraint, the smallest peak; then the fastest: what a person would
    try next with that value."""
    t = d.table
    idx = np.flatnonzero(mask)
    broken = np.zeros(len(idx), dtype=int)
    over = np.zeros(len(idx), dtype=bool)
    for c, m in zip(d.constraints, d.masks):
        bad = ~m[idx]
        broken += bad
        if any(p.startswith("memory.") for p in expr.paths(c.node)):
            over |= bad
    return int(idx[np.lexsort((-t.tokens_per_s[idx], np.where(over, t.peak_gib[idx], 0.0), broken))[0]])


def _shown(setting: str, v):
    if setting == "recompute":
        return RECOMPUTE[v] if isinstance(v, int) else v
    if setting == "sp":
        return bool(v)
    return v


def departures(d: Decision) -> list[dict]:
    """Where the fastest allowed layout was not taken: the preferences it breaks that the
    headline honours, each with its worth and what honouring them cost: ``cost_pct``, how much
    faster the fastest is, and ``given_up_pct``, the share of the fastest's throughput the headline
    gives up -- what a worth is weighed against (search/choice.py: tokens/s x (1 - worths)), so a
    worth of 10 is kept at 11.1% faster, which is 10% given up."""
    c = d.choice
    if c is None or c.fastest == c.index:
        return []
    t = d.table
    fast, head = float(t.tokens_per_s[c.fastest]), float(t.tokens_per_s[c.index])
    cost, given_up = 100 * (fast / head - 1), 100 * (1 - head / fast)
    return [{"rule": p.rule.id, "file": p.rule.file, "line": p.rule.line, "worth_pct": p.worth,
             "cost_pct": pct_value(cost), "given_up_pct": pct_value(given_up)}
            for p, m in zip(d.preferences, d.broken) if m[c.fastest] and not m[c.index]]


def kept_despite(d: Decision) -> list[dict]:
    """Preferences the headline breaks: the best layout honouring each, and how much slower it is."""
    out = []
    t = d.table
    head = float(t.tokens_per_s[d.index])
    for p, m in zip(d.preferences, d.broken):
        if not m[d.index]:
            continue
        ok = d.allowed & ~m
        if ok.any():
            i = int(order_by(t, d.choice.objective, ok)[0])
            loss = 100 * (1 - float(t.tokens_per_s[i]) / head)
            # what that layout gives up instead: the preferences it breaks that the headline keeps
            also = [q.rule.id for q, n in zip(d.preferences, d.broken) if n[i] and not n[d.index]]
            out.append({"rule": p.rule.id, "worth_pct": p.worth, "honoured_by": t.layout(i).describe(),
                        "slower_pct": pct_value(loss), "also_breaks": also})
        else:
            out.append({"rule": p.rule.id, "worth_pct": p.worth, "honoured_by": None, "slower_pct": None,
                        "also_breaks": []})
    return out
