"""Framework profiles (kb/data/frameworks.yaml), read once: what each framework can run and
how much communication it hides. One place answers "does this framework have X"."""
from __future__ import annotations

from typing import NamedTuple

from .package_data import package_yaml
from .vec import where


def _profiles() -> dict:
    return package_yaml("frameworks")["frameworks"]


# Frameworks whose context parallelism is DeepSpeed's Ulysses (the export's sequence_parallel_size):
# the Trainer hands it to DeepSpeed, which has no ring attention (kb/perf/step.ulysses_seconds,
# kb/validity.py ulysses-splits-heads)
ULYSSES_FRAMEWORKS = ("hf", "deepspeed")


def megatron_cp_a2a(m, seq_len: int) -> bool:
    """Whether Megatron's CP must run Transformer Engine's all-to-all (--cp-comm-type a2a, heads
    split over the CP ranks as Ulysses does) instead of its default ring (p2p): TE asserts "Context
    parallelism does not support sliding window attention with cp_comm_type='p2p'" (a window that
    masks: a2a or all_gather only) and "Context parallelism only supports softmax_type='learnable'
    with cp_comm_type = 'a2a'" (attention sinks) -- transformer_engine/pytorch/attention/
    dot_product_attention/context_parallel.py attn_forward_func_with_cp, NVIDIA/TransformerEngine
    @d0067d0. a2a serves both, and needs CP to divide a rank's query and KV heads (same file,
    AttnFuncWithCPAndQKVOA2A: "requires num_heads % cp_size == 0 for Q, K, V")."""
    return bool(m.attn_sinks or m.window_masks(seq_len))


def cp_all_to_all(framework: str, m, seq_len: int) -> bool:
    """Whether the framework's CP trades heads by all-to-all (DeepSpeed's Ulysses, or Megatron's
    a2a where its ring cannot run: megatron_cp_a2a) rather than passing K/V around a ring."""
    return framework in ULYSSES_FRAMEWORKS or (framework == "megatron" and megatron_cp_a2a(m, seq_len))


def profile(framework: str) -> dict:
    return _profiles()[framework]


def has_sequence_parallel(framework: str) -> bool:
    """Whether the framework shards norms and dropouts over the TP ranks (its `sequence_parallel`)."""
    return bool(profile(framework)["sequence_parallel"])


def recompute_modes(framework: str) -> tuple[str, ...]:
    """The recomputation modes the framework can run (its `recompute`)."""
    return tuple(profile(framework)["recompute"])


def autoep_preset(family: str) -> str | None:
    """DeepSpeed AutoEP's preset for a model family (its config.json model_type), or None where
    AutoEP has none: the frameworks.yaml `autoep` section, with its source."""
    return package_yaml("frameworks")["autoep"]["presets"].get(family)


def autoep_families() -> tuple[str, ...]:
    """The model families DeepSpeed AutoEP has a preset for, sorted."""
    return tuple(sorted(package_yaml("frameworks")["autoep"]["presets"]))


class FlashBuild(NamedTuple):
    """The flash-attn build a transformers script asks for (flash_attn_build)."""
    impl: str     # from_pretrained's attn_implementation
    no_fa3: str   # why not flash_attention_3, where the GPU's software lacks it ("" elsewhere)
    other: str    # the other build, which --attention flash2 sizes, where the user has the choice ("" elsewhere)


# The largest head size FlashAttention-4 runs a sliding window at on Blackwell: its SM100 kernels
# take head sizes 8-128 (and DeepSeek's 192 / 128), while 256 runs only in the dedicated 2-CTA
# kernel, which refuses local attention forward and backward (flash-attn flash_attn/cute/
# interface.py _validate_head_dims; sm100_hd256_2cta_fmha_forward.py "does not support local
# attention yet", sm100_hd256_2cta_fmha_backward.py "does not support local attention")
FA4_WINDOW_MAX_HEAD_DIM = 128


