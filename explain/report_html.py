"""One self-contained HTML page from explain/report.build: no script, no external font, style
sheet or image, nothing fetched; every value escaped. Same data, same bytes."""
from __future__ import annotations

from html import escape

from shardwise.decision.text import departure, host_memory_label, signed_pct, slower_or_faster
from shardwise.kb.fact_schema import SETTING_NAMES, shown_setting
from shardwise.kb.track_record import checked_line, memory_checked_line
from shardwise.rules.loader import location

from .memory_chart import chart
from .why import shown_value

CSS = """
body{font:14px/1.45 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1d1d1f;margin:24px auto;max-width:1180px;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:18px 0 6px}table{border-collapse:collapse;margin:6px 0 10px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f4f4f6}
.kv td:nth-child(odd){color:#555}.muted{color:#666}.warn{background:#fff4d6;border-left:4px solid #e0a800;padding:6px 10px;margin:4px 0}
.layout{font:600 16px ui-monospace,Menlo,monospace;background:#eef5ff;padding:8px 12px;border-radius:6px}
.figure{overflow:auto;border:1px solid #e3e3e3;border-radius:6px;padding:8px;background:#fff}
#trace svg{max-width:100%;height:auto}pre{background:#f7f7f9;padding:8px;overflow:auto;font-size:12px}
.row{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap}
code{font:12px ui-monospace,Menlo,monospace}.setting{border:1px solid #e3e3e3;border-radius:6px;padding:4px 12px;margin:10px 0}
"""


def _e(x) -> str:
    return escape(str(x))


