"""Reading a Hugging Face config.json (kb/hf_config/), as a user review found it: the model's
name (never a cache revision hash, the same for the same input wherever it lies), the MLP's
activation (hidden_act / hidden_activation: read, mapped to the gated MLP it builds, or refused),
and one-line refusals that say what is wrong in the file's own words."""
import json
import os

import pytest

from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError
from shardwise.kb.hf_config import read_hf_config

QWEN = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064}
REV = "a09a35458c702b33eeacc393d103063234e8bc28"
GEMMA2 = {"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
          "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000}
GPT_OSS = {"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 201088,
           "num_local_experts": 32, "num_experts_per_tok": 4}


def write(path, cfg) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return str(path)


def refused(run_cli, *args) -> str:
    code, out, err = run_cli(*args)
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


def name_of(path) -> str:
    return read_hf_config(str(path)).name


# --- the model's name ---------------------------------------------------------------------------

def test_a_cached_model_is_named_by_its_cache_folder_not_its_revision(run_cli, tmp_path, monkeypatch):
    """The Hugging Face cache keeps hub/models--ORG--NAME/snapshots/<commit>/config.json: the
    name is ORG/NAME, whether the file, its folder, a relative or an absolute path is given,
    and the report's title carries no hash."""
    snap = tmp_path / "hub" / "models--Qwen--Qwen2.5-7B" / "snapshots" / REV
    write(snap / "config.json", QWEN)
    monkeypatch.chdir(tmp_path)
    rel = os.path.join("hub", "models--Qwen--Qwen2.5-7B", "snapshots", REV)
    assert {name_of(snap / "config.json"), name_of(snap), name_of(rel), name_of(os.path.join(rel, "config.json"))} \
        == {"Qwen/Qwen2.5-7B"}
    monkeypatch.chdir(snap)
    assert name_of("config.json") == "Qwen/Qwen2.5-7B"
    code, out, err = run_cli("recommend", "--hf-config", str(snap / "config.json"), "--gpus", "8")
    assert code == 0, err
    assert out.startswith("Qwen/Qwen2.5-7B (7.6B parameters) on 8 x ") and REV not in out
    # a repo without an organisation (models--gpt2) and the cache folder over _name_or_path
    write(tmp_path / "models--mymodel" / "snapshots" / REV / "config.json", dict(QWEN, _name_or_path="/home/x/run"))
    assert name_of(tmp_path / "models--mymodel" / "snapshots" / REV) == "mymodel"


def test_a_local_name_or_path_is_read_like_a_path(tmp_path):
    """A _name_or_path that is the local folder a model was saved to or loaded from is read like
    --hf-config's own path: the cache folder's ORG/NAME, else its last folder that is not a
    revision hash or generic -- not printed whole, hash and home folder included."""
    cached = f"/root/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B/snapshots/{REV}"
    for given, want in ((cached, "meta-llama/Llama-3.1-8B"), ("/home/u/runs/llama-ft/checkpoint-1000", "llama-ft"),
                        ("./my-model", "my-model"), ("Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B")):
        assert name_of(write(tmp_path / "cfg" / "config.json", dict(QWEN, _name_or_path=given))) == want, given


def test_name_or_path_names_a_model_outside_the_cache(tmp_path):
    """config.json's _name_or_path (the id it was loaded from) names the model, where it is a
    string with something printable in it; a non-string or blank one is passed over."""
    assert name_of(write(tmp_path / REV / "config.json", dict(QWEN, _name_or_path="Qwen/Qwen2.5-7B"))) \
        == "Qwen/Qwen2.5-7B"
    for bad in (7, ["Qwen/Qwen2.5-7B"], "", "   ", "\n\t", None):
        assert name_of(write(tmp_path / "Qwen2.5-7B" / "config.json", dict(QWEN, _name_or_path=bad))) \
            == "Qwen2.5-7B", bad
    # kept short and on one line
    long = name_of(write(tmp_path / "m" / "config.json", dict(QWEN, _name_or_path="org/" + "x" * 5000 + "\n")))
    assert long.startswith("org/xxx") and len(long) <= 100 and long.isprintable()


@pytest.mark.parametrize("folder", [REV, REV.upper(), "ab" * 32, "checkpoint-500", "snapshots", "cfg", "model", "tmp"])
def test_a_revision_or_generic_folder_gives_model_type_and_size(tmp_path, folder):
    """A config.json whose folder names no model (a commit hash, a Trainer checkpoint, a generic
    word) and that has no _name_or_path is named by model_type and size."""
    assert name_of(write(tmp_path / folder / "config.json", QWEN)) == "qwen2-7.62b"


def test_a_renamed_file_keeps_its_own_name_and_a_model_folder_its_name(tmp_path):
    assert name_of(write(tmp_path / "cfg" / "qwen-7b-gelu.json", QWEN)) == "qwen-7b-gelu"
    assert name_of(write(tmp_path / "anything" / "Qwen2.5-7B" / "config.json", QWEN)) == "Qwen2.5-7B"
    assert name_of(write(tmp_path / "cfg" / f"{REV}.json", QWEN)) == "qwen2-7.62b"
    # the size name follows the file (a Gemma 3 wrapper is named by its own model_type)
    small = dict(QWEN, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2)
    assert name_of(write(tmp_path / REV / "config.json", small)) == "qwen2-630m"


def test_the_same_file_gets_the_same_name_wherever_it_lies(run_cli, tmp_path):
    """Two machines, two layouts: the same cache entry, or the same revision folder, prints the
    same title byte for byte."""
    for root in ("a", os.path.join("b", "deeper", "still")):
        for where in (os.path.join("hub", "models--Qwen--Qwen2.5-7B", "snapshots", REV), REV):
            write(tmp_path / root / where / "config.json", QWEN)
    for where, want in ((os.path.join("hub", "models--Qwen--Qwen2.5-7B", "snapshots", REV), "Qwen/Qwen2.5-7B"),
                        (REV, "qwen2-7.62b")):
        titles = set()
        for root in ("a", os.path.join("b", "deeper", "still")):
            code, out, err = run_cli("recommend", "--hf-config", str(tmp_path / root / where / "config.json"),
                                     "--gpus", "8")
            assert code == 0, err
            titles.add(out.splitlines()[0])
        assert len(titles) == 1 and titles.pop().startswith(want + " ("), (where, titles)


# --- the MLP's activation -----------------------------------------------------------------------

def test_an_unknown_activation_is_refused_naming_field_value_and_choices(run_cli, tmp_path):
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "act.json", dict(QWEN, hidden_act="banana")),
                  "--gpus", "8")
    assert "'hidden_act'" in err and "'banana'" in err and "supported: silu" in err and "gelu_pytorch_tanh" in err
    for bad in ("relu", "SiLU", None, 1, ["silu"]):
        with pytest.raises(InputError, match=r"field 'hidden_act' .* supported: silu"):
            read_hf_config(write(tmp_path / "act.json", dict(QWEN, hidden_act=bad)))


@pytest.mark.parametrize("act, mlp", [(None, "swiglu"), ("silu", "swiglu"), ("swish", "swiglu"), ("gelu", "geglu"),
                                      ("gelu_pytorch_tanh", "geglu"), ("gelu_new", "geglu"),
                                      ("quick_gelu", "geglu")])
def test_a_gated_family_gates_with_the_activation_it_names(tmp_path, act, mlp):
    cfg = dict(QWEN) if act is None else dict(QWEN, hidden_act=act)
    assert read_hf_config(write(tmp_path / "config.json", cfg)).mlp == mlp


def test_a_gelu_qwen2_is_exported_as_a_geglu(run_cli, tmp_path):
    """Before, hidden_act gelu on a qwen2 config still gave a SwiGLU and Megatron's --swiglu."""
    code, out, err = run_cli("export", "--hf-config", write(tmp_path / "config.json", dict(QWEN, hidden_act="gelu")),
                             "--gpus", "8", "--to", "megatron", "-o", str(tmp_path / "out"))
    assert code == 0, err
    script = next((tmp_path / "out").rglob("*.sh")).read_text()
    assert "--quick-geglu" in script and "--swiglu" not in script


