"""The decision, run once: job -> constraints -> scored table -> feasibility -> preferences -> choice.

1. Job facts (kb/facts.job_facts); stratum 1 rules add hard constraints and pins (a user's
   --mbs / --recompute are pins too).
2. The search scores every valid layout under the pins, once (search/table.py); the hard
   constraints mark which layouts are allowed.
3. Feasibility facts are aggregates of that table (search/feasibility.py); stratum 2 rules read
   them and add preferences with a worth.
4. The headline maximises tokens/s x (1 - the worths it breaks) (search/choice.py).
5. Stratum 3 rules read the answer and warn or note.
Everything downstream -- the CLI, explain, the report, the exporters, `search` -- reads the one
Decision this returns; nothing re-runs rules or scores again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardwise.kb.errors import InputError
from shardwise.kb.facts import estimate_facts, job_facts, layout_facts
from shardwise.kb.job import Job
from shardwise.kb.layout import Layout
from shardwise.kb.memory import estimate_memory
from shardwise.kb.perf import step_time
from shardwise.kb.resolve import assumptions, global_batch
from shardwise.rules import expr, playbook
from shardwise.rules.constraints import Constraint, Preference, from_firings
from shardwise.rules.engine import Firing, run_stratum
from shardwise.rules.loader import Action, Rule, pin_problem
from shardwise.search.choice import Choice, choose
from shardwise.search.feasibility import Feasibility
from shardwise.search.table import Table, apply_constraints, scored_table


@dataclass
class UserPin:
    """A setting the job itself fixed (--mbs, --recompute): a pin, shown in the trace as the job's."""
    setting: str
    value: object
    flag: str


@dataclass
class Decision:
    job: Job
    global_batch: int
    assumptions: list
    book: playbook.Rulebook
    firings: list[Firing]
    constraints: list[Constraint]
    pins: dict                        # setting -> value
    pin_sources: dict                 # setting -> Rule or UserPin
    preferences: list[Preference]
    table: Table
    allowed: np.ndarray
    masks: list                       # per constraint: which layouts it allows
    feasibility: Feasibility
    broken: list[np.ndarray]          # per preference: which layouts break it
    choice: Choice | None
    layout: Layout | None = None
    memory: object = None
    step: object = None
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    nothing_allowed: str | None = None
    sizing: dict | None = None

    def broken_at(self, i: int) -> list[int]:
        """The constraints layout i breaks (indices into ``constraints``)."""
        return [k for k, m in enumerate(self.masks) if not m[i]]

    @property
    def index(self) -> int | None:
        return self.choice.index if self.choice else None

    def facts(self, path: str):
        """Any fact as the answer sees it: job, feasibility, and the headline's own layout,
        estimate and neighbour facts."""
        if path in self._answer:
            return self._answer[path]
        if path.startswith(("fit.", "best.")):
            return self.feasibility.fact(path)
        if path.startswith("same.") and self.index is not None:
            v = self.feasibility.column(path)[self.index]
            return v.item() if hasattr(v, "item") else v
        raise KeyError(path)

    _answer: dict = field(default_factory=dict)

    def render(self, text: str) -> str:
        return expr.render(text, self.facts)


def _user_pins(job: Job) -> list[UserPin]:
    t = job.training
    out = []
    if t.mbs:
        out.append(UserPin("mbs", t.mbs, f"--mbs {t.mbs}"))
    if t.recompute != "auto":
        out.append(UserPin("recompute", t.recompute, f"--recompute {t.recompute}"))
    return out


