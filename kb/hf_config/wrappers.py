"""Multimodal wrappers (Gemma 3, Llama 4, Kimi K2.5, Mistral 3): the language model their
text_config holds, filled as transformers fills it, and which level's setting ties the output
head.
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _field, _show
from .defaults import GEMMA3_TEXT_DEFAULTS, LLAMA4_TEXT_DEFAULTS


# multimodal wrappers whose language model is their text_config
WRAPPERS = ("gemma3", "llama4", "kimi_k25", "mistral3")


# the language model a wrapper's text_config holds (Gemma3Config builds Gemma3TextConfig from it,
# whatever model_type it names or if it names none)
# Mistral3Config's text_config is a MistralConfig where it names no model_type (sub_configs_defaults,
# configuration_mistral3.py): Mistral Small 3.1 / 3.2's MistralModel under a Pixtral vision tower.
# Mistral Small 4's mistral4 (MoE under multi-latent attention) is another language model: refused
WRAPPED_TEXT_TYPE = {"gemma3": "gemma3_text", "llama4": "llama4_text", "kimi_k25": "deepseek_v3",
                     "mistral3": "mistral"}
# other model_types a wrapper's text_config may name, kept so that their own reading applies:
# Kimi K2.5 / K2.6 (moonshotai/Kimi-K2.5) ship a kimi_k2 text_config, which Kimi_K25Config reads
# as deepseek_v3 (configuration_kimi_k25.py __post_init__) and this reader through ALIASES, with
# its field checks; Ministral 3 (mistralai/Ministral-3-*-2512) a ministral3 one, read as its own type
WRAPPED_TEXT_ALSO = {"kimi_k25": ("kimi_k2",), "mistral3": ("ministral3",)}
# tie_word_embeddings where a wrapper's file leaves it out: its config class's default, which
# transformers 5.24 ties the language model's head by (Kimi_K25Config: True)
WRAPPER_TIE_DEFAULT = {"kimi_k25": True}


def _text_config(cfg: dict, path: str) -> dict:
    """A wrapper's language model: its text_config, with the fields it leaves out filled as
    transformers fills them (GEMMA3_TEXT_DEFAULTS, LLAMA4_TEXT_DEFAULTS), and the wrapper's own
    tie_word_embeddings where it gives one (Gemma3Config passes it to the language model)."""
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        raise InputError(f"--hf-config: '{path}': text_config must be a JSON object (the language model's "
                         f"config), got {_show(text)}")
    want = WRAPPED_TEXT_TYPE[cfg["model_type"]]
    kept = WRAPPED_TEXT_ALSO.get(cfg["model_type"], ())
    if text.get("model_type", want) not in (want, cfg["model_type"]) + kept:
        raise InputError(f"--hf-config: '{path}': a {cfg['model_type']} config's text_config must be a "
                         f"{' or '.join((want,) + kept)} config, got model_type {_show(text.get('model_type'))}")
    defaults = {"llama4_text": LLAMA4_TEXT_DEFAULTS, "gemma3_text": GEMMA3_TEXT_DEFAULTS}.get(want, {})
    mt = text.get("model_type") if text.get("model_type") in kept else want
    text = {**defaults, **text, "model_type": mt}    # a field the file gives, even null, is the file's
    if cfg["model_type"] in TEXT_OWNS_HEAD:
        text["tie_word_embeddings"] = _head_tie(cfg, text, path)
    elif "tie_word_embeddings" in cfg:
        text["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    elif cfg["model_type"] in WRAPPER_TIE_DEFAULT:
        text["tie_word_embeddings"] = WRAPPER_TIE_DEFAULT[cfg["model_type"]]
    return text


# Wrappers whose text_config, not the wrapper, says whether the head is tied. Mistral3Config
# defaults tie_word_embeddings to true (configuration_mistral3.py, transformers 5.24; PR #43429,
# for Ministral 3's tied checkpoints), but Mistral Small 3.1 / 3.2's config.json gives it at no
# level and their checkpoints store lm_head apart: a model built from the config alone ties the two
# (transformers issue #42313, "[v5, Mistral models broken] Embeddings are automatically tied"),
# while from_pretrained finds both tensors stored, different, and leaves them untied
# (modeling_utils.py PreTrainedModel.tie_weights: "both are present in the checkpoints with
# different values, so we will NOT tie them"). The text_config's value is the one that matches
# the checkpoint: its own where given, else the wrapper's, else MistralConfig's false.
TEXT_OWNS_HEAD = ("mistral3",)


def _head_tie(outer: dict, text: dict, path: str) -> bool:
    """tie_word_embeddings of a TEXT_OWNS_HEAD wrapper's language model: text_config's, else the
    wrapper's, else false (MistralConfig's default)."""
    for where, cfg in (("text_config", text), ("the wrapper", outer)):
        if cfg.get("tie_word_embeddings") is not None:
            return _field(cfg, f"{path} ({where})", "tie_word_embeddings", kind=bool)
    return False
