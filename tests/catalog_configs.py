"""config.json files of the models in the catalog (kb/data/models.yaml), as their Hugging Face
repositories publish them, with the fields the reader (kb/hf_config/) reads. Each catalog entry
must describe the model read_hf_config builds from its file (tests/test_params.py). Where a file
is vendored elsewhere, the comment names where it was copied from. rms_norm_eps is written where the
file's differs from its config class's default (LlamaConfig's and MistralConfig's 1e-6 are not
Meta's or Mistral's 1e-5; Olmo2Config's 1e-5 is not OLMo 2's 1e-6; GraniteConfig's 1e-6 is not
Granite 3.3's 1e-5): the Mistral-Nemo and Granite copies cited give it; mlc-llm model_preset.py gives
1e-6 for "olmo2_7b" and "olmo2_13b" and 1e-5 for "llama3_1_70b" (Llama 3.3 70B's architecture);
Mistral Small 3.2's file (tests/test_params.py MISTRAL_SMALL_32) and Mistral3Config's default
text_config (transformers 5.24 configuration_mistral3.py) 1e-5 for Mistral Small 3; Ministral 8B's
1e-5 is Megatron-Bridge's MistralModelProvider default (mistral_provider.py layernorm_epsilon),
not read from a copy of its file."""

# Llama 4's vision tower, the same in Scout's and Maverick's files (configuration_llama4.py
# Llama4VisionConfig; the copies cited below)
LLAMA4_VISION = {"hidden_act": "gelu", "hidden_size": 1408, "image_size": 336, "intermediate_size": 5632,
                 "model_type": "llama4_vision_model", "multi_modal_projector_bias": False, "num_attention_heads": 16,
                 "num_channels": 3, "num_hidden_layers": 34, "patch_size": 14, "pixel_shuffle_ratio": 0.5,
                 "projector_input_dim": 4096, "projector_output_dim": 4096, "vision_output_dim": 4096}
# Phi-4-mini-instruct's rope_scaling.long_factor (mlc-llm model_preset.py "phi-4")
PHI4_MINI_LONG_FACTOR = [1, 1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897, 1.956131817, 2.187582649, 2.446418898, 2.735880826, 3.059592084, 3.421605075, 3.826451687, 4.279200023, 4.785517845, 5.351743533, 5.984965424, 6.693110555, 7.485043894, 8.370679318, 9.36110372, 10.4687158, 11.70738129, 13.09260651, 14.64173252, 16.37415215, 18.31155283, 20.47818807, 22.90118105, 25.61086418, 28.64115884, 32.03, 32.1, 32.13, 32.23, 32.6, 32.61, 32.64, 32.66, 32.7, 32.71, 32.93, 32.97, 33.28, 33.49, 33.5, 44.16, 47.77]

