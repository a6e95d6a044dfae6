"""Inputs and their defaults, as a user meets them on the command line: token batches and
sequence lengths read binary, a token batch taken as a workable sequence count (never refused,
never inflated), defaults per training type stated in the output, job-file keys with a "did you
mean", and sequence parallelism only where the framework has it."""
import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from shardwise.kb import catalog, frameworks
from shardwise.kb.batch import TOLERANCE, dp_degrees, workable_count
from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError
from shardwise.kb.resolve import assumptions, global_batch

from conftest import refused

L405 = ["--model", "llama-3.1-405b", "--gpus", "16384", "--seq-len", "8192"]


def memory(run_cli, *args):
    code, out, err = run_cli("memory", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


# --- token batches --------------------------------------------------------------------------

def test_the_published_405b_job_keeps_its_2048_sequences(run_cli):
    """Llama 3.1 405B on 16,384 H100 at 8K with 16M tokens a step: 16 x 2^20 / 8,192 = 2,048
    sequences, the published batch; decimal reading gave 1,953 and a refusal."""
    d = memory(run_cli, *L405, "--global-batch-tokens", "16M", "--layout", "tp=8,pp=16")
    assert d["layout"]["global_batch"] == 2048
    assert any("16M tokens = 16,777,216 tokens = 2,048 sequences of 8,192 tokens" in a for a in d["assumptions"])
    code, out, err = run_cli("recommend", *L405, "--global-batch-tokens", "16M", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["layout"]["global_batch"] == 2048


def test_token_batch_suffixes_are_binary_and_plain_numbers_exact(run_cli):
    base = ["--model", "llama-3-8b", "--gpus", "8", "--seq-len", "8192", "--layout", "tp=1"]
    for text in ("4M", "4096K", "4194304", "4m"):
        assert memory(run_cli, *base, "--global-batch-tokens", text)["layout"]["global_batch"] == 512, text
    assert memory(run_cli, *base, "--global-batch-tokens", "0.5B")["layout"]["global_batch"] == 65536


def test_a_prime_sequence_count_moves_within_five_percent_and_says_so(run_cli):
    """Seed 004's batch read decimally was 31 sequences (a prime: DP = 1 only)."""
    d = memory(run_cli, "--model", "llama-2-7b", "--gpus", "64", "--seq-len", "128k",
               "--global-batch-tokens", "4M", "--layout", "tp=8,cp=8")
    assert d["layout"]["global_batch"] == 32                   # 4 x 2^20 / 131,072 exactly
    d = memory(run_cli, "--model", "llama-2-7b", "--gpus", "64", "--seq-len", "131072",
               "--global-batch-tokens", "4000000", "--layout", "tp=8")       # DP 8 fixed by the layout
    assert d["layout"]["global_batch"] == 32 and d["layout"]["grad_accum"] == 4
    assert "30.5 sequences" in " ".join(d["assumptions"]) and "mbs x DP = 1 x 8" in " ".join(d["assumptions"])
    job = build_job(model="llama-2-7b", gpus=64, seq_len=131072, global_batch_tokens="4000000")
    n, (text,) = global_batch(job)                                            # no layout: DP still open
    assert n == 32 and abs(n - 4e6 / 131072) <= TOLERANCE * 4e6 / 131072
    assert "taken as 32 (+4.86%" in text and "32 allows 6 degrees, DP 1, 2, 4, ..., 32" in text
    assert "splits (21 of 49" in text
    # the splits count power-of-two micro-batches only (MBS_CHOICES), while the search tries every
    # divisor of the batch up to 64: the text names the ones it counted, not "1-64"
    assert "micro-batches 1, 2, 4, ..., 64" in text and "micro-batches 1-64" not in text
    # a fixed layout with DP = 1: every count works, so the nearest (31) is kept
    d = memory(run_cli, "--model", "llama-2-7b", "--gpus", "64", "--seq-len", "131072",
               "--global-batch-tokens", "4000000", "--layout", "tp=8,cp=8")
    assert d["layout"]["global_batch"] == 31


def test_a_token_batch_is_never_refused_for_rounding(run_cli):
    d = memory(run_cli, "--model", "llama-3-8b", "--gpus", "8", "--seq-len", "8192",
               "--global-batch-tokens", "12k", "--layout", "tp=8")
    assert d["layout"]["global_batch"] in (1, 2) and "at least one" in " ".join(d["assumptions"])
    # a fixed layout: the count moves to one that its mbs x DP divides (512 -> 504 for DP 24)
    d = memory(run_cli, "--model", "llama-3-8b", "--gpus", "24", "--seq-len", "8192",
               "--global-batch-tokens", "4M", "--layout", "tp=1,mbs=1")
    assert d["layout"]["global_batch"] == 504 and d["layout"]["grad_accum"] == 21
    # no count within 5% that mbs x DP = 2 x 64 divides: the nearest one, said with its change
    d = memory(run_cli, "--model", "llama-3-8b", "--gpus", "64", "--seq-len", "8k",
               "--global-batch-tokens", "1.1M", "--layout", "tp=1,mbs=2")
    assert d["layout"]["global_batch"] == 128 and "taken as 128 (-9.09%)" in " ".join(d["assumptions"])


@pytest.mark.parametrize("text,shown", [("1", "1"), ("1000", "1000"), ("8191", "8191"), ("4k", "4k = 4,096"),
                                         ("0.5", "0.5")])
def test_a_token_batch_smaller_than_one_sequence_is_refused_not_taken_as_one(run_cli, tmp_path, text, shown):
    """A step holds whole sequences, and taking 1 token as one sequence of 8,192 ran 8,192 times
    the batch asked for ("taken as 1 (+819100.00%)"): not a rounding, so refused with both
    numbers, from a flag or a job file. One whole sequence is a batch."""
    base = ["--model", "llama-3-8b", "--gpus", "8", "--seq-len", "8k", "--layout", "tp=8"]
    err = refused(run_cli, "memory", *base, "--global-batch-tokens", text)
    assert (f"--global-batch-tokens: {shown} is fewer tokens than one sequence (--seq-len 8,192); "
            "allowed: at least 8,192 tokens a step, or --global-batch in sequences") in err
    job = tmp_path / "job.yaml"
    job.write_text(f"model: llama-3-8b\nseq_len: 8k\nglobal_batch_tokens: {text}\n")
    assert f"{job}: 'global_batch_tokens': {shown} is fewer tokens than one sequence (--seq-len 8,192)" in \
        refused(run_cli, "memory", "-f", str(job), "--layout", "tp=8")
    assert memory(run_cli, *base, "--global-batch-tokens", "8k")["layout"]["global_batch"] == 1


def test_budgets_stay_decimal():
    job = build_job(model="llama-3-8b", gpus=8, token_budget="100B", global_batch_tokens="1B")
    assert job.training.token_budget == 100e9
    assert job.training.global_batch_tokens == 2 ** 30


def _brute(exact, gpus, mbs):
    """The criterion of kb/batch.py by enumeration: whole counts within 5% (else the two
    around the quotient), most data-parallel degrees, then most micro-batch x data-parallel
    splits (the given micro-batch, or every power of two up to 64 when the advisor chooses it),
    then nearest, then smaller."""
    lo, hi = max(1, math.ceil(exact * (1 - TOLERANCE))), math.floor(exact * (1 + TOLERANCE))
    if lo > hi:
        lo, hi = max(1, math.floor(exact)), max(1, math.ceil(exact))
    options = [1, 2, 4, 8, 16, 32, 64] if mbs is None else [mbs]
    return min(range(lo, hi + 1), key=lambda n: (-len(dp_degrees(n, gpus, mbs or 1)),
                                                 -sum(len(dp_degrees(n, gpus, m)) for m in options), abs(n - exact), n))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(exact=st.one_of(st.floats(0.01, 20), st.floats(20, 20000), st.integers(1, 20000).map(float)),
       gpus=st.sampled_from([1, 2, 3, 8, 12, 24, 64, 96, 100, 1024, 6144, 16384]),
       mbs=st.sampled_from([None, 1, 2, 3, 4, 8]))
def test_the_workable_count_is_the_documented_criterion(exact, gpus, mbs):
    n = workable_count(exact, gpus, mbs)
    assert n == _brute(exact, gpus, mbs)
    if exact >= 20:
        assert abs(n - exact) <= TOLERANCE * exact
    if exact == int(exact) and int(exact) % ((mbs or 64) * gpus) == 0:
        assert n == exact                                    # every split already divides it: kept


def test_a_token_batch_keeps_the_micro_batches_open(run_cli):
    """4M tokens of 200 are 20,971.5 sequences. The nearest count that every DP degree of 8 GPUs
    divides, 20,968 = 8 x 2,621 (a prime), left those 8 GPUs micro-batch 1 only, and the headline
    was 41% slower than at 20,992 = 512 x 41 (0.1% further), which every micro-batch up to 64
    at every DP degree divides and which the advisor now takes."""
    code, out, err = run_cli("recommend", "--model", "qwen2.5-0.5b", "--gpus", "8", "--seq-len", "200",
                             "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"]["global_batch"] == 20992 and d["layout"]["mbs"] > 1
    assert "then the most micro-batch x DP splits (28 of 28" in " ".join(d["assumptions"])
    # the DP degrees come first: 128 sequences on 24 GPUs allow DP 1-8 only, which leaves the
    # Trainer (no pipeline: DP = 24 / TP) no layout; 132 allows DP 12
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "24", "--training", "lora",
                             "--format", "json")
    assert code == 0, err
    lay = json.loads(out)["layout"]
    assert lay["global_batch"] == 132 and lay["dp"] * lay["tp"] * lay["cp"] == 24


@settings(max_examples=200, deadline=None, derandomize=True)
@given(value=st.floats(0.001, 4096), suffix=st.sampled_from(["", "K", "M", "B"]),
       seq_len=st.integers(7, 20).map(lambda e: 1 << e), gpus=st.sampled_from([1, 8, 24, 64, 96, 1024, 16384]),
       mbs=st.sampled_from([None, 1, 2, 3]))
def test_no_token_batch_is_refused_for_rounding(value, suffix, seq_len, gpus, mbs):
    text = f"{value:.6g}{suffix}"
    try:
        job = build_job(model="llama-3-8b", gpus=gpus, seq_len=seq_len, mbs=mbs, global_batch_tokens=text)
    except InputError as e:
        # never for rounding: only a batch of less than one sequence, or a given micro-batch the
        # batch cannot hold (a few sequences at most)
        tokens = float(text[:-1] if suffix else text) * {"": 1, "K": 2 ** 10, "M": 2 ** 20, "B": 2 ** 30}[suffix]
        assert (tokens < seq_len and str(e).startswith("--global-batch-tokens: ")) or \
            (mbs and str(e).startswith(f"--mbs {mbs} "))
        return
    n, (said,) = global_batch(job)
    exact = job.training.global_batch_tokens / seq_len
    assert n >= 1 and f"{job.training.global_batch_tokens:,.0f} tokens" in said
    if exact >= 20:
        step = mbs or 1         # is some multiple of the given micro-batch within 5%?
        if math.floor(exact * (1 + TOLERANCE) / step) * step >= math.ceil(exact * (1 - TOLERANCE)):
            assert abs(n - exact) <= TOLERANCE * exact
        else:
            # a given micro-batch no count within 5% holds (mbs 3, 20-30 sequences): its nearest
            # multiple, said as such -- never "within 5%"
            assert n % mbs == 0 and abs(n - exact) <= mbs / 2 and "within 5%" not in said, said


# --- defaults ---------------------------------------------------------------------------

def test_the_default_batch_is_stated_and_not_inflated(run_cli):
    d = memory(run_cli, *L405, "--layout", "tp=8,pp=16")
    assert d["layout"]["global_batch"] == 512                # 4M tokens / 8,192, not a multiple of 16,384
    assert any("global batch not given" in a and "512 sequences" in a for a in d["assumptions"])
    job = build_job(model="llama-3.1-405b", gpus=16384, seq_len=8192)
    assert global_batch(job)[0] == 512


@pytest.mark.parametrize("training", ["finetune", "lora", "qlora", "rlhf"])
def test_fine_tuning_gets_a_fine_tuning_batch_and_profile(run_cli, training):
    # QLoRA's 4-bit weights take no TP: ZeRO-3 shards them instead (kb/validity qlora-no-tp)
    layout = "tp=1,zero=3" if training == "qlora" else "tp=8"
    d = memory(run_cli, "--model", "llama-3-70b", "--gpus", "8", "--gpu", "a100-80gb",
               "--training", training, "--layout", layout)
    assert d["job"]["framework"] == "hf" and d["layout"]["global_batch"] == 128
    text = " ".join(d["assumptions"])
    assert "framework not given: hf" in text and "fine-tuning default (Stanford Alpaca" in text and "128 sequences" in text


def test_pretraining_defaults_are_stated_too(run_cli):
    d = memory(run_cli, "--model", "llama-3-8b", "--layout", "tp=1")
    text = " ".join(d["assumptions"])
    assert d["job"]["framework"] == "megatron" and "framework not given: megatron" in text
    assert "8 GPUs" in text and "sequence length 4,096 tokens" in text and "precision bf16" in text
    assert d["layout"]["global_batch"] == 1024


def test_a_given_framework_is_respected(run_cli):
    d = memory(run_cli, "--model", "llama-3-70b", "--gpus", "8", "--training", "lora", "--framework", "fsdp",
               "--layout", "tp=8")
    assert d["job"]["framework"] == "fsdp"
    assert not any("framework not given" in a for a in d["assumptions"])
    err = refused(run_cli, "memory", "--model", "llama-3-70b", "--gpus", "8", "--training", "qlora",
                  "--framework", "megatron", "--layout", "tp=8")
    assert "QLoRA" in err and "hf" in err
    # nor in FP8 on any framework: the 4-bit layers are dequantized to bf16 for their matmuls
    err = refused(run_cli, "recommend", "--model", "llama-3.1-8b", "--gpus", "8", "--training", "qlora",
                  "--precision", "fp8")
    assert "--precision fp8 with --training qlora" in err and "allowed: bf16, pure-bf16" in err


def test_pure_bf16_is_refused_where_the_framework_keeps_fp32_masters(run_cli):
    """Megatron-Core steps fp32 main params whatever --bf16 asks (--main-params-dtype takes fp32 or
    fp16), and DeepSpeed keeps bf16 masters only in its ZeRO optimizers: a pure-bf16 plan there
    would promise memory the launch does not have (Llama 3 70B on 32 H100s: 69 GiB planned, 86
    as Megatron runs it). Refused in one line naming the frameworks that run it; the search of a
    DeepSpeed job never plans ZeRO-0, and a pinned zero=0 is refused."""
    err = refused(run_cli, "recommend", "--model", "llama-3-70b", "--gpus", "32", "--precision", "pure-bf16")
    assert "megatron (the default for pretrain) keeps fp32 main params" in err
    assert "pure-bf16 runs under --framework deepspeed, fsdp or hf" in err
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "8", "--precision", "pure-bf16",
                  "--framework", "megatron", "--training", "finetune", "--layout", "dp=8")
    assert "--precision pure-bf16: megatron keeps" in err and "allowed with megatron here: bf16, fp8;" in err
    # on a GPU without FP8 neither refusal sends the user to the other
    a100 = ("--model", "llama-3-8b", "--gpus", "8", "--gpu", "a100-80gb")
    err = refused(run_cli, "recommend", *a100, "--precision", "pure-bf16")
    assert "allowed with megatron here: bf16;" in err
    err = refused(run_cli, "recommend", *a100, "--precision", "fp8")
    assert err.rstrip().endswith("allowed here: bf16")
    assert refused(run_cli, "recommend", *a100, "--precision", "fp8", "--framework", "fsdp").rstrip().endswith(
        "allowed here: bf16, pure-bf16")
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "8", "--precision", "pure-bf16",
                  "--framework", "deepspeed", "--layout", "dp=8,zero=0")
    assert "[deepspeed-pure-bf16-zero]" in err and "use zero=1 or higher" in err
    d = json.loads(run_cli("recommend", "--model", "llama-3.2-1b", "--gpus", "8", "--precision", "pure-bf16",
                           "--framework", "deepspeed", "--format", "json")[1])
    assert d["layout"]["zero_stage"] >= 1


