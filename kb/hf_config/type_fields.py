"""The fields one model_type is read by beyond the ones every type shares (fields.COMMON_FIELDS):
its experts and router (moe.py, family_fields.py), multi-latent attention, and which layers slide
(windows.py). refuse_misspelt checks a file's keys against them too, as a typo of one of them is
as silent as a typo of a common field: 'q_lora_rnak' read DeepSeek-V3 with a full-rank query
(q_lora_rank's default 0), 'num_local_expert' Llama 4 Maverick with the default 16 experts, not 128.
Each entry is a field with its aliases (the names _field reads it by), given when any one is.
"""
from __future__ import annotations

from .model_types import MLA_TYPES
from .moe import EXPERT_FIELDS, ROUTER_DEFAULTS, SHARED_EXPERT_DEFAULTS
from .windows import QWEN, WINDOWED

_QWEN_MOE = ("qwen2_moe", "qwen3_moe")
# the types that size their routed experts by moe_intermediate_size (read.py; ernie: _ernie_fields)
_EXPERT_WIDTH = _QWEN_MOE + tuple(SHARED_EXPERT_DEFAULTS) + ("ernie4_5_moe",)
# the types that read norm_topk_prob (read.py: the softmax routers; moe._router: the others but V2's)
_NORM_TOPK = ("olmoe",) + _QWEN_MOE + tuple(mt for mt in ROUTER_DEFAULTS if mt != "deepseek_v2")
# the multi-latent attention fields read.py reads under MLA_TYPES, and moe_layer_freq it refuses past 1
_MLA = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "moe_layer_freq")
# the fields single types read (family_fields.py, read.py)
_OWN = {
    "qwen2_moe": ("shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers"),
    "qwen3_moe": ("decoder_sparse_step", "mlp_only_layers"),
    "deepseek_v2": ("topk_method",),
    "granitemoeshared": ("shared_intermediate_size",),
    "llama4_text": ("interleave_moe_layer_step", "moe_layers", "intermediate_size_mlp", "layer_types"),
    "ernie4_5_moe": ("moe_layer_interval", "moe_layer_start_index", "moe_layer_end_index", "moe_num_shared_experts",
                     "moe_norm_min"),
}


def type_fields(mt: str) -> tuple[tuple[str, ...], ...]:
    """The fields ``mt`` is read by beyond COMMON_FIELDS, each as (field, alias, ...)."""
    out = []
    if mt in EXPERT_FIELDS:
        out.append(EXPERT_FIELDS[mt])
        out.append(("moe_k", "num_experts_per_tok") if mt == "ernie4_5_moe" else ("num_experts_per_tok",))
    if mt in _EXPERT_WIDTH:
        out.append(("moe_intermediate_size",))
    if mt in _NORM_TOPK:
        out.append(("norm_topk_prob",))
    if mt in SHARED_EXPERT_DEFAULTS:
        out += [("n_shared_experts",), ("first_k_dense_replace",), ("num_nextn_predict_layers", "num_mtp_layers")]
    if mt in ROUTER_DEFAULTS:
        out += [("n_group",), ("topk_group",), ("routed_scaling_factor",)]
    if mt in MLA_TYPES:
        out += [(f,) for f in _MLA]
    if mt in QWEN:
        out.append(("use_sliding_window",))
    if mt in QWEN or mt == "dots1":
        out.append(("max_window_layers",))
    if mt == "gemma3_text":
        out.append(("sliding_window_pattern", "_sliding_window_pattern"))
    if mt == "exaone4":
        out.append(("sliding_window_pattern",))
    if mt in WINDOWED:
        out.append(("layer_types",))
    out += [(f,) for f in _OWN.get(mt, ())]
    return tuple(out)
