"""The parallel layout: one frozen dataclass that validates itself and explains what it derives.

Modelled on torchtitan's ``ParallelDims``: the degrees multiply to the world size
(tp x pp x cp x dp), EP and expert-TP re-split the tp x cp x dp ranks of one pipeline stage for
the MoE layers (Megatron-Core's expert-data-parallel rule), and everything else about a
layout (ZeRO sharding group, micro-batches in flight, layers per stage) is a property here so
that no estimator derives it twice.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Optional, get_args

from .choices import RECOMPUTE
from .errors import InputError
from .vec import minimum, where



def chunk_forwards_in_flight(p: int, v, m, stage: int):
    """Model-chunk forwards an interleaved pipeline rank holds at the end of its warm-up
    (Megatron-Core schedules.py get_pp_rank_microbatches): 2(p - i - 1) + (v - 1) p warm-up
    forwards plus the one in flight, capped at the m v chunk forwards of the step."""
    return minimum(2 * (p - stage - 1) + (v - 1) * p + 1, m * v)


def in_flight(p: int, v: int, m, stage: int):
    """Micro-batches whose activations a pipeline rank holds at its peak, in units of that
    rank's full set of layers (``m`` micro-batches per step; a number or an array).

    1F1B (Narayanan et al. 2021): rank i warms up with p - i forwards -> min(m, p - i).
    Interleaved: chunk_forwards_in_flight chunk forwards, each 1/v of the rank's layers. For
    rank 0 this is the 1 + (p-1)/(p v) factor of Korthikanti et al. 2022 times p micro-batches.
    """
    if p == 1:
        return 1.0
    one_f_one_b = 1.0 * minimum(m, p - stage)
    interleaved = chunk_forwards_in_flight(p, v, m, stage) / v
    return where(v == 1, one_f_one_b, interleaved)


class Derived:
    """What a layout implies, said once for a Layout and for the search's LayoutArrays (whose
    settings are arrays, except pp and recompute, which are one value per array)."""

    @property
    def world(self):
        """GPUs the layout uses: tp x pp x cp x dp (EP re-splits ranks, it does not add any)."""
        return self.tp * self.pp * self.cp * self.dp

    @property
    def shard_group(self):
        """Ranks that ZeRO/FSDP shards states over: the dp x cp ranks (Megatron's distributed
        optimizer shards over DP x CP), or the HSDP shard group when one is given."""
        return where(self.shard > 0, self.shard, self.dp * self.cp)

    @property
    def expert_dp(self):
        """Replicas of each expert shard: the tp x cp x dp ranks of a stage / (ep x etp)."""
        return self.tp * self.cp * self.dp // (self.ep * self.etp)

    @property
    def expert_shard_group(self):
        """Ranks that ZeRO/FSDP shards expert states over: the expert-DP group, or under HSDP the
        part of it inside one shard group, shard x tp / (ep x etp) ranks (torchtitan's efsdp
        dimension, dp_shard x cp x tp / ep, leaves dp_replicate out: parallel_dims.py); the
        rest of the expert-DP group holds replicas."""
        return where(self.shard > 0, self.shard * self.tp // (self.ep * self.etp), self.expert_dp)

    @property
    def global_batch(self):
        """Sequences per optimizer step: mbs x grad_accum x dp (CP splits sequences, it does not add any)."""
        return self.mbs * self.grad_accum * self.dp

    @property
    def chunks(self):
        """Model chunks in the whole pipeline: pp x vp."""
        return self.pp * self.vp

    def in_flight(self, stage: int):
        return in_flight(self.pp, self.vp, self.grad_accum, stage)


@dataclass(frozen=True)
class Layout(Derived):
    tp: int = 1                 # tensor parallel degree
    pp: int = 1                 # pipeline stages
    vp: int = 1                 # virtual stages (model chunks) per pipeline rank; >1 = interleaved 1F1B
    dp: int = 1                 # data-parallel replicas
    cp: int = 1                 # context parallel (sequence split across ranks, ring attention)
    ep: int = 1                 # expert parallel (MoE experts split across ranks)
    etp: int = 1                # expert tensor parallel (Megatron --expert-tensor-parallel-size)
    zero: int = 0               # ZeRO stage 0-3 (1 = distributed optimizer, 3 = FSDP/full shard)
    shard: int = 0              # ZeRO/FSDP sharding group; 0 = all dp x cp ranks; < dp x cp = HSDP
    sp: bool = False            # Megatron sequence parallelism (needs tp > 1)
    mbs: int = 1                # micro-batch, sequences
    grad_accum: int = 1         # micro-batches per replica per optimizer step
    recompute: str = "none"     # none | selective | full | modules
    offload: int = 0            # layers whose activations go to host memory (Megatron --cpu-offloading-num-layers)

    def __post_init__(self):
        for f in ("tp", "pp", "vp", "dp", "cp", "ep", "etp", "mbs", "grad_accum"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"layout: {f}={v!r} must be a positive integer")
        if isinstance(self.offload, bool) or not isinstance(self.offload, int) or self.offload < 0:
            raise InputError(f"layout: offload={self.offload!r} must be a non-negative integer (layers)")
        if self.offload and self.pp > 1:
            # Megatron-Core transformer_config.py __post_init__: "Currently there is no support for
            # Pipeline parallelism with CPU offloading"
            raise InputError(f"layout: offload={self.offload} needs pp=1 (Megatron offloads no activations "
                             "under pipeline parallelism)")
        if self.offload and self.recompute != "none":
            # same place: "CPU offloading does not work when activation recomputation is enabled"
            raise InputError(f"layout: offload={self.offload} needs recompute=none (Megatron offloads no "
                             "activations under recomputation)")
        if self.zero not in (0, 1, 2, 3):
            raise InputError(f"layout: zero={self.zero!r}; allowed: 0, 1, 2, 3")
        if self.recompute not in RECOMPUTE:
            raise InputError(f"layout: recompute={self.recompute!r}; allowed: {', '.join(RECOMPUTE)}")
        if self.vp > 1 and self.pp == 1:
            raise InputError(f"layout: vp={self.vp} needs pp > 1 (virtual stages interleave a pipeline)")
        if self.sp and self.tp == 1:
            raise InputError("layout: sp=true needs tp > 1 (sequence parallelism shards what TP replicates)")
        if self.shard < 0 or (self.shard and (self.dp * self.cp) % self.shard):
            raise InputError(f"layout: shard={self.shard} must divide dp x cp = {self.dp * self.cp}")
        if (self.tp * self.cp * self.dp) % (self.ep * self.etp):
            raise InputError(f"layout: ep x etp = {self.ep * self.etp} must divide tp x cp x dp = "
                             f"{self.tp * self.cp * self.dp} (the ranks of one pipeline stage)")

    def as_dict(self) -> dict:
        return asdict(self)

    def with_(self, **changes) -> "Layout":
        return replace(self, **changes)

    def canonical(self, moe: bool = False) -> "Layout":
        """The same layout with ZeRO over a single replica written as ZeRO-0: it shards nothing
        (the rules may set ZeRO while DP is larger, then DP shrinks to 1). In an MoE model ZeRO
        still shards the experts where their data-parallel group is larger (TP above EP x ETP)."""
        single = self.dp * self.cp == 1 and (not moe or self.expert_dp == 1)
        return replace(self, zero=0, shard=0) if single and self.zero else self

    def describe(self) -> str:
        parts = [f"tp={self.tp}", f"pp={self.pp}"]
        if self.vp > 1:
            parts.append(f"vp={self.vp}")
        parts += [f"dp={self.dp}"]
        if self.cp > 1:
            parts.append(f"cp={self.cp}")
        if self.ep > 1:
            parts.append(f"ep={self.ep}")
        if self.etp != 1:
            # only a --layout sets it (the search keeps etp=1); it changes memory and speed
            parts.append(f"etp={self.etp}")
        parts.append(f"zero={self.zero}")
        if self.shard:
            parts.append(f"shard={self.shard}")
        parts += [f"sp={'on' if self.sp else 'off'}", f"mbs={self.mbs}",
                  f"ga={self.grad_accum}", f"recompute={self.recompute}"]
        if self.offload:
            parts.append(f"offload={self.offload}")
        return " ".join(parts)


_ALIASES = {"ga": "grad_accum", "gradient_accumulation": "grad_accum", "accum": "grad_accum",
            "zero_stage": "zero", "virtual": "vp", "interleave": "vp"}
# keys of the JSON's layout that follow from the others: what to give instead
_DERIVED = {"shard_group": "what ZeRO shards over (dp x cp, or the HSDP group); give shard=N for an HSDP group, "
                           "or leave it out",
            "global_batch": "mbs x ga x dp; give ga= (or --global-batch)"}
_BOOL = {"true": True, "on": True, "yes": True, "1": True, "false": False, "off": False, "no": False, "0": False}


def parse_layout(text: str, gpus: Optional[int] = None, framework: Optional[str] = None) -> tuple[Layout, set[str]]:
    """Parse ``"tp=8,pp=4,dp=1,zero=1,mbs=4,recompute=none"`` into a Layout.

    Returns the layout and the set of keys the user gave. ``dp`` may be left out when ``gpus``
    is known (dp = gpus / (tp pp cp)); ``sp`` defaults to on whenever tp > 1 and the framework
    has sequence parallelism (playbook: SP whenever TP > 1; kb/frameworks.has_sequence_parallel;
    no framework given: on), and ``sp=on`` for a framework without it is refused; ``ga``
    (gradient accumulation) defaults to the value a global batch implies.
    """
    names = {f.name for f in fields(Layout)}
    given: dict = {}
    items = [x for x in re.split(r"[,\s]+", text or "") if x]
    if not items:       # every setting would take its default: not a layout anyone asked for
        raise InputError("--layout: no settings given; e.g. \"tp=8,pp=4,dp=1,zero=1,mbs=4\"")
    for item in items:
        if "=" not in item:
            raise InputError(f"--layout: '{item}' is not key=value; e.g. \"tp=8,pp=4,dp=1,zero=1,mbs=4\"")
        k, v = (s.strip().lower() for s in item.split("=", 1))
        k = _ALIASES.get(k, k)
        if k in _DERIVED:
            raise InputError(f"--layout: '{k}' is {_DERIVED[k]}")
        if k not in names:
            raise InputError(f"--layout: unknown key '{k}'; allowed: {', '.join(sorted(names | {'ga'}))}")
        if k in given:
            raise InputError(f"--layout: '{k}' given twice")
        if k == "recompute":
            given[k] = v
        elif k == "sp":
            if v not in _BOOL:
                raise InputError(f"--layout: sp={v!r}; allowed: on/off/true/false")
            given[k] = _BOOL[v]
        elif k == "zero" and v in ("fsdp",):
            given[k] = 3
        else:
            if not re.fullmatch(r"[+-]?[0-9]+", v):         # int() would take '1_6' and other scripts' digits
                raise InputError(f"--layout: {k}={v!r} must be an integer in the digits 0-9")
            given[k] = int(v)
            zeroable = k in ("zero", "shard", "offload")
            if given[k] < (0 if zeroable else 1):
                raise InputError(f"--layout: {k}={v} must be a {'non-negative' if zeroable else 'positive'} "
                                 "integer")
    keys = set(given)
    tp, pp, cp = given.get("tp", 1), given.get("pp", 1), given.get("cp", 1)
    if "dp" not in given and gpus is not None:
        if min(tp, pp, cp) < 1 or gpus % (tp * pp * cp):
            raise InputError(f"--layout: tp x pp x cp = {tp * pp * cp} does not divide --gpus {gpus}")
        given["dp"] = gpus // (tp * pp * cp)
    if given.get("shard") and given["shard"] == given.get("dp", 1) * cp:
        # a shard group of every dp x cp rank is the default's, no HSDP: what the JSON's
        # shard_group reads for such a layout, so pasting it back means the same layout
        given["shard"] = 0
    from .frameworks import has_sequence_parallel     # the profiles load only when parsing
    has_sp = framework is None or has_sequence_parallel(framework)
    if "sp" not in given:
        given["sp"] = tp > 1 and has_sp
    elif given["sp"] and not has_sp:
        from .schema import Framework
        have = ", ".join(f for f in get_args(Framework) if has_sequence_parallel(f))
        raise InputError(f"--layout: sp=on but --framework {framework} has no sequence parallelism; "
                         f"use sp=off, or a framework with it ({have})")
    return Layout(**given), keys
