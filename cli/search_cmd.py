"""`shardwise search`: every valid layout scored, the best N by the decision's objective, and why not each."""
from __future__ import annotations

import click

from shardwise.kb.errors import InputError

from .options import PLAIN_INT, job_options
from .output import dollars, emit, format_option, hours, table


@click.command()
@job_options
@click.option("--top", "top", type=PLAIN_INT, default=10, show_default=True, help="layouts to list, 1 to 1000")
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--playbook", "playbook", help="run this edited copy of the playbook (shardwise rules init DIR)")
@format_option
def search(job, top, rules, playbook, fmt):
    """Rank the layouts the rules allow by predicted throughput x (1 - broken worths)."""
    if not 1 <= top <= 1000:
        raise InputError(f"--top: {top} is not from 1 to 1000")
    from shardwise.decision.result import entry, ranked, search_summary
    from shardwise.decision.run import decide
    from shardwise.kb.facts import job_summary

    from .progress import hook

    d = decide(job, list(rules), playbook, progress=hook())
    top_rows = ([entry(d, d.index, 1)] + ranked(d, top - 1)) if d.layout else []
    result = {"job": job_summary(job), "search": search_summary(d), "top": top_rows}
    emit(result, fmt, lambda markdown: render(result, markdown=markdown))


def render(result: dict, markdown: bool = False) -> str:
    s = result["search"]
    timed = any("time_to_train_h" in a["metrics"] for a in result["top"])
    priced = any("cost" in a["metrics"] for a in result["top"])
    rows = [[a["rank"], a["describe"], f"{a['memory']['peak_gib']:.1f}", f"{a['metrics']['tokens_per_s']:,.0f}",
             f"{a['objective']:,.0f}", f"{a['metrics']['mfu_pct']:.1f}", f"{a['metrics']['bubble_pct']:.1f}",
             f"{a['metrics']['comm_overhead_pct']:.1f}"]
            + ([hours(a["metrics"]["time_to_train_h"])] if timed else [])
            + ([dollars(a["metrics"]["cost"])] if priced else [])
            + [a["why_not"] or "the headline"] for a in result["top"]]
    lines = [f"{s['candidates']:,} candidates, {s['valid']:,} valid, {s['allowed']:,} meet every hard rule",
             table(rows, ["#", "layout", "GiB", "tokens/s", "objective", "MFU%", "bubble%", "comm%"]
                   + (["hours"] if timed else []) + (["cost"] if priced else []) + ["why not"], markdown=markdown)]
    if s["nothing_allowed"]:
        lines.append(s["nothing_allowed"])
    for e in s["excluded"]:
        lines.append(f"excluded {e['excluded']:,} by validity rule {e['rule']}: {e['why']}")
    hard = [c for c in s["constraints"] if c["excluded"]]
    for c in hard:
        lines.append(f"excluded {c['excluded']:,} by {c['rule']} ({c['kind']} '{c['expr']}')")
    if len(hard) > 1:
        lines.append("(a valid layout that breaks several hard rules is counted under each of them)")
    return "\n".join(lines)
