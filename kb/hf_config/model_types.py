"""Which model_types are read (SUPPORTED: the family each is and the fixed fields it sets),
which are read as another type (ALIASES), and which are refused with why: decoders mixing in
layers the estimate has no terms for (HYBRIDS), DeepSeek Sparse Attention, and a head that is
not a causal language model.
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _show


# model_type -> (family, extra fields set on the spec); the MLP's activation is read from the file
# (_activation: the Gemmas' default GELU gates a GeGLU, the others' SiLU a SwiGLU)
SUPPORTED = {
    "llama": ("llama", {}),
    "mistral": ("mistral", {}),
    # Ministral (mistralai/Ministral-8B-Instruct-2410, Devstral) is Mistral's decoder under its own
    # class names: MinistralAttention, MinistralMLP and MinistralDecoderLayer hold Mistral's bias-free
    # linears and two RMSNorms, and MinistralConfig adds layer_types for its sliding layers
    # (modeling_ministral.py, configuration_ministral.py, transformers 5.24)
    "ministral": ("ministral", {}),
    # Phi-3/Phi-4 and Granite fuse or scale what Llama keeps apart, with the same weights:
    # Phi3Attention's qkv_proj is q, k and v stacked, Phi3MLP's gate_up_proj gate and up;
    # Granite adds scalar multipliers (modeling_phi3.py, modeling_granite.py)
    "phi3": ("phi3", {}),
    "granite": ("granite", {}),
    "mixtral": ("mixtral", {}),
    "qwen2": ("qwen2", {"qkv_bias": True}),
    "qwen2_moe": ("qwen2_moe", {"qkv_bias": True, "shared_gate": True}),
    "qwen3": ("qwen3", {"qk_norm": True}),
    "qwen3_moe": ("qwen3_moe", {"qk_norm": True}),
    "gpt_oss": ("gpt_oss", {"linear_bias": True, "attn_sinks": True}),
    "deepseek_v2": ("deepseek_v2", {}),
    "deepseek_v3": ("deepseek_v3", {"router_bias": True}),
    "gemma": ("gemma", {"tied": True}),
    "gemma2": ("gemma2", {"tied": True, "sandwich_norm": True}),
    "gemma3_text": ("gemma3", {"tied": True, "sandwich_norm": True, "qk_norm": True}),
    # SmolLM3 is Llama with RoPE left out of every fourth layer (no_rope_layers), which changes
    # no shape (modeling_smollm3.py); SmolLM3Config ties the head unless the file says not
    # (configuration_smollm3.py: tie_word_embeddings: bool = True)
    "smollm3": ("smollm3", {"tied": True}),
    # OLMo 2 normalises after attention and after the MLP instead of before, and its q_norm and
    # k_norm span the whole q and k projections (modeling_olmo2.py Olmo2Attention: RMSNorm of
    # num_heads x head_dim and num_key_value_heads x head_dim; Olmo2DecoderLayer)
    "olmo2": ("olmo2", {"qk_norm": True, "qk_norm_full": True}),
    # GLM-4.5 is DeepSeek-V3's MoE (sigmoid router with its correction bias, shared experts,
    # leading dense layers) under grouped-query attention with partial RoPE (modeling_glm4_moe.py)
    "glm4_moe": ("glm4_moe", {"router_bias": True}),
    # OLMoE is Mixtral's routed MoE (softmax router, top-k of E experts of intermediate_size, no
    # shared expert) under OLMo's q_norm and k_norm over the whole q and k projections
    # (modeling_olmoe.py OlmoeAttention: RMSNorm of hidden_size and of head_dim x
    # num_key_value_heads; its RMSNorm casts before the weight, as Llama's does)
    "olmoe": ("olmoe", {"qk_norm": True, "qk_norm_full": True}),
    # Granite 3.x MoE is Mixtral's shapes with Granite's scalar multipliers (modeling_granitemoe.py:
    # the checkpoint's fused input_linear / output_linear experts load as GraniteMoeExperts'
    # gate_up_proj / down_proj, conversion_mapping.py); GraniteMoeShared adds one ungated shared
    # MLP of shared_intermediate_size beside the experts where that is not 0
    # (modeling_granitemoeshared.py GraniteMoeSharedMLP: input_linear h x 2S, output_linear S x h)
    "granitemoe": ("granitemoe", {}),
    "granitemoeshared": ("granitemoeshared", {}),
    # Llama 4's language model (modeling_llama4.py): GQA attention with weightless L2 q/k norms on
    # its RoPE layers, and MoE layers (all, or every interleave_moe_layer_step-th) of a top-1
    # sigmoid router, fused routed experts of intermediate_size and one shared expert of the same
    # width; its dense layers' MLP is intermediate_size_mlp wide (_llama4_fields)
    "llama4_text": ("llama4", {}),
    # dots.llm1 (rednote-hilab) is GLM-4.5's MoE, itself DeepSeek-V3's (sigmoid router with its
    # correction bias, groups, shared experts, leading dense layers: Dots1TopkRouter, Dots1MoE and
    # Dots1DecoderLayer are Glm4Moe's line for line) under Qwen3's attention: per-head q_norm and
    # k_norm of head_dim, whole-head RoPE, a window on the layers layer_types slides
    # (modeling_dots1.py Dots1Attention, transformers 5.24)
    "dots1": ("dots1", {"router_bias": True, "qk_norm": True}),
    # OLMo 3 is OLMo 2's layer (Olmo3DecoderLayer is Olmo2DecoderLayer: post-norms, q_norm and
    # k_norm over the whole projections) with a sliding window on three layers of four
    # (layer_types) and its RoPE scaling on the full-attention layers only (modular_olmo3.py
    # Olmo3Attention, Olmo3Config.convert_rope_params_to_dict, transformers 5.24)
    "olmo3": ("olmo3", {"qk_norm": True, "qk_norm_full": True}),
    # EXAONE 4.0 normalises after attention and after the MLP as OLMo 2 does (Exaone4DecoderLayer
    # is Olmo2DecoderLayer) but with Llama's RMSNorm, and its q_norm and k_norm are per head, of
    # head_dim, as Qwen3's; with a window its full-attention layers apply no RoPE ("global NoPE"),
    # and no linear has a bias (modular_exaone4.py Exaone4Attention, transformers 5.24)
    "exaone4": ("exaone4", {"qk_norm": True}),
    # Seed-OSS is Llama's decoder with q, k and v biased by default (attention_bias true) and
    # o_proj's bias switched on its own (attention_out_bias); its attention_dropout and
    # residual_dropout default to 0.1 (modular_seed_oss.py SeedOssAttention, SeedOssMLP;
    # configuration_seed_oss.py; read by _dropout_fields)
    "seed_oss": ("seed_oss", {}),
    # ERNIE 4.5 MoE (baidu/ERNIE-4.5-21B-A3B, -300B-A47B) is Llama's attention and dense MLP (biased
    # where use_bias, which _ernie_fields refuses) with Mixtral's fused routed experts and an
    # ungated shared MLP of moe_num_shared_experts x moe_intermediate_size on the MoE layers
    # (every moe_layer_interval-th from moe_layer_start_index to moe_layer_end_index). Its router
    # is a bias-free fp32 linear whose softmax picks the top k by score plus
    # e_score_correction_bias (an nn.Parameter of 1 x experts, requires_grad false, which
    # num_parameters counts: router_bias) and weighs them renormalised over the k, floored at
    # moe_norm_min; its RoPE rotates interleaved pairs in fp32 (modular_ernie4_5_moe.py,
    # modular_ernie4_5.py apply_rotary_pos_emb, transformers 5.24)
    "ernie4_5_moe": ("ernie4_5_moe", {"router_bias": True, "tied": True}),
    # Ministral 3 (mistralai/Ministral-3-*-2512, Devstral 2) is Mistral's decoder whose attention
    # multiplies the rotated query by 1 + llama_4_scaling_beta x log(1 + floor(position /
    # original_max_position_embeddings)), both read from rope_parameters (modular_ministral3.py
    # Ministral3Attention, get_llama_4_attn_scale, transformers 5.24): no weight, a [b, 1, s, 1]
    # factor a layer kept for backward (activations.query_scale_bytes)
    "ministral3": ("ministral3", {}),
}


# model_types read as another type whose config.json they are, field for field: Kimi K2
# (moonshotai/Kimi-K2-Base, -Instruct) ships DeepSeek-V3's architecture under model_type "kimi_k2"
# with DeepseekV3ForCausalLM as its class (Kimi-K2 docs/deploy_guidance.md: "change model_type to
# deepseek_v3" where a framework lacks it; transformers 5.24's Kimi_K25Config reads a kimi_k2
# text_config as deepseek_v3, configuration_kimi_k25.py). Read so only where each field of the file
# is one DeepSeek-V3's config.json carries (ALIAS_FIELDS) and the ones its own modeling code reads
# but transformers' does not have DeepSeek-V3's values (ALIAS_FIXED): else the file describes
# another model (a kimi_k2 with grouped-query attention and qk_layernorm has been published)
ALIASES = {"kimi_k2": "deepseek_v3"}
# transformers 5.24 DeepseekV3Config's fields (configuration_deepseek_v3.py, with its attribute_map
# aliases num_local_experts and num_nextn_predict_layers), PreTrainedConfig's own
# (configuration_utils.py, and the legacy torch_dtype, rope_scaling, rope_theta it converts), and
# those DeepSeek-V3's config.json adds for its modeling_deepseek.py (aux_loss_alpha, ep_size,
# moe_layer_freq, scoring_func, seq_aux, topk_method; auto_map, quantization_config)
ALIAS_FIELDS = {"deepseek_v3": frozenset({
    "vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "n_shared_experts", "n_routed_experts", "num_local_experts",
    "output_router_logits", "routed_scaling_factor", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
    "v_head_dim", "qk_nope_head_dim", "qk_head_dim", "head_dim", "n_group", "topk_group", "num_experts_per_tok",
    "first_k_dense_replace", "norm_topk_prob", "hidden_act", "max_position_embeddings", "initializer_range",
    "rms_norm_eps", "use_cache", "pad_token_id", "bos_token_id", "eos_token_id", "pretraining_tp",
    "tie_word_embeddings", "rope_parameters", "rope_scaling", "rope_theta", "rope_interleave", "attention_bias",
    "attention_dropout", "num_mtp_layers", "num_nextn_predict_layers",
    "architectures", "auto_map", "model_type", "_name_or_path", "dtype", "torch_dtype", "transformers_version",
    "chunk_size_feed_forward", "id2label", "label2id", "is_encoder_decoder", "output_attentions",
    "output_hidden_states", "problem_type", "return_dict", "quantization_config",
    "aux_loss_alpha", "ep_size", "moe_layer_freq", "scoring_func", "seq_aux", "topk_method"})}
# modeling_deepseek.py (DeepSeek-V3's and Kimi K2's remote code) builds a MoE layer only every
# moe_layer_freq-th layer and routes by scoring_func and topk_method; transformers' DeepseekV3 has
# these fixed at V3's values, which the estimate's deepseek_v3 family is
ALIAS_FIXED = {"deepseek_v3": {"moe_layer_freq": 1, "scoring_func": "sigmoid", "topk_method": "noaux_tc"}}


def _alias(cfg: dict, path: str) -> tuple[dict, tuple[str, ...]]:
    """A config.json of an ALIASES model_type as the type it is, and the line that says so;
    refused naming the first field that is not the other type's (ALIAS_FIELDS, ALIAS_FIXED)."""
    mt = cfg["model_type"]
    to = ALIASES[mt]
    other = sorted(k for k in cfg if k not in ALIAS_FIELDS[to])
    if other:
        raise InputError(f"{path}: model_type {mt!r} is read as {to} only where its fields are {to}'s; field "
                         f"{_show(other[0])} is not a {to} field, so the file describes another model; supported: "
                         f"a {mt} config.json with {to}'s fields (as moonshotai/Kimi-K2-Base ships)")
    for k, want in ALIAS_FIXED[to].items():
        if k in cfg and cfg[k] != want:
            raise InputError(f"{path}: {k} {_show(cfg[k])} is not supported for model_type {mt!r} (read as {to}, "
                             f"which builds {k} {want!r}); supported: {want!r}")
    note = (f"config.json's model_type {mt!r} is read as {to}: its fields are {to}'s (DeepseekV3ForCausalLM, "
            "as its architectures says), and the estimate sizes that model",)
    return {**cfg, "model_type": to}, note


