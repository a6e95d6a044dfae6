"""The choice: among the allowed layouts, the one that maximises predicted tokens/s x (1 - the
worths of the preferences it breaks); ties go to fewer layers offloaded to host memory, then more
memory headroom, then fewer moving parts,
then the smaller settings (a total order: the same job always gives the same answer)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .table import Table

# Objectives equal to this many significant digits are a tie: the estimators' floating-point
# noise between twin layouts (e.g. VP 12 and 13 that split the layers alike) is far below it.
TIE_DIGITS = 9


@dataclass
class Choice:
    index: int                  # the headline
    fastest: int                # the fastest allowed layout (preferences aside)
    objective: np.ndarray       # score, allowed layouts only (else -inf)
    penalty: np.ndarray         # the summed worths each layout breaks, 0-1
    score: np.ndarray           # tokens/s x (1 - broken worths), clipped at 0, every layout
    speed_decides: bool         # some allowed layout scores above 0 (breaks worths under 100%)


def moving_parts(t: Table, idx: np.ndarray) -> np.ndarray:
    """How many parallelisms and memory savers each of the layouts ``idx`` switches on."""
    a = t.space.arrays
    return ((a["tp"][idx] > 1).astype(int) + (a["pp"][idx] > 1) + (a["vp"][idx] > 1) + (a["cp"][idx] > 1)
            + (a["ep"][idx] > 1) + a["zero"][idx] + (a["shard"][idx] > 0) + a["sp"][idx] + a["rc"][idx])


def order_by(t: Table, value: np.ndarray, mask: np.ndarray, first: int = 1) -> np.ndarray:
    """The ``first`` best of ``mask``'s layouts (more when they tie), best first: higher value,
    then fewer offloaded layers, then lower peak, then fewer moving parts, then smaller settings.
    Only the layouts that can be among the first are sorted: a decision over millions of layouts
    asks for one or a few."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return idx
    top = float(np.max(value[idx])) or 1.0
    v = np.round(value[idx] / top, TIE_DIGITS)
    if len(idx) > first:
        keep = v >= np.partition(v, len(v) - first)[len(v) - first]     # the first-th best value, ties kept
        idx, v = idx[keep], v[keep]
    a = t.space.arrays
    keys = [a[k][idx] for k in reversed(("tp", "pp", "vp", "cp", "ep", "zero", "shard", "sp", "mbs", "rc"))]
    # fewer offloaded layers before more headroom: what offloading frees it pays for in host
    # copies and pinned host memory that the estimate leaves out (rules/offload.yaml)
    keys += [moving_parts(t, idx), t.peak_gib[idx], a["offload"][idx], -v]
    return idx[np.lexsort(keys)]


def choose(t: Table, allowed: np.ndarray, broken: list[tuple[float, np.ndarray]]) -> Choice | None:
    """``broken``: (worth in percent, mask of layouts breaking it) per preference."""
    if not allowed.any():
        return None
    penalty = np.zeros(len(t))
    for worth, mask in broken:
        penalty += worth / 100 * mask
    # worths of 100% or more together leave nothing of a layout's speed: it scores 0, below any
    # layout that keeps its worths under 100%, whatever the two speeds
    score = t.tokens_per_s * np.clip(1 - penalty, 0, None)
    objective = np.where(allowed, score, -np.inf)
    head = int(order_by(t, objective, allowed)[0])
    fastest = int(order_by(t, t.tokens_per_s, allowed)[0])
    return Choice(head, fastest, objective, penalty, score, bool((allowed & (penalty < 1 - 1e-9)).any()))