def test_the_gemmas_read_the_field_their_mlp_reads(tmp_path):
    """Gemma reads hidden_act (a legacy "gelu" is its tanh GELU), Gemma 2 and 3 hidden_activation;
    the default is GELU, a GeGLU."""
    gemma = dict(GEMMA2, model_type="gemma", num_key_value_heads=8)
    assert read_hf_config(write(tmp_path / "config.json", gemma)).mlp == "geglu"
    assert read_hf_config(write(tmp_path / "config.json", dict(gemma, hidden_act="gelu"))).mlp == "geglu"
    assert read_hf_config(write(tmp_path / "config.json", dict(gemma, hidden_act="silu"))).mlp == "swiglu"
    assert read_hf_config(write(tmp_path / "config.json", GEMMA2)).mlp == "geglu"
    assert read_hf_config(write(tmp_path / "config.json", dict(GEMMA2, hidden_activation="silu"))).mlp == "swiglu"
    with pytest.raises(InputError, match=r"field 'hidden_activation' 'relu' is not supported for a gemma2 model"):
        read_hf_config(write(tmp_path / "config.json", dict(GEMMA2, hidden_activation="relu")))
    wrapped = {"model_type": "gemma3", "text_config": {"hidden_activation": "tanh"}}
    with pytest.raises(InputError, match=r"field 'hidden_activation' 'tanh' is not supported for a gemma3_text"):
        read_hf_config(write(tmp_path / "config.json", wrapped))


def test_gpt_oss_takes_only_its_own_activation(tmp_path):
    assert read_hf_config(write(tmp_path / "config.json", dict(GPT_OSS, hidden_act="silu"))).mlp == "swiglu"
    with pytest.raises(InputError, match=r"field 'hidden_act' 'gelu' is not supported for a gpt_oss model; "
                                         r"supported: silu"):
        read_hf_config(write(tmp_path / "config.json", dict(GPT_OSS, hidden_act="gelu")))


# --- refusals -----------------------------------------------------------------------------------

def test_a_path_that_does_not_exist_says_so(run_cli, tmp_path):
    for missing in (tmp_path / "nothing", tmp_path / "nothing" / "config.json", tmp_path / "nothing" / ""):
        err = refused(run_cli, "recommend", "--hf-config", str(missing), "--gpus", "8")
        assert "does not exist" in err and "folder" not in err.split("does not exist")[0], err
    (tmp_path / "empty").mkdir()
    err = refused(run_cli, "recommend", "--hf-config", str(tmp_path / "empty"), "--gpus", "8")
    assert "is a folder without a config.json" in err
    with pytest.raises(InputError, match="not a valid path"):
        build_job(hf_config="a\0b", gpus=8)


@pytest.mark.parametrize("value", ["absent", None])
def test_a_missing_model_type_says_it_is_missing_and_lists_the_supported(run_cli, tmp_path, value):
    cfg = {k: v for k, v in QWEN.items() if k != "model_type"}
    if value is None:
        cfg["model_type"] = None
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "8")
    assert "missing field 'model_type'" in err and "supported: " in err and "llama" in err and "qwen2" in err
    assert "None" not in err


def test_a_peft_adapter_given_for_the_model_is_told_to_give_its_base_model(run_cli, tmp_path):
    """A fine-tuner points --hf-config at their LoRA output (adapter_config.json, no config.json):
    the folder was 'a folder without a config.json' and the file 'missing field model_type', with
    the model types listed, as though the file were a broken model config. Each now says it is a
    PEFT adapter, names the base model it was trained on, and what to give instead."""
    folder = tmp_path / "my-lora"
    folder.mkdir()
    adapter = write(folder / "adapter_config.json", {"base_model_name_or_path": "meta-llama/Llama-3.1-8B",
                                                     "peft_type": "LORA", "r": 32, "lora_alpha": 64,
                                                     "task_type": "CAUSAL_LM"})
    for given in (str(folder), adapter):
        err = refused(run_cli, "recommend", "--hf-config", given, "--gpus", "8")
        assert "PEFT adapter" in err and "'meta-llama/Llama-3.1-8B'" in err, err
        assert "--lora-rank 32" in err and "base model's config.json" in err, err
        assert "supported:" not in err and "without a config.json" not in err, err
    # an adapter that names no base model is still told what it is
    write(folder / "adapter_config.json", {"peft_type": "LORA"})
    err = refused(run_cli, "recommend", "--hf-config", str(folder), "--gpus", "8")
    assert "PEFT adapter" in err and "base model's config.json" in err and "None" not in err, err


LLAMA3_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}


@pytest.mark.parametrize("typo, field", [("num_key_value_head", "num_key_value_heads"),
                                         ("num_hiden_layers", "num_hidden_layers"),
                                         ("intermediate_sise", "intermediate_size"),
                                         ("tie_word_embedding", "tie_word_embeddings")])
def test_a_misspelt_field_is_refused_naming_the_one_meant(run_cli, tmp_path, typo, field):
    """A hand-written config.json with num_key_value_head (one letter short) was read as Llama 3 8B
    with 32 KV heads, the config class's default: 8.8B parameters, and no word of it. A key a typo
    away from a field the file leaves out is refused, naming the field meant."""
    cfg = {(typo if k == field else k): v for k, v in LLAMA3_8B.items()}
    cfg.setdefault(typo, False)
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "8")
    assert f"field '{typo}' is not a llama config field" in err and f"did you mean '{field}'?" in err
    # written right, the same file reads as Llama 3 8B
    assert read_hf_config(write(tmp_path / "ok" / "config.json", LLAMA3_8B)).kv_heads == 8


# Written after the published config.json files of mistralai/Mixtral-8x7B-v0.1, Qwen/Qwen3-30B-A3B,
# deepseek-ai/DeepSeek-V3 (auto_map and quantization_config left out: the reader reads neither's keys)
# and openai/gpt-oss-120b (quantization_config left out) -- typed by hand, not downloaded (no access
# to the Hub here), so a key the published file has and these lack would go unchecked
MIXTRAL_8X7B = {"architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
                "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
                "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
                "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
                "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
                "router_aux_loss_coef": 0.02, "sliding_window": None, "tie_word_embeddings": False,
                "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0", "use_cache": True, "vocab_size": 32000}
QWEN3_30B_A3B = {"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                 "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
                 "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
                 "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
                 "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": True,
                 "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
                 "num_key_value_heads": 4, "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_scaling": None,
                 "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": None,
                 "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
                 "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
               "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 3,
               "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432,
               "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v3",
               "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
               "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 128, "num_experts_per_tok": 8,
               "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
               "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
               "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                "original_max_position_embeddings": 4096, "type": "yarn"},
               "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": True,
               "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
               "transformers_version": "4.33.1", "use_cache": True, "v_head_dim": 128, "vocab_size": 129280}
GPT_OSS_120B = {"architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
                "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
                "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
                "layer_types": ["sliding_attention", "full_attention"] * 18, "max_position_embeddings": 131072,
                "model_type": "gpt_oss", "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 36,
                "num_key_value_heads": 8, "num_local_experts": 128, "output_router_logits": False,
                "pad_token_id": 199999, "rms_norm_eps": 1e-05,
                "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                 "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
                "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
                "tie_word_embeddings": False, "transformers_version": "4.55.0.dev0", "use_cache": True,
                "vocab_size": 201088}


def _maverick():
    from catalog_configs import CATALOG_CONFIGS
    return CATALOG_CONFIGS["llama-4-maverick"]


def _misspell(cfg: dict, field: str, typo: str) -> dict:
    """``cfg`` with ``field`` written as ``typo`` (in its text_config where it has one)."""
    if "text_config" in cfg:
        return dict(cfg, text_config=_misspell(cfg["text_config"], field, typo))
    return {(typo if k == field else k): v for k, v in cfg.items()}


@pytest.mark.parametrize("base, field, typo", [
    # each was read without a word: Maverick with the default 16 experts (not 128), DeepSeek-V3
    # with a full-rank query (q_lora_rank 0) and its router's default groups, a Qwen3 whose
    # sliding layers started at the default 28th; or refused as a missing field without the
    # typo that was its cause
    (_maverick, "num_local_experts", "num_local_expert"),
    (lambda: DEEPSEEK_V3, "q_lora_rank", "q_lora_rnak"),
    (lambda: DEEPSEEK_V3, "topk_group", "topk_groups"),
    (lambda: DEEPSEEK_V3, "n_routed_experts", "n_routed_expert"),
    (lambda: QWEN3_30B_A3B, "num_experts_per_tok", "num_experts_per_tokk"),
    (lambda: QWEN3_30B_A3B, "norm_topk_prob", "norm_topk_prb"),
    (lambda: MIXTRAL_8X7B, "num_local_experts", "num_local_expert"),
    (lambda: dict(QWEN, use_sliding_window=True, sliding_window=4096, max_window_layers=14), "max_window_layers",
     "max_window_layer"),
])
def test_a_misspelt_moe_mla_or_window_field_is_refused_naming_the_one_meant(run_cli, tmp_path, base, field, typo):
    """refuse_misspelt checked only the fields every model_type shares, so a typo of an expert,
    router, multi-latent-attention or sliding-window field was ignored and its config class's
    default taken (or, for a required one, refused as missing without naming the typo)."""
    cfg = _misspell(base(), field, typo)
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "8")
    assert f"field '{typo}' is not a" in err and f"did you mean '{field}'?" in err, err