def test_assumptions_are_one_list_in_a_fixed_order():
    job = build_job(model="llama-3-70b", training="lora", gpus=8)
    texts = assumptions(job)
    assert texts[0].startswith("framework not given") and texts[1].startswith("global batch not given")
    assert texts == assumptions(job)
    given = build_job(model="llama-3-70b", training="lora", gpus=8, gpu="h100-sxm", seq_len=4096,
                      precision="bf16", optimizer="adamw", attention="flash", lora_rank=16, lora_dropout=0.0,
                      framework="hf", global_batch=64, allocator="caching", zero_grad="set-to-none")
    assert assumptions(given) == []


# --- sequence lengths -------------------------------------------------------------------

def test_seq_len_takes_binary_k(run_cli, tmp_path):
    base = ["--model", "llama-3-8b", "--gpus", "8", "--layout", "tp=8", "--global-batch", "8"]
    a = memory(run_cli, *base, "--seq-len", "32k")
    assert a["job"]["seq_len"] == 32768 and a == memory(run_cli, *base, "--seq-len", "32768")
    assert memory(run_cli, *base, "--seq-len", "128K")["job"]["seq_len"] == 131072
    f = tmp_path / "job.yaml"
    f.write_text("model: llama-3-8b\nseq_len: 32k\n")
    assert memory(run_cli, "-f", str(f), "--layout", "tp=8", "--global-batch", "8")["job"]["seq_len"] == 32768


