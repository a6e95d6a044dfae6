"""`explain --why SETTING`: the firings that chose it, what else was considered, what would change it.

The chain is read from the run's trace: every firing that set the setting (applied or
refused), each preceded by the firing that made the state it read. The alternatives come from
the search: for every other value of the setting, the fastest fitting layout with that value
and why it lost. The what-ifs rerun the rules on the job with one input changed and report
those that move the setting.
"""
from __future__ import annotations

import numpy as np

from shardwise.kb.errors import InputError
from shardwise.kb.job import Job
from shardwise.rules.recommend import run_rules
from shardwise.search.rank import search
from shardwise.search.space import RECOMPUTE

SETTINGS = ("tp", "pp", "vp", "dp", "cp", "ep", "zero", "sp", "mbs", "recompute")
_ARRAY = {"recompute": "rc"}


def unit(path: str) -> str:
    if path.endswith("_gib"):
        return " GiB"
    if path.endswith("_pct"):
        return " %"
    if path.endswith("tokens_per_s"):
        return " tokens/s"
    if path.endswith("_s"):
        return " s"
    return ""


def shown_value(v):
    """A fact's value as a person reads it: floats to two decimals (the trace keeps them whole)."""
    return f"{v:.2f}" if isinstance(v, float) else v


def chain(trace: list, setting: str) -> list:
    """Firings that set ``setting``, each after the applied firing that produced its state."""
    made_state = {}
    state = 0
    for t in trace:
        if t["outcome"] == "applied" and t["set"]:
            state += 1
            made_state[state] = t
    out, seen = [], set()
    for t in trace:
        if setting in t["set"]:
            prior = made_state.get(t["state"])
            for x in (prior, t):
                if x is not None and x["seq"] not in seen:
                    seen.add(x["seq"])
                    out.append(x)
    return sorted(out, key=lambda x: x["seq"])


def alternatives(found, lay, setting: str, pick_tps: float) -> list:
    a = found.space.arrays[_ARRAY.get(setting, setting)][found.order]
    mine = getattr(lay, setting)
    mine = RECOMPUTE.index(mine) if setting == "recompute" else int(mine)
    out = []
    for v in sorted(set(int(x) for x in np.unique(a)) - {mine}):
        i = int(found.order[int(np.argmax(a == v))])
        e = found.entry(i, int(np.argmax(a == v)) + 1, lay, pick_tps)
        e["value"] = RECOMPUTE[v] if setting == "recompute" else (bool(v) if setting == "sp" else v)
        out.append(e)
    return out


def variants(job: Job, rules: list) -> list[tuple[str, object]]:
    """The job with one input changed, each with the final layout the rules give it (or the
    rules' refusal, itself an answer)."""
    c, t = job.cluster, job.training
    jobs = [
        (f"memory per GPU were {c.gpu.memory_gib * 1.5:.0f} GiB",
         Job(job.model, c.model_copy(update={"gpu": c.gpu.model_copy(update={"memory_gib": c.gpu.memory_gib * 1.5})}), t)),
        (f"memory per GPU were {c.gpu.memory_gib * 0.6:.0f} GiB",
         Job(job.model, c.model_copy(update={"gpu": c.gpu.model_copy(update={"memory_gib": c.gpu.memory_gib * 0.6})}), t)),
        (f"the sequence were {t.seq_len * 2} tokens", Job(job.model, c, t.model_copy(update={"seq_len": t.seq_len * 2}))),
    ]
    if t.seq_len >= 256:
        jobs.append((f"the sequence were {t.seq_len // 2} tokens",
                     Job(job.model, c, t.model_copy(update={"seq_len": t.seq_len // 2}))))
    if c.gpus >= 2 * c.gpus_per_node or c.gpus < c.gpus_per_node:
        jobs.append((f"there were {c.gpus * 2} GPUs", Job(job.model, c.model_copy(update={"gpus": c.gpus * 2}), t)))
    out = []
    for text, variant in jobs:
        try:
            out.append((text, run_rules(variant, rules)[0].final.layout))
        except InputError as e:
            out.append((text, InputError(" ".join(str(e).split())[:120])))
    return out


def what_ifs(setting: str, current, tried: list[tuple[str, object]]) -> list[str]:
    """The variants that move ``setting`` away from ``current``."""
    out = []
    for text, lay in tried:
        if isinstance(lay, InputError):
            out.append(f"if {text}: the rules would refuse the job ({lay})")
        elif getattr(lay, setting) != current:
            out.append(f"{setting.upper()} would be {getattr(lay, setting)} instead of {current} if {text}")
    return out


def steps(trace: list, setting: str, job: Job, lay) -> list[dict]:
    """The chain as rows a person reads: rule, file:line, facts read with units, rationale."""
    rows = [{"seq": t["seq"], "rule": t["rule"], "where": f"{t['file']}:{t['line']}", "outcome": t["outcome"],
             "role": "set" if setting in t["set"] else "made the state the next firing read",
             "set": t["set"], "read": {k: f"{shown_value(v)}{unit(k)}" for k, v in t["read"].items()}, "because": t["because"]}
            for t in chain(trace, setting)]
    if setting == "dp":
        rows.append({"seq": None, "rule": None, "where": None, "outcome": "derived", "role": "set",
                     "set": {"dp": lay.dp}, "read": {},
                     "because": f"DP is what remains: {job.cluster.gpus} GPUs / (TP {lay.tp} x PP {lay.pp} x CP {lay.cp})"})
    return rows


def explain(job: Job, rules: list, setting: str) -> dict:
    res, constraints, _ = run_rules(job, rules)
    final = res.final
    lay = final.layout
    found = search(job, res.global_batch, constraints)
    current = getattr(lay, setting)
    return {"setting": setting, "value": current, "layout": lay.describe(), "chain": steps(res.trace, setting, job, lay),
            "alternatives": alternatives(found, lay.canonical(), setting, final.step.tokens_per_s),
            "would_change": what_ifs(setting, current, variants(job, rules)), "trace": res.trace}
