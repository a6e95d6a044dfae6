"""Bytes one layer keeps per token of the local micro-batch on one rank: its checkpointed input
under full recomputation, torchtitan's per-op save list under its selective AC, else the sum of
the norms', the attention's, the MLP's and the adapters' terms."""
from __future__ import annotations

from ...layout import Layout
from ...schema import ModelSpec, TrainingSpec
from ...vec import where
from .adapters import adapter_saved_bytes
from .attention import _attention_bytes, attention_saved_bytes, kernel_training, local_mask_bytes, local_widths
from .implementation import fp32_weights_under_autocast, profile
from .mlp import dense_mlp_bytes, moe_mlp_bytes
from .norms import l2_qk_norm_bytes, qk_norm_bytes, residual_norm_bytes


def checkpointed_input_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout) -> float:
    """Bytes per token a fully recomputed layer keeps: the checkpointed layer input, the residual
    stream (2 h, or 4 h fp32 with fp32 weights under autocast), / tp with sequence parallelism."""
    return where(fp32_weights_under_autocast(t, lay), 4.0, 2.0) * m.hidden / where(lay.sp, lay.tp, 1)


def torchtitan_selective_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, s_local: int) -> float:
    """Bytes per token torchtitan's op-level selective AC keeps: the layer input (2h), the flash
    outputs (_attention_bytes), every other matmul output (q + 2 kv + h + gate and up or up alone
    + h, at 1 byte a unit) and TP's two reduce-scatter outputs a layer, the sequence-sharded bf16
    h (torchtitan's save list keeps _c10d_functional.reduce_scatter_tensor; export/fsdp.py)."""
    q, kv, heads = local_widths(m, lay)
    h, tp = m.hidden, lay.tp
    gated = m.mlp in ("swiglu", "geglu")
    mm_out = q + 2 * kv + h + (2 if gated else 1) * (m.ffn / tp) + h
    total = 2.0 * h + _attention_bytes(m, kernel_training(t, "selective"), lay, q, kv, heads, s_local) + 1.0 * mm_out
    return total + where(lay.sp, 2 * 2.0 * h / tp, 0.0)


def layer_bytes_per_token(m: ModelSpec, t: TrainingSpec, lay: Layout, moe: bool, s_local: int,
                          recompute: str | None = None) -> float:
    """Bytes kept per token of the local micro-batch by one layer on one rank: the checkpointed
    input under full recomputation, torchtitan's per-op save list under its selective AC, else
    norms + attention + MLP (dense or MoE) + the adapters' saved tensors."""
    rc = recompute or lay.recompute
    if rc == "full":
        return checkpointed_input_bytes(m, t, lay)
    if rc == "selective" and profile(t) == "torch":
        return torchtitan_selective_bytes(m, t, lay, s_local)
    q, kv, _ = local_widths(m, lay)
    norms = (residual_norm_bytes(m, t, lay, moe, rc) + qk_norm_bytes(m, t, lay)
             + (l2_qk_norm_bytes(m, profile(t), q, kv) + local_mask_bytes(m, t, lay, s_local)))
    mlp = moe_mlp_bytes(m, t, lay, rc) if moe else dense_mlp_bytes(m, t, lay)
    return norms + attention_saved_bytes(m, t, lay, rc, s_local) + mlp + adapter_saved_bytes(m, t, lay, moe)
