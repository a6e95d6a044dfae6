"""Bytes per token an MLP keeps for backward: a dense MLP's by implementation (fused SwiGLU,
transformers' gated MLP, gpt-oss's clamped GLU), and an MoE block's routed experts (their
copies of each token, dtype and paged stash), router and shared expert."""
from __future__ import annotations

from ...layout import Layout
from ...schema import ModelSpec, TrainingSpec
from ...vec import where
from .implementation import experts_cast_by_autocast, fp32_weights_under_autocast, profile, routed_copies


# Megatron-Core's paged stash under full-iteration CUDA graphs keeps the routed experts'
# activations for backward in a buffer preallocated at this multiple of the balanced load
# (TransformerConfig.moe_paged_stash_buffer_size_factor_cuda: "positive = avg-based, magnitude
# is headroom"), as Megatron-Bridge's full-iteration recipes set it (set_full_iter_cg_configs:
# moe_paged_stash_buffer_size_factor_cuda = 1.2) and the Megatron export writes it.
PAGED_STASH_FACTOR = 1.2


def paged_stash_factor(t: TrainingSpec) -> float:
    """Bytes the routed experts' kept activations take over the balanced-load figure: the paged
    stash's preallocated headroom (PAGED_STASH_FACTOR) under full-iteration CUDA graphs, else 1
    (dropless routing keeps what it routed; the balanced load is what the estimate assumes)."""
    return PAGED_STASH_FACTOR if t.cuda_graphs == "full-iteration" else 1.0


# gpt-oss's clamped GLU in transformers (modeling_gpt_oss.py GptOssExperts._apply_gate), per
# element of the expert width F: the clamps keep their inputs, interleaved views of the gate_up
# output, so its whole 2 F storage (4); sigmoid(alpha x gate) its output (2); gate x sigmoid the
# clamped gate (2); (up + 1) x glu both factors (2 + 2); down_proj the gated output (2). 14,
# where a SwiGLU keeps 8 -- measured on a CPU gpt-oss layer (cpu_peft_experts.jsonl: seven
# F-wide bf16 tensors a routed token copy besides its input and output).
CLAMPED_GLU_BYTES = 14.0


# transformers families whose router upcasts its input and weight to fp32 before the linear
# (modeling_deepseek_v3.py DeepseekV3TopkRouter and modeling_deepseek_v2.py DeepseekV2Moe:
# F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32)); GLM-4.5's
# Glm4MoeTopkRouter is DeepSeek-V3's, and dots.llm1's Dots1TopkRouter GLM-4.5's, modeling_dots1.py)
FP32_ROUTER_FAMILIES = ("deepseek_v2", "deepseek_v3", "glm4_moe", "dots1")


# families whose router runs its fp32 linear with autocast off, so the fp32 copy of its input is
# what the linear keeps (modular_ernie4_5_moe.py Ernie4_5_MoeTopKRouter: maybe_autocast(enabled=False),
# F.linear(hidden_states.float(), self.weight.float()), its weight kept fp32 by from_pretrained)
FP32_LINEAR_ROUTER_FAMILIES = ("ernie4_5_moe",)


