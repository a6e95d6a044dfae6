"""The search space: every layout a job could run, as arrays, and the named rules that exclude.

A candidate is (tp, pp, cp) with tp x pp x cp dividing the GPUs (dp is the rest), times vp,
ep, ZeRO stage (and an HSDP shard group for FSDP), sequence parallelism, micro-batch and
recomputation. Domains: tp up to twice the NVLink domain (one step past it, so that the
playbook's "TP inside the NVLink domain" is a rule the explanation can name, not a silent
bound), pp up to the layers, vp 1-16, mbs every divisor of the global batch up to 64, everything else its full
range. A pin (a user's --mbs or --recompute, or a rule's ``pin``) fixes that setting's domain.
Then each validity rule (kb/validity.py) removes what a framework cannot run, and says how
many it removed; ZeRO over a single replica is kept only as ZeRO-0, its one canonical form.

``LayoutArrays`` has Layout's settings and derived properties (kb/layout.Derived), with arrays
for everything but pp and recompute: the estimators branch on those two (which stages exist,
what recomputation keeps), so the space is scored in groups that share them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardwise.kb.choices import MBS_MAX
from shardwise.kb.job import Job, divisors
from shardwise.kb.layout import RECOMPUTE, Derived, Layout
from shardwise.kb.validity import VALIDITY, first_failure
FIELDS = ("tp", "pp", "vp", "dp", "cp", "ep", "zero", "shard", "sp", "mbs", "grad_accum", "rc", "offload")
# VP up to 16 covers NVIDIA's tuned layouts (published_runs.yaml: VP up to 14, Mixtral 8x22B)
VP_MAX = 16


@dataclass(frozen=True)
class LayoutArrays(Derived):
    tp: np.ndarray
    pp: int
    vp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    etp: np.ndarray
    zero: np.ndarray
    shard: np.ndarray
    sp: np.ndarray
    mbs: np.ndarray
    grad_accum: np.ndarray
    recompute: str
    offload: np.ndarray

    def __len__(self) -> int:
        return len(self.tp)


@dataclass
class Space:
    """The valid candidates as flat arrays (FIELDS; rc indexes RECOMPUTE), and what was excluded."""
    arrays: dict
    excluded: list        # [{"rule", "why", "excluded"}] in VALIDITY order
    candidates: int       # before the validity rules
    blocked: dict         # setting -> {value: the validity rule that removed every candidate with it}
    # fields -> group number per layout (search/feasibility.Feasibility._groups): a function of
    # these arrays alone, which never change, so every table over this space (explain's memory
    # what-ifs reuse it: search/table.scored_table) shares them
    groups_by: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.arrays["tp"])

    def layout(self, i: int) -> Layout:
        a = {k: int(v[i]) for k, v in self.arrays.items()}
        return Layout(tp=a["tp"], pp=a["pp"], vp=a["vp"], dp=a["dp"], cp=a["cp"], ep=a["ep"], zero=a["zero"],
                      shard=a["shard"], sp=bool(a["sp"]), mbs=a["mbs"], grad_accum=a["grad_accum"],
                      recompute=RECOMPUTE[a["rc"]], offload=a["offload"])

    def groups(self):
        """(indices, LayoutArrays) for each (pp, recompute) that occurs."""
        a = self.arrays
        key = a["pp"] * len(RECOMPUTE) + a["rc"]
        order = np.argsort(key, kind="stable")
        bounds = np.flatnonzero(np.diff(key[order])) + 1
        for idx in np.split(order, bounds):
            if not len(idx):
                continue
            i0 = idx[0]
            yield idx, LayoutArrays(
                tp=a["tp"][idx], pp=int(a["pp"][i0]), vp=a["vp"][idx], dp=a["dp"][idx], cp=a["cp"][idx],
                ep=a["ep"][idx], etp=np.ones(len(idx), dtype=np.int64), zero=a["zero"][idx], shard=a["shard"][idx],
                sp=a["sp"][idx].astype(bool), mbs=a["mbs"][idx], grad_accum=a["grad_accum"][idx],
                recompute=RECOMPUTE[int(a["rc"][i0])], offload=a["offload"][idx])


def index_of(space: Space, lay: Layout, moe: bool = False) -> int | None:
    """Where a layout sits in the space (None if the space does not hold it)."""
    if lay.etp != 1:
        return None
    lay = lay.canonical(moe)      # validity rule zero-needs-replicas keeps ZeRO-0 of the twins
    want = dict(lay.as_dict(), rc=RECOMPUTE.index(lay.recompute), sp=int(lay.sp))
    mask = np.ones(len(space), dtype=bool)
    for k, v in space.arrays.items():
        mask &= v == want[k]
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


SETTING_FIELDS = {"tp": "tp", "pp": "pp", "vp": "vp", "cp": "cp", "ep": "ep", "zero": "zero", "sp": "sp",
                  "mbs": "mbs", "recompute": "rc", "offload": "offload"}


def pinned(values: list, setting: str, pins: dict) -> list:
    """A setting's domain under the pins: the pinned value alone (even if outside the usual
    domain: a pin is the user's word), or the whole domain."""
    if setting not in pins:
        return values
    v = pins[setting]
    if setting == "recompute":
        return [RECOMPUTE.index(v)]
    return [int(v)]


