"""Exposed data-parallel synchronisation per step, one function a ZeRO stage: the collectives of
the dense and expert groups (group_collectives), and how much of each stage's traffic compute
hides. kb/perf/step._dp_time picks the stage; split from step.py to keep it short.
"""
from __future__ import annotations

from ..layout import Layout
from ..memory.states import deepspeed_bf16_pipeline, recipe
from ..vec import maximum, where
from . import comm


def group_collectives(c, params, n, ns, stride, grad_bytes, units=1) -> dict:
    """Seconds of each data-parallel collective over one group: ``params`` per rank, reduced over
    ``n`` ranks ``stride`` apart and sharded over ``ns`` of them (the rest replicas, HSDP).

    all_reduce: the plain gradient all-reduce; scatter / gather: one reduce-scatter of the
    gradients / all-gather of the bf16 parameters inside the shard group; replicas: each shard's
    all-reduce across the replicas; layer_scatter / layer_gather: the same bytes moved as one
    collective per layer (``units`` of them), each paying its own latency -- how ZeRO-3 and
    FSDP gather and reduce a layer at a time (FSDP2 fully_shard per transformer block,
    torchtitan parallelize.py; DeepSpeed ZeRO-3 fetches per submodule, partitioned_param_coordinator.py).
    """
    shard_link = comm.collective_link(c, ns, stride)
    replicas = n // ns
    times = {"all_reduce": comm.all_reduce(comm.collective_link(c, n, stride), n, params * grad_bytes),
             "scatter": comm.reduce_scatter(shard_link, ns, params * grad_bytes),
             "gather": comm.all_gather(shard_link, ns, params * 2.0),
             "layer_scatter": units * comm.reduce_scatter(shard_link, ns, params * grad_bytes / units),
             "layer_gather": units * comm.all_gather(shard_link, ns, params * 2.0 / units),
             "replicas": comm.all_reduce(comm.collective_link(c, replicas, stride * ns), replicas,
                                         params / ns * grad_bytes)}
    # a group with nothing to move (a dense model's experts) runs no collective, so no latency
    return {k: where(params > 0, v, 0.0) for k, v in times.items()}


def dp_collectives(job, lay: Layout, dense_rank, expert_rank, layers, moe_layers) -> dict:
    """The dense and the expert group's collectives (group_collectives), summed kind by kind. Dense
    gradients are reduced over the dp x cp ranks, tp apart, sharded over the shard group; routed
    experts over the expert-data-parallel group, ep x etp apart, sharded over expert_shard_group;
    one unit a layer (a MoE layer for the experts). Gradients are reduced in the dtype the
    framework keeps them in (kb/memory/states.recipe): bf16 in Megatron's buffer as NVIDIA's
    recipes and the export run it (--grad-reduce-in-bf16), and in DeepSpeed's engine, which the
    Trainer's ZeRO is; fp32 under FSDP2's reduce dtype and DDP."""
    c, t = job.cluster, job.training
    grad_bytes = recipe(t, lay.zero).grads
    dense = group_collectives(c, dense_rank, lay.dp * lay.cp, lay.shard_group, lay.tp, grad_bytes, maximum(layers, 1))
    experts = group_collectives(c, expert_rank, lay.expert_dp, lay.expert_shard_group, lay.ep * lay.etp, grad_bytes,
                                maximum(moe_layers, 1))
    return {k: dense[k] + experts[k] for k in dense}


def hidden_behind_one(x, lay: Layout, ov, compute_mb):
    """A once-a-step collective, overlapped by bucket with the last micro-batch's backward (and the
    next forward for the gather: Megatron's --overlap-grad-reduce / --overlap-param-gather, DDP's
    buckets) -- at best the profile's share ``ov`` of it, and without a pipeline no more than one
    micro-batch's compute can hide: max(x - ov compute_mb, (1 - ov) x). A pipeline stage reduces
    each chunk's gradients as its last backward ends, behind the other chunks' backwards and the
    cool-down: the profile's share alone, (1 - ov) x."""
    return where(lay.pp > 1, (1 - ov) * x, maximum(x - ov * compute_mb, (1 - ov) * x))


def sharded_rounds(t, lay: Layout):
    """How many times a step ZeRO-2/3 move their per-micro-batch traffic: every micro-batch, except
    under torch pipelining, which keeps the stage's parameters unsharded across micro-batches
    and turns FSDP's gradient sync off until the last micro-batch's backward
    (torch.distributed.pipelining stage.py; kb/memory/states.py charges the memory): once."""
    return 1 if (t.framework == "fsdp" and lay.pp > 1) else lay.grad_accum


def zero0_seconds(t, lay: Layout, col: dict, ov, compute_mb):
    """ZeRO-0: one all-reduce a step (hidden_behind_one); DeepSpeed's BF16_Optimizer (its pipeline
    engine at ZeRO-0 in bf16, kb/memory/states.py) all-reduces the gradients and, its master
    weights being partitioned, all-gathers the bf16 weights after its step (bf16_optimizer.py
    update_lp_params: all_gather_dp_groups)."""
    gather = where(deepspeed_bf16_pipeline(t, lay.zero, lay.pp), col["gather"], 0.0)
    return hidden_behind_one(col["all_reduce"] + gather, lay, ov, compute_mb)


def zero1_seconds(lay: Layout, col: dict, ov, compute_mb):
    """ZeRO-1: one reduce-scatter + all-gather a step (hidden_behind_one), plus HSDP's replica
    all-reduce x (1 - ov)."""
    return hidden_behind_one(col["scatter"] + col["gather"], lay, ov, compute_mb) + col["replicas"] * (1 - ov)


def zero2_seconds(t, lay: Layout, col: dict, ov, compute_mb):
    """ZeRO-2 keeps only its gradient shard, so every micro-batch's gradients are reduce-scattered
    as backward makes them (DeepSpeed stage_1_and_2.py reduces its buckets in every backward;
    Megatron-FSDP optim_grads likewise), hidden behind that micro-batch's compute at best, then
    one gather and the replicas' all-reduce x (1 - ov). FSDP2's ZeRO-2 without a pipeline
    reshards after each backward (reshard_after_backward defaults to True, _fsdp_param_group.py),
    so every micro-batch's forward gathers the parameters again -- once, where ZeRO-3 gathers for
    its backward too; DeepSpeed's and Megatron's ZeRO-2 keep their parameters whole and gather
    once a step, after the optimizer."""
    rounds = sharded_rounds(t, lay)
    if t.framework == "fsdp" and lay.pp == 1:
        return rounds * hidden_behind_one(col["layer_gather"] + col["layer_scatter"], lay, ov, compute_mb) \
            + col["replicas"] * (1 - ov)
    per_mb_rs = maximum(col["scatter"] - ov * compute_mb, (1 - ov) * col["scatter"])
    return rounds * per_mb_rs + (col["gather"] + col["replicas"]) * (1 - ov)


def zero3_seconds(t, lay: Layout, col: dict, ov, compute_mb):
    """ZeRO-3: parameters gathered (bf16) for forward and backward and gradients reduce-scattered,
    a layer at a time, every micro-batch (sharded_rounds): 2 gathers + 1 reduce-scatter, hidden
    behind a micro-batch's compute at best, plus the replicas' all-reduce x (1 - ov)."""
    per_mb = 2 * col["layer_gather"] + col["layer_scatter"]
    return sharded_rounds(t, lay) * maximum(per_mb - ov * compute_mb, (1 - ov) * per_mb) + col["replicas"] * (1 - ov)