@pytest.mark.parametrize("value", ["32q", "1.3k", "0", "-5", "k"])
def test_bad_seq_len_is_one_line(run_cli, value):
    assert "--seq-len" in refused(run_cli, "memory", "--model", "llama-3-8b", "--seq-len", value, "--layout", "tp=8")


@pytest.mark.parametrize("value", ["4096tokens", "8kb", "32q"])
def test_a_seq_len_that_is_no_count_is_shown_a_sequence_length_to_type(run_cli, value):
    """`--seq-len 4096tokens` was told 'e.g. 4M', a token-batch example: a newcomer typing it
    asks for a four-million-token sequence. The example is a sequence length."""
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--seq-len", value, "--layout", "tp=8")
    assert "e.g. 8192 or 32k" in err and "4M" not in err


@pytest.mark.parametrize("typed, told", [
    (["--micro-batch", "2"], "type --mbs (the micro-batch size"),              # was: did you mean --global-batch?
    (["--per-device-train-batch-size", "2"], "type --mbs (the micro-batch size"),
    (["--batch-size", "128"], "type --global-batch (the global batch in sequences"),
    (["--grad-accum", "16"], "so give --global-batch (and --mbs"),
    (["--zero", "3"], "with --layout 'tp=1,zero=3,mbs=1'"),                 # was: did you mean --zero-grad?
    (["--nodes", "2"], "type --gpus (the GPU count over all nodes, with --gpus-per-node)"),   # was: --model?
    (["--lora"], "type --training lora (the training type"),
    (["--gradient-checkpointing"], "type --recompute (activation recomputation"),   # was: no hint at all
    (["--activation-checkpointing"], "type --recompute (activation recomputation"),
    (["--lora-r", "64"], "type --lora-rank (PEFT's LoraConfig r"),                   # was: did you mean --lora-rank?
    (["--load-in-4bit"], "type --training qlora (the training type"),
])
def test_another_tools_name_for_a_flag_is_told_the_flag_to_type(run_cli, typed, told):
    """A newcomer types the Trainer's or DeepSpeed's name for a setting; click's similarity guess
    offered --global-batch for --micro-batch and --zero-grad for --zero, and nothing for
    --grad-accum. The refusal names what shardwise takes instead."""
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", *typed)
    assert f"No such option '{typed[0]}'; " in err and told in err, err


def test_another_tools_name_for_a_job_file_key_is_told_the_key(run_cli, tmp_path):
    f = tmp_path / "job.yaml"
    f.write_text("model: llama-3-8b\nmicro_batch: 2\n")
    assert "unknown setting 'micro_batch'; type mbs (the micro-batch size" in refused(run_cli, "recommend", "-f", str(f))
    f.write_text("model: llama-3-8b\ngradient_accumulation_steps: 16\n")
    assert "so give global_batch (and mbs" in refused(run_cli, "recommend", "-f", str(f))
    f.write_text("model: llama-3-8b\ngradient_checkpointing: true\n")
    assert "unknown setting 'gradient_checkpointing'; type recompute (activation recomputation" in \
        refused(run_cli, "recommend", "-f", str(f))
    # a flag another command lacks keeps click's own answer: kb has no --gpus
    code, _, err = run_cli("kb", "gpus", "--nodes", "2")
    assert code == 2 and "--gpus" not in err


def test_a_mistyped_job_file_key_gets_a_did_you_mean(run_cli, tmp_path):
    f = tmp_path / "job.yaml"
    f.write_text("model: llama-3-8b\nseq_lenn: 8192\n")
    assert "did you mean seq_len" in refused(run_cli, "memory", "-f", str(f), "--layout", "tp=8")
    f.write_text("model: llama-3-8b\nfoo: 1\n")
    assert "allowed:" in refused(run_cli, "memory", "-f", str(f), "--layout", "tp=8")


@pytest.mark.parametrize("line, allowed", [
    ("recompute: off", "auto, none, selective, full, modules"),
    ("cuda_graphs: no", "none, full-iteration"),
    ("interconnect: yes", None),
    ("seq_len: on", "give a count of tokens, e.g. 32k"),
])
def test_a_yaml_boolean_for_a_named_setting_is_refused_with_what_is_allowed(run_cli, tmp_path, line, allowed):
    """YAML 1.1 reads an unquoted off / no / yes as a boolean: `recompute: off` was refused as
    "'recompute' must be str, got False", which names neither why nor the values the setting
    takes. The refusal says it was read as a boolean and, for a choice, what is allowed."""
    f = tmp_path / "job.yaml"
    f.write_text(f"model: llama-3-8b\n{line}\n")
    err = refused(run_cli, "memory", "-f", str(f), "--layout", "tp=8")
    key, word = line.split(": ")
    assert f"'{key}' reads as {'true' if word in ('yes', 'on') else 'false'}, a YAML boolean" in err, err
    assert (allowed if allowed and allowed.startswith("give") else f"allowed: {allowed}" if allowed
            else "give a name, quoted") in err, err


# --- sequence parallelism follows the framework --------------------------------------------

@pytest.mark.parametrize("framework", ["megatron", "deepspeed", "fsdp", "hf"])
def test_sp_defaults_to_what_the_framework_has(run_cli, framework):
    d = memory(run_cli, "--model", "llama-3-70b", "--gpus", "8", "--framework", framework,
               "--layout", "tp=4,dp=2,zero=3")
    assert d["layout"]["sp"] is frameworks.has_sequence_parallel(framework)


def test_a_pipeline_under_the_trainer_is_refused_and_never_searched(run_cli):
    """The transformers Trainer has no pipeline schedule: --layout with pp > 1 under hf is refused
    in one line, and the search never ranks one (two 40 GB cards, LoRA on an 8B model)."""
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "2", "--gpu", "a100-40gb",
                  "--training", "lora", "--layout", "pp=2")
    assert "has no pipeline schedule" in err and "[hf-no-pipeline]" in err
    code, out, err = run_cli("search", "--model", "llama-3-8b", "--gpus", "2", "--gpu", "a100-40gb",
                             "--training", "lora", "--format", "json")
    assert code == 0, err
    found = json.loads(out)
    assert found["top"] and all(r["layout"]["pp"] == 1 for r in found["top"])
    assert {e["rule"]: e["excluded"] for e in found["search"]["excluded"]}["hf-no-pipeline"] > 0


def test_expert_parallelism_a_framework_cannot_run_is_refused_and_never_recommended(run_cli):
    """Expert parallelism under the Trainer and DeepSpeed is DeepSpeed AutoEP (deepspeed 0.19.8),
    for the families it has a preset for and within its limits; elsewhere DeepSpeed's MoE layer,
    which refuses ZeRO-3. Mixtral on 64 H100s: AutoEP runs ep=8 with ZeRO-3 under either, not with
    an mpu's TP; gpt-oss has no preset: the Trainer has no EP for it, and DeepSpeed's MoE layer no
    ZeRO-3. A layout asking for what cannot run is refused in one line naming the rule; the
    recommendation never picks one."""
    mixtral, oss = ["--model", "mixtral-8x7b", "--gpus", "64"], ["--model", "gpt-oss-20b", "--gpus", "64"]
    for framework in ("hf", "deepspeed"):
        assert memory(run_cli, *mixtral, "--framework", framework, "--layout", "ep=8,zero=3")["layout"]["ep"] == 8
        err = refused(run_cli, "memory", *mixtral, "--framework", framework, "--layout", "tp=2,ep=8,zero=1")
        assert "[autoep-limits]" in err and "use tp=1, or ep=1" in err
    err = refused(run_cli, "memory", *mixtral, "--framework", "deepspeed", "--layout", "cp=2,ep=8,zero=3")
    assert "[autoep-limits]" in err and "Ulysses" in err
    err = refused(run_cli, "memory", *mixtral, "--framework", "hf", "--layout", "ep=8,zero=0")
    assert "[hf-expert-parallel]" in err and "zero=1 or higher" in err
    err = refused(run_cli, "memory", *oss, "--framework", "hf", "--layout", "ep=8,zero=3")
    assert "[hf-expert-parallel]" in err and "no preset for gpt_oss" in err and "mixtral" in err
    err = refused(run_cli, "memory", *oss, "--framework", "deepspeed", "--layout", "ep=8,zero=3")
    assert "[deepspeed-moe-zero3]" in err and "ZeRO Stage 3" in err
    assert memory(run_cli, *oss, "--framework", "deepspeed", "--layout", "ep=8,zero=2")["layout"]["ep"] == 8
    for base, framework, ok in ((mixtral, "hf", lambda lay: lay["ep"] == 1 or (lay["tp"] == lay["cp"] == 1
                                                                              and lay["zero_stage"] >= 1)),
                                (oss, "hf", lambda lay: lay["ep"] == 1),
                                (oss, "deepspeed", lambda lay: lay["ep"] == 1 or lay["zero_stage"] <= 2)):
        code, out, err = run_cli("recommend", *base, "--framework", framework, "--format", "json")
        assert code == 0, err
        assert ok(json.loads(out)["layout"]), (base, framework)

