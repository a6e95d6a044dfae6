"""Activation bytes a pipeline stage's rank holds at its peak: its layers' saved bytes times the
micro-batches in flight (less the first layers Megatron offloads to host memory), the token ids
and the forward's masks held under recomputation, a PPO critic's layers beside the policy's, and
the transient one layer's backward needs on top."""
from __future__ import annotations

import numpy as np

from ...layout import Layout
from ...schema import ModelSpec, TrainingSpec
from ...stages import layers_in_flight
from ...vec import floor, where
from .attention import dense_local_mask, local_layers, mla_up_proj_bytes
from .eager_scores import eager_per_score
from .implementation import fp32_weights_under_autocast, profile
from .layer import layer_bytes_per_token


# Bytes per token per hidden unit that the backward pass needs above the saved activations
# (gradients of the residual stream, fp32 norm gradients): fwdbwd_peak - saved of the
# no-checkpointing rows at >= 16k tokens in h100_hf_activations.jsonl is 15.5-16.0 h.
BACKWARD_TRANSIENT_H = 16.0
# With full recomputation the backward also holds the recomputed layer: checkpointed rows
# show peak - saved = one layer's activations + 8-10 h (same file, ckpt=true rows >= 16k tokens).
RECOMPUTE_EXTRA_H = 8.0


def tokens_local(t: TrainingSpec, lay: Layout) -> float:
    """Tokens of one micro-batch on one rank: mbs x seq / cp."""
    return lay.mbs * t.seq_len / lay.cp


def mask_kinds(m: ModelSpec) -> int:
    """How many [b, 1, s, s] masks transformers' eager path builds a forward: one a layer type --
    causal_mask_mapping's "full_attention" and "sliding_attention" (or Llama 4's chunked) where
    a model mixes full and local layers (Gemma 2/3, gpt-oss, Llama 4, Qwen with max_window_layers),
    one where every layer is alike (Llama; Mistral 7B v0.1, all sliding: modeling_mistral.py
    picks create_sliding_window_causal_mask alone)."""
    return 2 if 0 < local_layers(m) < m.layers else 1


def forward_mask_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, tok: float, s_local):
    """Bytes of the masks the model's forward builds once for all its layers still held when the
    backward starts: only under recomputation, where every checkpointed layer keeps them as an
    input until its backward (transformers GradientCheckpointingLayer: partial(forward, **kwargs)
    holds attention_mask for the replay). Without checkpoints they are locals of the model's
    forward, freed when that returns, before the loss: no saved tensor holds them (SDPA keeps its
    own additive copy, local_mask_bytes; eager adds its mask to the scores, and add's backward
    keeps neither input). Under SDPA that is the dense local mask alone (dense_local_mask:
    sdpa_mask's bool, 1 byte a score); under eager every layer type's (mask_kinds) float mask in
    the embeddings' dtype (masking_utils.eager_mask: torch.where of the bool mask into
    inputs_embeds.dtype, never skipped), 4 bytes a score with fp32 weights under autocast, else 2.
    Seen on a CPU Mistral / Llama / Gemma 3 model (a weakref to each mask: dead after the forward
    without checkpointing, alive until layer 0's backward with it). Under Ulysses (cp > 1) the
    model's forward sees its s_local tokens: the mask is s_local square, and dense only where
    s_local reaches the window or chunk (_ignore_causal_mask_sdpa's kv_length)."""
    if t.attention == "eager" and profile(t) == "hf":
        per_score = mask_kinds(m) * where(fp32_weights_under_autocast(t, lay), 4.0, 2.0)
    elif dense_local_mask(m, t):
        per_score = where(s_local >= (m.sliding_window or m.attn_chunk), 1.0, 0.0)
    else:
        return 0.0
    return where(lay.recompute == "full", per_score * tok * s_local, 0.0)


def stage_activations(m: ModelSpec, t: TrainingSpec, lay: Layout, dense_layers: int, moe_layers: int,
                      stage: int, ep_overlap=False) -> float:
    """Bytes of activations a rank of ``stage`` holds at its peak: the per-layer figure x the
    layer activations in flight (kb/stages.layers_in_flight: its layers x the micro-batches in
    flight, Layout.in_flight, less a shortened chunk's), plus int64 token ids on stage 0. With
    Megatron's EP all-to-all overlap an interleaved rank warms up with one more chunk forward
    (schedules.py get_pp_rank_microbatches: num_warmup_microbatches + 1, so that every 1F1B pair
    is independent): one chunk's layers more where ``ep_overlap`` (kb/frameworks.megatron_ep_overlap_share)."""
    s_local = floor(t.seq_len / lay.cp)
    tok = tokens_local(t, lay)
    layers = max(1, dense_layers + moe_layers)
    per_layer = tok * (dense_layers * layer_bytes_per_token(m, t, lay, False, s_local)
                       + moe_layers * (layer_bytes_per_token(m, t, lay, True, s_local) if m.is_moe else 0.0)) / layers
    ids = 8.0 * tok if stage == 0 else 0.0
    ids = ids + forward_mask_bytes(m, t, lay, tok, s_local)
    held = layers_in_flight(m, lay, stage)
    if lay.pp > 1:
        held = held + where(ep_overlap, layers / lay.vp, 0.0)
    return held * per_layer - offloaded_bytes(m, t, lay) + lay.in_flight(stage) * ids