# MoE model types whose decoder mixes attention with layers the estimate has no terms for (their
# recurrent state, their kernels' saved tensors, their FLOPs), refused with why rather than sized
# as softmax-attention layers (transformers 5.24 modeling_<model_type>.py)
HYBRIDS = {
    "granitemoehybrid": "Mamba-2 state-space layers between its attention layers (GraniteMoeHybridMambaLayer, "
                        "layer_types 'mamba')",
    "qwen3_next": "Gated DeltaNet linear-attention layers in three of every four (Qwen3NextGatedDeltaNet, "
                  "layer_types 'linear_attention')",
    "minimax": "lightning (linear) attention layers between its softmax attention layers "
               "(MiniMaxLightningAttention, layer_types 'linear_attention')",
}


# Model types whose attention is DeepSeek Sparse Attention: a lightning indexer
# (DeepseekV32Indexer, transformers 5.24 modeling_deepseek_v32.py; GLM-5's glm_moe_dsa the same)
# scores every key with index_n_heads heads of index_head_dim and keeps the index_topk best per
# query. Its weights, its saved tensors and its top-k attention FLOPs have no terms in the
# estimate, so the model is refused rather than sized as the dense MLA of DeepSeek-V3.
SPARSE_ATTENTION = {"deepseek_v32": "DeepSeek-V3.2", "glm_moe_dsa": "GLM-5"}
# The indexer's fields (DeepseekV32Config). A deepseek_v3 config.json that carries them is
# DeepSeek-V3.2's checkpoint under V3's model_type: vLLM reads it as V3.2 on index_topk alone
# (vllm/model_executor/models/deepseek_v2.py: is_v32 = hasattr(config, "index_topk")), while
# transformers' DeepseekV3 would drop the indexer's weights and attend densely
INDEXER_FIELDS = ("index_topk", "index_n_heads", "index_head_dim")