def fp32_router_copy(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """Bytes per token an fp32-upcasting router keeps beyond the norm output: under bf16
    autocast F.linear casts the fp32 copy back to bf16, a new tensor the linear saves (2 h; a
    CPU GLM-4.5 layer, cpu_family_saved_tensors.jsonl); with autocast off around it (ERNIE 4.5,
    FP32_LINEAR_ROUTER_FAMILIES) the fp32 copy itself (4 h). With fp32 weights under autocast the
    norm output is fp32 already: its bf16 cast is the one its first reader makes anyway
    (autocast_input_casts counts the others), and its .float() no copy -- but a router with
    autocast off keeps that fp32 output itself, 2 h more than the first reader's bf16 cast the
    count assumes (a CPU ERNIE 4.5 layer: 2.0 h a token over it with fp32 weights, none with bf16)."""
    if profile(t) != "hf" or m.family not in FP32_ROUTER_FAMILIES + FP32_LINEAR_ROUTER_FAMILIES:
        return 0.0
    if m.family in FP32_LINEAR_ROUTER_FAMILIES:
        return where(fp32_weights_under_autocast(t, lay), 2.0 * m.hidden, 4.0 * m.hidden)
    return where(fp32_weights_under_autocast(t, lay), 0.0, 2.0 * m.hidden)


def _mlp_bytes(m: ModelSpec, prof: str, width: float) -> float:
    """Per token, one MLP of (per-rank) width F: Megatron-Core (TE's fused SwiGLU) fc1's output
    and fc2's input, 4F + 2F = 6F gated, 4F otherwise; transformers' gated MLP gate out, act out,
    up out and their product, 8F (4F ungated: fc1's output and the activation's), gpt-oss's
    clamped GLU CLAMPED_GLU_BYTES x F (package docstring: Korthikanti et al. 2022 Table 2's
    structure; memory-models.md section 10's measurements)."""
    gated = m.mlp in ("swiglu", "geglu")
    if prof == "megatron":
        return (6.0 if gated else 4.0) * width
    if prof == "hf" and m.glu_limit:
        return CLAMPED_GLU_BYTES * width
    return (8.0 if gated else 4.0) * width


def routed_token_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, rc: str) -> float:
    """Bytes the routed experts keep per token, over its k routed copies: per copy the permuted
    input fc1 keeps (2h), the expert MLP (_mlp_bytes at expert_ffn / etp) and the expert output
    kept to multiply by the routing probability (2h) -- except in Megatron-Core, whose grouped
    experts apply the probabilities inside the activation (megatron/core/transformer/moe/
    experts.py: weighted_bias_swiglu_impl), so unpermute keeps nothing of the output; less,
    under --recompute-modules moe_act, the expert activation's output (fc2's input, 2 bytes per
    unit of the expert width), freed and recomputed (experts.py); x paged_stash_factor. Where
    autocast casts the experts (experts_cast_by_autocast) and the weights are fp32, 2h more a
    copy: the fp32 repeat of the norm output each copy keeps (cpu_family_saved_tensors.jsonl)."""
    prof = profile(t)
    k = routed_copies(m, t, lay)
    exp_w = m.expert_ffn / lay.etp
    out_kept = 0.0 if prof == "megatron" else 2.0 * m.hidden
    act_out = 2.0 * exp_w if rc == "modules" else 0.0
    routed = k * (2.0 * m.hidden + _mlp_bytes(m, prof, exp_w) - act_out + out_kept) * paged_stash_factor(t)
    if experts_cast_by_autocast(m):
        routed = routed + where(fp32_weights_under_autocast(t, lay), k * 2.0 * m.hidden, 0.0)
    return routed


def routed_dtype_factor(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """2 where the routed experts' activations are fp32, else 1: with fp32 weights under autocast,
    Mixtral-style experts are fp32 parameters autocast does not cast for the expert matmuls, so
    their inputs, intermediates and outputs are fp32, twice the bytes (their GEMMs run at the
    fp32 rate too, kb/perf/compute.expert_gemm_rate); not where autocast casts them
    (experts_cast_by_autocast, counted in routed_token_bytes)."""
    if experts_cast_by_autocast(m):
        return 1.0
    return where(fp32_weights_under_autocast(t, lay), 2.0, 1.0)


def router_score_bytes(m: ModelSpec) -> float:
    """8 bytes a token per expert: the router's scores over all experts, read as fp32 logits and
    fp32 probabilities -- an assumption, no measurement or source found for it."""
    return 8.0 * m.experts


def shared_expert_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """The shared expert's MLP (_mlp_bytes at shared_width / tp); 0 without one."""
    return _mlp_bytes(m, profile(t), m.shared_width / lay.tp) if m.shared_width else 0.0


def shared_gate_bytes(m: ModelSpec, t: TrainingSpec) -> float:
    """2h with hf where a sigmoid gate multiplies the shared expert's output (Qwen2-MoE), which
    it keeps; else 0."""
    return 2.0 * m.hidden if m.shared_width and profile(t) == "hf" and m.shared_gate else 0.0


def moe_mlp_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, rc: str) -> float:
    """Bytes per token an MoE layer's MLP keeps: routed_share x (router_score_bytes +
    routed_dtype_factor x routed_token_bytes) + fp32_router_copy + the shared expert's. The routed
    part runs on the tokens this rank routes: with sequence parallelism the MoE layer takes the
    SP shard (tokens / tp) gathered over expert-TP only (x etp), as Megatron-Core's token
    dispatcher does (kb/perf/compute.moe_tokens, the same rule): routed_share = etp / tp."""
    routed_share = where(lay.sp, lay.etp / lay.tp, 1.0)
    routed = routed_dtype_factor(m, t, lay) * routed_token_bytes(m, t, lay, rc)
    return (routed_share * (router_score_bytes(m) + routed) + fp32_router_copy(m, t, lay)
            + shared_expert_bytes(m, t, lay) + shared_gate_bytes(m, t))


def dense_mlp_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """Bytes per token a dense MLP keeps: _mlp_bytes at ffn / tp, less 1 byte per unit of the
    rank's ffn with Megatron FP8 (TE keeps fc2's input in FP8)."""
    mlp = _mlp_bytes(m, profile(t), m.ffn / lay.tp)
    if profile(t) == "megatron" and t.precision == "fp8":
        mlp -= 1.0 * m.ffn / lay.tp
    return mlp
