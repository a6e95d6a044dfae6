"""Parameter counts from the architecture equal what Hugging Face transformers reports."""
import json

import pytest

from shardwise.kb import catalog
from shardwise.kb.errors import InputError
from shardwise.kb.hf_config import read_hf_config
from shardwise.kb.params import active_params, total_params

from catalog_configs import CATALOG_CONFIGS

# model.num_parameters() of the transformers classes (model cards / safetensors index totals)
HF_COUNTS = {
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "llama-2-7b": 6_738_415_616,
    "llama-3.2-1b": 1_235_814_400,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-0.5b": 494_032_768,
    "qwen3-8b": 8_190_735_360,
    "qwen3-30b-a3b": 30_532_122_624,
    "deepseek-v3": 671_026_419_200,
    "gemma-7b": 8_537_680_896,
    "gemma-2-9b": 9_241_705_984,
    "bloom-176b": 176_247_271_424,
    # transformers 5.24's num_parameters() of the same config.json files (HF_CONFIGS below and
    # test_a_field_config_json_leaves_out_takes_the_config_class_default)
    "qwen3-0.6b": 596_049_920,
    "olmo-2-7b": 7_298_617_344,
    "smollm3-3b": 3_075_098_624,
    "olmoe-1b-7b": 6_919_161_856,
    # DeepseekV3ForCausalLM of Kimi-K2-Base's config.json: 1,026,408,209,408 num_parameters() plus
    # the 60 MoE layers' e_score_correction_bias (384 each), counted as DeepSeek-V3's above
    "kimi-k2": 1_026_408_209_408 + 60 * 384,
    # the GLMs as HF_CONFIGS' glm45 and glm45_air below
    "glm-4.5": 352_797_814_784 + 89 * 160,
    "glm-4.5-air": 106_852_245_504 + 45 * 128,
    # transformers 5.24's num_parameters() of the Llama 4 and Ministral text models (HF_CONFIGS'
    # llama4_scout and llama4_maverick below; test_hf_config_reading's MINISTRAL_8B)
    "llama-4-scout": 107_769_861_120,
    "llama-4-maverick": 400_711_848_960,
    "ministral-8b": 8_019_808_256,
    # granite-3.3-8b's safetensors total, as a public parameter table records it
    "granite-3.3-8b": 8_170_864_640,
}


@pytest.mark.parametrize("name,count", sorted(HF_COUNTS.items()))
def test_catalog_counts_equal_hugging_face(name, count):
    assert total_params(catalog.model(name)) == count


@pytest.mark.parametrize("name", sorted(CATALOG_CONFIGS))
def test_catalog_entry_is_the_model_its_config_json_describes(tmp_path, name):
    """A catalog name and the model's own config.json (tests/catalog_configs.py) give the same
    model, field by field: what --model NAME answers is what --hf-config answers for its file."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(CATALOG_CONFIGS[name]))
    read, entry = read_hf_config(str(p)), catalog.model(name)
    skip = {"name", "source"}
    assert {k: v for k, v in entry.model_dump().items() if k not in skip} == \
        {k: v for k, v in read.model_dump().items() if k not in skip}
    assert total_params(entry) == total_params(read)


def test_deepseek_r1_is_deepseek_v3s_architecture():
    """DeepSeek-R1 is trained from DeepSeek-V3-Base and ships V3's config.json: the same model."""
    r1, v3 = catalog.model("deepseek-r1").model_dump(), catalog.model("deepseek-v3").model_dump()
    assert {k: v for k, v in r1.items() if k not in ("name", "source")} == \
        {k: v for k, v in v3.items() if k not in ("name", "source")}


# Totals published for catalog models whose exact transformers count we have not recorded, to the
# digits published (Qwen's cards are not among them: Qwen2.5-14B's "14.7B" and -32B's "32.5B" are
# below the 14.77B and 32.76B their config.json files build); Phi-4 "14.66" (a public model table
# citing microsoft/phi-4's config.json); DeepSeek-V2-Lite "15.7B" (its model card); Gemma 3 1B
# 999,885,952 (KerasHub's gemma3_1b preset metadata, exact: Keras builds the same tied model);
# Gemma 3 4B's language model 3.880B of transformers' 4.300B (test_hf_config_reading); Kimi K2
# "1T" total (moonshotai/Kimi-K2-Base model card), to the one significant digit published
CATALOG_PUBLISHED = {"phi-4": (14.66, 2), "deepseek-v2-lite": (15.7, 1), "kimi-k2": (1000, -2),
                     "gemma-3-1b": (0.999885952, 9), "gemma-3-4b": (3.88, 2),
                     # the model cards: Phi-3-mini and Phi-4-mini "3.8B", Phi-3-medium "14B",
                     # Qwen2.5-1.5B "1.54B", Mistral Small 3 "24B", Qwen3-Coder-480B-A35B "480B"
                     "phi-3-mini": (3.8, 1), "phi-4-mini": (3.8, 1), "phi-3-medium": (14, 0),
                     "qwen2.5-1.5b": (1.54, 2), "mistral-small-24b": (24, 0), "qwen3-coder-480b-a35b": (480, 0)}


@pytest.mark.parametrize("name", sorted(CATALOG_PUBLISHED))
def test_catalog_totals_match_published_sizes(name):
    billions, digits = CATALOG_PUBLISHED[name]
    assert round(total_params(catalog.model(name)) / 1e9, digits) == billions


def test_new_catalog_models_match_their_cards_active_counts_and_keras_gemma():
    """Qwen2.5-1.5B's card: 1.31B non-embedding; Qwen3-Coder-480B-A35B: 35B activated; Llama 4
    Scout and Maverick: 17B active each (their cards). Gemma 3 12B's language model is KerasHub's
    gemma3_12b_text preset (11,765,788,416) with the 64 rows config.json's vocab 262208 adds."""
    q = catalog.model("qwen2.5-1.5b")
    assert round((total_params(q) - q.vocab * q.hidden) / 1e9, 2) == 1.31
    assert round(active_params(catalog.model("qwen3-coder-480b-a35b")) / 1e9) == 35
    for name in ("llama-4-scout", "llama-4-maverick"):
        assert round(active_params(catalog.model(name)) / 1e9) == 17
    g = catalog.model("gemma-3-12b")
    assert total_params(g) - (g.vocab - 262_144) * g.hidden == 11_765_788_416


