"""The peak memory of one GPU for a job and layout: components, phases, worst stage.

The peak is the maximum over the phases of a step, each with the tensors the framework holds
then (``phase_live``), not a sum of averages:
  forward: persistent states + the activations in flight + the bf16 weight copies autocast saved
      + the loss's forward (last stage: logits, their fp32 copy and log-softmax at once). With
      fp32 weights under autocast every weight's cast is cached until the autocast region ends,
      after the loss, even under full recomputation, which saves none of them for backward.
      Gradients exist only where the framework keeps them: Megatron's and DeepSpeed's
      persistent buffers, a loop's zero_grad(set_to_none=False) (--zero-grad zeros), or grads
      accumulated from earlier micro-batches. With zero_grad(set_to_none=True) -- PyTorch's
      default since 2.0 and the Trainer's, torch/optim/optimizer.py zero_grad -- the previous
      step's grads are gone.
  backward-start: the same plus the larger of the loss's backward peak (the logits' gradient)
      and the first layer's backward working set with the LM head's new gradient.
  backward-end: gradients appear layer by layer as activations (and saved weight copies) are
      freed: what is live is linear in the layers done, so its maximum is at one end; this is
      the other end -- all gradients, no activations, the last layer's working set.
  optimizer-step: states + gradients + the optimizer's temporaries (kb/memory/optimizers.py).
Every pipeline stage is evaluated (first: most micro-batches in flight and the embedding;
last: the LM head and logits) and the worst one is reported. Allocator fragmentation applies
to what is allocated and freed every step; CUDA context, NCCL communicators and workspaces are
outside PyTorch's allocator and added last.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..defaults import ADAPTERS
from ..frameworks import megatron_ep_overlap_share
from ..job import Job
from ..layout import Layout
from ..params import layer_params
from ..stages import all_stages
from . import activations as act
from . import optimizers as opt
from . import overheads as ovh
from . import peft_experts as pe
from . import states as st
from .logits import largest_block_bytes, logits_bytes, logits_forward_bytes
from .megatron_adapters import megatron_adapter_states
from ..vec import maximum, minimum, where

# bytes in a GiB, the unit of gpus.yaml memory_gib and of every figure reported
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
    allocator: str = "caching"
    largest_block_gib: float = 0.0
    split_peak_gib: float = 0.0
    host_offload_gib: float = 0.0     # activations Megatron keeps in host memory (offload > 0)

    def as_dict(self) -> dict:
        # host_offload_gib only where a layout offloads: every other answer reads as before
        host = {"host_offload_gib": round(self.host_offload_gib, 2)} if self.host_offload_gib else {}
        return {"peak_gib": round(self.peak_gib, 2), "capacity_gib": round(self.capacity_gib, 2),
                "fits": self.fits, "headroom_gib": round(self.capacity_gib - self.peak_gib, 2),
                "worst_stage": self.stage, "peak_phase": self.phase, "phase": self.phase,
                "breakdown_gib": {k: round(v, 3) for k, v in self.breakdown_gib.items()},
                "phases": self.phases(),
                "stages": [{k: r[k] for k in ("stage", "phase", "peak_gib")} for r in self.stage_peaks()],
                "allocator": self.allocator, "largest_block_gib": round(self.largest_block_gib, 2),
                "split_peak_gib": round(self.split_peak_gib, 2), **host}

    def phases(self) -> dict:
        """The worst stage in every phase: its peak and what is live then (components > 0)."""
        return {r["phase"]: {"peak_gib": r["peak_gib"],
                             "live_gib": {k: round(v, 3) for k, v in r["breakdown_gib"].items() if v > 0}}
                for r in self.stages if r["stage"] == self.stage}

    def stage_peaks(self) -> list[dict]:
        """Each pipeline stage at its own worst phase, with the breakdown there."""
        worst: dict = {}
        for r in self.stages:
            if r["stage"] not in worst or r["peak_gib"] > worst[r["stage"]]["peak_gib"]:
                worst[r["stage"]] = r
        return [worst[k] for k in sorted(worst)]


PHASES = ("forward", "backward-start", "backward-end", "optimizer-step")


def _states(job: Job, lay: Layout, sp) -> st.States:
    """The parameter-proportional states one rank of stage ``sp`` holds (kb/memory/states.py):
    a frozen base and adapters (states.adapter_states; Megatron-Bridge's recipe for them,
    megatron_adapters), or full training's (states.full_training_states, ZeRO-sharded per
    Rajbhandari et al. 2020); for RLHF the trained models' states times their count and the
    frozen ones' bf16 weights (states.frozen_bf16)."""
    m, t = job.model, job.training
    group, egroup = lay.shard_group, lay.expert_shard_group
    if t.training in ADAPTERS:
        block = st.model_fraction(m) * sp.total
        ad = st.adapter_params_rank(m, t, sp, lay.tp, lay.etp)
        s = st.adapter_states(m, t, sp.total, block, ad, lay.zero, group, sp.experts, egroup)
        if t.framework == "megatron":
            # Megatron's own recipe for the adapters, not PEFT's fp32 ones (megatron_adapters)
            s = megatron_adapter_states(t, s, ad, st.adapter_largest(m, t), lay.zero)
        return s
    s = st.full_training_states(sp.dense, sp.gemm, sp.experts, t, lay.zero, group, egroup, lay.pp,
                                largest=opt.largest_tensor(m, lay.tp), experts_cast=act.experts_cast_by_autocast(m))
    if t.training == "rlhf":
        # PPO: policy and value model trained (two sets of states), reference and reward frozen;
        # GRPO and DPO: the policy trained, its reference frozen (TrainingSpec.rlhf_trained)
        trained, frozen = t.rlhf_trained, t.rlhf_frozen
        # replace, not a positional rebuild, so a field added to States later keeps its value
        # rather than falling back to its default (accumulated_grads once did: FSDP under PP
        # read 0). The transients -- compute copies, optimizer temporaries, the unsharded
        # gradients FSDP under PP accumulates -- are those of the models one backward and one
        # optimizer step hold: both under the Trainer, whose PPO (TRL PPOTrainer) wraps policy
        # and value in one PolicyAndValueWrapper with one loss, backward and optimizer.step;
        # one at a time elsewhere (OpenRLHF, verl, NeMo-RL train actor and critic in turn)
        together = trained if t.framework == "hf" else 1
        s = replace(s, weights=s.weights * trained, grads=s.grads * trained, master=s.master * trained,
                    step_grads=s.at_step() * trained, second_grads=s.second_grads * trained,
                    optimizer=s.optimizer * trained, fp8_cache=s.fp8_cache * trained,
                    frozen=frozen * st.frozen_bf16(sp.total, lay.zero, group),
                    compute_copy=s.compute_copy * together, optimizer_temp=s.optimizer_temp * together,
                    accumulated_grads=s.accumulated_grads * together)
    return s