def test_the_default_interconnect_is_stated_only_where_a_job_crosses_nodes():
    """The inter-node link changes a multi-node answer, so its default is an assumption line;
    inside one NVLink domain (one H100 node, 64 GB200s of an NVL72 rack) it cannot, and is not."""
    def defaults_line(**kw):
        lines = [a for a in assumptions(build_job(model="llama-3-70b", **kw)) if a.startswith("defaults used")]
        return lines[0] if lines else ""
    assert "infiniband-ndr between nodes" in defaults_line(gpus=64)
    assert "between nodes" not in defaults_line(gpus=8)
    assert "between nodes" not in defaults_line(gpus=64, gpu="gb200")
    assert "between nodes" not in defaults_line(gpus=64, interconnect="roce")
    # a word for the link inside a node leaves the one between nodes a default, and says so
    for inside in ("nvlink", "pcie", "NVLink"):
        assert "infiniband-ndr between nodes" in defaults_line(gpus=64, interconnect=inside), inside
    assert "between nodes" not in defaults_line(gpus=64, interconnect="infiniband")


def test_a_chunked_loss_is_torchtitans_and_divides_the_sequence(run_cli):
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--framework", "hf", "--loss-chunks", "8",
                  "--layout", "dp=8,zero=3,mbs=1")
    assert "--loss-chunks 8" in err and "ChunkedLossWrapper" in err and "--framework fsdp" in err
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--framework", "fsdp", "--loss-chunks", "3",
                  "--layout", "dp=8,zero=3,mbs=1")
    assert "--loss-chunks 3 does not divide --seq-len 4096" in err and "e.g. 1, 2, 4, 8" in err
    # ... refused by recommend too, as bad input, not answered NO LAYOUT: no CP degree could make it divide
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--framework", "fsdp", "--loss-chunks", "3")
    assert "--loss-chunks 3 does not divide --seq-len 4096" in err
    # a count that divides the sequence but not one CP rank's share is the layout's matter
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "24", "--framework", "fsdp", "--seq-len", "6144",
                  "--loss-chunks", "3", "--layout", "dp=8,cp=3,zero=3,mbs=1")
    assert "3 equal sequence chunks" in err and "[loss-chunks-split-sequence]" in err
    # torchtitan chunks each rank's share of the sequence: 6000 / cp 4 = 1500 tokens, not a multiple of 8
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "16", "--framework", "fsdp", "--seq-len", "6000",
                  "--layout", "dp=4,cp=4,zero=3,mbs=1")
    assert "each rank's 1500 tokens" in err and "--loss-chunks 1" in err
    assert "--loss-chunks 0" in refused(run_cli, "memory", "--model", "llama-3-8b", "--framework", "fsdp",
                                        "--loss-chunks", "0", "--layout", "dp=8,zero=3,mbs=1")
    code, out, err = run_cli("memory", "--model", "llama-3-8b", "--framework", "fsdp", "--format", "json",
                             "--layout", "dp=8,zero=3,mbs=1")
    assert code == 0 and json.loads(out)["job"]["loss_chunks"] == 8, err


def test_compare_says_why_a_variant_has_no_layout(run_cli):
    """A variant no layout can run is not reported as one that does not fit in memory: a loss
    chunk count that divides no share of the sequence is refused in its row, as bad input."""
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--framework", "fsdp", "--vary", "loss_chunks=1,3")
    assert code == 0, err
    assert "refused: --loss-chunks 3 does not divide --seq-len 4096" in out and "nothing fits" not in out
    code, out, err = run_cli("compare", "--model", "llama-3-70b", "--gpus", "2", "--vary", "seq_len=4096")
    assert code == 0 and "nothing fits" in out, err


def test_sdpa_on_a_soft_capped_transformers_model_is_refused(run_cli):
    """transformers has no SDPA path for Gemma 2's soft-capped logits: the Trainer cannot run what
    the estimate would size; eager and the FlashAttention kernels can, and Megatron's own kernel
    is not transformers' choice to refuse."""
    err = refused(run_cli, "recommend", "--model", "gemma-2-9b", "--gpus", "8", "--framework", "hf",
                  "--attention", "sdpa")
    assert "--attention sdpa" in err and "soft-capped" in err and "allowed: eager, flash, flash2" in err
    for attention in ("eager", "flash2"):
        code, _, err = run_cli("memory", "--model", "gemma-2-9b", "--gpus", "8", "--framework", "hf",
                               "--attention", attention, "--layout", "dp=8,zero=3,mbs=1,recompute=full")
        assert code == 0, err


def test_sdpa_on_gpt_oss_under_transformers_is_refused(run_cli):
    """transformers' gpt-oss has no SDPA path (GptOssPreTrainedModel._supports_sdpa is False: SDPA
    has no attention sinks), so from_pretrained(attn_implementation="sdpa") raises and the
    Trainer cannot run what the estimate would size; eager (its default) and FlashAttention can,
    and a framework that is not transformers is not refused here."""
    for framework in ("hf", "deepspeed"):
        err = refused(run_cli, "memory", "--model", "gpt-oss-20b", "--gpus", "8", "--framework", framework,
                      "--attention", "sdpa", "--layout", "dp=8,zero=3,mbs=1,recompute=full")
        assert "--attention sdpa" in err and "_supports_sdpa = False" in err
        assert err.rstrip().endswith("allowed: eager (its default), flash")
    for attention in ("eager", "flash"):
        code, _, err = run_cli("memory", "--model", "gpt-oss-20b", "--gpus", "8", "--framework", "hf",
                               "--attention", attention, "--layout", "dp=8,zero=3,mbs=1,recompute=full")
        assert code == 0, err


def test_flash_attention_2_on_gpt_oss_under_transformers_is_refused(run_cli):
    """transformers 5.24 swaps attn_implementation="flash_attention_2" on gpt-oss for the first
    kernel it lists with attention sinks (GptOssPreTrainedModel._compatible_flash_implementations:
    kernels-community/vllm-flash-attn3), so a FlashAttention-2 estimate sizes a kernel that never
    runs; --attention flash times the FA3-class kernel it does run."""
    err = refused(run_cli, "memory", "--model", "gpt-oss-20b", "--gpus", "8", "--framework", "hf",
                  "--attention", "flash2", "--layout", "dp=8,zero=3,mbs=1,recompute=full")
    assert "--attention flash2" in err and "vllm-flash-attn3" in err and err.rstrip().endswith("allowed: flash, eager")


def test_a_lora_rank_on_a_job_without_adapters_is_refused(run_cli):
    """A stray --lora-rank is refused, not ignored; where compare varies the training type it
    belongs to the LoRA rows, and the full fine-tuning row is answered without it."""
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--lora-rank", "32")
    assert "--lora-rank" in err and "lora or qlora" in err and "pretrain" in err
    assert "--lora-rank" in refused(run_cli, "compare", "--model", "llama-3-8b", "--vary", "gpus=8,16",
                                    "--lora-rank", "32")
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", "training=lora,finetune",
                             "--lora-rank", "32", "--format", "json")
    assert code == 0, err
    rows = {r["variant"]["training"]: r for r in json.loads(out)["variants"]}
    assert rows["lora"]["best"] and rows["finetune"]["best"]


