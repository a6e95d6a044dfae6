"""Input specifications: the model, the cluster and the training job (pydantic).

These are the facts a user supplies. Everything derived from them (parameter counts, memory,
time) is computed elsewhere in kb/ from these three objects and a Layout (kb/layout.py).
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .choices import (RECOMPUTE_CHOICES, Allocator, Attention, CudaGraphs, Framework, Optimizer, Precision, RlAlgorithm, TrainingType,
                      ZeroGrad)
from .vec import maximum


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSpec(_Frozen):
    """A decoder-only transformer, as its Hugging Face config.json describes it."""

    name: str
    family: str = "llama"
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    ffn: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(0, ge=0, description="0 means hidden // heads")
    vocab: int = Field(gt=0)
    tied: bool = False
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    mlp: Literal["swiglu", "geglu", "gelu"] = "swiglu"
    qkv_bias: bool = False
    linear_bias: bool = False
    # o_proj's bias alone (Seed-OSS's attention_out_bias): one h-vector a layer, row-parallel
    # (replicated); an add after the matmul, so nothing more is kept for backward
    o_bias: bool = False
    # dropout in training, as config.json sets it: on the attention probabilities
    # (attention_dropout, which every supported transformers family passes to its attention
    # function) and on the attention's and the MLP's outputs before each residual add (Phi-3's
    # resid_pdrop, Seed-OSS's residual_dropout); 0 none. Sized on transformers layers
    # (kb/memory/activations.eager_dropout_per_score, residual_dropout_bytes); the other
    # profiles' answers say they are not (kb/resolve.model_dropout_scope)
    attn_dropout: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False)
    resid_dropout: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False)
    learned_pos: int = 0
    # the context the model was trained for: config.json's max_position_embeddings (0: not
    # known). Memory and time do not depend on it; a longer sequence is warned about
    # (rules/warnings.yaml: warn.past-trained-context).
    max_positions: int = Field(0, ge=0)
    # rotary position embedding: base frequency (rope_theta) and the long-context scaling of
    # config.json's rope_scaling ("" none, or its rope_type: llama3, yarn, ...) with its factor.
    # Neither changes memory or time; the exports build the model with them.
    rope_theta: float = Field(10000.0, gt=0)
    rope_scaling: str = ""
    rope_factor: float = Field(0.0, ge=0)
    # the scaling's other numbers (YaRN's beta_fast, mscale_all_dim, original_max_position_embeddings,
    # ...; booleans as 0/1), sorted by name: a tuple so that the spec stays hashable
    rope_params: tuple[tuple[str, float], ...] = ()
    # the share of each head's dimensions that RoPE rotates, the first ones (config.json's
    # partial_rotary_factor: GLM-4.5 0.5); the rest pass through. No shape changes; the Megatron
    # export builds it (--rotary-percent)
    rotary_fraction: float = Field(1.0, gt=0, le=1)
    # the epsilon every norm adds under its square root: x / sqrt(mean(x^2) + eps) (config.json's
    # rms_norm_eps; layer_norm_epsilon for BLOOM and Falcon). No shape, memory or time depends on
    # it; the exports build the model with it (Megatron --norm-epsilon). Llama, Mistral, Mixtral
    # and Phi train with 1e-5, Qwen, Gemma and DeepSeek with 1e-6; 1e-5, Megatron's default
    # (transformer_config.py layernorm_epsilon), where nothing names it (a --params model)
    norm_eps: float = Field(1e-5, gt=0, lt=1)
    parallel_attn: bool = False
    qk_norm: bool = False
    # q/k norms over the whole q and k projections (OLMo 2), not over one head's dimensions
    qk_norm_full: bool = False
    # layers whose q and k go through a weightless L2 norm (Llama 4's use_qk_norm, on its RoPE
    # layers only): no parameters, an fp32 copy kept (kb/memory/activations.l2_qk_norm_bytes)
    qk_l2_norm_layers: int = Field(0, ge=0)
    # layers (0-based) that apply no rotary embedding: config.json's no_rope_layers zeros (Llama 4,
    # SmolLM3: every fourth layer). No shape changes; the Megatron export builds them
    # (--no-rope-freq, export/megatron/rope.py nope_args)
    nope_layers: tuple[int, ...] = ()
    # the router weighs its top k by their scores over all experts, not renormalised over the k
    # (config.json's norm_topk_prob false): the softmax over all experts (OLMoE, Qwen2-MoE), or
    # each expert's sigmoid (a DeepSeek-V3 / GLM-4.5 file that sets it false); False renormalises,
    # as Mixtral's, Qwen3-MoE's and DeepSeek-V3's do. Memory and time are the same; the Megatron
    # export builds the softmax kind (--moe-router-pre-softmax) and says it cannot build the
    # sigmoid kind (export/megatron/moe.py router_group_args)
    router_pre_softmax: bool = False
    sandwich_norm: bool = False
    embed_norm: bool = False
    attn_sinks: bool = False
    # attention logit soft-capping: scores = cap x tanh(scores / cap) before the softmax
    # (config.json attn_logit_softcapping, Gemma 2 50.0); 0 none
    attn_softcap: float = Field(0.0, ge=0)
    # final logit soft-capping: logits = cap x tanh(logits / cap) before the loss (config.json
    # final_logit_softcapping, Gemma 2 30.0); 0 none. Memory and time are sized without it
    final_softcap: float = Field(0.0, ge=0)
    # the attention scores are scaled by 1/sqrt(attn_scale_dim), not 1/sqrt(head_dim) (config.json
    # query_pre_attn_scalar: Gemma 2 27B 144, Gemma 3 27B 168, both with head_dim 128); 0 where
    # the model scales by its head dimension
    attn_scale_dim: float = Field(0.0, ge=0)
    # the RoPE base of the sliding-window layers where it is not rope_theta (config.json
    # rope_local_base_freq: Gemma 3 10000 there, rope_theta 1e6 on its full-attention layers); 0:
    # every layer's base is rope_theta
    rope_local_theta: float = Field(0.0, ge=0)
    # clamped GLU: gate and up are clamped to this limit before the activation (config.json's
    # swiglu_limit, gpt-oss 7.0); 0 none. Megatron-Core clamps them in eager ops outside its
    # fused activation (kb/perf/unfused.glu_clamp_bytes).
    glu_limit: float = Field(0.0, ge=0)
    # sliding-window (local) attention: each query sees the last sliding_window tokens, itself
    # included (Hugging Face's sliding_window); 0 none. full_attn_every = N keeps every Nth layer
    # (1-based) full and slides the rest, as Megatron-Core's window_attn_skip_freq reads it
    # (transformer/utils.py is_layer_window_attention: layer_number % N != 0); 0 slides every
    # layer (Mistral 7B v0.1). Gemma 2 and gpt-oss have N = 2, Gemma 3 N = 6.
    sliding_window: int = Field(0, ge=0)
    full_attn_every: int = Field(0, ge=0)
    # chunked (local) attention: a query at position i sees only the keys of its own chunk of
    # attn_chunk tokens, up to itself (Llama 4's attention_chunk_size, 8192; transformers
    # masking_utils.chunked_overlay: kv_idx // chunk == q_idx // chunk), on chunked_layers of the
    # layers (Llama 4: its RoPE layers, Llama4TextConfig.layer_types "chunked_attention"); 0 none
    attn_chunk: int = Field(0, ge=0)
    chunked_layers: int = Field(0, ge=0)
    # mixture of experts
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    shared_ffn: int = 0
    shared_gate: bool = False
    first_dense: int = 0
    # every Nth layer (1-based) MoE, the others dense MLPs of ffn: Llama 4 Maverick's
    # interleave_moe_layer_step 2 (modeling_llama4.py: moe_layers = range(N - 1, L, N)); 0 or 1
    # every layer past first_dense
    moe_every: int = Field(0, ge=0)
    router_bias: bool = False
    # DeepSeek's group-limited routing (config.json's n_group, topk_group, topk_method): the experts
    # in router_groups equal groups, a token's top k taken from its router_group_topk best groups.
    # topk_method says how a group is scored: noaux_tc (DeepSeek-V3, Kimi K2, GLM-4.5) by the sum
    # of its top 2 biased scores, group_limited_greedy (DeepSeek-V2) by its best score, greedy
    # (DeepSeek-V2-Lite) not at all -- no groups (transformers 5.24 DeepseekV3TopkRouter,
    # Glm4MoeTopkRouter, DeepseekV2TopkRouter); "" for routers without groups. The top k's weights
    # are multiplied by router_scale (routed_scaling_factor). Memory and time are the same; the
    # Megatron export builds them (--moe-router-num-groups, --moe-router-group-topk,
    # --moe-router-topk-scaling-factor)
    router_groups: int = Field(0, ge=0)
    router_group_topk: int = Field(0, ge=0)
    router_topk_method: Literal["", "greedy", "group_limited_greedy", "noaux_tc"] = ""
    router_scale: float = Field(1.0, gt=0)
    # multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_dim: int = 0
    qk_rope_dim: int = 0
    v_head_dim: int = 0
    source: str = ""
    inferred: bool = False
    # what the model's config.json describes that the estimate does not size (a vision tower, a
    # quantisation it does not apply), said among the answer's assumptions (kb/hf_config/read.py)
    reading_notes: tuple[str, ...] = ()

    @field_validator("rope_params", mode="before")
    @classmethod
    def _rope_params(cls, v):
        return tuple(sorted((str(k), float(x)) for k, x in v.items())) if isinstance(v, dict) else v

    def rope_param(self, name: str, default: float | None = None) -> float | None:
        return dict(self.rope_params).get(name, default)

    @model_validator(mode="after")
    def _check(self) -> "ModelSpec":
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.experts and not (0 < self.top_k <= self.experts and self.expert_ffn > 0):
            raise ValueError("an MoE model needs 0 < top_k <= experts and expert_ffn > 0")
        if self.first_dense > self.layers:
            raise ValueError("first_dense cannot exceed layers")
        if self.qk_l2_norm_layers > self.layers:
            raise ValueError("qk_l2_norm_layers cannot exceed layers")
        if any(not 0 <= i < self.layers for i in self.nope_layers):
            raise ValueError("nope_layers must be layer indices below layers")
        if self.moe_every > 1 and self.first_dense:
            raise ValueError("moe_every and first_dense cannot both be set: one placement of the MoE layers")
        if self.full_attn_every and not self.sliding_window:
            raise ValueError("full_attn_every needs a sliding_window")
        if self.chunked_layers > self.layers or bool(self.chunked_layers) != bool(self.attn_chunk):
            raise ValueError("chunked_layers needs an attn_chunk (and the reverse), at most layers of them")
        if self.chunked_layers and self.sliding_window:
            raise ValueError("chunked_layers and sliding_window cannot both be set: one local pattern a model")
        if self.full_attn_every == 1:
            raise ValueError("full_attn_every 1 makes every layer full: leave sliding_window out instead")
        g, k = self.router_groups, self.router_group_topk
        # noaux_tc scores a group by the sum of its top two experts (modeling_deepseek_v3.py
        # DeepseekV3TopkRouter: .topk(2, dim=-1) over each group), so a group holds two or more
        least = 2 if self.router_topk_method == "noaux_tc" else 1
        if self.router_topk_method in ("noaux_tc", "group_limited_greedy") and not (
                g and self.experts % g == 0 and self.experts // g >= least and 0 < k <= g):
            # the one check for the catalog and config.json (kb/hf_config/moe.py _router), in both names
            raise ValueError(f"n_group ({g}) and topk_group ({k}) must be an n_group that divides the "
                             f"{self.experts} routed experts{' into groups of two or more' if least == 2 else ''} "
                             f"and a topk_group from 1 to n_group, for topk_method "
                             f"{self.router_topk_method} (its router picks a token's groups before its experts; "
                             "router_groups and router_group_topk in the catalog)")
        return self

    # Derived shape, so that no caller recomputes it.
    @property
    def hd(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def sliding_layers(self) -> int:
        """Layers that attend within the sliding window."""
        if not self.sliding_window:
            return 0
        return self.layers - (self.layers // self.full_attn_every if self.full_attn_every else 0)

    def window_masks(self, seq_len: int) -> bool:
        """Whether the sliding window masks anything at this sequence: a query sees the last
        sliding_window tokens, itself included, so a window of at least the sequence is causal
        attention (Phi-4-mini's 262,144; Ministral's 32,768 below 32K tokens)."""
        return 0 < self.sliding_window < seq_len

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def group_limited(self) -> bool:
        """Whether the router keeps a token's experts to some of the groups (router_groups)."""
        return self.router_topk_method in ("noaux_tc", "group_limited_greedy") and \
            self.router_group_topk < self.router_groups

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        if not self.is_moe:
            return 0
        return self.layers // self.moe_every if self.moe_every > 1 else self.layers - self.first_dense

    def moe_layers_before(self, i):
        """MoE layers among layers 0 .. i - 1 (leading dense layers first, or every Nth MoE); ``i``
        a count or an array of them (the search's offloaded layers: activations.offloaded_bytes)."""
        if not self.is_moe:
            return 0
        if self.moe_every > 1:
            return i // self.moe_every
        return maximum(0, i - self.first_dense)

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    @property
    def q_width(self) -> int:
        """Width of the query projection output (heads x head dim)."""
        if self.is_mla:
            return self.heads * (self.qk_nope_dim + self.qk_rope_dim)
        return self.heads * self.hd

    @property
    def kv_width(self) -> int:
        """Width of one of K or V as attention reads it (KV heads x head dim)."""
        if self.is_mla:
            return self.heads * (self.qk_nope_dim + self.qk_rope_dim)
        return self.kv_heads * self.hd

    @property
    def attn_out_width(self) -> int:
        if self.is_mla:
            return self.heads * self.v_head_dim
        return self.heads * self.hd

    @property
    def shared_width(self) -> int:
        return self.shared_ffn or self.expert_ffn * self.shared_experts