def offloaded_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout):
    """Activation bytes a rank keeps in host memory under Megatron's activation offloading: the
    saved tensors of the micro-batch in flight (pp = 1: one) in the model's FIRST ``offload``
    layers -- Transformer Engine: "First num_layers layers are offloaded to CPU" -- which leave
    the GPU as they are saved and come back for that layer's backward, and keeps "at most
    (model_layers - num_layers) sets of activations on GPU at any time"
    (docs/features/other_optimizations/cpu_offloading, Default Offloading Scheduling), so
    stage_activations subtracts this. The first layers are dense or MoE as the model places
    them (ModelSpec.moe_layers_before: leading dense layers, or every Nth MoE): tokens x
    (dense x layer_bytes_per_token(dense) + MoE x layer_bytes_per_token(MoE)). 0 without offloading,
    without computing a layer's bytes: every memory estimate and search group asks."""
    off = lay.offload
    if not np.any(off):
        return 0.0
    moe = m.moe_layers_before(off)
    s_local = floor(t.seq_len / lay.cp)
    return tokens_local(t, lay) * ((off - moe) * layer_bytes_per_token(m, t, lay, False, s_local)
                                   + (moe * layer_bytes_per_token(m, t, lay, True, s_local) if m.is_moe else 0.0))


def ppo_critic_activations(m: ModelSpec, t: TrainingSpec, lay: Layout, dense_layers: int, moe_layers: int) -> float:
    """Bytes of the PPO critic's layer activations live beside the policy's under TRL's PPOTrainer
    (--framework hf, a value model among the --training rlhf models): its PolicyAndValueWrapper.
    forward runs ``self.critic_backbone(**kwargs)`` and ``self.policy(**kwargs)`` in one forward,
    and the loop takes one ``accelerator.backward(pg_loss + vf_coef * vf_loss)`` (trl
    experimental/ppo/ppo_trainer.py, PolicyAndValueWrapper.forward and the PPO epoch loop), so
    both models' activations are held until that backward. The wrapper's
    gradient_checkpointing_enable forwards to the policy alone, so the critic keeps every
    layer's activations whatever --recompute: tokens x sum over layers of
    layer_bytes_per_token(recompute="none"). Its head is a h x 1 score, no vocabulary logits.
    0 elsewhere: OpenRLHF and verl train actor and critic in turn (kb/memory/estimate._states)."""
    if t.training != "rlhf" or t.framework != "hf" or t.rlhf_trained < 2:
        return 0.0
    s_local = floor(t.seq_len / lay.cp)
    per = (dense_layers * layer_bytes_per_token(m, t, lay, False, s_local, recompute="none")
           + (moe_layers * layer_bytes_per_token(m, t, lay, True, s_local, recompute="none") if m.is_moe else 0.0))
    return tokens_local(t, lay) * per


def backward_transient(m: ModelSpec, t: TrainingSpec, lay: Layout, moe_heavy: bool) -> float:
    """Bytes the backward of one layer needs on top of the kept activations (see the constants'
    sources above); with full recomputation that includes the recomputed layer itself, and with
    selective or per-module recomputation, which do not keep the attention scores
    (layer_bytes_per_token), eager attention's scores recomputed for that layer's backward, and
    under per-module recomputation an MLA layer's rerun up-projections (mla_up_proj_bytes)."""
    s_local = floor(t.seq_len / lay.cp)
    tok = tokens_local(t, lay)
    seq_shard = where(lay.sp, lay.tp, 1)
    scores = m.heads / lay.tp * s_local if t.attention == "eager" else 0.0
    saved_per_score, backward_per_score = eager_per_score(m, t, lay)
    eager = backward_per_score * scores if profile(t) != "megatron" else 0.0
    recomputed = where((lay.recompute == "selective") | (lay.recompute == "modules"), saved_per_score * scores, 0.0)
    # MLA's up-projected q, k and v, discarded under per-module recomputation, are back for the
    # layer whose backward runs (attention.mla_up_proj_bytes)
    recomputed = recomputed + where(lay.recompute == "modules", mla_up_proj_bytes(m, lay), 0.0)
    base = tok * (BACKWARD_TRANSIENT_H * m.hidden / seq_shard + eager + recomputed)
    if lay.recompute == "full":
        one = layer_bytes_per_token(m, t, lay, moe_heavy and m.is_moe, s_local, recompute="none")
        return tok * (one + RECOMPUTE_EXTRA_H * m.hidden / seq_shard + eager)
    return base