def test_gemma3_wrapped_entries_say_the_vision_tower_is_not_sized():
    """Gemma 3 4B and 27B are multimodal checkpoints: the catalog, like the config.json reader,
    sizes the language model only and says so among the answer's assumptions."""
    for name in ("gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "llama-4-scout", "llama-4-maverick"):
        assert any("vision tower" in n for n in catalog.model(name).reading_notes)
    assert not catalog.model("gemma-3-1b").reading_notes       # text-only


def test_moe_active_parameters():
    assert round(active_params(catalog.model("mixtral-8x7b")) / 1e9, 1) == 12.9   # "12.9B active" (Mistral)
    assert round(active_params(catalog.model("deepseek-v3")) / 1e9) == 38          # 37B + embeddings/head
    kimi = catalog.model("kimi-k2")        # Kimi K2 model card: "32B activated", less the embedding table
    assert round((active_params(kimi) - kimi.vocab * kimi.hidden) / 1e9) == 32


def test_gpt_oss_counts_match_its_model_card():
    """OpenAI's gpt-oss model card, table 1: total and active parameters (active counts the
    unembedding, not the embedding table), to the two decimals published."""
    for name, total, active in (("gpt-oss-20b", 20.91, 3.61), ("gpt-oss-120b", 116.83, 5.13)):
        m = catalog.model(name)
        assert round(total_params(m) / 1e9, 2) == total
        assert round((active_params(m) - m.vocab * m.hidden) / 1e9, 2) == active


HF_CONFIGS = {
    "llama3_8b": ({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                   "tie_word_embeddings": False}, 8_030_261_248),
    "qwen25_05b": ({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                    "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
                    "tie_word_embeddings": True}, 494_032_768),
    "mixtral": ({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
                 "num_experts_per_tok": 2}, 46_702_792_704),
    "deepseek_v3": ({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
                     "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
                     "vocab_size": 129280, "n_routed_experts": 256, "num_experts_per_tok": 8,
                     "moe_intermediate_size": 2048, "n_shared_experts": 1, "first_k_dense_replace": 3,
                     "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                     "v_head_dim": 128, "tie_word_embeddings": False}, 671_026_419_200),
    "gemma_7b": ({"model_type": "gemma", "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
                  "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "vocab_size": 256000},
                 8_537_680_896),
    # transformers 5.24's num_parameters() of each class built on the meta device from the model
    # card's shape: OLMo-2-1124-7B (7.3B), SmolLM3-3B (3.08B), GLM-4.5-Air (106B total) and GLM-4.5
    # (355B), the GLMs plus their routers' e_score_correction_bias (E a MoE layer), which
    # Glm4MoeTopkRouter holds as a buffer and the checkpoint stores, as DeepSeek-V3's count above
    # does; the MTP layer transformers does not build is not counted
    "olmo2_7b": ({"model_type": "olmo2", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100352,
                  "tie_word_embeddings": False}, 7_298_617_344),
    "smollm3_3b": ({"model_type": "smollm3", "hidden_size": 2048, "intermediate_size": 11008,
                    "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
                    "vocab_size": 128256, "tie_word_embeddings": True}, 3_075_098_624),
    "glm45_air": ({"model_type": "glm4_moe", "hidden_size": 4096, "intermediate_size": 10944, "num_hidden_layers": 46,
                   "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151552,
                   "n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 8,
                   "moe_intermediate_size": 1408, "first_k_dense_replace": 1, "use_qk_norm": False,
                   "attention_bias": True, "partial_rotary_factor": 0.5, "tie_word_embeddings": False},
                  106_852_245_504 + 45 * 128),
    "glm45": ({"model_type": "glm4_moe", "hidden_size": 5120, "intermediate_size": 12288, "num_hidden_layers": 92,
               "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151552,
               "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 8,
               "moe_intermediate_size": 1536, "first_k_dense_replace": 3, "use_qk_norm": True,
               "attention_bias": True, "partial_rotary_factor": 0.5, "tie_word_embeddings": False},
              352_797_814_784 + 89 * 160),
    # transformers 5.24's num_parameters() on the meta device from the model cards' config.json:
    # allenai/OLMoE-1B-7B-0924 (6.9B; q_norm h wide, k_norm g*d), ibm-granite/granite-3.1-3b-a800m-base
    # (3.3B) and ibm-granite/granite-3.1-1b-a400m-base (1.3B; both tie the head, routers E x h)
    "olmoe_1b_7b": ({"model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16,
                     "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 50304, "num_experts": 64,
                     "num_experts_per_tok": 8, "max_position_embeddings": 4096, "clip_qkv": None,
                     "norm_topk_prob": False, "tie_word_embeddings": False}, 6_919_161_856),
    "granite31_3b_a800m": ({"model_type": "granitemoe", "hidden_size": 1536, "intermediate_size": 512,
                            "num_hidden_layers": 32, "num_attention_heads": 24, "num_key_value_heads": 8,
                            "vocab_size": 49155, "num_local_experts": 40, "num_experts_per_tok": 8,
                            "embedding_multiplier": 12.0, "attention_multiplier": 0.015625,
                            "residual_multiplier": 0.22, "logits_scaling": 6.0, "tie_word_embeddings": True},
                           3_298_793_472),
    "granite31_1b_a400m": ({"model_type": "granitemoe", "hidden_size": 1024, "intermediate_size": 512,
                            "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8,
                            "vocab_size": 49155, "num_local_experts": 32, "num_experts_per_tok": 8,
                            "tie_word_embeddings": True}, 1_334_628_352),
    # not a published model: Granite 3.1 1B's shape with a 1024-wide shared MLP (input_linear
    # h x 2S, output_linear S x h), counted the same way
    "granitemoeshared_made_up": ({"model_type": "granitemoeshared", "hidden_size": 1024, "intermediate_size": 512,
                                  "shared_intermediate_size": 1024, "num_hidden_layers": 24,
                                  "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 49155,
                                  "num_local_experts": 32, "num_experts_per_tok": 8, "tie_word_embeddings": True},
                                 1_410_125_824),
    # transformers 5.24's num_parameters() on the meta device, Llama4ForCausalLM from the text
    # configs: Llama-4-Scout-17B-16E's shapes are Llama4TextConfig's defaults (configuration_llama4.py,
    # auto_docstring checkpoint meta-llama/Llama-4-Scout-17B-16E), as its config.json's text_config
    # gives them; Maverick-17B-128E's text_config as NVIDIA/TensorRT-LLM's Llama 4 min-latency test
    # vendors it (LLAMA_4_MAVERICK_TWO_LAYER_CONFIG, its num_hidden_layers 48 and
    # no_rope_layer_interval default restored): 128 experts, MoE every other layer, no q/k norm.
    # The model cards' 109B and 400B count the vision tower too (about 0.9B, not sized)
    "llama4_scout": ({"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
                      "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                      "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048, "num_local_experts": 16,
                      "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "use_qk_norm": True,
                      "attention_chunk_size": 8192, "tie_word_embeddings": False}, 107_769_861_120),
    "llama4_maverick": ({"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
                         "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                         "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048, "num_local_experts": 128,
                         "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "use_qk_norm": False,
                         "attention_chunk_size": 8192, "max_position_embeddings": 1048576,
                         "rope_theta": 500000.0, "tie_word_embeddings": False}, 400_711_848_960),
    "qwen3_moe": ({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                   "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                   "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                   "tie_word_embeddings": False}, 30_532_122_624),
}


# Families whose exact num_parameters() we have not recorded, against the size their model cards
# publish, to the digits published: DeepSeek-V2-Lite "15.7B total, 2.4B active"; DeepSeek-V2
# "236B total"; Phi-3-mini "3.8B" (Abdin et al. 2024); Phi-4 "14.7B" (safetensors); Granite 3.0 8B
# "8.17B" (safetensors); gpt-oss-20b "20.91B" (OpenAI model card).
PUBLISHED_SIZES = {
    "deepseek_v2_lite": ({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
                          "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
                          "vocab_size": 102400, "n_routed_experts": 64, "num_experts_per_tok": 6,
                          "moe_intermediate_size": 1408, "n_shared_experts": 2, "first_k_dense_replace": 1,
                          "q_lora_rank": None, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                          "v_head_dim": 128, "tie_word_embeddings": False}, 15.7, 1),
    "deepseek_v2": ({"model_type": "deepseek_v2", "hidden_size": 5120, "intermediate_size": 12288,
                     "num_hidden_layers": 60, "num_attention_heads": 128, "num_key_value_heads": 128,
                     "vocab_size": 102400, "n_routed_experts": 160, "num_experts_per_tok": 6,
                     "moe_intermediate_size": 1536, "n_shared_experts": 2, "first_k_dense_replace": 1,
                     "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                     "v_head_dim": 128, "tie_word_embeddings": False}, 236, 0),
    "gpt_oss_20b": ({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
                     "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
                     "vocab_size": 201088, "num_local_experts": 32, "num_experts_per_tok": 4,
                     "attention_bias": True, "tie_word_embeddings": False}, 20.91, 2),
    "phi3_mini": ({"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
                   "tie_word_embeddings": False}, 3.8, 1),
    "phi4": ({"model_type": "phi3", "hidden_size": 5120, "intermediate_size": 17920, "num_hidden_layers": 40,
              "num_attention_heads": 40, "num_key_value_heads": 10, "vocab_size": 100352,
              "tie_word_embeddings": False}, 14.7, 1),
    "granite_3_8b": ({"model_type": "granite", "hidden_size": 4096, "intermediate_size": 12800,
                      "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
                      "vocab_size": 49155, "tie_word_embeddings": True}, 8.17, 2),
}


@pytest.mark.parametrize("key", sorted(PUBLISHED_SIZES))
def test_hf_config_sizes_match_the_model_cards(tmp_path, key):
    cfg, billions, digits = PUBLISHED_SIZES[key]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert round(total_params(m) / 1e9, digits) == billions


@pytest.mark.parametrize("key", sorted(HF_CONFIGS))
def test_hf_config_counts(tmp_path, key):
    cfg, count = HF_CONFIGS[key]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    assert total_params(read_hf_config(str(p))) == count


def test_unknown_model_type_names_what_is_supported(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "mamba", "hidden_size": 10}))
    with pytest.raises(InputError, match=r"model_type 'mamba' is not supported; supported: .*llama.*qwen3"):
        read_hf_config(str(p))


def test_truncated_and_inconsistent_configs_are_refused_naming_the_field(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama", "hidden_size": 4096,')
    with pytest.raises(InputError, match="not valid JSON"):
        read_hf_config(str(p))
    cfg = dict(HF_CONFIGS["llama3_8b"][0])
    del cfg["num_hidden_layers"]
    p.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="missing field 'num_hidden_layers'"):
        read_hf_config(str(p))
    cfg = dict(HF_CONFIGS["llama3_8b"][0], num_key_value_heads=5)
    p.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match=r"num_attention_heads \(32\) must be a multiple of num_key_value_heads \(5\)"):
        read_hf_config(str(p))
    cfg = dict(HF_CONFIGS["llama3_8b"][0], hidden_size="4096")
    p.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="'hidden_size' must be an integer from 1 to "):
        read_hf_config(str(p))


def test_a_config_is_named_the_same_however_its_path_is_written(tmp_path, monkeypatch):
    """A model folder's config.json takes the folder's name, any other file its own name, from a
    relative or an absolute path alike (the name is printed and written into every export)."""
    folder = tmp_path / "Llama-3-8B"
    folder.mkdir()
    cfg = dict(HF_CONFIGS["llama3_8b"][0])
    (folder / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "llama_8b.json").write_text(json.dumps(cfg))
    monkeypatch.chdir(folder)
    assert {read_hf_config("config.json").name, read_hf_config("./config.json").name,
            read_hf_config(str(folder / "config.json")).name} == {"Llama-3-8B"}
    monkeypatch.chdir(tmp_path)
    assert {read_hf_config("llama_8b.json").name, read_hf_config(str(tmp_path / "llama_8b.json")).name} == {"llama_8b"}
    # the Hugging Face cache: models--ORG--NAME/snapshots/<revision>/config.json links into
    # blobs/; the revision names no model, the cache folder does
    repo = tmp_path / "hub" / "models--meta-llama--Meta-Llama-3-8B"
    blobs, snap = repo / "blobs", repo / "snapshots" / "abc123"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    (blobs / "0f1e2d").write_text(json.dumps(cfg))
    (snap / "config.json").symlink_to(blobs / "0f1e2d")
    assert read_hf_config(str(snap / "config.json")).name == "meta-llama/Meta-Llama-3-8B"
    # a snapshots/<revision> folder outside the cache: the model_type and size
    (tmp_path / "snapshots" / "abc123").mkdir(parents=True)
    (tmp_path / "snapshots" / "abc123" / "config.json").write_text(json.dumps(cfg))
    assert read_hf_config(str(tmp_path / "snapshots" / "abc123")).name == "llama-8.03b"


def test_rope_base_and_scaling_are_read_from_config_json(tmp_path):
    """rope_theta and rope_scaling (rope_type or the older type, with its factor) reach the spec
    the exports build from; a malformed rope_scaling is refused naming it."""
    p = tmp_path / "config.json"
    cfg = dict(HF_CONFIGS["llama3_8b"][0], rope_theta=500000.0,
               rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0})
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert (m.rope_theta, m.rope_scaling, m.rope_factor) == (500000.0, "llama3", 8.0)
    p.write_text(json.dumps(dict(cfg, rope_scaling={"type": "yarn", "factor": 40})))
    assert read_hf_config(str(p)).rope_scaling == "yarn"
    p.write_text(json.dumps(dict(cfg, rope_scaling={"rope_type": "default"})))
    assert read_hf_config(str(p)).rope_scaling == ""
    # longrope (Phi-3 128K) has per-dimension lists and no factor; YaRN's numbers are kept
    p.write_text(json.dumps(dict(cfg, rope_scaling={"type": "longrope", "long_factor": [1.0] * 48,
                                                    "short_factor": [1.0] * 48})))
    m = read_hf_config(str(p))
    assert (m.rope_scaling, m.rope_factor, m.rope_params) == ("longrope", 0.0, ())
    p.write_text(json.dumps(dict(cfg, rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32,
                                                    "original_max_position_embeddings": 4096, "truncate": False})))
    m = read_hf_config(str(p))
    assert m.rope_param("beta_fast") == 32 and m.rope_param("truncate") == 0 and m.rope_param("mscale") is None
    # transformers 5 writes rope_parameters, flat or keyed by layer type, with rope_theta inside
    flat = {k: v for k, v in cfg.items() if k not in ("rope_theta", "rope_scaling")}
    p.write_text(json.dumps(dict(flat, rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0})))
    m = read_hf_config(str(p))
    assert (m.rope_theta, m.rope_scaling, m.rope_factor) == (500000.0, "llama3", 8.0)
    p.write_text(json.dumps(dict(flat, rope_parameters={
        "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})))
    m = read_hf_config(str(p))
    assert (m.rope_theta, m.rope_scaling, m.rope_factor) == (1e6, "linear", 8.0)
    for bad, needle in (("llama3", "must be an object"), ({"factor": 8}, "needs a rope_type")):
        p.write_text(json.dumps(dict(cfg, rope_scaling=bad)))
        with pytest.raises(InputError, match=needle):
            read_hf_config(str(p))
    p.write_text(json.dumps(dict(cfg, rope_theta="500000")))
    with pytest.raises(InputError, match="'rope_theta' must be a positive number"):
        read_hf_config(str(p))


def test_sliding_windows_are_read_from_config_json(tmp_path):
    """config.json's sliding_window and layer_types (or the model type's default pattern) give
    the window and which layers use it; Qwen's window counts only with use_sliding_window, a
    window on a model type whose transformers class has none is ignored as transformers ignores
    it, and a pattern that is neither "every layer" nor "every Nth layer full" is refused."""
    p = tmp_path / "config.json"

    def read(cfg):
        p.write_text(json.dumps(cfg))
        m = read_hf_config(str(p))
        return m.sliding_window, m.full_attn_every, m.sliding_layers

    oss = dict(PUBLISHED_SIZES["gpt_oss_20b"][0], sliding_window=128)
    assert read(dict(oss, layer_types=["sliding_attention", "full_attention"] * 12)) == (128, 2, 12)
    assert read(oss) == (128, 2, 12)                          # GptOssConfig's default pattern
    gemma3 = {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
              "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208,
              "sliding_window": 1024, "sliding_window_pattern": 6}
    assert read(gemma3) == (1024, 6, 34 - 5)                  # layers 6, 12, ..., 30 full
    mistral = dict(HF_CONFIGS["llama3_8b"][0], model_type="mistral", sliding_window=4096)
    assert read(mistral) == (4096, 0, 32)
    assert read(dict(mistral, sliding_window=None)) == (0, 0, 0)
    assert read(dict(HF_CONFIGS["llama3_8b"][0], sliding_window=4096)) == (0, 0, 0)
    qwen = dict(HF_CONFIGS["qwen25_05b"][0], sliding_window=32768, max_window_layers=21)
    assert read(dict(qwen, use_sliding_window=False)) == (0, 0, 0)
    assert read(dict(qwen, use_sliding_window=True, max_window_layers=0)) == (32768, 0, 24)
    # the last three layers only; named by the fields it came from, not a layer_types it lacks
    with pytest.raises(InputError, match=r"\(use_sliding_window with max_window_layers\) follow no supported"):
        read(dict(qwen, use_sliding_window=True))
    with pytest.raises(InputError, match=r"\(layer_types\) follow no supported pattern"):
        read(dict(oss, layer_types=["full_attention"] * 2 + ["sliding_attention"] * 22))
    with pytest.raises(InputError, match="'layer_types' must list 24 entries"):
        read(dict(oss, layer_types=["sliding_attention"] * 23))


@pytest.mark.parametrize("cfg,count", [
    # Mistral 7B with num_key_value_heads and sliding_window left out: MistralConfig's 8 and 4096
    ({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
      "num_attention_heads": 32, "vocab_size": 32000}, 7_241_732_096),
    # Qwen3-0.6B without head_dim: Qwen3Config's 128, not 1024 / 16
    ({"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
      "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 151936, "tie_word_embeddings": True},
     596_049_920),
    # SmolLM3-3B without tie_word_embeddings: SmolLM3Config ties the head by default
    # (configuration_smollm3.py, tie_word_embeddings: bool = True), not 3,337,742,336 untied
    ({"model_type": "smollm3", "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
      "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 128256}, 3_075_098_624),
    # DeepSeek-V3 without n_shared_experts and first_k_dense_replace: DeepseekV3Config's 1 and 3
    # (configuration_deepseek_v3.py), not no shared expert and every layer MoE
    ({k: v for k, v in HF_CONFIGS["deepseek_v3"][0].items() if k not in ("n_shared_experts", "first_k_dense_replace")},
     671_026_419_200),
    # DeepSeek-V2-Lite without n_shared_experts: DeepseekV2Config's 2 (configuration_deepseek_v2.py)
    ({k: v for k, v in PUBLISHED_SIZES["deepseek_v2_lite"][0].items() if k != "n_shared_experts"}, 15_706_484_224),
])
def test_a_field_config_json_leaves_out_takes_the_config_class_default(tmp_path, cfg, count):
    """transformers fills a missing field with its config class's default, which for several model
    types is not the generic one (KV heads = heads, head size = hidden / heads, no window): so does
    the reader (counts: transformers 5.24 built on the meta device)."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert total_params(m) == count
    if cfg["model_type"] == "mistral":
        assert m.sliding_window == 4096
    p.write_text(json.dumps({**cfg, "sliding_window": None, "head_dim": None}))
    assert read_hf_config(str(p)).sliding_window == 0          # a field the file gives, even null, is the file's


def test_a_deepseek_files_null_n_shared_experts_means_none(tmp_path):
    """A key the file gives, even null, is the file's: DeepSeek's modeling_deepseek.py builds
    shared experts only where n_shared_experts is not None, so a null is no shared expert, not
    DeepseekV2Config's 2 that a left-out key takes."""
    cfg = dict(PUBLISHED_SIZES["deepseek_v2_lite"][0], n_shared_experts=None)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert m.shared_experts == 0 and total_params(m) == 15_706_484_224 - 26 * 3 * 2048 * 2 * 1408


def test_multi_latent_attention_ignores_the_head_dim_transformers_writes(tmp_path):
    """DeepSeek's config classes write qk_rope_head_dim into head_dim; hub files have none. The two
    spellings of one checkpoint read as the same model."""
    cfg = {"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944, "num_hidden_layers": 27,
           "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 102400, "n_routed_experts": 64,
           "num_experts_per_tok": 6, "moe_intermediate_size": 1408, "n_shared_experts": 2, "first_k_dense_replace": 1,
           "q_lora_rank": None, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
           "v_head_dim": 128}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    plain = read_hf_config(str(p))
    p.write_text(json.dumps({**cfg, "head_dim": 64}))
    assert read_hf_config(str(p)) == plain


def test_gemma3_wrapper_reads_its_language_model_and_says_what_it_leaves_out(tmp_path):
    """google/gemma-3-4b-it: the text_config is the language model (model_type gemma3_text, named
    or not), the wrapper's tie_word_embeddings applies to it, and the SigLIP tower it does not size
    is said, with its size (transformers builds 4.300B in all, 3.880B of them the language model)."""
    cfg = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
           "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                           "num_hidden_layers": 34, "sliding_window": 1024},
           "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                             "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14}}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert round(total_params(m) / 1e9, 2) == 3.88
    note, positions = m.reading_notes
    assert "vision tower" in note and "about 420M" in note
    # its text_config gives no max_position_embeddings: Gemma3TextConfig's, and said so
    assert m.max_positions == 131072 and "131,072" in positions and "Gemma3TextConfig" in positions
    for text_type in (None, "gemma3"):
        text = {k: v for k, v in cfg["text_config"].items() if k != "model_type"}
        p.write_text(json.dumps({**cfg, "text_config": {**text, **({"model_type": text_type} if text_type else {})}}))
        assert read_hf_config(str(p)).layers == 34
    p.write_text(json.dumps({**cfg, "tie_word_embeddings": False}))
    assert not read_hf_config(str(p)).tied
    p.write_text(json.dumps({**cfg, "text_config": {**cfg["text_config"], "model_type": "llama"}}))
    with pytest.raises(InputError, match="text_config must be a gemma3_text config"):
        read_hf_config(str(p))


def test_attention_and_mlp_biases_are_counted_or_refused(tmp_path):
    """Llama 3.1 8B with attention_bias: q, k and v biases (transformers counts 8,030,588,928 with
    o_proj's too, 4,096 more a layer); with mlp_bias as well every linear is biased (8,031,637,504
    in transformers); mlp_bias alone is refused in one line rather than left out."""
    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    plain = total_params(read_hf_config(str(p)))
    p.write_text(json.dumps({**cfg, "attention_bias": True}))
    assert total_params(read_hf_config(str(p))) == 8_030_588_928 - 32 * 4096
    p.write_text(json.dumps({**cfg, "attention_bias": True, "mlp_bias": True}))
    assert total_params(read_hf_config(str(p))) == 8_031_637_504
    assert plain == 8_030_261_248
    p.write_text(json.dumps({**cfg, "mlp_bias": True}))
    with pytest.raises(InputError, match="mlp_bias true without attention_bias"):
        read_hf_config(str(p))


def test_llama4_counts_its_interleaved_moe_shared_expert_and_dense_mlps(tmp_path):
    """Scout: every layer MoE (16 experts of intermediate_size, one shared expert as wide, a
    bias-free router), 17.2B active; Maverick: MoE on layers 1, 3, ... (interleave_moe_layer_step
    2), dense MLPs of intermediate_size_mlp between, 17.2B active of 400.7B. The weightless L2
    q/k norms add no parameter (transformers 5.24 on the meta device, HF_CONFIGS above)."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(HF_CONFIGS["llama4_scout"][0]))
    scout = read_hf_config(str(p))
    assert (scout.moe_layers, scout.dense_layers, scout.shared_width, scout.expert_ffn) == (48, 0, 8192, 8192)
    assert round(active_params(scout) / 1e9, 1) == 17.2
    p.write_text(json.dumps(HF_CONFIGS["llama4_maverick"][0]))
    mav = read_hf_config(str(p))
    assert (mav.moe_layers, mav.dense_layers, mav.moe_every, mav.ffn) == (24, 24, 2, 16384)
    assert round(active_params(mav) / 1e9, 1) == 17.2
    # the same MoE layers named as a list read the same; a list of another pattern is refused
    p.write_text(json.dumps(dict(HF_CONFIGS["llama4_maverick"][0], moe_layers=list(range(1, 48, 2)))))
    assert read_hf_config(str(p)) == mav.model_copy(update={"source": read_hf_config(str(p)).source})
    p.write_text(json.dumps(dict(HF_CONFIGS["llama4_maverick"][0], moe_layers=[0, 1, 5])))
    with pytest.raises(InputError, match=r"moe_layers \[0, 1, 5\] is not supported; supported: every Nth layer"):
        read_hf_config(str(p))


def test_llama4s_chunked_layers_are_the_ones_transformers_chunks(tmp_path):
    """Llama4TextConfig chunks the RoPE layers (no_rope_layers 1) where attention_chunk_size is set,
    or the layers a given layer_types calls chunked_attention; a null chunk size chunks none, and
    a layer_types naming chunks without a size (create_chunked_causal_mask raises) or another
    kind is refused, not read as full attention."""
    p = tmp_path / "config.json"
    scout = HF_CONFIGS["llama4_scout"][0]

    def read(**kw):
        p.write_text(json.dumps(dict(scout, **kw)))
        m = read_hf_config(str(p))
        return m.attn_chunk, m.chunked_layers

    assert read() == (8192, 36)
    assert read(attention_chunk_size=4096, no_rope_layer_interval=2) == (4096, 24)
    assert read(attention_chunk_size=None) == (0, 0)
    assert read(layer_types=["full_attention"] * 48) == (0, 0)
    assert read(layer_types=["chunked_attention"] * 40 + ["full_attention"] * 8) == (8192, 40)
    with pytest.raises(InputError, match=r"'layer_types' must list 48 entries .* 'chunked_attention' or 'full_attention'"):
        read(layer_types=["sliding_attention"] * 48)
    with pytest.raises(InputError, match=r"attention_chunk_size is null; allowed: an attention_chunk_size of 1"):
        read(layer_types=["chunked_attention"] * 48, attention_chunk_size=None)


def test_llama4_wrapper_reads_its_text_config_and_sizes_its_vision_tower_in_words(tmp_path):
    """A Llama 4 multimodal config.json (model_type llama4): the language model is its
    text_config, and the vision tower and projector it does not size are said with their size:
    transformers 5.24 builds Llama4ForConditionalGeneration for Maverick with 401,583,781,376
    parameters, 871,932,416 outside the language model (vision_config as the TensorRT-LLM test
    above vendors it, its 34 layers restored)."""
    vision = {"hidden_size": 1408, "image_size": 336, "intermediate_size": 5632, "num_attention_heads": 16,
              "num_hidden_layers": 34, "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096,
              "projector_output_dim": 4096, "vision_output_dim": 4096, "multi_modal_projector_bias": False,
              "model_type": "llama4_vision_model"}
    cfg = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
           "text_config": HF_CONFIGS["llama4_maverick"][0], "vision_config": vision}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert total_params(m) == 400_711_848_960
    from shardwise.kb.hf_config.vision import llama4_vision_params
    assert llama4_vision_params(vision, m.hidden) == 401_583_781_376 - 400_711_848_960
    assert any("vision tower" in n and "about 872M" in n for n in m.reading_notes)
    # a text_config that gives only some shapes takes Llama4TextConfig's (Scout's) for the rest
    p.write_text(json.dumps({"model_type": "llama4", "text_config": {"num_hidden_layers": 48}}))
    assert total_params(read_hf_config(str(p))) == 107_769_861_120


def test_every_nth_layer_moe_is_counted_and_placed_where_it_falls():
    """ModelSpec.moe_every = N: layers N-1, 2N-1, ... are MoE, the rest dense MLPs of ffn (Llama 4
    Maverick, N = 2). Counted once each, and a pipeline stage holds the MoE layers of its own
    range, not all the dense ones first (the leading-dense reading of first_dense)."""
    from shardwise.kb.schema import ModelSpec
    from shardwise.kb.stages import layers_on_stage
    base = dict(name="x", layers=8, hidden=64, ffn=256, heads=4, kv_heads=4, vocab=100, experts=4, top_k=1,
                expert_ffn=128)
    every = ModelSpec(**base, moe_every=2)
    lead = ModelSpec(**base, first_dense=4)
    assert (every.moe_layers, every.dense_layers) == (4, 4) and total_params(every) == total_params(lead)
    assert [layers_on_stage(every, 2, s) for s in range(2)] == [(2, 2), (2, 2)]
    assert [layers_on_stage(lead, 2, s) for s in range(2)] == [(4, 0), (0, 4)]
    with pytest.raises(ValueError, match="moe_every and first_dense"):
        ModelSpec(**base, moe_every=2, first_dense=1)


# Mistral Small 3.2 24B's config.json as kohya-ss/musubi-tuner vendors it for FLUX.2's text encoder
# (src/musubi_tuner/flux_2/flux2_utils.py, M3_CONFIG_JSON, "transformers_version": "4.57.1"): no
# tie_word_embeddings at either level
MISTRAL_SMALL_32 = {
    "architectures": ["Mistral3ForConditionalGeneration"], "dtype": "bfloat16", "image_token_index": 10,
    "model_type": "mistral3", "multimodal_projector_bias": False, "projector_hidden_act": "gelu",
    "spatial_merge_size": 2,
    "text_config": {"attention_dropout": 0.0, "dtype": "bfloat16", "head_dim": 128, "hidden_act": "silu",
                    "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 32768,
                    "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32,
                    "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                    "rope_theta": 1000000000.0, "sliding_window": None, "use_cache": True, "vocab_size": 131072},
    "transformers_version": "4.57.1",
    "vision_config": {"attention_dropout": 0.0, "dtype": "bfloat16", "head_dim": 64, "hidden_act": "silu",
                      "hidden_size": 1024, "image_size": 1540, "initializer_range": 0.02, "intermediate_size": 4096,
                      "model_type": "pixtral", "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 24,
                      "patch_size": 14, "rope_theta": 10000.0},
    "vision_feature_layer": -1,
}


def test_mistral3_reads_its_mistral_text_config_with_the_checkpoints_untied_head(tmp_path):
    """Mistral Small 3.x (model_type mistral3): the language model is its text_config, a MistralModel.
    transformers 5.24 on the meta device, Mistral3ForConditionalGeneration from the file above with
    tie_word_embeddings false: 24,011,361,280 parameters, 23,572,403,200 of them outside the vision
    tower and projector (438,958,080). From the file as it is, the model built from the config alone
    ties the head (Mistral3Config's default true): 23,340,272,640 in all, 22,901,314,560 in the
    language model, 671,088,640 (V x h) fewer -- but
    the checkpoint stores lm_head apart and from_pretrained keeps it (transformers issue #42313), so
    the untied count is the one trained, and the answer says why."""
    from shardwise.kb.hf_config.vision import pixtral_params
    p = tmp_path / "Mistral-Small-3.2-24B-Instruct-2506" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(MISTRAL_SMALL_32))
    m = read_hf_config(str(p))
    assert (m.family, m.tied, total_params(m)) == ("mistral", False, 23_572_403_200)
    assert 22_901_314_560 + 131072 * 5120 == total_params(m)
    assert pixtral_params(MISTRAL_SMALL_32, m.hidden) == 438_958_080
    assert any("vision tower" in n and "about 439M" in n for n in m.reading_notes)
    assert any("output head is sized apart" in n for n in m.reading_notes)
    # a wrapper that says false agrees with the text_config: nothing to say
    p.write_text(json.dumps(dict(MISTRAL_SMALL_32, tie_word_embeddings=False)))
    assert not any("output head" in n for n in read_hf_config(str(p)).reading_notes)


@pytest.mark.parametrize("tie_at, tied, count", [("text", True, 1_633_536), ("wrapper", False, 1_889_536),
                                                 ("neither", False, 1_889_536)])
def test_mistral3_small_shapes_count_as_transformers_builds_them(tmp_path, tie_at, tied, count):
    """Made-up shapes, counted by transformers 5.24 on the meta device (Mistral3ForConditionalGeneration):
    a head_dim that is not h / heads, a text_config that ties its head (counted tied, as transformers
    ties it) or a wrapper that unties it; the Pixtral tower and projector with biases, a 3 x 3 patch
    merger and two feature layers concatenated: 878,080 either way. A text_config without a
    model_type is MistralConfig's."""
    from shardwise.kb.hf_config.vision import pixtral_params
    text = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 96, "vocab_size": 1000}
    if tie_at == "text":
        text.update(model_type="mistral", tie_word_embeddings=True)
    cfg = {"model_type": "mistral3", "multimodal_projector_bias": True, "spatial_merge_size": 3,
           "vision_feature_layer": [-1, -3], "text_config": text,
           "vision_config": {"model_type": "pixtral", "hidden_size": 128, "intermediate_size": 320,
                             "num_hidden_layers": 3, "num_attention_heads": 4, "patch_size": 8, "num_channels": 4}}
    if tie_at == "wrapper":
        cfg["tie_word_embeddings"] = False
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert (m.tied, total_params(m)) == (tied, count)
    assert pixtral_params(cfg, m.hidden) == 878_080


# dots.llm1's config.json as lablup/mlxcel's dots1 config test vendors it (DOTS1_CONFIG, "a trimmed
# dots.llm1.inst-mixed-4-6bit config": its n_group, topk_group and head_dim left out; the quantization
# block dropped here)
DOTS_LLM1 = {"model_type": "dots1", "hidden_size": 4096, "num_hidden_layers": 62, "intermediate_size": 10944,
             "num_attention_heads": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "vocab_size": 152064,
             "first_k_dense_replace": 1, "moe_intermediate_size": 1408, "n_routed_experts": 128, "n_shared_experts": 2,
             "num_experts_per_tok": 6, "norm_topk_prob": True, "routed_scaling_factor": 2.5,
             "max_position_embeddings": 32768, "rope_theta": 10000000, "scoring_func": "sigmoid",
             "attention_bias": False, "tie_word_embeddings": False, "eos_token_id": 151649}


@pytest.mark.parametrize("cfg, count", [
    # transformers 5.24, Dots1ForCausalLM on the meta device: 142,774,373,888 parameters, plus the
    # routers' e_score_correction_bias buffers the checkpoint stores (128 in each of 61 MoE layers)
    (DOTS_LLM1, 142_774_373_888 + 61 * 128),
    # made-up shapes: head_dim 96 of a 256 hidden size, GQA, two leading dense layers, three shared
    # experts, groups, a tied head (6,932,160 + 3 MoE layers x 16)
    ({"model_type": "dots1", "hidden_size": 256, "num_hidden_layers": 5, "intermediate_size": 640,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 96, "vocab_size": 1000,
      "first_k_dense_replace": 2, "moe_intermediate_size": 96, "n_routed_experts": 16, "n_shared_experts": 3,
      "num_experts_per_tok": 4, "n_group": 4, "topk_group": 2, "tie_word_embeddings": True}, 6_932_160 + 3 * 16),
])
def test_dots1_counts_as_transformers_builds_it(tmp_path, cfg, count):
    """dots.llm1: DeepSeek-V3's MoE (as GLM-4.5 builds it) under Qwen3's per-head q/k norms. The
    published "142B total, 14B activated" reads back; Dots1Config's norm_topk_prob default is
    false, unlike GLM-4.5's and DeepSeek-V3's."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert total_params(m) == count
    if cfg is DOTS_LLM1:
        assert round(active_params(m) / 1e9) == 14 and (m.router_groups, m.router_scale) == (1, 2.5)
        assert m.qk_norm and m.router_bias and not m.router_pre_softmax and m.max_positions == 32768
    p.write_text(json.dumps({k: v for k, v in cfg.items() if k != "norm_topk_prob"}))
    assert read_hf_config(str(p)).router_pre_softmax


def test_dots1_slides_from_max_window_layers_and_needs_its_shared_experts(tmp_path):
    """Dots1Config slides the layers from max_window_layers (default 62) on, with no use_sliding_window
    switch: none of dots.llm1's 62 by default, every layer from 0. n_shared_experts has no default
    transformers can build (None), so a file without it is refused naming the field."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(DOTS_LLM1))
    assert read_hf_config(str(p)).sliding_window == 0
    p.write_text(json.dumps(dict(DOTS_LLM1, max_window_layers=0, use_sliding_window=False)))
    assert read_hf_config(str(p)).sliding_window == 4096
    p.write_text(json.dumps({k: v for k, v in DOTS_LLM1.items() if k != "n_shared_experts"}))
    with pytest.raises(InputError, match="missing field 'n_shared_experts'"):
        read_hf_config(str(p))


# Seed-OSS-36B's config.json as lablup/mlxcel's seed_oss config test vendors it (src/models/
# seed_oss_tests.rs SEED_OSS_36B_CONFIG, "a trimmed Seed-OSS-36B-Instruct-4bit config": the
# quantization block dropped here)
SEED_OSS_36B = {"model_type": "seed_oss", "attention_bias": True, "attention_out_bias": False, "head_dim": 128,
                "hidden_size": 5120, "intermediate_size": 27648, "max_position_embeddings": 524288, "mlp_bias": False,
                "num_attention_heads": 80, "num_hidden_layers": 64, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
                "rope_scaling": {"rope_type": "default"}, "rope_theta": 10000000.0, "tie_word_embeddings": False,
                "vocab_size": 155136}
# EXAONE-4.0-32B's config.json as a TensorRT-LLM EXAONE 4 test copies it (EXAONE4_SINGLE_LAYER_CONFIG,
# beside tensorrt_llm._torch.models.modeling_exaone4; transformers_version 4.54.0.dev0), with the 64 layers and the 4096-token window its NOTE comments
# say it cut to 4 and 4 (attn_implementation, a loading option, dropped)
EXAONE4_32B = {"model_type": "exaone4", "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 361,
               "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
               "intermediate_size": 27392, "max_position_embeddings": 131072, "num_attention_heads": 40,
               "num_hidden_layers": 64, "num_key_value_heads": 8, "pad_token_id": 0, "rms_norm_eps": 1e-05,
               "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                "original_max_position_embeddings": 8192, "rope_type": "llama3"},
               "rope_theta": 1000000, "sliding_window": 4096, "sliding_window_pattern": 4, "tie_word_embeddings": False,
               "use_cache": True, "vocab_size": 102400}
# OLMo-3-7B's shapes as a mini-sglang (minisgl) OLMo 3 config test writes them (_hf_config: its layers
# cut to 4 there, 32 here with the default every-fourth-full pattern) -- not a verbatim file;
# transformers' 7,298,011,136 is the count another project's hub-page test prints as "7.3B"
OLMO3_7B = {"model_type": "olmo3", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008,
            "max_position_embeddings": 65536, "num_attention_heads": 32, "num_hidden_layers": 32,
            "num_key_value_heads": 32, "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "sliding_window": 4096,
            "rope_scaling": {"attention_factor": 1.2079441541679836, "beta_fast": 32.0, "beta_slow": 1.0, "factor": 8.0,
                             "original_max_position_embeddings": 8192, "rope_type": "yarn"},
            "tie_word_embeddings": False, "vocab_size": 100278}


@pytest.mark.parametrize("cfg, count", [
    # transformers 5.24 on the meta device; Seed-OSS-36B's 36,151,104,512 is also its checkpoint's
    (SEED_OSS_36B, 36_151_104_512), (EXAONE4_32B, 32_003_216_384), (OLMO3_7B, 7_298_011_136),
    # made-up shapes (head_dim 96 of 256, GQA, tied): Seed-OSS with o_proj's bias alone and with
    # every linear biased; EXAONE 4.0 with every third layer full; OLMo 3 with its default pattern
    ({"model_type": "seed_oss", "hidden_size": 256, "num_hidden_layers": 3, "intermediate_size": 640,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 96, "vocab_size": 1000,
      "attention_out_bias": True, "tie_word_embeddings": True}, 2_620_160),
    ({"model_type": "seed_oss", "hidden_size": 256, "num_hidden_layers": 3, "intermediate_size": 640,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 96, "vocab_size": 1000,
      "attention_out_bias": True, "mlp_bias": True}, 2_880_768),
    ({"model_type": "exaone4", "hidden_size": 256, "num_hidden_layers": 6, "intermediate_size": 640,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 96, "vocab_size": 1000,
      "tie_word_embeddings": True, "sliding_window_pattern": 3}, 4_979_072),
    ({"model_type": "olmo3", "hidden_size": 256, "num_hidden_layers": 8, "intermediate_size": 640,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 96, "vocab_size": 1000,
      "tie_word_embeddings": True}, 6_556_416),
])
def test_olmo3_exaone4_seed_oss_count_as_transformers_builds_them(tmp_path, cfg, count):
    """OLMo 3 (OLMo 2's layer, whole-projection q/k norms), EXAONE 4.0 (per-head q/k norms, no
    biases) and Seed-OSS (q/k/v biases by default, o_proj's by attention_out_bias): the count
    transformers builds."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    assert total_params(read_hf_config(str(p))) == count


def test_olmo3_and_exaone4_windows_and_exaone4s_global_nope(tmp_path):
    """OLMo 3 slides three layers of four by default (Olmo3Config); EXAONE 4.0 every layer but each
    sliding_window_pattern-th, whose attention then applies no RoPE; without a window every layer
    is full and rotated. EXAONE's string pattern ("LLLG") is built only from layer_types: alone it
    is refused naming the field."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(OLMO3_7B))
    m = read_hf_config(str(p))
    assert (m.sliding_window, m.full_attn_every, m.nope_layers, m.rope_scaling) == (4096, 4, (), "yarn")
    p.write_text(json.dumps(EXAONE4_32B))
    m = read_hf_config(str(p))
    assert (m.sliding_window, m.full_attn_every, m.nope_layers[:3], len(m.nope_layers)) == (4096, 4, (3, 7, 11), 16)
    p.write_text(json.dumps(dict(EXAONE4_32B, sliding_window=None)))
    m = read_hf_config(str(p))
    assert (m.sliding_window, m.nope_layers) == (0, ())
    p.write_text(json.dumps(dict(EXAONE4_32B, sliding_window_pattern="LLLG")))
    with pytest.raises(InputError, match="'sliding_window_pattern'"):
        read_hf_config(str(p))
    types = ["sliding_attention"] * 3 + ["full_attention"]
    p.write_text(json.dumps(dict(EXAONE4_32B, sliding_window_pattern="LLLG", layer_types=types * 16)))
    assert read_hf_config(str(p)).nope_layers[:2] == (3, 7)


def test_seed_oss_biases_default_on_and_dropout_is_read(tmp_path):
    """SeedOssConfig biases q, k and v unless told not to, and its 0.1 dropouts are read (sized on
    transformers layers, kb/memory/activations), the defaults taken said where the file leaves them
    out; MLP biases without o_proj's are refused in one line."""
    p = tmp_path / "config.json"
    base = {k: v for k, v in SEED_OSS_36B.items()
            if k not in ("attention_bias", "attention_out_bias", "attention_dropout", "residual_dropout")}
    p.write_text(json.dumps(base))
    m = read_hf_config(str(p))
    assert m.qkv_bias and not m.o_bias and total_params(m) == 36_151_104_512
    assert (m.attn_dropout, m.resid_dropout) == (0.1, 0.1)
    assert any("residual_dropout 0.1" in n and "default" in n for n in m.reading_notes)
    p.write_text(json.dumps(dict(base, attention_dropout=0.0, residual_dropout=0.0)))
    m = read_hf_config(str(p))
    assert (m.attn_dropout, m.resid_dropout) == (0.0, 0.0) and not any("dropout" in n for n in m.reading_notes)
    p.write_text(json.dumps(dict(base, mlp_bias=True)))
    with pytest.raises(InputError, match="mlp_bias true with attention_out_bias false"):
        read_hf_config(str(p))


def test_norm_epsilon_is_the_files_else_its_config_classs(tmp_path):
    """rms_norm_eps as config.json gives it; left out, the config class's default (LlamaConfig
    1e-6, MixtralConfig 1e-5: transformers 5.24), not one number for every type; 1 or more refused."""
    p = tmp_path / "config.json"
    for cfg, eps in ((dict(HF_CONFIGS["llama3_8b"][0], rms_norm_eps=1e-05), 1e-5), (HF_CONFIGS["llama3_8b"][0], 1e-6),
                     (HF_CONFIGS["mixtral"][0], 1e-5), (HF_CONFIGS["qwen25_05b"][0], 1e-6),
                     # families added today: Olmo3Config and Exaone4Config 1e-5, SeedOssConfig 1e-6
                     ({k: v for k, v in OLMO3_7B.items() if k != "rms_norm_eps"}, 1e-5),
                     ({k: v for k, v in EXAONE4_32B.items() if k != "rms_norm_eps"}, 1e-5),
                     ({k: v for k, v in SEED_OSS_36B.items() if k != "rms_norm_eps"}, 1e-6)):
        p.write_text(json.dumps(cfg))
        assert read_hf_config(str(p)).norm_eps == eps
    p.write_text(json.dumps(dict(HF_CONFIGS["llama3_8b"][0], rms_norm_eps=1.5)))
    with pytest.raises(InputError, match=r"'rms_norm_eps' must be a positive number below 1 .* got 1\.5"):
        read_hf_config(str(p))
    p.write_text(json.dumps(dict(HF_CONFIGS["llama3_8b"][0], rms_norm_eps="1e-5")))
    with pytest.raises(InputError, match="'rms_norm_eps' must be a positive number"):
        read_hf_config(str(p))


@pytest.mark.parametrize("cfg, count, active_b", [
    # MindIE atb_llm's ERNIE-4.5-21B-A3B config dict (test_config_ernie_moe.py): transformers 5.24
    # Ernie4_5_MoeForCausalLM on the meta device 21,825,437,888 (the correction biases are parameters)
    ({"model_type": "ernie4_5_moe", "hidden_act": "silu", "hidden_size": 2560, "intermediate_size": 12288,
      "max_position_embeddings": 131072, "moe_intermediate_size": 1536, "moe_k": 6, "moe_layer_end_index": 27,
      "moe_layer_interval": 1, "moe_layer_start_index": 1, "moe_num_experts": 64, "moe_num_shared_experts": 2,
      "num_attention_heads": 20, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-05,
      "rope_theta": 500000.0, "vocab_size": 103424}, 21_825_437_888, 3),
    # its ERNIE-4.5-300B-A47B dict (test_router_ernie_moe.py): 298,636,913,856, no shared experts, MoE from layer 3
    ({"model_type": "ernie4_5_moe", "hidden_act": "silu", "hidden_size": 8192, "intermediate_size": 28672,
      "max_position_embeddings": 131072, "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 54,
      "rms_norm_eps": 1e-05, "vocab_size": 103424, "rope_theta": 500000.0, "moe_num_experts": 64,
      "moe_num_shared_experts": 0, "moe_layer_start_index": 3, "moe_layer_end_index": 53, "moe_intermediate_size": 3584,
      "moe_gate": "topk_fused", "moe_k": 8, "moe_layer_interval": 1, "tie_word_embeddings": True}, 298_636_913_856, 47),
    # made-up: MoE every second layer (1, 3, 5), head_dim 96 of 256, GQA, one shared expert, untied
    ({"model_type": "ernie4_5_moe", "hidden_size": 256, "intermediate_size": 640, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 96, "num_hidden_layers": 6, "vocab_size": 1000, "moe_num_experts": 8,
      "moe_k": 2, "moe_intermediate_size": 96, "moe_num_shared_experts": 1, "moe_layer_start_index": 0,
      "moe_layer_interval": 2, "tie_word_embeddings": False}, 5_756_184, 0),
    # made-up, every field Ernie4_5_MoeConfig's default but the shapes: tied, 2 shared experts, MoE from layer 1
    ({"model_type": "ernie4_5_moe", "hidden_size": 256, "intermediate_size": 640, "num_attention_heads": 4,
      "num_hidden_layers": 5, "vocab_size": 1000, "moe_intermediate_size": 96}, 21_591_040, 0),
])
def test_ernie4_5_moe_counts_as_transformers_builds_it(tmp_path, cfg, count, active_b):
    """ERNIE 4.5 MoE: Llama's attention, Mixtral's fused experts with an ungated shared MLP, MoE
    layers from moe_layer_start_index on (or every moe_layer_interval-th), and the router's fp32
    weight and e_score_correction_bias, an nn.Parameter transformers counts. The published
    "21B total, 3B activated" and "300B, 47B activated" read back."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = read_hf_config(str(p))
    assert total_params(m) == count
    if active_b:
        assert round(active_params(m) / 1e9) == active_b


@pytest.mark.parametrize("tie", [True, False])
def test_ministral3_counts_as_transformers_builds_it(tmp_path, tie):
    """Devstral Small 2's mistral3 text_config as an imp test vendors it (test_hf_config_loader:
    Ministral3YarnAndQueryTemperature; its MLP and vocabulary left to Ministral3Config's 14336 and
    131072): transformers 5.24 builds a language model of 11,576,693,760 parameters, its head tied by
    Mistral3Config's default; untied (as the text_config or wrapper may say) adds the V x h head."""
    text = {"head_dim": 128, "hidden_size": 5120, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 40, "model_type": "ministral3",
            "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 48.0, "llama_4_scaling_beta": 0.1,
                                "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 8192,
                                "rope_theta": 100000000.0, "rope_type": "yarn", "type": "yarn"}}
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
                             "tie_word_embeddings": tie, "text_config": text}))
    m = read_hf_config(str(p))
    assert total_params(m) == 11_576_693_760 + (0 if tie else 131072 * 5120)
    # the same text as a top-level ministral3 config.json (Devstral 2's Ministral3ForCausalLM)
    p.write_text(json.dumps(dict(text, tie_word_embeddings=tie)))
    assert total_params(read_hf_config(str(p))) == 11_576_693_760 + (0 if tie else 131072 * 5120)