CATALOG_CONFIGS = {
    # meta-llama/Llama-3.3-70B-Instruct: Llama 3.1 70B's architecture (Meta's model card); shape and
    # max_position_embeddings as vendored in many repos citing the file (e.g. unsloth's copy)
    "llama-3.3-70b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
        "vocab_size": 128256, "max_position_embeddings": 131072, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
        "hidden_act": "silu"},
    # Qwen/Qwen2.5-3B, -14B, -32B config.json (citsjtu2020/LLM-Prof sglang/Model_Config.md; the 3B also
    # mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py "qwen2.5_3b")
    "qwen2.5-3b": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 2048, "intermediate_size": 11008,
        "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936,
        "max_position_embeddings": 32768, "max_window_layers": 36, "rope_theta": 1000000.0, "sliding_window": 32768,
        "use_sliding_window": False, "tie_word_embeddings": True, "hidden_act": "silu"},
    "qwen2.5-14b": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120, "intermediate_size": 13824,
        "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 152064,
        "max_position_embeddings": 131072, "max_window_layers": 48, "rope_theta": 1000000.0,
        "sliding_window": 131072, "use_sliding_window": False, "tie_word_embeddings": False, "hidden_act": "silu"},
    "qwen2.5-32b": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120, "intermediate_size": 27648,
        "num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 152064,
        "max_position_embeddings": 131072, "max_window_layers": 64, "rope_theta": 1000000.0,
        "sliding_window": 131072, "use_sliding_window": False, "tie_word_embeddings": False, "hidden_act": "silu"},
    # Qwen/Qwen3-0.6B, -1.7B (mlc-llm model_preset.py), -4B, -14B (LLM-Prof Model_Config.md)
    "qwen3-0.6b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "max_window_layers": 28, "rope_scaling": None,
        "rope_theta": 1000000, "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": True,
        "attention_bias": False, "hidden_act": "silu"},
    "qwen3-1.7b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2048, "intermediate_size": 6144,
        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "max_window_layers": 28, "rope_scaling": None,
        "rope_theta": 1000000, "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": True,
        "attention_bias": False, "hidden_act": "silu"},
    "qwen3-4b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2560, "intermediate_size": 9728,
        "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "max_window_layers": 36, "rope_scaling": None,
        "rope_theta": 1000000, "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": True,
        "attention_bias": False, "hidden_act": "silu"},
    "qwen3-14b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 5120, "intermediate_size": 17408,
        "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "max_window_layers": 40, "rope_scaling": None,
        "rope_theta": 1000000, "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": False,
        "attention_bias": False, "hidden_act": "silu"},
    # google/gemma-2-2b and google/gemma-2-27b (mlc-llm model_preset.py "gemma2_2b", "gemma2_27b"; no
    # tie_word_embeddings: Gemma2Config's default, tied)
    "gemma-2-2b": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "vocab_size": 256000, "max_position_embeddings": 8192, "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
        "rope_theta": 10000.0, "sliding_window": 4096, "attention_bias": False},
    "gemma-2-27b": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 4608,
        "intermediate_size": 36864, "num_hidden_layers": 46, "num_attention_heads": 32, "num_key_value_heads": 16,
        "head_dim": 128, "vocab_size": 256000, "max_position_embeddings": 8192, "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 144,
        "rope_theta": 10000.0, "sliding_window": 4096, "attention_bias": False},
    # google/gemma-3-1b-it: a text-only gemma3_text config (mlc-llm model_preset.py "gemma3_1b_it";
    # NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/gemma/test_gemma3_bridge.py gives the same shape)
    "gemma-3-1b": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 1152,
        "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
        "head_dim": 256, "vocab_size": 262144, "max_position_embeddings": 32768, "attn_logit_softcapping": None,
        "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256, "rope_local_base_freq": 10000,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
        "attention_bias": False},
    # google/gemma-3-4b-pt and -27b-pt: Gemma3ForConditionalGeneration, the language model in text_config,
    # whose left-out fields (vocab_size 262208, max_position_embeddings, rope_theta, ...) are Gemma3TextConfig's
    # defaults. text_config as Megatron-Bridge's test_gemma3_bridge.py gives the 4B and 27B and as this
    # repository's test_hf_config_reading gives the 4B; the 27B's heads and head_dim also in a second copy
    # (a GEMMA3_27B_CONFIG fixture, query_pre_attn_scalar 168); vision_config: SigLIP, as in google/gemma-3-4b-it
    "gemma-3-4b": {
        "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
        "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                        "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                        "sliding_window": 1024},
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                          "patch_size": 14}},
    "gemma-3-27b": {
        "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
        "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
                        "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
                        "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                          "patch_size": 14}},
    # mistralai/Mistral-Nemo-Base-2407 (kevinstephano/thunder_model_blocks hf_mistral-nemo, the file as
    # AutoConfig downloads it)
    "mistral-nemo-12b": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "head_dim": 128, "hidden_size": 5120,
        "intermediate_size": 14336, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 131072, "max_position_embeddings": 128000, "rope_theta": 1000000.0, "sliding_window": None,
        "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "hidden_act": "silu"},
    # microsoft/phi-4 (a copy annotated in a Chinese tutorial; the shape, max_position_embeddings and
    # rope_theta again in a Rust test's phi4_config_json)
    "phi-4": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 5120, "intermediate_size": 17920,
        "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 10, "vocab_size": 100352,
        "max_position_embeddings": 16384, "original_max_position_embeddings": 16384, "rope_scaling": None,
        "rope_theta": 250000, "sliding_window": None, "tie_word_embeddings": False, "attention_bias": False,
        "hidden_act": "silu"},
    # deepseek-ai/DeepSeek-V2-Lite (mlc-llm model_preset.py "deepseek_v2_lite")
    "deepseek-v2-lite": {
        "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "attention_bias": False,
        "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 10944,
        "kv_lora_rank": 512, "max_position_embeddings": 163840, "moe_intermediate_size": 1408,
        "n_routed_experts": 64, "n_shared_experts": 2, "num_attention_heads": 16, "num_experts_per_tok": 6,
        "num_hidden_layers": 27, "num_key_value_heads": 16, "q_lora_rank": None, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707,
                         "original_max_position_embeddings": 4096, "type": "yarn"},
        "rope_theta": 10000, "v_head_dim": 128, "vocab_size": 102400},
    # moonshotai/Kimi-K2-Base: DeepSeek-V3's config.json under model_type kimi_k2 (the shapes as
    # lumenrl's dsv3_megatron_bridge test pins "real Kimi-K2-Base values"; max_position_embeddings
    # 131072 and rope_scaling as copies of the file give them; its fp8 quantization_config left out,
    # as the catalog sizes the bf16 model)
    "kimi-k2": {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "attention_bias": False,
        "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                     "AutoModel": "modeling_deepseek.DeepseekV3Model",
                     "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
        "aux_loss_alpha": 0.001, "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 7168,
        "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 131072,
        "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 384,
        "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 64, "num_experts_per_tok": 8,
        "num_hidden_layers": 61, "num_key_value_heads": 64, "num_nextn_predict_layers": 0, "q_lora_rank": 1536,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "rope_scaling": {"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                         "original_max_position_embeddings": 4096, "type": "yarn"},
        "rope_theta": 50000.0, "routed_scaling_factor": 2.827, "scoring_func": "sigmoid", "seq_aux": True,
        "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc", "v_head_dim": 128,
        "vocab_size": 163840},
    # allenai/OLMo-2-1124-7B and -13B (mlc-llm model_preset.py "olmo2_7b", "olmo2_13b")
    "olmo-2-7b": {
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 11008, "max_position_embeddings": 4096, "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 32, "rope_theta": 500000.0, "rms_norm_eps": 1e-06,
        "tie_word_embeddings": False,
        "vocab_size": 100352},
    "olmo-2-13b": {
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_act": "silu", "hidden_size": 5120,
        "intermediate_size": 13824, "max_position_embeddings": 4096, "num_attention_heads": 40,
        "num_hidden_layers": 40, "num_key_value_heads": 40, "rope_theta": 500000.0, "rms_norm_eps": 1e-06,
        "tie_word_embeddings": False,
        "vocab_size": 100352},
    # HuggingFaceTB/SmolLM3-3B (two independent copies in public tests: a C# HfConfigExtractor test and a
    # Python smollm3 config test, agreeing field by field)
    "smollm3-3b": {
        "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "hidden_size": 2048,
        "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 11008,
        "vocab_size": 128256, "max_position_embeddings": 65536, "rope_theta": 5000000.0, "tie_word_embeddings": True,
        "no_rope_layer_interval": 4, "use_sliding_window": False, "sliding_window": None, "hidden_act": "silu"},
    # allenai/OLMoE-1B-7B-0924 (the model card's config.json, as tests/test_params.py's olmoe_1b_7b;
    # Megatron-Bridge's OlMoEModelProvider gives the same shape, seq_length 4096 and rotary_base 10000)
    "olmoe-1b-7b": {
        "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024,
        "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 50304,
        "num_experts": 64, "num_experts_per_tok": 8, "max_position_embeddings": 4096, "rope_theta": 10000.0,
        "clip_qkv": None, "norm_topk_prob": False, "tie_word_embeddings": False, "hidden_act": "silu"},
    # zai-org/GLM-4.5 and GLM-4.5-Air: the shapes as NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/
    # models/glm/test_glm45_bridge.py's glm45_355b_config and glm45_air_106b_config give them (with
    # model_type glm4_moe; max_position_embeddings 131072 again in Xinference's glm-4.5 spec).
    # Those fixtures are labelled mock configs, and their rms_norm_eps 1e-6 and Air's
    # routed_scaling_factor 2.5 are not the files': both files say rms_norm_eps 1e-05 and
    # GLM-4.5-Air routed_scaling_factor 1.0 (GLM-4.5 2.5), as (1) ms-swift's Megatron walkthrough
    # prints the Glm4MoeConfig AutoConfig loads from ModelScope's ZhipuAI/GLM-4.5-Air (transformers
    # 4.54.1; every field below agrees), (2) an architecture brief quoting zai-org/GLM-4.5-Air's
    # file at a24ceef6 and finding GLM-4.5's identical to GLM-4.7's (nvidia/GLM-4.7-NVFP4: 1e-05,
    # 2.5) but for max_position_embeddings, (3) Megatron-Bridge's own providers before #2599
    # (glm45_provider.py GLMMoEModelProvider layernorm_epsilon 1e-5, GLM45ModelProvider355B
    # moe_router_topk_scaling_factor 2.5, GLM45AirModelProvider106B 1.0; docs/models/glm/glm45.md
    # "1.0x scaling factor" for Air) and (4) the GLM team's slime scripts/models/glm4.5-355B-A32B.sh
    # (--moe-router-topk-scaling-factor 2.5) and glm4.5-106B-A12B.sh (none), neither setting
    # --norm-epsilon (Megatron's 1e-5). n_group, topk_group 1 and norm_topk_prob true as (1) and
    # (2) give them (also Glm4MoeConfig's defaults)
    "glm-4.5": {
        "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True,
        "first_k_dense_replace": 3, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
        "intermediate_size": 12288, "max_position_embeddings": 131072, "moe_intermediate_size": 1536,
        "n_routed_experts": 160, "n_shared_experts": 1, "num_attention_heads": 96, "num_experts_per_tok": 8,
        "num_hidden_layers": 92, "num_key_value_heads": 8, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0, "routed_scaling_factor": 2.5, "tie_word_embeddings": False, "use_qk_norm": True,
        "vocab_size": 151552, "n_group": 1, "topk_group": 1, "norm_topk_prob": True},
    "glm-4.5-air": {
        "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True,
        "first_k_dense_replace": 1, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 10944, "max_position_embeddings": 131072, "moe_intermediate_size": 1408,
        "n_routed_experts": 128, "n_shared_experts": 1, "num_attention_heads": 96, "num_experts_per_tok": 8,
        "num_hidden_layers": 46, "num_key_value_heads": 8, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0, "routed_scaling_factor": 1.0, "tie_word_embeddings": False, "use_qk_norm": False,
        "vocab_size": 151552, "n_group": 1, "topk_group": 1, "norm_topk_prob": True},
    # meta-llama/Llama-4-Scout-17B-16E: Llama4ForConditionalGeneration, the language model in
    # text_config (a public Markdown copy of the file, printed as Llama4Config; its moe_layers,
    # abridged "0..47" there, is every layer, as interleave_moe_layer_step 1 builds it, and left
    # out here); the text shapes are Llama4TextConfig's defaults, whose docstring names this
    # checkpoint; vision_config the llama4_vision_model both Llama 4 checkpoints share
    "llama-4-scout": {
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "tie_word_embeddings": False,
        "text_config": {"attention_bias": False, "attention_chunk_size": 8192, "head_dim": 128, "hidden_act": "silu",
                        "hidden_size": 5120, "interleave_moe_layer_step": 1, "intermediate_size": 8192,
                        "intermediate_size_mlp": 16384, "max_position_embeddings": 262144,
                        "model_type": "llama4_text",
                        "no_rope_layers": [1, 1, 1, 0] * 12, "num_attention_heads": 40, "num_experts_per_tok": 1,
                        "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16,
                        "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                        "rope_theta": 500000.0, "use_qk_norm": True, "vocab_size": 202048},
        "vision_config": LLAMA4_VISION},
    # meta-llama/Llama-4-Maverick-17B-128E: NVIDIA/TensorRT-LLM tests/unittest/_torch/modeling/
    # test_modeling_llama_min_latency.py's LLAMA_4_MAVERICK_TWO_LAYER_CONFIG, "Llama4 Maverick config
    # but with only 2 layers", with what that test changed restored: num_hidden_layers 48, the
    # vision tower's 34 layers, and no no_rope_layer_interval 2 (Llama4TextConfig's default 4: every
    # fourth layer without RoPE, as Scout's file lists)
    "llama-4-maverick": {
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
        "text_config": {"attention_bias": False, "attention_chunk_size": 8192, "head_dim": 128, "hidden_act": "silu",
                        "hidden_size": 5120, "interleave_moe_layer_step": 2, "intermediate_size": 8192,
                        "intermediate_size_mlp": 16384, "max_position_embeddings": 1048576,
                        "model_type": "llama4_text", "num_attention_heads": 40, "num_experts_per_tok": 1,
                        "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 128,
                        "rope_scaling": None, "rope_theta": 500000.0, "use_qk_norm": False, "vocab_size": 202048},
        "vision_config": LLAMA4_VISION},
    # google/gemma-3-12b-pt: Gemma3ForConditionalGeneration, text_config as a Rust Gemma 3 loader's
    # test gives "Gemma 3 12B multimodal text_config" (hidden 3840, intermediate 15360, 48 layers, 16
    # heads, 8 KV heads, sliding_window 1024; the rest Gemma3TextConfig's defaults), with the linear
    # RoPE scaling 8 the 4B and 27B files carry; KerasHub's gemma3_12b_text preset: 11,765,788,416
    # parameters, this model with a 262,144-row table (the file's 262,208 less 64 rows x 3840)
    "gemma-3-12b": {
        "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
        "text_config": {"hidden_size": 3840, "intermediate_size": 15360, "model_type": "gemma3_text",
                        "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 8,
                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                          "patch_size": 14}},
    # microsoft/Phi-3-mini-4k-instruct (mlc-llm model_preset.py "phi-3", _name_or_path
    # Phi-3-mini-4k-instruct; transformers applies its sliding_window 2047)
    "phi-3-mini": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_act": "silu", "hidden_size": 3072,
        "intermediate_size": 8192, "max_position_embeddings": 4096, "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
        "rope_scaling": None, "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": False,
        "vocab_size": 32064},
    # microsoft/Phi-3-medium-4k-instruct (a Python table of Phi-3 config.json files, name and
    # _name_or_path Phi-3-medium-4k-instruct)
    "phi-3-medium": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_act": "silu", "hidden_size": 5120,
        "intermediate_size": 17920, "max_position_embeddings": 4096, "num_attention_heads": 40,
        "num_hidden_layers": 40, "num_key_value_heads": 10, "original_max_position_embeddings": 4096,
        "rope_scaling": None, "rope_theta": 10000.0, "sliding_window": 2047, "attention_bias": False,
        "tie_word_embeddings": False, "vocab_size": 32064},
    # microsoft/Phi-4-mini-instruct (mlc-llm model_preset.py "phi-4", _name_or_path
    # Phi-4-mini-instruct): longrope's per-dimension factors, three quarters of each head rotated
    "phi-4-mini": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "attention_bias": False, "hidden_act": "silu",
        "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False,
        "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
        "rope_scaling": {"long_factor": PHI4_MINI_LONG_FACTOR, "short_factor": [1.0] * 48, "type": "longrope"},
        "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": True, "vocab_size": 200064},
    # mistralai/Mistral-Small-24B-Base-2501 (and -Instruct-2501: the same file), as two public Rust
    # model-config tests copy it ("supported_full_attention_mistral_small")
    "mistral-small-24b": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "head_dim": 128, "hidden_size": 5120,
        "intermediate_size": 32768, "max_position_embeddings": 32768, "num_attention_heads": 32,
        "num_hidden_layers": 40, "num_key_value_heads": 8, "rope_theta": 100000000.0, "sliding_window": None,
        "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "vocab_size": 131072},
    # mistralai/Ministral-8B-Instruct-2410 as transformers 5 reads it (model_type ministral,
    # MinistralForCausalLM, every layer sliding_attention): tests/test_hf_config_reading.py's
    # MINISTRAL_8B; its shapes, 32k positions and 32k window again in GenZ-LLM-Analyzer
    # GenZ/Models/Model_sets/mistral.py (citing the file's huggingface.co URL)
    "ministral-8b": {
        "architectures": ["MinistralForCausalLM"], "model_type": "ministral", "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 12288, "layer_types": ["sliding_attention"] * 36,
        "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 36,
        "num_key_value_heads": 8, "rope_theta": 100000000.0, "sliding_window": 32768,
        "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "vocab_size": 131072},
    # Qwen/Qwen2.5-1.5B, the base model (its config.json as transformers 4.57 prints it loading
    # models/Qwen2.5-1.5B in a public LLaMA-Factory training log: 131072 positions,
    # max_window_layers 28, every layer full attention; the Instruct model's file differs in
    # max_position_embeddings 32768 and max_window_layers 21, no shape)
    "qwen2.5-1.5b": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu", "hidden_size": 1536,
        "intermediate_size": 8960, "max_position_embeddings": 131072, "max_window_layers": 28,
        "num_attention_heads": 12, "num_hidden_layers": 28, "num_key_value_heads": 2, "rope_scaling": None,
        "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": True, "use_sliding_window": False,
        "vocab_size": 151936},
    # ibm-granite/granite-3.3-8b-base and -instruct (a public dump of the file with its parameter
    # shapes; a parameter table marks granite-3.3-8b "HF safetensors confirmed", 8,170,864,640)
    "granite-3.3-8b": {
        "architectures": ["GraniteForCausalLM"], "model_type": "granite", "attention_bias": False,
        "attention_multiplier": 0.0078125, "embedding_multiplier": 12.0, "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 12800, "logits_scaling": 16.0, "max_position_embeddings": 131072, "mlp_bias": False,
        "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "residual_multiplier": 0.22,
        "rope_scaling": None, "rope_theta": 10000000.0, "rms_norm_eps": 1e-05, "tie_word_embeddings": True,
        "vocab_size": 49159},
    # Qwen/Qwen3-Coder-480B-A35B-Instruct (baidu/vLLM-Kunlun's multi-XPU tutorial for it prints the
    # bf16 file before adding its W8A8 fields; a Rust test's qwen3_coder_480b_a35b_config gives the same)
    "qwen3-coder-480b-a35b": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "decoder_sparse_step": 1,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 6144, "intermediate_size": 8192,
        "max_position_embeddings": 262144, "max_window_layers": 62, "mlp_only_layers": [],
        "moe_intermediate_size": 2560, "norm_topk_prob": True, "num_attention_heads": 96, "num_experts": 160,
        "num_experts_per_tok": 8, "num_hidden_layers": 62, "num_key_value_heads": 8, "rope_scaling": None,
        "rope_theta": 10000000, "sliding_window": None, "tie_word_embeddings": False, "use_qk_norm": True,
        "use_sliding_window": False, "vocab_size": 151936},
}
