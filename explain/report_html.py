"""One self-contained HTML page from explain/report.build: no script, no external font, style
sheet or image, nothing fetched; every value escaped. Same data, same bytes."""
from __future__ import annotations

from html import escape

from .memory_chart import chart

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


def _kv(d: dict, pairs_per_row: int = 1) -> str:
    def shown(v):
        return ("yes" if v else "no") if isinstance(v, bool) else v
    cells = [f"<td>{_e(k)}</td><td>{_e(shown(v))}</td>" for k, v in d.items() if not isinstance(v, dict)]
    rows = "".join("<tr>" + "".join(cells[i:i + pairs_per_row]) + "</tr>" for i in range(0, len(cells), pairs_per_row))
    return f'<table class="kv">{rows}</table>'


def _setting(s: dict) -> str:
    out = [f'<div class="setting" id="why-{s["setting"]}"><h3>{_e(s["setting"].upper())} = {_e(s["value"])}</h3>']
    if not s["chain"]:
        out.append('<p class="muted">No rule set it: it kept its starting value.</p>')
    for c in s["chain"]:
        sets = ", ".join(f"{k}={v}" for k, v in c["set"].items())
        reads = "; ".join(f"{k} = {v}" for k, v in c["read"].items())
        if not c["rule"]:
            out.append(f"<p>derived &rarr; {_e(sets)}<br>because: {_e(c['because'])}</p>")
            continue
        head = f'#{c["seq"]} <code>{_e(c["rule"])}</code> ({_e(c["where"])})'
        context = c["role"] != "set"
        opening = f'<p class="muted">context, {_e(c["role"])}: ' if context else "<p>"
        out.append(f"{opening}{head}: {_e(c['outcome'])}{' &rarr; ' + _e(sets) if sets else ''}<br>"
                   + (f'<span class="muted">read: {_e(reads)}</span><br>' if reads else "")
                   + f"because: {_e(' '.join(c['because'].split()))}</p>")
    if s["alternatives"]:
        out.append(_table([[a["value"], a["rank"], a["describe"], f'{a["metrics"]["tokens_per_s"]:,.0f}',
                            a["why_not"] or "the rule pick"] for a in s["alternatives"]],
                          ["other value", "rank", "fastest fitting layout with it", "tokens/s", "why not"]))
    if s["would_change"]:
        out.append("<p>What would change it:</p><ul>" + "".join(f"<li>{_e(w)}</li>" for w in s["would_change"]) + "</ul>")
    out.append("</div>")
    return "".join(out)


def _export(name: str, ex: dict) -> str:
    if ex.get("refused"):
        return f'<p class="warn">{_e(name)}: refused: {_e(ex["refused"])}</p>'
    files = "".join(f"<details><summary><code>{_e(f)}</code></summary><pre>{_e(t)}</pre></details>"
                    for f, t in ex["files"].items())
    caveats = "".join(f"<li>{_e(c)}</li>" for c in ex["caveats"])
    return f"<h3>{_e(name)}</h3>{files}" + (f"<ul>{caveats}</ul>" if caveats else "")


def render(r: dict) -> str:
    rec = r["rec"]
    mem, met = rec["memory"], rec["metrics"]
    headline = {"peak memory per GPU": f'{mem["peak_gib"]} GiB of {mem["capacity_gib"]} GiB '
                                       f'(stage {mem["worst_stage"]}, {mem["peak_phase"]})',
                "fits": mem["fits"], "step time": f'{met["step_time_s"]} s',
                "tokens/s": f'{met["tokens_per_s"]:,.0f} ({met["tokens_per_s_per_gpu"]:,.0f} per GPU)',
                "MFU": f'{met["mfu_pct"]} %', "pipeline bubble": f'{met["bubble_pct"]} %'}
    for k, label in (("time_to_train_h", "time to train (h)"), ("cost", "cost")):
        if met.get(k) is not None:
            headline[label] = met[k]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>shardwise report: {_e(r['title'])}</title><style>{CSS}</style></head><body>",
        f"<h1>shardwise report: {_e(r['title'])}</h1>",
        f'<p class="muted">shardwise {_e(r["version"])}; {len(rec["trace"])} firings over {rec["states"]} states</p>',
        '<h2 id="recommendation">Recommendation</h2>', f'<p class="layout">{_e(r["describe"])}</p>',
        _kv(headline),
        "".join(f'<p class="warn">{_e(w)}</p>' for w in rec["warnings"]),
        "".join(f'<p class="muted">note: {_e(n)}</p>' for n in rec["notes"]),
        '<h2 id="job">Job</h2>', _kv(rec["job"], 3),
        "".join(f'<p class="muted">assumed: {_e(a)}</p>' for a in rec["assumptions"]),
        '<h2 id="memory">Memory per GPU</h2><div class="row"><div class="figure">',
        chart(r["stages"], mem["capacity_gib"], mem["worst_stage"]), "</div>",
        _table([[k, f"{v:.2f}"] for k, v in mem["breakdown_gib"].items() if v],
               [f'at the peak (stage {mem["worst_stage"]}, {mem["peak_phase"]})', "GiB"]), "</div>",
        '<h2 id="rationale">Why each setting</h2>',
        f'<p class="muted">What-ifs tried: {_e("; ".join(r["what_ifs_tried"]))}.</p>',
        "".join(_setting(s) for s in r["settings"]),
        '<h2 id="decision-trace">Decision trace</h2>',
        '<p class="muted">Facts (ellipses) &rarr; rules that fired, in firing order (boxes: green applied, '
        'grey no change, yellow refused or advice) &rarr; settings (diamonds).</p>',
        f'<div class="figure" id="trace">{r["trace_svg"]}</div>',
        _table([[t["seq"], t["rule"], f'{t["file"]}:{t["line"] or ""}', t["outcome"],
                 ", ".join(f"{k}={v}" for k, v in t["set"].items())] for t in rec["trace"]],
               ["#", "rule", "where", "outcome", "set"]),
        '<h2 id="alternatives">Ranked alternatives</h2>',
        _table([[a["rank"], a["describe"], f'{a["metrics"]["tokens_per_s"]:,.0f}', a["metrics"]["mfu_pct"],
                 f'{a["memory"]["peak_gib"]} GiB', a["why_not"] or "the rule pick"] for a in rec["alternatives"]],
               ["rank", "layout", "tokens/s", "MFU %", "peak", "why not"]),
        '<h2 id="exports">Exports</h2>',
        "".join(_export(name, ex) for name, ex in rec["exports"].items()),
        '<h2 id="rule-files">Rule files</h2>',
        _table([[f["file"], f["sha256"]] for f in rec["rule_files"]], ["file", "SHA-256"]),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