@pytest.mark.parametrize("cfg, experts, top_k", [(MIXTRAL_8X7B, 8, 2), (QWEN3_30B_A3B, 128, 8), (DEEPSEEK_V3, 256, 8),
                                                 (GPT_OSS_120B, 128, 4)])
def test_published_moe_configs_are_read_not_taken_for_typos(tmp_path, cfg, experts, top_k):
    """The typo check leaves every field of a published file alone: experts_per_token beside
    num_experts_per_tok (gpt-oss), qk_nope_head_dim beside qk_rope_head_dim (DeepSeek-V3),
    use_sliding_window beside sliding_window (Qwen3)."""
    model = read_hf_config(write(tmp_path / "config.json", cfg))
    assert (model.experts, model.top_k) == (experts, top_k)


def test_inconsistent_heads_are_named_in_the_files_words(run_cli, tmp_path):
    path = write(tmp_path / "config.json", dict(QWEN, num_key_value_heads=5))
    err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
    assert "num_attention_heads (28) must be a multiple of num_key_value_heads (5)" in err
    assert "Value error" not in err and "kv_heads (" not in err
    # a count the config class supplies is said to be the class's default
    cfg = {k: v for k, v in QWEN.items() if k != "num_key_value_heads"}
    with pytest.raises(InputError, match=r"multiple of num_key_value_heads \(32\) \(num_key_value_heads 32: the "
                                         r"qwen2 config class's default"):
        read_hf_config(write(tmp_path / "config.json", cfg))


def test_more_experts_per_token_than_experts_names_both_fields(tmp_path):
    with pytest.raises(InputError) as e:
        read_hf_config(write(tmp_path / "config.json", dict(GPT_OSS, num_experts_per_tok=33)))
    msg = str(e.value)
    assert "num_experts_per_tok (33)" in msg and "num_local_experts (32)" in msg and "Value error" not in msg


def test_too_deep_a_config_names_the_file(run_cli, tmp_path):
    path = write(tmp_path / "deep.json", "[" * 100_000 + "]" * 100_000)
    err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
    assert path in err and "nests too deeply" in err
    path = write(tmp_path / "deep2.json", '{"model_type": "qwen2", "rope_scaling": ' + "{\"a\": " * 100_000 + "1"
                 + "}" * 100_001)
    assert path in refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")


def test_a_huge_bad_value_is_quoted_short(tmp_path):
    """A refusal quotes a bad value in a few dozen characters, not the whole of a 1M-item list."""
    with pytest.raises(InputError) as e:
        read_hf_config(write(tmp_path / "config.json", dict(QWEN, hidden_size=list(range(1_000_000)))))
    assert "'hidden_size'" in str(e.value) and len(str(e.value)) < 300


def test_a_key_given_twice_is_refused_naming_both_values(run_cli, tmp_path):
    """json.loads keeps the last of two equal keys, as transformers does: a config.json giving
    hidden_size 4096 and then 8192 was sized silently as an 8192-wide model. Refused, in nested
    objects too, naming where the key lies."""
    body = json.dumps(QWEN)[1:-1]
    path = write(tmp_path / "config.json", '{"hidden_size": 4096, ' + body + "}")
    err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
    assert f"{path}: key 'hidden_size' given twice (4096, 3584)" in err and "once" in err
    nested = {"rope_scaling": '{"rope_type": "yarn", "factor": 4.0, "factor": 8.0}',
              "text_config": '{"hidden_size": 1, "hidden_size": 2}'}
    for key, obj in nested.items():
        path = write(tmp_path / key / "config.json", "{" + body + f', "{key}": {obj}' + "}")
        err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
        assert f"key '{key}." in err and "given twice" in err, err
    # the same key in two different objects is no repeat
    path = write(tmp_path / "ok" / "config.json", dict(QWEN, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                                            "hidden_size": 1}))
    assert read_hf_config(path).hidden == 3584


def test_two_names_of_one_field_with_different_values_are_refused(run_cli, tmp_path):
    """MixtralConfig and GptOssConfig read num_experts as num_local_experts (and Qwen3-MoE the
    other way): a file giving both, 8 and 16, was sized as 8 experts whatever transformers would
    build. Refused naming both; the same value under both names is one setting."""
    path = write(tmp_path / "a" / "config.json", dict(GPT_OSS, num_experts=64))
    err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
    assert f"{path}: fields 'num_local_experts' (32) and 'num_experts' (64)" in err and "give one" in err
    assert read_hf_config(write(tmp_path / "b" / "config.json", dict(GPT_OSS, num_experts=32))).experts == 32


def test_a_head_dim_of_zero_is_refused_not_taken_as_left_out(run_cli, tmp_path):
    """transformers keeps a given head_dim (LlamaConfig: hidden_size // heads only where it is
    None), so head_dim 0 builds zero-width attention; it was sized as hidden / heads = 128."""
    path = write(tmp_path / "config.json", dict(LLAMA, head_dim=0))
    err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
    assert f"{path}: field 'head_dim' must be an integer from 1" in err and "got 0" in err
    assert read_hf_config(write(tmp_path / "n" / "config.json", dict(LLAMA, head_dim=None))).heads == 32


def test_a_rope_scaling_without_the_factor_it_needs_is_refused(run_cli, tmp_path):
    """transformers requires a factor for linear, dynamic, yarn and llama3 RoPE scaling; left out
    (or null) it was read as 0 and the Megatron export wrote --rope-scaling-factor 0.0."""
    for kind in ("llama3", "yarn"):
        for scaling in ({"rope_type": kind}, {"rope_type": kind, "factor": None}):
            path = write(tmp_path / kind / "config.json", dict(LLAMA, rope_scaling=scaling))
            err = refused(run_cli, "export", "--hf-config", path, "--gpus", "8", "--to", "megatron",
                          "-o", str(tmp_path / "out"))
            assert f"rope_scaling of rope_type '{kind}' needs a factor" in err, err
    assert not (tmp_path / "out").exists()
    # longrope's scaling is its per-dimension lists: no factor needed
    longrope = {"rope_type": "longrope", "short_factor": [1.0], "long_factor": [2.0]}
    assert read_hf_config(write(tmp_path / "lr" / "config.json", dict(LLAMA, rope_scaling=longrope))).rope_factor == 0


# --- the context the model was trained for -------------------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}


