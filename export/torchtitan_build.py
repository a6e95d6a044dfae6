"""Whether torchtitan 0.3's own modules can build a model that has no registry entry.

A registry entry is a Python function that composes per-layer configs (a list of
TransformerBlock.Config, torchtitan/models/common/decoder.py) out of the blocks torchtitan ships:
GQAttention with an optional per-head RMSNorm on q and k (common/attention.py), gpt_oss's
attention with learned sinks and a per-layer sliding window (gpt_oss/model.py Attention),
deepseek_v3's multi-latent attention, VarlenAttention's (left, right) window, the SwiGLU
FeedForward (common/feed_forward.py), the MoE with TokenChoiceTopKRouter (common/moe.py: softmax or
sigmoid, expert groups, route_norm, route_scale, shared experts, an expert bias), gpt_oss's clamped
SwiGLU experts, Linear.Config(bias=...) and RoPE.Config (scaling none, llama or yarn; common/rope.py).
What no block expresses cannot be written as a registry entry at all. Read from torchtitan 0.3.0's
wheel (pytorch/torchtitan@b5bcd76 for the same files).
"""
from __future__ import annotations

# RoPE.Config.scaling's values for config.json's rope_type (common/rope.py RoPE.Config)
ROPE_SCALING = {"": "none", "llama3": "llama", "yarn": "yarn"}

# What a family has that no spec field names and no torchtitan block builds
FAMILY_GAPS = {
    "bloom": "ALiBi position biases",
    "granite": "Granite's embedding, residual, attention and logit multipliers",
    "granitemoe": "Granite's embedding, residual, attention and logit multipliers",
    "granitemoeshared": "Granite's embedding, residual, attention and logit multipliers",
    "olmo2": "norms after attention and the MLP instead of before (TransformerBlock normalises each input)",
    "olmo3": "norms after attention and the MLP instead of before (TransformerBlock normalises each input)",
    "exaone4": "norms after attention and the MLP instead of before (TransformerBlock normalises each input)",
    "gemma": "the embedding scaled by sqrt(hidden) (Decoder passes tok_embeddings' output as it is)",
    "gemma2": "the embedding scaled by sqrt(hidden) (Decoder passes tok_embeddings' output as it is)",
    "gemma3": "the embedding scaled by sqrt(hidden) (Decoder passes tok_embeddings' output as it is)",
    "llama4": "attention temperature tuning on the layers without RoPE",
}


# families that multiply the rotated query by 1 + beta x log(1 + floor(position / original positions))
# (Ministral 3: modeling_ministral3.py get_llama_4_attn_scale, rope_parameters' llama_4_scaling_beta
# and original_max_position_embeddings, transformers 5.24); GQAttention scales by head_dim ** -0.5
# alone (common/attention.py). The factor is 1 below the original positions: a gap past them only
POSITION_QUERY_SCALE = ("ministral3",)


def scales_query_by_position(m) -> bool:
    """Whether the model's query is scaled by position at all: a POSITION_QUERY_SCALE family whose
    llama_4_scaling_beta is not 0 (with 0 the factor is 1 at every position)."""
    return m.family in POSITION_QUERY_SCALE and bool(dict(m.rope_params).get("llama_4_scaling_beta", 0))


def query_scale_gap(m, seq_len: int) -> list[str]:
    """The position-dependent query scaling no torchtitan attention has, where a position of the
    sequence reaches original_max_position_embeddings (the last is seq_len - 1) and
    llama_4_scaling_beta is not 0 (with 0 the factor is 1 at every position)."""
    if not scales_query_by_position(m):
        return []
    rope = dict(m.rope_params)
    orig = int(rope.get("original_max_position_embeddings", 0))
    beta = rope["llama_4_scaling_beta"]
    if not orig or seq_len - 1 < orig:
        return []
    return [f"the query scaled by 1 + {beta:g} x log(1 + floor(position / {orig:,})) "
            f"past {orig:,} positions: GQAttention scales by head_dim ** -0.5 alone"]


