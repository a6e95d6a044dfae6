"""Which layers and parameters sit on which pipeline stage.

Contiguous split of the decoder layers over pp ranks (Megatron's default): with L % pp != 0
the first ``L % pp`` stages take one layer more. The embedding sits on the first stage and the
final norm + LM head on the last; with tied embeddings and pp > 1 the last stage holds its own
copy of the embedding matrix for the head (Megatron's embedding group), so both stages count it.
MoE models keep their leading dense layers (DeepSeek's first_k_dense) on the first stages.
"""
from __future__ import annotations

from dataclasses import dataclass

from .layout import Layout
from .params import embedding_params, head_params, layer_params, norm_params
from .schema import ModelSpec


@dataclass(frozen=True)
class StageParams:
    """Parameters one rank of a pipeline stage holds, split by how ZeRO/TP/EP divide them."""

    stage: int
    layers: int
    dense_layers: int
    moe_layers: int
    dense: float       # per rank, after TP (everything but routed experts)
    experts: float     # per rank, after EP x expert-TP
    gemm: float        # of which sit in GEMM weights (projections; FP8 caches these)

    @property
    def total(self) -> float:
        return self.dense + self.experts


def layers_on_stage(m: ModelSpec, pp: int, stage: int) -> tuple[int, int]:
    """(dense layers, MoE layers) on ``stage`` of ``pp``."""
    base, extra = divmod(m.layers, pp)
    start = stage * base + min(stage, extra)
    count = base + (1 if stage < extra else 0)
    dense = max(0, min(start + count, m.dense_layers) - start)
    return dense, count - dense


def stage_params(m: ModelSpec, lay: Layout, stage: int) -> StageParams:
    dense_n, moe_n = layers_on_stage(m, lay.pp, stage)
    dl, ml = layer_params(m, False), layer_params(m, True) if m.is_moe else None
    tp = lay.tp
    dense = dense_n * (dl.tp_sharded / tp + dl.replicated)
    gemm = dense_n * dl.tp_sharded / tp
    experts = 0.0
    if moe_n:
        dense += moe_n * (ml.tp_sharded / tp + ml.replicated)
        gemm += moe_n * ml.tp_sharded / tp
        experts = moe_n * ml.experts / (lay.ep * lay.etp)
    vh = m.vocab * m.hidden
    if stage == 0:
        emb = embedding_params(m)
        dense += vh / tp + (emb - vh)          # vocab-parallel table; positions and norms replicated
    if stage == lay.pp - 1:
        head = head_params(m)
        if m.tied:
            dense += norm_params(m) + (vh / tp if lay.pp > 1 else 0)
            gemm += vh / tp
        else:
            dense += vh / tp + (head - vh)
            gemm += vh / tp
    return StageParams(stage, dense_n + moe_n, dense_n, moe_n, dense, experts, gemm + experts)


def all_stages(m: ModelSpec, lay: Layout) -> list[StageParams]:
    """First and last stage always; a middle stage only matters with uneven layer counts."""
    idx = sorted({0, lay.pp - 1} | ({1} if lay.pp > 2 else set()))
    return [stage_params(m, lay, i) for i in idx]