def _table(rows: list[list], head: list[str], cls: str = "") -> str:
    h = "".join(f"<th>{_e(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><tr>{h}</tr>{body}</table>'


LABELS = {"params_b": "parameters (billions)", "active_params_b": "active parameters (billions)",
          "shape_inferred": "shape inferred", "gpus": "GPUs", "gpu": "GPU", "gpus_per_node": "GPUs per node",
          "intra_link": "link in a node", "inter_link": "link between nodes", "seq_len": "sequence (tokens)",
          "backward_working_set": "backward working set", "master_weights": "fp32 master weights",
          "comm_buffers": "communication buffers", "cuda_context": "CUDA context", "price_per_gpu_hour": "price per GPU-hour",
          "lora_rank": "LoRA rank", "lora_dropout": "LoRA dropout"}


def human(key: str) -> str:
    """A key as a person reads it."""
    return LABELS.get(key, key.replace("_", " "))


def _kv(d: dict, pairs_per_row: int = 1) -> str:
    def shown(v):
        if isinstance(v, bool):
            return "yes" if v else "no"
        return f"{v:,}" if isinstance(v, int) else v
    cells = [f"<td>{_e(human(k))}</td><td>{_e(shown(v))}</td>" for k, v in d.items() if not isinstance(v, dict)]
    rows = "".join("<tr>" + "".join(cells[i:i + pairs_per_row]) + "</tr>" for i in range(0, len(cells), pairs_per_row))
    return f'<table class="kv">{rows}</table>'


def _setting(s: dict) -> str:
    out = [f'<div class="setting" id="why-{s["setting"]}"><h3>{_e(SETTING_NAMES[s["setting"]])} = '
           f'{_e(shown_setting(s["value"]))}</h3>']
    if s["reasons"]:
        out.append(_table([[r["rule"], location(r["file"], r["line"]), r["kind"], r["status"],
                            r.get("what", ""), r["text"]] for r in s["reasons"]],
                          ["rule", "where", "kind", "status", "adds", "because"]))
    else:
        out.append('<p class="muted">No rule reads it: the search chose it by predicted speed.</p>')
    if s["alternatives"]:
        out.append(_table([[shown_setting(a["value"]), a["layout"] or "-",
                            f'{a["tokens_per_s"]:,.0f}' if a["tokens_per_s"] is not None else "-",
                            signed_pct(a["delta_pct"]) if a["delta_pct"] is not None else "-", a["ruled_out_by"]]
                           for a in s["alternatives"]],
                          ["other value", "the layout the choice would take with it", "tokens/s", "vs headline",
                           "ruled out by"]))
    if s["would_change"]:
        out.append("<p>What would change it:</p><ul>" + "".join(f"<li>{_e(w)}</li>" for w in s["would_change"]) + "</ul>")
    out.append("</div>")
    return "".join(out)


def _decision(s: dict) -> str:
    """The arithmetic of the choice: the fastest layout, the preferences that moved away from it."""
    if not s["departures"]:
        text = "The headline is the fastest layout that meets every hard rule."
    else:
        text = departure(s, "The fastest allowed layout") + "."
    rows = [[k["rule"], f'{k["worth_pct"]:g}%', k["honoured_by"] or "no allowed layout honours it",
             slower_or_faster(k["slower_pct"]) if k["slower_pct"] is not None else "-",
             ", ".join(k["also_breaks"]) or "-"] for k in s["kept_despite"]]
    return f"<p>{_e(text)}</p>" + (_table(rows, ["preference the headline breaks", "worth",
                                                 "best layout honouring it", "speed", "which breaks instead"])
                                   if rows else "")


def _stages_note(stages: list, pp: int) -> str:
    """Say which pipeline stages the chart shows when it does not show them all (kb/stages.all_stages)."""
    shown = [s["stage"] for s in stages]
    if len(shown) >= pp:
        return ""
    hidden = [s for s in range(pp) if s not in shown]
    runs, start = [], hidden[0]
    for a, b in zip(hidden, hidden[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start} to {a}")
            start = b
    one = len(hidden) == 1
    return (f'<p class="muted">Stages {", ".join(map(str, shown[:-1]))} and {shown[-1]} of 0-{pp - 1} are shown: '
            f'stage{"" if one else "s"} {", ".join(runs)} hold{"s" if one else ""} no more layers of any kind than a '
            f'stage shown before {"it" if one else "them"} and keep{"s" if one else ""} fewer micro-batches in flight '
            f"(1F1B warms up with p - i forwards on stage i), so {'it peaks' if one else 'they peak'} lower.</p>")


def _export(name: str, ex: dict) -> str:
    if ex.get("refused"):
        return f'<p class="warn">{_e(name)}: refused: {_e(ex["refused"])}</p>'
    files = "".join(f"<details><summary><code>{_e(f)}</code></summary><pre>{_e(t)}</pre></details>"
                    for f, t in ex["files"].items())
    caveats = "".join(f"<li>{_e(c)}</li>" for c in ex["caveats"])
    return f"<h3>{_e(name)}</h3>{files}" + (f"<ul>{caveats}</ul>" if caveats else "")


def _track_record(checks: dict) -> str:
    """Each run the speed and memory checked lines were read from, with the estimate's error on it
    (kb/data/track_record.yaml): a reviewer can see which runs set the range, and which stand out."""
    out = []
    for name, runs in checks.items():
        if not runs:
            out.append(f'<p class="muted">{_e(name)}: no runs like this job in the record</p>')
            continue
        verdict = "fits" in runs[0]
        head = ["run", "source", "model", "GPU", "GPUs", "the estimate fits it" if verdict else "error, %"]
        rows = [[r["run"], r["source"], r["model"] or "(its own)", r["gpu"], r["gpus"],
                 ("yes" if r["fits"] else "no") if verdict else f'{r["error_pct"]:+.1f}'] for r in runs]
        out.append(f"<h3>{_e(name)}: {len(runs)} runs</h3>" + _table(rows, head))
    return "".join(out)


def _said(line: str) -> dict:
    """A 'memory checked: ...' or 'speed not checked: ...' line of the answer as the headline's
    {label: text}: the label says whether the estimate was checked, as the answer's line does."""
    label, _, text = line.partition(": ")
    return {label: text}


def render(r: dict) -> str:
    rec = r["rec"]
    mem, met = rec["memory"], rec["metrics"]
    headline = {"peak memory per GPU": f'{mem["peak_gib"]:.1f} GiB of {mem["capacity_gib"]:.1f} GiB '
                                       f'(stage {mem["worst_stage"]}, {mem["peak_phase"]})',
                "fits": mem["fits"],
                **_said(memory_checked_line(mem["checked"])),
                "step time": f'{met["step_time_s"]:,.2f} s',
                "tokens/s": f'{met["tokens_per_s"]:,.0f} ({met["tokens_per_s_per_gpu"]:,.0f} per GPU)',
                # the shares recommend's throughput line gives: what of the step is not compute
                "MFU": f'{met["mfu_pct"]:.1f} %', "exposed communication": f'{met["comm_overhead_pct"]:.1f} %',
                "pipeline bubble": f'{met["bubble_pct"]:.1f} %'}
    # as recommend prints them (a 1T budget read '1,000B tokens', a short run '0.0 h (0.0 days)', '$0'),
    # and without a budget the flag that gives one, as recommend and memory say it
    from shardwise.cli.output import NO_BUDGET, cost_text, duration_text, token_count
    if met.get("time_to_train_h") is not None:
        headline[f'time to train {token_count(met["token_budget"])}'] = duration_text(met)
        if met.get("cost") is not None:
            headline["cost"] = cost_text(met["cost"], met["price_per_gpu_hour"])
    else:
        headline["time to train"] = NO_BUDGET
    headline.update(_said(checked_line(met["checked"])))

    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>shardwise report: {_e(r['title'])}</title><style>{CSS}</style></head><body>",
        f"<h1>shardwise report: {_e(r['title'])}</h1>",
        f'<p class="muted">shardwise {_e(r["version"])}; {len(rec["trace"])} rule firings; '
        f'{rec["search"]["valid"]:,} valid layouts scored, {rec["search"]["allowed"]:,} meet every hard rule</p>',
        '<h2 id="recommendation">Recommendation</h2>', f'<p class="layout">{_e(r["describe"])}</p>',
        _kv(headline),
        _decision(rec["search"]),
        "".join(f'<p class="warn">{_e(w)}</p>' for w in rec["warnings"]),
        "".join(f'<p class="muted">note: {_e(n)}</p>' for n in rec["notes"]),
        # a setting the job does not have (an adapter's rank on a full run) is None: left out
        '<h2 id="job">Job</h2>', _kv({k: v for k, v in rec["job"].items() if v is not None}, 3),
        "".join(f'<p class="muted">assumed: {_e(a)}</p>' for a in rec["assumptions"]),
        '<h2 id="memory">Memory per GPU</h2>', _stages_note(r["stages"], rec["layout"]["pp"]),
        '<div class="row"><div class="figure">',
        chart(r["stages"], mem["capacity_gib"], mem["worst_stage"]), "</div>",
        _table([[human(k), f"{v:.2f}"] for k, v in mem["breakdown_gib"].items() if v]
               # what offloading keeps off the GPU, as `memory` says it (not part of the peak)
               + ([[host_memory_label(rec["layout"]["offload"]), f"{mem['host_offload_gib']:.2f}"]]
                  if mem.get("host_offload_gib") else []),
               [f'at the peak (stage {mem["worst_stage"]}, {mem["peak_phase"]})', "GiB"]), "</div>",
        '<h2 id="rationale">Why each setting</h2>',
        f'<p class="muted">What-ifs tried: {_e("; ".join("if " + w for w in r["what_ifs_tried"]))}.</p>',
        "".join(_setting(s) for s in r["settings"]),
        '<h2 id="decision-trace">Decision trace</h2>',
        '<p class="muted">Left to right: the facts each rule read &rarr; the rules that fired (stratum 1: job '
        'facts, 2: feasibility, 3: the answer) &rarr; what they added (grey: hard constraints, blue: pins, green: '
        'preferences honoured, red: broken; yellow: warnings and notes, which do not constrain the search) '
        '&rarr; the search &rarr; one row per setting. The dashed box is the fastest layout, when the headline '
        'is not it.</p>',
        f'<div class="figure" id="trace">{r["trace_svg"]}</div>',
        _table([[t["seq"], t["rule"], location(t["file"], t["line"]), t["stratum"],
                 "; ".join(f"{k} = {shown_value(v)}" for k, v in t["facts"].items()),
                 "; ".join((f'{a["kind"]} {a.get("setting", "")}={a["value"]}' if a["kind"] == "pin" else
                            f'{a["kind"]} {a["text"]}' + (f' (worth {a["worth"]:g}%)' if "worth" in a else ""))
                           for a in t["added"])] for t in rec["trace"]],
               ["#", "rule", "where", "stratum", "facts read", "added"]),
        '<h2 id="alternatives">Ranked alternatives</h2>',
        _table([[a["rank"], a["describe"], f'{a["metrics"]["tokens_per_s"]:,.0f}', a["metrics"]["mfu_pct"],
                 f'{a["memory"]["peak_gib"]} GiB', a["why_not"] or "the headline"] for a in rec["alternatives"]],
               ["rank", "layout", "tokens/s", "MFU %", "peak", "why not"]),
        '<h2 id="track-record">The runs behind the checked lines</h2>', _track_record(r["track_record"]),
        '<h2 id="exports">Exports</h2>',
        "".join(_export(name, ex) for name, ex in rec["exports"].items()),
        '<h2 id="rule-files">Rule files</h2>',
        _table([[f["file"], f["sha256"]] for f in rec["rule_files"]], ["file", "SHA-256"]),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