def flash_attn_build(attention: str, gpu, head_dim: int) -> FlashBuild:
    """Which flash-attn build transformers runs --attention flash or flash2 with on this GPU, the
    one place that decides it (the answer's kb/resolve.window_kernel and the scripts' caveat,
    export._window_kernel_carried, word it): flash2 is flash-attn 2 (attn_implementation
    "flash_attention_2"); flash is the FlashAttention-3 / cuDNN class the estimate times, which is
    FlashAttention-3 ("flash_attention_3") on a Hopper GPU (GPUSpec.arch), with flash-attn 2 the
    user's other choice. FlashAttention-3 is released for Hopper alone (flash-attn README, "FlashAttention-3
    ... Requirements: H100 / H800 GPU"; its hopper/ build has compiled SM80 kernels too since
    7bc3f031, January 2025, which the README does not offer, and for Blackwell one hdim-128 forward,
    instantiations/flash_fwd_hdim128_bf16_sm100.cu, no backward), so:
    on Blackwell the class is FlashAttention-4 ("flash_attention_4", transformers' FA4 backend,
    huggingface/transformers#42435 "[FA4] Initial support", which imports flash_attn.cute;
    flash-attn README: "FlashAttention-4 is written in CuTeDSL and optimized for Hopper and
    Blackwell GPUs (e.g. H100, B200)"), flash-attn 2 again the other choice -- but only up to
    FA4_WINDOW_MAX_HEAD_DIM (head_dim: the model's, for its sliding windows): past it FA4 runs no
    window, and the build is flash-attn 2, which --attention flash2 times; on Ampere and Ada
    it is flash-attn 2 itself, where flash and flash2 time alike (kb/perf/compute.FLASH2_TFLOPS);
    on an AMD GPU (GPUSpec.rocm) ROCm's flash-attn has no FlashAttention-3
    (Dao-AILab/flash-attention#1653: no flash_attn_interface on MI300X) and runs flash-attn 2,
    its CK / Triton build."""
    if attention == "flash2":
        return FlashBuild("flash_attention_2", "", "")
    if gpu.rocm:
        return FlashBuild("flash_attention_2", "ROCm's flash-attn having no FlashAttention-3", "")
    if gpu.arch == "blackwell" and head_dim > FA4_WINDOW_MAX_HEAD_DIM:
        return FlashBuild("flash_attention_2", "FlashAttention-3 being built for Hopper alone and FlashAttention-4 "
                          f"running no sliding window at head size {head_dim} on Blackwell: --attention flash2 "
                          "times flash-attn 2", "")
    if gpu.arch == "blackwell":
        return FlashBuild("flash_attention_4", "FlashAttention-3 being built for Hopper alone", "flash_attention_2")
    if gpu.arch != "hopper":
        return FlashBuild("flash_attention_2", "FlashAttention-3 being built for Hopper alone", "")
    return FlashBuild("flash_attention_3", "", "flash_attention_2")


def megatron_tp_overlap(lay, cluster):
    """Whether Megatron overlaps the TP group's SP all-gather / reduce-scatter with its GEMMs
    (Transformer Engine's userbuffers, --tp-comm-overlap): only with sequence parallelism
    (arguments.py validate_args; sp needs TP > 1) and a TP group inside one NVLink domain, whose
    CUDA IPC / multicast handles the buffers need (TransformerEngine#1071; multi-node NVLink since
    #1470). The export sets the flag exactly here, and the step time counts the profile's `tp`
    overlap only here. Works on the search's layout arrays.

    The group must also talk over NVLink: TE's comm+GEMM overlap requires the TP GPUs "connected
    over NVLink/NVSwitch" (TransformerEngine examples/pytorch/comm_gemm_overlap/README.md,
    Requirements). A PCIe node's `nvlink_domain` is the node (ClusterSpec.nvlink_domain), so
    without this an L40S or H100 PCIe box got the flag and the hidden time; an H100 NVL pair's
    NVLink bridge (GPUSpec.pair_link) carries a TP group of two. Inside the domain means inside
    the job's block of it (ClusterSpec.inside_block): on 136 GB200, blocks of 68, ranks 64-71 of a TP 8
    group sit in two racks."""
    return lay.sp & tp_group_on_nvlink(lay, cluster)


def tp_group_on_nvlink(lay, cluster):
    """Whether the TP group sits inside the job's block of one NVLink domain (ClusterSpec.inside_block)
    and talks over NVLink: not a PCIe node's links, but an NVLink-bridged pair (GPUSpec.pair_link)
    for a TP group of two. What TP's comm+GEMM overlaps need, Megatron's (megatron_tp_overlap)
    and torchtitan's (torchtitan_async_tp). Works on the search's layout arrays."""
    over_nvlink = not cluster.intra.name.startswith("pcie")
    if not over_nvlink and cluster.gpu.pair_link is not None:
        over_nvlink = lay.tp == 2
    return cluster.inside_block(lay.tp) & over_nvlink


