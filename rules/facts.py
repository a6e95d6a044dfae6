"""The facts rules read: one flat "state" per layout the engine visits.

Every fact has a dotted path and a type (SCHEMA); the compiler checks rule files against it,
so a typo is an error, not a rule that silently never fires. A state holds the job, the
layout, the estimators' answers for that layout (memory, metrics), the next valid value of
each setting (``next.*``, so that rules need no search of their own) and what-if answers for
the changes the playbook weighs (``whatif.*``).
"""
from __future__ import annotations

from shardwise.kb.errors import InputError
from shardwise.kb.job import Job, check_layout
from shardwise.kb.layout import Layout
from shardwise.kb.memory import estimate_memory
from shardwise.kb.params import active_params, total_params
from shardwise.kb.perf import step_time

N, S, B = "num", "str", "bool"
SCHEMA: dict[str, str] = {
    "model.name": S, "model.params_b": N, "model.active_params_b": N, "model.layers": N, "model.hidden": N,
    "model.heads": N, "model.kv_heads": N, "model.vocab": N, "model.is_moe": B, "model.experts": N,
    "model.inferred": B,
    "cluster.gpu": S, "cluster.gpus": N, "cluster.gpus_per_node": N, "cluster.nodes": N,
    "cluster.nvlink_domain": N, "cluster.gpu_memory_gib": N, "cluster.intra": S, "cluster.intra_kind": S,
    "cluster.inter": S, "cluster.inter_kind": S, "cluster.tp_max": N,
    "train.seq_len": N, "train.global_batch": N, "train.training": S, "train.precision": S,
    "train.framework": S, "train.attention": S, "train.mbs_fixed": B, "train.recompute_fixed": B,
    "layout.tp": N, "layout.pp": N, "layout.vp": N, "layout.dp": N, "layout.cp": N, "layout.ep": N,
    "layout.zero": N, "layout.sp": B, "layout.mbs": N, "layout.ga": N, "layout.recompute": S,
    "layout.global_batch": N,
    "next.tp": N, "next.pp": N, "next.cp": N, "next.ep": N, "next.vp": N, "next.mbs_up": N, "next.mbs_down": N,
    "memory.peak_gib": N, "memory.capacity_gib": N, "memory.fits": B, "memory.headroom_gib": N,
    "memory.used_pct": N, "memory.activations_gib": N, "memory.states_gib": N, "memory.worst_stage": N,
    "metrics.step_time_s": N, "metrics.tokens_per_s": N, "metrics.tokens_per_s_per_gpu": N,
    "metrics.mfu_pct": N, "metrics.bubble_pct": N, "metrics.comm_overhead_pct": N, "metrics.tp_comm_pct": N,
    "whatif.selective_fits": B, "whatif.selective_saves_gib": N, "whatif.full_fits": B, "whatif.none_fits": B,
    "whatif.mbs_up_fits": B, "whatif.mbs_up_faster": B, "whatif.vp_up_fits": B, "whatif.vp_up_faster": B,
}

# The playbook's fitting rules treat a peak above this share of capacity as not fitting, and the
# what-if facts use it too: near the limit the estimate's error is a few percent
# (benchmarks/accuracy.py: whole-step peaks of the torchtitan runs within about 6%).
FIT_MARGIN_PCT = 95.0

# Facts whose values are not integers (compared in Python, never by durable: rules/compiler.py)
FLOAT_PATHS = {p for p in SCHEMA if p.startswith(("memory.", "metrics."))} | {
    "whatif.selective_saves_gib", "model.params_b", "model.active_params_b", "cluster.gpu_memory_gib"}

# Settings a rule may set, with the type of value and the values allowed.
SETTINGS = {"tp": N, "pp": N, "vp": N, "cp": N, "ep": N, "zero": N, "sp": B, "mbs": N, "recompute": S}
RECOMPUTE_VALUES = ("none", "selective", "full")

# What each layout-dependent fact is computed from: the rule graph's edges from a setting to
# the facts a change of it moves (explain/rule_graph.py). dp is what remains of the GPUs after
# TP, PP and CP; ga follows from mbs and dp; next.* are the next valid values given the other
# degrees (next_values below); the estimators' answers (memory, metrics, whatif) read them all.
_DERIVED = {
    "layout.dp": ("tp", "pp", "cp"), "layout.ga": ("tp", "pp", "cp", "mbs"), "layout.global_batch": (),
    "next.tp": ("tp", "pp", "cp"), "next.pp": ("tp", "pp", "cp"), "next.cp": ("tp", "pp", "cp"),
    "next.ep": ("tp", "pp", "cp", "ep"), "next.vp": ("pp", "vp"), "next.mbs_up": ("tp", "pp", "cp", "mbs"),
    "next.mbs_down": ("mbs",), "memory.capacity_gib": (),
}


