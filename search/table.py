"""The one scored table of a decision: every valid layout with its estimates, as fact columns.

Built once per run (search/space.py, search/score.py); everything else -- hard constraints,
feasibility facts, preferences, the choice, the explanation -- reads it and never scores again.
``column(path)`` gives a fact (kb/fact_schema.py) as one value per layout; job facts and the
feasibility facts come from ``facts``, a lookup the decision supplies.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardwise.kb.job import Job
from shardwise.kb.layout import RECOMPUTE, Layout
from shardwise.kb.track_record import catalog_gpu

from .score import score
from .space import Space, build_space

_LAYOUT = {"layout.tp": "tp", "layout.pp": "pp", "layout.vp": "vp", "layout.dp": "dp", "layout.cp": "cp",
           "layout.ep": "ep", "layout.zero": "zero", "layout.mbs": "mbs", "layout.ga": "grad_accum",
           "layout.offload": "offload"}
_METRICS = {"metrics.step_time_s": "step_time_s", "metrics.tokens_per_s": "tokens_per_s",
            "metrics.mfu_pct": "mfu_pct", "metrics.bubble_pct": "bubble_pct",
            "metrics.comm_overhead_pct": "comm_overhead_pct", "metrics.moe_host_pct": "moe_host_pct"}


@dataclass
class Table:
    job: Job
    global_batch: int
    space: Space
    scores: dict
    facts: object = None                      # path -> value for job and feasibility facts
    _cache: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.space)

    @property
    def capacity(self) -> float:
        return self.job.cluster.gpu.memory_gib

    @property
    def tokens_per_s(self) -> np.ndarray:
        return self.scores["tokens_per_s"]

    @property
    def peak_gib(self) -> np.ndarray:
        return self.scores["peak_gib"]

    def layout(self, i: int) -> Layout:
        return self.space.layout(int(i))

    def describe_row(self, i: int) -> str:
        """The i-th layout, as a message names it."""
        return self.layout(i).describe()

    def array(self, name: str) -> np.ndarray:
        """A raw setting array of the space (tp, pp, ..., rc)."""
        return self.space.arrays[name]

    def column(self, path: str):
        if path in self._cache:
            return self._cache[path]
        a, sc = self.space.arrays, self.scores
        if path in _LAYOUT:
            v = a[_LAYOUT[path]]
        elif path == "layout.sp":
            v = a["sp"].astype(bool)
        elif path == "layout.recompute":
            v = np.array(RECOMPUTE)[a["rc"]]
        elif path == "layout.global_batch":
            v = self.global_batch
        elif path == "memory.peak_gib":
            v = sc["peak_gib"]
        elif path == "memory.capacity_gib":
            v = self.capacity
        elif path == "memory.used_pct":
            v = 100 * sc["peak_gib"] / self.capacity
        elif path == "memory.headroom_gib":
            v = self.capacity - sc["peak_gib"]
        elif path == "memory.fits":
            v = sc["peak_gib"] <= self.capacity
        elif path == "memory.split_peak_pct":
            v = 100 * sc["split_peak_gib"] / self.capacity
        elif path == "memory.largest_block_gib":
            v = sc["largest_block_gib"]
        elif path == "memory.host_offload_gib":
            v = sc["host_offload_gib"]
        elif path in _METRICS:
            v = sc[_METRICS[path]]
        elif path == "metrics.tokens_per_s_per_gpu":
            v = sc["tokens_per_s"] / self.job.cluster.gpus
        else:
            return self.facts(path)
        self._cache[path] = v
        return v


# The scores do not depend on the GPU's memory, only what "fits" means does (Table.capacity) --
# but for a sizing probe (fit_only), which skips the step time of what cannot fit, keyed by it:
# explain's memory what-ifs (x1.5, x0.6: explain/why.py) are the job on a GPU of another size, so
# the tables last built are kept by everything else about the job, and a caller that asks
# (``reuse``) gets one back with its own capacity -- two of the what-ifs' five searches. A few
# tables, since one can hold millions of layouts; only on request, so that every other search
# runs (and reports its progress) as it always did.
_RECENT: dict = {}
_RECENT_MAX = 2


def _any_memory(job: Job) -> Job:
    """The job with its GPU's memory, and the memory its name carries ('h100-sxm (24.0 GiB)',
    kb/build.py), taken out: the key of tables a memory what-if reuses."""
    c = job.cluster
    gpu = c.gpu.model_copy(update={"memory_gib": 0.0, "name": catalog_gpu(c.gpu.name),
                                   "custom": tuple(k for k in c.gpu.custom if k != "gpu_memory")})
    return Job(job.model, c.model_copy(update={"gpu": gpu}), job.training)


def scored_table(job: Job, gb: int, pins: dict | None = None, fit_only: bool = False, progress=None,
                 reuse: bool = False) -> Table:
    # a sizing probe's scores skip the groups over the GPU's memory (score's fit_only): its own memory is its key
    key = (job if fit_only else _any_memory(job), gb, tuple(sorted((pins or {}).items())), fit_only)
    built = _RECENT.get(key) if reuse else None
    if built is None:
        space = build_space(job, gb, pins, fit_only)
        built = (space, score(job, space, progress, fit_only))
        _RECENT[key] = built
        while len(_RECENT) > _RECENT_MAX:
            del _RECENT[next(iter(_RECENT))]
    return Table(job, gb, *built)


def apply_constraints(t: Table, constraints: list, rows: np.ndarray | None = None) -> tuple[np.ndarray, list]:
    """(allowed, masks): which layouts meet every hard constraint, and per constraint which
    layouts it allows. ``constraints`` have ``allows(columns, n)`` (rules/constraints.Constraint);
    ``t.facts`` must answer the job facts they read. ``rows``: the indices of the only layouts
    judged (the masks are over them), for a sizing probe whose other layouts have no speed."""
    if rows is None:
        n, column, row = len(t), t.column, t.describe_row
    else:
        n, row = len(rows), (lambda i: t.describe_row(rows[i]))

        def column(path):
            v = t.column(path)
            return v[rows] if isinstance(v, np.ndarray) and v.shape == (len(t),) else v
    masks = [c.allows(column, n, row) for c in constraints]
    allowed = np.ones(n, dtype=bool)
    for m in masks:
        allowed &= m
    return allowed, masks