def test_a_left_out_max_position_embeddings_takes_the_config_class_default_and_says_so(run_cli, tmp_path):
    """Without max_position_embeddings the trained context read as 0, 'unknown', and the warning
    for a longer sequence (warn.past-trained-context) never fired; transformers reads LlamaConfig's
    2048 there. The default is taken and said; null (transformers keeps None) is said to be
    unknown; zero or a negative count is refused."""
    path = write(tmp_path / "config.json", LLAMA)
    code, out, err = run_cli("recommend", "--hf-config", path, "--gpus", "8", "--seq-len", "8192", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert any("longer than the 2,048 positions" in w for w in d["warnings"]), d["warnings"]
    assert any("no max_position_embeddings" in a and "2,048" in a and "LlamaConfig" in a for a in d["assumptions"])
    assert read_hf_config(write(tmp_path / "q" / "config.json", QWEN)).max_positions == 32768
    # given: no assumption line, and the warning reads the file's count
    given = write(tmp_path / "g" / "config.json", dict(LLAMA, max_position_embeddings=8192))
    code, out, err = run_cli("recommend", "--hf-config", given, "--gpus", "8", "--seq-len", "8192", "--format", "json")
    d = json.loads(out)
    assert code == 0 and not any("positions" in w for w in d["warnings"])
    assert not any("max_position_embeddings" in a for a in d["assumptions"])
    # null: unknown, and said so
    null = write(tmp_path / "n" / "config.json", dict(LLAMA, max_position_embeddings=None))
    code, out, err = run_cli("recommend", "--hf-config", null, "--gpus", "8", "--seq-len", "8192", "--format", "json")
    d = json.loads(out)
    assert code == 0 and any("is null" in a and "unknown" in a for a in d["assumptions"])
    for bad in (0, -1):
        path = write(tmp_path / f"b{bad}" / "config.json", dict(LLAMA, max_position_embeddings=bad))
        err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
        assert "'max_position_embeddings' must be an integer from 1" in err
    # every supported model type has its class's default
    from shardwise.kb.hf_config.defaults import MAX_POSITIONS_DEFAULT
    from shardwise.kb.hf_config.model_types import SUPPORTED
    assert set(MAX_POSITIONS_DEFAULT) == set(SUPPORTED)


# --- model types added with their measured layers (OLMo 2, SmolLM3, GLM-4.5) ------------------

GLM45_AIR = {"model_type": "glm4_moe", "hidden_size": 4096, "intermediate_size": 10944, "num_hidden_layers": 46,
             "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151552,
             "n_routed_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 1408,
             "attention_bias": True, "partial_rotary_factor": 0.5, "tie_word_embeddings": False}


def test_glm45_is_read_as_deepseeks_moe_under_grouped_query_attention(tmp_path):
    """Left out, Glm4MoeConfig's defaults apply: one shared expert, one leading dense layer, no
    q/k norms (GLM-4.5-Air); GLM-4.5 turns the norms on. The router keeps DeepSeek-V3's
    correction bias and the attention its q, k, v biases."""
    air = read_hf_config(write(tmp_path / "air" / "config.json", GLM45_AIR))
    assert (air.experts, air.top_k, air.expert_ffn, air.shared_experts, air.first_dense) == (128, 8, 1408, 1, 1)
    assert air.router_bias and air.qkv_bias and not air.qk_norm and not air.is_mla
    full = read_hf_config(write(tmp_path / "full" / "config.json",
                                dict(GLM45_AIR, use_qk_norm=True, first_k_dense_replace=3)))
    assert full.qk_norm and not full.qk_norm_full and full.first_dense == 3


def test_olmo2_norms_whole_projections(tmp_path):
    """OLMo 2's q_norm and k_norm are RMSNorms over all heads (num_heads x head_dim weights),
    not per head (modeling_olmo2.py Olmo2Attention)."""
    cfg = {"model_type": "olmo2", "hidden_size": 512, "intermediate_size": 1792, "num_hidden_layers": 1,
           "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1024}
    m = read_hf_config(write(tmp_path / "config.json", cfg))
    assert m.qk_norm and m.qk_norm_full and m.kv_heads == 2


def test_a_smollm3_with_sliding_windows_is_refused(run_cli, tmp_path):
    """SmolLM3 slides only its layers without RoPE, and only with use_sliding_window: a pattern
    the estimate does not build, so it is refused rather than timed as full attention."""
    cfg = {"model_type": "smollm3", "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
           "num_attention_heads": 16, "vocab_size": 128256, "use_sliding_window": True, "sliding_window": 4096}
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "8")
    assert "use_sliding_window" in err and "smollm3" in err
    ok = read_hf_config(write(tmp_path / "ok" / "config.json", dict(cfg, use_sliding_window=False)))
    assert ok.kv_heads == 4 and ok.rope_theta == 2e6 and not ok.sliding_window   # SmolLM3Config's defaults


def test_glm45_megatron_export_builds_its_rope_and_routing(run_cli, tmp_path):
    """Megatron's command line gets GLM's partial RoPE (--rotary-percent, from
    partial_rotary_factor) and its routed_scaling_factor (--moe-router-topk-scaling-factor);
    left out, Glm4MoeConfig's 1.0 scales nothing. Its one group limits nothing: no group flags,
    and no caveat asking for them."""
    for name, cfg, scale in (("air", GLM45_AIR, None), ("scaled", dict(GLM45_AIR, routed_scaling_factor=2.5), "2.5")):
        code, out, err = run_cli("export", "--hf-config", write(tmp_path / name / "config.json", cfg), "--gpus", "64",
                                 "--to", "megatron", "-o", str(tmp_path / name / "out"))
        assert code == 0, err
        text = out + "".join(p.read_text() for p in (tmp_path / name / "out").rglob("*") if p.is_file())
        assert "--rotary-percent 0.5" in text and "--moe-router-num-groups" not in text
        assert ("--moe-router-topk-scaling-factor" in text) == (scale is not None)
        assert scale is None or f"--moe-router-topk-scaling-factor {scale}" in text


def test_deepseek_routing_is_read_with_the_config_classes_defaults(run_cli, tmp_path):
    """n_group, topk_group and routed_scaling_factor left out take DeepseekV3Config's 8, 4 and 2.5
    and DeepseekV2Config's none and 1.0 (topk_method greedy, which limits no groups); DeepSeek-V2
    always weighs by the softmax over all experts. A topk_method transformers' V2 router has no
    branch for, or groups that do not divide the experts, are refused in the file's words."""
    v3 = {"model_type": "deepseek_v3", "hidden_size": 1024, "intermediate_size": 2048, "num_hidden_layers": 4,
          "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1024, "n_routed_experts": 64,
          "num_experts_per_tok": 8,
          "moe_intermediate_size": 256, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
          "v_head_dim": 32}
    m = read_hf_config(write(tmp_path / "v3" / "config.json", v3))
    assert (m.router_groups, m.router_group_topk, m.router_scale, m.router_topk_method) == (8, 4, 2.5, "noaux_tc")
    assert m.group_limited and not m.router_pre_softmax
    v2 = dict(v3, model_type="deepseek_v2")
    m = read_hf_config(write(tmp_path / "v2" / "config.json", v2))
    assert (m.router_scale, m.router_topk_method, m.group_limited, m.router_pre_softmax) == (1.0, "greedy", False, True)
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "bad" / "config.json",
                                                             dict(v2, topk_method="noaux_tc")), "--gpus", "8")
    assert "topk_method" in err and "group_limited_greedy" in err
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "odd" / "config.json",
                                                             dict(v3, n_group=6, topk_group=2)), "--gpus", "8")
    assert "n_group (6)" in err and "divides" in err


def test_catalog_and_config_json_refuse_bad_router_groups_in_one_message(run_cli, tmp_path):
    """One check (ModelSpec's) refuses groups that do not divide the experts, or a topk_group
    past n_group, wherever the model comes from: GLM-4.5's catalog entry and its own config.json
    (160 routed experts, topk_method noaux_tc) with the same bad groups get the same line, naming
    both values and what is allowed."""
    from pydantic import ValidationError
    from shardwise.kb import catalog
    from shardwise.kb.schema import ModelSpec
    from catalog_configs import CATALOG_CONFIGS
    entry = catalog.model("glm-4.5").model_dump()
    # (160, 1): groups of one expert, which noaux_tc's sum of each group's top two cannot score
    for groups, topk in ((6, 2), (8, 9), (8, 0), (160, 1)):
        with pytest.raises(ValidationError) as e:
            ModelSpec(**dict(entry, router_groups=groups, router_group_topk=topk))
        msg = e.value.errors()[0]["msg"].removeprefix("Value error, ")
        path = write(tmp_path / f"{groups}-{topk}" / "config.json",
                     dict(CATALOG_CONFIGS["glm-4.5"], n_group=groups, topk_group=topk))
        err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
        assert err.endswith(msg), (err, msg)
        assert f"n_group ({groups}) and topk_group ({topk})" in msg and "160 routed experts" in msg


# --- MoE model types added with their measured layers (OLMoE, Granite MoE) ---------------------

OLMOE = {"model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16,
         "num_attention_heads": 16, "vocab_size": 50304}


def test_olmoe_is_mixtrals_experts_under_whole_width_qk_norms(tmp_path):
    """Left out, OlmoeConfig's defaults apply: MHA, 64 experts, 8 a token, 4,096 positions; the
    experts are intermediate_size wide and no expert is shared. num_local_experts is read as
    num_experts (OlmoeConfig.attribute_map)."""
    m = read_hf_config(write(tmp_path / "config.json", OLMOE))
    assert (m.experts, m.top_k, m.expert_ffn, m.shared_width, m.kv_heads) == (64, 8, 1024, 0, 16)
    assert m.qk_norm and m.qk_norm_full and m.max_positions == 4096
    alias = read_hf_config(write(tmp_path / "alias" / "config.json", dict(OLMOE, num_local_experts=32)))
    assert alias.experts == 32


