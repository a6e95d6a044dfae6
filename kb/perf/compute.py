"""Compute time of one layer on one rank, at an efficiency that depends on the shapes it runs.

    t = sum over GEMMs 6 M N K / (peak x eta_g)        (forward + dgrad + wgrad)
      + 3.5 x attention-forward FLOPs / (peak x eta_a)  (flash backward ~ 2.5 x forward)
      + elementwise bytes / HBM bandwidth

* eta_g(d) = E_GEMM x d / (d + D0) with d the smallest GEMM dimension on the rank: TP shrinks
  the FFN and head dimensions, MoE shrinks the tokens per expert.
* eta_a(B) = E_ATTN x B / (B + B0) with B = micro-batch x heads per rank x seq / 128, the
  flash-attention thread blocks available to fill the GPU: few heads per GPU (high TP) or short
  local sequences (CP) leave SMs idle (memory-models.md section 10: 333/101 TF forward/backward
  with 8 query heads against 608/488 with 32). FlashAttention-2 (--attention flash2) runs at
  most FLASH2_TFLOPS x the same occupancy factor (see flash_kernel_rate).
* elementwise bytes per token = the framework profile's figure x hidden (kb/data/frameworks.yaml),
  divided by TP only with sequence parallelism; plus the eager ops Megatron-Core runs where
  its fused kernels do not apply (kb/perf/unfused.py: YaRN RoPE, expert biases, clamped GLU).

Constants, fitted on benchmarks/calibration/h100_hf_layer_compute.jsonl (all 24 rows: Llama 3
8B/70B/405B layer shapes at TP 1/2/4/8, seq 4k/8k; least squares on log time, rms 2.6%,
max 7%): E_GEMM = 0.645 and D0 = 195 (the TP 1-2 rows of 70B/405B set E_GEMM, the TP 8 rows
set D0), B0 = 1000 (the 8B TP 4/8 rows), 288 elementwise bytes for transformers. E_ATTN = 0.55
is not fitted: it is the measured flash forward/backward throughput at 32 heads, 8k tokens
(608 / 488 TF of 989, memory-models.md section 10), because attention is too small a share of
the TP 1 rows to identify it. FP8 GEMMs run at the FP8 peak with efficiency x FP8_EFFICIENCY.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..defaults import ADAPTERS
from ..frameworks import profile as framework_profile
from ..memory.activations import (RESIDUAL_DROPOUT_SITES, adapter_input_cast, attention_dropout_applied,
                                  dense_local_mask, experts_cast_by_autocast, fp32_weights_under_autocast,
                                  local_layers, residual_dropout_bytes, routed_copies, sdpa_gets_mask,
                                  tokens_local)
from ..memory.peft_experts import merges_experts
from ..layout import Layout
from ..params import layer_params, mla_up_projections
from ..schema import GPUSpec, ModelSpec, TrainingSpec
from ..vec import maximum, minimum, where
from .flops import attention_flops_at, window_keys
from .unfused import expert_bias_bytes, glu_clamp_bytes, unfused_rope_bytes
from .traffic import (FROZEN_GEMM_SHARE, MERGED_BYTES_PER_PARAM, dropout_traffic, fp32_residual_bytes,
                      lora_bytes_per_token)
from ..memory.logits import vocab_shards

# The four efficiency constants: fitted (E_GEMM, D0, B0) or measured (E_ATTN) as the module
# docstring gives, with their rows and error
E_GEMM = 0.645
D0 = 195.0
E_ATTN = 0.55
B0 = 1000.0
# Flash attention's backward FLOPs over its forward: the backward runs five matmuls (S = QK^T
# recomputed, dV, dP, dQ, dK) to the forward's two, 2.5x (Dao-AILab/flash-attention
# benchmarks/benchmark_flash_attention.py flops(): bwd = 2.5 x fwd, the count its TFLOP/s use)
FLASH_BWD_OVER_FWD = 2.5
# FP8 adds memory traffic around every GEMM: each bf16 GEMM input is read for its amax and read
# again to be written in FP8 (2 + 2 + 1 bytes per element). The GEMM inputs of a layer are about
# a quarter of the elements the elementwise kernels touch, which with Transformer Engine's fused
# norm-to-FP8 casts comes to roughly +50% elementwise traffic. Estimated, not fitted;
# FP8_EFFICIENCY below was fitted with it in place.
FP8_ELEMENTWISE_FACTOR = 1.5
# MoE permutation passes over the routed tokens per layer: permute and unpermute, read + write
# each, forward and backward (Megatron-Core moe_utils permute/unpermute)
PERMUTE_PASSES = 8
# FP8 GEMMs (Transformer Engine / torchao) reach a smaller share of the doubled FP8 peak than
# BF16 GEMMs of theirs: amax reductions and casts, and per-tensor scaling overheads. Fitted on
# the H100 FP8 vs BF16 pairs of published_runs.yaml (same model, layout and source; see
# benchmarks/throughput.py; 59 H100 FP8 dense Megatron rows: 0.80 -> -2.2% median signed error,
# 0.85 -> +1.5%), one constant for the whole family.
FP8_EFFICIENCY = 0.82


# Share of the datasheet HBM bandwidth memory-bound kernels reach: a large copy reaches 90% on an
# H100 (docs/reference/memory-models.md section 10: 3.0 of 3.35 TB/s); 0.8 is an assumption that
# allows for launch gaps between the many small kernels of an optimizer step or loss, not fitted
HBM_EFFICIENCY = 0.8

def expert_gemm_rate(t: TrainingSpec, lay: Layout, gpu: GPUSpec, m: ModelSpec | None = None):
    """Share of the GEMM peak the routed experts' GEMMs run at: 1, or the GPU's own FP32 over its
    dense BF16 rate (kb/data/gpus.yaml tflops fp32 / bf16: 67 / 989 on the H100 SXM, but 91.6 /
    362 on an L40S and 82.6 / 165 on an RTX 4090, whose tensor cores are a smaller multiple of
    their FP32 units) with fp32 weights under autocast (kb/memory/activations.
    fp32_weights_under_autocast), where Mixtral-style experts are fp32 parameters autocast does
    not cast for their matmuls (the measured Trainer MoE steps t09 and t21 are slower than the
    bf16 estimate by 142 and 141 ms per MoE layer -- their expert GEMM FLOPs at 48 TFLOP/s, the
    fp32 rate (67 TF x E_GEMM), not the bf16 one). Nothing here is fitted. Llama 4's bmm experts
    autocast casts: the bf16 rate (activations.experts_cast_by_autocast)."""
    if m is not None and experts_cast_by_autocast(m):
        return 1.0
    return where(fp32_weights_under_autocast(t, lay), gpu.tflops_fp32 / gpu.tflops_bf16, 1.0)


def gemm_efficiency(d: float) -> float:
    """Share of the GEMM peak a GEMM reaches whose smallest dimension is ``d``:
    eta_g(d) = E_GEMM x d / (d + D0) -- a saturating curve, small GEMMs (a TP-sharded FFN, an
    expert's few tokens) leaving the tensor cores idle. Fitted on
    benchmarks/calibration/h100_hf_layer_compute.jsonl (module docstring: 24 rows, rms 2.6%)."""
    return E_GEMM * d / (d + D0)


def attention_efficiency(blocks: float) -> float:
    """Share of the BF16 peak a flash-attention kernel reaches with ``blocks`` thread blocks to
    schedule (micro-batch x heads per rank x local sequence / 128): eta_a(B) = E_ATTN x B / (B + B0).
    E_ATTN measured (608 / 488 TF of 989 at 32 heads, 8k tokens: docs/reference/memory-models.md
    section 10), B0 fitted on the Llama 3 8B TP 4/8 rows of h100_hf_layer_compute.jsonl."""
    return E_ATTN * blocks / (blocks + B0)


# FlashAttention-2 issues Ampere's mma.sync instructions, not Hopper's asynchronous wgmma/TMA,
# so on newer GPUs it stays near what it reaches on an H100: 35% of its 989 TFLOP/s (FA3 paper,
# Shah et al. 2024, arXiv 2407.08608, abstract: "FlashAttention-2 achieving only 35% utilization
# on the H100 GPU"), about 350 TFLOP/s at full occupancy. On the A100 it is the native kernel
# and E_ATTN x 312 is below that cap, so "flash2" and "flash" time alike there.
FLASH2_TFLOPS = 350.0


def flash_kernel_rate(t: TrainingSpec, gpu: GPUSpec, blocks: float) -> float:
    """FLOP/s of the fused attention kernel the job runs: the FA3/cuDNN class at E_ATTN of the
    BF16 peak, or FlashAttention-2 capped at FLASH2_TFLOPS; both scaled by how well the
    flash thread blocks fill the GPU (attention_efficiency)."""
    full = gpu.sustained_tflops("bf16") * 1e12 * E_ATTN
    if t.attention == "flash2":
        full = minimum(full, FLASH2_TFLOPS * 1e12)
    return full * attention_efficiency(blocks) / E_ATTN


# Eager attention materialises the whole square score matrix -- the causal mask is added to it,
# nothing is skipped (transformers' eager_attention_forward: matmul, * scaling, + causal_mask,
# softmax(dtype=fp32), .to(bf16), matmul). Per score, forward: QK^T writes bf16 (2), the scaling
# reads and writes (2 + 2), the mask add reads both and writes (2 + 2 + 2), the softmax reads and
# writes fp32 (2 + 4), the cast reads and writes (4 + 2), AV reads it (2): 26. Backward: dP
# written (2), P read for dV (2), the cast's backward (2 + 4), the softmax's (4 + 4 + 4 read,
# 2 written), the scaling's (2 + 2), dS read for dQ and dK (2 + 2): 32. 58 in all.
EAGER_FORWARD_BYTES_PER_SCORE = 26.0
EAGER_BYTES_PER_SCORE = 58.0


# Config.json's attention_dropout on eager attention's bf16 scores (kb/memory/activations
# .eager_dropout_per_score), the residual dropout on each of its sites' h (residual_dropout_bytes)
DROPOUT_FORWARD_BYTES = dropout_traffic(2.0, forward_only=True)
DROPOUT_BYTES = dropout_traffic(2.0)


def eager_attention_time(attn_fwd_flops: float, scores: float, gpu: GPUSpec, forward_only: bool = False,
                         dropout: bool = False) -> float:
    """Unfused attention: QK^T and AV as ordinary GEMMs over the whole square (3 x their forward
    FLOPs, twice the causal count, at the GEMM efficiency of a head-dim-sized reduction) plus the
    score traffic through HBM; ``attn_fwd_flops`` is the causal count, ``scores`` the square's.
    ``forward_only``: the forward's GEMMs (a third) and its 26 bytes a score, what a recomputed
    layer runs again. ``dropout``: the attention dropout's kernel on every score too (DROPOUT_*)."""
    passes, per_score = (1.0, EAGER_FORWARD_BYTES_PER_SCORE) if forward_only else (3.0, EAGER_BYTES_PER_SCORE)
    if dropout:
        per_score += DROPOUT_FORWARD_BYTES if forward_only else DROPOUT_BYTES
    gemm = passes * 2.0 * attn_fwd_flops / (gpu.sustained_tflops("bf16") * 1e12 * gemm_efficiency(128.0))
    return gemm + scores * per_score / (gpu.hbm_gbps * 1e9 * HBM_EFFICIENCY)


def residual_dropout_traffic(m: ModelSpec, t: TrainingSpec) -> float:
    """Bytes per token the residual dropout's kernels move in one layer, forward and backward: each
    site's h elements at DROPOUT_BYTES, where its masks are kept (residual_dropout_bytes: the hf
    profile)."""
    if residual_dropout_bytes(m, t) == 0:
        return 0.0
    return RESIDUAL_DROPOUT_SITES * DROPOUT_BYTES * m.hidden


# The loss's memory traffic on the torch-native path (transformers' ForCausalLMLoss, torchtitan's
# cross_entropy_loss: logits.float() then F.cross_entropy), per token per vocabulary entry:
# forward the cast (2 read + 4 written) and log_softmax (its input read twice, output written:
# 12); backward nll_loss's dense gradient (4 written), log_softmax's backward (gradient, output
# and the sum read, 12, the input gradient written, 4) and the cast back to bf16 (4 + 2): 44.
# Megatron's runs fused in the recipes it is timed on (cross_entropy_loss_fusion) and is not
# counted here.
LOSS_BYTES_PER_LOGIT = 44.0


def loss_time(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec) -> float:
    """Seconds of the cross-entropy's memory traffic for one micro-batch on the last stage
    (LOSS_BYTES_PER_LOGIT), at the HBM bandwidth streaming kernels reach (HBM_EFFICIENCY)."""
    if t.framework == "megatron":
        return 0.0
    logits = lay.mbs * t.seq_len / lay.cp * m.vocab / vocab_shards(t, lay)
    return logits * LOSS_BYTES_PER_LOGIT / (gpu.hbm_gbps * 1e9 * HBM_EFFICIENCY)


# Kernels that take a sliding window and skip the blocks it masks out: Transformer Engine / cuDNN
# and flash-attn (window_size). Hugging Face's "sdpa" path passes the window as a dense mask past
# the window (activations.dense_local_mask), which rules out SDPA's flash backend, and its eager
# path masks a full score matrix (transformers sdpa_attention_forward, masking_utils).
WINDOWED_KERNELS = ("flash", "flash2")


def local_kernel_keys(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """Keys a query's kernel computes on a local layer (activations.local_layers): window_keys on
    a sliding-window layer for a windowed kernel (WINDOWED_KERNELS); no kernel timed here skips
    the other chunks of a chunked layer. Under transformers' SDPA with the dense local mask
    (activations.dense_local_mask) the efficient or cuDNN kernel takes the mask with is_causal
    False and computes every score of the square: seq keys a query. Otherwise the layer runs
    full causal -- Megatron-Core has no chunked attention (export/megatron/llama4.py llama4_args), nor
    has FSDP's torch-native SDPA a window, and SDPA below the window or chunk drops the mask for
    is_causal: seq / 2, as under DeepSpeed's Ulysses, which drops the mask before SDPA
    (activations.sdpa_gets_mask). Eager computes the square anyway (eager_attention_time doubles
    the causal count given here)."""
    if dense_local_mask(m, t):
        return where(sdpa_gets_mask(lay), float(t.seq_len), t.seq_len / 2.0)
    if m.sliding_layers and t.attention in WINDOWED_KERNELS:
        return window_keys(t.seq_len, m.sliding_window)
    return t.seq_len / 2.0


def windowed_attention_flops(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """Forward attention FLOPs per token the job's kernel computes, averaged over the layers:
    local_kernel_keys on the local (sliding-window or chunked) layers, seq / 2 on the rest."""
    local = local_layers(m) / m.layers
    return attention_flops_at(m, (1.0 - local) * t.seq_len / 2.0 + local * local_kernel_keys(m, t, lay))


def moe_tokens(tokens: float, lay: Layout) -> float:
    """Tokens one rank routes through its experts: the sequence-parallel shard (tokens / tp)
    gathered over the expert-TP group (x etp)."""
    return where(lay.sp, tokens * lay.etp / lay.tp, tokens)


@dataclass(frozen=True)
class LayerTime:
    gemm: float
    attention: float
    elementwise: float
    # the forward's share of ``gemm``: 2 of the 6 MNK of a trained weight, but 2 of the 4 of a
    # frozen one (no weight gradient), so recomputing a LoRA layer's forward is half its GEMM time
    gemm_forward: float
    # the forward's share of ``attention``: 1 of 3.5 for a flash kernel (its backward is 2.5x),
    # a third of the GEMMs and 26 of the 58 bytes a score for eager attention
    attention_forward: float
    # unfused attention (bmm, softmax, bmm): a fused kernel's output is what per-op checkpointing
    # keeps, eager's ops are recomputed (kb/perf/step.recompute_seconds)
    eager: bool
    # the forward of MLA's up-projections (mla_up_forward_seconds), which per-module
    # recomputation reruns on an MLA model (kb/perf/step.recompute_seconds); 0 for other models
    up_proj_forward: float = 0.0

    @property
    def total(self) -> float:
        return self.gemm + self.attention + self.elementwise


def hbm_seconds(nbytes: float, gpu: GPUSpec) -> float:
    """Seconds a layer's memory-bound kernels take to move ``nbytes``: nbytes / (hbm_gbps x 1e9),
    the datasheet bandwidth (kb/data/gpus.yaml) the profiles' elementwise bytes were fitted
    against (module docstring), not HBM_EFFICIENCY of it."""
    return nbytes / (gpu.hbm_gbps * 1e9)


def gemm_seconds(M: float, N: float, K: float, t: TrainingSpec, gpu: GPUSpec) -> float:
    """6 M N K / (peak x eta_g(min(M, N, K)) x FP8 factor): forward, dgrad and wgrad GEMMs, at the
    job's precision's sustained peak; FP8 GEMMs at FP8_EFFICIENCY of it."""
    fp8 = FP8_EFFICIENCY if t.precision == "fp8" else 1.0
    return 6.0 * M * N * K / (gpu.sustained_tflops(t.precision) * 1e12 * gemm_efficiency(minimum(M, N, K)) * fp8)


def mlp_shapes(m: ModelSpec, M: float, f: float) -> list:
    """GEMM shapes (M, N, K) of an MLP of width ``f`` on M tokens: gate and up (swiglu, geglu) or
    up alone, each h -> f, then down f -> h."""
    n_mlp_in = 2 if m.mlp in ("swiglu", "geglu") else 1
    return [(M, f, m.hidden)] * n_mlp_in + [(M, m.hidden, f)]


def mla_up_shapes(m: ModelSpec, tp: float, tokens: float) -> list:
    """GEMM shapes (M, N, K) of MLA's up-projections (kb/params.mla_up_projections: q_b or q_proj,
    and kv_b, what Megatron-Core's mla_up_proj recomputation reruns) on one TP rank, their output
    features sharded by TP."""
    return [(tokens, out / tp, inp) for inp, out in mla_up_projections(m)]


def attention_shapes(m: ModelSpec, tp: float, tokens: float) -> list:
    """GEMM shapes (M, N, K) of the attention projections on one TP rank: q, k, v (at least one
    head's width each: kv heads replicated where TP exceeds their count) and o; MLA's q down
    projection (none without a q LoRA: kb/params.attention_projections), its joint kv down
    projection (kv_lora_rank + rope dims), the up projections (mla_up_shapes) and o."""
    h = m.hidden
    q, kv, o = m.q_width / tp, maximum(m.kv_width / tp, m.hd), m.attn_out_width / tp
    if m.is_mla:
        q_down = [(tokens, m.q_lora_rank, h)] if m.q_lora_rank else []
        return q_down + [(tokens, m.kv_lora_rank + m.qk_rope_dim, h)] + mla_up_shapes(m, tp, tokens) + [(tokens, h, o)]
    return [(tokens, q, h), (tokens, kv, h), (tokens, kv, h), (tokens, h, o)]


def dense_shapes(m: ModelSpec, lay: Layout, tokens: float, moe: bool) -> list:
    """GEMM shapes every token runs on a rank: the attention projections, then a dense layer's
    MLP (ffn / tp), or an MoE layer's router (h -> experts) and shared expert (shared_width / tp)."""
    shapes = attention_shapes(m, lay.tp, tokens)
    if not moe:
        return shapes + mlp_shapes(m, tokens, m.ffn / lay.tp)
    shapes.append((tokens, m.experts, m.hidden))                        # router
    if m.shared_width:
        shapes += mlp_shapes(m, tokens, m.shared_width / lay.tp)
    return shapes


def expert_gemm_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec, tokens: float) -> float:
    """Seconds of the routed experts' GEMMs on a rank: experts / ep local experts, each an MLP of
    expert_ffn / etp on its share of the tokens, at expert_gemm_rate. Balanced routing: each local
    expert sees tokens x top_k / experts of every EP rank's tokens; the MoE layer runs on the
    SP-sharded tokens, re-gathered over expert-TP only (Megatron-Core MoE: tokens/tp x etp per
    rank) (transformers' Llama 4 runs every token through every expert: activations.routed_copies)."""
    shapes = mlp_shapes(m, moe_tokens(tokens, lay) * routed_copies(m, t, lay) * lay.ep / m.experts,
                        m.expert_ffn / lay.etp)
    local_experts = m.experts / lay.ep
    return local_experts * sum(gemm_seconds(*s, t, gpu) for s in shapes) / expert_gemm_rate(t, lay, gpu, m)


def mla_up_forward_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec, tokens: float) -> float:
    """Forward seconds of MLA's up-projections on a rank: a third of gemm_seconds (2 of its
    6 M N K) summed over mla_up_shapes -- what Megatron-Core's mla_up_proj recomputation adds to
    the backward (kb/perf/step.recompute_seconds); 0 for a model without MLA."""
    if not m.is_mla:
        return 0.0
    return sum(gemm_seconds(*s, t, gpu) for s in mla_up_shapes(m, lay.tp, tokens)) / 3.0


def trained_gemm_seconds(m: ModelSpec, t: TrainingSpec, moe: bool, dense: float, experts: float) -> float:
    """GEMM seconds with the weight gradients the job computes: all of them, or under LoRA
    FROZEN_GEMM_SHARE of the frozen base weights'. PEFT's merged expert weights
    (kb/memory/peft_experts) take the experts' weight gradient: their GEMMs run as trained ones."""
    if t.training not in ADAPTERS:
        return dense + experts
    merged = moe and merges_experts(m, t)
    return dense * FROZEN_GEMM_SHARE + experts * (1.0 if merged else FROZEN_GEMM_SHARE)


def attention_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec) -> tuple:
    """(forward + backward, forward) seconds of the attention core on a rank, on attn_fwd =
    tokens x windowed_attention_flops / tp forward FLOPs: eager attention's GEMMs and score
    traffic (eager_attention_time, with the attention dropout where it applies), or a flash
    kernel's (1 + FLASH_BWD_OVER_FWD) x attn_fwd at flash_kernel_rate, its forward 1 of 3.5."""
    tokens = tokens_local(t, lay)
    heads = m.heads / lay.tp
    attn_fwd = tokens * windowed_attention_flops(m, t, lay) / lay.tp
    if t.attention == "eager":
        # a bool, not the per-score bytes, which are an array over a searched space's layouts
        drop = attention_dropout_applied(m, t)
        return (eager_attention_time(attn_fwd, tokens * heads * t.seq_len, gpu, dropout=drop),
                eager_attention_time(attn_fwd, tokens * heads * t.seq_len, gpu, forward_only=True, dropout=drop))
    blocks = lay.mbs * heads * (t.seq_len / lay.cp) / 128.0
    attention = (1.0 + FLASH_BWD_OVER_FWD) * attn_fwd / flash_kernel_rate(t, gpu, blocks)
    return attention, attention / (1.0 + FLASH_BWD_OVER_FWD)