def torchtitan_async_tp(lay, cluster):
    """Whether torchtitan runs async TP, the only way it hides TP time (the profile's `tp`
    overlap): --compile.enable_async_tensor_parallel, which needs --compile.enable (torchtitan 0.3
    config/configs.py CompileConfig.__post_init__), makes Inductor fuse the sequence-parallel
    all-gather / reduce-scatter with the matmuls beside them (torch/_inductor/fx_passes/
    micro_pipeline_tp.py; without SP the TP plan all-reduces and there is nothing to fuse), and
    puts the TP group on symmetric memory (distributed/compile.py _maybe_enable_async_tp ->
    enable_symm_mem_for_group): each peer's buffer mapped into every GPU (torch
    CUDASymmetricMemoryUtils map_block, cuMemSetAccess per peer, which fails with no hardware
    path, pytorch/pytorch#174030; NCCL's symmetric memory requires all GPUs on direct NVLink,
    NVIDIA/nccl#2275). So: SP, TP > 1, the TP group on NVLink (tp_group_on_nvlink). The
    torchtitan export turns it on exactly here, and the step time counts the overlap only
    here. Works on the search's layout arrays."""
    return lay.sp & (lay.tp > 1) & tp_group_on_nvlink(lay, cluster)


def megatron_ep_overlap_share(lay):
    """Share of a step's expert-parallel all-to-all that Megatron can hide behind another
    micro-batch's compute (--overlap-moe-expert-parallel-comm, the batch-level 1F1B overlap
    NVIDIA's recipes call moe_a2a_overlap): 1 with interleaved stages; (m - 1) / m without PP,
    m the micro-batches a step, where it pairs one micro-batch's forward with another's backward
    and the first forward and last backward run alone (pipeline_parallel/combined_1f1b.py,
    combined_1f1b_schedule_for_no_pipelining); 0 where Megatron-Core refuses it -- EP 1, full
    recomputation (or a recompute method), PP without interleaving (TransformerConfig.
    __post_init__; it also needs an alltoall or flex dispatcher, which the export writes), and
    interleaving under Megatron-FSDP.

    Where it is above 0 the export sets the flag, the step time hides the profile's `ep` overlap
    times this share (kb/perf/step.ep_hidden_share), and an interleaved rank holds one more
    warm-up forward (kb/memory/activations.stage_activations).

    NVIDIA turns it on where the all-to-all crosses nodes (Qwen3-235B and DeepSeek-V3 on H100,
    Megatron-Bridge's qwen3 and deepseek workload configs; Megatron-MoE-ModelZoo: 19.7 s ->
    17.6 s a step) and mostly leaves it off inside an NVL72 rack, where it dispatches with
    HybridEP / DeepEP over NVLink instead (WorkloadBaseConfig's default). Exposing those runs'
    all-to-all in full read them 9-14% too slow (Qwen3-30B, DeepSeek-V3 on GB200 and B200): the
    faster dispatch hides about as much, so the estimate takes the overlap on every layout
    Megatron allows. Works on the search's layout arrays."""
    # Megatron-FSDP (zero 2 and 3: the export's optim_grads and optim_grads_params) under
    # interleaving is refused by the overlap schedule (pipeline_parallel/combined_1f1b.py,
    # megatron-core 0.19.2: "EP overlap 1F1B with FSDP is not supported for interleaved pipeline
    # parallelism", for any Megatron-FSDP wrapping)
    accepted = (lay.ep > 1) & ((lay.pp == 1) | ((lay.vp > 1) & (lay.zero < 2))) & (lay.recompute != "full")
    paired = where(lay.pp == 1, (lay.grad_accum - 1) / lay.grad_accum, 1.0)
    return where(accepted, paired, 0.0)


# Under full-iteration CUDA graphs (--cuda-graphs full-iteration) Megatron's MoE dispatcher pads
# each rank's routed tokens to this multiple of its balanced share -- a fixed shape the graph can
# capture (TransformerConfig.moe_expert_rank_capacity_factor); 1.5 as Megatron-Bridge's
# full-iteration MoE recipes set it (set_full_iter_cg_configs). A step whose routing overflows it
# is not cut short: the training loop's PagedStashRunner runs it again without the capacity or
# the stash, eagerly (training.py; moe/paged_stash.py prepare_for_rerun), so imbalanced routing
# costs time, not tokens. The fused grouped MLP reads the real per-expert counts on the device
# (token_dispatcher.py: "a fused grouped GEMM that consumes ragged per-expert counts"), so the
# padding costs no GEMM time; the estimate assumes balanced routing, which never overflows.
RANK_CAPACITY_FACTOR = 1.5
