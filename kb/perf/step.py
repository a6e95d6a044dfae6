"""Step time, throughput, MFU and cost of one layout.

Per micro-batch, each pipeline stage spends (Narayanan et al. 2021, Korthikanti et al. 2022):
    compute: its layers' forward+backward (kb/perf/compute.py), plus recomputation (full: the
        layers' forward again, ~1/3 of their GEMM and attention time; selective: the attention
        forward), plus the LM head and loss on the last stage;
    exposed communication: TP/SP collectives (2 all-reduce volumes of s b h in forward and 2 in
        backward per layer, +2 with full recompute), CP ring exchange of K/V (forward sends the
        local K/V chunk c-1 times, backward K/V and their gradients), EP all-to-all (dispatch and
        combine, forward and backward, +2 with full recompute), PP activations and gradients to the neighbour stage --
        each times (1 - overlap) of the framework profile (kb/data/frameworks.yaml) -- and the
        copies of offloaded activations to and from host memory that outlast the compute beside
        them (kb/perf/offload.py);
The pipeline runs m micro-batches: T_pipe = m t_max + (p - 1) t_avg / v (the bubble: (p-1)/m of
the ideal time for 1F1B, (p-1)/(v m) interleaved). Once per step: data-parallel gradient
reduction (all-reduce, or reduce-scatter + all-gather with ZeRO/distributed optimizer -- ZeRO-2
reduce-scattering every micro-batch, since it keeps only its shard of the gradients; ZeRO-3
gathers the parameters for every micro-batch's forward and backward) exposed by (1 - overlap),
and the optimizer step, memory-bound, with autocast's weight casts per micro-batch where the
weights are fp32 (kb/perf/param_traffic.py: bytes per parameter per optimizer and recipe).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..defaults import ADAPTERS
from ..job import Job
from ..layout import Layout
from ..stages import all_stages
from . import comm
from . import param_traffic as pt
from .. import track_record
from ..memory.activations import (experts_cast_by_autocast, offloaded_bytes, routed_copies, tokens_local,
                                  torchtitan_runs)
from ..memory.peft_experts import experts_stay_bf16, merges_experts
from ..memory.states import deepspeed_bf16_pipeline, lora_params
from ..params import layer_params, total_params
from ..frameworks import (cp_all_to_all, megatron_ep_overlap_share, megatron_tp_overlap, profile as framework_profile,
                          torchtitan_async_tp)
from .compute import HBM_EFFICIENCY, gemm_efficiency, layer_time, loss_time, moe_tokens
from .offload import offload_seconds
from .dp_sync import dp_collectives, zero0_seconds, zero1_seconds, zero2_seconds, zero3_seconds
from .flops import hardware_flops_per_token, head_flops, model_flops_per_token
from ..vec import maximum, minimum, where


@dataclass(frozen=True)
class StepTime:
    step_time_s: float
    compute_s: float
    bubble_s: float
    comm_exposed_s: float
    comm_by_kind_s: dict
    optimizer_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu_pct: float
    hfu_pct: float
    model_tflops_per_gpu: float
    moe_host_s: float = 0.0     # the MoE layers' host-side time in the step, its share of the bubble included

    def metrics(self, job: Job) -> dict:
        t, c = job.training, job.cluster
        out = {
            "step_time_s": round(self.step_time_s, 4),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 1),
            "model_tflops_per_gpu": round(self.model_tflops_per_gpu, 1),
            "mfu_pct": round(self.mfu_pct, 2),
            "hfu_pct": round(self.hfu_pct, 2),
            "comm_overhead_pct": round(100 * self.comm_exposed_s / self.step_time_s, 2),
            "bubble_pct": round(100 * self.bubble_s / self.step_time_s, 2),
            "moe_host_pct": round(100 * self.moe_host_s / self.step_time_s, 2),
            "comm_exposed_s": {k: round(v, 4) for k, v in self.comm_by_kind_s.items()},
            "mfu_basis": f"{t.precision if t.precision == 'fp8' else 'bf16'} dense peak "
                         f"{c.gpu.peak_tflops(t.precision):.0f} TFLOP/s; model FLOPs = "
                         + ("4(N - embedding) + causal attention: frozen base weights compute no weight gradients"
                            if t.training in ADAPTERS else "6(N - embedding) + causal attention")
                         + ("; PEFT's merged routed experts do compute theirs, counted in HFU"
                            if merges_experts(job.model, t) else "")
                         + ("; sliding-window layers counted over their window (Megatron-Core counts them "
                            "as full causal and reads higher)" if job.model.sliding_layers else "")
                         + (f"; chunked-attention layers counted over their {job.model.attn_chunk:,}-token chunk, "
                            "less than the kernels timed compute (Megatron-Core counts them as full causal and "
                            "reads higher)" if job.model.chunked_layers else ""),
            "time_to_train_h": None,
        }
        out.update(time_and_cost(job, self.tokens_per_s))
        out["checked"] = track_record.checked(job, self.tokens_per_s, out["time_to_train_h"])
        return out


def time_and_cost(job: Job, tokens_per_s: float) -> dict:
    """Time to train the job's --token-budget at ``tokens_per_s``, and its cost:
        hours = token_budget / tokens_per_s / 3600;  cost = hours x GPUs x price per GPU-hour.
    {} without a budget; no cost without a price."""
    t, c = job.training, job.cluster
    if not t.token_budget:
        return {}
    hours = t.token_budget / tokens_per_s / 3600.0
    out = {"time_to_train_h": track_record.hours_rounded(hours), "token_budget": t.token_budget}
    if c.price_per_gpu_hour is not None:
        out["cost"] = round(hours * c.gpus * c.price_per_gpu_hour, 2)
        out["price_per_gpu_hour"] = c.price_per_gpu_hour
    return out


def trained_fraction(m, t) -> float:
    """Share of the parameters the optimizer updates: all of them, or LoRA's adapters
    (kb/memory/states.lora_params) over the whole model."""
    if t.training not in ADAPTERS:
        return 1.0
    return lora_params(m, t.lora_rank, t) / total_params(m)


def moe_layer_overhead(t, local_experts) -> float:
    """Seconds per MoE layer per micro-batch (forward + backward) that scale with neither the
    tokens nor the GPU: a part per layer (the dispatcher's host sync, the routing and
    permutation kernels) and a part per expert the rank holds (one GEMM per local expert in
    Transformer Engine's grouped linear, each with its launches and casts) --
    kb/data/frameworks.yaml, moe_layer_overhead_ms and moe_expert_overhead_ms, with their fit.

    Zero under full-iteration CUDA graphs (``t.cuda_graphs``): the step is replayed from one
    graph, so no kernel is launched from the host, and the dispatcher pads each rank's tokens
    to a fixed capacity (--moe-expert-rank-capacity-factor) instead of syncing the counts to the
    host (Megatron-Bridge perf recipes, set_full_iter_cg_configs: "Dropless MoE produces
    variable-shaped per-expert tensors that CG cannot capture; we pad to a fixed capacity").
    Both causes of this time are gone; nothing is fitted. Checked on NVIDIA's published runs
    from the NeMo 26.06 stack, which turned it on for the MXFP8 MoE recipes on GB200/GB300
    (benchmarks/throughput.py; Megatron-Bridge v0.6.0 README, news of 06/16/2026)."""
    if t.cuda_graphs == "full-iteration":
        return 0.0
    prof = framework_profile(t.framework)
    return (prof["moe_layer_overhead_ms"] + prof["moe_expert_overhead_ms"] * local_experts) / 1e3


def moe_host_seconds(t, lay: Layout, moe_layers: int, experts: int) -> float:
    """Seconds of one micro-batch on a stage that are its MoE layers' host-side time
    (moe_layer_overhead), their forward run again under full recomputation -- what
    --cuda-graphs full-iteration removes."""
    return moe_layers * moe_layer_overhead(t, experts / lay.ep) * where(lay.recompute == "full", 4.0 / 3.0, 1.0)


def recompute_seconds(framework: str, recompute: str, lt) -> float:
    """Seconds one layer's recomputation adds to its forward + backward ``lt`` (compute.LayerTime).

    full: the layer's forward again: its forward GEMMs (lt.gemm_forward: a third of a trained
    layer's GEMM time, half of a frozen one's, as LoRA's base computes no weight gradients), its
    attention's forward (lt.attention_forward: 1/3.5 of a flash kernel's forward + backward, as
    FlashAttention's backward is 2.5x its forward; for eager attention a third of its GEMMs and
    26 of its 58 bytes a score) and a third of the elementwise time. selective (Megatron
    core_attn, and transformers'): the attention core's forward. selective under torchtitan
    (fsdp): its per-op checkpointing keeps the attention outputs and every other matmul's output
    (kb/memory/activations/ sizes the same), so half the forward GEMMs and the forward
    elementwise work, elementwise / 3, run again, and eager attention's forward, whose bmm and
    softmax are not the SDPA ops the policy keeps (export/fsdp.py _SAVED). modules: core
    attention as selective, plus the norms' and the expert activation's forward, about a quarter
    of the layer's elementwise traffic (its forward half is norms, activation, RoPE and residual
    adds) -- estimated, not fitted -- and on an MLA model the up-projections' forward GEMMs
    (lt.up_proj_forward: mla_up_proj reruns them before the attention's backward; their RoPE is
    in that quarter)."""
    if recompute == "full":
        return lt.gemm_forward + lt.attention_forward + lt.elementwise / 3.0
    if recompute == "selective" and framework == "fsdp":
        return lt.gemm_forward / 2.0 + lt.elementwise / 3.0 + where(lt.eager, lt.attention_forward, 0.0)
    if recompute == "selective":
        return lt.attention_forward
    if recompute == "modules":
        return lt.attention_forward + lt.elementwise / 4.0 + lt.up_proj_forward
    return 0.0


def ep_hidden_share(t, lay: Layout, ov: dict):
    """Share of the EP all-to-all hidden behind compute: the profile's `ep` overlap, under
    Megatron on the share of the step its export overlaps (kb/frameworks.megatron_ep_overlap_share)."""
    if t.framework != "megatron":
        return ov["ep"]
    return ov["ep"] * megatron_ep_overlap_share(lay)


def layers_seconds(job: Job, lay: Layout, sp):
    """Seconds of a stage's layers for one micro-batch: each kind (dense, MoE) n x (layer_time's
    forward + backward + recompute_seconds)."""
    m, t, c = job.model, job.training, job.cluster
    dense_t = layer_time(m, t, lay, c.gpu, False) if sp.dense_layers else None
    moe_t = layer_time(m, t, lay, c.gpu, True) if sp.moe_layers else None
    compute = 0.0
    for lt, n in ((dense_t, sp.dense_layers), (moe_t, sp.moe_layers)):
        if lt is None:
            continue
        compute += n * (lt.total + recompute_seconds(t.framework, lay.recompute, lt))
    return compute


def lm_head_seconds(m, t, lay: Layout, gpu) -> float:
    """The LM head, one GEMM (tokens x V/tp x h) in bf16, forward and backward, at the
    shape-dependent efficiency: 3 x tokens x head_flops / tp / (bf16 peak x eta_g(min(tokens,
    V / tp, h)))."""
    tokens = tokens_local(t, lay)
    peak = gpu.sustained_tflops("bf16") * 1e12
    return 3.0 * tokens * head_flops(m) / lay.tp / (peak * gemm_efficiency(minimum(tokens, m.vocab / lay.tp, m.hidden)))


def tp_overlappable(t, lay: Layout, c):
    """Whether the TP collectives can overlap compute: a TP group that leaves the NVLink domain is
    not overlapped (userbuffers need CUDA IPC / multicast handles inside it); Megatron's overlap
    needs sequence parallelism too (frameworks.megatron_tp_overlap), and torchtitan's async TP
    symmetric memory over NVLink (frameworks.torchtitan_async_tp) -- an adapter or RLHF job under
    fsdp is the user's own FSDP2 script, no async TP."""
    if t.framework == "megatron":
        return megatron_tp_overlap(lay, c)
    if t.framework == "fsdp":
        return torchtitan_async_tp(lay, c) & torchtitan_runs(t)
    return c.inside_block(lay.tp, comm.strides(lay)["tp"])


