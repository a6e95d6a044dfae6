"""Memory outside the model states and activations: named allowances, each with its source.

None of the peer estimators counts these (memory-models.md sections 9, 11.1 M7-M9); together
they are 2-5 GiB per GPU, which decides fits/OOM near the limit.
"""
from __future__ import annotations

from ..defaults import ADAPTERS
from ..layout import Layout
from ..vec import both, minimum, where
from ..schema import TrainingSpec
from .activations import torchtitan_runs
from .states import NF4_BYTES

GIB = 2.0 ** 30          # bytes in a GiB, the unit the overheads are added in

# NCCL communicator buffers per process group the rank belongs to: 544 MB for 2-rank and
# 688 MB for larger groups on A100 (NVIDIA/nccl issue #964); 0.6-0.7 GB per communicator on
# LUMI (LUMI-AI-Guide issue #111).
NCCL_GROUP_2_GIB = 544e6 / GIB
NCCL_GROUP_N_GIB = 688e6 / GIB
# cuBLAS / cuBLASLt / Transformer Engine workspaces: 32 MiB per handle on Hopper, one handle
# per stream, about four streams in a training step (memory-models.md section 11.1 M7).
WORKSPACES_GIB = 4 * 32 / 1024
# DeepSpeed reduce_bucket_size, 5e8 elements (its default, and what the export writes): ZeRO-1/2
# make two such bf16 buffers under overlap_comm (stage_1_and_2.py setup_buckets), ZeRO-3 one
# (stage3.py, contiguous_gradients)
DEEPSPEED_BUCKET_ELEMS = 5e8
# DeepSpeed ZeRO-3 stage3_max_live_parameters default 1e9 (gathered parameters held at once)
DEEPSPEED_Z3_LIVE_ELEMS = 1e9
# Caching-allocator fragmentation: reserved exceeds allocated by 5-10% of the memory that is
# allocated and freed every step (memory-models.md section 9 and 11.1 M9: vLLM reserves 5%,
# ROCm Megatron 7%, Megatron's own estimator 5%); persistent states are allocated once in
# large blocks and do not fragment.
FRAGMENTATION = 0.08
# Expandable segments at the out-of-memory boundary: a failed allocation makes the allocator unmap
# every free page of its segments and retry (CUDACachingAllocator release_cached_blocks, which
# with expandable_segments:True also releases the free pages inside a segment), so what stays
# reserved above allocated is page rounding. Measured on an H200 in fresh processes
# (benchmarks/calibration/h200_fresh_boundary.jsonl): 0.26-0.84 GiB, 0.2-0.7% of the dynamic
# memory, on the six runs that fit at 94-99% of capacity allocated (t02 at 88% of an H100's);
# 1% bounds them. L12's two held 5.6-6.4% while the card still had room for it (reserved 90 and
# 97% of capacity) and fit as well: what is held beyond what is needed is given back.
EXPANDABLE_FRAGMENTATION = 0.01


def allocator(t: TrainingSpec) -> str:
    """PyTorch's CUDA allocator as the run sets it: the job's own choice, or its framework's --
    torchtitan's run_train.sh launches with PYTORCH_ALLOC_CONF="expandable_segments:True"
    (torchtitan 0.3, run_train.sh line 43) where torchtitan runs the job (activations.torchtitan_runs,
    as for memory/logits.loss_chunks); the Trainer, DeepSpeed and
    Megatron-LM leave PyTorch's default caching allocator (Megatron-Bridge's performance guide:
    expandable segments are "not enabled by default")."""
    if t.allocator != "default":
        return t.allocator
    return "expandable" if torchtitan_runs(t) else "caching"


def fragmentation_share(t: TrainingSpec) -> float:
    """The share of the step's dynamic memory the allocator holds above what is allocated as a step
    nears capacity, which decides whether it fits: FRAGMENTATION under the caching allocator,
    EXPANDABLE_FRAGMENTATION with expandable segments, which give back every free page before an
    allocation fails. With room to spare both keep more (expandable segments kept 5.6-6.4% of the
    dynamic memory mapped for L12 in h200_fresh_boundary.jsonl, 85-93% of the card allocated):
    reserved memory there, as torchtitan logs it, reads above this estimate
    (reserved_with_room_gib)."""
    return EXPANDABLE_FRAGMENTATION if allocator(t) == "expandable" else FRAGMENTATION


