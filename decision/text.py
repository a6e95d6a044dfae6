"""How the decision's numbers read in text (no imports: the CLI's renderers use it cheaply)."""
from __future__ import annotations


def _decimals(x: float) -> int | None:
    """How many decimals a percent difference is read to: 0.1 or more to one, below that to
    two, and under 0.005 none (shown as 0: the estimator cannot tell such layouts apart)."""
    x = abs(x)
    return 1 if round(x, 2) >= 0.1 else 2 if x >= 0.005 else None


def pct(x: float) -> str:
    """A percent difference as people read it, unsigned (_decimals)."""
    n = _decimals(x)
    return f"{abs(x):.{n}f}%" if n else "0%"


def pct_value(x: float) -> float:
    """The number pct() shows, signed: the JSON's percents are rounded with it, so that a
    renderer reading the JSON and one reading the unrounded figure print the same digits
    (rounding to 2 decimals and then to 1 turned -2.749 into 2.8% beside a 2.7%)."""
    n = _decimals(x)
    return round(x, n) if n else 0.0


def signed_pct(x: float) -> str:
    """A percent difference with its sign, read as pct() reads it: '+1.2%', '-0.05%', and '0%'
    (no '-0%') for a tie -- so that a line's '(-0.05%)' and its '0.05% slower' agree."""
    p = pct(x)
    return p if p == "0%" else ("+" if x > 0 else "-") + p


def slower(x: float) -> str:
    """'3.2% slower', or 'as fast, to 0.01%' when the estimator cannot tell the two apart."""
    p = pct(x)
    return f"{p} slower" if p != "0%" else "as fast, to 0.01%"


def slower_or_faster(x: float) -> str:
    """How much slower a layout is, ``x`` percent (a negative ``x``: how much faster)."""
    return slower(x) if x >= 0 else faster(-x)


def faster(x: float) -> str:
    """'3.2% faster', or 'as fast (to 0.01%)' when the estimator cannot tell the two apart."""
    p = pct(x)
    return f"{p} faster" if p != "0%" else "as fast (to 0.01%)"


def weighed(s: dict) -> str:
    """How the choice weighed the fastest layout against the headline (a search summary with
    departures): the departures' worth against the share of speed given up, where the two
    layouts break no other preference -- the headline is kept exactly when that share is at most
    the worth; otherwise the products the choice compared, tokens/s x (1 - the worths each
    breaks), which the worth alone would misstate (a preference both break weighs in both)."""
    worth = sum(d["worth_pct"] for d in s["departures"])
    fast, head = s["best"]["tokens_per_s"], s["headline_tokens_per_s"]
    pf, ph = s["best"]["worth_broken_pct"], s["headline_worth_broken_pct"]
    if ph == 0 and abs(pf - worth) < 1e-6:
        return f"{worth:g}% of worth against {pct(s['departures'][0]['given_up_pct'])} of its speed given up"
    return (f"tokens/s x (1 - worths broken) is {fast:,.0f} x (1 - {pf:.3g}%) = {fast * (1 - pf / 100):,.0f} "
            f"against the headline's {head:,.0f} x (1 - {ph:.3g}%) = {head * (1 - ph / 100):,.0f}")


def departure(s: dict, fastest: str = "the fastest") -> str:
    """The sentence both renderers (text and HTML) give a choice that left the fastest layout:
    which layout that was, how much faster, the preferences it breaks and how they were weighed."""
    names = ", ".join(f"{d['rule']} (worth {d['worth_pct']:g}%)" for d in s["departures"])
    shared = s["best"].get("breaks_as_headline") or []
    if shared:      # weighed() then shows the worths each layout breaks: every one is named
        names += " and, as the headline, " + ", ".join(f"{d['rule']} (worth {d['worth_pct']:g}%)" for d in shared)
    return (f"{fastest} ({s['best']['layout']}, {s['best']['tokens_per_s']:,.0f} tokens/s) is "
            f"{faster(s['departures'][0]['cost_pct'])} but breaks {names}: {weighed(s)}")


def was_an_option(info: dict) -> bool:
    """Whether a setting of the answer (its ``settings.<name>``) is worth a line: offloading,
    which only Megatron on a GPU with a chip-to-chip host link offers, is left out of the table
    and the report where it was 0 with no other value tried (search/space.offload_steps)."""
    return bool(info["value"] or info["alternatives"])


# The order the answer's table, the report and the trace graph give the settings in: the model
# split (TP with its SP, PP with its VP, CP, EP) before the replication over it (DP, ZeRO), then
# what each rank runs (micro-batch, recomputation) and where its activations wait (offload)
SHOWN_ORDER = ("tp", "sp", "pp", "vp", "cp", "ep", "dp", "zero", "mbs", "recompute", "offload")


def shown_settings(settings: dict) -> list[str]:
    """The settings of an answer (its ``settings``) a reader is shown, in SHOWN_ORDER: every one,
    but offloading only where it was an option (was_an_option)."""
    return [s for s in SHOWN_ORDER if s in settings and (s != "offload" or was_an_option(settings[s]))]


def hsdp_group(lay: dict) -> int:
    """The HSDP shard group of an answer's layout (its ``layout`` dict): the ranks ZeRO shards over
    where that is fewer than every DP x CP rank, else 0 -- what recommend's table and memory's layout
    line say beside zero, as Layout.describe writes shard=N."""
    if lay["zero_stage"] >= 1 and lay["shard_group"] < lay["dp"] * lay["cp"]:
        return lay["shard_group"]
    return 0


def host_memory_label(layers: int) -> str:
    """How the memory breakdown (memory, recommend, the report) names what offloading keeps off the
    GPU, outside the peak: the activations of ``layers`` layers waiting in host memory."""
    return f"in host memory ({layers} layers offloaded)"