def tp_seconds(job: Job, lay: Layout, sp, ov: dict):
    """Exposed TP/SP collectives of a stage per micro-batch: layers x (4, 6 with full
    recomputation) all-reduces of s b h bf16 x (1 - the profile's tp overlap where overlappable)."""
    m, t, c = job.model, job.training, job.cluster
    act_bytes = tokens_local(t, lay) * m.hidden * 2.0
    tp_link = comm.collective_link(c, lay.tp, comm.strides(lay)["tp"])
    n_ar = 4 + (2 if lay.recompute == "full" else 0)
    tp_overlap = where(tp_overlappable(t, lay, c), ov["tp"], 0.0)
    return sp.layers * n_ar * comm.all_reduce(tp_link, lay.tp, act_bytes) * (1 - tp_overlap)


def attention_recomputed(t, lay: Layout):
    """Whether a recomputed attention runs its CP traffic again: full recomputation, and
    Megatron's selective and per-module ones, which checkpoint the core attention (Megatron-Core
    attention.py checkpoint_core_attention; TE's CP attention, ring or a2a, inside it) -- not
    torchtitan's per-op policy, which saves the attention kernels' outputs."""
    return (lay.recompute == "full") | ((t.framework == "megatron") & (lay.recompute != "none"))


def cp_seconds(job: Job, lay: Layout, sp, ov: dict):
    """Exposed CP traffic of a stage per micro-batch: Ulysses all-to-alls (ulysses_seconds) where
    the framework runs them (frameworks.cp_all_to_all); else the ring, which passes the local K/V
    (cp - 1) times in forward, K/V and their gradients in backward (3, 4 when the attention is
    recomputed), x (1 - the profile's cp overlap). 0 without CP."""
    m, t, c = job.model, job.training, job.cluster
    tokens = tokens_local(t, lay)
    again = attention_recomputed(t, lay)
    if cp_all_to_all(t.framework, m, t.seq_len):
        cp_link = comm.group_link(c, lay.cp, comm.strides(lay)["cp"])
        return where(lay.cp > 1, sp.layers * ulysses_seconds(m, lay, tokens, cp_link, again), 0.0)
    cp_link = comm.p2p_link(c, lay.cp, comm.strides(lay)["cp"])
    kv_bytes = tokens * 2 * maximum(m.kv_width / lay.tp, m.hd) * 2.0
    rings = 3 + where(again, 1, 0)
    return where(lay.cp > 1, sp.layers * rings * (lay.cp - 1) * comm.p2p(cp_link, kv_bytes) * (1 - ov["cp"]), 0.0)


