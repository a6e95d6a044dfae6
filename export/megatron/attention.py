"""Which attention kernel Megatron-LM runs: --attention-backend for the job's --attention, and
the models Transformer Engine's flash-attn backend cannot run (MLA, learned sinks, wide heads)."""
from __future__ import annotations

from ..target import Target


# --attention-backend (megatron/core/transformer/enums.py AttnBackend: flash, fused, unfused,
# local, auto; auto, the default, picks Transformer Engine's cuDNN fused kernel on Hopper and
# Blackwell): eager attention is TE's UnfusedDotProductAttention, which materialises the scores
# as the estimate sized them; FlashAttention-2 is TE's flash backend (flash-attn). The default
# stands for "flash" (the cuDNN class) and "sdpa", which Megatron has no kernel of its own for.
ATTENTION_BACKEND = {"eager": "unfused", "flash2": "flash"}


# flash-attn's head-dimension limit (TE dot_product_attention/utils.py get_attention_backend)
FLASH_ATTN_MAX_HEAD_DIM = 256


def flash_attn_refuses(m) -> str | None:
    """Why Transformer Engine's flash-attn backend cannot run the model's attention, or None. TE
    disables it for multi-latent attention ("FlashAttention does not support MLA"), for a
    learned softmax offset ("Disabling FlashAttention for softmax_type = learnable") and past
    flash-attn's head dimension; with --attention-backend flash the fused and unfused backends
    are off too, and the launch fails ("No dot product attention backend is available")."""
    if m.is_mla:
        return "multi-latent attention"
    if m.attn_sinks:
        return "attention sinks (--softmax-type learnable)"
    if m.hd > FLASH_ATTN_MAX_HEAD_DIM:
        return f"head dimension {m.hd} > {FLASH_ATTN_MAX_HEAD_DIM}"
    return None


def attention_backend_args(tg: Target) -> tuple[list, list]:
    """The --attention-backend flag for the job's attention kernel, and a caveat where the model
    rules it out (FlashAttention-2 on a model TE's flash backend cannot run: Megatron's default
    fused kernel runs instead, faster than the estimate timed)."""
    attention = tg.job.training.attention
    backend = ATTENTION_BACKEND.get(attention)
    if backend == "flash":
        why = flash_attn_refuses(tg.job.model)
        if why:
            return [], [f"--attention flash2: Transformer Engine's flash-attn backend cannot run {why}; "
                        "left to Megatron's default (cuDNN fused attention), faster than the estimate timed"]
    return (["--attention-backend", backend] if backend else []), []
