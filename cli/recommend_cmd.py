"""`shardwise recommend`: the layout the playbook and house policies reach, with the reasons."""
from __future__ import annotations

import textwrap

import click

from .options import job_options
from .output import FORMATS, emit, table

ORDER = ["tp", "sp", "pp", "vp", "cp", "ep", "dp", "zero", "mbs", "grad_accum", "recompute"]


def render(result: dict, markdown: bool = False) -> str:
    lay, mem, mt, job = result["layout"], result["memory"], result["metrics"], result["job"]
    head = (f"{job['model']} ({job['params_b']}B{', shape inferred' if job['shape_inferred'] else ''}) on "
            f"{job['gpus']} x {job['gpu']} ({job['nodes']} node{'s' if job['nodes'] > 1 else ''}, "
            f"{job['intra_link']} / {job['inter_link']}), seq {job['seq_len']}, {job['training']} "
            f"{job['precision']} ({job['framework']})")
    rows = []
    values = dict(lay, zero=lay["zero_stage"])
    for k in ORDER:
        r = result["rationale"].get(k)
        why = r["because"] if r else _default_reason(k, values)
        source = f"[{r['rule']}]" if r and r.get("rule") else ""
        rows.append([k, _fmt(values[k]), " ".join(why.split()) + (f" {source}" if source else "")])
    width = 110
    if not markdown:
        rows = [[a, b, "\n".join(textwrap.wrap(c, width - 20)) or "-"] for a, b, c in rows]
        lines = [head, "", _wrapped_table(rows, ["setting", "value", "why"])]
    else:
        lines = [f"**{head}**", "", table(rows, ["setting", "value", "why"], markdown=True)]
    lines += ["", f"memory per GPU: {mem['peak_gib']:.1f} of {mem['capacity_gib']:.1f} GiB "
                  f"({'fits' if mem['fits'] else 'DOES NOT FIT'}; peak on stage {mem['worst_stage']}, {mem['peak_phase']})",
              f"throughput: {mt['tokens_per_s']:,.0f} tokens/s ({mt['tokens_per_s_per_gpu']:,.0f} per GPU), "
              f"MFU {mt['mfu_pct']:.1f}%, step {mt['step_time_s']:.2f} s, exposed communication "
              f"{mt['comm_overhead_pct']:.1f}%, bubble {mt['bubble_pct']:.1f}%"]
    if mt.get("time_to_train_h") is not None:
        cost = f", cost {mt['cost']:,.0f}" if "cost" in mt else ""
        lines.append(f"time to train {mt['token_budget']:.3g} tokens: {mt['time_to_train_h']:,.1f} h{cost}")
    s = result.get("search")
    if s:
        lines.append(f"search: {s['layouts_scored']:,} valid layouts scored, {s['fit']:,} fit; rule pick ranks "
                     f"{s['rule_pick_rank'] or '-'}; {s['summary']}")
        for a in result["alternatives"][:3]:
            lines.append(f"  #{a['rank']} {a['describe']}: {a['metrics']['tokens_per_s']:,.0f} tokens/s, "
                         f"{a['memory']['peak_gib']:.1f} GiB -- {a['why_not'] or 'the rule pick'}")
    for w in result["warnings"]:
        lines.append(f"warning: {w}")
    for n in result["notes"]:
        lines.append(f"note: {n}")
    for a in result["assumptions"]:
        lines.append(f"assumption: {a}")
    lines.append(f"({len(result['trace'])} rule firings; `--format json` has the full trace)")
    return "\n".join(lines)


def _wrapped_table(rows, headers):
    w0 = max(len(headers[0]), *(len(r[0]) for r in rows))
    w1 = max(len(headers[1]), *(len(r[1]) for r in rows))
    out = [f"{headers[0]:<{w0}}  {headers[1]:<{w1}}  {headers[2]}", f"{'-' * w0}  {'-' * w1}  {'-' * 40}"]
    for a, b, c in rows:
        parts = c.split("\n")
        out.append(f"{a:<{w0}}  {b:<{w1}}  {parts[0]}")
        out += [f"{'':<{w0}}  {'':<{w1}}  {p}" for p in parts[1:]]
    return "\n".join(out)


def _fmt(v):
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _default_reason(k: str, lay: dict) -> str:
    return {
        "tp": "the model fits without tensor parallelism",
        "sp": "no tensor parallelism to complement" if lay["tp"] == 1 else "the framework has no sequence parallelism",
        "pp": "fits without pipeline stages (no bubble)",
        "vp": "no pipeline to interleave" if lay["pp"] == 1 else "interleaving would not fit or not help",
        "cp": "sequences are short enough for one GPU per sequence",
        "ep": "dense model" if lay["ep"] == 1 else "",
        "zero": "no data parallelism to shard over" if lay["dp"] * lay["cp"] == 1 else "model states fit unsharded",
        "mbs": "the job's micro-batch, or the largest that fits and helps",
        "recompute": "fits without recomputation",
    }.get(k, "")


@click.command()
@job_options
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
def recommend(job, rules, fmt):
    """Recommend the whole layout, with the rule that set each setting and why."""
    from shardwise.rules.recommend import recommend as run_recommend

    result = run_recommend(job, list(rules), lazy_exports=True)     # only json and yaml print them
    emit(result, fmt, lambda markdown: render(result, markdown=markdown))