def framework_traffic_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec) -> float:
    """Seconds of the layer's elementwise kernels: tokens x (the framework profile's
    elementwise_bytes x hidden, kb/data/frameworks.yaml, + residual_dropout_traffic), divided by
    TP only with sequence parallelism, over the HBM bandwidth."""
    seq_shard = where(lay.sp, lay.tp, 1)
    per_token = framework_profile(t.framework)["elementwise_bytes"] * m.hidden + residual_dropout_traffic(m, t)
    return hbm_seconds(tokens_local(t, lay) * per_token / seq_shard, gpu)


def permutation_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec, moe: bool) -> float:
    """MoE token permutation: every token is copied to its k experts and back (permute and
    unpermute, each a read and a write of k x h bf16 values), forward and backward:
    moe_tokens x PERMUTE_PASSES x routed copies x h x 2 bytes (Megatron-Core moe_utils
    permute/unpermute). 0 on a dense layer."""
    if not moe:
        return 0.0
    copies = routed_copies(m, t, lay)
    return hbm_seconds(moe_tokens(tokens_local(t, lay), lay) * PERMUTE_PASSES * copies * m.hidden * 2.0, gpu)


def fp8_traffic_factor(t: TrainingSpec) -> float:
    """FP8_ELEMENTWISE_FACTOR on the elementwise traffic of an FP8 job (amax reads and casts around
    every GEMM input, see the constant), else 1."""
    return FP8_ELEMENTWISE_FACTOR if t.precision == "fp8" else 1.0