def test_olmoe_refuses_what_its_layer_adds_and_the_estimate_does_not_build(run_cli, tmp_path):
    """clip_qkv's in-place clamps keep a copy of q, k and v (measured: +2 (q + 2 kv) bytes a
    token), and a sliding_window reaches flash attention: refused, not sized as without."""
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "c" / "config.json", dict(OLMOE, clip_qkv=8.0)),
                  "--gpus", "8")
    assert "clip_qkv" in err and "olmoe" in err and "null" in err
    err = refused(run_cli, "recommend", "--hf-config",
                  write(tmp_path / "w" / "config.json", dict(OLMOE, sliding_window=4096)), "--gpus", "8")
    assert "sliding_window" in err and "olmoe" in err
    ok = read_hf_config(write(tmp_path / "ok" / "config.json", dict(OLMOE, clip_qkv=None)))
    assert ok.experts == 64


def test_granite_moe_reads_granites_experts_and_its_shared_variant_adds_one_mlp(tmp_path):
    """GraniteMoeConfig's defaults (8 experts, 2 a token) where the file leaves them out; its
    num_experts is no alias (transformers does not read it either). GraniteMoeShared is the same
    layer plus one ungated shared MLP of shared_intermediate_size, none where that is 0 (its
    default)."""
    cfg = {"model_type": "granitemoe", "hidden_size": 1024, "intermediate_size": 512, "num_hidden_layers": 24,
           "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 49155}
    m = read_hf_config(write(tmp_path / "g" / "config.json", dict(cfg, num_experts=32)))
    assert (m.experts, m.top_k, m.expert_ffn, m.shared_width) == (8, 2, 512, 0)
    shared = read_hf_config(write(tmp_path / "s" / "config.json",
                                  dict(cfg, model_type="granitemoeshared", shared_intermediate_size=1024)))
    assert (shared.shared_experts, shared.shared_width, shared.shared_gate) == (1, 1024, False)
    none = read_hf_config(write(tmp_path / "n" / "config.json", dict(cfg, model_type="granitemoeshared")))
    assert none.shared_width == 0


@pytest.mark.parametrize("mt,why", [("granitemoehybrid", "Mamba-2 state-space"),
                                    ("qwen3_next", "Gated DeltaNet linear-attention"),
                                    ("minimax", "lightning (linear) attention")])
def test_hybrid_moe_types_are_refused_saying_which_layers_are_not_modelled(run_cli, tmp_path, mt, why):
    cfg = {"model_type": mt, "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16,
           "num_attention_heads": 16, "vocab_size": 50304}
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "8")
    assert why in err and "not modelled" in err and "supported: " in err and "olmoe" in err


def test_olmoe_and_granite_moe_exports_name_what_megatron_does_not_build(run_cli, tmp_path):
    """OLMoE's router weighs the top k by the softmax over all experts (--moe-router-pre-softmax,
    written); Megatron has no Granite multipliers: the export says so; Accelerate's FSDP wraps each family's own decoder layer."""
    granite = {"model_type": "granitemoe", "hidden_size": 1536, "intermediate_size": 512, "num_hidden_layers": 32,
               "num_attention_heads": 24, "num_key_value_heads": 8, "vocab_size": 49155, "num_local_experts": 40,
               "num_experts_per_tok": 8}
    for name, cfg, words, layer in (("olmoe", OLMOE, "--moe-router-pre-softmax", "OlmoeDecoderLayer"),
                                    ("granitemoe", granite, "multipliers", "GraniteMoeDecoderLayer")):
        for to, want in (("megatron", words), ("accelerate", layer)):
            out_dir = tmp_path / f"{name}-{to}"
            code, out, err = run_cli("export", "--hf-config", write(tmp_path / name / "config.json", cfg), "--gpus",
                                     "8", "--to", to, "-o", str(out_dir))
            assert code == 0, err
            text = out + "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file())
            assert want in text, (name, to)


# --- Llama 4 (llama4_text, and the llama4 multimodal wrapper) --------------------------------

LLAMA4_MAVERICK = {"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
                   "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                   "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048, "num_local_experts": 128,
                   "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "use_qk_norm": False,
                   "max_position_embeddings": 1048576}


def test_llama4_lora_under_peft_is_refused_saying_why(run_cli, tmp_path):
    """PEFT 0.21.2's all-linear wraps Llama4Router, an nn.Linear whose forward returns a tuple,
    and LoRA's forward fails on it at the first step (measured: AttributeError on a 2-layer
    llama4_text model): refused on the PEFT frameworks, not sized as if it ran."""
    path = write(tmp_path / "config.json", LLAMA4_MAVERICK)
    for training in ("lora", "qlora"):
        err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "64", "--training", training)
        assert "Llama4Router" in err and "tuple" in err and "allowed:" in err, err
    code, out, err = run_cli("recommend", "--hf-config", path, "--gpus", "64", "--training", "lora",
                             "--framework", "megatron")
    assert code == 0, err


def test_llama4_flash_attention_2_under_transformers_is_refused(run_cli, tmp_path):
    """transformers' Llama 4 has no FlashAttention-2 path (_supports_flash_attn False): a job on
    the Trainer or DeepSpeed asking for it is refused, not timed as a kernel that never runs;
    Megatron's own attention takes it."""
    path = write(tmp_path / "config.json", LLAMA4_MAVERICK)
    for framework in ("hf", "deepspeed"):
        err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "64", "--training", "finetune",
                      "--framework", framework, "--attention", "flash2")
        assert "--attention flash2" in err and "_supports_flash_attn" in err and "allowed: flash, sdpa, eager" in err
    code, out, err = run_cli("recommend", "--hf-config", path, "--gpus", "64", "--framework", "megatron",
                             "--attention", "flash2")
    assert code == 0, err


def test_llama4_interleaved_moe_layers_fall_on_every_stage_and_megatron_builds_them(run_cli, tmp_path):
    """Maverick's MoE layers are every other one (1, 3, ...): each of 4 pipeline stages holds 6 of
    its 12 layers as MoE (a leading-dense reading would put the 24 dense layers on stages 0-1),
    and the Megatron export builds the same pattern with --moe-layer-freq's list form (its integer
    form would make layer 0 MoE); Accelerate wraps Llama4TextDecoderLayer."""
    from shardwise.kb.stages import layers_on_stage
    m = read_hf_config(write(tmp_path / "config.json", LLAMA4_MAVERICK))
    assert [layers_on_stage(m, 4, s) for s in range(4)] == [(6, 6)] * 4
    # pp 5 splits 48 + 2 (the embedding takes a layer's place on stage 0): layers 0-8, MoE 1, 3, 5, 7
    assert layers_on_stage(m, 3, 0) == (8, 8) and layers_on_stage(m, 5, 0) == (5, 4)
    for to, want in (("megatron", "([0]*1+[1])*24"), ("megatron", "sigmoid"), ("accelerate", "Llama4TextDecoderLayer")):
        out_dir = tmp_path / f"out-{to}"
        code, out, err = run_cli("export", "--hf-config", str(tmp_path / "config.json"), "--gpus", "128", "--to", to,
                                 "-o", str(out_dir))
        assert code == 0, err
        text = out + "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file())
        assert want in text, (to, want)


def test_llama4_on_transformers_keeps_every_experts_copy_of_each_token(tmp_path):
    """transformers' Llama4TextMoe runs every token through all E experts, scaled by a router
    score that is 0 off the top k: the routed part keeps E copies a token (4 h + 8 F each,
    measured), not top-1's one. Megatron routes top-1; the same layout there keeps one copy."""
    from shardwise.kb.layout import Layout
    from shardwise.kb.memory import activations as act
    from shardwise.kb.schema import TrainingSpec
    m = read_hf_config(write(tmp_path / "config.json", dict(LLAMA4_MAVERICK, num_local_experts=16)))
    lay = Layout(mbs=1, recompute="none", zero=1)
    hf = act.layer_bytes_per_token(m, TrainingSpec(framework="hf", training="finetune"), lay, True, 4096)
    meg = act.layer_bytes_per_token(m, TrainingSpec(framework="megatron", training="finetune"), lay, True, 4096)
    copy = 4 * m.hidden + 8 * m.expert_ffn
    assert hf - meg > 15 * copy - 8 * m.hidden


# --- Kimi K2: DeepSeek-V3's config.json under model_type kimi_k2 -------------------------------

def test_kimi_k2_is_read_as_deepseek_v3_and_says_so(run_cli, tmp_path):
    """moonshotai/Kimi-K2-Base's config.json names model_type kimi_k2 but is DeepSeek-V3's file
    field for field: read as deepseek_v3 (the same model its catalog entry is), with a line among
    the answer's assumptions saying so."""
    from catalog_configs import CATALOG_CONFIGS
    path = write(tmp_path / "Kimi-K2-Base" / "config.json", CATALOG_CONFIGS["kimi-k2"])
    m = read_hf_config(path)
    assert (m.family, m.experts, m.heads, m.first_dense, m.vocab) == ("deepseek_v3", 384, 64, 1, 163840)
    assert m.is_mla and m.router_bias and any("kimi_k2" in n for n in m.reading_notes)
    code, out, err = run_cli("recommend", "--hf-config", path, "--gpus", "256")
    assert code == 0 and "kimi_k2" in out, err


