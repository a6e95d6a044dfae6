"""The Decision as the data every output prints (DESIGN.md, "Command line contract")."""
from __future__ import annotations

import numpy as np

from shardwise.kb import track_record
from shardwise.kb.facts import job_summary, layout_dict
from shardwise.kb.perf.step import time_and_cost
from shardwise.rules import playbook

from . import reasons as R
from .text import pct_value
from .run import Decision

ALTERNATIVES = 5


def trace(d: Decision) -> list[dict]:
    """Every firing: rule, file:line, stratum, the facts its condition read, what it added, why.
    The job's own pins come first, as the job's."""
    out = [{"seq": 0, "rule": f"job.{s}", "title": "fixed by the job", "file": "job", "line": None, "stratum": 1,
            "facts": {}, "added": [{"kind": "pin", "setting": s, "value": src.value, "text": src.flag}],
            "because": f"the job fixed it ({src.flag})"}
           for s, src in d.pin_sources.items() if isinstance(src, R.UserPin)]
    out += [{"seq": 0, "rule": c["rule"], "title": f"{c['change']} by {c['by']}", "file": c["by"].rsplit(":", 1)[0],
             "line": None, "stratum": None, "facts": {}, "added": [{"kind": c["change"], "text": f"was {c['was']}"}],
             "because": f"rule {c['rule']} ({c['was']}) was {c['change']} by {c['by']}"}
            for c in d.book.changes]
    for f in d.firings:
        out.append({"seq": f.seq, "rule": f.rule.id, "title": f.rule.title, "file": f.rule.file, "line": f.rule.line,
                    "stratum": f.stratum, "facts": f.facts, "added": [_shown(d, a) for a in f.added],
                    "because": " ".join(d.render(f.rule.because).split()) if d.layout else
                    " ".join(f.rule.because.split())})
    return out


def _shown(d: Decision, added: dict) -> dict:
    """One thing a firing added, as the trace shows it: a warning or note with its facts filled in,
    as the answer's warnings[] and notes[] print it (run._texts), where there is an answer."""
    if added["kind"] in ("warn", "note") and d.layout:
        return dict(added, text=d.render(added["text"]))
    return added


def entry(d: Decision, i: int, rank: int) -> dict:
    t = d.table
    lay = t.layout(i)
    head = float(t.tokens_per_s[d.index])
    tps = float(t.tokens_per_s[i])
    return {"rank": rank, "layout": layout_dict(lay), "describe": lay.describe(),
            "memory": {"peak_gib": round(float(t.peak_gib[i]), 2), "capacity_gib": round(t.capacity, 2),
                       "used_pct": round(100 * float(t.peak_gib[i]) / t.capacity, 1),
                       # what an offloading layout puts in host memory (a hard rule reads it)
                       **({"host_offload_gib": round(float(t.scores["host_offload_gib"][i]), 2)}
                          if t.scores["host_offload_gib"][i] else {})},
            "metrics": {"tokens_per_s": round(tps, 1), "step_time_s": round(float(t.scores["step_time_s"][i]), 3),
                        "mfu_pct": round(float(t.scores["mfu_pct"][i]), 2),
                        "bubble_pct": round(float(t.scores["bubble_pct"][i]), 2),
                        "comm_overhead_pct": round(float(t.scores["comm_overhead_pct"][i]), 2),
                        # the budget's time and cost at this layout's speed, as the headline's metrics give them
                        **time_and_cost(d.job, tps)},
            "objective": round(float(d.choice.objective[i]), 1),
            "why_not": _why_not(d, i, head) if i != d.index else None}


def _why_not(d: Decision, i: int, head: float) -> str:
    """Why layout i is not the headline, and the preferences it breaks as the headline does: the
    ranking takes their worth off it too, so without them two layouts that read alike ("2% slower;
    breaks X") could stand in an order the text does not explain."""
    text = R._ruled_out(d, i, head)
    shared = [p for p, m in zip(d.preferences, d.broken) if m[i] and m[d.index]] if d.allowed[i] else []
    if shared:
        text += "; as the headline, breaks " + ", ".join(f"{p.rule.id} (worth {p.worth:g}%)" for p in shared)
    return text