def missing_blocks(m, seq_len: int) -> list[str]:
    """Each thing the model has that no torchtitan 0.3 block builds, with where torchtitan stops."""
    gaps = []
    if m.attn_chunk:
        gaps.append(f"chunked attention (chunks of {m.attn_chunk} on {m.chunked_layers} layers): no model builds "
                    "a per-layer chunk mask (common/attention.py's get_fixed_block_mask_mod is used by none)")
    if m.nope_layers:
        gaps.append(f"{len(m.nope_layers)} layers without RoPE: GQAttention rotates q and k on every layer")
    if m.sandwich_norm:
        gaps.append("norms on the attention and MLP outputs (sandwich norms): TransformerBlock has the two input "
                    "norms only")
    if m.attn_softcap:
        gaps.append(f"attention logit soft-capping at {m.attn_softcap:g}: no attention takes a score_mod from "
                    "its config")
    if m.final_softcap:
        gaps.append(f"final logit soft-capping at {m.final_softcap:g}: Decoder's lm_head output goes to the loss "
                    "as it is")
    if m.attn_scale_dim:
        gaps.append(f"scores scaled by 1/sqrt({m.attn_scale_dim:g}): GQAttention scales by head_dim ** -0.5")
    if m.mlp != "swiglu":
        gaps.append(f"a {m.mlp.upper()} MLP: FeedForward is SwiGLU, w2(silu(w1 x) * w3 x)")
    if m.norm != "rmsnorm":
        gaps.append("LayerNorm: TransformerBlock and Decoder take RMSNorm.Config")
    if m.parallel_attn:
        gaps.append("attention and MLP in parallel: TransformerBlock runs them in sequence")
    if m.embed_norm:
        gaps.append("a norm on the embedding: Decoder has none")
    if m.learned_pos:
        gaps.append("learned position embeddings: Decoder has a token embedding and RoPE")
    if m.qk_norm_full:
        gaps.append("q/k norms over whole projections: GQAttention's qk_norm normalises each head")
    if m.rotary_fraction < 1 and not m.is_mla:
        gaps.append(f"RoPE on {m.rotary_fraction:g} of each head: only qwen3_5's gated attention rotates part of "
                    "a head, and it adds an output gate this model does not have")
    if m.rope_scaling not in ROPE_SCALING:
        gaps.append(f"{m.rope_scaling} RoPE scaling: RoPE.Config scales by none, llama or yarn")
    if m.attn_dropout or m.resid_dropout:
        gaps.append("dropout: no torchtitan block has any")
    if m.glu_limit and not m.is_moe:
        gaps.append("a clamped SwiGLU in a dense MLP: gpt_oss clamps its experts only")
    if m.is_mla and (m.attn_sinks or m.window_masks(seq_len)):
        gaps.append("multi-latent attention with sinks or a sliding window: deepseek_v3's attention has neither")
    if m.family in FAMILY_GAPS:
        gaps.append(FAMILY_GAPS[m.family])
    return gaps + query_scale_gap(m, seq_len)


def module_for(m) -> str:
    """The registry module whose blocks a new entry for the model would compose."""
    if m.is_mla:
        return "deepseek_v3"
    if m.attn_sinks or m.glu_limit:
        return "gpt_oss"
    return "qwen3" if m.qk_norm or m.is_moe or m.qk_l2_norm_layers else "llama3"


def build_caveat(m, seq_len: int, cp: int) -> str:
    """What a model with no registry entry needs: the blocks that build it, or what none builds."""
    gaps = missing_blocks(m, seq_len)
    if gaps:
        return (f"{m.name} has no torchtitan registry entry, and torchtitan 0.3 has no module for: "
                + "; ".join(gaps) + ". No config_registry function of its own modules builds this model; its "
                "experimental transformers_modeling_backend (--module transformers_modeling_backend --config "
                "transformers_modeling_backend_full --hf_model with the model's Hugging Face id) runs the Hugging Face modules instead, whose memory and time this estimate "
                "did not size")
    where = module_for(m)
    said = f"{m.name} has no torchtitan registry entry: a config_registry function in the style of {where}'s, " \
           "with this model's shape, builds it; pass it as MODULE/CONFIG"
    if m.window_masks(seq_len) and not m.attn_sinks:
        # gpt_oss's window comes with its sinks; elsewhere VarlenAttention's (left, right) window
        # does it, left w - 1 as HF's window counts the query itself; Llama3Model and Qwen3Model's
        # update_from_config refuse varlen attention under CP ("Varlen attention is not supported with CP")
        said += (f" (its sliding layers with VarlenAttention.Config window_size=({m.sliding_window - 1}, 0), "
                 "attn_backend varlen")
        said += "; torchtitan refuses varlen attention with context parallelism, as this layout has)" if cp > 1 \
            else ")"
    return said