def test_a_lora_dropout_is_sized_where_peft_runs_it_and_refused_where_it_cannot_run(run_cli):
    """--lora-dropout: each adapter's dropped-out input and mask raise a Trainer LoRA's memory;
    a stray one on a job without adapters, a probability of 1 or more, and one on an MoE whose
    experts PEFT merges (ParamWrapper refuses lora_dropout != 0) are refused in one line; the
    default is stated, and a framework whose estimate leaves the adapters' tensors out says so."""
    job = ["--model", "llama-3-8b", "--gpus", "1", "--training", "lora", "--seq-len", "8192",
           "--layout", "mbs=2,recompute=none", "--format", "json"]
    acts = {}
    for p in ("0", "0.1"):
        code, out, err = run_cli("memory", *job, "--lora-dropout", p)
        assert code == 0, err
        acts[p] = json.loads(out)["memory"]["breakdown_gib"]["activations"]
    assert acts["0.1"] > acts["0"] * 1.1
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--lora-dropout", "0.1")
    assert "--lora-dropout" in err and "lora or qlora" in err and "pretrain" in err
    assert "--lora-dropout" in refused(run_cli, "recommend", "--model", "llama-3-8b", "--training", "lora",
                                       "--lora-dropout", "1")
    err = refused(run_cli, "recommend", "--model", "mixtral-8x7b", "--training", "lora", "--lora-dropout", "0.05")
    assert "ParamWrapper" in err and "allowed for this model under PEFT: 0" in err
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--training", "lora", "--format", "json")
    assert code == 0 and any("LoRA dropout 0 (PEFT's and Megatron-Bridge's default)" in a for a in json.loads(out)["assumptions"])
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--training", "lora", "--framework", "fsdp",
                             "--lora-dropout", "0.05", "--format", "json")
    assert code == 0, err
    assert any(a.startswith("LoRA dropout 0.05:") and "not in this fsdp estimate" in a
               for a in json.loads(out)["assumptions"])


def test_compare_refuses_an_adapter_setting_no_varied_training_type_takes(run_cli):
    """--lora-rank / --lora-dropout with --vary training over types without adapters: every row
    would drop it silently (a job value that vanishes), so it is refused in one line, as on one
    job; a row list with a LoRA row keeps it for that row."""
    for flag, value in (("--lora-dropout", "0.1"), ("--lora-rank", "8")):
        err = refused(run_cli, "compare", "--model", "llama-3-8b", "--vary", "training=finetune,pretrain", flag, value)
        assert f"{flag} {value}" in err and "lora or qlora" in err and "training=finetune,pretrain" in err
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", "training=finetune,qlora",
                             "--lora-dropout", "0.1", "--format", "json")
    assert code == 0, err


def test_a_negative_zero_reads_as_zero(run_cli):
    """--lora-dropout -0 (or --vary lora_dropout=-0) is 0: the row says 0.0, never '-0.0', and it
    is the same value as 0 (one row, not two)."""
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--training", "lora", "--vary",
                             "lora_dropout=-0,0.1")
    assert code == 0, err
    assert "-0.0" not in out and "\n0.0 " in out
    assert "more than once" in refused(run_cli, "compare", "--model", "llama-3-8b", "--training", "lora",
                                       "--vary", "lora_dropout=-0,0")


def test_recompute_modes_a_framework_cannot_run_are_refused_and_never_searched(run_cli):
    """A transformers model checkpoints whole decoder layers: selective or per-module
    recomputation under hf (the Mistral LoRA a reviewer saw headlined with recompute=modules) is
    refused in one line, pinned or in a layout, and the search ranks only none and full."""
    err = refused(run_cli, "recommend", "--model", "mistral-7b", "--gpus", "1", "--gpu", "l40s",
                  "--training", "lora", "--recompute", "selective")
    assert "--recompute selective" in err and "allowed: none, full" in err
    err = refused(run_cli, "memory", "--model", "mistral-7b", "--gpus", "1", "--gpu", "l40s",
                  "--training", "lora", "--layout", "recompute=modules")
    assert "[recompute-framework]" in err
    code, out, err = run_cli("search", "--model", "mistral-7b", "--gpus", "1", "--gpu", "l40s",
                             "--training", "lora", "--top", "50", "--format", "json")
    assert code == 0, err
    assert {r["layout"]["recompute"] for r in json.loads(out)["top"]} <= {"none", "full"}
    # and explain names the rule that forbids them, not the first rule most of their candidates break
    code, out, err = run_cli("explain", "--model", "mistral-7b", "--gpus", "1", "--gpu", "l40s",
                             "--training", "lora", "--why", "recompute")
    assert code == 0, err
    assert "recompute=modules: no valid layout (validity: recompute-framework)" in out


def test_full_iteration_cuda_graphs_are_megatron_only_and_need_expert_tp_1(run_cli, tmp_path):
    """Only Megatron-Core captures a whole training step in one graph: under another framework
    --cuda-graphs full-iteration is refused in one line naming what is allowed, from a flag or a
    job file; and a MoE job needs MXFP8 on Blackwell, and a layout without expert TP, for the
    fused grouped MLP the padded capacity runs on."""
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--gpus", "8", "--framework", "fsdp",
                  "--cuda-graphs", "full-iteration")
    assert "--cuda-graphs full-iteration" in err and "allowed with --framework fsdp: none" in err
    err = refused(run_cli, "memory", "--model", "mixtral-8x7b", "--gpus", "8", "--gpu", "gb200", "--precision", "fp8",
                  "--cuda-graphs", "full-iteration", "--layout", "tp=2,sp=on,dp=4,ep=2,etp=2,zero=1")
    assert "etp=2 with --cuda-graphs full-iteration" in err and "etp=1" in err
    # a captured MoE layer needs the fused grouped MLP: MXFP8 on Blackwell
    for flags in (["--gpu", "h100-sxm", "--precision", "fp8"], ["--gpu", "gb200", "--precision", "bf16"]):
        err = refused(run_cli, "recommend", "--model", "mixtral-8x7b", "--cuda-graphs", "full-iteration", *flags)
        assert "MXFP8 on Blackwell" in err and "--precision fp8 with --gpu b200, b300, gb200, gb300" in err
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--cuda-graphs", "partial")
    assert "--cuda-graphs" in err and "full-iteration" in err
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b\ngpus: 8\nframework: hf\ncuda_graphs: full-iteration\n")
    assert "allowed with --framework hf: none" in refused(run_cli, "recommend", "-f", str(job))
    assert "--vary" in refused(run_cli, "compare", "--model", "llama-3-8b", "--vary", "cuda_graphs=on,none")


def test_sp_on_for_a_framework_without_it_is_refused(run_cli):
    assert not frameworks.has_sequence_parallel("hf")
    err = refused(run_cli, "memory", "--model", "llama-3-70b", "--gpus", "8", "--framework", "hf",
                  "--layout", "tp=4,sp=on")
    assert "no sequence parallelism" in err and "megatron" in err
    d = memory(run_cli, "--model", "llama-3-70b", "--gpus", "8", "--framework", "megatron",
               "--layout", "tp=4,pp=2,sp=off")
    assert d["layout"]["sp"] is False


def test_sequence_parallelism_megatron_cannot_split_is_refused_and_never_recommended(run_cli):
    """Megatron's SP scatters each CP rank's seq / cp tokens over the TP ranks and asserts they
    divide (tensor_parallel/mappings.py _split_along_first_dim): 300,000 tokens over cp 16 is
    18,750 a rank, which tp 8 does not divide, so the run would stop at its first forward."""
    job = ("--model", "llama-3-70b", "--gpus", "256", "--framework", "megatron", "--seq-len", "300000")
    err = refused(run_cli, "memory", *job, "--layout", "tp=8,cp=16,sp=on,mbs=1")
    assert "18750" in err and "tp=8" in err and "sp=off" in err
    assert memory(run_cli, *job, "--layout", "tp=8,cp=16,sp=off,mbs=1")["layout"]["sp"] is False
    assert memory(run_cli, *job, "--layout", "tp=2,cp=16,sp=on,mbs=1")["layout"]["sp"] is True
    code, out, err = run_cli("recommend", *job, "--format", "json")
    assert code == 0, err
    lay = json.loads(out)["layout"]
    assert not lay["sp"] or 300000 // lay["cp"] % lay["tp"] == 0, lay


def test_every_framework_says_whether_it_has_sp():
    profiles = catalog.raw("frameworks")["frameworks"]
    assert all(isinstance(p["sequence_parallel"], bool) for p in profiles.values())
    assert [f for f in sorted(profiles) if frameworks.has_sequence_parallel(f)] == ["fsdp", "megatron"]


def test_an_interleaved_pipeline_megatron_cannot_schedule_is_refused(run_cli):
    """Megatron-Core runs interleaved micro-batches in groups of pp and refuses a remainder:
    10 micro-batches over pp 4 is refused in one line; 12 runs. torch's Interleaved1F1B only
    needs its rounds (max(1, m // pp)) to divide m, so fsdp takes 10 over pp 4 (2 rounds of 5)."""
    job = ("--model", "llama-3-70b", "--gpus", "64", "--gpu", "h100-sxm")
    err = refused(run_cli, "memory", *job, "--framework", "megatron", "--global-batch", "20",
                  "--layout", "tp=8,pp=4,vp=5,dp=2,mbs=1")
    assert "grad_accum=10" in err and "multiple of pp" in err and "vp=1" in err
    d = memory(run_cli, *job, "--framework", "megatron", "--global-batch", "24", "--layout", "tp=8,pp=4,vp=5,dp=2,mbs=1")
    assert d["layout"]["vp"] == 5
    # torchtitan builds 82 slots (80 layers, embedding, output) into 28 stages of 3 at pp 4 x vp 7
    # (torch-stage-split; vp 5 would make 17)
    d = memory(run_cli, *job, "--framework", "fsdp", "--global-batch", "20", "--layout", "tp=8,pp=4,vp=7,dp=2,mbs=1")
    assert d["layout"]["vp"] == 7
    err = refused(run_cli, "memory", *job, "--framework", "fsdp", "--global-batch", "22",
                  "--layout", "tp=8,pp=4,vp=7,dp=2,mbs=1")
    assert "2 rounds" in err


