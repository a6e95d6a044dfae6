"""Bytes per token the residual stream's norms keep for backward: each norm's input, normalised
value and output by implementation, the fp32 residual stream and autocast's per-linear casts of
the norm output with fp32 weights, q/k norms, and the residual dropout's masks."""
from __future__ import annotations

from ...layout import Layout
from ...params import FUSED_PROJECTIONS
from ...schema import ModelSpec, TrainingSpec
from ...vec import where
from .attention import local_widths
from .implementation import fp32_weights_under_autocast, profile


# Residual dropout (Phi-3's resid_pdrop, Seed-OSS's residual_dropout): nn.Dropout on the attention's
# and on the MLP's output before each residual add (modeling_phi3.py Phi3DecoderLayer:
# residual + self.resid_attn_dropout(hidden_states); modeling_seed_oss.py SeedOssAttention and
# SeedOssMLP). The fused kernel keeps its bool mask, 1 byte an element; the dropped output goes to the
# add, whose backward keeps nothing, and the output it replaced was kept by nothing either: h bytes
# a token a site, two sites a layer. Measured on CPU Phi-3 and Seed-OSS layers through native_dropout
# (cpu_dropout_saved_tensors.jsonl: +1,024 bytes a token at h = 512, bf16 and fp32 weights).
RESIDUAL_DROPOUT_SITES = 2
RESIDUAL_DROPOUT_MASK_BYTES = 1.0


def residual_dropout_bytes(m: ModelSpec, t: TrainingSpec) -> float:
    """Bytes per token (per hidden unit x h) the residual dropout's masks keep in one layer, on the
    hf profile; 0 without it or elsewhere (kb/resolve.model_dropout_scope)."""
    if not m.resid_dropout or profile(t) != "hf":
        return 0.0
    return RESIDUAL_DROPOUT_SITES * RESIDUAL_DROPOUT_MASK_BYTES * m.hidden


# transformers families whose RMSNorm scales by its weight in fp32, before the cast back: by
# (1 + weight) (modeling_gemma.py GemmaRMSNorm, and Gemma 2's and 3's: output = norm(x.float())
# * (1.0 + weight.float())) or by the weight itself (modeling_gpt_oss.py GptOssRMSNorm:
# (self.weight * hidden_states).to(input_dtype), "main diff with Llama"): the weight's gradient
# needs the fp32 normalised value, where LlamaRMSNorm keeps it in bf16 (measured on CPU layers:
# a gpt-oss layer keeps four fp32 h-wide tensors, two norms' inputs and normalised values), as
# does OLMo 2's (modeling_olmo2.py Olmo2RMSNorm: (self.weight * hidden_states).to(input_dtype)),
# and OLMo 3's, which is it (modular_olmo3.py Olmo3RMSNorm)
FP32_SCALED_NORMS = ("gemma", "gemma2", "gemma3", "gpt_oss", "olmo2", "olmo3")
# transformers families that normalise each sublayer's output, not its input (modeling_olmo2.py
# Olmo2DecoderLayer: h = residual + post_attention_layernorm(self_attn(x)); OLMo 3's and EXAONE
# 4.0's decoder layers are it, modular_olmo3.py, modular_exaone4.py): their norms read the
# attention's and the MLP's output, bf16 under autocast, never the fp32 residual stream
POST_NORM_FAMILIES = ("olmo2", "olmo3", "exaone4")


def _normalised_bytes(m: ModelSpec) -> float:
    """Bytes per element of the normalised value a transformers RMSNorm keeps for its weight's
    gradient in a bf16 model: bf16, or fp32 for FP32_SCALED_NORMS."""
    return 4.0 if m.family in FP32_SCALED_NORMS else 2.0


def _norm_bytes(m: ModelSpec, prof: str) -> float:
    """Per token, one normalisation layer, per hidden unit of the model. transformers' RMSNorm
    keeps its fp32 upcast input (4), the normalised value for the weight's gradient
    (_normalised_bytes) and its output, which the next linear keeps (2): 8, or 10 (measured on a
    CPU layer, saved-tensor hooks: Llama, Qwen2/3, Mistral, Granite, Mixtral and Qwen3-MoE within
    0.7 h a token of the estimate, Gemma 4.5 h over it before the fp32 value)."""
    if prof == "hf":
        if m.norm != "rmsnorm":
            return 4.0
        return 4.0 + _normalised_bytes(m) + 2.0
    return 4.0


def _linear_inputs(m: ModelSpec) -> tuple[int, int]:
    """How many linears read the attention's input and the MLP's input: q, k and v (MLA:
    q_a_proj and kv_a_proj_with_mqa; one fused qkv_proj), and gate and up (one fused
    gate_up_proj; one up projection without a gate)."""
    fused = m.family in FUSED_PROJECTIONS
    attn = 1 if fused else (2 if m.is_mla else 3)
    mlp = 1 if (fused or m.mlp not in ("swiglu", "geglu")) else 2
    return attn, mlp