# the figures of a custom GPU (kb/custom_gpu.py) that change how fast it runs, not only what fits:
# a GPU given any of them was not timed against a run on it (GPUSpec.speed_checked_on)
SPEED_FIGURES = ("gpu_tflops", "gpu_fp8_tflops", "gpu_hbm_gbps")


class GPUSpec(_Frozen):
    """One accelerator: memory, dense tensor throughput per precision, memory bandwidth."""

    name: str
    # required, no default: a GPU of another vendor taken as NVIDIA would be told NVIDIA-only kernels
    vendor: Literal["nvidia", "amd"] = Field(description=(
        "the GPU's maker (kb/data/gpus.yaml vendor): which builds of the kernels it runs (rocm)"))
    # required too: an architecture taken as Hopper would be told Hopper-only kernels (FlashAttention-3)
    arch: Literal["ampere", "ada", "hopper", "blackwell", "cdna3", "cdna4"] = Field(description=(
        "its architecture (kb/data/gpus.yaml arch): which kernel builds it runs (kb/frameworks.flash_attn_build)"))
    memory_gib: float = Field(gt=0)
    tflops_bf16: float = Field(gt=0)
    tflops_fp8: Optional[float] = None
    tflops_fp32: float = Field(gt=0, description="plain FP32 TFLOP/s (no tensor cores on NVIDIA; TF32 off)")
    hbm_gbps: float = Field(gt=0)
    intra_link: str = "nvlink4"
    pair_link: Optional[str] = Field(None, description=(
        "a link joining only the two GPUs of a bridged pair (links.yaml), faster than intra_link"))
    host_pcie: str = Field("pcie5", description=(
        "the PCIe generation of its host interface (links.yaml): what --interconnect pcie times a node at"))
    host_link_gbps: Optional[float] = Field(None, gt=0, description=(
        "one-direction GB/s between the GPU and its host CPU's memory where that is not its host PCIe "
        "link (NVLink-C2C to a Grace CPU): what activation offloading copies at (kb/perf/offload.py)"))
    host_memory_gib: Optional[float] = Field(None, gt=0, description=(
        "host memory per GPU where the GPU comes with its host (a Grace superchip's LPDDR5X over its two "
        "GPUs): what activation offloading may fill at most; None where the server decides"))
    gpus_per_node: int = Field(8, gt=0)
    nvlink_domain: int = Field(0, ge=0, description="GPUs in one NVLink domain; 0 = the node")
    cuda_context_gib: float = Field(0.6, ge=0)
    mxfp8: bool = Field(False, description="tensor cores with microscaled (OCP MX) FP8: Blackwell, sm100 and later")
    sustained_share: float = Field(1.0, gt=0, le=2, description=(
        "share of the datasheet peak the tensor cores hold through a training step, relative to "
        "the H100 SXM the compute efficiencies were measured on (kb/perf/compute.py)"))
    custom: tuple[str, ...] = Field((), description=(
        "the figures the user gave in place of the catalog's (kb/custom_gpu.py: gpu_memory, gpu_tflops, "
        "gpu_fp8_tflops, gpu_hbm_gbps); empty for a catalog GPU"))
    speed_checked_on: str = Field("", description=(
        "the measured or published training runs on this GPU (or its silicon at another clock or "
        "memory) that the step-time model is checked against; empty where none is"))
    source: str = ""

    @property
    def rocm(self) -> bool:
        """An AMD GPU (kb/data/gpus.yaml vendor): it runs ROCm's builds of the kernels, which lack
        NVIDIA-only ones (FlashAttention-3, Transformer Engine's userbuffers before 2026). Its
        vendor, not its link: an AMD card on PCIe runs ROCm too."""
        return self.vendor == "amd"

    @property
    def custom_speed(self) -> bool:
        """Whether the user gave this GPU its own speed: any of SPEED_FIGURES (dense BF16 or FP8
        TFLOP/s, HBM GB/s) in ``custom`` (kb/custom_gpu.custom_gpu). Such a GPU is not the catalog
        GPU it is built on for step time: no published run ran at its figures. A GPU given only
        its memory keeps the catalog's speed, and this is False."""
        return any(k in self.custom for k in SPEED_FIGURES)

    @property
    def link_joins(self) -> int:
        """The most GPUs its own fast link joins in one node: its NVLink domain (the 8-GPU
        baseboard of an H100 SXM, an NVL72 rack), else its usual server."""
        return self.nvlink_domain or self.gpus_per_node

    def peak_tflops(self, precision: str) -> float:
        """Dense datasheet peak for the GEMM precision of a recipe (fp8 recipes run GEMMs in
        fp8): the basis of MFU."""
        if precision == "fp8":
            if not self.tflops_fp8:
                raise ValueError(f"{self.name} has no FP8 tensor cores; use --precision bf16")
            return self.tflops_fp8
        return self.tflops_bf16

    def sustained_tflops(self, precision: str) -> float:
        """The peak the step-time model divides work by: the datasheet peak x sustained_share.
        A datasheet peak assumes a clock; under a training step's load the power limit decides
        the clock (kb/data/gpus.yaml gives each share its evidence)."""
        return self.peak_tflops(precision) * self.sustained_share


