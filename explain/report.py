"""`shardwise report`: everything a review meeting needs about one recommendation, as data.

The decision (decision/run.py) read once: per setting its rules, the layout with each other
value and the what-ifs that would move it, the decision trace drawn by Graphviz, the memory of
every pipeline stage, the ranked alternatives, the runs behind its speed and memory checked
lines (kb/track_record.py), the exports and the rule files with their SHA-256. explain/report_html.py draws it.
"""
from __future__ import annotations

from importlib.metadata import version

from shardwise.decision.result import as_dict
from shardwise.decision.run import decide
from shardwise.decision.text import shown_settings
from shardwise.kb.errors import NoLayout
from shardwise.kb.job import Job

from .render import svg_of
from .trace_graph import trace_graph
from .why import what_ifs, without_rules, would_change

ALTERNATIVES_PER_VALUE = 4


def build(job: Job, rules: list[str], playbook: str | None = None) -> dict:
    d = decide(job, rules, playbook)
    if d.layout is None:
        raise NoLayout(f"no layout to report: {d.nothing_allowed}")
    rec = as_dict(d, exports=True)
    tried = what_ifs(job, rules, playbook)
    per_setting = []
    for s in shown_settings(rec["settings"]):
        info = rec["settings"][s]
        per_setting.append({"setting": s, "value": info["value"], "reasons": info["reasons"],
                            "alternatives": info["alternatives"][:ALTERNATIVES_PER_VALUE * 2],
                            "would_change": without_rules(d, s) + would_change(s, info["value"], tried)})
    graph = trace_graph(rec)
    from shardwise.kb.track_record import like_runs
    checks = {"speed": like_runs(job, "step_time")[0], "memory": like_runs(job, "memory")[0]}
    ran = [] if checks["memory"] else like_runs(job, "ran")[0]
    if ran:
        # no measured peak like the job: the published layouts that ran check its memory (memory_checked)
        checks["memory: layouts that ran"] = ran
    return {
        "version": version("shardwise"),
        "title": f"{job.model.name} on {job.cluster.gpus} x {job.cluster.gpu.name}",
        "rec": rec, "describe": d.layout.describe(), "settings": per_setting,
        "stages": d.memory.stage_peaks(), "trace_svg": svg_of(graph.source),
        "what_ifs_tried": [text for text, _ in tried],
        # the runs behind the answer's speed and memory checked lines, for a reviewer to read one by one
        "track_record": checks,
    }