def micro_batches(gb: int) -> list[int]:
    """The micro-batches the search tries for a global batch of ``gb`` sequences: every divisor
    of it up to MBS_MAX. gb = mbs x grad_accum x dp, so no other micro-batch can divide it; a
    batch of 96 on 32 ranks runs mbs 3 x grad_accum 1, which powers of two alone would miss."""
    return [m for m in range(1, min(gb, MBS_MAX) + 1) if gb % m == 0]


# eighths of the layers: NVIDIA's Megatron-Bridge recipes offload 5 to 40 of Llama 3 70B's 80
# (scripts/performance/configs/llama/llama3_workload_base_configs.py before c8327cfc2)
OFFLOAD_STEPS = 8


def offload_steps(job: Job) -> list[int]:
    """The offloaded layer counts the search tries (Layout.offload): 0, and k/8 of the layers for
    k = 1..7, no more than L - 2 (Transformer Engine: L - 1 leaves one set of activations on the
    GPU, where "compute and transfers cannot overlap", docs/features/other_optimizations/
    cpu_offloading) -- under Megatron, for a dense model, on a GPU with its own chip-to-chip link
    to the host (GPUSpec.host_link_gbps: NVLink-C2C on GB200/GB300). Only pp=1 without
    recomputation keeps any (validity rule offload-megatron). A --layout with offload=N is
    estimated on any GPU and model; the search leaves out
    * PCIe hosts: a node's GPUs share its switches' uplinks and the host's memory, which
      kb/perf/offload.py does not price (the same docs: PCIe "limits offloading benefits");
    * MoE models: NVIDIA's MoE recipes offload chosen modules (Megatron's
      fine_grained_activation_offloading, offload_modules such as expert_fc1: Megatron-Bridge
      perf_recipes/deepseek), which this estimate does not model, not whole layers; offered whole
      layers, the search put layouts 14-44% faster than NVIDIA's tuned MoE layouts on GB200/GB300
      (benchmarks/published_layouts.py), a speed no run backs. Dense models are what NVIDIA's
      layer-offloading recipes run (Llama 3 70B, Llama 3.1 405B)."""
    t, m, layers = job.training, job.model, job.model.layers
    if t.framework != "megatron" or m.is_moe or not job.cluster.gpu.host_link_gbps:
        return [0]
    eighths = (round(k * layers / OFFLOAD_STEPS) for k in range(1, OFFLOAD_STEPS))
    return sorted({0} | {n for n in eighths if 1 <= n <= layers - 2})


