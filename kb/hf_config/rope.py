"""Rotary position embedding: rope_theta and the RoPE scaling (rope_scaling or transformers 5's
rope_parameters), Ministral 3's YaRN dict, the partial rotary factor's defaults, and which
layers apply RoPE at all (no_rope_layers).
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _field, _show


# rope_theta where config.json leaves it out: the config class's default_theta (transformers 5:
# MixtralConfig 1e6, GptOssConfig 150000, Gemma3TextConfig 1e6 for its global layers, SmolLM3Config 2e6,
# Llama4TextConfig 500000, Olmo3Config 500000, PreTrainedConfig 10000 for the rest)
ROPE_THETA_DEFAULT = {"mixtral": 1e6, "gpt_oss": 150000.0, "gemma3_text": 1e6, "smollm3": 2e6,
                      "llama4_text": 500000.0, "olmo3": 500000.0, "ernie4_5_moe": 500000.0}
# rope_parameters where config.json gives neither it nor the legacy rope_scaling: Ministral3Config
# sets its own YaRN dict then, and a top-level rope_theta is not read (configuration_ministral3.py
# __post_init__; checked with transformers 5.24: AutoConfig.for_model("ministral3", rope_theta=5e5)
# keeps rope_theta 1e6)
ROPE_PARAMETERS_DEFAULT = {"ministral3": {
    "type": "yarn", "rope_theta": 1000000.0, "factor": 16.0, "original_max_position_embeddings": 16384,
    "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}}


# partial_rotary_factor where config.json leaves it out: configuration_glm4_moe.py 0.5,
# configuration_phi3.py 1.0 (transformers 5.24)
ROTARY_FRACTION_DEFAULTS = {"glm4_moe": 0.5, "phi3": 1.0}


# RoPE scalings whose factor transformers requires (modeling_rope_utils.py: the linear, dynamic,
# yarn and llama3 validators list "factor" in required_keys; a missing one is a KeyError)
FACTOR_SCALINGS = ("linear", "dynamic", "yarn", "llama3")


def rope_fields(cfg: dict, path: str, theta: float) -> dict:
    """rope_theta (``theta``, the config class's default, where absent) and the RoPE scaling: its
    type ("rope_type", or the older "type"; "default" is no scaling), its factor (0 where the
    type has none, e.g. longrope's per-dimension lists) and its other numbers (booleans as 0/1).
    Read from rope_scaling, or from transformers 5's rope_parameters, which holds rope_theta
    too and may be keyed by layer type (Gemma 3: full_attention, sliding_attention)."""
    rp = cfg.get("rope_parameters")
    if rp is not None and not isinstance(rp, dict):
        raise InputError(f"{path}: field 'rope_parameters' must be an object or null, got {_show(rp)}")
    if rp and all(isinstance(v, dict) for v in rp.values()):
        rp = rp.get("full_attention") or rp[sorted(rp)[0]]
    rp = rp or {}
    theta = _field(rp, path, "rope_theta", required=False, default=None, kind=float) or \
        _field(cfg, path, "rope_theta", required=False, default=theta, kind=float)
    out = {"rope_theta": float(theta)}
    rs = cfg.get("rope_scaling")
    if rs is None:
        rs = rp or None
    if rs is None or rs == {}:          # transformers reads an empty rope_scaling as the default RoPE
        return out
    if not isinstance(rs, dict):
        raise InputError(f"{path}: field 'rope_scaling' must be an object or null, got {_show(rs)}")
    kind = rs.get("rope_type", rs.get("type", "default" if rs is rp else None))
    if not isinstance(kind, str) or not kind:
        raise InputError(f"{path}: rope_scaling needs a rope_type (e.g. llama3, yarn), got {_show(kind)}")
    if kind == "default":
        return out
    if kind in FACTOR_SCALINGS and rs.get("factor") is None:
        # the Megatron export would write --rope-scaling-factor 0.0, a model transformers refuses
        raise InputError(f"{path}: rope_scaling of rope_type '{kind}' needs a factor (transformers requires one "
                         f"for {', '.join(FACTOR_SCALINGS)}); give rope_scaling.factor, e.g. 8.0")
    factor = _field(rs, path, "factor", required=False, default=0.0, kind=float) if rs.get("factor") is not None else 0.0
    params = {k: float(v) for k, v in rs.items()
              if k not in ("factor", "rope_type", "type", "rope_theta") and isinstance(v, (int, float))
              and abs(v) < 1e12}
    out.update(rope_scaling=kind, rope_factor=float(factor), rope_params=params)
    return out


def _ministral3_rope(cfg: dict, path: str) -> dict:
    """config.json with Ministral3Config's RoPE: its YaRN dict where the file gives neither
    rope_parameters nor rope_scaling (ROPE_PARAMETERS_DEFAULT). Ministral3Attention reads
    llama_4_scaling_beta and original_max_position_embeddings from it on every forward
    (get_llama_4_attn_scale): one missing fails there (None in the arithmetic), so it is refused."""
    if cfg.get("rope_parameters") is None and cfg.get("rope_scaling") is None:
        return {**cfg, "rope_parameters": ROPE_PARAMETERS_DEFAULT["ministral3"]}
    rope = cfg.get("rope_parameters") if cfg.get("rope_parameters") is not None else cfg.get("rope_scaling")
    for key in ("llama_4_scaling_beta", "original_max_position_embeddings"):
        v = rope.get(key) if isinstance(rope, dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{path}: rope_parameters.{key} is {_show(v)}: Ministral3Attention scales the query by it "
                             "on every forward (get_llama_4_attn_scale) and fails without it; supported: a number "
                             "(Ministral3Config's default: llama_4_scaling_beta 0.1, original_max_position_embeddings "
                             "16384)")
    return cfg


def _rope_layers(cfg: dict, path: str, layers: int) -> list[bool]:
    """Which layers apply RoPE: no_rope_layers (1 RoPE, 0 none) where non-empty, else all but
    every no_rope_layer_interval-th (Llama4TextConfig.__post_init__)."""
    given = cfg.get("no_rope_layers")
    if given:
        if not isinstance(given, list) or len(given) < layers or any(v not in (0, 1) or isinstance(v, float)
                                                                     for v in given):
            raise InputError(f"{path}: field 'no_rope_layers' must list at least {layers} entries "
                             f"(num_hidden_layers), each 1 (RoPE) or 0 (none), got {_show(given)}")
        return [bool(v) for v in given[:layers]]
    interval = _field(cfg, path, "no_rope_layer_interval", required=False, default=4, least=1)
    return [(i + 1) % interval != 0 for i in range(layers)]