def test_the_searched_interleaved_layouts_are_ones_megatron_schedules():
    import numpy as np
    from shardwise.search.space import build_space
    space = build_space(build_job(model="llama-3-70b", gpus=64), 96)
    a = space.arrays
    inter = a["vp"] > 1
    assert inter.any() and np.all(a["grad_accum"][inter] % a["pp"][inter] == 0)
    assert {e["rule"]: e["excluded"] for e in space.excluded}["vp-microbatches"] > 0


def test_an_rlhf_estimate_says_its_step_time_counts_the_policy_only(run_cli):
    """PPO's critic, reference, reward and generation are not timed: the output says so instead
    of presenting a fine-tuning step as a PPO step."""
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "16", "--training", "rlhf",
                             "--format", "json")
    assert code == 0, err
    notes = [a for a in json.loads(out)["assumptions"] if a.startswith("rlhf:")]
    assert len(notes) == 1 and "lower bound on time" in notes[0] and "4 PPO models" in notes[0]


def test_an_rlhf_comparison_says_its_hours_and_cost_leave_out_the_rollout(run_cli):
    """compare prices an RLHF job in hours and dollars; it dropped every assumption all rows
    share, the RLHF scope among them, so its table read as a PPO run's cost with nothing saying
    generation and the critic are not in it. The scope is said once, for every row."""
    code, out, err = run_cli("compare", "--model", "qwen2.5-0.5b", "--training", "rlhf", "--token-budget", "1B",
                             "--price-per-gpu-hour", "2", "--vary", "gpus=8,16")
    assert code == 0, err
    said = [line for line in out.splitlines() if "rlhf:" in line]
    assert len(said) == 1 and said[0].startswith("assumption (every row): rlhf:") and "lower bound on time" in said[0]


@pytest.mark.parametrize("args, says", [
    (("--training", "finetune", "--rl-algorithm", "dpo"), "--rl-algorithm: applies to --training rlhf only"),
    (("--training", "rlhf", "--rl-algorithm", "dpo", "--global-batch", "127"),
     "--global-batch 127 under --rl-algorithm dpo: the batch counts sequences, each preference pair two"),
    (("--training", "rlhf", "--rl-algorithm", "sac"), "'sac' is not one of 'ppo', 'grpo', 'dpo'"),
])
def test_rl_algorithm_refuses_what_it_cannot_size(run_cli, args, says):
    code, out, err = run_cli("recommend", "--model", "qwen2.5-0.5b", "--gpus", "8", *args)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_dpo_layouts_hold_whole_preference_pairs(run_cli, tmp_path):
    """DPO runs chosen and rejected in one forward: a micro-batch of one sequence is half a pair.
    recommend picks an even micro-batch, memory refuses an odd one by its rule, and the job file
    takes the same key as the flag."""
    job = tmp_path / "dpo.yaml"
    job.write_text("model: qwen2.5-0.5b\ngpus: 8\ntraining: rlhf\nrl_algorithm: dpo\n")
    code, out, err = run_cli("recommend", "-f", str(job), "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["layout"]["mbs"] % 2 == 0
    assert [a for a in got["assumptions"] if a.startswith("rlhf: dpo:")]
    code, out, err = run_cli("memory", "-f", str(job), "--layout", "dp=8,zero=3,mbs=1")
    assert code == 2 and err.strip().endswith("[dpo-pairs]") and len(err.strip().splitlines()) == 1


def test_hf_config_takes_a_model_folder(run_cli, tmp_path):
    """A downloaded model is a folder with config.json in it: the folder is read as its
    config.json, and a folder without one is refused in one line."""
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 16,
        "num_hidden_layers": 16, "vocab_size": 32000}))
    code, out, err = run_cli("memory", "--hf-config", str(tmp_path / "tiny"), "--gpus", "8", "--layout", "tp=1",
                             "--format", "json")
    assert code == 0, err
    assert json.loads(out)["job"]["model"] == "tiny"
    (tmp_path / "empty").mkdir()
    code, out, err = run_cli("memory", "--hf-config", str(tmp_path / "empty"), "--gpus", "8", "--layout", "tp=1")
    assert code == 2 and "without a config.json" in err and len(err.strip().splitlines()) == 1


def test_zero_grad_zeros_keeps_the_gradients_and_applies_to_pytorch_loops(run_cli, tmp_path):
    """--zero-grad zeros (optimizer.zero_grad(set_to_none=False)) keeps the fp32 gradients of a
    Trainer-style job from the first step on, so the forward holds them too; Megatron and
    DeepSpeed keep their gradient buffers either way, and the setting is refused there in one
    line, from a flag or a job file."""
    args = ("--model", "llama-3.2-1b", "--gpus", "1", "--framework", "hf", "--training", "finetune",
            "--seq-len", "2048", "--global-batch", "1", "--layout", "mbs=1,recompute=full")
    freed = memory(run_cli, *args)["memory"]["phases"]["forward"]["live_gib"]
    kept = memory(run_cli, *args, "--zero-grad", "ZEROS")["memory"]["phases"]["forward"]["live_gib"]
    assert "gradients" not in freed
    assert kept["gradients"] == pytest.approx(kept["weights"], rel=1e-3)      # fp32 grads of fp32 weights
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--gpus", "8", "--framework", "megatron",
                  "--zero-grad", "zeros")
    assert "--zero-grad zeros" in err and "--framework hf or fsdp" in err
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b\ngpus: 8\nframework: deepspeed\nzero_grad: zeros\n")
    assert "--zero-grad zeros" in refused(run_cli, "recommend", "-f", str(job))


def test_eager_attention_takes_no_context_parallelism(run_cli):
    """CP rings a fused attention kernel; an eager layout with cp > 1 is refused by name, and the
    advisor never answers one."""
    err = refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "8", "--framework", "hf", "--attention", "eager",
                  "--seq-len", "16384", "--global-batch", "8", "--layout", "tp=1,pp=1,cp=2,zero=3,mbs=1,recompute=full")
    assert "cp=2 with --attention eager" in err and "[cp-fused-attention]" in err
    out = memory(run_cli, "--model", "llama-3-8b", "--gpus", "8", "--framework", "hf", "--attention", "eager",
                 "--seq-len", "16384", "--global-batch", "8", "--layout", "tp=1,pp=1,cp=1,zero=3,mbs=1,recompute=full")
    assert out["memory"]["peak_gib"] > 0
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--framework", "hf",
                             "--attention", "eager", "--seq-len", "16384", "--format", "json")
    assert code == 0 and json.loads(out)["layout"]["cp"] == 1


def test_exports_say_the_loop_keeps_its_gradients(run_cli, tmp_path):
    """--zero-grad zeros is the training loop's call: each export of a PyTorch loop's layout says
    so, as something its file cannot express."""
    code, out, err = run_cli("export", "--model", "llama-3.2-1b", "--gpus", "8", "--framework", "fsdp",
                             "--training", "finetune", "--zero-grad", "zeros", "--to", "fsdp", "-o", str(tmp_path / "x"))
    assert code == 0, err
    assert "optimizer.zero_grad(set_to_none=False)" in out + err


def test_a_config_names_what_shardwise_does_not_size(run_cli, tmp_path):
    """A reward or classification head is refused in one line; a newline in the model's name
    cannot end an exported script's comment and start a command; a quantization_config the
    estimate does not apply is said."""
    base = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 16,
            "num_key_value_heads": 8, "num_hidden_layers": 16, "vocab_size": 32000}
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**base, "architectures": ["LlamaForSequenceClassification"], "num_labels": 1}))
    code, out, err = run_cli("memory", "--hf-config", str(cfg), "--gpus", "8", "--layout", "tp=1")
    assert code == 2 and "LlamaForSequenceClassification" in err and "ForCausalLM" in err
    assert len(err.strip().splitlines()) == 1
    cfg.write_text(json.dumps({**base, "_name_or_path": "evil\ntouch /tmp/x\n#",
                               "quantization_config": {"quant_method": "awq", "bits": 4}}))
    code, out, err = run_cli("export", "--hf-config", str(cfg), "--gpus", "8", "--to", "megatron",
                             "-o", str(tmp_path / "out"))
    assert code == 0, err
    script = next((tmp_path / "out").rglob("*.sh")).read_text()
    assert not any(line.startswith("touch") for line in script.splitlines())
    code, out, err = run_cli("recommend", "--hf-config", str(cfg), "--gpus", "8", "--format", "json")
    assert code == 0, err
    assert any("quantization_config (quant_method 'awq')" in a for a in json.loads(out)["assumptions"])