def build_space(job: Job, gb: int, pins: dict | None = None, fit_only: bool = False) -> Space:
    """Every valid layout. ``fit_only``: only what can decide whether anything fits -- micro-batch 1
    (memory grows with it, and a batch any micro-batch splits, 1 splits too)."""
    m, c, t = job.model, job.cluster, job.training
    pins = dict(pins or {})
    g = c.gpus
    tps = pinned([d for d in divisors(g) if d <= 2 * c.nvlink_domain], "tp", pins)
    pps = pinned(list(range(1, min(m.layers, g) + 1)), "pp", pins)
    cps = pinned(divisors(g), "cp", pins)
    triples = [(tp, pp, cp) for tp in tps if g % tp == 0
               for pp in pps if (g // tp) % pp == 0
               for cp in cps if (g // (tp * pp)) % cp == 0]
    if not triples:
        return _empty(pins)
    tp, pp, cp = (np.array(x, dtype=np.int64) for x in zip(*triples))
    dp = g // (tp * pp * cp)
    mbs = [1] if fit_only and "mbs" not in pins else micro_batches(gb)
    dims = {
        "vp": pinned(list(range(1, VP_MAX + 1)), "vp", pins),
        "ep": pinned(divisors(m.experts) if m.is_moe else [1], "ep", pins),
        "zero": pinned([0, 1, 2, 3], "zero", pins),
        "hsdp": [0, 1] if t.framework == "fsdp" else [0],
        "sp": pinned([0, 1], "sp", pins),
        "mbs": pinned(mbs, "mbs", pins),
        "rc": pinned(list(range(len(RECOMPUTE))), "recompute", pins),
        "offload": pinned(offload_steps(job), "offload", pins),
    }
    # The candidates are the product (triple, vp, ep, zero, hsdp, sp, mbs, rc), kept as one
    # axis per setting (a sparse grid) rather than millions of rows: a validity rule reads two or
    # three settings, so it runs on a few hundred values and broadcasts; only the verdicts
    # (fail, n_broken) and the valid rows are ever full size. Row order is the dense grid's.
    grids = np.meshgrid(np.arange(len(triples)), *[np.array(v, dtype=np.int64) for v in dims.values()],
                        indexing="ij", sparse=True)
    shape = np.broadcast_shapes(*(x.shape for x in grids))
    which = grids[0]
    a = {"tp": tp[which], "pp": pp[which], "cp": cp[which], "dp": dp[which]}
    a.update({k: v for k, v in zip(dims, grids[1:])})
    node_ranks = np.maximum(1, c.gpus_per_node // a["tp"])        # the dp x cp ranks inside one node
    a["shard"] = np.where(a.pop("hsdp") == 1, node_ranks, 0)
    a["grad_accum"] = gb // (a["mbs"] * a["dp"])
    a["gb"] = gb
    candidates = int(np.prod(shape))
    fail, n_broken = first_failure(job, a, shape)
    excluded = [{"rule": rule.id, "why": rule.why, "excluded": int(np.count_nonzero(fail == k))}
                for k, rule in enumerate(VALIDITY)]
    keep = fail == -1
    # an MoE model's experts are sharded over their own data-parallel group, tp x cp x dp / ep
    experts_single = (a["tp"] * a["cp"] * a["dp"] == a["ep"]) if m.is_moe else True
    single = keep & (a["zero"] > 0) & (a["dp"] * a["cp"] == 1) & experts_single
    excluded.append({"rule": "zero-needs-replicas", "why": "ZeRO shards over the DP x CP ranks (an MoE model's "
                     "experts over their own data-parallel group); with one it is ZeRO-0 under another name "
                     "(kept once, as ZeRO-0)", "excluded": int(single.sum())})
    keep &= ~single
    # what the reasons name (decision/reasons.py); a sizing probe (fit_only) asks only whether
    # anything fits, and the count behind this map was a third of a refusal's time
    blocked = {} if fit_only else _blocked(job, a, fail, n_broken, keep)
    return Space({k: np.broadcast_to(a[k], shape)[keep] for k in FIELDS}, excluded, candidates, blocked)


def _blocked(job, a: dict, fail: np.ndarray, n_broken: np.ndarray, keep: np.ndarray) -> dict:
    """For each value of a setting that no valid layout has: the validity rules that rule it out
    (what the explanation names, _forbidding). Values are small non-negative integers, so
    counting (bincount) answers it without sorting millions of candidates. ``a``'s columns are
    the sparse grid's axes (build_space): every value of an axis occurs among the candidates."""
    out = {}
    for setting, f in SETTING_FIELDS.items():
        col = a[f]
        n = int(col.max()) + 1
        seen = np.bincount(col.ravel(), minlength=n)
        valid = np.bincount(np.broadcast_to(col, keep.shape)[keep], minlength=n)
        gone = {}
        for v in np.flatnonzero((seen > 0) & (valid == 0)).tolist():
            if ((col == v) & (fail == -1)).any():
                # layouts with the value pass every validity rule: zero-needs-replicas took them
                gone[RECOMPUTE[v] if setting == "recompute" else v] = "zero-needs-replicas"
                continue
            these = (col == v) & (fail >= 0)
            if not these.any():
                continue
            rules = _forbidding(job, a, fail, n_broken, these)
            # the nearest layouts with the value break one rule or another
            gone[RECOMPUTE[v] if setting == "recompute" else v] = " or ".join(VALIDITY[k].id for k in rules)
        out[setting] = gone
    return out


def _forbidding(job, a: dict, fail: np.ndarray, n_broken: np.ndarray, these: np.ndarray) -> list[int]:
    """Indices of the validity rules that rule out the candidates in ``these`` (one value of a
    setting): the first rule every one of them breaks, which alone forbids the value
    (recompute=modules under hf: recompute-framework); else the rules the nearest candidates
    break -- those breaking the fewest rules (``n_broken``), a person's next try with that
    value -- the most common first, at most two. The most common *first* failure over all of
    them would name what the far candidates break: DeepSeek-V3 fine-tuned by the Trainer on 256
    GPUs had every EP degree blamed on vp-chunks (interleaving, for which the Trainer has no
    pipeline), where the default batch of 128 caps DP and AutoEP refuses the TP or CP that would
    make up the rest. A candidate whose first broken rule is m passed every rule before m, so
    only rules from the largest m on can be broken by all of them."""
    first = fail[these]
    sub = _Masked(a, these)
    for k in range(int(first.max()), len(VALIDITY)):
        if not np.any(VALIDITY[k].ok(job, sub)):
            return [k]
    counts = n_broken[these]
    near = _Masked(a, these & (n_broken == counts.min()))
    n = int(np.count_nonzero(counts == counts.min()))
    by_rule = np.array([int(np.count_nonzero(~np.broadcast_to(np.asarray(r.ok(job, near), dtype=bool), (n,))))
                        for r in VALIDITY])
    return [int(k) for k in np.argsort(-by_rule, kind="stable")[:2] if by_rule[k] > 0]


class _Masked(dict):
    """The candidates of ``a`` (the sparse grid's axes) under ``mask`` (the grid's shape), each
    column spread and cut when a rule first reads it (a rule reads two or three of them)."""

    def __init__(self, a: dict, mask: np.ndarray):
        super().__init__()
        self._a, self._mask = a, mask

    def __missing__(self, f):
        x = self._a[f]
        self[f] = np.broadcast_to(x, self._mask.shape)[self._mask] if np.ndim(x) else x
        return self[f]

    def __contains__(self, f):
        return f in self._a


def _empty(pins) -> Space:
    return Space({k: np.zeros(0, dtype=np.int64) for k in FIELDS}, [], 0, {s: {} for s in SETTING_FIELDS})
