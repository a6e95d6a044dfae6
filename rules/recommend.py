"""`shardwise recommend`: the playbook (and house policies) run over a job.

Rule files are loaded in a fixed order -- the playbook's concerns, then each --rules path in
the order given -- compiled once per distinct set of files, and run by durable_rules.
"""
from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

from shardwise.kb.errors import InputError
from shardwise.kb.facts import job_summary, layout_dict
from shardwise.kb.job import Job
from shardwise.kb.layout import Layout
from shardwise.kb.resolve import global_batch

from .compiler import CompiledRulebook, compile_rules
from .engine import Run, durable_agenda, reference_agenda
from .facts import tp_allowed, tp_max
from .loader import load_rulebook

PLAYBOOK = ["tp.yaml", "sp.yaml", "pp.yaml", "dp.yaml", "zero.yaml", "recompute.yaml", "batch.yaml", "cp.yaml", "ep.yaml",
            "warnings.yaml"]
_BOOKS: dict = {}
_RULESETS: dict = {}


def playbook_dir() -> Path:
    return Path(str(resources.files("shardwise.rules")))


def rule_files(extra: list[str]) -> tuple[list[Path], list[str]]:
    base = playbook_dir()
    paths = [base / f for f in PLAYBOOK] + [Path(e) for e in extra]
    shown = [f"rules/{f}" for f in PLAYBOOK] + list(extra)
    return paths, shown


def load_book(extra: list[str]) -> CompiledRulebook:
    paths, shown = rule_files(extra)
    key = tuple(shown) + tuple(_stamp(p) for p in paths)
    if key not in _BOOKS:
        _BOOKS[key] = compile_rules(load_rulebook(paths, shown))
    return _BOOKS[key]


def _stamp(p: Path):
    try:
        st = p.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def file_hashes(extra: list[str]) -> list[dict]:
    paths, shown = rule_files(extra)
    out = []
    for p, s in zip(paths, shown):
        files = sorted(p.glob("*.yaml")) if p.is_dir() else [p]
        for f in files:
            name = s if not p.is_dir() else f"{s.rstrip('/')}/{f.name}"
            out.append({"file": name, "sha256": hashlib.sha256(f.read_bytes()).hexdigest()})
    return out