def depends_on(path: str) -> tuple[str, ...]:
    """The settings a fact's value depends on; () for the job's own facts (model, cluster, train)."""
    group, name = path.split(".", 1)
    if group in ("model", "cluster", "train"):
        return ()
    if path in _DERIVED:
        return _DERIVED[path]
    if group == "layout":
        return (name,)
    return tuple(SETTINGS)


def _intra_kind(name: str) -> str:
    return "pcie" if name.startswith("pcie") else ("nvlink" if name.startswith("nvlink") else name)


def _inter_kind(name: str) -> str:
    return name.split("-")[0]


def tp_max(job: Job) -> int:
    """Largest TP the playbook allows: inside one NVLink domain (or node), dividing the heads."""
    c = job.cluster
    cap = min(c.nvlink_domain, c.gpus)
    return max(t for t in range(1, cap + 1) if tp_allowed(job, t))


def tp_allowed(job: Job, t: int) -> bool:
    """TP divides the attention heads, the KV heads divide it or it divides them, and the GPUs."""
    m = job.model
    return m.heads % t == 0 and (m.kv_heads % t == 0 or t % m.kv_heads == 0) and job.cluster.gpus % t == 0


def _next(values, current):
    return next((v for v in values if v > current), current)


def next_values(job: Job, lay: Layout) -> dict:
    """The next valid value above the current one for each setting (or the current one)."""
    m, c, t = job.model, job.cluster, job.training
    g = c.gpus
    tps = [x for x in range(1, tp_max(job) + 1) if tp_allowed(job, x) and g % (x * lay.pp * lay.cp) == 0]
    pps = [x for x in range(1, min(m.layers, g) + 1) if g % (lay.tp * x * lay.cp) == 0]
    cps = [x for x in range(1, g + 1) if g % (lay.tp * lay.pp * x) == 0 and t.seq_len % (2 * x) == 0]
    eps = [x for x in range(1, (m.experts or 1) + 1) if m.is_moe and m.experts % x == 0
           and (lay.tp * lay.cp * lay.dp) % x == 0 and x <= c.nvlink_domain]
    vps = [x for x in range(1, 9) if lay.pp > 1 and m.layers % (lay.pp * x) == 0]
    gb = lay.global_batch
    mbs_up = lay.mbs * 2 if gb % (lay.mbs * 2 * lay.dp) == 0 else lay.mbs
    mbs_down = lay.mbs // 2 if lay.mbs % 2 == 0 else lay.mbs
    return {"next.tp": _next(tps, lay.tp), "next.pp": _next(pps, lay.pp), "next.cp": _next(cps, lay.cp),
            "next.ep": max(eps) if eps else lay.ep, "next.vp": _next(vps, lay.vp),
            "next.mbs_up": mbs_up, "next.mbs_down": mbs_down}


def _fits(e) -> bool:
    return bool(e) and e.peak_gib <= e.capacity_gib * FIT_MARGIN_PCT / 100


def _try(job: Job, lay: Layout):
    try:
        check_layout(job, lay)
    except InputError:
        return None
    return estimate_memory(job, lay)


def plain_facts(job: Job, lay: Layout, global_batch: int, mbs_fixed: bool, recompute_fixed: bool) -> dict:
    """model.*, cluster.*, train.*, layout.*: the facts about one layout that need no estimator."""
    m, c, t = job.model, job.cluster, job.training
    return {
        "model.name": m.name, "model.params_b": total_params(m) / 1e9, "model.active_params_b": active_params(m) / 1e9,
        "model.layers": m.layers, "model.hidden": m.hidden, "model.heads": m.heads, "model.kv_heads": m.kv_heads,
        "model.vocab": m.vocab, "model.is_moe": m.is_moe, "model.experts": m.experts, "model.inferred": m.inferred,
        "cluster.gpu": c.gpu.name, "cluster.gpus": c.gpus, "cluster.gpus_per_node": c.gpus_per_node,
        "cluster.nodes": c.nodes, "cluster.nvlink_domain": c.nvlink_domain, "cluster.gpu_memory_gib": c.gpu.memory_gib,
        "cluster.intra": c.intra.name, "cluster.intra_kind": _intra_kind(c.intra.name), "cluster.inter": c.inter.name,
        "cluster.inter_kind": _inter_kind(c.inter.name), "cluster.tp_max": tp_max(job),
        "train.seq_len": t.seq_len, "train.global_batch": global_batch, "train.training": t.training,
        "train.precision": t.precision, "train.framework": t.framework, "train.attention": t.attention,
        "train.mbs_fixed": mbs_fixed, "train.recompute_fixed": recompute_fixed,
        "layout.tp": lay.tp, "layout.pp": lay.pp, "layout.vp": lay.vp, "layout.dp": lay.dp, "layout.cp": lay.cp,
        "layout.ep": lay.ep, "layout.zero": lay.zero, "layout.sp": lay.sp, "layout.mbs": lay.mbs,
        "layout.ga": lay.grad_accum, "layout.recompute": lay.recompute, "layout.global_batch": lay.global_batch,
    }


