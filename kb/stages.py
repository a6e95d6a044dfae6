"""Which layers and parameters sit on which pipeline stage.

Contiguous split of the decoder layers over pp ranks (Megatron's default). Where pp does not
divide the L layers but divides L + 2, the embedding and the loss count as a layer each, as
Megatron-Core's account_for_embedding/loss_in_pipeline_split do (pipeline_slots); otherwise
the first ``L % pp`` stages take one layer more. The embedding sits on the first stage and the
final norm + LM head on the last; with tied embeddings and pp > 1 the last stage holds its own
copy of the embedding matrix for the head (Megatron's embedding group), so both stages count it.
MoE models keep their leading dense layers (DeepSeek's first_k_dense) on the first stages; an
interleaved one (Llama 4 Maverick, every other layer MoE) has its MoE layers wherever they fall.
"""
from __future__ import annotations

from dataclasses import dataclass

from .layout import Layout, chunk_forwards_in_flight
from .params import embedding_params, head_params, layer_params, norm_params
from .schema import ModelSpec
from .vec import maximum, minimum, where


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


def pipeline_slots(m: ModelSpec, pp: int) -> tuple[int, int]:
    """(e, l): whether the embedding and the loss each take a layer's place in the split.

    Megatron-Core splits L + e + l "layers" evenly over the stages and builds one transformer
    layer fewer in the first chunk of the first stage (e) and the last chunk of the last stage
    (l): megatron/core/transformer/transformer_block.py get_num_layers_to_build,
    account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split. It asserts
    an even split, so a layer count pp does not divide runs this way: Megatron-Bridge's Llama 3.1
    405B recipes (126 layers; recipes/llama/h100/llama3.py sets both flags, and its perf recipes
    run pp 16 with vp 4 and 8 on GB200) split 128, its Qwen3-235B ones (94 layers,
    recipes/qwen/h100/qwen3_moe.py, run at pp 8 vp 4) split 96. torchtitan counts the two as a
    layer each always (generate_llm_fqn_per_model_part(num_stages, num_layers, input_weight=1,
    output_weight=1)); where pp divides L the estimate keeps the even split, one layer off
    torchtitan's on the first and last stages. Otherwise (0, 0) and the first
    L % pp stages take one layer more: recipes that split L + 1 or other counts name their own
    layout (Bridge's DeepSeek-V3 layouts give the last stage, with MTP and the loss, fewer
    decoder layers: recipes/deepseek/deepseek_v3.py _get_deepseek_v3_pipeline_layout)."""
    s = int(takes_slots(m.layers, pp))
    return s, s


def takes_slots(layers, pp):
    """Whether the embedding and the loss take a layer's place each in the split of ``layers``
    over ``pp`` stages (pipeline_slots); ``pp`` a number or an array (the search's)."""
    return (pp > 1) & (layers % pp != 0) & ((layers + 2) % pp == 0)


def layers_on_stage(m: ModelSpec, pp: int, stage: int) -> tuple[int, int]:
    """(dense layers, MoE layers) on ``stage`` of ``pp``."""
    e, l = pipeline_slots(m, pp)
    if e or l:
        per = (m.layers + e + l) // pp
        start = stage * per - (e if stage > 0 else 0)
        count = per - (e if stage == 0 else 0) - (l if stage == pp - 1 else 0)
    else:
        base, extra = divmod(m.layers, pp)
        start = stage * base + min(stage, extra)
        count = base + (1 if stage < extra else 0)
    moe = m.moe_layers_before(start + count) - m.moe_layers_before(start)
    return count - moe, moe


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


def _forwards_on_chunk(w, p: int, v, chunk):
    """Of the first ``w`` chunk forwards of a rank, those on model chunk ``chunk``: Megatron-Core's
    interleaved schedule runs micro-batches in groups of p per chunk, chunk after chunk
    (schedules.py get_model_chunk_id, microbatch_group_size_per_vp_stage = pp by default)."""
    rounds, rest = w // (p * v), w % (p * v)
    return rounds * p + minimum(maximum(rest - chunk * p, 0), p)


def layers_in_flight(m: ModelSpec, lay: Layout, stage: int):
    """Layer activations (layers x micro-batches) a rank of ``stage`` holds at its peak:
    Layout.in_flight x its layers, except where the embedding or the loss takes a layer's place
    (pipeline_slots) under interleaving, where a rank holds W chunk forwards of ``slots``
    layers each, W the warm-up forwards plus the one in flight:

    * first stage: its chunk 0 is one layer short, and the warm-up runs it most often (31 of rank
      0's 79 forwards at pp 16, vp 4), so it holds W x slots - (forwards on chunk 0);
    * last stage: its last chunk is short, but it runs only once in the warm-up and its backward
      comes first; the steady state then holds full chunk-0 forwards, so the peak is W x slots.

    The middle stages hold in_flight x layers as before (checked against a simulation of
    Megatron-Core's interleaved schedule, the maximum over the whole step)."""
    dense, moe = layers_on_stage(m, lay.pp, stage)
    uniform = lay.in_flight(stage) * (dense + moe)
    e, l = pipeline_slots(m, lay.pp)
    first, last = stage == 0 and e, stage == lay.pp - 1 and l
    if not (first or last):
        return uniform
    p, v = lay.pp, lay.vp
    w = chunk_forwards_in_flight(p, v, lay.grad_accum, stage)
    slots = (m.layers + e + l) / (p * v)
    exact = w * slots - (_forwards_on_chunk(w, p, v, 0) if first else 0)
    return where(v > 1, exact, uniform)


def all_stages(m: ModelSpec, lay: Layout) -> list[StageParams]:
    """The stages whose estimate can set the peak or the pace: the first and the last always,
    and of the middle ones stage 1 and each later stage that holds more of some kind of layer
    (dense or MoE) than every middle stage before it (middle_stages)."""
    idx = sorted({0, lay.pp - 1} | set(middle_stages(m, lay.pp)))
    return [stage_params(m, lay, i) for i in idx]


def middle_stages(m: ModelSpec, pp: int) -> list[int]:
    """Of stages 1 to pp - 2, those that no earlier middle stage dominates. 1F1B keeps p - i
    micro-batches in flight on stage i (Layout.in_flight), so a later stage with no more dense and
    no more MoE layers than an earlier one holds less and runs no longer. Layers only decrease
    along a dense split, so stage 1 stands for all; where a MoE model's leading dense layers
    (DeepSeek-V3's three) spill past stage 0, stage 1 holds some of them and the later stages
    hold more MoE layers, their experts included (pp 32: stage 1 one dense and one MoE layer,
    stages 2-28 two MoE layers each)."""
    out, seen = [], []
    for stage in range(1, pp - 1):
        dense, moe = layers_on_stage(m, pp, stage)
        if not any(dense <= d and moe <= e for d, e in seen):
            out.append(stage)
            seen.append((dense, moe))
    return out
