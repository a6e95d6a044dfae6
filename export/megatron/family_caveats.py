"""What a model family has that Megatron-LM's command line cannot build: Gemma's numerics
(scaled embeddings, soft-capping, the scores' scale, a second RoPE base) and the other
families' caveats, said in the script where it trains another model's numerics."""
from __future__ import annotations

from .rope import scaling_built


# Gemma's families: every RMSNorm scales by (1 + w), w initialised at zero (GemmaRMSNorm,
# Gemma2RMSNorm, Gemma3RMSNorm .forward: output * (1.0 + self.weight.float()), transformers), and
# the embedding output is multiplied by sqrt(hidden) (GemmaModel.forward's normalizer,
# Gemma3TextScaledWordEmbedding's embed_scale)
GEMMA_FAMILIES = ("gemma", "gemma2", "gemma3")


def gemma_caveats(m) -> list[str]:
    """Gemma's numerics that Megatron-LM's command line cannot set (NVIDIA/Megatron-LM@d98e8a6):

    - final logit soft-capping (Gemma2ForCausalLM: logits / cap, tanh, x cap): GPTModel's output
      layer's logits go to the loss as they are (gpt_model.py line 807), and no TransformerConfig
      field caps them;
    - the scores' scale query_pre_attn_scalar ** -0.5 (Gemma2Attention .scaling):
      TransformerConfig.softmax_scale is left off the command line (arguments.py
      line 2326, _add_network_size_args' exclude list), so DotProductAttention scales by
      1/sqrt(kv_channels) (dot_product_attention.py line 85);
    - Gemma 3's RoPE base on its sliding-window layers (rope_local_base_freq): GPTModel builds one
      RotaryEmbedding from --rotary-base for every layer (gpt_model.py line 185; Megatron-Bridge's
      Gemma3ModelProvider swaps in a two-base one);
    - the embedding scaled by sqrt(hidden): LanguageModelEmbedding multiplies only under --use-mup
      (language_model_embedding.py line 135, mup_embedding_mult), which also regroups learning rates
      and rescales initialisation (training.py get_mup_config_overrides): not this model's training."""
    caveats = []
    if m.family in GEMMA_FAMILIES:
        caveats.append(f"embedding output scaled by sqrt(hidden) = {m.hidden ** 0.5:.2f} (Gemma): Megatron multiplies "
                       "embeddings only under --use-mup, which also changes learning rates and initialisation; this "
                       "script trains unscaled embeddings, same shapes, other numerics")
    if m.final_softcap:
        caveats.append(f"final logit soft-capping at {m.final_softcap:g} (final_logit_softcapping: logits = cap x "
                       "tanh(logits / cap) before the loss): Megatron-Core has no option for it; this script trains "
                       "uncapped logits, same shapes, other numerics")
    if m.attn_scale_dim:
        caveats.append(f"attention scores scaled by 1/sqrt({m.attn_scale_dim:g}) (query_pre_attn_scalar), not "
                       f"1/sqrt({m.hd}) (the head dimension): Megatron's softmax_scale has no command-line flag, so "
                       f"this script scales them by 1/sqrt({m.hd}), {(m.attn_scale_dim / m.hd) ** 0.5:.3f}x the "
                       "model's; same shapes, other numerics")
    if m.rope_local_theta:
        local, full = (f"{t:.0f}" if t == int(t) else f"{t:g}" for t in (m.rope_local_theta, m.rope_theta))
        # the full-attention layers' scaling, which transformers leaves off the local ones (Gemma 3)
        scaled = f" and its {m.rope_scaling} scaling" if scaling_built(m) else ""
        caveats.append(f"RoPE base {local} on the sliding-window layers (rope_local_base_freq) and {full} on the "
                       "full-attention ones: Megatron takes one --rotary-base for every layer, so this script "
                       f"rotates all of them with {full}{scaled}; same shapes, other numerics")
    return caveats


# what a family has that no spec field names and Megatron's command line does not build
_GRANITE_MULTIPLIERS = ("Granite's embedding, residual, attention and logit multipliers: Megatron has no flags for "
                        "them; same shapes, other numerics")
FAMILY_CAVEATS = {
    "bloom": ["ALiBi position biases (BLOOM): Megatron-Core has none; this script trains RoPE"],
    "granite": [_GRANITE_MULTIPLIERS], "granitemoe": [_GRANITE_MULTIPLIERS],
    "granitemoeshared": [_GRANITE_MULTIPLIERS],
    "olmoe": ["OLMoE's q/k norms span whole projections, Megatron's each head: same shapes, other numerics"],
    "olmo2": ["OLMo 2's norms after attention and the MLP (not before) and its q/k norms over whole projections: "
              "Megatron-Core's GPT layer normalises first and per head; same shapes, other numerics"],
    "olmo3": ["OLMo 3's norms after attention and the MLP (not before) and its q/k norms over whole projections: "
              "Megatron-Core's GPT layer normalises first and per head; same shapes, other numerics"],
    "exaone4": ["EXAONE 4.0's norms after attention and the MLP (not before): Megatron-Core's GPT layer normalises "
                "first; same shapes, other numerics"],
    # Megatron-Bridge builds it in its own layer spec (src/megatron/bridge/models/llama/
    # llama4_utils.py Llama4SelfAttention); chunked attention is llama4_args'
    "ernie4_5_moe": ["ERNIE 4.5's router picks its top k by softmax score plus a per-expert correction bias "
                     "(e_score_correction_bias, frozen): Megatron takes an expert bias only with sigmoid scores, so "
                     "this script routes by the softmax alone; same shapes bar that bias, other routing"],
    "ministral3": ["Ministral 3's query scaling by position (1 + llama_4_scaling_beta x log(1 + floor(position / "
                   "original_max_position_embeddings))): Megatron-Core has no option for it; same shapes, the same "
                   "numerics below original_max_position_embeddings tokens, other ones past it"],
    "llama4": ["Llama 4's attention temperature tuning on the layers without RoPE (attn_temperature_tuning): "
               "Megatron-Core has no option for it (Megatron-Bridge's Llama 4 layer spec builds it); same shapes, "
               "other numerics"],
}