def ep_seconds(job: Job, lay: Layout, sp, ov: dict):
    """Exposed EP all-to-alls of a stage per micro-batch: MoE layers x (dispatch and combine,
    forward and backward: 4; full recomputation runs the layer's forward, its dispatch and combine
    included, again: 6) x all_to_all of the routed tokens' top_k x h bf16 x (1 - ep_hidden_share).
    0 on a stage without MoE layers."""
    if not sp.moe_layers:
        return 0.0
    m, t, c = job.model, job.training, job.cluster
    ep_link = comm.group_link(c, lay.ep, comm.strides(lay)["ep"])
    a2a = moe_tokens(tokens_local(t, lay), lay) * m.top_k * m.hidden * 2.0
    n_a2a = 4 + where(lay.recompute == "full", 2, 0)
    return sp.moe_layers * n_a2a * comm.all_to_all(ep_link, lay.ep, a2a) * (1 - ep_hidden_share(t, lay, ov))


def pp_seconds(job: Job, lay: Layout, ov: dict):
    """Exposed PP sends per micro-batch: 2 x vp point-to-point transfers (activations forward,
    their gradients backward) of s b h bf16 (/ tp with SP) x (1 - the profile's pp overlap).
    0 without PP."""
    if lay.pp <= 1:
        return 0.0
    m, t, c = job.model, job.training, job.cluster
    pp_link = comm.p2p_link(c, lay.pp, comm.strides(lay)["pp"])
    act_bytes = tokens_local(t, lay) * m.hidden * 2.0
    return 2 * lay.vp * comm.p2p(pp_link, act_bytes / where(lay.sp, lay.tp, 1)) * (1 - ov["pp"])


