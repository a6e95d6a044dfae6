"""One field of a config.json, read and checked (_field; _index for a layer index), the
bounds a shape is checked against, and a value from the file as a refusal quotes it (_show).
"""
from __future__ import annotations

import difflib
import reprlib

from ..errors import InputError


# No shape field of a real model comes near 2^31 (vocabularies ~2^18, hidden sizes ~2^14); a
# larger one overflows the estimators' 64-bit products instead of being refused.
FIELD_MAX = 2 ** 31 - 1
# The sizes this tool answers for, as for --params (kb/infer.py)
PARAMS_MAX = 10 ** 13


# A value from the file, as a refusal quotes it: a few levels and items deep and a few dozen
# characters long, so that a 16 MB list or a deeply nested one still gives one short line
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 2, 4, 3, 40, 40


def _show(v) -> str:
    return _REPR.repr(v)


def _field(cfg: dict, path: str, *names: str, required: bool = True, default=None, kind=int, least: int = 0):
    """The value of the first of ``names`` (one field and its aliases) the file gives, checked.
    Two aliases with different values are refused: which one transformers keeps depends on the
    order its config class assigns them (an attribute_map alias is set through
    PretrainedConfig.__setattr__ after the class's own argument, configuration_utils.py), and
    taking the first silently sized a Mixtral with num_local_experts 8 and num_experts 16 as 8."""
    given = [(n, cfg[n]) for n in names if cfg.get(n) is not None]
    if len({repr(v) for _, v in given}) > 1:
        (a, va), (b, vb) = given[:2]
        raise InputError(f"{path}: fields '{a}' ({_show(va)}) and '{b}' ({_show(vb)}) name the same setting with "
                         f"different values; give one of them, or the same value in both")
    for n in names:
        if n in cfg and cfg[n] is not None:
            v = cfg[n]
            if kind is int and (isinstance(v, bool) or not isinstance(v, int) or not least <= v <= FIELD_MAX):
                raise InputError(f"{path}: field '{n}' must be an integer from {least} to {FIELD_MAX}, got {_show(v)}")
            if kind is bool and not isinstance(v, bool):
                raise InputError(f"{path}: field '{n}' must be true or false, got {_show(v)}")
            if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1e12):
                raise InputError(f"{path}: field '{n}' must be a positive number, got {_show(v)}")
            return v
    if required:
        raise InputError(f"{path}: missing field '{names[0]}' needed for a {cfg.get('model_type')} model")
    return default


def _index(cfg: dict, path: str, name: str, default: int) -> int:
    """A layer index config.json may give negative (transformers compares it as it is)."""
    v = cfg.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or abs(v) > FIELD_MAX:
        raise InputError(f"{path}: field '{name}' must be an integer layer index, got {_show(v)}")
    return v


# The fields every supported model_type is read by (read_hf_config, defaults.py): a key the file
# writes one letter off one of these, while leaving that one out, is a typo whose field would
# silently take its config class's default -- 'num_key_value_head' sized Llama 3 8B with 32 KV
# heads, 8.8B parameters, without a word.
COMMON_FIELDS = ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
                 "num_key_value_heads", "head_dim", "vocab_size", "tie_word_embeddings",
                 "max_position_embeddings", "rms_norm_eps", "rope_theta", "hidden_act", "sliding_window")
# Close enough for a typo (a letter dropped, doubled or swapped: 'num_hiden_layers' 0.97), not for
# real fields that share most of a name (v_head_dim / head_dim 0.89, moe_intermediate_size /
# intermediate_size 0.89, use_sliding_window / sliding_window 0.88)
_TYPO_CUTOFF = 0.9


def refuse_misspelt(written: dict, path: str, mt: str, skip: tuple[str, ...] = (),
                    own: tuple[tuple[str, ...], ...] = ()) -> None:
    """Refuse a key of ``written`` (the object the file wrote the language model in) that is not
    a field this model_type reads but is within a typo of one the file leaves out: a COMMON_FIELDS
    name (``skip``: those this model_type does not read, such as head_dim under multi-latent
    attention), or one of ``own``, the fields only this model_type reads (its experts, router,
    MLA and sliding layers: type_fields.type_fields), each with its aliases, left out only where
    the file gives none of them."""
    known = set(COMMON_FIELDS).union(*own)
    absent = [f for f in COMMON_FIELDS if f not in written and f not in skip] + \
        [f for names in own if not any(n in written for n in names) for f in names]
    for key in written:
        if not isinstance(key, str) or key in known:
            continue
        near = difflib.get_close_matches(key, absent, n=1, cutoff=_TYPO_CUTOFF)
        if near:
            raise InputError(f"{path}: field {_show(key)} is not a {mt} config field, and the file gives no "
                             f"'{near[0]}': did you mean '{near[0]}'?")