def ranked(d: Decision, n: int) -> list[dict]:
    """The n best allowed layouts after the headline, by the same objective."""
    from shardwise.search.choice import order_by
    order = order_by(d.table, d.choice.objective, d.allowed, first=n + 1)[:n + 1]
    return [entry(d, int(i), k) for k, i in enumerate(order, 1) if int(i) != d.index][:n]


def search_summary(d: Decision) -> dict:
    t = d.table
    s = {"candidates": t.space.candidates, "valid": len(t), "allowed": int(d.allowed.sum()),
         "excluded": [e for e in t.space.excluded if e["excluded"]],
         "constraints": [{"rule": c.rule.id, "expr": c.text, "kind": c.kind,
                          "excluded": int(np.count_nonzero(~m))} for c, m in zip(d.constraints, d.masks)],
         "best": None, "headline_gap_pct": None, "departures": [], "kept_despite": [],
         "nothing_allowed": d.nothing_allowed, "sizing": d.sizing}
    if d.choice is None:
        return s
    f = d.choice.fastest
    # the worths each breaks, summed: the choice compares tokens/s x (1 - these) (search/choice.py)
    s["best"] = {"layout": t.layout(f).describe(), "tokens_per_s": round(float(t.tokens_per_s[f]), 1),
                 "peak_gib": round(float(t.peak_gib[f]), 2),
                 "worth_broken_pct": round(100 * float(d.choice.penalty[f]), 6),
                 # the preferences in that sum which the headline breaks too (the departures are the
                 # others): the choice line names them, else its sum reads larger than its names
                 "breaks_as_headline": [{"rule": p.rule.id, "worth_pct": p.worth} for p, m in
                                        zip(d.preferences, d.broken) if m[f] and m[d.index]]}
    s["headline_gap_pct"] = pct_value(100 * (1 - float(t.tokens_per_s[d.index]) / float(t.tokens_per_s[f])))
    s["headline_tokens_per_s"] = round(float(t.tokens_per_s[d.index]), 1)
    s["headline_worth_broken_pct"] = round(100 * float(d.choice.penalty[d.index]), 6)
    s["departures"] = R.departures(d)
    s["kept_despite"] = R.kept_despite(d)
    return s


def as_dict(d: Decision, exports: bool = False, alternatives: int = ALTERNATIVES) -> dict:
    out = {"job": job_summary(d.job), "global_batch": d.global_batch, "layout": None, "memory": None,
           "metrics": None, "settings": {}, "search": search_summary(d), "trace": trace(d), "alternatives": [],
           "assumptions": list(d.assumptions), "warnings": list(d.warnings), "notes": list(d.notes),
           "constraints": [{"kind": c.kind, "expr": c.text, "rule": c.rule.id, "file": c.rule.file,
                            "line": c.rule.line} for c in d.constraints],
           "preferences": [{"kind": p.kind, "expr": p.text, "worth_pct": p.worth, "rule": p.rule.id,
                            "file": p.rule.file, "line": p.rule.line} for p in d.preferences],
           "pins": {k: v for k, v in d.pins.items()},
           "rule_files": playbook.file_hashes(d.book)}
    if d.layout is None:
        return out
    out["layout"] = layout_dict(d.layout)
    out["memory"] = dict(d.memory.as_dict(), checked=track_record.memory_checked(d.job, d.memory))
    out["metrics"] = d.step.metrics(d.job)
    out["settings"] = {s: {"value": getattr(d.layout, s), "reasons": R.reasons(d, s), "alternatives": R.alternatives(d, s)}
                       for s in R.SETTINGS}
    out["alternatives"] = ranked(d, alternatives)
    if exports:
        from shardwise.export import Target, export_all
        out["exports"] = export_all(Target(d.job, d.layout))
    return out