def memory_facts(mem) -> dict:
    """memory.*: the memory estimator's answer for the layout."""
    bd = mem.breakdown_gib
    return {
        "memory.peak_gib": mem.peak_gib, "memory.capacity_gib": mem.capacity_gib, "memory.fits": mem.fits,
        "memory.headroom_gib": mem.capacity_gib - mem.peak_gib, "memory.used_pct": 100 * mem.peak_gib / mem.capacity_gib,
        "memory.activations_gib": bd["activations"],
        "memory.states_gib": bd["weights"] + bd["gradients"] + bd["master_weights"] + bd["optimizer"],
        "memory.worst_stage": mem.stage,
    }


def metrics_facts(job: Job, st) -> dict:
    """metrics.*: the step-time model's answer for the layout."""
    mt = st.metrics(job)
    return {
        "metrics.step_time_s": mt["step_time_s"], "metrics.tokens_per_s": mt["tokens_per_s"],
        "metrics.tokens_per_s_per_gpu": mt["tokens_per_s_per_gpu"], "metrics.mfu_pct": mt["mfu_pct"],
        "metrics.bubble_pct": mt["bubble_pct"], "metrics.comm_overhead_pct": mt["comm_overhead_pct"],
        "metrics.tp_comm_pct": 100 * st.comm_by_kind_s.get("tp", 0.0) / st.step_time_s,
    }


def whatif_facts(job: Job, lay: Layout, mem, st, nxt: dict) -> dict:
    """whatif.*: would the layout fit (and be faster) with the changes the playbook weighs."""
    f = {}
    sel = _try(job, lay.with_(recompute="selective"))
    full = _try(job, lay.with_(recompute="full"))
    none = _try(job, lay.with_(recompute="none"))
    f["whatif.selective_fits"] = _fits(sel)
    f["whatif.selective_saves_gib"] = max(0.0, mem.peak_gib - sel.peak_gib) if sel else 0.0
    f["whatif.full_fits"] = _fits(full)
    f["whatif.none_fits"] = _fits(none)
    up = nxt["next.mbs_up"]
    f["whatif.mbs_up_fits"] = f["whatif.mbs_up_faster"] = False
    if up != lay.mbs:
        bigger = lay.with_(mbs=up, grad_accum=lay.global_batch // (up * lay.dp))
        e = _try(job, bigger)
        f["whatif.mbs_up_fits"] = _fits(e)
        f["whatif.mbs_up_faster"] = bool(e) and step_time(job, bigger).step_time_s < st.step_time_s * 0.995
    nv = nxt["next.vp"]
    f["whatif.vp_up_fits"] = f["whatif.vp_up_faster"] = False
    if nv != lay.vp:
        inter = lay.with_(vp=nv)
        e = _try(job, inter)
        f["whatif.vp_up_fits"] = _fits(e)
        f["whatif.vp_up_faster"] = bool(e) and step_time(job, inter).step_time_s < st.step_time_s * 0.99
    return f


def build_state(job: Job, lay: Layout, global_batch: int, mbs_fixed: bool, recompute_fixed: bool) -> tuple:
    """All facts about one layout, keyed by path: (facts, memory estimate, step time)."""
    lazy = LazyFacts(job, lay, global_batch, mbs_fixed, recompute_fixed)
    for path in ("memory.peak_gib", "metrics.step_time_s", "whatif.full_fits"):
        lazy[path]              # fills each group, in the order the facts have always had
    assert set(lazy.facts) == set(SCHEMA), set(lazy.facts) ^ set(SCHEMA)
    return lazy.facts, lazy.memory(), lazy.step()


class LazyFacts:
    """The same facts as build_state, each group computed on its first read: checking a policy
    such as ``forbid: "layout.mbs > 2"`` or ``require: "memory.used_pct < 85"`` on thousands of
    layouts (search/rank.py, the engine's constraint check) then costs no more estimates than
    it reads."""

    def __init__(self, job: Job, lay: Layout, global_batch: int, mbs_fixed: bool, recompute_fixed: bool):
        self.job, self.lay = job, lay
        self.facts = plain_facts(job, lay, global_batch, mbs_fixed, recompute_fixed)
        self._mem = self._st = None

    def memory(self):
        if self._mem is None:
            self._mem = estimate_memory(self.job, self.lay)
        return self._mem

    def step(self):
        if self._st is None:
            self._st = step_time(self.job, self.lay)
        return self._st

    def __getitem__(self, path: str):
        if path not in self.facts:
            group = path.split(".", 1)[0]
            if group == "memory":
                self.facts.update(memory_facts(self.memory()))
            elif group == "metrics":
                self.facts.update(metrics_facts(self.job, self.step()))
            elif group in ("next", "whatif") and "next.tp" not in self.facts:
                self.facts.update(next_values(self.job, self.lay))
            if group == "whatif" and path not in self.facts:
                nxt = {k: v for k, v in self.facts.items() if k.startswith("next.")}
                self.facts.update(whatif_facts(self.job, self.lay, self.memory(), self.step(), nxt))
        return self.facts[path]