def start_layout(job: Job, gb: int) -> Layout:
    """TP=PP=CP=1 and every GPU data-parallel -- unless the global batch cannot be split over
    that many replicas, then the smallest TP (then PP) that makes it divide."""
    t, g = job.training, job.cluster.gpus
    mbs = t.mbs or 1
    rc = t.recompute if t.recompute != "auto" else "none"
    for pp in range(1, job.model.layers + 1):
        for tp in range(1, tp_max(job) + 1):
            if g % (tp * pp):
                continue
            dp = g // (tp * pp)
            if not tp_allowed(job, tp) or gb % (mbs * dp):
                continue
            return Layout(tp=tp, pp=pp, dp=dp, mbs=mbs, grad_accum=gb // (mbs * dp), recompute=rc)
    raise InputError(f"a global batch of {gb} sequences (mbs {mbs}) cannot be split over {g} GPUs with any TP/PP; "
                     f"choose a global batch that is a multiple of {g // tp_max(job) * mbs}")


def _exports(job: Job, lay: Layout) -> dict:
    from shardwise.export import Target, export_all
    return export_all(Target(job, lay))


def _check_with_search(job: Job, res, constraints, lay: Layout, final, n: int):
    """Rank every valid layout and reconcile the rule pick with the best one (search/)."""
    from shardwise.search.rank import search
    from shardwise.search.reconcile import reconcile
    from shardwise.search.sizing import sizing

    found = search(job, res.global_batch, constraints)
    out = reconcile(found, lay, final.step.tokens_per_s, final.memory.fits, n)
    s = out["search"]
    if s["advice"]:
        res.warnings.append(s["advice"])
        res.trace.append({"seq": len(res.trace) + 1, "rule": "search.check", "title": "Rule pick checked against every layout",
                          "file": "search/reconcile.py", "line": None, "priority": None, "state": final.index,
                          "read": {"metrics.tokens_per_s": round(final.step.tokens_per_s, 1),
                                   "search.best_tokens_per_s": s["best"]["tokens_per_s"] if s["best"] else None},
                          "set": {}, "outcome": "advice", "because": s["advice"]})
    if s["best"] is not None or final.memory.fits:
        return out, found
    if found.margin_count() and found.policies:
        res.warnings.append(s["summary"])           # policies rule out what fits: more GPUs is not the answer
    else:
        size = sizing(job, constraints)
        s["sizing"] = size
        res.warnings.append(f"no layout fits {job.cluster.gpus} x {job.cluster.gpu.name}: {size['summary']}")
    return out, found


def run_rules(job: Job, extra: list[str], engine: str = "durable"):
    """Forward-chain the rule files over the job: (the run's result, its raw constraints,
    assumptions made)."""
    book = load_book(extra)
    gb, assumptions = global_batch(job, multiple=job.cluster.gpus * (job.training.mbs or 1))
    start = start_layout(job, gb)
    run = Run(job, book, start, gb, mbs_fixed=bool(job.training.mbs),
              rc_fixed=job.training.recompute != "auto")
    if engine == "durable":
        if book.digest not in _RULESETS:
            from .durable_adapter import Ruleset
            _RULESETS[book.digest] = Ruleset(book.durable, book.digest)
        durable_agenda(_RULESETS[book.digest])(run)
    else:
        reference_agenda(run)
    return run.result(), run.constraints, assumptions


def recommend(job: Job, extra_rules: list[str] | None = None, engine: str = "durable", alternatives: int = 5,
              lazy_exports: bool = False) -> dict:
    return recommend_with_run(job, extra_rules, engine, alternatives, lazy_exports)[0]


def recommend_with_run(job: Job, extra_rules: list[str] | None = None, engine: str = "durable",
                       alternatives: int = 5, lazy_exports: bool = False):
    """The recommendation, with the rules' run and the search behind it (for explain/report).
    With ``lazy_exports`` "exports" holds a function that builds them (cli/output.py calls it
    only for the formats that print them)."""
    extra = list(extra_rules or [])
    res, constraints, assumptions = run_rules(job, extra, engine)
    final = res.final
    lay = final.layout
    rationale = {}
    for t in res.trace:
        if t["outcome"] == "applied":
            for k, v in t["set"].items():
                rationale[k] = {"value": v, "rule": t["rule"], "file": t["file"], "line": t["line"], "because": t["because"]}
    if lay.zero >= 1 and lay.dp * lay.cp == 1 and "zero" in rationale:
        rationale["zero"]["because"] += (f" (set when DP was larger; with DP=1 in the final layout ZeRO-{lay.zero} "
                                         "shards nothing, and adding replicas later shards at once)")
    for k, v in (("dp", lay.dp), ("grad_accum", lay.grad_accum)):
        rationale[k] = {"value": v, "rule": None, "because":
                        (f"DP is what remains: {job.cluster.gpus} GPUs / (TP {lay.tp} x PP {lay.pp} x CP {lay.cp})"
                         if k == "dp" else
                         f"gradient accumulation reaches the global batch: {res.global_batch} = mbs {lay.mbs} x "
                         f"{lay.grad_accum} x DP {lay.dp}")}
    checked, found = _check_with_search(job, res, constraints, lay, final, alternatives)
    return {
        "job": job_summary(job),
        "layout": layout_dict(lay),
        "memory": final.memory.as_dict(),
        "metrics": final.step.metrics(job),
        "rationale": rationale,
        "trace": res.trace,
        "warnings": res.warnings,
        "notes": res.notes,
        "constraints": res.constraints,
        "alternatives": checked["alternatives"],
        "search": checked["search"],
        "exports": (lambda: _exports(job, lay)) if lazy_exports else _exports(job, lay),
        "assumptions": assumptions,
        "rule_files": file_hashes(extra),
        "states": len(res.states),
    }, res, found
