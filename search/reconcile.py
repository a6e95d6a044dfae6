"""The rule pick checked against the search: alternatives, the gap, and plain advice.

The rules are a starting point to be checked, not a dogma: when the search finds a layout the
policies allow that is predicted clearly faster (more than CLEARLY_FASTER_PCT), the
recommendation says so and the trace records it; the rule pick itself is not replaced, so that
every setting keeps the rule that chose it.
"""
from __future__ import annotations

from shardwise.kb.layout import Layout

from .rank import POLICY_SCAN, SearchResult, differences
from .space import index_of

# the threshold for "clearly faster"; larger than the step-time model's median error on
# H100 BF16 rows (3.7%, benchmarks/throughput.py), so a gap above it is not noise of the model
CLEARLY_FASTER_PCT = 5.0
ALTERNATIVES = 5          # alternatives recommend lists (search --top N lists more)


def _nothing_allowed(res: SearchResult) -> str:
    """Why no best layout: memory, or house policies that forbid every layout that fits."""
    fitting = res.margin_count()
    if not fitting or not res.policies:
        return "the search found no layout that fits within the memory margin and the policies"
    first = next(int(i) for i in res.order if res.within_margin(int(i)))
    p = res.blocked_by(first)
    scanned = res.margin_count(POLICY_SCAN)
    which = f"fastest {scanned:,}" if scanned < fitting else f"{scanned:,}"
    return (f"{fitting:,} layouts fit within the memory margin, but the house policies allow none of the {which}: "
            f"the fastest breaks {p.kind} '{p.text}' of rule {p.rule} ({p.where})")


def reconcile(res: SearchResult, pick: Layout, pick_tps: float, pick_fits: bool, n: int = ALTERNATIVES) -> dict:
    sp = res.space
    pick = pick.canonical()
    pick_i = index_of(sp, pick)
    alternatives = []
    for rank_i, i in enumerate(res.order[:n + 1], 1):     # ranks count the pick too
        if i != pick_i and len(alternatives) < n:
            alternatives.append(res.entry(int(i), rank_i, pick, pick_tps))
    rank = res.rank_of(pick)
    best = res.best()
    out = {
        "layouts_scored": len(sp), "candidates": sp.candidates, "fit": int(len(res.order)),
        "excluded": [e for e in sp.excluded if e["excluded"]],
        "rule_pick_rank": rank, "best": None, "gap_pct": None, "advice": None,
    }
    if best is None:
        out["summary"] = _nothing_allowed(res)
        return {"search": out, "alternatives": alternatives}
    best_lay = sp.layout(best)
    best_tps = float(res.scores["tokens_per_s"][best])
    gap = 100 * (best_tps / pick_tps - 1) if pick_tps else None
    out["best"] = {"layout": best_lay.describe(), "tokens_per_s": round(best_tps, 1),
                   "peak_gib": round(float(res.scores["peak_gib"][best]), 2)}
    out["gap_pct"] = round(gap, 2) if gap is not None else None
    if best_lay == pick:
        out["summary"] = (f"the rule pick is the best of {len(sp):,} layouts scored "
                          "that the policies allow within the memory margin")
    elif not pick_fits:
        out["summary"] = f"the rule pick does not fit; the best layout found is {best_lay.describe()}"
        out["advice"] = out["summary"]
    elif gap is not None and gap > CLEARLY_FASTER_PCT:
        out["summary"] = (f"the search found a layout predicted {gap:.1f}% faster that the policies allow: "
                          f"{best_lay.describe()} ({differences(best_lay, pick)})")
        out["advice"] = out["summary"] + "; consider it, or add a policy that says why not"
    else:
        out["summary"] = (f"the rule pick ranks {rank if rank else 'outside the ranking'} of {len(res.order):,} "
                          f"fitting layouts; the best allowed is {gap:.1f}% faster ({differences(best_lay, pick)})")
    return {"search": out, "alternatives": alternatives}
