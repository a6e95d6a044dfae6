"""One field of a config.json, read and checked (_field; _index for a layer index), the
bounds a shape is checked against, and a value from the file as a refusal quotes it (_show).
"""
from __future__ import annotations

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