def _stage_time(job: Job, lay: Layout, sp, last: bool) -> tuple[float, dict, float]:
    """Seconds of one micro-batch on a stage: compute (its layers, their MoE host-side time --
    full recomputation runs each layer's forward, its dispatch and sync included, again -- and on
    the last stage the LM head and the loss), exposed communication by kind, and the part of the
    compute that is MoE host-side time (moe_host_seconds)."""
    m, t, c = job.model, job.training, job.cluster
    ov = framework_profile(t.framework)["overlap"]
    host = moe_host_seconds(t, lay, sp.moe_layers, m.experts)
    compute = layers_seconds(job, lay, sp) + host
    if last:
        compute = compute + lm_head_seconds(m, t, lay, c.gpu) + loss_time(m, t, lay, c.gpu)
    kinds = {"tp": tp_seconds(job, lay, sp, ov), "cp": cp_seconds(job, lay, sp, ov), "ep": ep_seconds(job, lay, sp, ov),
             "pp": pp_seconds(job, lay, ov)}
    if np.any(lay.offload):     # a kind of its own only where a layout offloads: other answers read as before
        moved = offloaded_bytes(m, t, lay)
        kinds["offload"] = offload_seconds(lay, sp.layers, moved, compute, c.gpu)
    return compute, kinds, host