def _sparse_attention(cfg: dict, path: str, mt, supported: str) -> None:
    """Refuse DeepSeek Sparse Attention: by model_type (SPARSE_ATTENTION), or by a deepseek_v3
    file's indexer fields (INDEXER_FIELDS; a null one is no indexer)."""
    if isinstance(mt, str) and mt in SPARSE_ATTENTION:
        raise InputError(f"{path}: model_type {_show(mt)} is not supported: {SPARSE_ATTENTION[mt]}'s sparse attention "
                         "(a lightning indexer keeping index_topk keys per query) is not modelled, only dense "
                         f"attention; supported: {supported}")
    given = [k for k in INDEXER_FIELDS if cfg.get(k) is not None]
    if mt == "deepseek_v3" and given:
        raise InputError(f"{path}: field '{given[0]}' ({_show(cfg[given[0]])}) is DeepSeek Sparse Attention's indexer "
                         "(DeepSeek-V3.2), which is not modelled; supported: a deepseek_v3 config.json without "
                         f"{', '.join(INDEXER_FIELDS)} (DeepSeek-V3, V3.1, R1: dense multi-latent attention)")


# the model_types whose attention is DeepSeek's multi-latent attention (no head_dim of its own)
MLA_TYPES = ("deepseek_v2", "deepseek_v3")


# model classes shardwise sizes: a causal language model, or Gemma 3's multimodal wrapper
# around one; a classification or reward head (…ForSequenceClassification) is not modelled
CAUSAL_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration")


def _check_architectures(cfg: dict, path: str) -> None:
    arch = cfg.get("architectures")
    if arch is None:
        return
    if not isinstance(arch, list) or not all(isinstance(a, str) for a in arch):
        raise InputError(f"{path}: field 'architectures' must be a list of class names, got {_show(arch)}")
    other = [a for a in arch if not a.endswith(CAUSAL_SUFFIXES)]
    if other:
        raise InputError(f"{path}: architectures {_show(other[0])} is not a causal language model; supported: "
                         f"classes ending in {' or '.join(CAUSAL_SUFFIXES)} (a classification or reward head "
                         f"is not modelled)")