def reserved_with_room_gib(peak_gib: float, fragmentation_gib: float, allocator_kind: str) -> float:
    """What the allocator reserves at a step's peak when the card has room to spare, from an
    estimate's peak and its fragmentation allowance: expandable segments keep what they freed
    mapped, as the caching allocator keeps blocks (5.6-6.4% of the dynamic memory for L12 in
    h200_fresh_boundary.jsonl, 85-93% of the card allocated), so both are read with FRAGMENTATION.
    For comparing with reserved peaks that runs log (torchtitan's max_reserved_gib), not for
    judging fits."""
    if allocator_kind != "expandable":
        return peak_gib
    return peak_gib + fragmentation_gib * (FRAGMENTATION / EXPANDABLE_FRAGMENTATION - 1)


def process_groups(lay: Layout) -> list:
    """Sizes of the NCCL communicators a rank uses (Megatron-Core parallel_state creates one per
    parallel dimension in use, plus DP x CP for gradient reduction and the embedding group
    that ties the first and last pipeline stages). A size of 1 is a dimension not in use: no
    communicator. Sizes are numbers, or arrays for the search's LayoutArrays."""
    return [lay.tp, lay.cp, lay.dp, lay.pp, lay.ep,
            where(both(lay.cp > 1, lay.dp > 1), lay.dp * lay.cp, 1),
            where(lay.ep > 1, lay.expert_dp, 1),
            2 if lay.pp > 1 else 1]


def nccl_gib(lay: Layout):
    """NCCL memory of the communicators of ``process_groups``."""
    return sum(where(g == 2, NCCL_GROUP_2_GIB, where(g > 1, NCCL_GROUP_N_GIB, 0.0)) for g in process_groups(lay))


def framework_buffers(t: TrainingSpec, lay: Layout, rank_params: float, layer_params_rank: float,
                      unsharded: bool = False, bf16_experts_rank: float = 0.0) -> float:
    """Bytes of framework communication buffers held through the step.

    DeepSpeed ZeRO-1/2: two reduce buckets (2 x 5e8 bf16 elements: reduce_bucket_size,
    double-buffered under the export's overlap_comm; allgather_bucket_size makes no buffer, the
    all-gather writes into the flat bf16 groups), never more than the rank's parameters; held in
    backward only (deepspeed_buffers_in_phase). ZeRO-3/FSDP gather whole layers in bf16 before use: two layers
    (the current one and the prefetched next one, FSDP's default backward/forward prefetch)
    plus one layer's unsharded bf16 gradient and its fp32 reduce-scatter output; DeepSpeed caps
    the gathered parameters at stage3_max_live_parameters. When the parameters already stay
    unsharded (FSDP under pipeline parallelism), only the fp32 reduce-scatter output remains;
    FSDP's ZeRO-2 keeps one layer's gradient reduce-scatter (its bf16 gradient and fp32 input).
    A frozen LoRA / QLoRA base under FSDP has no gradients to reduce: only the two gathered
    layers, in the dtype they are stored in (bf16, or QLoRA's NF4 packed into bf16 storage,
    bnb_4bit_quant_storage, as FSDP + QLoRA requires), less ``bf16_experts_rank``, a layer's
    routed experts that QLoRA leaves bf16 (peft_experts.experts_stay_bf16); the adapters' own
    buffers are small. Which of them each phase holds: deepspeed_buffers_in_phase and
    fsdp_buffers_in_phase.
    """
    z = lay.zero
    if t.framework in ("deepspeed", "hf"):        # the Trainer hands ZeRO 1-3 to DeepSpeed
        buckets = 2 * 2.0 * minimum(DEEPSPEED_BUCKET_ELEMS, rank_params)
        stage3 = 2.0 * minimum(DEEPSPEED_Z3_LIVE_ELEMS, rank_params) + 2.0 * minimum(DEEPSPEED_BUCKET_ELEMS, rank_params)
        return where(z == 3, stage3, where(z >= 1, buckets, 0.0))
    if t.training in ADAPTERS:
        stored = NF4_BYTES if t.training == "qlora" else 2.0
        layer = stored * (layer_params_rank - bf16_experts_rank) + 2.0 * bf16_experts_rank
        return where(z == 3, 2 * layer, 0.0)
    stage3 = where(unsharded, 4.0 * layer_params_rank, (2 * 2.0 + 2.0 + 4.0) * layer_params_rank)
    # FSDP2 ZeRO-2 gathers nothing in backward (its unsharded parameters are compute copies,
    # states.py) but still reduce-scatters each layer's gradient as backward makes it: the bf16
    # gradient and its fp32 reduce-scatter input (_fsdp_collectives.foreach_reduce)
    stage2 = (where(unsharded, 4.0 * layer_params_rank, (2.0 + 4.0) * layer_params_rank)
              if t.framework == "fsdp" else 0.0)
    return where(z == 3, stage3, where(z == 2, stage2, 0.0))


