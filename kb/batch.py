"""The global batch in sequences: from the user's sequences, their tokens, or the default for
the training type; every conversion and default said in one text (DESIGN.md, "Batch").

A token batch becomes a whole number of sequences. The exact quotient rarely matters to
within a few percent, but its factors decide which data-parallel degrees and micro-batches a
layout may take (mbs x DP must divide the batch): 31 sequences, a prime, leaves DP = 1 on any
cluster, and 20,968 = 8 x 2,621 leaves 8 GPUs only micro-batch 1. So a token batch is taken
as the sequence count **within 5% of the exact quotient that the most data-parallel degrees of
the cluster divide** -- the divisors d of the GPU count with mbs x d dividing the count (the
user's mbs, else 1) -- then the one that the most splits mbs x d divide (mbs each micro-batch
the search tries, powers of two up to MBS_MAX, when the advisor chooses it), then the count
nearest the quotient, then the smaller. DP comes first: a framework without pipelining needs
DP = GPUs / TP, and 128 sequences on 24 GPUs (DP 1-8 only) leave it no layout where 132 allows
DP 12 (for the Trainer, which has no pipeline, the degrees of TP alone come first: GPUs / TP,
TP inside the NVLink domain). Where no count within 5% leaves the Trainer any such degree (128
sequences on 120 GPUs of 8 a node: DP 15-120), a default batch (not a user's) moves up to 25%, to the nearest count that the largest
such degree divides (120, DP 120). A count that is already best stays as it is;
a token batch is never refused for rounding. Below 10 sequences no whole count may be
within 5%: the two around the quotient compete (at least one sequence). For a layout the
user fixed (``memory --layout``), only its own mbs x DP counts: the count within 5% it
divides, else its nearest multiple (said with the change). The default batch is a token
batch for pre-training and 128 sequences for fine-tuning, and moves the same way. Sequences
given as sequences (--global-batch) are the user's exact choice and are never moved.
"""
from __future__ import annotations

import math

from .choices import MBS_CHOICES, MBS_MAX
from .counts import binary_label

# DESIGN.md "Batch": a token batch may move to a workable sequence count within 5%.
TOLERANCE = 0.05

# Pre-training: 4M tokens per step, the Llama 3 paper's batch (section 3.4.1: "an initial batch
# size of 4M tokens and sequences of length 4,096" for 405B, doubled later in training).
PRETRAIN_BATCH_TOKENS = 4 * 2 ** 20

# Fine-tuning (full, LoRA, QLoRA, RLHF): 128 sequences per step, the global batch of Stanford
# Alpaca's recipe (tatsu-lab/stanford_alpaca README, "Batch size 128", Hugging Face Trainer)
# and of Vicuna's (lm-sys/FastChat README, "Global Batch Size 128"); Llama 2-Chat's SFT used 64
# (Touvron et al. 2023, section 3.1). A count of sequences, whatever their length.
FINETUNE_BATCH_SEQUENCES = 128


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def dp_degrees(sequences: int, gpus: int, mbs: int = 1) -> list[int]:
    """The data-parallel degrees this batch allows on this cluster: divisors d of the GPU
    count (every layout's DP divides it) with mbs x d dividing the batch."""
    return [d for d in _divisors(gpus) if sequences % (mbs * d) == 0]


