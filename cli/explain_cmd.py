"""`shardwise explain --why SETTING`: the rules that chose it, the alternatives, what would change it."""
from __future__ import annotations

import click

from shardwise.explain.render import checked_graph_path, write_graph
from shardwise.explain.trace_graph import trace_graph
from shardwise.explain.why import SETTINGS, explain as run_explain

from .options import job_options
from .output import FORMATS, emit


@click.command()
@job_options
@click.option("--why", "setting", type=click.Choice(SETTINGS), required=True, help="the setting to explain")
@click.option("--graph", "graph", help="also draw the decision trace: out.dot, out.svg or out.png",
              callback=checked_graph_path)
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
def explain(job, setting, graph, rules, fmt):
    """Why the recommendation chose a setting, and what would change it."""
    r = run_explain(job, list(rules), setting)
    trace = r.pop("trace")
    emit(r, fmt, lambda markdown: render(r))
    if graph:
        written = write_graph(trace_graph(trace).source, graph)
        click.echo(f"wrote {written}", err=fmt in ("json", "yaml"))


def render(r: dict) -> str:
    lines = [f"{r['setting']} = {r['value']}   (layout: {r['layout']})", ""]
    if not r["chain"]:
        lines.append("no rule set it: it kept its starting value (TP = PP = CP = 1, all GPUs data-parallel)")
    for s in r["chain"]:
        head = f"#{s['seq']} {s['rule']} ({s['where']})" if s["rule"] else "derived"
        sets = ", ".join(f"{k}={v}" for k, v in s["set"].items())
        lines.append(f"{head}: {s['outcome']}{' -> ' + sets if sets else ''}")
        if s["read"]:
            lines.append("    read: " + ", ".join(f"{k} = {v}" for k, v in s["read"].items()))
        lines.append("    because: " + " ".join(s["because"].split()))
    if r["alternatives"]:
        lines += ["", "other values (fastest fitting layout with each, from the search):"]
        for a in r["alternatives"]:
            lines.append(f"  {r['setting']}={a['value']}: #{a['rank']} {a['describe']}, "
                         f"{a['metrics']['tokens_per_s']:,.0f} tokens/s -- {a['why_not'] or 'the rule pick'}")
    lines += ["", "what would change it:"] + [f"  {w}" for w in r["would_change"] or ["none of the what-ifs tried (memory x1.5 and x0.6, sequence x2 and /2, GPUs x2) changes it"]]
    return "\n".join(lines)