class LinkSpec(_Frozen):
    """A link between GPUs: per-GPU one-direction bandwidth, per-step latency, efficiency."""

    name: str
    kind: Literal["intra", "inter"]
    gbps: float = Field(gt=0)
    latency_us: float = Field(ge=0)
    efficiency: float = Field(gt=0, le=1)
    peer_gbps: Optional[float] = Field(None, gt=0, description=(
        "one-direction bandwidth of the direct link to each peer where a node's GPUs are wired to "
        "each other with no switch (a full mesh); None where a switch gives every pair the whole gbps"))
    shared_by_node: bool = Field(False, description=(
        "gbps is one NIC that all GPUs of a node share (a cloud VM's network), not one NIC per GPU"))
    source: str = ""

    @property
    def bus_gbps(self) -> float:
        """Bandwidth a large collective actually reaches (GB/s)."""
        return self.gbps * self.efficiency


class ClusterSpec(_Frozen):
    gpu: GPUSpec
    gpus: int = Field(gt=0)
    gpus_per_node: int = Field(gt=0)
    intra: LinkSpec
    inter: LinkSpec
    # up to $1,000 a GPU-hour: list prices are a few dollars to tens (kb/data/gpus.yaml); a
    # larger figure is a typo, and its cost would print with hundreds of digits
    price_per_gpu_hour: Optional[float] = Field(None, ge=0, le=1000, allow_inf_nan=False)
    # --gpus-per-node as the user gave it, before kb/build.py capped gpus_per_node at a one-node
    # job's GPU count: the node a refusal's cluster sizing grows in (search/sizing.node_size)
    node_given: Optional[int] = Field(None, gt=0)

    @model_validator(mode="after")
    def _check(self) -> "ClusterSpec":
        if self.gpus > self.gpus_per_node and self.gpus % self.gpus_per_node:
            fits = [str(n) for n in range(self.gpus_per_node - 1, 0, -1) if self.gpus % n == 0]
            sizes = fits[0] if len(fits) == 1 else f"{', '.join(fits[:-1])} or {fits[-1]}"
            raise ValueError(
                f"--gpus {self.gpus} is not a multiple of --gpus-per-node {self.gpus_per_node}; use whole nodes: "
                f"a multiple of {self.gpus_per_node} GPUs, or --gpus-per-node {sizes} if your nodes hold that many")
        # a node larger than the GPU's fast-link domain (the 8-GPU baseboard of an H100 SXM, an
        # NVL72 rack) would be islands joined by PCIe inside the node, which the communication
        # model does not have: it would time the whole node at NVLink speed
        most = self.gpu.link_joins
        if not self.intra.name.startswith("pcie") and self.gpus_per_node > most:
            raise ValueError(
                f"--gpus-per-node {self.gpus_per_node}: {self.gpu.name}'s {self.intra.name} joins at most {most} "
                f"GPUs (kb/data/gpus.yaml); use --gpus-per-node {most} or fewer, or --interconnect pcie")
        return self

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    @property
    def nvlink_domain(self) -> int:
        """GPUs that share the fast intra-node link (a whole NVL72 rack on GB200)."""
        if self.intra.name.startswith("pcie"):
            return self.gpus_per_node
        return max(self.gpus_per_node, self.gpu.nvlink_domain)

    @property
    def domain_block(self) -> int:
        """GPUs of this job in each NVLink domain it runs on: the largest whole number of nodes
        that divides the job and fits one domain. A job of at most one domain is one block; 128
        GB200 run as two 64-GPU segments, 144 as two full 72-GPU racks -- how Slurm's
        topology/block plugin places a job on NVL72 racks (--segment: equal blocks of nodes in
        one rack each; NVIDIA technical blog, "Achieving Peak System and Workload Efficiency on
        NVIDIA GB200 NVL72 with Slurm Block Scheduling"). Where the domain is the node, the node."""
        most = min(self.nvlink_domain, self.gpus)
        return max(k for k in range(self.gpus_per_node, most + 1, self.gpus_per_node) if self.gpus % k == 0) \
            if most >= self.gpus_per_node else most

    @property
    def inter_bus_gbps(self) -> float:
        """What one GPU reaches across nodes (GB/s) while its node's GPUs all send at once, as every
        collective and pipeline send of a layout does: its own NIC's bus bandwidth, or its share of
        the node's one NIC (LinkSpec.shared_by_node)."""
        share = self.gpus_per_node if self.inter.shared_by_node else 1
        return self.inter.bus_gbps / share

    def inside_block(self, size, stride=1):
        """Whether every group of ``size`` members ``stride`` ranks apart sits inside one block of
        an NVLink domain (domain_block). Groups tile the ranks in spans of size x stride, so all of
        them stay inside only where that span divides the block: on two full NVL72 racks a group
        of 16 at ranks 64-79 has half its members in each rack. ``size`` and ``stride`` may be the
        search's arrays."""
        span = size * stride
        return (span <= self.domain_block) & (self.domain_block % span == 0)


