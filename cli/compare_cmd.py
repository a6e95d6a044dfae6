"""`shardwise compare`: the best layout, its speed, time and cost for each variant of a job.

Answers "should we buy H200s, or 128 GPUs?" (seed 003): every combination of the --vary
values is a job of its own, decided as `recommend` decides it; the row shows its headline.
"""
from __future__ import annotations

import math

import click

from shardwise.kb.errors import InputError

from .options import job_options, parse_vary, variant_settings
from .output import dollars, emit, format_option, hours, table


def parse_gpu_prices(texts: tuple) -> dict:
    """--gpu-price h100-sxm=2.49 --gpu-price h200=3.10 -> {"h100-sxm": 2.49, "h200": 3.1}: each GPU
    type's own price of a GPU-hour, so that a row's cost is at its GPU's price (one
    --price-per-gpu-hour for every type compares an H100 and an H200 as if they cost the same).
    A name not in the catalog, a price that is not a positive number, or one GPU priced twice is
    refused."""
    from click import BadParameter

    from shardwise.kb import catalog

    from .options import PLAIN_FLOAT
    out = {}
    for text in texts:
        name, sep, price = text.partition("=")
        if not sep or not name.strip() or not price.strip():
            raise InputError(f"--gpu-price {text!r}: expected GPU=PRICE, e.g. h200=3.10 (dollars a GPU-hour)")
        gpu = catalog.gpu(name, "--gpu-price").name
        try:
            value = PLAIN_FLOAT.convert(price.strip(), None, None)
        except (ValueError, BadParameter):
            value = None
        if value is None or not 0 <= value <= 1000:
            raise InputError(f"--gpu-price {text!r}: the price must be a number of dollars from 0 to 1000 in the "
                             "digits 0-9, e.g. 3.10 (the range --price-per-gpu-hour takes)")
        if gpu in out:
            raise InputError(f"--gpu-price: {gpu} is priced twice; give each GPU type one price")
        out[gpu] = value
    return out


def priced_rows(prices: dict, settings: dict, varied: list) -> None:
    """Refuse --gpu-price where a row would be costed by a rule the user did not give: a GPU the
    rows run on with no price of its own and no --price-per-gpu-hour for the rest (its cost
    would be left out), a priced GPU no row runs on (a typo's price would go unused), or
    --vary price-per-gpu-hour beside it (which price a row takes would be ambiguous)."""
    from shardwise.kb import catalog
    if any(k == "price_per_gpu_hour" for k, _ in varied):
        raise InputError("--gpu-price and --vary price-per-gpu-hour: give one (--gpu-price prices each GPU type, "
                         "--vary makes a row of each price)")
    rows = [catalog.gpu(g).name for g in (dict(varied).get("gpu") or [settings.get("gpu") or "h100-sxm"])]
    unused = sorted(set(prices) - set(rows))
    if unused:
        raise InputError(f"--gpu-price {', '.join(unused)}: no row runs on {'it' if len(unused) == 1 else 'them'}; "
                         f"the rows run on {', '.join(dict.fromkeys(rows))}")
    unpriced = [g for g in dict.fromkeys(rows) if g not in prices]
    if unpriced and settings.get("price_per_gpu_hour") is None:
        raise InputError(f"--gpu-price gives no price for {', '.join(unpriced)}, which rows run on: add "
                         f"--gpu-price {unpriced[0]}=PRICE, or --price-per-gpu-hour for the GPUs it does not name")


def custom_figures_one_gpu(given: dict, varied: list) -> None:
    """Refuse --vary gpu beside a GPU's own TFLOP/s or bandwidth (kb/custom_gpu.py): the figures
    describe one GPU, and every row would take them whatever GPU it names, an H100 and a B200
    timed alike. (--gpu-memory still goes with it, as the memory each row's GPU is given.)"""
    from shardwise.kb.custom_gpu import SPEED_FIGURES
    figures = [given[k] for k in SPEED_FIGURES if k in given]
    if figures and any(k == "gpu" for k, _ in varied):
        raise InputError(f"{figures[0]} and --vary gpu: the figures describe one GPU, which every row would take "
                         "whatever GPU it names; compare GPU types from the catalog, or vary gpu_tflops / "
                         "gpu_hbm_gbps on one --gpu")