def fp32_residual_extra(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """Extra bytes per hidden unit per norm with fp32 weights under autocast: the embedding
    output is fp32, so the residual stream stays fp32, and transformers' LlamaRMSNorm
    (hidden.to(input_dtype) with input_dtype fp32, then weight * x) keeps a 4-byte normalised
    value for the weight's gradient where a bf16 model keeps 2: 4 + 4 + 2 (the bf16 cast the
    next linear saves) = 10 instead of 8. None for FP32_SCALED_NORMS, whose normalised value is
    fp32 whatever the weights (measured on CPU layers, cpu_family_saved_tensors.jsonl): the
    fp32 value's 4 bytes less what a bf16 model keeps (_normalised_bytes). None for
    POST_NORM_FAMILIES either: their norms' input is a bf16 linear output, so LlamaRMSNorm casts
    its normalised value back to bf16 (a CPU EXAONE 4.0 layer with fp32 weights keeps what
    Qwen3's does, 4 h a token under the estimate with the extra)."""
    if m.family in POST_NORM_FAMILIES:
        return 0.0
    return where(fp32_weights_under_autocast(t, lay), 4.0 - _normalised_bytes(m), 0.0)


# transformers families whose shared expert projects gate and up in one linear
# (modeling_granitemoeshared.py GraniteMoeSharedMLP: input_linear h x 2S, chunked), where their
# attention and routed experts are Llama's and Mixtral's
FUSED_SHARED_MLP = ("granitemoeshared",)


def autocast_input_casts(m: ModelSpec, t: TrainingSpec, lay: Layout, moe: bool):
    """Extra bytes per token per layer with fp32 weights under autocast: autocast caches the
    bf16 casts of leaf weights only (torch/csrc/autograd/autocast_mode.cpp, cached_cast), so an
    fp32 activation feeding several linears is cast once per linear, and each saves its own
    copy for its weight's gradient. transformers' attention runs q_proj, k_proj and v_proj on
    the same normed input (MLA: q_a_proj and kv_a_proj_with_mqa), a gated MLP gate_proj and
    up_proj: 2 bytes x h per projection past the first, which a bf16 model shares; none where a
    family fuses them (FUSED_PROJECTIONS). MoE experts keep fp32 inputs (counted in their own
    term). Measured: 6.6 h on qwen2.5-0.5b against 6 h (h200_torch_loops.jsonl L01: activations
    left after states and logits)."""
    attn, mlp = _linear_inputs(m)
    extra = 2.0 * ((attn - 1) + (0 if moe else mlp - 1)) * m.hidden
    if moe and m.shared_width:
        # a shared expert's gate and up and Qwen2-MoE's shared gate take the same fp32 input
        # beside the router: one more copy each (measured on a CPU Qwen2-MoE layer: +6 h); one for
        # a fused gate and up (a CPU GraniteMoeShared layer: +2 h)
        shared_in = 1 if m.family in FUSED_SHARED_MLP else mlp
        extra += 2.0 * (shared_in + (1 if m.shared_gate else 0)) * m.hidden
    return where(fp32_weights_under_autocast(t, lay), extra, 0.0)


def l2_qk_norm_bytes(m: ModelSpec, prof: str, q: float, kv: float) -> float:
    """Per token, averaged over the layers: the weightless L2 norm of q and k (modeling_llama4.py
    Llama4TextL2Norm: x.float() * rsqrt(mean(x^2) + eps), cast back) keeps its fp32 input, 4
    bytes an element, on the layers that apply it (ModelSpec.qk_l2_norm_layers: Llama 4's RoPE
    layers with use_qk_norm). Measured on a CPU Llama 4 layer (cpu_family_saved_tensors.jsonl);
    on the transformers path only (Megatron-Core's qk_l2_norm is not measured)."""
    if prof != "hf" or not m.qk_l2_norm_layers:
        return 0.0
    return 4.0 * (q + kv) * m.qk_l2_norm_layers / m.layers


def residual_norm_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, moe: bool, rc: str) -> float:
    """Bytes per token the layer's residual-stream norms keep, / tp with sequence parallelism:
    n_norms (2, 4 with sandwich norms) x (_norm_bytes + fp32_residual_extra) x h, less what each
    implementation does not keep, plus autocast's input casts and the residual dropout masks.
    Megatron FP8: TE keeps the ln outputs in FP8 (1 byte, not 2). --recompute-modules layernorm:
    CheckpointWithoutOutput frees each norm's output after its consumer saved it and recomputes
    it in backward (megatron/core/tensor_parallel/random.py CheckpointWithoutOutput,
    transformer_layer.py): only the input stays. hf with 4 norms: Gemma 2/3's post-attention and
    post-MLP norms feed the residual add, not a linear: their bf16 output is kept by nothing
    (measured on a CPU layer, saved-tensor hooks)."""
    prof = profile(t)
    h = m.hidden
    n_norms = 4 if m.sandwich_norm else 2
    norms = n_norms * (_norm_bytes(m, prof) + fp32_residual_extra(m, t, lay)) * h
    norm_out = 2.0
    if prof == "megatron" and t.precision == "fp8":
        norms -= n_norms * 1.0 * h
        norm_out = 1.0
    if rc == "modules":
        norms -= n_norms * norm_out * h
    if prof == "hf" and n_norms > 2:
        norms -= (n_norms - 2) * 2.0 * h
    return (norms + autocast_input_casts(m, t, lay, moe) + residual_dropout_bytes(m, t)) / where(lay.sp, lay.tp, 1)


def qk_norm_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """Bytes per token q/k norms keep beyond the q and k the attention keeps anyway:
    (q + kv) x (_norm_bytes - 2) on the rank's widths; 0 without qk_norm."""
    if not m.qk_norm:
        return 0.0
    q, kv, _ = local_widths(m, lay)
    return (q + kv) * (_norm_bytes(m, profile(t)) - 2.0)
