"""Dropout in training: the attention's and the residual adds' dropout probabilities, as the
file or its config class sets them.
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _show


# Dropout in training, read for every supported model_type (transformers 5.24): each family's
# attention passes config.attention_dropout to its attention function in training (modeling_<type>.py
# XAttention.forward: dropout=0.0 if not self.training else self.attention_dropout; the eager
# function drops the probabilities, SDPA and flash-attn take it as dropout_p), and two families also
# drop the attention's and the MLP's outputs before each residual add: Phi-3's resid_pdrop
# (Phi3DecoderLayer resid_attn_dropout, resid_mlp_dropout) and Seed-OSS's residual_dropout
# (SeedOssAttention, SeedOssMLP). Phi3Config's embd_pdrop is applied by no module. Every config class
# defaults them to 0.0 but SeedOssConfig, whose two default to 0.1 (configuration_seed_oss.py).
RESIDUAL_DROPOUT_FIELD = {"phi3": "resid_pdrop", "seed_oss": "residual_dropout"}
# the attentions that set their dropout to 0.0 whatever config.json says: Ernie4_5_MoeAttention's
# __init__ (self.attention_dropout = 0.0, modular_ernie4_5_moe.py), whose config class has no field
ATTENTION_DROPOUT_OFF = ("ernie4_5_moe",)
DROPOUT_DEFAULTS = {"seed_oss": {"attention_dropout": 0.1, "residual_dropout": 0.1}}


def _dropout_fields(cfg: dict, path: str, mt: str) -> tuple[dict, tuple[str, ...]]:
    """ModelSpec.attn_dropout and resid_dropout as the file (or its config class) sets them, and a
    note where a config class's non-zero default is taken for a field the file leaves out. A null
    is refused: transformers would pass it to the dropout in training, which takes a number."""
    names = {} if mt in ATTENTION_DROPOUT_OFF else {"attn_dropout": "attention_dropout"}
    if mt in ATTENTION_DROPOUT_OFF and cfg.get("attention_dropout"):
        return {}, (f"{mt} config.json's attention_dropout {_show(cfg['attention_dropout'])} is not applied: its "
                    "attention sets its dropout to 0.0 (transformers' own layer), and none is sized",)
    if mt in RESIDUAL_DROPOUT_FIELD:
        names["resid_dropout"] = RESIDUAL_DROPOUT_FIELD[mt]
    out, defaulted = {}, []
    for key, name in names.items():
        v = cfg.get(name, DROPOUT_DEFAULTS.get(mt, {}).get(name, 0.0))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
            raise InputError(f"{path}: field '{name}' must be a probability from 0 up to 1, got {_show(v)}")
        out[key] = float(v)
        if v and name not in cfg:
            defaulted.append(f"{name} {v:g}")
    if not defaulted:
        return out, ()
    return out, (f"{mt} config.json leaves out {' and '.join(n.split()[0] for n in defaulted)}: its config class's "
                 f"default ({', '.join(defaulted)}) is taken, dropout applied in training",)