def compare_variants(settings: dict, vary: list, rules: list, prices: dict | None = None) -> list[dict]:
    from shardwise.decision.run import decide
    from shardwise.kb.build import build_job
    from shardwise.kb.defaults import ADAPTERS
    from shardwise.kb.errors import InputError

    from .progress import hook
    rows, refused = [], []
    for variant, given in variant_settings(settings, vary):
        if prices and given.get("gpu"):
            from shardwise.kb import catalog
            own = prices.get(catalog.gpu(given["gpu"]).name)
            if own is not None:
                given["price_per_gpu_hour"] = own
        if "training" in variant and variant["training"] not in ADAPTERS:
            given.pop("lora_rank", None)        # --vary training=lora,finetune: the rank is the lora row's
            given.pop("lora_dropout", None)
        try:
            job = build_job(**given)
            # a house rule may refuse one variant alone (preferences worth 100% on every layout of it)
            d = decide(job, rules, progress=hook())
        except InputError as e:
            # one variant the job cannot take (--vary mbs=2048 past the batch) is its row's answer;
            # when every variant is refused, the job itself is
            refused.append(e)
            rows.append({"variant": variant, "best": None, "fits": False, "tokens_per_s": None,
                         "time_to_train_h": None, "cost": None, "why": f"refused: {e}", "assumptions": [],
                         "warnings": []})
            continue
        # what recommend would say of this row: its defaults (a batch rounded for its GPU count) and warnings
        said = {"assumptions": list(d.assumptions), "warnings": list(d.warnings)}
        if d.layout is None:
            rows.append({"variant": variant, "best": None, "fits": False, "tokens_per_s": None,
                         "time_to_train_h": None, "cost": None, "why": d.nothing_allowed, **said})
            continue
        mt = d.step.metrics(d.job)
        rows.append({
            "variant": variant, "best": d.layout.describe(), "fits": bool(d.memory.fits),
            "tokens_per_s": round(mt["tokens_per_s"], 1), "time_to_train_h": mt.get("time_to_train_h"),
            "cost": mt.get("cost"), "speed_checked": bool(job.cluster.gpu.speed_checked_on),
            "checked": mt["checked"], **said,
            # what scaling_lines reads to say why more GPUs did not speed the job up in proportion
            "gpus": job.cluster.gpus, "global_batch": d.layout.global_batch, "dp": d.layout.dp,
            "model_parallel": d.layout.tp * d.layout.cp * d.layout.pp,
            "comm_overhead_pct": mt["comm_overhead_pct"], "bubble_pct": mt["bubble_pct"],
        })
    if refused and len(refused) == len(rows):
        raise refused[0]
    return rows


def adapter_only(given: dict, varied: list) -> None:
    """Refuse --lora-rank / --lora-dropout where --vary training names no adapter type: every row
    would drop it (compare_variants keeps it for the LoRA rows only), as build_job refuses it on
    a job without adapters rather than ignore it."""
    from shardwise.kb.defaults import ADAPTERS
    trainings = dict(varied).get("training")
    for key in ("lora_rank", "lora_dropout"):
        if key in given and trainings and not any(v in ADAPTERS for v in trainings):
            raise InputError(f"{given[key]}: applies to --training lora or qlora only, and --vary training="
                             f"{','.join(trainings)} has neither; drop it, or vary training over lora or qlora")


@click.command()
@job_options(raw=True)
@click.option("--vary", "vary", multiple=True, required=True, help="SETTING=V1,V2 (repeatable), e.g. gpu=h100-sxm,h200")
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--gpu-price", "gpu_prices", multiple=True,
              help="GPU=PRICE (repeatable): that GPU type's price of a GPU-hour, e.g. h200=3.10; rows on it are costed "
                   "at it, the others at --price-per-gpu-hour")
@format_option
def compare(settings, given, vary, rules, gpu_prices, fmt):
    """Compare the best layout, speed, time and cost across variants of a job."""
    varied = parse_vary(vary)
    prices = parse_gpu_prices(gpu_prices)
    if prices:
        priced_rows(prices, settings, varied)
    for key, values in varied:
        # each row takes its --vary value in place of the job's: a job value would silently vanish
        if key in given:
            raise InputError(f"{given[key]} and --vary {key}={','.join(map(str, values))}: give one (each row "
                             f"takes its --vary value in place of the job's own)")
    custom_figures_one_gpu(given, varied)
    adapter_only(given, varied)
    rows = compare_variants(settings, varied, list(rules), prices)
    priced = settings.get("price_per_gpu_hour") is not None or any(k == "price_per_gpu_hour" for k, _ in varied) \
        or bool(prices)
    heads = [k for k, _ in varied]
    best = best_rows(rows, heads)
    scaling = scaling_lines(rows, heads)
    emit({"variants": rows, **{k: v[0] for k, v in best.items()}, "scaling": scaling}, fmt,
         lambda markdown: render(rows, heads, markdown, priced, [v[1] for v in best.values() if v[1]] + scaling))


def _no_layout(why: str) -> str:
    """A row without a layout, as its decision said why: refused (its first clause), no valid
    layout (the validity rules left none), the rules allow none, or nothing fits in memory."""
    if why.startswith("refused: "):
        return "refused: " + why.split(";")[0].removeprefix("refused: ")
    if why.startswith("no valid layout"):
        return "no valid layout (" + why.removeprefix("no valid layout").lstrip(": ").split(";")[0] + ")"
    if "the rules allow none" in why:
        return "fits, but the rules allow none"
    return "nothing fits"