def ulysses_seconds(m, lay: Layout, tokens, link, rerun=None) -> float:
    """Seconds of one layer's Ulysses all-to-alls for one micro-batch (DeepSpeed
    runtime/sequence_parallel/ulysses_sp.py UlyssesSPAttentionHF): forward, q, k and v trade
    their sequence shards for head shards and the attention output trades back, each an
    all-to-all over the CP group of the rank's tokens x width; backward runs the four again for
    the gradients, and full recomputation (or ``rerun``: Megatron's a2a, kb/frameworks.
    megatron_cp_a2a, under any recomputation) the forward's once more. KV heads fewer than CP are
    replicated to one per rank first (kv_replication_factor). Blocking, in the attention's
    path: no overlap (Jacobs et al. 2023, DeepSpeed-Ulysses, section 3.2: 4 N h / P a layer)."""
    width = (m.q_width + m.attn_out_width) / lay.tp + 2 * maximum(m.kv_width / lay.tp, lay.cp * m.hd)
    passes = 2 + where(lay.recompute == "full" if rerun is None else rerun, 1, 0)
    return passes * comm.all_to_all(link, lay.cp, tokens * width * 2.0)


def _dp_time(job: Job, lay: Layout, dense_rank: float, expert_rank: float, compute_mb: float,
             layers: float, moe_layers: float) -> float:
    """Exposed seconds of data-parallel synchronisation per step. ``layers`` and ``moe_layers``
    are the fullest stage's (step_time's walk over the stages): each layer is its own ZeRO-3 /
    FSDP unit, and the routed experts sit on the MoE layers.

    Dense gradients are reduced over the dp x cp ranks; with ZeRO/FSDP the sharded collectives
    run inside the shard group (the whole dp x cp group, or HSDP's smaller group) and, with HSDP,
    each shard is all-reduced across the replicas once per step. Routed experts are reduced over
    the expert-data-parallel group instead (tp x cp x dp / (ep x etp) ranks, ep x etp apart:
    Megatron-Core's expert_data_parallel group, parallel_state.py) and sharded over all of it, or
    under HSDP over Layout.expert_shard_group (kb/memory/estimate.py shards their states the
    same way). With EP filling a node that group has one member per node,
    so its collectives run on one NIC per rank where a dense group's ring spreads over all of the
    node's NICs: a byte of expert parameter costs up to eight times a dense byte between nodes.
    """
    t = job.training
    ov = framework_profile(t.framework)["overlap"]["dp"]
    col = dp_collectives(job, lay, dense_rank, expert_rank, layers, moe_layers)
    return where(lay.zero == 0, zero0_seconds(t, lay, col, ov, compute_mb),
                 where(lay.zero == 3, zero3_seconds(t, lay, col, ov, compute_mb),
                       where(lay.zero == 2, zero2_seconds(t, lay, col, ov, compute_mb),
                             zero1_seconds(lay, col, ov, compute_mb))))