class TrainingSpec(_Frozen):
    seq_len: int = Field(4096, gt=0, le=2 ** 24)
    mbs: Optional[int] = Field(None, gt=0, description="micro-batch; None lets the advisor choose")
    global_batch: Optional[int] = Field(None, gt=0, description="sequences per optimizer step, as the user gave them")
    global_batch_tokens: Optional[float] = Field(None, gt=0, description="tokens per optimizer step, as the user "
                                                 "gave them; kb/resolve.global_batch turns them into sequences")
    training: TrainingType = "pretrain"
    precision: Precision = "bf16"
    optimizer: Optimizer = "adamw"
    recompute: Literal[RECOMPUTE_CHOICES] = "auto"
    attention: Attention = "flash"
    cuda_graphs: CudaGraphs = "none"
    zero_grad: ZeroGrad = "set-to-none"
    allocator: Allocator = "default"
    framework: Framework = "megatron"
    # up to 10^15 tokens (1,000T), 25x the largest published pre-training (Llama 4 Scout: about 40T
    # tokens, Meta's model card)
    token_budget: Optional[float] = Field(None, gt=0, le=1e15, allow_inf_nan=False)
    lora_rank: int = Field(16, gt=0)
    # PEFT's LoraConfig.lora_dropout (its default 0.0): each adapter's dropout keeps a copy of the
    # adapter's input (kb/memory/activations.own_input_copies)
    lora_dropout: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False)
    rl_algorithm: RlAlgorithm = Field("ppo", description="--training rlhf: ppo, grpo or dpo (kb/choices.RlAlgorithm)")
    # cross-entropy computed in this many sequence chunks, each chunk's LM head and loss run
    # forward and backward before the next; 0 = the framework's own (kb/memory/logits.loss_chunks)
    loss_chunks: int = Field(0, ge=0, le=1024)
    defaulted: tuple[str, ...] = Field((), description="settings the user left out and build_job filled in "
                                       "(kb/defaults.py), so that the output can state them")

    @property
    def rlhf_trained(self) -> int:
        """Models --training rlhf trains: PPO's policy and value model (TRL ppo_trainer.py
        PolicyAndValueWrapper; OpenRLHF's actor and critic), GRPO's and DPO's policy alone."""
        return 2 if self.rl_algorithm == "ppo" else 1

    @property
    def rlhf_frozen(self) -> int:
        """Frozen bf16 models beside them: PPO's reference and reward model (TRL PPOTrainer puts
        both through prepare_deepspeed); GRPO's and DPO's reference (grpo_trainer.py and
        dpo_trainer.py ``self.ref_model``)."""
        return 2 if self.rl_algorithm == "ppo" else 1