def likely(c: dict | None) -> str:
    """A row's likely tokens/s from the step-time model's track record (recommend's `speed checked:`
    line): the rows' estimates are not equally sure (GPT-OSS 120B's Megatron runs read 44-57% fast,
    DeepSpeed has no runs), so a table of estimates alone ranks them as if they were."""
    if c is None:
        return "-"
    if not c["runs"]:
        return "unchecked"
    lo, hi = c["tokens_per_s"]
    return f"{lo:,.0f}-{hi:,.0f}"


def render(rows: list[dict], heads: list[str], markdown: bool, priced: bool = False, scaling=()) -> str:
    shown = lambda r: r["best"] or _no_layout(r.get("why", ""))  # noqa: E731
    # a GPU no measured or published run checks (warn.unchecked-gpu-speed): its speed is an upper bound
    unchecked = lambda r: "*" if r["best"] and not r.get("speed_checked", True) else ""  # noqa: E731
    body = [[*(r["variant"][k] for k in heads), shown(r),
             f"{r['tokens_per_s']:,.0f}{unchecked(r)}" if r["tokens_per_s"] else "-",
             likely(r.get("checked")),
             f"{hours(r['time_to_train_h'])}{unchecked(r)}" if r["time_to_train_h"] is not None else "-",
             f"{dollars(r['cost'])}{unchecked(r)}" if r["cost"] is not None else "-"] for r in rows]
    out = table(body, [*heads, "best layout", "tokens/s", "likely tokens/s", "hours", "cost"], markdown=markdown)
    answered = [r for r in rows if r["best"]]
    note = ""
    if answered and all(r["time_to_train_h"] is None for r in answered):
        note = "hours and cost need --token-budget" + ("" if priced else ", and cost --price-per-gpu-hour too")
    elif answered and all(r["cost"] is None for r in answered):
        note = "cost needs --price-per-gpu-hour"
    if any(unchecked(r) for r in rows):
        note = "; ".join(x for x in (note, "* no measured or published run on that GPU checks its speed: the "
                                           "tokens/s an upper bound, hours and cost a lower one (kb/data/gpus.yaml "
                                           "speed_checked_on)") if x)
    said = [*scaling, *said_of_rows(rows, heads)]
    if said:
        out += "\n\n" + "\n".join(f"- {x}" if markdown else x for x in said)
    # a blank line first: in Markdown a line right under a table is read as one of its rows
    return out + (f"\n\n({note})" if note else "")


def variant_label(row: dict, heads: list[str]) -> str:
    """A row as the lines under the table name it: its varied settings, 'gpus=64 gpu=h200'."""
    return " ".join(f"{k}={row['variant'][k]}" for k in heads)


def said_of_rows(rows: list[dict], heads: list[str]) -> list[str]:
    """Each warning once, naming the rows it concerns ('every row' where all decided rows have
    it), then the assumptions that differ between rows, each naming its rows: two rows whose
    default batch was rounded differently (1,024 and 1,056 sequences on 16 and 24 GPUs) say so,
    since the table's tokens/s hides it. An assumption every row shares does not tell the rows
    apart (recommend on any row states it) -- except one that bounds the table's hours and cost
    (kb/resolve.RLHF_SCOPE_TAG: an RLHF step timed without its rollout), said once for every row.
    In the rows' order, so the same job gives the same lines."""
    from shardwise.kb.resolve import RLHF_SCOPE_TAG
    decided = [i for i, r in enumerate(rows) if not r.get("why", "").startswith("refused: ")]
    lines = []
    for kind, field in (("warning", "warnings"), ("assumption", "assumptions")):
        where: dict[str, list[int]] = {}
        for i in decided:
            for text in rows[i][field]:
                where.setdefault(text, []).append(i)
        for text, idx in where.items():
            everywhere = len(idx) == len(decided)
            if kind == "assumption" and everywhere and not text.startswith(RLHF_SCOPE_TAG):
                continue
            which = ("every row" if everywhere and len(decided) > 1
                     else ", ".join(variant_label(rows[i], heads) for i in idx))
            lines.append(f"{kind} ({which}): {text}")
    return lines


