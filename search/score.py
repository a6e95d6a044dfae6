"""Score the whole space with the single-layout estimators, run over arrays.

kb/memory/estimate.peak_gib and kb/perf/step.step_time are the same functions `memory` and
`recommend` call; given a LayoutArrays they return arrays (kb/vec.py). tests/test_search.py
checks on random layouts that the two ways agree.
"""
from __future__ import annotations

import numpy as np

from shardwise.kb.job import Job
from shardwise.kb.memory.estimate import GIB, host_offload_gib, peak_and_split_gib
from shardwise.kb.memory.logits import largest_block_bytes
from shardwise.kb.perf.step import step_time

from .space import Space

SCORES = ("peak_gib", "step_time_s", "tokens_per_s", "mfu_pct", "bubble_pct", "comm_overhead_pct", "moe_host_pct",
          "split_peak_gib", "largest_block_gib", "host_offload_gib")


def score(job: Job, space: Space, progress=None, fit_only: bool = False) -> dict:
    """``progress(done, total)``, if given, is called after each group with the layouts scored
    so far and the total (cli/progress.py draws it). ``fit_only``: a sizing probe, which counts
    only layouts within the GPU's memory (search/sizing.fits_somewhere): a group none of whose
    layouts is keeps its speed columns at 0 and its step time is not computed."""
    out = {k: np.zeros(len(space)) for k in SCORES}
    done = 0
    for idx, lay in space.groups():
        out["peak_gib"][idx], out["split_peak_gib"][idx] = peak_and_split_gib(job, lay)
        out["largest_block_gib"][idx] = largest_block_bytes(job.model, job.training, lay) / GIB
        out["host_offload_gib"][idx] = host_offload_gib(job, lay)
        if not fit_only or (out["peak_gib"][idx] <= job.cluster.gpu.memory_gib).any():
            st = step_time(job, lay)
            out["step_time_s"][idx] = st.step_time_s
            out["tokens_per_s"][idx] = st.tokens_per_s
            out["mfu_pct"][idx] = st.mfu_pct
            out["bubble_pct"][idx] = 100 * st.bubble_s / st.step_time_s
            out["comm_overhead_pct"][idx] = 100 * st.comm_exposed_s / st.step_time_s
            out["moe_host_pct"][idx] = 100 * st.moe_host_s / st.step_time_s
        if progress is not None:
            done += len(idx)
            progress(done, len(space))
    return out
