"""`shardwise explain --why SETTING`: the rules that chose it, the alternatives, what would change it."""
from __future__ import annotations

import click

from shardwise.explain.render import checked_graph_path
from shardwise.kb.fact_schema import SETTINGS

from .options import job_options
from .output import emit, format_option


@click.command()
@job_options
@click.option("--why", "setting", type=click.Choice(SETTINGS, case_sensitive=False), required=True,
              help="the setting to explain: tp tensor, pp pipeline, dp data, cp context (the sequence "
                   "split), ep expert parallelism; vp virtual pipeline stages (model chunks a pipeline "
                   "rank); zero the ZeRO stage (1 shards optimizer states over DP, 2 gradients too, "
                   "3 weights too); sp sequence parallelism (with TP); mbs micro-batch size; recompute "
                   "activation recomputation (README: the settings, in the table's words)")
@click.option("--graph", "graph", help="also draw the decision trace: out.dot, out.svg or out.png",
              callback=checked_graph_path)
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--playbook", "playbook", help="run this edited copy of the playbook (shardwise rules init DIR)")
@format_option
def explain(job, setting, graph, rules, playbook, fmt):
    """Why the recommendation chose a setting, and what would change it."""
    from shardwise.decision.result import as_dict
    from shardwise.decision.run import decide

    from .progress import hook
    from shardwise.explain.render import write_graph
    from shardwise.explain.trace_graph import trace_graph
    from shardwise.explain.why import explain as run_explain, what_ifs

    d = decide(job, list(rules), playbook, progress=hook())
    r = run_explain(d, setting, what_ifs(job, list(rules), playbook))
    # drawn first, so that a graph that cannot be written fails before anything is printed
    written = write_graph(trace_graph(as_dict(d)).source, graph) if graph else None
    emit(r, fmt, lambda markdown: render(r))
    if written:
        click.echo(f"wrote {written}", err=fmt in ("json", "yaml"))


def render(r: dict) -> str:
    from shardwise.kb.fact_schema import shown_setting
    from shardwise.kb.validity import VALIDITY
    from shardwise.decision.text import signed_pct
    from shardwise.rules.loader import location
    VALIDITY_WHY = {v.id: v.why for v in VALIDITY}
    lines = [f"{r['setting']} = {shown_setting(r['value'])}   (layout: {r['layout']})", "", "rules that bear on it:"]
    for x in r["reasons"]:
        where = location(x["file"], x["line"])
        lines.append(f"  {x['rule']} ({where}; {x['kind']}, {x['status']}){': ' + x['what'] if x.get('what') else ''}")
        lines.append(f"      {x['text']}")
    if not r["reasons"]:
        lines.append("  none reads it directly: the search chose it by predicted speed among the allowed layouts")
    if r["alternatives"]:
        lines += ["", "other values (the layout the choice would take with each):"]
        said = set()
        for a in r["alternatives"]:
            if a["layout"] is None:
                lines.append(f"  {r['setting']}={shown_setting(a['value'])}: no valid layout ({a['ruled_out_by']})")
                # the rule's id alone does not say what the framework cannot run: its text does (once)
                for rule in a["ruled_out_by"].removeprefix("validity: ").split(" or "):
                    if rule in VALIDITY_WHY and rule not in said:
                        said.add(rule)
                        lines.append(f"      {rule}: {VALIDITY_WHY[rule]}")
            else:
                lines.append(f"  {r['setting']}={shown_setting(a['value'])}: {a['layout']}, {a['tokens_per_s']:,.0f} tokens/s "
                             f"({signed_pct(a['delta_pct'])}) -- {a['ruled_out_by']}")
    lines += ["", "what would change it:"] + [f"  {w}" for w in r["would_change"] or [
        "none of the what-ifs tried changes it: " + "; ".join("if " + w for w in r["what_ifs_tried"])]]
    return "\n".join(lines)