def _merge_pins(user: list[UserPin], from_rules: dict) -> tuple[dict, dict]:
    pins, sources = {}, {}
    for u in user:
        pins[u.setting], sources[u.setting] = u.value, u
    for setting, entries in from_rules.items():
        for value, rule in entries:
            problem = pin_problem(setting, value)
            if problem:
                raise InputError(f"rule {rule.id} ({rule.where}): {problem}, for this job")
            if setting in pins and pins[setting] != value:
                prev = sources[setting]
                by = prev.flag if isinstance(prev, UserPin) else f"rule {prev.id} ({prev.where})"
                raise InputError(f"rule {rule.id} ({rule.where}) pins {setting}={value}, but {by} pins "
                                 f"{setting}={pins[setting]}; a setting can be pinned to one value only")
            if setting not in pins:
                pins[setting], sources[setting] = value, rule
    return pins, sources


def _refuse_worths_past_100(book, table, allowed, prefs, broken, choice) -> None:
    """Where every layout the hard rules allow scores 0 (search/choice.py: their worths reach
    100%), nothing is left for speed to choose by (the headline would go by memory headroom
    alone): refused, as rules lint flags such worths (rules/lint.check_worths), naming the largest
    worth the fastest of them breaks (a house rule's first) and that layout."""
    if choice.speed_decides:
        return
    penalty = choice.penalty
    k = int(np.flatnonzero(allowed)[np.argmax(table.tokens_per_s[allowed])])
    hit = [p for p, b in zip(prefs, broken) if b[k]]
    top = max(hit, key=lambda p: (book.is_policy(p.rule), p.worth))
    raise InputError(f"rule {top.rule.id} ({top.rule.where}): every layout the rules allow breaks preferences worth "
                     f"100% or more together, so none scores above 0 and speed no longer chooses; the fastest, "
                     f"{table.describe_row(k)}, breaks {100 * float(penalty[k]):g}% ("
                     + ", ".join(f"{p.rule.id} {p.worth:g}%" for p in hit)
                     + "); lower the worths so that some layout keeps them under 100%")


def _stratum_facts(book: playbook.Rulebook, stratum: int, base: dict, lookup) -> dict:
    """The facts a stratum's conditions read: the job facts, plus what ``lookup`` answers."""
    facts = dict(base)
    for r in book.strata[stratum].rules:
        for p in expr.paths(r.when):
            if p not in facts:
                facts[p] = lookup(p)
    return facts


def _fits_the_gpu() -> Constraint:
    """The one hard constraint that is not a rule file's: a layout whose estimated peak passes
    the GPU's memory cannot run, whatever the rules say. The playbook's memory.fit-margin (95%)
    implies it; with that rule disabled, or a playbook copy without rules/memory.yaml, the
    decision adds it, so that no rule set makes such a layout the answer."""
    text = "memory.fits"
    node = expr.parse(text)
    rule = Rule(id="memory.fits-the-gpu", title="A layout must fit in the GPU's memory", priority=1000,
                when_text="true", when=expr.parse("true"), actions=[Action("require", expr_text=text, node=node)],
                because="a layout whose estimated peak passes the GPU's memory runs out of memory",
                file=playbook.BUILT_IN, line=0)
    return Constraint("require", node, text, rule)


FITS_THE_GPU = _fits_the_gpu()


