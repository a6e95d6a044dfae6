"""`shardwise search`: every valid layout scored, the best N, and why the rules did not pick each."""
from __future__ import annotations

import click

from .options import job_options
from .output import FORMATS, emit, table


@click.command()
@job_options
@click.option("--top", "top", type=click.IntRange(1, 1000), default=10, show_default=True, help="layouts to list")
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
def search(job, top, rules, fmt):
    """Rank every valid layout by predicted throughput; say why the rules did not pick each."""
    from shardwise.kb.facts import job_summary, layout_dict
    from shardwise.rules.recommend import run_rules
    from shardwise.search.rank import search as run_search
    from shardwise.search.reconcile import reconcile

    res, constraints, _ = run_rules(job, list(rules))
    final = res.final
    found = run_search(job, res.global_batch, constraints)
    out = reconcile(found, final.layout, final.step.tokens_per_s, final.memory.fits, n=top)
    result = {"job": job_summary(job), "rule_pick": layout_dict(final.layout), "search": out["search"],
              "top": out["alternatives"]}
    emit(result, fmt, lambda markdown: render(result, markdown=markdown))


def render(result: dict, markdown: bool = False) -> str:
    s = result["search"]
    rows = [[a["rank"], a["describe"], f"{a['memory']['peak_gib']:.1f}", f"{a['metrics']['tokens_per_s']:,.0f}",
             f"{a['metrics']['mfu_pct']:.1f}", f"{a['metrics']['bubble_pct']:.1f}",
             f"{a['metrics']['comm_overhead_pct']:.1f}", a["why_not"] or "-"] for a in result["top"]]
    lines = [f"{s['candidates']:,} candidates, {s['layouts_scored']:,} valid, {s['fit']:,} fit; "
             f"rule pick ranks {s['rule_pick_rank'] or '-'}",
             table(rows, ["#", "layout", "GiB", "tokens/s", "MFU%", "bubble%", "comm%", "why not"], markdown=markdown),
             s["summary"]]
    for e in s["excluded"]:
        lines.append(f"excluded {e['excluded']:,} by {e['rule']}: {e['why']}")
    return "\n".join(lines)