def best_rows(rows: list[dict], heads: list[str]) -> dict:
    """The fastest row (most tokens/s) and the cheapest (least cost), each with its lead over the
    next row, as {"fastest": (variant or None, line), "cheapest": ...}: the budget question is
    which row, and by how much. Among equal rows the first is named, with the tie said."""
    out = {}
    for name, key, sign in (("fastest", "tokens_per_s", -1), ("cheapest", "cost", 1)):
        ranked = sorted((r for r in rows if r["best"] and r[key] is not None), key=lambda r: sign * r[key])
        if len(ranked) < 2:
            out[name] = (None, "")
            continue
        top, nxt = ranked[0], ranked[1]
        value = (f"{top['tokens_per_s']:,.0f} tokens/s" + (f", {hours(top['time_to_train_h'])} h"
                 if top["time_to_train_h"] is not None else "")) if key == "tokens_per_s" else dollars(top["cost"])
        # the lead as the next row's shortfall: the fastest is gap% faster, the next costs gap% more
        # (a row priced at 0 costs nothing: the next's cost is said in dollars, no ratio of it)
        gap = ((top[key] / nxt[key] - 1 if key == "tokens_per_s" else nxt[key] / top[key] - 1) * 100
               if top[key] else math.inf)
        said = f"{gap:.1f}%" if gap >= 0.05 else "less than 0.1%"
        other = variant_label(nxt, heads)
        lead = (f"tied with {other}" if top[key] == nxt[key] else
                f"the next, {other}, costs {dollars(nxt[key])}" if not top[key] else
                f"{said} faster than the next, {other}" if key == "tokens_per_s" else
                f"the next, {other}, costs {said} more")
        # a lead smaller than the spread of the model's error on runs like the top row (its likely
        # range, track_record) is no lead the estimate can vouch for: said so, not marked as a win
        err = (top.get("checked") or {}).get("error_pct") if (top.get("checked") or {}).get("runs") else None
        if err and top[key] != nxt[key] and gap < err[1] - err[0]:
            lead += (f", less than the {err[1] - err[0]:.1f}-point spread of the step-time model's error on runs "
                     "like it (its likely tokens/s): too close to call")
        out[name] = (top["variant"], f"{name}: {variant_label(top, heads)} ({value}), {lead}")
    return out


# tokens/s below this share of the GPUs' ratio is said: more GPUs that do not speed the job up in
# proportion cost more for the same tokens (the budget question compare answers)
SCALING_SAID_BELOW = 0.9


def scaling_lines(rows: list[dict], heads: list[str]) -> list[str]:
    """Where --vary gpus makes rows that differ only in the GPU count, each step up whose tokens/s
    grows by less than SCALING_SAID_BELOW x the GPUs' ratio is said, with its time and cost ratios
    and why: the global batch (data parallelism splits it evenly in whole sequences, so DP is at
    most gcd(global batch, GPUs), and GPUs past that go to TP, CP or PP, which split each
    sequence's work at more communication: kb/validity batch-divides), else the shares of the
    step that grew (exposed communication, the pipeline bubble)."""
    if "gpus" not in heads:
        return []
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["best"]:
            groups.setdefault(tuple((k, r["variant"][k]) for k in heads if k != "gpus"), []).append(r)
    lines = []
    for key, group in groups.items():
        label = " ".join(f"{k}={v}" for k, v in key)
        group = sorted(group, key=lambda r: r["gpus"])
        for a, b in zip(group, group[1:]):
            more, faster = b["gpus"] / a["gpus"], b["tokens_per_s"] / a["tokens_per_s"]
            if b["gpus"] == a["gpus"] or faster >= SCALING_SAID_BELOW * more:
                continue
            why = []
            most_dp = math.gcd(b["global_batch"], b["gpus"])
            # the batch is the cause only where it keeps DP from growing with the GPUs
            if most_dp < a["dp"] * more and b["dp"] < a["dp"] * more:
                why.append(f"the global batch of {b['global_batch']:,} sequences splits evenly over at most DP "
                           f"{most_dp:,} on {b['gpus']:,} GPUs, so the added GPUs went to TP x CP x PP "
                           f"({a['model_parallel']} -> {b['model_parallel']}), which splits each sequence's work "
                           "at more communication (a larger --global-batch would let DP grow)")
            for name, k in (("exposed communication", "comm_overhead_pct"), ("pipeline bubble", "bubble_pct")):
                if b[k] >= a[k] + 1:
                    why.append(f"{name} {a[k]:.0f}% -> {b[k]:.0f}% of the step")
            cost = (f", the cost x{b['cost'] / a['cost']:.2f}" if a["cost"] and b["cost"] is not None else "")
            time = (f": the time x{b['time_to_train_h'] / a['time_to_train_h']:.2f}, not x{1 / more:.2f}{cost}"
                    if a["time_to_train_h"] and b["time_to_train_h"] is not None else "")
            lines.append(f"scaling{f' ({label})' if label else ''}: {a['gpus']:,} -> {b['gpus']:,} GPUs ({more:g}x) "
                         f"give {faster:.2f}x the tokens/s{time}"
                         + (f"; {'; '.join(why)}" if why else "; per GPU "
                            f"{a['tokens_per_s'] / a['gpus']:,.0f} -> {b['tokens_per_s'] / b['gpus']:,.0f} tokens/s"))
    return lines