def decide(job: Job, extra_rules: list[str] | None = None, playbook_dir: str | None = None,
           engine: str = "durable", progress=None, other_frameworks: bool = True,
           reuse_scores: bool = False) -> Decision:
    """The decision for a job. ``other_frameworks``: where nothing fits, whether the sizing also
    tries the frameworks the job did not choose (a search each; explain's what-ifs leave it out).
    ``reuse_scores``: take the scored table of a search just run for the same job on a GPU with
    other memory (search/table.scored_table; explain's memory what-ifs)."""
    book = playbook.load(extra_rules, playbook_dir)
    gb, _ = global_batch(job)
    jf = job_facts(job, gb)
    firings = run_stratum(book.strata[1], 1, jf, engine)
    constraints, rule_pins, _ = from_firings(firings)
    pins, sources = _merge_pins(_user_pins(job), rule_pins)

    table = scored_table(job, gb, pins, progress=progress, reuse=reuse_scores)
    table.facts = jf.__getitem__
    allowed, masks = apply_constraints(table, constraints)
    over_memory = allowed & (table.peak_gib > table.capacity)
    if over_memory.any():
        # in the trace too, as a stratum-1 firing, so that the graph and the report draw it
        constraints.append(FITS_THE_GPU)
        firings.append(Firing(len(firings) + 1, FITS_THE_GPU.rule, 1, {},
                              [{"kind": "require", "text": FITS_THE_GPU.text}]))
        allowed, masks = apply_constraints(table, constraints)
    feas = Feasibility(table, allowed)

    def lookup(path):
        if path in jf:
            return jf[path]
        if path.startswith("same."):
            return feas.column(path)
        return feas.fact(path)
    table.facts = lookup
    table._cache.clear()

    f2 = run_stratum(book.strata[2], 2, _stratum_facts(book, 2, jf, lookup), engine, len(firings) + 1)
    firings += f2
    _, _, prefs = from_firings(f2)
    broken = [p.broken(table.column, len(table), table.describe_row) for p in prefs]
    choice = choose(table, allowed, [(p.worth, b) for p, b in zip(prefs, broken)])
    if choice is not None:
        _refuse_worths_past_100(book, table, allowed, prefs, broken, choice)
    d = Decision(job, gb, assumptions(job), book, firings, constraints, pins, sources, prefs, table, allowed, masks,
                 feas, broken, choice)
    d._answer = dict(jf)
    if over_memory.any():
        d.warnings.append(f"the rules allow {int(over_memory.sum()):,} layouts whose estimated peak passes the "
                          f"{table.capacity:.1f} GiB of the GPU (no hard rule keeps memory.used_pct at or below "
                          f"100: the playbook's memory.fit-margin is disabled or missing); {FITS_THE_GPU.rule.id} "
                          "left them out, as they cannot run")
    if choice is None:
        return _nothing_allowed(d, other_frameworks, engine)
    lay = table.layout(choice.index)
    d.layout, d.memory, d.step = lay, estimate_memory(job, lay), step_time(job, lay)
    d._answer.update(layout_facts(lay))
    d._answer.update(estimate_facts(job, d.memory, d.step))
    f3 = run_stratum(book.strata[3], 3, _stratum_facts(book, 3, d._answer, d.facts), engine, len(firings) + 1)
    firings += f3
    _texts(d)
    return d


def _texts(d: Decision) -> None:
    """Warnings and notes of every firing, rendered on the answer's facts."""
    for f in d.firings:
        for a in f.rule.actions:
            if a.kind in ("warn", "note"):
                text = d.render(a.text)
                lst = d.warnings if a.kind == "warn" else d.notes
                if text not in lst:
                    lst.append(text)


def _rules_for(book: playbook.Rulebook, engine: str):
    """A job's hard constraints and pins as decide() finds them (stratum 1 on its own facts, the
    job's --mbs / --recompute first): for the sizing's changed jobs, so that a rule whose
    condition reads what a way changes binds it (search/sizing.fits_somewhere)."""
    def rules(job: Job):
        firings = run_stratum(book.strata[1], 1, job_facts(job, global_batch(job)[0]), engine)
        constraints, rule_pins, _ = from_firings(firings)
        return constraints, _merge_pins(_user_pins(job), rule_pins)[0]
    return rules