def ddp_gradient_buckets(t: TrainingSpec, lay: Layout, grads: float):
    """Bytes of PyTorch DDP's flat gradient buckets, where the Trainer replicates the model with
    DDP (no ZeRO, dp > 1, no TP or CP): ``grads``, the rank's gradients (every parameter that
    requires one, in its dtype). Reducer::initialize_buckets (torch/csrc/distributed/c10d/
    reducer.cpp) allocates each bucket's ``gradients`` tensor, at::empty of its parameters'
    numel, when DDP is built and keeps it; with gradient_as_bucket_view=False -- DDP's default,
    and Accelerate's DistributedDataParallelKwargs', which the Trainer leaves (its
    _build_accelerator_args passes find_unused_parameters, bucket_cap_mb and broadcast_buffers
    only) -- param.grad stays a tensor of its own that backward copies into the bucket and the
    all-reduce copies back: a second copy of the gradients for the whole run."""
    if t.framework != "hf":
        return 0.0
    ddp = both(both(lay.zero == 0, lay.dp > 1), both(lay.tp == 1, lay.cp == 1))
    return where(ddp, grads, 0.0)


def deepspeed_buffers_in_phase(t: TrainingSpec, lay: Layout, buffers, rank_params: float, phase: str):
    """The part of DeepSpeed's ``buffers`` (framework_buffers) allocated in ``phase``; other
    frameworks' buffers are held through the step.

    ZeRO-1/2 (deepspeed 0.19 runtime/zero/stage_1_and_2.py): the two reduce_bucket_size buffers
    (the export's overlap_comm double-buffers them; the all-gather after the step writes into the
    flat bf16 groups themselves, runtime/utils.py all_gather_dp_groups, no bucket) are made by
    setup_buckets at the first gradient hook of a backward (process_gradients) and freed by
    _release_ipg_buffers in independent_gradient_partition_epilogue -- ZeRO-2's after every
    backward, ZeRO-1's only at the accumulation boundary (engine.py allreduce_gradients). So the
    optimizer step holds none, nor does a forward, but for ZeRO-1's forwards after its first
    backward when micro-batches accumulate.
    ZeRO-3 (stage3.py): the reduce bucket is made once at init and kept; the gathered
    parameters are released module by module (partitioned_param_coordinator.py
    release_sub_module, whose reuse-distance trace ends with the step's backward), so the
    optimizer step holds the bucket alone."""
    if t.framework not in ("deepspeed", "hf") or phase in ("backward-start", "backward-end"):
        return buffers
    z = lay.zero
    stage12 = (z == 1) | (z == 2)
    if phase == "optimizer-step":
        bucket = 2.0 * minimum(DEEPSPEED_BUCKET_ELEMS, rank_params)
        return where(z == 3, minimum(buffers, bucket), where(stage12, 0.0, buffers))
    # forward: ZeRO-3's gathered layers and bucket; ZeRO-1's buckets from its first backward on
    return where((z == 2) | both(z == 1, lay.grad_accum == 1), 0.0, buffers)


def fsdp_buffers_in_phase(t: TrainingSpec, lay: Layout, buffers, layer_params_rank: float, phase: str,
                          unsharded=False):
    """The part of FSDP2's ``buffers`` (framework_buffers) allocated in ``phase``; the whole of it
    in backward, where it is sized.

    forward: ZeRO-3's two gathered bf16 layers (2 x 2 bytes a parameter of the layer), the one
    computing and the next, whose all-gather FSDP2 issues ahead (implicit forward prefetch: the
    all-gather stream runs ahead of compute; reshard_after_forward frees each layer after its
    forward) -- no gradient and no reduce-scatter buffer exists before backward. A frozen adapter
    base's buffers are those two layers alone. ZeRO-2 and FSDP under pipelining (``unsharded``,
    as framework_buffers takes it) keep their unsharded parameters as compute copies (states.py)
    and have only gradient buffers: none.
    optimizer-step: none. post_backward reshards every group (reshard_after_backward, default
    True) and the root's _root_post_backward_final_callback (torch 2.13
    distributed/fsdp/_fully_shard/_fsdp_state.py) waits on and clears the retained reduce-scatter
    inputs (comm_ctx.reduce_scatter_states) at the end of the last backward, before
    optimizer.step.
    Not counted: torchtitan keeps its [norm, lm_head] group gathered from forward to backward
    (torchtitan 0.3 distributed/fsdp.py apply_fsdp_to_decoder: reshard_after_forward only under
    the "always" policy), the README's "not counted yet" LM head."""
    if t.framework != "fsdp" or phase in ("backward-start", "backward-end"):
        return buffers
    if phase == "optimizer-step":
        return 0.0 * buffers
    if t.training in ADAPTERS:
        return buffers
    return where(unsharded, 0.0, where(lay.zero == 3, minimum(buffers, 2 * 2.0 * layer_params_rank), 0.0))