@pytest.mark.parametrize("field,value", [("qk_layernorm", True), ("moe_layer_freq", 2), ("scoring_func", "softmax")])
def test_a_kimi_k2_file_that_is_not_deepseek_v3s_is_refused(run_cli, tmp_path, field, value):
    """A kimi_k2 file with a field DeepSeek-V3's config.json does not have (a published variant
    with grouped-query attention adds qk_layernorm), or with a value its modeling code builds
    differently from transformers' DeepseekV3 (MoE every second layer, a softmax router), is
    not DeepSeek-V3: refused naming the field, not sized as it."""
    from catalog_configs import CATALOG_CONFIGS
    cfg = dict(CATALOG_CONFIGS["kimi-k2"], **{field: value})
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "256")
    assert field in err and "kimi_k2" in err


@pytest.mark.parametrize("entry,model_type", [("deepseek-v2-lite", "deepseek_v2"), ("kimi-k2", "deepseek_v3")])
def test_a_deepseek_file_with_moe_every_nth_layer_is_refused_not_sized_all_moe(run_cli, tmp_path, entry, model_type):
    """DeepSeek's own modeling_deepseek.py (the file's auto_map) and vLLM make a layer MoE only
    where layer_idx % moe_layer_freq == 0: a DeepSeek-V2/V3 file with moe_layer_freq 2 describes
    half as many MoE layers, and was sized (and exported) as every layer MoE, as a kimi_k2 file
    with it is not. Refused naming the field and what is supported; 1 is read as before."""
    from catalog_configs import CATALOG_CONFIGS
    cfg = dict(CATALOG_CONFIGS[entry], model_type=model_type)      # Kimi K2's file is DeepSeek-V3's
    ok = read_hf_config(write(tmp_path / "ok" / "config.json", dict(cfg, moe_layer_freq=1)))
    assert ok.moe_layers == ok.layers - ok.first_dense
    err = refused(run_cli, "memory", "--hf-config", write(tmp_path / "bad" / "config.json", dict(cfg, moe_layer_freq=2)),
                  "--gpus", "256", "--layout", "tp=8,pp=8,ep=4")
    assert "moe_layer_freq" in err and "2" in err and model_type in err and "supported: 1" in err


def test_a_multi_token_prediction_layer_the_estimate_leaves_out_is_said(run_cli, tmp_path):
    """DeepSeek-V3's config.json (num_nextn_predict_layers 1) describes a multi-token-prediction
    module -- one more MoE decoder layer and a 2h x h projection, about 11.6B parameters, with its
    own pass through the output head -- that transformers' DeepseekV3ForCausalLM does not build
    and the estimate (and its Megatron export) leaves out. The answer must say so, not drop the
    field silently; a file without one (Kimi K2: 0) gets no such line."""
    from catalog_configs import CATALOG_CONFIGS
    v3 = dict(CATALOG_CONFIGS["kimi-k2"], model_type="deepseek_v3", num_nextn_predict_layers=1,  # V3's shape
              n_routed_experts=256, num_attention_heads=128, num_key_value_heads=128)
    job = ("--gpus", "256", "--layout", "tp=8,pp=8,ep=4", "--format", "json")
    code, out, err = run_cli("memory", "--hf-config", write(tmp_path / "v3" / "config.json", v3), *job)
    assert code == 0, err
    said = [a for a in json.loads(out)["assumptions"] if "num_nextn_predict_layers" in a]
    assert len(said) == 1 and "not sized" in said[0] and "11.6B" in said[0], said
    code, out, err = run_cli("memory", "--hf-config", write(tmp_path / "k2" / "config.json", CATALOG_CONFIGS["kimi-k2"]),
                             *job)
    assert code == 0 and "num_nextn_predict_layers" not in out, err


def test_llama4_expert_parallel_under_deepspeed_routes_top_k_not_every_expert(run_cli, tmp_path):
    """Only transformers' own Llama4TextMoe runs every token through every expert. With EP > 1
    the DeepSpeed path's experts are DeepSpeed's MoE layer (no AutoEP preset for llama4: the
    export says deepspeed.moe.layer.MoE), which routes each token to its top 1: the step must not
    price 16 expert copies a token there. Scout-like, 16 experts, 64 H100s, 8K: EP 16 was
    estimated slower than EP 1 (26.3 s vs 25.8 s), though each rank computes 1/16 of the experts'
    work; at EP 1 (transformers' block) the 16 copies stay."""
    path = write(tmp_path / "config.json", dict(LLAMA4_MAVERICK, num_local_experts=16, interleave_moe_layer_step=1))
    job = ("--hf-config", path, "--gpus", "64", "--framework", "deepspeed", "--training", "finetune",
           "--seq-len", "8192")
    ep16 = "tp=1,pp=1,dp=32,cp=2,ep=16,zero=2,mbs=1,recompute=full"
    steps = {}
    for ep, lay in ((16, ep16), (1, "tp=1,pp=1,dp=64,ep=1,zero=3,mbs=1,recompute=full")):
        code, out, err = run_cli("memory", *job, "--format", "json", "--layout", lay)
        assert code == 0, err
        steps[ep] = json.loads(out)["metrics"]["step_time_s"]
    assert steps[16] < 0.5 * steps[1], steps
    code, out, err = run_cli("export", *job, "--to", "deepspeed", "--layout", ep16, "-o", str(tmp_path / "ds"))
    assert code == 0, err
    assert "deepspeed.moe.layer.MoE" in out + "".join(p.read_text() for p in (tmp_path / "ds").rglob("*") if p.is_file())


def test_llama4_hfu_counts_every_experts_copy_its_step_time_is_made_of(run_cli, tmp_path):
    """At EP 1 transformers' Llama4TextMoe computes all 16 experts for every token: the step
    time charges those GEMMs (activations.routed_copies), so HFU (hardware FLOPs) must count them
    too -- it read 9.2% beside an MFU of 7.0%, as if the GPUs idled. Under DeepSpeed's MoE layer
    (EP 16, top 1) HFU is MFU plus the full recomputation's forward only."""
    path = write(tmp_path / "config.json", dict(LLAMA4_MAVERICK, num_local_experts=16, interleave_moe_layer_step=1))
    ratio = {}
    for ep, lay in ((1, "tp=1,pp=1,dp=64,ep=1,zero=3,mbs=1,recompute=full"),
                    (16, "tp=1,pp=1,dp=32,cp=2,ep=16,zero=2,mbs=1,recompute=full")):
        code, out, err = run_cli("memory", "--hf-config", path, "--gpus", "64", "--framework", "deepspeed",
                                 "--training", "finetune", "--seq-len", "8192", "--format", "json", "--layout", lay)
        assert code == 0, err
        mt = json.loads(out)["metrics"]
        ratio[ep] = mt["hfu_pct"] / mt["mfu_pct"]
    assert ratio[1] > 4.0 and ratio[16] < 1.4, ratio


# --- DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): refused, not sized as dense MLA ---------

# deepseek-ai/DeepSeek-V3.2-Exp config.json, trimmed to its shape, MoE and indexer fields
DEEPSEEK_V32 = {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "hidden_size": 7168,
                "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
                "num_attention_heads": 128, "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1,
                "num_experts_per_tok": 8, "first_k_dense_replace": 3, "q_lora_rank": 1536, "kv_lora_rank": 512,
                "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_group": 8, "topk_group": 4,
                "vocab_size": 129280, "max_position_embeddings": 163840, "index_head_dim": 128, "index_n_heads": 64,
                "index_topk": 2048}


def test_a_deepseek_v3_file_with_an_indexer_is_refused_not_sized_as_dense_mla(run_cli, tmp_path):
    """DeepSeek-V3.2's config.json relabelled deepseek_v3 (as converters write it for frameworks
    without deepseek_v32; vLLM reads index_topk as V3.2) was sized as V3 with dense attention,
    its indexer's weights and its top-k attention left out: refused naming the field."""
    cfg = dict(DEEPSEEK_V32, model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"])
    err = refused(run_cli, "memory", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "8",
                  "--layout", "tp=8")
    assert "'index_topk' (2048)" in err and "DeepSeek-V3.2" in err and "supported: a deepseek_v3 config.json" in err
    # a null indexer field is no indexer: DeepSeek-V3 is read as before
    v3 = {k: v for k, v in cfg.items() if not k.startswith("index_")}
    assert read_hf_config(write(tmp_path / "v3" / "config.json", dict(v3, index_topk=None))).experts == 256


@pytest.mark.parametrize("mt,model", [("deepseek_v32", "DeepSeek-V3.2"), ("glm_moe_dsa", "GLM-5")])
def test_sparse_attention_model_types_say_what_is_not_modelled(run_cli, tmp_path, mt, model):
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", dict(DEEPSEEK_V32, model_type=mt)),
                  "--gpus", "8")
    assert f"{model}'s sparse attention" in err and "not modelled" in err and "supported: deepseek_v2" in err