@pytest.mark.parametrize("gpus", [40, 56, 80, 104, 120, 136, 152, 200, 240])
def test_the_default_fine_tuning_batch_leaves_the_trainer_a_layout(run_cli, gpus):
    """The Trainer has no pipeline: DP = GPUs / (TP x CP). 128 sequences (or 132) is a multiple
    of no such degree on 40-240 H100s, which gave NO LAYOUT for an 8B LoRA job; the default now
    moves to a count a layout of TP alone can split (kb/batch.py), up to 25% where 5% has none."""
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", str(gpus), "--training", "lora",
                             "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"] is not None, d["warnings"]
    assert 96 <= d["layout"]["global_batch"] <= 160


def test_a_batch_that_leaves_no_layout_is_named_with_the_nearest_that_do(run_cli):
    """A user's 128 sequences on 40 GPUs under the Trainer: the refusal says that the batch is
    what is in the way and names the nearest batches that leave layouts."""
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "40", "--training", "lora",
                             "--global-batch", "128", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"] is None
    assert "the global batch of 128 sequences is what leaves none" in d["search"]["nothing_allowed"]
    assert "125 or 130 sequences would leave layouts" in d["search"]["nothing_allowed"]


def test_a_model_name_cannot_start_a_yaml_key_in_an_export(run_cli, tmp_path):
    """Unicode line and paragraph separators (and C1 controls) end a YAML value as a newline does:
    a config.json name holding one is written with a space in its place."""
    import yaml
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
                               "num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 16,
                               "vocab_size": 32000, "_name_or_path": "m\u2028injected_key: 1\u0085other: 2\u009b"}))
    code, out, err = run_cli("export", "--hf-config", str(cfg), "--gpus", "8", "--to", "all", "--layout",
                             "dp=8,zero=1", "-o", str(tmp_path / "out"))
    assert code == 0, err
    for name in ("accelerate_config.yaml", "nanotron.yaml"):
        for path in (tmp_path / "out").rglob(name):
            assert "injected_key" not in yaml.safe_load(path.read_text())


def test_a_given_micro_batch_no_count_within_5_percent_holds_moves_to_its_multiple_and_says_so():
    """203K tokens of 8,192 are 25.4 sequences; with --mbs 3 neither 25 nor 26 holds whole
    micro-batches, so the batch is 24, 5.4% off -- said as the nearest count the micro-batch
    divides. It had said 'the count within 5%' (found by hypothesis 6.170's examples)."""
    job = build_job(model="llama-3-8b", gpus=1, seq_len=8192, mbs=3, global_batch_tokens="203K")
    n, (said,) = global_batch(job)
    assert n == 24 and "the nearest count that the micro-batch, 3, divides" in said and "within 5%" not in said


def test_the_json_job_section_echoes_the_optimizer_and_an_adapter_jobs_lora_settings(run_cli):
    """What the user gave, or the default used, is in --format json's job section: the optimizer
    for every job, LoRA's rank and dropout for an adapter job (none for one training every weight)."""
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--training", "lora", "--lora-rank", "32",
                             "--lora-dropout", "0.05", "--optimizer", "adamw-8bit", "--format", "json")
    assert code == 0, err
    job = json.loads(out)["job"]
    assert (job["optimizer"], job["lora_rank"], job["lora_dropout"]) == ("adamw-8bit", 32, 0.05)
    code, out, err = run_cli("search", "--model", "llama-3-8b", "--top", "1", "--format", "json")
    assert code == 0, err
    job = json.loads(out)["job"]
    assert job["optimizer"] == "adamw" and job["lora_rank"] is None and job["lora_dropout"] is None


def test_ulysses_that_would_drop_a_sliding_window_is_refused(run_cli):
    """DeepSpeed's Ulysses (cp > 1 under deepspeed and the Trainer) sets transformers' attention
    mask to None (ulysses_sp.py uattn_wrapper), and SDPA then runs every layer causal over the
    whole sequence: Mistral 7B's 4,096-token windows would be gone, another model. flash-attn
    takes the window from the module, and below the window the mask is the causal one."""
    layout = ("--layout", "dp=4,cp=2,zero=3,mbs=1,recompute=full")
    job = ("memory", "--model", "mistral-7b", "--gpus", "8", "--framework", "deepspeed", "--seq-len", "32768")
    err = refused(run_cli, *job, "--attention", "sdpa", *layout)
    assert "drops transformers' attention mask" in err and "32 sliding-window layers" in err
    assert "use cp=1, or --attention flash or flash2" in err and "[ulysses-keeps-local-attention]" in err
    for ok in ((*job, "--attention", "flash", *layout),
               ("memory", "--model", "mistral-7b", "--gpus", "8", "--framework", "deepspeed", "--seq-len", "4096",
                "--attention", "sdpa", *layout)):
        code, _, err = run_cli(*ok)
        assert code == 0, err


def test_torchtitan_has_no_replicated_layout_with_context_parallelism(run_cli):
    """torchtitan shards over the dp_shard x cp ranks whenever CP is on (ParallelDims.fsdp_enabled =
    dp_shard_enabled or cp_enabled), so ZeRO-0 with CP is refused under fsdp, naming the way out;
    ZeRO-3 with CP, and ZeRO-0 without it, run."""
    job = ("memory", "--model", "llama-3-8b", "--gpus", "8", "--framework", "fsdp", "--seq-len", "32768")
    err = refused(run_cli, *job, "--layout", "dp=4,cp=2,zero=0,mbs=1,recompute=full")
    assert "ParallelDims.fsdp_enabled" in err and "use zero=2 or 3, or cp=1" in err and "[torchtitan-cp-shards]" in err
    for ok in ("dp=4,cp=2,zero=3,mbs=1,recompute=full", "dp=8,zero=0,mbs=1,recompute=full"):
        code, _, err = run_cli(*job, "--layout", ok)
        assert code == 0, err


def test_the_trainers_batch_note_says_which_count_allows_which_dp_degrees():
    """Gemma 3 12B on 16 GPUs at --mbs 3 read '(the Trainer has no pipeline: GPUs / TP, TP 1, 2, 4,
    8: 2: 4, 2; 128 allows none), then any (3: 1, 2, 4; ...)': a count and its degrees joined by
    colons a reader took for ratios. Each count now says how many degrees it allows, and which."""
    job = build_job(model="gemma-3-12b", gpus=16, seq_len=8192, training="finetune", mbs=3)
    n, (text,) = global_batch(job)
    assert n == 132 and "so DP = GPUs / TP for TP 1, 2, 4, 8; 132 allows 2 degrees, DP 4, 2; " \
        "128 allows no degree), then any (132 allows 3 degrees, DP 1, 2, 4; 128 allows no degree)" in text


def test_torchtitan_does_not_pipeline_a_model_with_tied_embeddings(run_cli):
    """torchtitan raises 'Weight tying is not supported with Pipeline Parallel' at start
    (Decoder.Config.update_from_config), so Llama 3.2 3B (tied) under fsdp is refused at pp 2 and
    its headline does not pipeline; Llama 3 8B (untied) may."""
    err = refused(run_cli, "memory", "--model", "llama-3.2-3b", "--gpus", "8", "--framework", "fsdp",
                  "--layout", "pp=2,dp=4,zero=3,mbs=1,recompute=full")
    assert "Weight tying is not supported with Pipeline Parallel" in err and "[torchtitan-tied-pipeline]" in err
    code, out, err = run_cli("recommend", "--model", "llama-3.2-3b", "--gpus", "8", "--framework", "fsdp",
                             "--global-batch", "100", "--format", "json")
    assert code == 0 and json.loads(out)["layout"]["pp"] == 1, err
    code, _, err = run_cli("memory", "--model", "llama-3-8b", "--gpus", "8", "--framework", "fsdp",
                           "--layout", "pp=2,dp=4,zero=3,mbs=1,recompute=full")
    assert code == 0, err