def _nothing_allowed(d: Decision, other_frameworks: bool = True, engine: str = "durable") -> Decision:
    """No layout meets the hard constraints: name what is in the way (memory, or a house policy),
    and size a cluster where memory is the limit."""
    from shardwise.search.sizing import sizing, ways_clause
    t = d.table
    if not len(t):
        d.nothing_allowed = "no valid layout: " + "; ".join(
            f"{e['rule']} removed {e['excluded']:,}" for e in t.space.excluded if e["excluded"]) \
            if t.space.excluded else "no valid layout under the pins " + ", ".join(f"{k}={v}" for k, v in d.pins.items())
        near = _workable_batches(d)
        if near:
            d.nothing_allowed += (f"; the global batch of {d.global_batch:,} sequences is what leaves none "
                                  f"(batch-divides: mbs x DP must divide it): {' or '.join(f'{n:,}' for n in near)} "
                                  f"sequences would leave layouts (--global-batch)")
    else:
        memory_rules = {c.rule.id for c in d.constraints if not d.book.is_policy(c.rule)
                        and any(p.startswith("memory.") for p in expr.paths(c.node))}
        fits_memory = _fits_memory(d, memory_rules)
        if fits_memory.any():               # memory is not the limit: the other rules are
            fastest = int(np.flatnonzero(fits_memory)[np.argmax(t.tokens_per_s[fits_memory])])
            block = d.constraints[d.broken_at(fastest)[0]]
            clash = [d.constraints[k] for k in _clash(d, fits_memory, memory_rules)]
            # two policies that contradict each other are named together: the fastest layout breaks
            # only one of them, and dropping that one alone would still leave nothing
            why = (f"{clash[0].describe()} allows none of them" if len(clash) == 1 else
                   # of them: the clash is judged on the layouts that fit, and a layout that does not
                   # may well meet them all (tp 1, pp 1 and ZeRO 0 for a 70B model)
                   f"none of them meets {' and '.join(c.describe() for c in clash)} together")
            d.nothing_allowed = (f"{int(fits_memory.sum()):,} layouts fit in memory, but the rules allow none: {why}"
                                 + ("" if block in clash else f"; the fastest of them breaks {block.describe()}")
                                 + _pinned(d))
        else:
            margin = ", ".join(f"{c.rule.id}: {c.kind} '{c.text}'" for c in d.constraints if c.rule.id in memory_rules)
            d.nothing_allowed = (f"no layout fits in memory on {d.job.cluster.gpus} x {d.job.cluster.gpu.name} "
                                 # the share beside the GiB: 77.3 of 80.0 reads as fitting until the 95% is seen
                                 f"(the smallest peak is {float(t.peak_gib.min()):.1f} GiB of {t.capacity:.1f}, "
                                 f"{100 * float(t.peak_gib.min()) / t.capacity:.1f}%, "
                                 f"against {margin or 'the GPU memory itself'})")
            blockers = _pins_in_the_way(d)
            if blockers:
                d.nothing_allowed += (f"; {' and '.join(blockers)} {'is' if len(blockers) == 1 else 'are'} what is in "
                                      f"the way: without {'it' if len(blockers) == 1 else 'them'} a layout fits "
                                      + (f"on these {d.job.cluster.gpus} GPUs" if d.job.cluster.gpus > 1 else
                                         "on this GPU"))
            house = any(d.book.is_policy(c.rule) for c in d.constraints)
            d.sizing = sizing(d.job, d.constraints, d.pins, policies=house, other_frameworks=other_frameworks,
                              rules=_rules_for(d.book, engine))
            d.nothing_allowed += f"; {d.sizing['summary']}"
            if other_frameworks and not blockers:
                unpinned = _ways_without_pins(d, engine)
                if unpinned:
                    d.sizing["without_pins"] = unpinned
                    c = d.job.cluster
                    d.nothing_allowed += (f"; without {' and '.join(unpinned['without'])} it would also fit on "
                                          f"these {c.gpus} x {c.gpu.name} with {ways_clause(d.job, unpinned['ways'])}")
    d.warnings.append(d.nothing_allowed)
    return d


def _clash(d: Decision, fits_memory: np.ndarray, memory_rules: set) -> list[int]:
    """The hard constraints (indices) that together allow none of the layouts that fit in
    memory, none of them superfluous: a deletion filter over those that rule out any such
    layout, trying the playbook's first, so that a house policy in the clash stays named."""
    pool = [k for k, c in enumerate(d.constraints)
            if c.rule.id not in memory_rules and not d.masks[k][fits_memory].all()]
    keep = set(pool)
    for k in sorted(pool, key=lambda k: (d.book.is_policy(d.constraints[k].rule), k)):
        ok = fits_memory.copy()
        for j in keep - {k}:
            ok &= d.masks[j]
        if not ok.any():
            keep.discard(k)
    return sorted(keep)