# --- Ministral: Mistral's decoder under model_type ministral -------------------------------------

# mistralai/Ministral-8B-Instruct-2410 config.json as transformers 5 writes it (model_type ministral,
# MinistralForCausalLM, layer_types), trimmed to the fields read
MINISTRAL_8B = {"architectures": ["MinistralForCausalLM"], "model_type": "ministral", "hidden_size": 4096,
                "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
                "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072, "max_position_embeddings": 32768,
                "rope_theta": 100000000.0, "sliding_window": 32768, "layer_types": ["sliding_attention"] * 36,
                "tie_word_embeddings": False, "hidden_act": "silu"}


def test_ministral_is_sized_as_mistral_and_fsdp_wraps_its_own_layer(run_cli, tmp_path):
    """A ministral config.json was refused as an unknown type though its layers are Mistral's: it is
    sized exactly (8,019,808,256, MinistralForCausalLM's parameters counted on the meta device under
    transformers 5.24; the card's 8.02B), its window read, and Accelerate's FSDP wraps
    MinistralDecoderLayer, the class that model's layers are."""
    path = write(tmp_path / "Ministral-8B-Instruct-2410" / "config.json", MINISTRAL_8B)
    m = read_hf_config(path)
    from shardwise.kb.params import total_params
    assert total_params(m) == 8_019_808_256 and m.sliding_window == 32768 and m.max_positions == 32768
    out_dir = tmp_path / "acc"
    code, out, err = run_cli("export", "--hf-config", path, "--gpus", "8", "--to", "accelerate", "-o", str(out_dir))
    assert code == 0, err
    assert "MinistralDecoderLayer" in "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file())


# --- Kimi K2.5: kimi_k25 wrapping Kimi K2's text model and a MoonViT vision tower ---------------

def test_kimi_k25_reads_its_text_config_as_kimi_k2_and_says_the_vision_tower_is_not_sized(run_cli, tmp_path):
    """moonshotai/Kimi-K2.5's config.json (KimiK25ForConditionalGeneration; trimmed: its
    text_config is Kimi K2's file under model_type kimi_k2, its vision_config MoonViT's defaults)
    was refused as an unknown type. Its language model is sized as Kimi K2's (1,026,408,232,448;
    transformers 5.24 counts 23,040 fewer, the routers' correction biases it keeps as buffers),
    and the answer says the ~471M-parameter vision tower and projector are not
    (471,143,920 on the meta device)."""
    from catalog_configs import CATALOG_CONFIGS
    k25 = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
           "tie_word_embeddings": False, "text_config": dict(CATALOG_CONFIGS["kimi-k2"], model_type="kimi_k2"),
           "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                             "patch_size": 14, "merge_kernel_size": [2, 2]}}
    path = write(tmp_path / "Kimi-K2.5" / "config.json", k25)
    from shardwise.kb.params import total_params
    m = read_hf_config(path)
    k2 = read_hf_config(write(tmp_path / "k2" / "config.json", CATALOG_CONFIGS["kimi-k2"]))
    assert total_params(m) == total_params(k2) == 1_026_408_232_448 and m.family == "deepseek_v3"
    assert any("about 471M parameters (vision_config), are not" in n for n in m.reading_notes)
    code, out, err = run_cli("recommend", "--hf-config", path, "--gpus", "256")
    assert code == 0 and "vision tower" in out, err
    # left out, tie_word_embeddings is Kimi_K25Config's default, true, which transformers ties the head by
    untied = {k: v for k, v in k25.items() if k != "tie_word_embeddings"}
    assert read_hf_config(write(tmp_path / "t" / "config.json", untied)).tied
    # a text_config of another model is refused naming what it may be
    other = dict(k25, text_config=dict(k25["text_config"], model_type="qwen2"))
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "q" / "config.json", other), "--gpus", "8")
    assert "text_config must be a deepseek_v3 or kimi_k2 config" in err


# --- Mistral 3 (Mistral Small 3.1 / 3.2): a Mistral language model under a Pixtral tower ----------

MISTRAL3 = {"model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"],
            "text_config": {"model_type": "mistral", "hidden_size": 1024, "intermediate_size": 4096,
                            "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 8,
                            "head_dim": 128, "vocab_size": 32768, "sliding_window": None},
            "vision_config": {"model_type": "pixtral", "hidden_size": 256, "intermediate_size": 512,
                              "num_hidden_layers": 2, "num_attention_heads": 4, "patch_size": 14}}


def test_mistral3_refuses_a_text_config_that_is_not_mistrals(run_cli, tmp_path):
    """Mistral Small 4 (mistral4: MoE under multi-latent attention) ships under model_type mistral3
    too; its layers are not Mistral's, so it is refused naming what is read, not sized as Mistral
    (Ministral 3's ministral3 is read as its own type)."""
    cfg = dict(MISTRAL3, text_config=dict(MISTRAL3["text_config"], model_type="mistral4"))
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "m4" / "config.json", cfg), "--gpus", "8")
    assert "mistral3" in err and "must be a mistral or ministral3" in err and "'mistral4'" in err


def test_mistral3_exports_wrap_mistrals_decoder_layer(run_cli, tmp_path):
    """Mistral3ForConditionalGeneration's language_model is a MistralModel: Accelerate's FSDP wraps
    MistralDecoderLayer (the class transformers builds for the text_config)."""
    out_dir = tmp_path / "out"
    code, out, err = run_cli("export", "--hf-config", write(tmp_path / "m3" / "config.json", MISTRAL3), "--gpus", "8",
                             "--to", "accelerate", "-o", str(out_dir))
    assert code == 0, err
    text = out + "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file())
    assert "MistralDecoderLayer" in text


def test_dots1_exports_build_deepseeks_router_and_qwen3s_qk_norms(run_cli, tmp_path):
    """dots.llm1's Megatron command line carries the sigmoid router's expert bias, its scaling,
    the shared experts' width and per-head q/k norms; Accelerate's FSDP wraps Dots1DecoderLayer."""
    cfg = {"model_type": "dots1", "hidden_size": 1024, "num_hidden_layers": 8, "intermediate_size": 2816,
           "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "first_k_dense_replace": 1,
           "moe_intermediate_size": 256, "n_routed_experts": 16, "n_shared_experts": 2, "num_experts_per_tok": 4,
           "norm_topk_prob": True, "routed_scaling_factor": 2.5}
    for to, wants in (("megatron", ("--qk-layernorm", "--moe-router-enable-expert-bias",
                                    "--moe-router-topk-scaling-factor 2.5", "--moe-shared-expert-intermediate-size 512")),
                      ("accelerate", ("Dots1DecoderLayer",))):
        out_dir = tmp_path / to
        code, out, err = run_cli("export", "--hf-config", write(tmp_path / "dots" / "config.json", cfg), "--gpus", "8",
                                 "--to", to, "-o", str(out_dir))
        assert code == 0, err
        text = out + "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file())
        assert all(w in text for w in wants), (to, [w for w in wants if w not in text])


