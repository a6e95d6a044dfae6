"""The memory of one GPU per pipeline stage as an inline SVG stacked bar chart, against capacity.

Hand-written SVG (no plotting library, no script): the report must open offline, and the same
estimate must give the same bytes.
"""
from __future__ import annotations

from html import escape

# The estimator's components (kb/memory/estimate.py) gathered into what a reader weighs.
GROUPS = {
    "weights": ("weights", "frozen_weights", "fp8_weight_cache", "compute_copies"),
    "gradients": ("gradients",),
    "optimizer": ("master_weights", "optimizer", "optimizer_temporaries"),
    "activations": ("activations", "backward_working_set"),
    "logits": ("logits",),
    "buffers": ("comm_buffers", "cuda_context", "workspaces", "fragmentation"),
}
COLOURS = {"weights": "#4e79a7", "gradients": "#f28e2b", "optimizer": "#e15759", "activations": "#76b7b2",
           "logits": "#59a14f", "buffers": "#bab0ac"}
MAX_BARS = 16


def grouped(breakdown: dict) -> dict:
    return {g: sum(breakdown.get(k, 0.0) for k in keys) for g, keys in GROUPS.items()}


def pick_stages(stages: list[dict], worst: int) -> list[dict]:
    """All stages up to MAX_BARS; beyond, the first two, the worst and the last two."""
    if len(stages) <= MAX_BARS:
        return stages
    keep = {0, 1, worst, len(stages) - 2, len(stages) - 1}
    return [s for s in stages if s["stage"] in keep]


def chart(stages: list[dict], capacity: float, worst: int) -> str:
    shown = pick_stages(stages, worst)
    top = max([capacity] + [sum(grouped(s["breakdown_gib"]).values()) for s in shown]) * 1.08
    w_bar, gap, left, plot_h, top_pad = 46, 22, 56, 300, 16
    gap = max(gap, (360 - len(shown) * w_bar) / len(shown))     # a few bars still get a readable plot
    width = round(left + len(shown) * (w_bar + gap) + 170)
    height = plot_h + top_pad + 58

    def y(v: float) -> float:
        return top_pad + plot_h * (1 - v / top)

    out = [f'<svg id="memory-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="memory per GPU by pipeline stage">',
           '<style>text{font:11px sans-serif;fill:#222}</style>']
    step = 10 ** max(0, len(str(int(top))) - 1)
    step = step * 2 if top / step > 6 else step
    v = 0
    while v <= top:
        out.append(f'<line x1="{left}" x2="{width - 170}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e3e3"/>'
                   f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
        v += step
    out.append(f'<text x="12" y="{top_pad + plot_h / 2:.0f}" transform="rotate(-90 12 {top_pad + plot_h / 2:.0f})" '
               'text-anchor="middle">GiB per GPU</text>')
    for i, s in enumerate(shown):
        x = left + gap / 2 + i * (w_bar + gap)
        base = 0.0
        for g, gib in grouped(s["breakdown_gib"]).items():
            if gib <= 0:
                continue
            out.append(f'<rect class="seg seg-{g}" x="{x:.1f}" y="{y(base + gib):.1f}" width="{w_bar}" '
                       f'height="{y(base) - y(base + gib):.1f}" fill="{COLOURS[g]}">'
                       f'<title>stage {s["stage"]}: {g} {gib:.2f} GiB</title></rect>')
            base += gib
        label = f'stage {s["stage"]}' + (" *" if s["stage"] == worst else "")
        out.append(f'<text x="{x + w_bar / 2:.1f}" y="{top_pad + plot_h + 16}" text-anchor="middle">{escape(label)}</text>'
                   f'<text x="{x + w_bar / 2:.1f}" y="{y(base) - 4:.1f}" text-anchor="middle">{base:.1f}</text>')
    cy = y(capacity)
    out.append(f'<line id="capacity" x1="{left}" x2="{width - 170}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="#c00" '
               f'stroke-width="2" stroke-dasharray="6 4"/><text x="{width - 166}" y="{cy + 4:.1f}" fill="#c00">'
               f'capacity {capacity:.1f} GiB</text>')
    for j, g in enumerate(GROUPS):
        ly = top_pad + 60 + j * 18
        out.append(f'<rect x="{width - 160}" y="{ly}" width="12" height="12" fill="{COLOURS[g]}"/>'
                   f'<text x="{width - 142}" y="{ly + 10}">{g}</text>')
    note = "" if len(shown) == len(stages) else f"; {len(stages)} stages, showing first, worst, last"
    out.append(f'<text x="{left}" y="{height - 8}">each stage at its worst phase; * the stage that sets the peak{note}</text>')
    out.append("</svg>")
    return "\n".join(out)
