"""The linear layers' biases (attention_bias, mlp_bias, attention_out_bias) and the gated MLP's
activation, with what of them the estimate does not build refused.
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _field, _show
from .model_types import MLA_TYPES


# the config classes with attention_bias / mlp_bias switches (transformers 5.24: LlamaConfig,
# GraniteConfig, DeepseekV2/V3Config have both; Qwen3, Qwen3-MoE and the Gemmas attention_bias)
ATTENTION_BIAS_TYPES = ("llama", "granite", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "olmo2",
                        "smollm3", "glm4_moe", "olmoe", "granitemoe", "granitemoeshared", "llama4_text",
                        "dots1", "olmo3", "seed_oss") + MLA_TYPES
MLP_BIAS_TYPES = ("llama", "granite", "seed_oss") + MLA_TYPES
# attention_bias where config.json leaves it out: SeedOssConfig's true (configuration_seed_oss.py);
# false for the rest
ATTENTION_BIAS_DEFAULT = {"seed_oss": True}
# the config classes whose o_proj bias has its own switch, attention_out_bias (SeedOssConfig,
# default false); the others bias o_proj with attention_bias
OUT_BIAS_TYPES = ("seed_oss",)


def _bias_fields(cfg: dict, path: str, mt: str) -> dict:
    """qkv_bias / linear_bias / o_bias (kb/schema.ModelSpec) from config.json's attention_bias,
    mlp_bias and (Seed-OSS) attention_out_bias: both on biases every linear (linear_bias);
    attention_bias alone q, k and v (qkv_bias; o_proj's bias, one h-vector a layer, is not counted
    where attention_bias switches it too); attention_out_bias o_proj's (o_bias). What the estimate
    cannot build is refused: mlp_bias alone, either on multi-latent attention, gpt-oss without its
    attention biases, Seed-OSS's MLP biases without its o_proj's."""
    attn = _field(cfg, path, "attention_bias", required=False, default=ATTENTION_BIAS_DEFAULT.get(mt, False),
                  kind=bool) if mt in ATTENTION_BIAS_TYPES else False
    mlp = _field(cfg, path, "mlp_bias", required=False, default=False, kind=bool) if mt in MLP_BIAS_TYPES else False
    out = _field(cfg, path, "attention_out_bias", required=False, default=False, kind=bool) \
        if mt in OUT_BIAS_TYPES else None
    if mt == "gpt_oss" and _field(cfg, path, "attention_bias", required=False, default=True, kind=bool) is False:
        raise InputError(f"{path}: attention_bias false is not supported for gpt_oss; supported: true (its default)")
    if (attn or mlp) and mt in MLA_TYPES:
        raise InputError(f"{path}: attention_bias / mlp_bias true is not supported for {mt}; supported: false")
    if mlp and not attn:
        raise InputError(f"{path}: mlp_bias true without attention_bias is not supported; supported: both true, "
                         "attention_bias alone, or neither")
    if mlp and out is False:
        raise InputError(f"{path}: mlp_bias true with attention_out_bias false is not supported for {mt}; "
                         "supported: mlp_bias false, or attention_bias, attention_out_bias and mlp_bias all true")
    if attn and mlp:
        return {"linear_bias": True}
    return {**({"qkv_bias": True} if attn else {}), **({"o_bias": True} if out else {})}


# The MLP's activation. Every supported family's MLP is gated, down(act(gate(x)) * up(x)), with
# act = ACT2FN[<field>] (transformers 5.24 modeling_<model_type>.py): hidden_act, except Gemma 2
# and 3, whose MLP reads hidden_activation (their hidden_act, if the file has one, is not used).
# SiLU gates a SwiGLU, any GELU a GeGLU (ModelSpec.mlp); another ACT2FN activation (relu,
# tanh, ...) gates an MLP the estimate does not build, and anything else transformers itself
# refuses. GemmaConfig reads a legacy "gelu" as gelu_pytorch_tanh: a GeGLU either way.
# gpt-oss's experts ignore hidden_act (GptOssExperts gates with a clamped x * sigmoid(1.702 x)):
# its config.json says silu, and only that is taken.
GATED_ACTIVATIONS = {
    "silu": "swiglu", "swish": "swiglu",
    **{a: "geglu" for a in ("gelu", "gelu_new", "gelu_fast", "gelu_python", "gelu_pytorch_tanh",
                            "gelu_python_tanh", "gelu_accurate", "quick_gelu")},
}
ACTIVATION_FIELD = {"gemma2": "hidden_activation", "gemma3_text": "hidden_activation"}
# the config classes' defaults, where the file gives no activation
ACTIVATION_DEFAULT = {"gemma": "gelu_pytorch_tanh", "gemma2": "gelu_pytorch_tanh", "gemma3_text": "gelu_pytorch_tanh"}


def _activation(cfg: dict, path: str, mt: str) -> str:
    """ModelSpec.mlp from the activation config.json names (GATED_ACTIVATIONS)."""
    key = ACTIVATION_FIELD.get(mt, "hidden_act")
    act = cfg.get(key, ACTIVATION_DEFAULT.get(mt, "silu"))
    allowed = ("silu",) if mt == "gpt_oss" else tuple(GATED_ACTIVATIONS)
    if not isinstance(act, str) or act not in allowed:
        why = " (its experts always gate with a clamped SiLU-like GLU)" if mt == "gpt_oss" else \
            " (SiLU gates a SwiGLU MLP, GELU a GeGLU one)"
        raise InputError(f"{path}: field '{key}' {_show(act)} is not supported for a {mt} model; supported: "
                         f"{', '.join(allowed)}{why}")
    return GATED_ACTIVATIONS[act]