def test_olmo3_exaone4_seed_oss_exports_wrap_their_layers_and_say_what_megatron_cannot(run_cli, tmp_path):
    """Accelerate's FSDP wraps each family's decoder layer; Megatron's command line builds EXAONE
    4.0's NoPE full layers and window and says what it cannot build: OLMo 3's RoPE scaling on its
    full layers only, EXAONE's post-norms, Seed-OSS's o_proj bias alone."""
    shape = {"hidden_size": 1024, "num_hidden_layers": 8, "intermediate_size": 2816, "num_attention_heads": 16,
             "num_key_value_heads": 4, "vocab_size": 32000}
    cases = (({"model_type": "olmo3", "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                                                       "original_max_position_embeddings": 8192}},
              ("Olmo3DecoderLayer", "on the full-attention layers only")),
             ({"model_type": "exaone4"}, ("Exaone4DecoderLayer", "--no-rope-freq 4", "EXAONE 4.0's norms after")),
             ({"model_type": "seed_oss", "head_dim": 64, "attention_out_bias": True},
              ("SeedOssDecoderLayer", "--add-qkv-bias", "o_proj's bias (attention_out_bias")))
    for extra, wants in cases:
        cfg = write(tmp_path / extra["model_type"] / "config.json", {**shape, **extra})
        text = ""
        for to in ("megatron", "accelerate"):
            out_dir = tmp_path / f"{extra['model_type']}-{to}"
            code, out, err = run_cli("export", "--hf-config", cfg, "--gpus", "8", "--to", to, "-o", str(out_dir))
            assert code == 0, err
            text += out + err + "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file())
        assert all(w in text for w in wants), (extra["model_type"], [w for w in wants if w not in text])


@pytest.mark.parametrize("cfg,attn,resid", [
    (dict(QWEN, attention_dropout=0.1), 0.1, 0.0),
    (dict(GEMMA2, attention_dropout=0.05), 0.05, 0.0),
    (dict(GPT_OSS, attention_dropout=0.1), 0.1, 0.0),
    ({"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
      "num_attention_heads": 32, "vocab_size": 32064, "resid_pdrop": 0.1, "embd_pdrop": 0.1}, 0.0, 0.1),
    ({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "hidden_size": 2560,
      "intermediate_size": 10240, "num_hidden_layers": 34, "num_attention_heads": 8, "num_key_value_heads": 4,
      "head_dim": 256, "vocab_size": 262208, "attention_dropout": 0.1}}, 0.1, 0.0),
    (QWEN, 0.0, 0.0),
])
def test_dropout_a_config_trains_with_is_read(tmp_path, cfg, attn, resid):
    """attention_dropout, which every supported family applies to its attention in training, and the
    residual dropout Phi-3 (resid_pdrop) applies to its sublayers' outputs, are read into the model
    (a wrapper's from its text_config), not sized as 0; Phi-3's embd_pdrop, which no transformers
    module applies, changes nothing."""
    m = read_hf_config(write(tmp_path / "config.json", cfg))
    assert (m.attn_dropout, m.resid_dropout) == (attn, resid)


@pytest.mark.parametrize("field,value", [("attention_dropout", 1.0), ("attention_dropout", -0.1),
                                         ("attention_dropout", None), ("attention_dropout", "0.1"),
                                         ("resid_pdrop", True)])
def test_a_dropout_that_is_no_probability_is_refused(tmp_path, run_cli, field, value):
    """A dropout transformers could not run in training is refused in one line naming the field."""
    cfg = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
           "num_attention_heads": 32, "vocab_size": 32064, field: value}
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "config.json", cfg), "--gpus", "8")
    assert f"field '{field}' must be a probability from 0 up to 1" in err


# ERNIE-4.5-21B-A3B's config.json as MindIE's atb_llm test (test_config_ernie_moe.py FAKE_CONFIG_DICT)
# carries it; its -300B-A47B's as MindIE's router test does (test_router_ernie_moe.py)
ERNIE_21B = {"model_type": "ernie4_5_moe", "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
             "hidden_act": "silu", "hidden_size": 2560, "intermediate_size": 12288,
             "max_position_embeddings": 131072, "moe_intermediate_size": 1536, "moe_k": 6, "moe_layer_end_index": 27,
             "moe_layer_interval": 1, "moe_layer_start_index": 1, "moe_num_experts": 64, "moe_num_shared_experts": 2,
             "num_attention_heads": 20, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-05,
             "rope_theta": 500000.0, "vocab_size": 103424}


@pytest.mark.parametrize("change, field", [
    ({"use_bias": True}, "use_bias"),
    ({"moe_layer_end_index": None}, "moe_layer_end_index"),
    ({"moe_layer_end_index": 20}, "moe_layer_end_index"),          # trailing dense layers
    ({"moe_layer_start_index": 3, "moe_layer_interval": 2}, "moe_layer_interval"),
    ({"moe_k": 65}, "moe_k"),
    ({"moe_norm_min": "tiny"}, "moe_norm_min"),
])
def test_ernie4_5_moe_refuses_what_it_cannot_carry(run_cli, tmp_path, change, field):
    """What transformers builds from an ERNIE 4.5 file but the estimate cannot (use_bias's bias-free
    routed experts beside biased linears; MoE layers that stop before the last or start off the
    interval) or transformers cannot (a null end index) is refused in one line naming the field."""
    path = write(tmp_path / "ernie" / "config.json", dict(ERNIE_21B, **change))
    err = refused(run_cli, "recommend", "--hf-config", path, "--gpus", "8")
    assert field in err and ("supported" in err or "must be" in err)


def test_ernie4_5_moe_reads_its_own_defaults_and_drops_no_dropout(tmp_path):
    """Ernie4_5_MoeConfig's defaults where the file leaves a field out (tied head, 4 kv heads, 2
    shared experts, MoE from layer 1, rope_theta 500000, eps 1e-5); Ernie4_5_MoeAttention sets its
    dropout to 0 whatever attention_dropout says, so none is sized and the output says so."""
    small = {"model_type": "ernie4_5_moe", "hidden_size": 256, "intermediate_size": 640, "num_attention_heads": 4,
             "num_hidden_layers": 5, "vocab_size": 1000, "moe_intermediate_size": 96, "attention_dropout": 0.1}
    m = read_hf_config(write(tmp_path / "e" / "config.json", small))
    assert (m.tied, m.kv_heads, m.shared_experts, m.first_dense, m.experts, m.top_k) == (True, 4, 2, 1, 64, 6)
    assert (m.rope_theta, m.norm_eps, m.attn_dropout, m.router_bias) == (500000.0, 1e-5, 0.0, True)
    assert any("attention_dropout 0.1 is not applied" in n for n in m.reading_notes)


def test_ernie4_5_moe_exports_route_by_softmax_and_rotate_interleaved(run_cli, tmp_path):
    """ERNIE 4.5's router adds its correction bias to softmax scores: Megatron's command line does
    not turn on the sigmoid expert bias (a caveat says the bias is left out), rotates interleaved
    pairs, lays MoE from layer 1 and sizes the shared experts; Accelerate wraps its decoder layer."""
    for to, wants, never in (("megatron", ("--rotary-interleaved", "--moe-layer-freq", "([0]*1+[1]*27)",
                                           "--moe-shared-expert-intermediate-size 3072", "e_score_correction_bias"),
                              ("--moe-router-enable-expert-bias", "--moe-router-score-function sigmoid")),
                             ("accelerate", ("Ernie4_5_MoeDecoderLayer",), ())):
        out_dir = tmp_path / to
        code, out, err = run_cli("export", "--hf-config", write(tmp_path / "ernie" / "config.json", ERNIE_21B),
                                 "--gpus", "8", "--to", to, "-o", str(out_dir))
        assert code == 0, err
        text = out + "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file())
        assert all(w in text for w in wants), (to, [w for w in wants if w not in text])
        assert not any(n in text for n in never), to


def test_ministral3_text_config_is_read_and_needs_its_query_scaling(run_cli, tmp_path):
    """Ministral 3's text_config (ministral3) under mistral3 is read as its own type, taking
    Ministral3Config's YaRN rope_parameters where the file gives none (a top-level rope_theta is
    not read then); a rope_parameters without llama_4_scaling_beta, which Ministral3Attention reads
    on every forward, is refused naming it. Megatron's export says it does not scale the query;
    Accelerate wraps Ministral3DecoderLayer."""
    text = {"model_type": "ministral3", "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32768, "rope_theta": 500000.0,
            "tie_word_embeddings": True}
    m = read_hf_config(write(tmp_path / "a" / "config.json", {"model_type": "mistral3", "text_config": text}))
    assert (m.family, m.hd, m.rope_theta, m.rope_scaling, m.max_positions) == ("ministral3", 128, 1e6, "yarn", 262144)
    assert dict(m.rope_params)["llama_4_scaling_beta"] == 0.1
    bad = dict(text, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    err = refused(run_cli, "recommend", "--hf-config", write(tmp_path / "b" / "config.json", bad), "--gpus", "8")
    assert "llama_4_scaling_beta" in err
    for to, want in (("megatron", "query scaling by position"), ("accelerate", "Ministral3DecoderLayer")):
        out_dir = tmp_path / to
        code, out, err = run_cli("export", "--hf-config", str(tmp_path / "a" / "config.json"), "--gpus", "8",
                                 "--to", to, "-o", str(out_dir))
        assert code == 0, err
        assert want in out + "".join(p.read_text() for p in out_dir.rglob("*") if p.is_file()), to
