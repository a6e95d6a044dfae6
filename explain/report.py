"""`shardwise report`: everything a review meeting needs about one recommendation, as data.

The recommendation with its run and search (rules/recommend.py), per setting the chain of
firings, the best layout with each other value and the what-ifs that would move it, the
decision trace drawn by Graphviz, the memory of every pipeline stage, the ranked alternatives,
the exports and the rule files with their SHA-256. explain/report_html.py draws it.
"""
from __future__ import annotations

from importlib.metadata import version

from shardwise.kb.job import Job
from shardwise.rules.recommend import recommend_with_run

from .render import svg_of
from .trace_graph import trace_graph
from .why import SETTINGS, alternatives, steps, variants, what_ifs

ALTERNATIVES_PER_VALUE = 4


def build(job: Job, rules: list[str]) -> dict:
    rec, res, found = recommend_with_run(job, rules)
    final = res.final
    lay = final.layout
    tried = variants(job, rules)
    per_setting = []
    for s in SETTINGS:
        current = getattr(lay, s)
        per_setting.append({
            "setting": s, "value": current, "chain": steps(rec["trace"], s, job, lay),
            "alternatives": alternatives(found, lay.canonical(), s, final.step.tokens_per_s)[:ALTERNATIVES_PER_VALUE],
            "would_change": what_ifs(s, current, tried),
        })
    return {
        "version": version("shardwise"),
        "title": f"{job.model.name} on {job.cluster.gpus} x {job.cluster.gpu.name}",
        "rec": rec, "describe": lay.describe(), "settings": per_setting,
        "stages": final.memory.stage_peaks(),
        "trace_svg": svg_of(trace_graph(rec["trace"]).source),
        "what_ifs_tried": [text for text, _ in tried],
    }