def tp_dp_degrees(sequences: int, gpus: int, tps: tuple[int, ...], mbs: int = 1) -> list[int]:
    """The data-parallel degrees this batch allows to a layout of tensor parallelism alone:
    DP = GPUs / TP for each TP of ``tps`` (the degrees the model and the NVLink domain allow,
    kb/resolve.tensor_degrees), with mbs x DP dividing the batch. The Trainer, without
    pipelining, has no other way to reach DP short of context parallelism."""
    return [gpus // t for t in tps if gpus % t == 0 and sequences % (mbs * (gpus // t)) == 0]


def splits(sequences: int, gpus: int, mbs_options: tuple[int, ...]) -> int:
    """How many (micro-batch, data-parallel degree) pairs this batch allows: mbs from
    ``mbs_options``, d a divisor of the GPU count, mbs x d dividing the batch."""
    return sum(len(dp_degrees(sequences, gpus, m)) for m in mbs_options)


def workable_count(exact: float, gpus: int, mbs: int | None = 1, tps: tuple[int, ...] | None = None) -> int:
    """The sequence count a token batch of ``exact`` sequences is taken as (module docstring):
    among whole counts within 5% of ``exact`` (or, when none is, the two around it), the one
    the most DP degrees of tensor parallelism alone divide (tp_dp_degrees, TP one of ``tps``;
    every divisor of the GPU count when None), then the most DP degrees (at ``mbs``, or 1
    when it is None), then the most (micro-batch, DP degree) splits -- ``mbs`` the user's
    micro-batch, or None when the advisor chooses it: splits then counts MBS_CHOICES, the powers
    of two up to MBS_MAX (the search itself tries every divisor of the count up to MBS_MAX,
    search/space.micro_batches); ties to the nearest, then the smaller.

    All three counts depend only on q = gcd(n, M), M = the largest mbs x the GPU count (every
    mbs x d divides M), and the multiple of q nearest ``exact`` is at least as near as n: so
    the best count is among the two multiples around ``exact`` of each divisor q of M (no scan
    of the range)."""
    options = MBS_CHOICES if mbs is None else (mbs,)
    lo, hi = max(1, math.ceil(exact * (1 - TOLERANCE))), math.floor(exact * (1 + TOLERANCE))
    if lo > hi:
        lo, hi = max(1, math.floor(exact)), max(1, math.ceil(exact))
    cands = {min(max(round(exact), lo), hi), lo, hi}
    for q in _divisors(max(options) * gpus):
        cands.update(k * q for k in (math.floor(exact / q), math.ceil(exact / q)))
    cands = [n for n in cands if lo <= n <= hi]
    tps = tuple(_divisors(gpus)) if tps is None else tps
    return min(cands, key=lambda n: (-len(tp_dp_degrees(n, gpus, tps, mbs or 1)),
                                     -len(dp_degrees(n, gpus, mbs or 1)), -splits(n, gpus, options),
                                     abs(n - exact), n))


# How far a batch may move when no count within TOLERANCE leaves a layout of tensor parallelism
# alone any data-parallel degree: without it the Trainer (no pipelining) has no layout at all
# on 120 or 240 GPUs at the 128-sequence default (8 per node: DP 15-240 only).
WIDENED = 0.25


def _widened(exact: float, gpus: int, mbs: int, tps: tuple[int, ...]) -> int | None:
    """The count within WIDENED of ``exact`` that the largest data-parallel degree of tensor
    parallelism alone (mbs x GPUs / TP) divides, the nearest, then the smaller; None if none."""
    lo, hi = exact * (1 - WIDENED), exact * (1 + WIDENED)
    units = [mbs * (gpus // t) for t in tps if gpus % t == 0]
    cands = {k * u for u in units for k in (math.floor(exact / u), math.ceil(exact / u))}
    cands = [n for n in cands if n >= 1 and lo <= n <= hi]
    if not cands:
        return None
    return min(cands, key=lambda n: (-max(tp_dp_degrees(n, gpus, tps, mbs)), abs(n - exact), n))


def _degrees_text(n: int, ds: list[int]) -> str:
    """'1,056 allows 8 degrees, DP 1, 2, 3, ..., 24': a batch and the data-parallel degrees it
    leaves a layout (the count first, as the choice counts them; a bare '8: 1, 2, ...' read as a ratio)."""
    if not ds:
        return f"{n:,} allows no degree"
    shown = ", ".join(f"{d:,}" for d in ds) if len(ds) <= 5 else \
        f"{', '.join(f'{d:,}' for d in ds[:3])}, ..., {ds[-1]:,}"
    return f"{n:,} allows {len(ds)} degree{'s' if len(ds) > 1 else ''}, DP {shown}"


def take(exact: float, gpus: int, mbs: int | None = 1, dp: int | None = None,
         tps: tuple[int, ...] | None = None, widen: bool = False) -> tuple[int, str]:
    """The whole count for ``exact`` sequences, and the text when it moved ('' when not);
    ``mbs`` None when the advisor chooses the micro-batch, ``tps`` the TP degrees a layout may
    take (None: any divisor of the GPU count); ``widen``: a default batch, which may move up to
    WIDENED where 5% leaves tensor parallelism alone no DP degree (a user's token batch moves
    5% at most). With ``dp`` (a layout already fixed) the degrees that count are those of that DP
    alone, so the best count is one that mbs x DP divides."""
    n = workable_count(exact, dp or gpus, mbs, (1,) if dp else tps)
    if widen and not dp and tps is not None and not tp_dp_degrees(n, gpus, tps, mbs or 1):
        wider = _widened(exact, gpus, mbs or 1, tps)
        if wider:
            top = max(tp_dp_degrees(wider, gpus, tps, mbs or 1))
            return wider, (f"taken as {wider:,} ({(wider - exact) / exact:+.2%}): no count within 5% leaves a layout "
                           f"of tensor parallelism alone (the Trainer has no pipeline; TP {', '.join(map(str, tps))}) a "
                           f"data-parallel degree that mbs x DP divides, so the count within {WIDENED:.0%} that the "
                           f"largest such degree divides (DP {top:,}), the nearest")
    whole_only = abs(n - exact) > TOLERANCE * exact      # no whole count within 5% (under 10 sequences)
    unit = (mbs or 1) * (dp or 1)
    # a fixed layout or a given micro-batch that no count within 5% fits: its nearest multiple
    to_unit = bool(n % unit) and exact >= unit
    if to_unit:
        n = round(exact / unit) * unit
    if n == exact:
        return n, ""
    whole = exact == int(exact)
    head = f"taken as {n:,} ({(n - exact) / exact:+.2%})"
    if whole_only or (dp and n % unit):
        return n, f"{head}: a step holds whole sequences, at least one"
    if dp or to_unit:
        far = abs(n - exact) > TOLERANCE * exact
        divisor = f"mbs x DP = {mbs} x {dp}" if dp else f"the micro-batch, {mbs},"
        return n, f"{head}, the nearest count {'' if far else 'within 5% '}that {divisor} divides"
    gpus_text = f"{gpus:,} GPU{'s' if gpus > 1 else ''}"
    at = f" at mbs {mbs}" if mbs and mbs > 1 else ""
    if tps is None or set(tps) == set(_divisors(gpus)):
        why = f"the count within 5% that the most data-parallel degrees of {gpus_text} divide{at} " \
              f"({_degrees_text(n, dp_degrees(n, gpus, mbs or 1))}"
    else:
        why = f"the count within 5% that the most data-parallel degrees of {gpus_text} divide{at}, first those " \
              f"of tensor parallelism alone (the Trainer has no pipeline, so DP = GPUs / TP for TP " \
              f"{', '.join(map(str, tps))}; {_degrees_text(n, tp_dp_degrees(n, gpus, tps, mbs or 1))}"
        if whole:
            why += f"; {_degrees_text(int(exact), tp_dp_degrees(int(exact), gpus, tps, mbs or 1))}"
        why += f"), then any ({_degrees_text(n, dp_degrees(n, gpus, mbs or 1))}"
    if whole:
        why += f"; {_degrees_text(int(exact), dp_degrees(int(exact), gpus, mbs or 1))}"
    if mbs is None:
        why += (f"), then the most micro-batch x DP splits ({splits(n, gpus, MBS_CHOICES)} of "
                f"{splits(gpus * MBS_MAX, gpus, MBS_CHOICES)}, micro-batches 1, 2, 4, ..., {MBS_MAX}")
        if whole:
            why += f"; {int(exact):,} allows {splits(int(exact), gpus, MBS_CHOICES)}"
    return n, f"{head}, {why})"


def from_tokens(tokens: float, seq_len: int, gpus: int, mbs: int | None = 1, dp: int | None = None,
                tps: tuple[int, ...] | None = None, widen: bool = False) -> tuple[int, str]:
    """Sequences for a token batch, and the text that says how they were counted."""
    exact = tokens / seq_len
    n, moved = take(exact, gpus, mbs, dp, tps, widen)
    label = binary_label(tokens)
    said = f"{label} tokens = {tokens:,.0f} tokens" if label else f"{tokens:,.0f} tokens"
    if not moved:
        return n, f"{said} = {n:,} sequences of {seq_len:,} tokens"
    places = 0 if exact == int(exact) else 1
    return n, f"{said} = {exact:,.{places}f} sequences of {seq_len:,} tokens, {moved}"


def default_batch(training: str, seq_len: int, gpus: int, mbs: int | None = 1, dp: int | None = None,
                  tps: tuple[int, ...] | None = None) -> tuple[int, str]:
    """The batch a job of this training type gets when the user gives none, and its text. A
    default is an assumption, so it moves within 5% like a token batch -- or, for the Trainer
    where 5% leaves tensor parallelism alone no DP degree, within WIDENED."""
    hint = "--global-batch or --global-batch-tokens to set it"
    if training == "pretrain":
        n, how = from_tokens(PRETRAIN_BATCH_TOKENS, seq_len, gpus, mbs, dp, tps, widen=True)
        return n, f"global batch not given: the pre-training default (Llama 3 paper, section 3.4.1), {how}; {hint}"
    n, moved = take(FINETUNE_BATCH_SEQUENCES, gpus, mbs, dp, tps, widen=True)
    moved = f", {moved}" if moved else ""
    return n, (f"global batch not given: the fine-tuning default (Stanford Alpaca's and Vicuna's recipes), "
               f"{FINETUNE_BATCH_SEQUENCES} sequences{moved}; {n:,} x {seq_len:,} = {n * seq_len:,} tokens per "
               f"step; {hint}")
