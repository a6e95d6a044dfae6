"""The peak memory of one GPU for a job and layout: components, phases, worst stage.

The peak is taken over the phases of a step, not summed from averages:
  forward/backward: persistent states + activations in flight + the larger of the logits
      spike (last stage) and the backward working set (+ gradients when the framework frees
      them between steps but a step accumulates several micro-batches);
  end of backward (frameworks that free gradients): states + all gradients + working set;
  optimizer step: states + gradients + the optimizer's temporaries.
Every pipeline stage is evaluated (first: most micro-batches in flight and the embedding;
last: the LM head and logits) and the worst one is reported. Allocator fragmentation applies
to what is allocated and freed every step; CUDA context, NCCL communicators and workspaces are
outside PyTorch's allocator and added last.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..job import Job
from ..layout import Layout
from ..params import layer_params, total_params
from ..stages import all_stages
from . import activations as act
from . import overheads as ovh
from . import states as st
from .logits import logits_bytes
from ..vec import maximum, where

GIB = 2.0 ** 30


@dataclass
class MemoryEstimate:
    peak_gib: float
    capacity_gib: float
    fits: bool
    stage: int
    phase: str
    breakdown_gib: dict
    stages: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"peak_gib": round(self.peak_gib, 2), "capacity_gib": round(self.capacity_gib, 2),
                "fits": self.fits, "headroom_gib": round(self.capacity_gib - self.peak_gib, 2),
                "worst_stage": self.stage, "peak_phase": self.phase,
                "breakdown_gib": {k: round(v, 3) for k, v in self.breakdown_gib.items()},
                "stages": [{k: r[k] for k in ("stage", "phase", "peak_gib")} for r in self.stages
                           if r["phase"] == "forward-backward"]}

    def stage_peaks(self) -> list[dict]:
        """Each pipeline stage at its own worst phase, with the breakdown there."""
        worst: dict = {}
        for r in self.stages:
            if r["stage"] not in worst or r["peak_gib"] > worst[r["stage"]]["peak_gib"]:
                worst[r["stage"]] = r
        return [worst[k] for k in sorted(worst)]


def _states(job: Job, lay: Layout, sp) -> st.States:
    m, t = job.model, job.training
    group, egroup = lay.shard_group, lay.expert_dp
    if t.training in ("lora", "qlora"):
        frac = sp.total / max(1.0, total_params(m))
        block = st.model_fraction(m) * sp.total
        return st.adapter_states(m, t, sp.total, block, frac, lay.zero, group)
    s = st.full_training_states(sp.dense, sp.gemm, sp.experts, t, lay.zero, group, egroup, lay.pp)
    if t.training == "rlhf":
        # PPO: policy and value model trained (two sets of states), reference and reward frozen
        trained = t.rlhf_models // 2
        frozen = t.rlhf_models - trained
        s = st.States(s.weights * trained, s.grads * trained, s.master * trained, s.optimizer * trained,
                      s.compute_copy, s.fp8_cache * trained,
                      frozen * st.frozen_bf16(sp.total, lay.zero, group), s.persistent_grads,
                      s.optimizer_temp * trained)
    return s


def estimate_memory(job: Job, lay: Layout) -> MemoryEstimate:
    peak, stage, phase, bd, stages = _peak(job, lay)
    capacity = job.cluster.gpu.memory_gib
    return MemoryEstimate(peak, capacity, peak <= capacity, stage, phase, bd, stages)


def peak_gib(job: Job, lay) -> object:
    """The peak alone, for a Layout or the search's LayoutArrays (then an array)."""
    return _peak(job, lay)[0]


def _peak(job: Job, lay):
    m, t, c = job.model, job.training, job.cluster
    scalar = isinstance(lay, Layout)
    nccl = ovh.nccl_gib(lay)
    fixed = c.gpu.cuda_context_gib + nccl + ovh.WORKSPACES_GIB
    best = None
    per_stage = []
    for sp in all_stages(m, lay):
        s = _states(job, lay, sp)
        a = act.stage_activations(m, t, lay, sp.dense_layers, sp.moe_layers, sp.stage)
        moe_heavy = sp.moe_layers > 0
        transient = act.backward_transient(m, t, lay, moe_heavy)
        logits_peak = 0.0
        if sp.stage == lay.pp - 1:
            logits_peak = logits_bytes(m, t, lay)[1]
        lp = layer_params(m, moe_heavy and m.is_moe)
        layer_rank = lp.tp_sharded / lay.tp + lp.replicated + lp.experts / (lay.ep * lay.etp)
        buffers = ovh.framework_buffers(t, lay, sp.total, layer_rank, unsharded=s.accumulated_grads > 0)
        if t.training == "qlora":
            buffers += 2.0 * layer_rank          # one layer dequantised to bf16 for its GEMMs
        persistent = (s.weights + s.master + s.optimizer + s.fp8_cache + s.frozen
                      + where(s.persistent_grads, s.grads, 0.0))
        free_grads = where(s.persistent_grads, 0.0, s.grads)
        held_grads = s.accumulated_grads + where(lay.grad_accum > 1, free_grads, 0.0)
        spike = logits_peak >= transient
        phases = {
            "forward-backward": dict(activations=a, logits=where(spike, logits_peak, 0.0),
                                     transient=where(spike, 0.0, transient),
                                     compute_copy=s.compute_copy,
                                     late_grads=held_grads),
            "end-of-backward": dict(activations=0.0, logits=0.0, transient=transient, compute_copy=s.compute_copy,
                                    late_grads=free_grads + s.accumulated_grads),
            "optimizer-step": dict(activations=0.0, logits=0.0, transient=s.optimizer_temp, compute_copy=0.0,
                                   late_grads=free_grads),
        }
        for name, ph in phases.items():
            dynamic = ph["activations"] + ph["logits"] + ph["transient"] + ph["compute_copy"] + ph["late_grads"]
            allocated = persistent + buffers + dynamic
            frag = ovh.FRAGMENTATION * dynamic
            peak = (allocated + frag) / GIB + fixed
            if not scalar:
                best = peak if best is None else maximum(best, peak)
                continue
            bd = {
                "weights": s.weights / GIB,
                "gradients": (s.grads if s.persistent_grads else ph["late_grads"]) / GIB,
                "master_weights": s.master / GIB,
                "optimizer": s.optimizer / GIB,
                "frozen_weights": s.frozen / GIB,
                "fp8_weight_cache": s.fp8_cache / GIB,
                "compute_copies": ph["compute_copy"] / GIB,
                "activations": ph["activations"] / GIB,
                "logits": ph["logits"] / GIB,
                "backward_working_set": ph["transient"] / GIB,
                "comm_buffers": buffers / GIB + nccl,
                "cuda_context": c.gpu.cuda_context_gib,
                "workspaces": ovh.WORKSPACES_GIB,
                "fragmentation": frag / GIB,
            }
            per_stage.append({"stage": sp.stage, "phase": name, "peak_gib": round(peak, 2), "breakdown_gib": bd})
            if best is None or peak > best[0] + 1e-9:
                best = (peak, sp.stage, name, bd)
    if not scalar:
        return best, None, None, None, None
    peak, stage, phase, bd = best
    return peak, stage, phase, bd, per_stage