def test_the_loop_settings_a_job_left_out_are_stated_where_they_change_the_answer():
    """The allocator (its fragmentation allowance decides fits near capacity), zero_grad (whether a
    loop's gradients live through the forward) and, under fsdp, the loss's chunking (the logits a
    step holds) are stated when left at their defaults, each only where it applies: no zero_grad
    or chunking for Megatron, whose buffers and loss are its own."""
    def line(**kw):
        texts = [a for a in assumptions(build_job(model="llama-3-8b", gpus=8, training="finetune", **kw))
                 if a.startswith("defaults used")]
        return texts[0] if texts else ""
    fsdp = line(framework="fsdp")
    assert "allocator expandable segments (torchtitan's run_train.sh sets them)" in fsdp
    assert "zero_grad set-to-none" in fsdp and "loss in 8 sequence chunks" in fsdp
    hf = line(framework="hf")
    assert "allocator caching (PyTorch's default)" in hf and "zero_grad set-to-none" in hf and "loss" not in hf
    megatron = line(framework="megatron")
    assert "allocator caching" in megatron and "zero_grad" not in megatron and "loss" not in megatron
    given = line(framework="fsdp", allocator="expandable", zero_grad="set-to-none", loss_chunks=8)
    assert "allocator" not in given and "zero_grad" not in given and "loss" not in given
    # --allocator default names none: the framework's own, which the answer says as if left out
    assert "allocator expandable segments (torchtitan's run_train.sh sets them)" in line(framework="fsdp",
                                                                                          allocator="default")
    assert "allocator caching (PyTorch's default)" in line(framework="deepspeed", allocator="default")


def test_pcie_inside_a_node_is_the_gpus_own_generation():
    """`--interconnect pcie` on an NVLink GPU times the node at the GPU's own host PCIe
    (kb/data/gpus.yaml host_pcie): Gen4 on an A100, whose TP all-reduces it carries at half
    Gen5's rate; Gen5 on an H100. The A100 PCIe card is its own catalog entry on Gen4."""
    def intra(**kw):
        return build_job(model="llama-3-8b", gpus=16, interconnect="pcie", **kw).cluster.intra.name
    assert intra(gpu="a100-80gb") == "pcie4" and intra(gpu="a100-40gb") == "pcie4"
    assert intra(gpu="h100-sxm") == "pcie5" and intra(gpu="a100-80gb-pcie") == "pcie4"
    assert build_job(model="llama-3-8b", gpus=16, gpu="a100-80gb-pcie").cluster.intra.name == "pcie4"


@pytest.mark.parametrize("budget,shown", [("1000", "1,000"), ("4194303", "4,194,303"), ("0.5", "0.5")])
def test_a_token_budget_smaller_than_one_step_is_refused(run_cli, tmp_path, budget, shown):
    """A budget under one step's tokens trains no whole step: it read 'time to train 1K tokens:
    0.0 h (0.0 days)', a run no one can launch. Refused with the step's tokens, from a flag or a
    job file; one whole step is a budget."""
    base = ["--model", "llama-3-8b", "--gpus", "8", "--seq-len", "4k"]
    err = refused(run_cli, "recommend", *base, "--token-budget", budget)
    assert (f"--token-budget: {shown} tokens is less than one step of this job, 1,024 sequences of 4,096 tokens "
            "= 4,194,304 tokens; allowed: at least 4,194,304 tokens") in err
    job = tmp_path / "job.yaml"
    job.write_text(f"model: llama-3-8b\nseq_len: 4k\ntoken_budget: {budget}\n")
    assert f"{job}: 'token_budget': {shown} tokens is less than one step" in refused(run_cli, "recommend", "-f", str(job))
    d = memory(run_cli, *base, "--token-budget", "4194304", "--layout", "tp=1")
    assert d["metrics"]["token_budget"] == 4194304 and d["metrics"]["time_to_train_h"] > 0


@pytest.mark.parametrize("text", ["100G", "1Ti", "$1T"])
def test_a_token_budget_that_is_no_count_is_shown_a_budget_to_type(run_cli, text):
    """'--token-budget 100G' was told 'e.g. 70B', a parameter count's example; a budget's is 100B."""
    err = refused(run_cli, "recommend", "--model", "llama-3-8b", "--token-budget", text)
    assert err == (f"shardwise: error: --token-budget: '{text}' is not a count; use a number with an optional "
                   "K/M/B/T suffix, e.g. 100B\n")
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", f"token_budget=1T,{text}")
    assert code == 2 and "e.g. 100B" in err, err


def test_torchtitan_has_no_expert_tensor_parallelism(run_cli):
    """torchtitan 0.3's experts live on the sparse mesh pp x dp_replicate x efsdp x ep, with EP
    borrowing the FSDP and TP ranks (efsdp = dp_shard x cp x tp / ep: config/configs.py
    expert_parallel_degree, distributed/parallel_dims.py): no expert-TP dimension, and the export
    had no flag for it, so etp=2 was sized and silently dropped. Refused under fsdp; etp=1 runs."""
    job = ("memory", "--model", "qwen3-30b-a3b", "--gpus", "16", "--framework", "fsdp")
    err = refused(run_cli, *job, "--layout", "tp=2,ep=4,etp=2,dp=8,zero=3,mbs=1")
    assert "[torchtitan-no-etp]" in err and "use etp=1" in err
    code, _, err = run_cli(*job, "--layout", "tp=2,ep=4,dp=8,zero=3,mbs=1")
    assert code == 0, err


def test_megatron_refuses_expert_tensor_parallelism_on_biased_experts(run_cli):
    """gpt-oss's experts carry biases (the export leaves out --disable-bias-linear), and
    Megatron-Core's TransformerConfig asserts "Bias in Moe is only supported when ETP==1"
    (transformer_config.py __post_init__): etp=8 was sized and exported, and the script died at
    start. Refused under megatron; etp=1 runs, and Mixtral's unbiased experts keep etp=8."""
    job = ("memory", "--model", "gpt-oss-120b", "--gpus", "64", "--framework", "megatron")
    err = refused(run_cli, *job, "--layout", "tp=8,ep=8,etp=8,dp=8,zero=1,mbs=1")
    assert "[megatron-moe-bias-etp]" in err and "use etp=1" in err
    code, _, err = run_cli(*job, "--layout", "tp=8,ep=8,dp=8,zero=1,mbs=1")
    assert code == 0, err
    code, _, err = run_cli("memory", "--model", "mixtral-8x7b", "--gpus", "64", "--framework", "megatron",
                           "--layout", "tp=8,ep=8,etp=8,dp=8,zero=1,mbs=1")
    assert code == 0, err


def test_megatron_refuses_tensor_parallel_experts_without_sequence_parallelism(run_cli):
    """Megatron-Core's MoELayer.forward raises ValueError in training where TP > 1 and sequence
    parallelism is off (moe/moe_layer.py: "... MoE and tensor parallelism are enabled without also
    enabling sequence parallelism"): mixtral at tp=2 sp=off was sized, ranked and exported, and
    stopped at its first forward. Refused under megatron, and never in a search's ranking; sp=on
    runs, and torchtitan (fsdp), which has no such check, keeps sp=off."""
    job = ("--model", "mixtral-8x7b", "--gpus", "64", "--seq-len", "8192")
    err = refused(run_cli, "memory", *job, "--framework", "megatron", "--layout", "tp=2,sp=off,ep=8,dp=32,zero=1,mbs=1")
    assert "[megatron-moe-tp-needs-sp]" in err and "sp=on" in err
    assert memory(run_cli, *job, "--framework", "megatron",
                  "--layout", "tp=2,sp=on,ep=8,dp=32,zero=1,mbs=1")["layout"]["sp"] is True
    assert memory(run_cli, *job, "--framework", "fsdp",
                  "--layout", "tp=2,sp=off,ep=8,dp=32,zero=2,mbs=1")["layout"]["sp"] is False
    code, out, err = run_cli("search", *job, "--framework", "megatron", "--top", "1000", "--format", "json")
    assert code == 0, err
    ranked = [t["layout"] for t in json.loads(out)["top"]]
    assert any(lay["tp"] > 1 for lay in ranked)
    assert all(lay["sp"] for lay in ranked if lay["tp"] > 1)


def test_a_shard_group_of_every_data_parallel_rank_pasted_back_is_the_same_layout(run_cli):
    """The JSON's layout.shard_group reads dp x cp where there is no HSDP group; a user who pastes
    it back as shard=N gets the layout the answer described, not an HSDP refusal."""
    code, out, err = run_cli("memory", "--model", "llama-3-8b", "--gpus", "64", "--format", "json",
                             "--layout", "dp=64,zero=3,mbs=1,recompute=full")
    assert code == 0, err
    first = json.loads(out)
    assert first["layout"]["shard_group"] == 64
    code, out, err = run_cli("memory", "--model", "llama-3-8b", "--gpus", "64", "--format", "json",
                             "--layout", "dp=64,zero=3,shard=64,mbs=1,recompute=full")
    assert code == 0, err
    assert json.loads(out) == first