def fp32_residual_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec) -> float:
    """tokens x fp32_residual_bytes x h over the HBM bandwidth: autocast's casts and the fp32
    residual adds of fp32 weights under bf16 autocast (kb/perf/traffic.fp32_residual_bytes)."""
    return hbm_seconds(tokens_local(t, lay) * fp32_residual_bytes(t, lay) * m.hidden, gpu)


def unfused_rope_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec) -> float:
    """tokens x unfused_rope_bytes over the HBM bandwidth: Megatron-Core's eager RoPE where its
    fused kernel does not apply (kb/perf/unfused.py)."""
    return hbm_seconds(tokens_local(t, lay) * unfused_rope_bytes(m, t, lay.tp), gpu)


def expert_unfused_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec, moe: bool) -> float:
    """Routed token copies x (expert_bias_bytes + glu_clamp_bytes) over the HBM bandwidth:
    Megatron-Core's eager expert biases and clamped GLU (kb/perf/unfused.py). 0 on a dense layer."""
    if not moe:
        return 0.0
    copies = moe_tokens(tokens_local(t, lay), lay) * routed_copies(m, t, lay)
    return hbm_seconds(copies * (expert_bias_bytes(m, t) + glu_clamp_bytes(m, t, lay.etp)), gpu)


def lora_traffic_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec, moe: bool) -> float:
    """tokens x lora_bytes_per_token / tp over the HBM bandwidth: the adapters' memory-bound
    rank-r GEMMs, casts and adds (kb/perf/traffic.py). 0 without adapters."""
    if t.training not in ADAPTERS:
        return 0.0
    nbytes = lora_bytes_per_token(m, t, moe, adapter_input_cast(t, lay))
    return hbm_seconds(tokens_local(t, lay) * nbytes / lay.tp, gpu)