def _uncast(m, sp) -> float:
    """The GEMM weights of a stage autocast does not cast: the fused routed experts, but for
    Llama 4's bmm experts (kb/memory/activations.experts_cast_by_autocast)."""
    return 0.0 if experts_cast_by_autocast(m) else sp.experts


def all_experts_flops(m, t, lay: Layout, frozen: bool):
    """Hardware FLOPs a token beyond the model's where the routed experts compute more copies of
    it than its top k (transformers' Llama4TextMoe: every expert, kb/memory/activations.
    routed_copies): 2 FLOPs a routed parameter a copy forward, twice that backward (once with the
    base frozen, input gradients only), and the forward again under full recomputation -- what
    layer_time charges the expert GEMMs, so that HFU counts the work the step time is made of."""
    extra = routed_copies(m, t, lay) / m.top_k - 1.0
    passes = (2.0 if frozen else 3.0) + where(lay.recompute == "full", 1.0, 0.0)
    return extra * passes * 2.0 * layer_params(m, True).active_experts * m.moe_layers


def step_time(job: Job, lay: Layout) -> StepTime:
    """One optimizer step of ``lay`` (module docstring):
        T = m t_max + (p - 1) t_avg / v                      the pipeline (Narayanan et al. 2021,
                                                              section 2.2: the 1F1B / interleaved bubble)
          + _dp_time                                          exposed data-parallel synchronisation
          + params updated x step bytes / (HBM x HBM_EFFICIENCY)    the optimizer (param_traffic.py)
          + m x cast params x cast bytes / (HBM x HBM_EFFICIENCY)   autocast's weight casts
    with t_max / t_avg the slowest / mean stage's micro-batch (_stage_time: compute + exposed
    communication) and m the micro-batches. MFU = model FLOPs per token (flops.py) x tokens/s per
    GPU / the datasheet peak; HFU adds recomputation's and the experts' extra FLOPs."""
    m, t, c = job.model, job.training, job.cluster
    stages = all_stages(m, lay)
    t_max = t_sum = compute_mb = dense_rank = expert_rank = cast_rank = kinds_max = host_max = host_sum = None
    layers = moe_layers = None
    for sp in stages:
        compute, kinds, host = _stage_time(job, lay, sp, sp.stage == lay.pp - 1)
        total_mb = compute + sum(kinds.values())
        if t_max is None:
            t_max, t_sum, compute_mb, kinds_max, host_max, host_sum = total_mb, total_mb, compute, kinds, host, host
            dense_rank, expert_rank, cast_rank = sp.dense, sp.experts, sp.gemm - _uncast(m, sp)
            layers, moe_layers = sp.layers, sp.moe_layers
            continue
        # the slowest stage sets the pace (the later one on a tie); the middle stages not read are
        # like an earlier one read (kb/stages.middle_stages)
        later = total_mb >= t_max
        kinds_max = {k: where(later, v, kinds_max[k]) for k, v in kinds.items()}
        host_max = where(later, host, host_max)
        host_sum = host_sum + host
        t_max = maximum(t_max, total_mb)
        t_sum = t_sum + total_mb
        compute_mb = maximum(compute_mb, compute)
        dense_rank = maximum(dense_rank, sp.dense)
        expert_rank = maximum(expert_rank, sp.experts)
        cast_rank = maximum(cast_rank, sp.gemm - _uncast(m, sp))
        layers, moe_layers = maximum(layers, sp.layers), maximum(moe_layers, sp.moe_layers)
    t_avg = t_sum / len(stages)
    mcount = lay.grad_accum
    pipe = mcount * t_max + (lay.pp - 1) * t_avg / lay.vp
    bubble = (lay.pp - 1) * t_avg / lay.vp
    dp = _dp_time(job, lay, dense_rank, expert_rank, compute_mb, layers, moe_layers)
    params_rank = dense_rank + expert_rank
    # the optimizer updates the rank's shard: dense over the shard group, experts over expert DP --
    # under ZeRO, and under DeepSpeed's BF16_Optimizer (its pipeline engine at ZeRO-0 in bf16), which
    # keeps the master weights and moments of its data-parallel partition only, as
    # kb/memory/states.full_training_states sizes them
    partitioned = (lay.zero >= 1) | deepspeed_bf16_pipeline(t, lay.zero, lay.pp)
    sharded = where(partitioned, dense_rank / lay.shard_group + expert_rank / lay.expert_shard_group, params_rank)
    bandwidth = c.gpu.hbm_gbps * 1e9 * HBM_EFFICIENCY
    opt = sharded * trained_fraction(m, t) * pt.step_bytes_per_param(t, lay.zero) / bandwidth
    # autocast casts the linear layers' weights (projections, MLP, LM head), as its weight-cast
    # cache holds them (kb/memory/states compute_copy): not the input embedding, the norms, or
    # transformers' fp32 experts; QLoRA dequantises every 4-bit weight it holds (not the fused
    # routed experts bitsandbytes leaves bf16: kb/memory/peft_experts.experts_stay_bf16)
    quantised = params_rank - (expert_rank if experts_stay_bf16(m, t) else 0.0)
    cast_params = quantised if t.training == "qlora" else cast_rank
    casts = mcount * cast_params * pt.microbatch_bytes_per_param(t, lay) / bandwidth
    total = pipe + dp + opt + casts
    comm_kinds = {k: v * mcount for k, v in kinds_max.items()}
    comm_kinds["dp"] = dp
    tokens = lay.global_batch * t.seq_len
    tps = tokens / total
    frozen = t.training in ADAPTERS
    mf = model_flops_per_token(m, t.seq_len, frozen)
    hf = hardware_flops_per_token(m, t.seq_len, lay.recompute, frozen)
    if m.is_moe and merges_experts(m, t):
        # PEFT's merged experts compute their weight gradient: 2 FLOPs a routed parameter a token
        hf = hf + 2.0 * layer_params(m, True).active_experts * m.moe_layers
    if m.is_moe:
        hf = hf + all_experts_flops(m, t, lay, frozen)
    peak = c.gpu.peak_tflops(t.precision) * 1e12
    per_gpu = tps / c.gpus
    return StepTime(step_time_s=total, compute_s=mcount * compute_mb, bubble_s=bubble,
                    comm_exposed_s=sum(comm_kinds.values()), comm_by_kind_s=comm_kinds, optimizer_s=opt,
                    tokens_per_s=tps, tokens_per_s_per_gpu=per_gpu, mfu_pct=100 * mf * per_gpu / peak,
                    hfu_pct=100 * hf * per_gpu / peak, model_tflops_per_gpu=mf * per_gpu / 1e12,
                    moe_host_s=mcount * host_max + (lay.pp - 1) * host_sum / len(stages) / lay.vp)