def estimate_memory(job: Job, lay: Layout) -> MemoryEstimate:
    """The peak memory of one GPU for ``job`` under ``lay`` (_peak; the module docstring), against
    the GPU's memory_gib, with the step's largest tensor (logits.largest_block_bytes)."""
    peak, stage, phase, bd, stages, split = _peak(job, lay)
    capacity = job.cluster.gpu.memory_gib
    block = largest_block_bytes(job.model, job.training, lay) / GIB
    return MemoryEstimate(peak, capacity, peak <= capacity, stage, phase, bd, stages, ovh.allocator(job.training),
                          block, split, host_offload_gib(job, lay))


def host_offload_gib(job: Job, lay) -> object:
    """GiB of activations a rank keeps in host memory (act.offloaded_bytes; offloading runs at
    pp = 1 only), for a Layout or the search's LayoutArrays."""
    return act.offloaded_bytes(job.model, job.training, lay) / GIB


def peak_gib(job: Job, lay) -> object:
    """The peak alone, for a Layout or the search's LayoutArrays (then an array)."""
    return _peak(job, lay)[0]


def peak_and_split_gib(job: Job, lay) -> tuple:
    """The peak and the split peak (_split_candidate), for a Layout or the search's LayoutArrays."""
    out = _peak(job, lay)
    return out[0], out[5]


def _split_candidate(t, logits, allocated, block):
    """The last stage's memory when the loss asks for its largest tensor (``block`` bytes: the
    forward and the loss's backward, the phases whose ``logits`` are live) and, under the caching
    allocator, finds the segment that held the previous step's copy split by smaller tensors
    since: that segment can neither serve it nor be given back (CUDACachingAllocator's
    release_cached_blocks frees whole unused segments only), so about one more block stays
    reserved beside the allocated memory, in place of the fragmentation allowance. An upper bound,
    not the expected peak: measured in fresh processes (benchmarks/calibration/
    h200_fresh_boundary.jsonl), runs within it ran out (L12 at 29,696-32,768 tokens, t02 at an
    H100's capacity, L11) and others fit (L01, L02, L12 at 28,672); with expandable segments every
    run fit that the estimate says fits. 0 under expandable segments, or where no logits are live."""
    if ovh.allocator(t) != "caching":
        return 0.0
    return where(logits > 0, (allocated + block) / GIB, 0.0)


