"""Sliding-window attention: which layers slide (layer_types, or the model type's default
pattern) and the window, as ModelSpec's sliding_window and full_attn_every.
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _field, _show


# Model types whose transformers implementation applies config.json's sliding_window, and which
# layers it slides where config.json has no layer_types list (the config classes' defaults:
# Gemma2Config and GptOssConfig slide even-indexed layers, Gemma3TextConfig all but every
# sliding_window_pattern-th, Qwen2/Qwen3 those from max_window_layers on and only with
# use_sliding_window, the rest every layer).
WINDOWED = {"mistral", "ministral", "mixtral", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma2", "gemma3_text", "gpt_oss",
            "dots1", "olmo3", "exaone4", "ministral3"}
QWEN = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")


def _default_sliding(cfg: dict, path: str, mt: str, layers: int) -> list[bool]:
    if mt in ("gemma2", "gpt_oss"):
        return [i % 2 == 0 for i in range(layers)]
    if mt == "gemma3_text":
        n = _field(cfg, path, "sliding_window_pattern", "_sliding_window_pattern", required=False, default=6, least=1)
        return [(i + 1) % n != 0 for i in range(layers)]
    if mt in QWEN or mt == "dots1":
        first = _field(cfg, path, "max_window_layers", required=False, default=0)
        return [i >= first for i in range(layers)]
    if mt == "olmo3":
        # Olmo3Config.__post_init__: every fourth layer full
        return [(i + 1) % 4 != 0 for i in range(layers)]
    if mt == "exaone4":
        # Exaone4Config.__post_init__: every sliding_window_pattern-th layer full (default 4); its
        # "LLLG" string form is only built from layer_types (5.24 takes (i + 1) % "LLLG", a TypeError)
        n = cfg.get("sliding_window_pattern", 4)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"{path}: field 'sliding_window_pattern' ({_show(n)}) without layer_types is not "
                             "supported for exaone4; supported: a positive integer (every Nth layer full), or "
                             "layer_types listing each layer")
        return [(i + 1) % n != 0 for i in range(layers)]
    return [True] * layers


def sliding_layers(cfg: dict, path: str, mt: str, layers: int) -> list[bool]:
    """Which layers slide: config.json's layer_types, or the model type's default pattern."""
    types = cfg.get("layer_types")
    if types is None:
        return _default_sliding(cfg, path, mt, layers)
    kinds = ("sliding_attention", "full_attention")
    if not isinstance(types, list) or len(types) != layers or any(k not in kinds for k in types):
        raise InputError(f"{path}: field 'layer_types' must list {layers} entries (num_hidden_layers), each "
                         f"'sliding_attention' or 'full_attention'")
    return [k == "sliding_attention" for k in types]


def window_fields(cfg: dict, path: str, mt: str, layers: int) -> dict:
    """sliding_window and full_attn_every (kb/schema.ModelSpec) from config.json's sliding_window
    and layer_types (or the model type's default pattern). A pattern other than "every layer"
    or "every Nth layer full" -- the two Megatron-Core's window_attn_skip_freq builds as a
    number -- is refused rather than timed as something else."""
    if mt not in WINDOWED or cfg.get("sliding_window") is None:
        return {}
    if mt in QWEN and not _field(cfg, path, "use_sliding_window", required=False, default=False, kind=bool):
        return {}
    window = _field(cfg, path, "sliding_window", least=1)
    types = cfg.get("layer_types")
    sliding = sliding_layers(cfg, path, mt, layers)
    if not any(sliding):
        return {}
    if all(sliding):
        return {"sliding_window": window}
    every = sliding.index(False) + 1          # the first full layer names the period, if there is one
    if sliding == [(i + 1) % every != 0 for i in range(layers)]:
        return {"sliding_window": window, "full_attn_every": every}
    # name the fields the pattern came from: layer_types, or the model type's own (Qwen's first
    # max_window_layers full, the rest sliding)
    source = "layer_types" if types is not None else \
        ("use_sliding_window with max_window_layers" if mt in QWEN else
         "max_window_layers" if mt == "dots1" else "the model type's default pattern")
    raise InputError(f"{path}: the sliding-window layers ({source}) follow no supported pattern; supported: "
                     "every layer sliding, or every Nth layer full and the others sliding")
