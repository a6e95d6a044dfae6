"""The config classes' own defaults, which transformers fills a field config.json leaves out
with: shape fields (CLASS_DEFAULTS, and a multimodal wrapper's text_config's), the norm's
epsilon, and the context the model was trained for (max_position_embeddings).
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _field, _show


# rms_norm_eps where config.json leaves it out: the config class's default (transformers 5.24
# configuration_<model_type>.py: Phi3Config, MixtralConfig, GptOssConfig, Olmo2Config,
# Glm4MoeConfig, OlmoeConfig, Llama4TextConfig, Olmo3Config, Exaone4Config, Ernie4_5_MoeConfig and
# Ministral3Config 1e-5; LlamaConfig,
# MistralConfig, MinistralConfig, Qwen2/3 and their MoE configs, DeepseekV2/V3Config, the Gemma
# configs, GraniteConfig, SmolLM3Config, Dots1Config and SeedOssConfig 1e-6). Meta's and Mistral's own files give 1e-5, LlamaConfig's default is not theirs
NORM_EPS_DEFAULT = {"phi3": 1e-5, "mixtral": 1e-5, "gpt_oss": 1e-5, "olmo2": 1e-5, "glm4_moe": 1e-5, "olmoe": 1e-5,
                    "llama4_text": 1e-5, "olmo3": 1e-5, "exaone4": 1e-5, "ernie4_5_moe": 1e-5, "ministral3": 1e-5}


def norm_eps(cfg: dict, path: str, mt: str) -> float:
    """ModelSpec.norm_eps: config.json's rms_norm_eps, else its config class's (NORM_EPS_DEFAULT);
    an epsilon of 1 or more is refused (it would swamp the mean square it is added to)."""
    eps = float(_field(cfg, path, "rms_norm_eps", required=False, default=NORM_EPS_DEFAULT.get(mt, 1e-6), kind=float))
    if eps >= 1:
        raise InputError(f"{path}: field 'rms_norm_eps' must be a positive number below 1 (the norm's epsilon, "
                         f"1e-5 or 1e-6 in published models), got {_show(cfg['rms_norm_eps'])}")
    return eps


# Fields whose absence transformers fills with its config class's own default, which differs
# from the generic one (num_key_value_heads = num_attention_heads, head_dim = hidden_size /
# num_attention_heads, no sliding window): the __init__ defaults of transformers 5.24's
# configuration_<model_type>.py. A field the file gives, even null, is the file's.
# (Qwen2/Qwen3 apply sliding_window only with use_sliding_window; DeepSeek's multi-latent
# attention has no head_dim of its own: its config writes qk_rope_head_dim there, and it is not read.)
CLASS_DEFAULTS = {
    "mistral": {"num_key_value_heads": 8, "sliding_window": 4096},
    "ministral": {"num_key_value_heads": 8, "sliding_window": 4096},
    "mixtral": {"num_key_value_heads": 8},
    "qwen2": {"num_key_value_heads": 32, "sliding_window": 4096, "max_window_layers": 28},
    "qwen2_moe": {"num_key_value_heads": 16, "sliding_window": 4096, "max_window_layers": 28},
    "qwen3": {"num_key_value_heads": 32, "head_dim": 128, "sliding_window": 4096, "max_window_layers": 28},
    "qwen3_moe": {"num_key_value_heads": 4, "sliding_window": 4096},
    "gpt_oss": {"num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128},
    "deepseek_v3": {"num_key_value_heads": 128},
    "gemma": {"num_key_value_heads": 16, "head_dim": 256},
    "gemma2": {"num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096},
    "smollm3": {"num_key_value_heads": 4},
    "glm4_moe": {"num_key_value_heads": 8},
    "llama4_text": {"num_key_value_heads": 8, "head_dim": 128},
    # Dots1Config slides the layers from max_window_layers on, with no use_sliding_window switch
    # (configuration_dots1.py __post_init__): by default none of its 62
    "dots1": {"num_key_value_heads": 32, "sliding_window": 4096, "max_window_layers": 62},
    "olmo3": {"sliding_window": 4096},
    "exaone4": {"num_key_value_heads": 32, "sliding_window": 4096},
    "seed_oss": {"num_key_value_heads": 8, "head_dim": 128},
    # Ernie4_5_MoeConfig has no head_dim field: LlamaAttention takes the file's, else hidden / heads
    "ernie4_5_moe": {"num_key_value_heads": 4},
    # Ministral3Config: head_dim 128 whatever the hidden size, no window (sliding_window None); its
    # MLP and vocabulary sizes too, which Devstral Small 2's text_config leaves to it
    "ministral3": {"num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 131072},
}


# max_position_embeddings where config.json leaves it out: the default of the model type's config
# class, with the class's name (transformers src/transformers/models/<model_type>/
# configuration_<model_type>.py, transformers 5 as at commits 008e574 and 001f85b: LlamaConfig, GraniteConfig and
# DeepseekV2Config 2048; Phi3Config and DeepseekV3Config 4096; GemmaConfig and Gemma2Config 8192;
# Qwen2Config, Qwen2MoeConfig, Qwen3Config and Qwen3MoeConfig 32768; MistralConfig, MinistralConfig and
# MixtralConfig 4096 * 32; GptOssConfig and Gemma3TextConfig 131072 -- GEMMA3_TEXT_DEFAULTS below).
# Every supported type has one; the warning for a sequence past it (rules/warnings.yaml
# warn.past-trained-context) reads it, and the answer says it was taken (_max_positions).
MAX_POSITIONS_DEFAULT = {
    "llama": (2048, "LlamaConfig"), "granite": (2048, "GraniteConfig"),
    "deepseek_v2": (2048, "DeepseekV2Config"),
    "phi3": (4096, "Phi3Config"), "deepseek_v3": (4096, "DeepseekV3Config"),
    "gemma": (8192, "GemmaConfig"), "gemma2": (8192, "Gemma2Config"),
    "qwen2": (32768, "Qwen2Config"), "qwen2_moe": (32768, "Qwen2MoeConfig"), "qwen3": (32768, "Qwen3Config"),
    "qwen3_moe": (32768, "Qwen3MoeConfig"),
    "mistral": (4096 * 32, "MistralConfig"), "ministral": (4096 * 32, "MinistralConfig"), "mixtral": (4096 * 32, "MixtralConfig"),
    "gpt_oss": (131072, "GptOssConfig"), "gemma3_text": (131072, "Gemma3TextConfig"),
    "olmo2": (2048, "Olmo2Config"), "smollm3": (32768, "SmolLM3Config"), "glm4_moe": (131072, "Glm4MoeConfig"),
    "olmoe": (4096, "OlmoeConfig"), "granitemoe": (2048, "GraniteMoeConfig"),
    "granitemoeshared": (2048, "GraniteMoeSharedConfig"), "llama4_text": (4096 * 32, "Llama4TextConfig"),
    "dots1": (2048, "Dots1Config"), "olmo3": (2048, "Olmo3Config"), "exaone4": (2048, "Exaone4Config"),
    "seed_oss": (524288, "SeedOssConfig"), "ernie4_5_moe": (131072, "Ernie4_5_MoeConfig"),
    "ministral3": (262144, "Ministral3Config"),
}


# The shape fields a Gemma 3 multimodal config.json leaves out of its text_config: Gemma3Config
# builds Gemma3TextConfig(**text_config), so the class's __init__ defaults fill them (transformers
# configuration_gemma3.py, 4.50 to 5). google/gemma-3-4b-it gives only the hidden, MLP and layer
# sizes. sliding_window_pattern is left to _default_sliding: filled here it would shadow an
# _sliding_window_pattern the file does give.
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
    "sliding_window": 4096,
}
# The same for a Llama 4 multimodal config.json: Llama4Config builds Llama4TextConfig from its
# text_config, whose defaults are Llama-4-Scout-17B-16E's shapes (configuration_llama4.py,
# transformers 5.24)
LLAMA4_TEXT_DEFAULTS = {
    "vocab_size": 202_048, "hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
    "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
    "num_local_experts": 16, "num_experts_per_tok": 1,
}
# a top-level gemma3_text config.json takes Gemma3TextConfig's defaults as a wrapped one does
CLASS_DEFAULTS["gemma3_text"] = {k: GEMMA3_TEXT_DEFAULTS[k] for k in ("num_key_value_heads", "head_dim", "sliding_window")}


def _max_positions(written: dict, path: str, mt: str) -> tuple[int, tuple[str, ...]]:
    """ModelSpec.max_positions, the context the model was trained for, and the assumption line
    where the file does not give it: left out, it is the config class's default
    (MAX_POSITIONS_DEFAULT), as transformers reads it; null, transformers keeps None and the
    context is unknown (0: no warning can be given). Zero or a negative count is refused: no
    model is trained for no positions."""
    if "max_position_embeddings" not in written:
        n, cls = MAX_POSITIONS_DEFAULT[mt]
        return n, (f"config.json gives no max_position_embeddings: the model is taken as trained for {n:,} "
                   f"positions, {cls}'s default (transformers configuration_{mt.removesuffix('_text')}.py), "
                   "and a longer sequence is warned of; --hf-config with a config.json that gives "
                   "max_position_embeddings sets it",)
    if written["max_position_embeddings"] is None:
        return 0, ("config.json's max_position_embeddings is null: the context the model was trained for is "
                   "unknown, so no warning says whether the sequence is longer",)
    return _field(written, path, "max_position_embeddings", least=1), ()