def saved_weight_copies(s: st.States, lay, layer_rank: float, head_rank: float, rank_params):
    """bf16 weight copies held from forward to backward: autocast's casts, saved by each linear
    for its backward (torch autocast caches them only inside the region; the saved tensors keep
    them alive), or FSDP's unsharded bf16 parameters. Under full recomputation a checkpointed
    layer saves none (torch.utils.checkpoint keeps only its input and recasts in backward): the
    share of the LM head and one recomputed layer remains (of the adapters' copies, for LoRA)."""
    share = minimum(1.0, (head_rank + layer_rank) / maximum(1.0, rank_params))
    # FSDP's unsharded parameters (ZeRO-2; the stage under pipelining) are not autocast's casts:
    # recomputation does not free them (states.py, States.copies_kept)
    return where(s.copies_kept, s.compute_copy,
                 where(lay.recompute == "full", s.compute_copy * share, s.compute_copy))


def phase_live(s: st.States, lay, acts, copies, fwd_copies, logits_fwd, logits_peak, transient, head_grads) -> dict:
    """Bytes of each dynamic component live in each phase (see the module docstring). Gradients
    that the framework frees between steps (``s.persistent_grads`` False) are held from the first
    micro-batch on when a step accumulates several; FSDP under pipelining accumulates unsharded
    grads (``s.accumulated_grads``) from the first backward to the step."""
    free = where(s.persistent_grads, 0.0, s.grads)
    # what a step's only backward ends with and its optimizer step holds (DeepSpeed ZeRO-1: the
    # partition), and what a later micro-batch's backward ends with (ZeRO-2: two partitions)
    last = where(s.persistent_grads, 0.0, s.at_step())
    bwd_end = where(lay.grad_accum > 1, free + s.second_grads, last)
    held = s.accumulated_grads + where(lay.grad_accum > 1, free, 0.0)
    new_head = where(lay.grad_accum > 1, 0.0, minimum(head_grads, free))
    first_bwd = new_head + transient
    spike = logits_peak >= first_bwd
    return {
        "forward": dict(activations=acts, compute_copies=fwd_copies, logits=logits_fwd, late_grads=held,
                        backward_working_set=0.0, optimizer_temporaries=0.0),
        "backward-start": dict(activations=acts, compute_copies=copies, logits=where(spike, logits_peak, 0.0),
                               late_grads=held + where(spike, 0.0, new_head),
                               backward_working_set=where(spike, 0.0, transient), optimizer_temporaries=0.0),
        "backward-end": dict(activations=0.0, compute_copies=where(s.accumulated_grads > 0, copies, 0.0), logits=0.0,
                             late_grads=bwd_end + s.accumulated_grads, backward_working_set=transient,
                             optimizer_temporaries=0.0),
        "optimizer-step": dict(activations=0.0, compute_copies=0.0, logits=0.0, late_grads=last,
                               backward_working_set=0.0, optimizer_temporaries=s.optimizer_temp),
    }


def stage_activation_bytes(job: Job, lay, sp):
    """Activations one rank of stage ``sp`` keeps (act.stage_activations, with Megatron's EP
    overlap where it runs) + PPO's critic's (act.ppo_critic_activations)."""
    m, t = job.model, job.training
    a = act.stage_activations(m, t, lay, sp.dense_layers, sp.moe_layers, sp.stage,
                              ep_overlap=megatron_ep_overlap_share(lay) > 0 if t.framework == "megatron" else False)
    return a + act.ppo_critic_activations(m, t, lay, sp.dense_layers, sp.moe_layers)


def layer_params_rank(lay, lp):
    """Parameters of one layer on a rank: tp_sharded / tp + replicated + experts / (ep x etp)."""
    return lp.tp_sharded / lay.tp + lp.replicated + lp.experts / (lay.ep * lay.etp)


def bf16_expert_params(m, t, lay, lp):
    """The routed experts' parameters on a rank that QLoRA leaves bf16
    (peft_experts.experts_stay_bf16); 0 elsewhere."""
    return lp.experts / (lay.ep * lay.etp) if pe.experts_stay_bf16(m, t) else 0.0


