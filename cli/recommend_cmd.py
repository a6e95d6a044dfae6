"""`shardwise recommend`: the headline layout, each setting's rules, and the arithmetic of the choice."""
from __future__ import annotations

import re
import textwrap

import click

from shardwise.decision.text import departure, host_memory_label, hsdp_group, shown_settings, signed_pct, slower_or_faster
from shardwise.kb.track_record import checked_line, memory_checked_line

from .options import job_options
from .output import NO_BUDGET, cost_text, duration_text, emit, format_option, token_count

WIDTH = 110


def _num(v, unit: str = "") -> str:
    return f"{v:,.0f}{unit}" if abs(v) >= 100 else f"{v:.1f}{unit}" if abs(v) >= 10 else f"{v:.2f}{unit}"


def _value(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def header(result: dict) -> str:
    job = result["job"]
    # the link between nodes only where there is more than one node
    links = f"{job['nodes']} nodes, {job['intra_link']} / {job['inter_link']}" if job["nodes"] > 1 \
        else f"1 node, {job['intra_link']}" if job["gpus"] > 1 else "1 GPU"
    # below a billion in millions: a 125M model is not "0.1B"
    size = f"{job['params_b']:,.1f}B" if job["params_b"] >= 0.95 else f"{job['params_b'] * 1000:,.0f}M"
    return (f"{job['model']} ({size} parameters{', shape inferred' if job['shape_inferred'] else ''}) "
            f"on {job['gpus']} x {job['gpu']} ({links}); "
            f"sequence {job['seq_len']:,} tokens, {job['training']}, {job['precision']}, {job['framework']}")


def setting_line(name: str, s: dict) -> str:
    """The one-line why of a setting: a rule that reads it and bears on it here (a pin; a rule
    that some layout with another value of the setting would meet otherwise -- a broken one
    first, then the setting's own), then the best layout with another value and what rules it
    out."""
    direct = [r for r in s["reasons"] if r.get("direct")]
    bears = [r for r in direct if r["status"] == "pinned" or r.get("binding", True)]
    alts = [a for a in s["alternatives"] if a["delta_pct"] is not None]
    priced = lambda r: [a for a in alts if a["ruled_out_by"].startswith(f"{r['rule']} (")  # noqa: E731
                        or f"breaks {r['rule']} (" in a["ruled_out_by"]]
    # a pin, then a broken rule, then a rule without which the choice would have taken another
    # value (a house policy's price), then the setting's own rule file (cp.* for cp). A costly
    # preference leads only where an alternative shows its price: the best layout of each value
    # may keep it (a rule on zero 3 with tp 2, where the best tp=2 layout is ZeRO 1), and the
    # line would then give it beside an alternative it has nothing to do with
    costly = lambda r: r.get("costly") and (r["kind"] != "soft" or bool(priced(r)))  # noqa: E731
    rank = lambda r: (r["status"] != "pinned", r["status"] != "broken", not costly(r),  # noqa: E731
                      not r["rule"].startswith(f"{name}."))
    lead = min(bears, key=rank) if bears else None
    parts = [f"{lead['rule']} ({lead['status']}): {lead['title']}"] if lead else []
    allowed = [a for a in alts if not a["ruled_out_by"].startswith(("memory", "validity")) and "(require" not in
               a["ruled_out_by"] and "(forbid" not in a["ruled_out_by"]]
    # the value whose best layout comes nearest the headline by the objective the choice ranks
    # on; its tokens/s are what the line shows. Where no other value is allowed, the one that
    # comes nearest to being allowed -- fewest hard rules broken, then the lowest peak (mbs=2
    # over by 16 GiB, not mbs=32 over by 850 GiB because it would be faster)
    if allowed:
        # (the JSON's percents are rounded to what the text shows: where two values tie on them,
        # the faster layout, not the first value, as Llama 3 8B's vp=7 was named beside a faster vp=8)
        a = max(allowed, key=lambda a: (a["objective_delta_pct"] if a["objective_delta_pct"] is not None
                                        else float("-inf"), a["delta_pct"], a["tokens_per_s"]))
    else:
        a = min(alts, key=lambda a: (a.get("hard_broken", 0), a.get("peak_gib", 0.0), -a["delta_pct"])) if alts else None
    if lead and costly(lead):
        # what the rule that leads the line costs: the value it rules out (a hard rule) or whose
        # layout breaks it (a preference), with its speed
        a = max(priced(lead), key=lambda a: a["delta_pct"], default=a)
    if a:
        why = re.sub(r"^(\d+(\.\d+)?% slower|as fast, to 0\.01%)(; )?", "", a["ruled_out_by"])     # the delta says it already
        if why.startswith("breaks "):      # the whole alternative layout breaks it, maybe through another setting
            why = "that layout " + why
        if why.startswith("memory: "):
            # no speed for a layout that cannot run: its memory is the answer
            parts.append(f"with {name}={_value(a['value'])}: does not fit, {why[len('memory: '):]}")
        else:
            parts.append(f"with {name}={_value(a['value'])}: {signed_pct(a['delta_pct'])} tokens/s" + (f", {why}" if why else ""))
    elif not lead:
        parts.append("the only valid value" + _blocked_text(name, s["alternatives"]))
    return "; ".join(parts)


def _blocked_text(name: str, alternatives: list[dict]) -> str:
    """What rules out the setting's other values where no layout has them: the validity rules
    (search/space._blocked), each with the values it takes away, a few shown."""
    by_rule: dict[str, list[str]] = {}
    for a in alternatives:
        if a["ruled_out_by"].startswith("validity: "):
            by_rule.setdefault(a["ruled_out_by"][len("validity: "):], []).append(a["value"])
    said = []
    for rule, values in by_rule.items():
        values = sorted(values, key=lambda v: (not isinstance(v, (int, float)), v if isinstance(v, (int, float)) else str(v)))
        shown = ", ".join(_value(v) for v in values[:3]) + (", ..." if len(values) > 3 else "")
        said.append(f"{name}={shown} break{'s' if len(values) == 1 else ''} {rule}")
    return f" ({'; '.join(said)})" if said else ""


def render(result: dict, markdown: bool = False) -> str:
    lines = [header(result), ""]
    s = result["search"]
    if result["layout"] is None:
        lines.append(f"NO LAYOUT: {s['nothing_allowed']}")
        for a in result["assumptions"]:
            lines.append(f"assumption: {a}")
        return "\n".join(lines)
    lay = dict(result["layout"], zero=result["layout"]["zero_stage"])
    names = shown_settings(result["settings"])
    rows = [(k, _value(lay[k]), setting_line(k, result["settings"][k])) for k in names]
    if hsdp_group(lay):
        # an HSDP group is part of the zero choice: said beside it, as the layout string does (shard=N)
        rows.insert(names.index("zero") + 1, ("shard", str(lay["shard_group"]),
                    f"ZeRO-{lay['zero']} shards over {lay['shard_group']} ranks and replicates across "
                    f"{lay['dp'] * lay['cp'] // lay['shard_group']} such groups (HSDP)"))
    rows.append(("grad_accum", str(lay["grad_accum"]),
                 f"reaches the global batch: {lay['global_batch']:,} = mbs {lay['mbs']} x {lay['grad_accum']} x DP {lay['dp']}"))
    if markdown:
        from .output import table
        lines.append(table([list(r) for r in rows], ["setting", "value", "why"], markdown=True))
    else:
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        lines.append(f"{'setting':<{w0}}  {'value':<{w1}}  why")
        for a, b, c in rows:
            # not at hyphens: a rule id (vp-chunks, memory.fit-margin) split over two lines is no id to look up
            wrapped = textwrap.wrap(c, WIDTH - w0 - w1 - 4, break_on_hyphens=False) or ["-"]
            lines.append(f"{a:<{w0}}  {b:<{w1}}  {wrapped[0]}")
            lines += [f"{'':<{w0}}  {'':<{w1}}  {x}" for x in wrapped[1:]]
    mem, mt = result["memory"], result["metrics"]
    lines += ["", f"memory per GPU: {mem['peak_gib']:.1f} of {mem['capacity_gib']:.1f} GiB "
                  f"({100 * mem['peak_gib'] / mem['capacity_gib']:.0f}%; peak on stage {mem['worst_stage']}, "
                  f"{mem['peak_phase']}): " + ", ".join(f"{k.replace('_', ' ')} {v:.1f}"
                                                        for k, v in mem["breakdown_gib"].items() if v >= 0.05)
              # what offloading keeps off the GPU (not in the peak), as `memory` and the report say it
              + (f"; {host_memory_label(lay['offload'])} {mem['host_offload_gib']:.1f}"
                 if mem.get("host_offload_gib") else ""),
              memory_checked_line(mem["checked"]),
              f"throughput: {mt['tokens_per_s']:,.0f} tokens/s ({mt['tokens_per_s_per_gpu']:,.0f} per GPU), "
              f"MFU {mt['mfu_pct']:.1f}%, step {mt['step_time_s']:.2f} s, of which exposed communication "
              f"{mt['comm_overhead_pct']:.1f}% and pipeline bubble {mt['bubble_pct']:.1f}%"]
    if mt.get("time_to_train_h") is not None:
        budget = mt["token_budget"]
        cost = f", {cost_text(mt['cost'], mt['price_per_gpu_hour'])}" if "cost" in mt else ""
        lines.append(f"time to train {token_count(budget)}: {duration_text(mt)}{cost}")
    else:
        lines.append(f"time to train: {NO_BUDGET}")
    lines.append(checked_line(mt["checked"]))
    lines.append(f"search: {s['valid']:,} valid layouts scored, {s['allowed']:,} meet every hard rule; "
                 + decision_line(s))
    for k in s["kept_despite"]:
        if k["honoured_by"]:
            also = f" and breaks {', '.join(k['also_breaks'])} instead" if k.get("also_breaks") else ""
            speed = slower_or_faster(k["slower_pct"])
            lines.append(f"  breaks {k['rule']} (worth {k['worth_pct']:g}%): the best layout honouring it "
                         f"is {speed}{also} ({k['honoured_by']})")
        else:
            lines.append(f"  breaks {k['rule']} (worth {k['worth_pct']:g}%): no layout the hard rules allow honours it")
    if result["alternatives"]:
        lines.append("  next in the ranking (#1 is the headline; ranked by tokens/s less the worth of the "
                     "preferences broken):")
    for a in result["alternatives"][:3]:
        lines.append(f"  #{a['rank']} {a['describe']}: {a['metrics']['tokens_per_s']:,.0f} tokens/s, "
                     f"{a['memory']['peak_gib']:.1f} GiB -- {a['why_not']}")
    for w in result["warnings"]:
        lines.append(f"warning: {w}")
    for n in result["notes"]:
        lines.append(f"note: {n}")
    for a in result["assumptions"]:
        lines.append(f"assumption: {a}")
    lines.append(f"({len(result['trace'])} rule firings; `--format json` has the trace, "
                 "`shardwise explain --why SETTING` the reasons)")
    if markdown:                      # after the table: one Markdown line break per line, not one paragraph
        return "\n".join(lines[:3]) + "\n\n" + "  \n".join(lines[4:])
    return "\n".join(lines)


def decision_line(s: dict) -> str:
    if not s["departures"]:
        return "the headline is the fastest of them"
    return departure(s)


@click.command()
@job_options
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--playbook", "playbook", help="run this edited copy of the playbook (shardwise rules init DIR)")
@format_option
def recommend(job, rules, playbook, fmt):
    """Recommend the whole layout, with the rules behind each setting and the arithmetic of the choice."""
    from shardwise.decision.result import as_dict
    from shardwise.decision.run import decide

    from .progress import hook

    result = as_dict(decide(job, list(rules), playbook, progress=hook()), exports=fmt in ("json", "yaml"))
    emit(result, fmt, lambda markdown: render(result, markdown=markdown))
