"""Mixture of experts: the field each config class reads its expert count from, its defaults for
routed and shared experts, the DeepSeek-style router's fields, and the multi-token-prediction
module a file describes but the estimate does not size.
"""
from __future__ import annotations

from ..errors import InputError
from ..schema import ModelSpec
from .fields import _field, _show


# the expert count's field, in the order each config class reads it (attribute_map aliases:
# transformers 5 writes MixtralConfig's and GptOssConfig's num_experts as num_local_experts,
# Qwen3MoeConfig's num_local_experts as num_experts)
EXPERT_FIELDS = {
    "mixtral": ("num_local_experts", "num_experts"), "gpt_oss": ("num_local_experts", "num_experts"),
    "qwen2_moe": ("num_experts", "num_local_experts"), "qwen3_moe": ("num_experts", "num_local_experts"),
    "deepseek_v2": ("n_routed_experts", "num_local_experts"), "deepseek_v3": ("n_routed_experts", "num_local_experts"),
    "glm4_moe": ("n_routed_experts", "num_local_experts"), "dots1": ("n_routed_experts", "num_local_experts"),
    # OlmoeConfig's attribute_map reads num_local_experts as num_experts; GraniteMoeConfig and
    # GraniteMoeSharedConfig have no alias (a num_experts there is not read by transformers either)
    "olmoe": ("num_experts", "num_local_experts"), "granitemoe": ("num_local_experts",),
    "granitemoeshared": ("num_local_experts",),
    # Llama4TextConfig has no attribute_map: num_local_experts alone
    "llama4_text": ("num_local_experts",),
    # Ernie4_5_MoeConfig's attribute_map reads num_experts as moe_num_experts
    "ernie4_5_moe": ("moe_num_experts", "num_experts"),
}
# Mixtral-style MoE types (every layer routed, experts of intermediate_size) whose expert count
# and top-k transformers takes from its config class where config.json leaves them out
# (configuration_olmoe.py: 64 and 8; configuration_granitemoe.py and _granitemoeshared.py: 8 and 2)
ROUTED_DEFAULTS = {"olmoe": (64, 8), "granitemoe": (8, 2), "granitemoeshared": (8, 2)}
# the DeepSeek-style MoE types: n_shared_experts and first_k_dense_replace where config.json
# leaves them out, as their config classes default them (transformers 5.24: DeepseekV2Config 2 and
# 0, configuration_deepseek_v2.py; DeepseekV3Config 1 and 3, configuration_deepseek_v3.py;
# Glm4MoeConfig 1 and 1, configuration_glm4_moe.py); Dots1Config has none for n_shared_experts
# (None, which Dots1MoE multiplies by the expert width and fails on), so a dots1 file must give it
SHARED_EXPERT_DEFAULTS = {"deepseek_v2": (2, 0), "deepseek_v3": (1, 3), "glm4_moe": (1, 1), "dots1": (None, 0)}


# DeepSeek-style routers' config class defaults (n_group, topk_group, routed_scaling_factor,
# topk_method), transformers 5.24: DeepseekV3Config 8, 4, 2.5 (configuration_deepseek_v3.py),
# Glm4MoeConfig 1, 1, 1.0 (configuration_glm4_moe.py), both routers scoring groups by the sum of
# their top 2 (noaux_tc: DeepseekV3TopkRouter, Glm4MoeTopkRouter); DeepseekV2Config None, None,
# 1.0 and topk_method greedy (configuration_deepseek_v2.py)
ROUTER_DEFAULTS = {"deepseek_v3": (8, 4, 2.5, "noaux_tc"), "glm4_moe": (1, 1, 1.0, "noaux_tc"),
                   "dots1": (1, 1, 1.0, "noaux_tc"),
                   "deepseek_v2": (0, 0, 1.0, "greedy")}
# norm_topk_prob where config.json leaves it out: true for DeepseekV3Config and Glm4MoeConfig,
# false for Dots1Config (configuration_dots1.py)
NORM_TOPK_DEFAULT = {"dots1": False}
# DeepseekV2TopkRouter's topk_method branches; another leaves its weights unset (a NameError)
V2_TOPK_METHODS = ("greedy", "group_limited_greedy")


def _router(cfg: dict, path: str, mt: str) -> dict:
    """ModelSpec's router_* fields from config.json (ROUTER_DEFAULTS where it leaves them out).
    DeepSeek-V2's router weighs the top k by the softmax over all experts, never renormalised
    (DeepseekV2TopkRouter reads no norm_topk_prob): router_pre_softmax. DeepSeek-V3's and
    GLM-4.5's weigh them by their sigmoid scores, renormalised over the k only where
    norm_topk_prob is true (modeling_deepseek_v3.py DeepseekV3MoE.route_tokens_to_experts,
    modeling_glm4_moe.py Glm4MoeMoE; both config classes default it to true)."""
    groups, topk, scale, method = ROUTER_DEFAULTS[mt]
    out = {"router_groups": _field(cfg, path, "n_group", required=False, default=groups),
           "router_group_topk": _field(cfg, path, "topk_group", required=False, default=topk),
           "router_scale": float(_field(cfg, path, "routed_scaling_factor", required=False, default=scale,
                                        kind=float))}
    if mt == "deepseek_v2":
        method = cfg.get("topk_method") if cfg.get("topk_method") is not None else method
        if method not in V2_TOPK_METHODS:
            raise InputError(f"{path}: field 'topk_method' {_show(method)} is not supported for a deepseek_v2 "
                             f"model; supported: {', '.join(V2_TOPK_METHODS)} (transformers' DeepseekV2TopkRouter)")
        out["router_pre_softmax"] = True
    else:
        out["router_pre_softmax"] = not _field(cfg, path, "norm_topk_prob", required=False,
                                               default=NORM_TOPK_DEFAULT.get(mt, True), kind=bool)
    out["router_topk_method"] = method
    return out     # groups that do not divide the experts: ModelSpec's check refuses them


def _mtp_note(cfg: dict, path: str, model: ModelSpec) -> tuple[str, ...]:
    """The multi-token-prediction module a DeepSeek-V3 or GLM-4.5 config.json describes
    (num_nextn_predict_layers, alias num_mtp_layers), said as not sized: transformers'
    DeepseekV3ForCausalLM and Glm4MoeForCausalLM build none (the checkpoint's extra layer is
    dropped on load), nor does the Megatron export ask for one (--mtp-num-layers). Each module is
    a decoder layer of the model's own kind (MoE past the dense ones), a 2h x h projection of the
    normed embedding and hidden state, and three RMSNorms, sharing the embedding and output head
    (DeepSeek-V3 technical report, section 2.2; its inference/model.py)."""
    n = _field(cfg, path, "num_nextn_predict_layers", "num_mtp_layers", required=False, default=0)
    if not n:
        return ()
    from ..params import layer_params
    h = model.hidden
    each = layer_params(model, moe=model.is_moe).total + 2 * h * h + 3 * h
    return (f"config.json's num_nextn_predict_layers {n}: the multi-token-prediction module ({n} more decoder "
            f"layer(s), about {n * each / 1e9:.1f}B parameters, and one more pass through the output head) is not "
            "sized, as transformers builds none: the estimate and its exports are of training without it",)