def dequant_bytes(t, layer_rank, bf16_experts):
    """QLoRA: one layer's 4-bit weights dequantised to bf16 for its GEMMs, a compute copy:
    2 x (layer's rank params - its bf16 experts); 0 elsewhere."""
    return 2.0 * (layer_rank - bf16_experts) if t.training == "qlora" else 0.0


def persistent_bytes(s: st.States):
    """Weights, master weights, optimizer states, FP8 cache, frozen models and the gradients a
    framework keeps between steps (states.py)."""
    return s.weights + s.master + s.optimizer + s.fp8_cache + s.frozen + where(s.persistent_grads, s.grads, 0.0)


def head_grad_bytes(s: st.States, head_rank, stage_params):
    """The LM head's gradient, in the recipe's gradient bytes per parameter: grads x head
    params / the stage's params."""
    return s.grads * head_rank / maximum(1.0, stage_params)


def forward_weight_copies(t, lay, s: st.States, copies):
    """Weight copies live in the forward: autocast's cache of weight casts lives through the whole
    forward (torch.autocast clears it on leaving the region: torch/amp/autocast_mode.py __exit__),
    all of compute_copy with fp32 weights under autocast; else the saved ones (``copies``)."""
    return where(act.fp32_weights_under_autocast(t, lay), s.compute_copy, copies)


def merged_expert_terms(m, t, lay, sp, lp, moe_heavy) -> tuple:
    """(kept, backward) bytes of PEFT's merged expert weights (peft_experts): kept per MoE layer
    and micro-batch from its forward to its backward; recomputed otherwise -- under full
    recomputation, and under FSDP's per-op selective policy, which saves matmul and attention
    outputs, not baddbmm's (export/fsdp.py) -- only the recomputed layer's, with its backward.
    The backward adds the down projection's merged-weight gradient (DOWN_SHARE)."""
    merged = pe.merged_expert_bytes(m, t, lay, lp.experts / (lay.ep * lay.etp)) if moe_heavy else 0.0
    rebuilt = lay.recompute != "none"
    kept = where(rebuilt, 0.0, merged * sp.moe_layers * lay.in_flight(sp.stage))
    return kept, merged * (where(rebuilt, 1.0, 0.0) + pe.DOWN_SHARE)


@dataclass(frozen=True)
class StageMemory:
    """What one pipeline stage holds, phase by phase (_stage_memory)."""
    states: st.States
    phases: dict            # phase_live: each phase's dynamic components
    persistent: object      # persistent_bytes
    dequant: object         # dequant_bytes
    buffers: object         # the framework's communication buffers, before the phase decides
    layer_rank: object      # layer_params_rank
    kept_grads: object      # the gradients kept only because of --zero-grad zeros
    block: object           # the loss's largest tensor, on the last stage
    last: bool


def _stage_memory(job: Job, lay, sp) -> StageMemory:
    """The components of stage ``sp`` on one rank (module docstring): its states, activations,
    saved and cached weight copies, logits on the last stage, backward working set and PEFT's
    merged experts, put into phases by phase_live; its buffers and persistent bytes."""
    m, t = job.model, job.training
    s = _states(job, lay, sp)
    moe_heavy = sp.moe_layers > 0
    last = sp.stage == lay.pp - 1
    lp = layer_params(m, moe_heavy and m.is_moe)
    layer_rank = layer_params_rank(lay, lp)
    head_rank = m.vocab * m.hidden / lay.tp if last else 0.0
    bf16_experts = bf16_expert_params(m, t, lay, lp)
    buffers = (ovh.framework_buffers(t, lay, sp.total, layer_rank, unsharded=s.accumulated_grads > 0,
                                     bf16_experts_rank=bf16_experts)
               + ovh.ddp_gradient_buckets(t, lay, s.grads))
    copies = saved_weight_copies(s, lay, layer_rank, head_rank, sp.total)
    kept_merged, merged_backward = merged_expert_terms(m, t, lay, sp, lp, moe_heavy)
    phases = phase_live(s, lay, stage_activation_bytes(job, lay, sp), copies + kept_merged,
                        forward_weight_copies(t, lay, s, copies) + kept_merged,
                        logits_forward_bytes(m, t, lay) if last else 0.0,
                        logits_bytes(m, t, lay)[1] if last else 0.0,
                        act.backward_transient(m, t, lay, moe_heavy) + merged_backward,
                        head_grad_bytes(s, head_rank, sp.total))
    return StageMemory(s, phases, persistent_bytes(s), dequant_bytes(t, layer_rank, bf16_experts), buffers,
                       layer_rank, where(s.loop_kept_grads, s.grads, 0.0),
                       largest_block_bytes(m, t, lay) if last else 0.0, last)