def _pinned(d: Decision) -> str:
    """The pins the search held, and who pinned each: a pin narrows every layout scored, so a
    pin and a forbid of its value clash although only the forbid is broken."""
    if not d.pins:
        return ""
    def who(src):
        return src.flag if isinstance(src, UserPin) else f"{src.id}, {src.where}"
    return "; every layout scored holds the pins " + ", ".join(
        f"{k} = {v} ({who(d.pin_sources[k])})" for k, v in d.pins.items())


def _pins_in_the_way(d: Decision) -> list[str]:
    """Where nothing fits in memory: the job's own --mbs / --recompute (UserPin) without which
    some layout would fit on the same GPUs -- each alone first, then both -- as their flags,
    or [] when dropping them would not help (or the job set neither)."""
    from shardwise.search.sizing import fits_somewhere
    user = [p for p in d.pin_sources.values() if isinstance(p, UserPin)]
    for drop in [[p] for p in user] + ([user] if len(user) > 1 else []):
        rest = {k: v for k, v in d.pins.items() if k not in {p.setting for p in drop}}
        if fits_somewhere(d.job, d.constraints, rest):
            return [p.flag for p in drop]
    return []


def _ways_without_pins(d: Decision, engine: str) -> dict | None:
    """Where no pin alone is in the way (_pins_in_the_way): the ways to fit on the same GPUs
    (search/sizing.ways_by_kind: another framework, kernel, allocator, leaner recipe) that open
    only once the job's own --mbs and --recompute are dropped as well -- a full fine-tune pinned
    to a large micro-batch that LoRA at a smaller one would run, which the sizing under the pins
    sent to a bigger cluster. None where the job pinned neither or nothing new opens."""
    from shardwise.search.sizing import WAY_KEYS, ways_by_kind
    user = [p for p in d.pin_sources.values() if isinstance(p, UserPin)]
    if not user:
        return None
    job = Job(d.job.model, d.job.cluster, d.job.training.model_copy(update={"mbs": None, "recompute": "auto"}))
    pinned = {w for key in WAY_KEYS for w in d.sizing[key]}
    new = [w for kind in ways_by_kind(job, rules=_rules_for(d.book, engine)) for w in kind if w not in pinned]
    return {"without": [p.flag for p in user], "ways": new} if new else None


def _workable_batches(d: Decision) -> list[int]:
    """Where the batch-divides rule emptied the space: the nearest global batches below and above
    the job's that leave a valid layout (multiples of a data-parallel degree, tried nearest
    first), or [] when the batch is not what is in the way."""
    from shardwise.kb.job import divisors
    from shardwise.search.space import build_space
    removed = {e["rule"]: e["excluded"] for e in d.table.space.excluded}
    if not removed.get("batch-divides"):
        return []
    gb, g = d.global_batch, d.job.cluster.gpus
    unit = int(d.pins.get("mbs", 1))
    cands = sorted({k * unit * dp for dp in divisors(g) for k in (gb // (unit * dp), -(-gb // (unit * dp)))} - {0, gb},
                   key=lambda n: (abs(n - gb), n))
    below = next((n for n in cands if n < gb and len(build_space(d.job, n, d.pins, fit_only=True))), None)
    above = next((n for n in cands if n > gb and len(build_space(d.job, n, d.pins, fit_only=True))), None)
    return [n for n in (below, above) if n]


def _fits_memory(d: Decision, memory_rules: set) -> np.ndarray:
    """Layouts that fit in the GPU's memory and that every memory constraint allows (whatever
    the other constraints say)."""
    ok = d.table.peak_gib <= d.table.capacity
    for c in d.constraints:
        if c.rule.id in memory_rules:
            ok &= c.allows(d.table.column, len(d.table), d.table.describe_row)
    return ok
