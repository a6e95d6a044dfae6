"""Inputs at their limits, as a fuzzing pass met them: the Hugging Face Gemma 3 multimodal
configs as published (text_config leaves fields to Gemma3TextConfig's defaults), integers past
Python's 4300-digit conversion limit, files without end, YAML 1.1's octal, hex and underscored
numbers in job files, choices in any case, and a job file's relative hf_config path. Every
refusal is one line on stderr with status 2."""
import json
import os
import threading

import pytest

from shardwise.kb.errors import InputError, read_input_file
from shardwise.kb.hf_config import read_hf_config
from shardwise.kb.params import total_params

JOB = "model: llama-3-8b\ngpu: h100-sxm\n"
JOB_FLAGS = ("--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8")

# google/gemma-3-4b-it and google/gemma-3-27b-it config.json on the Hugging Face hub, as published
GEMMA3_4B = {
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14, "vision_use_head": False},
}
GEMMA3_27B = dict(GEMMA3_4B, text_config={
    "head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text",
    "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024})


def refused(run_cli, *args) -> str:
    code, out, err = run_cli(*args)
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


def write_config(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return str(p)


# --- Gemma 3 multimodal configs --------------------------------------------------------------

@pytest.mark.parametrize("cfg, text_params, rounding", [(GEMMA3_4B, 3.88e9, 0.005e9), (GEMMA3_27B, 27.0e9, 0.05e9)])
def test_the_published_gemma_3_configs_read_with_the_config_class_defaults(tmp_path, cfg, text_params, rounding):
    """The language model alone: 3.88B and 27.0B, the published 4.3B and 27.4B less the 0.4B
    SigLIP vision tower shardwise does not size. The tolerance is the rounding of the figure
    itself (half its last digit: 0.13% and 0.19%); the count is exact for these shapes
    (4B: 262,208 x 2,560 tied embedding + 34 layers x 94,382,592 + the final norm)."""
    m = read_hf_config(write_config(tmp_path, cfg))
    assert abs(total_params(m) - text_params) <= rounding, total_params(m)
    # the fields the 4B leaves out, filled as Gemma3TextConfig.__init__ fills them
    assert (m.vocab, m.max_positions, m.rope_theta) == (262208, 131072, 1e6)
    assert (m.sliding_window, m.full_attn_every, m.rope_scaling, m.rope_factor) == (1024, 6, "linear", 8.0)
    if cfg is GEMMA3_4B:
        assert (m.heads, m.kv_heads, m.head_dim) == (8, 4, 256)
    else:                                         # what the file gives wins over the defaults
        assert (m.heads, m.kv_heads, m.head_dim) == (32, 16, 128)


def test_gemma_3_4b_it_recommends_from_its_published_config(run_cli, tmp_path):
    code, out, err = run_cli("recommend", "--hf-config", write_config(tmp_path, GEMMA3_4B), "--gpu", "h100-sxm",
                             "--gpus", "8", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["layout"] is not None


def test_the_defaults_fill_a_gemma3_text_config_read_through_the_wrapper_only(run_cli, tmp_path):
    """A text-only config.json (gemma-3-1b) gives every field; one that leaves a field out is
    refused as before, and so is a wrapper without a text_config."""
    standalone = dict(GEMMA3_4B["text_config"])
    err = refused(run_cli, "memory", "--hf-config", write_config(tmp_path, standalone), "--layout", "tp=1")
    assert "missing field 'num_attention_heads'" in err
    err = refused(run_cli, "memory", "--hf-config", write_config(tmp_path, {"model_type": "gemma3"}),
                  "--layout", "tp=1")
    assert "text_config must be a JSON object" in err


# --- integers past Python's digit limit ------------------------------------------------------

HUGE = "9" * 5000


def test_a_huge_integer_in_a_config_json_is_refused_naming_the_file(run_cli, tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(GEMMA3_4B).replace('"num_hidden_layers": 34', f'"num_hidden_layers": {HUGE}'))
    err = refused(run_cli, "memory", "--hf-config", str(p), "--layout", "tp=1")
    assert str(p) in err and "number is too long" in err and "4300 digits" in err


def test_a_huge_integer_in_a_job_file_is_refused_naming_the_file_and_line(run_cli, tmp_path):
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: {HUGE}\n")
    err = refused(run_cli, "memory", "-f", str(p), "--layout", "tp=1")
    assert f"{p}:3: a number is too long" in err


def test_a_huge_integer_in_a_rule_file_is_refused_naming_the_file_and_line(run_cli, tmp_path):
    p = tmp_path / "house.yaml"
    p.write_text("rules:\n  - id: house.x\n    priority: 500\n    then:\n      - avoid: \"layout.tp > 1\"\n"
                 f"        worth: {HUGE}\n    because: house policy\n")
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--gpus", "8", "--rules", str(p))
    assert f"{p}:6: a number is too long" in err


# --- files without end -----------------------------------------------------------------------

def test_an_endless_file_is_refused_without_reading_it_whole(run_cli):
    err = refused(run_cli, "memory", "--hf-config", "/dev/zero", "--layout", "tp=1")
    assert "'/dev/zero' is larger than 16 MiB" in err
    err = refused(run_cli, "memory", "-f", "/dev/zero", "--layout", "tp=1")
    assert "-f: '/dev/zero' is larger than 16 MiB" in err


def test_an_endless_stream_is_read_only_up_to_the_limit(tmp_path):
    """A FIFO whose writer never stops: the reader stops one byte past the limit, and the writer
    then meets a closed pipe."""
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    written = [0]

    def write_forever():
        try:
            with open(fifo, "wb") as f:
                while True:
                    written[0] += f.write(b"{" * 65536)
        except OSError:         # BrokenPipeError once the reader is done
            pass

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    with pytest.raises(InputError, match="larger than 1,000 bytes"):
        read_input_file(str(fifo), "-f", limit=1000)
    writer.join(timeout=10)
    assert not writer.is_alive() and written[0] < 2 ** 20


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    p = tmp_path / "job.yaml"
    p.write_text("a" * 1000)
    assert read_input_file(str(p), "-f", limit=1000) == "a" * 1000
    p.write_text("a" * 1001)
    with pytest.raises(InputError, match=r"-f: '.*job.yaml' is larger than 1,000 bytes"):
        read_input_file(str(p), "-f", limit=1000)


# --- numbers in job files --------------------------------------------------------------------

@pytest.mark.parametrize("text", ["010", "0x10", "0b10", "1_6", "1:30", "-010"])
def test_a_job_file_number_not_written_in_decimal_is_refused(run_cli, tmp_path, text):
    """YAML 1.1 reads 010 as 8, 0x10 as 16, 1_6 as 16 and 1:30 as 90 (base 60)."""
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: {text}\n")
    err = refused(run_cli, "memory", "-f", str(p), "--layout", "tp=1")
    assert f"{p}:3: gpus: write the number in decimal" in err and f"got '{text}'" in err


@pytest.mark.parametrize("text", ["8_0.5", "1:20.0"])
def test_a_job_file_float_with_separators_is_refused(run_cli, tmp_path, text):
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: 8\ngpu_memory: {text}\n")
    assert "gpu_memory: write the number in decimal" in refused(run_cli, "memory", "-f", str(p), "--layout", "tp=1")


EXPONENTS = [("seq_len", "1e4", "10000"), ("gpu_memory", "1e2", "100"), ("gpus", "1e1", "10"),
             ("price_per_gpu_hour", "2.5e0", "2.5"), ("token_budget", "1E12", "1000000000000 or 1T"),
             ("global_batch_tokens", "4e6", "4000000"), ("mbs", "2e0", "2")]


@pytest.mark.parametrize("key, text, digits", EXPONENTS)
def test_exponent_notation_is_refused_on_flags_and_in_job_files_alike(run_cli, tmp_path, key, text, digits):
    """README: numbers are written in the digits 0-9. --seq-len 1e4 and --gpu-memory 1e2 were
    taken, a job file's `gpu_memory: 1e2` was "must be float, got '1e2'" and its `seq_len: 1e4`
    taken: now each is the same one line, the number written out as the hint."""
    flag = "--" + key.replace("_", "-")
    flags = JOB_FLAGS[:4] if key == "gpus" else JOB_FLAGS
    err = refused(run_cli, "memory", *flags, flag, text, "--layout", "tp=1")
    assert err == f"shardwise: error: {flag}: '{text}': write the number with digits, e.g. {digits}\n"
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: 8\n{key}: {text}\n".replace("gpus: 8\ngpus:", "gpus:"))
    err = refused(run_cli, "memory", "-f", str(p), "--layout", "tp=1")
    assert err == f"shardwise: error: {p}: '{key}': '{text}': write the number with digits, e.g. {digits}\n"
    err = refused(run_cli, "compare", *JOB_FLAGS, "--vary", f"{key}={text}")
    assert err == f"shardwise: error: --vary {key}: '{text}': write the number with digits, e.g. {digits}\n"


@pytest.mark.parametrize("text", ["1.0e+2", "8.0E+1"])
def test_a_job_file_float_yaml_reads_with_an_exponent_is_refused_at_its_line(run_cli, tmp_path, text):
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: 8\ngpu_memory: {text}\n")
    err = refused(run_cli, "memory", "-f", str(p), "--layout", "tp=1")
    assert f"{p}:4: gpu_memory: '{text}': write the number with digits, e.g. " in err


def test_plain_decimals_in_a_job_file_read_as_the_flags(run_cli, tmp_path):
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: 8\ngpu_memory: 79.5\n")
    code, out, err = run_cli("memory", "-f", str(p), "--layout", "tp=1", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["job"]["gpus"] == 8


def test_a_date_yaml_cannot_build_is_one_line(run_cli, tmp_path):
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: 8\nparams: 2024-02-30\n")
    assert f"{p}: a value cannot be read" in refused(run_cli, "memory", "-f", str(p), "--layout", "tp=1")


# --- choices and paths in job files ----------------------------------------------------------

def test_a_job_file_takes_choices_in_any_case_as_the_flags_do(run_cli, tmp_path):
    p = tmp_path / "job.yaml"
    p.write_text(f"{JOB}gpus: 8\ntraining: LoRA\nprecision: BF16\nframework: FSDP\nrecompute: Full\n")
    base = ("memory", "--layout", "tp=1", "--format", "json")
    code, from_file, err = run_cli(*base, "-f", str(p))
    assert code == 0, err
    code, from_flags, err = run_cli(*base, "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                    "--training", "LoRA", "--precision", "BF16", "--framework", "FSDP",
                                    "--recompute", "Full")
    assert code == 0, err
    assert json.loads(from_file) == json.loads(from_flags)
    assert json.loads(from_file)["job"]["training"] == "lora"


def test_a_job_files_hf_config_is_read_from_the_job_files_folder(run_cli, tmp_path, monkeypatch):
    (tmp_path / "models" / "gemma-3-4b-it").mkdir(parents=True)
    cfg = write_config(tmp_path / "models" / "gemma-3-4b-it", GEMMA3_4B)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")            # neither the job file's folder nor its parent
    base = ("memory", "--layout", "tp=1", "--format", "json")
    answers = []
    for name, path in (("relative", "../models/gemma-3-4b-it/config.json"), ("absolute", cfg)):
        job = tmp_path / "jobs" / f"{name}.yaml"
        job.write_text(f"hf_config: {path}\ngpu: h100-sxm\ngpus: 8\n")
        code, out, err = run_cli(*base, "-f", str(job))
        assert code == 0, err
        answers.append(json.loads(out))
    assert answers[0] == answers[1] and answers[0]["job"]["model"] == "gemma-3-4b-it"
    missing = tmp_path / "jobs" / "missing.yaml"
    missing.write_text("hf_config: config.json\ngpu: h100-sxm\ngpus: 8\n")
    assert str(tmp_path / "jobs" / "config.json") in refused(run_cli, *base, "-f", str(missing))


@pytest.mark.parametrize("key", ["? [a]\n: 1", "? {a: 1}\n: 1"])
def test_a_list_or_mapping_as_a_key_is_one_line(run_cli, tmp_path, key):
    """A YAML key that is a list or a mapping crashed the duplicate-key check (unhashable) with
    an internal error, in job files and rule files alike."""
    job = tmp_path / "job.yaml"
    job.write_text(f"model: llama-3-8b\n{key}\n")
    assert f"{job}:2: a key must be a plain name, not a list or a mapping" in refused(run_cli, "recommend", "-f", str(job))
    rules = tmp_path / "house.yaml"
    rules.write_text(f"rules:\n  - {key.replace(chr(10), chr(10) + '    ')}\n")
    assert "a key must be a plain name" in refused(run_cli, "recommend", "--model", "llama-3-8b", "--rules", str(rules))


def test_a_flag_replaces_the_job_files_model_and_batch(run_cli, tmp_path):
    """Flags override the job file, also where the flag names the model or the batch another way
    than the file did: --model over hf_config:, --global-batch-tokens over global_batch:."""
    job = tmp_path / "job.yaml"
    job.write_text("params: 13B\nglobal_batch: 512\n")
    code, out, err = run_cli("recommend", "-f", str(job), "--model", "llama-3-8b", "--global-batch-tokens", "1M",
                             "--gpus", "8", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["job"]["model"] == "llama-3-8b" and d["layout"]["global_batch"] == 256


def test_a_job_file_that_names_the_model_twice_is_refused_even_under_a_flag(run_cli, tmp_path):
    """A flag replaces the file's model or batch; a file that itself names two is a conflict, refused
    whatever the flags (a flag or a --vary replacing one of them hid it)."""
    job = tmp_path / "job.yaml"
    job.write_text("params: 13B\nmodel: llama-3-8b\n")
    assert "model and params name the same thing" in refused(run_cli, "recommend", "-f", str(job), "--model", "llama-3-8b")
    job.write_text("model: llama-3-8b\nglobal_batch: 64\nglobal_batch_tokens: 1M\n")
    assert "global_batch and global_batch_tokens" in refused(run_cli, "compare", "-f", str(job), "--vary",
                                                             "global_batch=64,128")


def test_merge_keys_are_refused(run_cli, tmp_path):
    """'<<:' merged its mapping in after the duplicate and key checks, so '<<: {gpus: 8, gpus: 16}'
    ran on 16 GPUs silently; without aliases it only rewrites keys a file can write out."""
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b\n<<: {gpus: 8, gpus: 16}\n")
    assert f"{job}:2: merge keys ('<<:') are not allowed" in refused(run_cli, "recommend", "-f", str(job))
