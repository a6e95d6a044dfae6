"""Turn a user's layout text into a checked Layout for a job, with the assumptions it made.

The global batch decides how many micro-batches a step has, and so how many a pipeline
holds in flight and how large its bubble is. When the user gives none, shardwise assumes
4M tokens per step (the Llama 3 pre-training batch at 8k tokens, Llama 3 paper section 3.4.1:
4M tokens early in training) and says so in ``assumptions``.
"""
from __future__ import annotations

from .errors import InputError
from .job import Job, check_layout
from .layout import Layout, parse_layout

DEFAULT_BATCH_TOKENS = 4 * 2 ** 20


def global_batch(job: Job, multiple: int = 1) -> tuple[int, list[str]]:
    """Sequences per optimizer step, and the assumption made if the user gave none. The
    assumed batch is rounded up to a multiple of ``multiple`` (the recommender asks for one
    that every data-parallel degree it may try divides)."""
    t = job.training
    if t.global_batch:
        return t.global_batch, []
    gb = max(1, round(DEFAULT_BATCH_TOKENS / t.seq_len))
    gb = -(-gb // multiple) * multiple
    rounded = ", rounded to a multiple of the GPU count" if multiple > 1 else ""
    return gb, [f"global batch not given: assumed {gb} sequences x {t.seq_len} tokens "
                f"= {gb * t.seq_len / 2**20:.1f}M tokens per step{rounded} "
                "(--global-batch or --global-batch-tokens to set it)"]


def grad_accum_for(gb: int, mbs: int, dp: int) -> int:
    if gb % (mbs * dp):
        raise InputError(f"global batch {gb} is not divisible by mbs x dp = {mbs} x {dp}; "
                         f"choose a global batch that is a multiple of {mbs * dp}")
    return gb // (mbs * dp)


def resolve_layout(job: Job, text: str) -> tuple[Layout, list[str]]:
    lay, keys = parse_layout(text, job.cluster.gpus)
    notes: list[str] = []
    if "mbs" not in keys and job.training.mbs:
        lay = lay.with_(mbs=job.training.mbs)
    if "recompute" not in keys and job.training.recompute not in ("auto",):
        lay = lay.with_(recompute=job.training.recompute)
    if "grad_accum" not in keys:
        gb, notes = global_batch(job)
        if gb < lay.mbs * lay.dp:
            raise InputError(f"global batch {gb} is smaller than mbs x dp = {lay.mbs * lay.dp}")
        lay = lay.with_(grad_accum=grad_accum_for(gb, lay.mbs, lay.dp))
    elif job.training.global_batch and lay.global_batch != job.training.global_batch:
        raise InputError(f"layout ga={lay.grad_accum} gives a global batch of {lay.global_batch}, "
                         f"not the --global-batch {job.training.global_batch}")
    check_layout(job, lay)
    return lay, notes