def phase_buffers(t, lay, sm: StageMemory, stage_params, phase: str):
    """The communication buffers held in ``phase``: DeepSpeed's and FSDP's by phase
    (overheads.deepspeed_buffers_in_phase, fsdp_buffers_in_phase)."""
    held = ovh.deepspeed_buffers_in_phase(t, lay, sm.buffers, stage_params, phase)
    return ovh.fsdp_buffers_in_phase(t, lay, held, sm.layer_rank, phase, unsharded=sm.states.accumulated_grads > 0)


def fragmentation_bytes(t, dynamic, kept_grads):
    """The allocator's fragmentation allowance: fragmentation_share x (dynamic + kept gradients).
    A loop's kept gradients (--zero-grad zeros) are made in its first backward among the
    activations, as freed ones are in every backward: the same allowance, so keeping them never
    reads lower than freeing them."""
    return ovh.fragmentation_share(t) * (dynamic + kept_grads)


def breakdown_gib(s: st.States, ph: dict, dequant, held, nccl, frag, gpu) -> dict:
    """The GiB of each component in one phase of one stage, as reported (MemoryEstimate)."""
    return {
        "weights": s.weights / GIB,
        "gradients": ((s.grads if s.persistent_grads else 0.0) + ph["late_grads"]) / GIB,
        "master_weights": s.master / GIB,
        "optimizer": s.optimizer / GIB,
        "frozen_weights": s.frozen / GIB,
        "fp8_weight_cache": s.fp8_cache / GIB,
        "compute_copies": (ph["compute_copies"] + dequant) / GIB,
        "activations": ph["activations"] / GIB,
        "logits": ph["logits"] / GIB,
        "backward_working_set": ph["backward_working_set"] / GIB,
        "optimizer_temporaries": ph["optimizer_temporaries"] / GIB,
        "comm_buffers": held / GIB + nccl,
        "cuda_context": gpu.cuda_context_gib,
        "workspaces": ovh.WORKSPACES_GIB,
        "fragmentation": frag / GIB,
    }


def _peak(job: Job, lay):
    """Peak GiB over every stage and phase (module docstring):
        peak = (persistent + held buffers + dequantised copy + dynamic + fragmentation x dynamic)
               / GiB + CUDA context + NCCL + workspaces
    persistent: weights, master weights, optimizer states, FP8 cache, frozen models and the
    gradients a framework keeps (states.py); held: the framework's communication buffers in that
    phase (overheads.py); dynamic: what phase_live says is live (activations, saved weight
    copies, logits, backward working set, late gradients, optimizer temporaries). Returns
    (peak, stage, phase, breakdown, per-stage rows, split peak); for a search's arrays the
    peaks alone."""
    t, c = job.training, job.cluster
    scalar = isinstance(lay, Layout)
    nccl = ovh.nccl_gib(lay)
    fixed = c.gpu.cuda_context_gib + nccl + ovh.WORKSPACES_GIB
    best = None
    per_stage = []
    split = 0.0
    for sp in all_stages(job.model, lay):
        sm = _stage_memory(job, lay, sp)
        for name, ph in sm.phases.items():
            dynamic = sum(ph.values())
            held = phase_buffers(t, lay, sm, sp.total, name)
            allocated = sm.persistent + held + sm.dequant + dynamic
            frag = fragmentation_bytes(t, dynamic, sm.kept_grads)
            peak = (allocated + frag) / GIB + fixed
            if sm.last:
                split = maximum(split, _split_candidate(t, ph["logits"], allocated + fixed * GIB, sm.block))
            if not scalar:
                best = peak if best is None else maximum(best, peak)
                continue
            bd = breakdown_gib(sm.states, ph, sm.dequant, held, nccl, frag, c.gpu)
            per_stage.append({"stage": sp.stage, "phase": name, "peak_gib": round(peak, 2), "breakdown_gib": bd})
            if best is None or peak > best[0] + 1e-9:
                best = (peak, sp.stage, name, bd)
    if not scalar:
        return best, None, None, None, None, split
    peak, stage, phase, bd = best
    return peak, stage, phase, bd, per_stage, split
