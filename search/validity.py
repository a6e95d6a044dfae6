"""Named validity rules: what the search excludes, and the framework limit behind each.

Each rule is a vectorised predicate over the candidate arrays (search/space.py) that is True
for candidates a framework can run. The search reports how many candidates each rule removed,
so nothing disappears silently. kb/job.check_layout refuses the same layouts one at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Validity:
    id: str
    why: str
    ok: Callable


def _tp_heads(job, gb, a):
    m = job.model
    return (m.heads % a["tp"] == 0) & ((m.kv_heads % a["tp"] == 0) | (a["tp"] % m.kv_heads == 0))


def _cp_sequence(job, gb, a):
    return (a["cp"] == 1) | (job.training.seq_len % (2 * a["cp"]) == 0)


def _vp_chunks(job, gb, a):
    return (a["vp"] == 1) | ((a["pp"] > 1) & (a["pp"] * a["vp"] <= job.model.layers))


def _vp_framework(job, gb, a):
    return (a["vp"] == 1) | (job.training.framework in ("megatron", "fsdp"))


def _ep_stage(job, gb, a):
    return (a["tp"] * a["cp"] * a["dp"]) % a["ep"] == 0


def _sp_tp(job, gb, a):
    return (a["sp"] == 0) | (a["tp"] > 1)


def _batch(job, gb, a):
    return gb % (a["mbs"] * a["dp"]) == 0


def _deepspeed_pipeline(job, gb, a):
    if job.training.framework not in ("deepspeed", "hf"):
        return np.ones(len(a["tp"]), dtype=bool)
    return (a["pp"] == 1) | (a["zero"] <= 1)


def _zero_replicas(job, gb, a):
    return (a["zero"] == 0) | (a["dp"] * a["cp"] > 1)


def _hsdp(job, gb, a):
    n = a["dp"] * a["cp"]
    s = a["shard"]
    return (s == 0) | ((a["zero"] == 3) & (s > 1) & (s < n) & (n % np.maximum(s, 1) == 0))


def _adapter_megatron(job, gb, a):
    t = job.training
    if t.training in ("lora", "qlora") and t.framework == "megatron":
        return a["zero"] == 0
    return np.ones(len(a["tp"]), dtype=bool)


VALIDITY = [
    Validity("tp-divides-heads", "TP must divide the attention heads, and the KV heads must divide TP or it "
             "them (Megatron-Core TransformerConfig)", _tp_heads),
    Validity("cp-splits-sequence", "CP needs the sequence divisible by 2 x CP (load-balanced ring attention)",
             _cp_sequence),
    Validity("vp-chunks", "interleaving needs PP > 1 and at least one layer per chunk (PP x VP <= layers; "
             "uneven chunks as Megatron-Core's --decoder-first/last-pipeline-num-layers allow)", _vp_chunks),
    Validity("vp-framework", "only Megatron and torch pipelining (fsdp) have an interleaved schedule; "
             "DeepSpeed's pipeline engine has none", _vp_framework),
    Validity("ep-divides-stage", "EP must divide the TP x CP x DP ranks of a stage (Megatron-Core expert "
             "data parallelism)", _ep_stage),
    Validity("sp-needs-tp", "sequence parallelism shards what TP replicates: it needs TP > 1", _sp_tp),
    Validity("batch-divides", "the global batch must be a multiple of micro-batch x DP", _batch),
    Validity("deepspeed-pipeline-zero", "DeepSpeed's pipeline engine runs ZeRO-0/1 only "
             "(ZeRO-2/3 are incompatible with pipeline parallelism)", _deepspeed_pipeline),
    Validity("zero-needs-replicas", "ZeRO shards over the DP x CP ranks; with one it is ZeRO-0 under "
             "another name", _zero_replicas),
    Validity("hsdp-shard-group", "an HSDP shard group (the ranks of one node) needs ZeRO-3 and must "
             "divide DP x CP into more than one replica", _hsdp),
    Validity("adapters-megatron-zero", "LoRA with Megatron's distributed optimizer is not modelled",
             _adapter_megatron),
]