def merged_expert_seconds(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec, moe: bool) -> float:
    """MERGED_BYTES_PER_PARAM x the rank's routed-expert parameters (experts / (ep x etp)) over the
    HBM bandwidth: PEFT's merge of the adapters into the expert weights and its backward
    (kb/memory/peft_experts). 0 where the experts are not merged."""
    if t.training not in ADAPTERS or not (moe and merges_experts(m, t)):
        return 0.0
    expert_params = layer_params(m, True).experts / (lay.ep * lay.etp)
    return hbm_seconds(MERGED_BYTES_PER_PARAM * expert_params, gpu)


def layer_time(m: ModelSpec, t: TrainingSpec, lay: Layout, gpu: GPUSpec, moe: bool) -> LayerTime:
    """Forward + backward seconds of one layer for one micro-batch on one rank (no recompute):
    the sum of the terms above, the elementwise ones in the order they were always added."""
    tokens = tokens_local(t, lay)
    dense_gemm = sum(gemm_seconds(*s, t, gpu) for s in dense_shapes(m, lay, tokens, moe))
    expert_gemm = expert_gemm_seconds(m, t, lay, gpu, tokens) if moe else 0.0
    attention, attention_forward = attention_seconds(m, t, lay, gpu)
    ew = ((framework_traffic_seconds(m, t, lay, gpu) + permutation_seconds(m, t, lay, gpu, moe))
          * fp8_traffic_factor(t)
          + fp32_residual_seconds(m, t, lay, gpu)
          + unfused_rope_seconds(m, t, lay, gpu)
          + expert_unfused_seconds(m, t, lay, gpu, moe)
          + lora_traffic_seconds(m, t, lay, gpu, moe)
          + merged_expert_seconds(m, t, lay, gpu, moe))
    return LayerTime(trained_gemm_seconds(m, t, moe, dense_gemm, expert_gemm), attention, ew,
                     (dense_gemm + expert_gemm) / 3.0, attention_forward, t.attention == "eager",
                     mla_up_forward_seconds(m, t, lay, gpu, tokens))
