"""`shardwise compare`: the best layout, its speed, time and cost for each variant of a job.

Answers "should we buy H200s, or 128 GPUs?" (seed 003): every combination of the --vary
values is a job of its own; each gets the rules' pick checked by the search, and the row shows
the best layout the policies allow.
"""
from __future__ import annotations

import itertools

import click

from .options import job_options, parse_vary
from .output import FORMATS, emit, table


def compare_variants(settings: dict, vary: list, rules: list) -> list[dict]:
    from shardwise.kb.build import build_job
    from shardwise.rules.recommend import recommend as run_recommend

    rows = []
    keys = [k for k, _ in vary]
    for combo in itertools.product(*[vals for _, vals in vary]):
        variant = dict(zip(keys, combo))
        job = build_job(**{**settings, **variant})
        rec = run_recommend(job, rules, alternatives=1, lazy_exports=True)    # exports unused
        s, mt, mem = rec["search"], rec["metrics"], rec["memory"]
        best = s["best"]
        rows.append({
            "variant": variant, "rule_pick": _describe(rec["layout"]), "fits": mem["fits"],
            "best": best["layout"] if best else None,
            "tokens_per_s": best["tokens_per_s"] if best else None,
            "rule_pick_tokens_per_s": mt["tokens_per_s"],
            "time_to_train_h": _scaled(mt.get("time_to_train_h"), mt["tokens_per_s"], best),
            "cost": _scaled(mt.get("cost"), mt["tokens_per_s"], best),
        })
    return rows


def _scaled(value, pick_tps, best):
    """Time and cost of the best layout: the rule pick's, scaled by the throughput ratio."""
    if value is None or not best:
        return None
    return round(value * pick_tps / best["tokens_per_s"], 2)


def _describe(lay: dict) -> str:
    return (f"tp={lay['tp']} pp={lay['pp']}" + (f" vp={lay['vp']}" if lay["vp"] > 1 else "") + f" dp={lay['dp']}"
            + (f" cp={lay['cp']}" if lay["cp"] > 1 else "") + (f" ep={lay['ep']}" if lay["ep"] > 1 else ""))


@click.command()
@job_options(raw=True)
@click.option("--vary", "vary", multiple=True, required=True, help="SETTING=V1,V2 (repeatable), e.g. gpu=h100-sxm,h200")
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
def compare(settings, vary, rules, fmt):
    """Compare the best layout, speed, time and cost across variants of a job."""
    varied = parse_vary(vary)
    rows = compare_variants(settings, varied, list(rules))
    emit({"variants": rows}, fmt, lambda markdown: render(rows, [k for k, _ in varied], markdown))


def render(rows: list[dict], heads: list[str], markdown: bool) -> str:
    body = [[*(r["variant"][k] for k in heads), r["best"] or "nothing fits",
             f"{r['tokens_per_s']:,.0f}" if r["tokens_per_s"] else "-",
             f"{r['time_to_train_h']:,.1f}" if r["time_to_train_h"] is not None else "-",
             f"{r['cost']:,.0f}" if r["cost"] is not None else "-"] for r in rows]
    return table(body, [*heads, "best layout", "tokens/s", "hours", "cost"], markdown=markdown)
