"""The command line: the contract keys, and bad input ending in one line with exit status 2."""
import json
import re

import pytest

SEED = ["memory", "--model", "llama-3-70b", "--gpus", "32", "--gpu", "h100-sxm", "--layout",
        "tp=8,pp=4,dp=1,zero=1,mbs=4,recompute=none", "--seq-len", "8192"]


def test_memory_json_has_the_contract_keys(run_cli):
    code, out, err = run_cli(*SEED, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    for k in ("peak_gib", "capacity_gib", "fits", "breakdown_gib"):
        assert k in d["memory"]
    for k in ("tp", "pp", "vp", "dp", "cp", "ep", "zero_stage", "sp", "mbs", "grad_accum", "global_batch", "recompute"):
        assert k in d["layout"]
    assert d["layout"]["global_batch"] == d["layout"]["mbs"] * d["layout"]["grad_accum"] * d["layout"]["dp"]


NEAR = ["--model", "llama-3-8b", "--gpus", "8", "--gpu", "h100-sxm", "--seq-len", "8192",
        "--layout", "tp=1,zero=2,mbs=1,recompute=selective"]


def test_a_layout_inside_the_fit_margin_is_not_called_a_plain_fit(run_cli):
    """72.5 GiB of 75: within the GPU, but past the 95% the playbook keeps for the estimate's
    error, so `memory` does not say "fits" as if the recommendation would take it, and `export`
    of it (or of a layout out of memory) warns on stderr and still writes the files."""
    code, out, _ = run_cli("memory", *NEAR, "--gpu-memory", "75")
    assert code == 0 and "fits only within the estimate's error" in out and "memory.fit-margin" in out
    code, out, _ = run_cli("memory", *NEAR, "--gpu-memory", "80", "--format", "json")
    assert json.loads(out)["memory"]["broken_rules"] == []
    code, out, err = run_cli("export", "--to", "deepspeed", *NEAR, "--gpu-memory", "75")
    assert code == 0 and "memory.fit-margin" in err and "ds_config.json" in out
    code, out, err = run_cli("export", "--to", "deepspeed", *NEAR, "--gpu-memory", "60")
    assert code == 0 and "predicted out of memory" in err
    code, out, err = run_cli("export", "--to", "deepspeed", *NEAR, "--gpu-memory", "80")
    assert "warning" not in err


def test_memory_prints_the_warnings_the_recommendation_would_give_its_layout(run_cli):
    """A layout the user names past 90% of memory gets the playbook's tight-memory warning (the
    caching allocator's split segments, and expandable_segments as the remedy), as the same
    layout recommended would; with room to spare it does not."""
    code, out, _ = run_cli("memory", *NEAR, "--gpu-memory", "78")
    assert code == 0 and out.startswith("llama-3-8b")
    tight = [line for line in out.splitlines() if line.startswith("warning: the peak is")]
    assert len(tight) == 1 and "expandable_segments:True" in tight[0]
    code, out, _ = run_cli("memory", *NEAR, "--gpu-memory", "78", "--format", "json")
    assert any(w.startswith("the peak is 9") for w in json.loads(out)["warnings"])
    code, out, _ = run_cli("memory", *NEAR, "--gpu-memory", "120", "--format", "json")
    assert not any(w.startswith("the peak is") for w in json.loads(out)["warnings"])


def test_memory_names_the_hsdp_shard_group_it_estimated(run_cli):
    """`memory --layout shard=2,zero=3` and `--layout zero=3` printed the same layout line while
    their peaks differ (ZeRO-3 over 2 ranks, not 8): the shard group the estimate used was only in
    the JSON. The line now says shard=N, as recommend's table and the search's layouts do, and
    leaves it out where ZeRO shards over every DP x CP rank."""
    job = ("--model", "llama-3-8b", "--gpus", "8", "--framework", "fsdp")
    code, hsdp, err = run_cli("memory", *job, "--layout", "shard=2,zero=3")
    assert code == 0, err
    code, full, err = run_cli("memory", *job, "--layout", "zero=3")
    assert code == 0, err
    hsdp_line, full_line = hsdp.splitlines()[1], full.splitlines()[1]
    assert " zero=3 shard=2 " in hsdp_line and "shard" not in full_line, (hsdp_line, full_line)
    code, out, _ = run_cli("memory", *job, "--layout", "shard=2,zero=3", "--format", "json")
    assert json.loads(out)["layout"]["shard_group"] == 2


def test_the_tight_memory_warning_names_expandable_segments_only_where_the_estimate_did_not_assume_them(run_cli):
    """Under --allocator expandable (and torchtitan's own launch) the estimate already counts
    expandable segments: telling the user to set them, as the caching allocator's warning does,
    is advice they have taken. The peak near capacity is still said."""
    code, out, _ = run_cli("memory", *NEAR, "--gpu-memory", "75", "--allocator", "expandable", "--format", "json")
    tight = [w for w in json.loads(out)["warnings"] if w.startswith("the peak is")]
    assert code == 0 and len(tight) == 1
    assert "expandable_segments:True" not in tight[0] and "already assumes expandable segments" in tight[0]


L12 = ("recommend", "--model", "llama-3.2-3b", "--gpu", "h200", "--gpus", "1", "--seq-len", "29696", "--training",
       "finetune", "--framework", "hf", "--attention", "sdpa", "--optimizer", "adafactor", "--mbs", "2",
       "--recompute", "full", "--global-batch", "2", "--format", "json")


def test_split_segments_of_the_caching_allocator_are_warned_and_expandable_segments_lift_it(run_cli):
    """benchmarks/calibration/h200_fresh_boundary.jsonl's L12 at 29,696 tokens: 90% of an H200 by
    the estimate, it ran out in its second step under PyTorch's default allocator (a 28 GiB logits
    block whose last copy's segment was split) and fit with expandable segments. The answer says
    so under the caching allocator, and not under expandable segments, whose allowance is smaller."""
    code, out, _ = run_cli(*L12)
    caching = json.loads(out)
    assert code == 0 and caching["memory"]["fits"] and caching["memory"]["allocator"] == "caching"
    assert caching["job"]["allocator"] == "caching" and caching["memory"]["largest_block_gib"] == 28.38
    split = [w for w in caching["warnings"] if w.startswith("with PyTorch's default caching allocator")]
    assert len(split) == 1 and "expandable_segments:True" in split[0] and "28.4 GiB of fp32 logits" in split[0]
    code, out, _ = run_cli(*L12, "--allocator", "expandable")
    grown = json.loads(out)
    assert grown["memory"]["allocator"] == "expandable" and grown["memory"]["split_peak_gib"] == 0
    assert not any(w.startswith("with PyTorch's default caching allocator") for w in grown["warnings"])
    frag = [d["memory"]["breakdown_gib"]["fragmentation"] for d in (caching, grown)]
    assert frag[1] < frag[0] / 5
    assert grown["memory"]["peak_gib"] < caching["memory"]["peak_gib"]
    # 135 GiB: the 8% allowance does not fit it, expandable segments' 1% does (at 32,768 tokens it
    # ran with 129.6 GiB allocated, and ran out with the default allocator)
    near = [a if a != "29696" else "32768" for a in L12[1:L12.index("--mbs")]] + ["--global-batch", "2", "--layout",
                                                                               "mbs=2,recompute=full"]
    code, out, _ = run_cli("memory", *near, "--gpu-memory", "135", "--allocator", "caching")
    assert code == 0 and "DOES NOT FIT" in out
    # at 98% of an H200 the split-segments warning names the remedy; the tight-memory one, which
    # names the same, is not said beside it
    code, out, _ = run_cli("memory", *near, "--format", "json")
    d = json.loads(out)
    assert d["memory"]["peak_gib"] > 0.95 * d["memory"]["capacity_gib"]
    assert sum("expandable_segments:True" in w for w in d["warnings"]) == 1
    assert any(w.startswith("with PyTorch's default caching allocator") for w in d["warnings"])
    code, out, _ = run_cli("memory", *near, "--gpu-memory", "135", "--allocator", "expandable")
    assert code == 0 and "DOES NOT FIT" not in out


def test_a_refusal_names_expandable_segments_where_they_would_fit_it(run_cli):
    """L12 at 32,768 tokens with mbs 2 pinned: 98% of an H200 under the caching allocator's 8%
    allowance, past the 95% fit margin; with expandable segments' 1% it fits (it ran so, with
    129.6 GiB allocated, and ran out under the default allocator): the refusal says so among the
    ways it would fit, and the count of one GPU reads as one."""
    job = [a if a != "29696" else "32768" for a in L12 if a not in ("--format", "json")]
    code, out, _ = run_cli(*job)
    assert code == 0 and "NO LAYOUT" in out
    # the allocator first, then the leaner recipes of this full fine-tune (search/sizing.recipes_that_fit)
    assert ("it would fit on these 1 x h200 with --allocator expandable or --precision pure-bf16 (bf16 weights, "
            "no fp32 master copy) or "
            "--training lora (replacing --training finetune), or on 2 x h200") in out
    assert "without it a layout fits on this GPU" in out
    code, out, _ = run_cli(*job, "--allocator", "expandable")
    assert code == 0 and "NO LAYOUT" not in out and "--allocator expandable" not in out


def _ways_on_these_gpus(out: str) -> list[str]:
    """The flags a refusal names for its own GPUs, each as the message gives it."""
    m = re.search(r"it would fit on these \d+ x \S+ with (.*?)(?:, or on |\n|$)", out)
    return m.group(1).split(" or ") if m else []


def _as_told(job: list, way: str) -> list:
    """The command with one way of the refusal applied as its words say: added, or replacing
    the flag the job gave where it says so; a gloss in brackets (what pure-bf16 drops) is read,
    not typed."""
    way = re.sub(r" \((?!replacing )[^)]*\)$", "", way)
    m = re.fullmatch(r"(--\S+) (\S+) \(replacing \1 \S+\)", way)
    if not m:
        return [*job, *way.split()]
    k = job.index(m.group(1))
    return [*job[:k + 1], m.group(2), *job[k + 2:]]


def test_every_way_a_refusal_names_on_its_own_gpus_runs_when_added_as_it_says(run_cli):
    """Llama 3 8B fully fine-tuned on one H100 (or a 4090) fits nowhere; the refusal names the
    leaner recipes. Each, done to the command as the message words it, gives a layout: the
    adapters replace the job's own --training finetune, which the CLI refuses to take twice."""
    for gpu in ("h100-sxm", "rtx-4090"):
        job = ["recommend", "--model", "llama-3-8b", "--gpus", "1", "--gpu", gpu, "--training", "finetune"]
        code, out, _ = run_cli(*job)
        ways = _ways_on_these_gpus(out)
        assert code == 0 and "NO LAYOUT" in out and any(w.startswith("--training") for w in ways), out
        for way in ways:
            code, out2, err = run_cli(*_as_told(job, way))
            assert code == 0 and "NO LAYOUT" not in out2, (way, err)


def test_a_layout_past_capacity_is_not_told_it_could_run_out_of_memory(run_cli):
    """Tight memory is a warning for a layout that fits; one whose peak is past the GPU's memory
    does not fit at all, which the DOES NOT FIT line says: the tight-memory warning's 'could run
    out of memory' (the seed's TP 8 x PP 4 for Llama 3 70B at 160%) would understate it."""
    code, out, _ = run_cli(*SEED)
    assert code == 0 and "DOES NOT FIT: 127.4 of 79.7 GiB (160%)" in out
    assert "could run out of memory" not in out


def test_export_judges_a_house_memory_rule_that_reads_the_metrics_too(run_cli, tmp_path):
    rule = tmp_path / "half.yaml"
    rule.write_text('rules:\n  - id: house.half-unless-fast\n    title: Half the memory unless very fast\n'
                    '    priority: 900\n    then:\n      - require: "memory.used_pct <= 50 or metrics.mfu_pct > 99"\n'
                    '    because: "a test policy"\n')
    code, out, err = run_cli("export", "--to", "deepspeed", *NEAR, "--gpu-memory", "80", "--rules", str(rule))
    assert code == 0 and "house.half-unless-fast" in err and "Traceback" not in err


def test_the_headline_gives_a_small_model_in_millions(run_cli):
    """A model under a billion parameters is not "0.1B": Qwen2.5 0.5B is 494M (tied embeddings),
    and from a billion on the count stays in billions."""
    code, out, _ = run_cli("recommend", "--model", "qwen2.5-0.5b", "--gpus", "1")
    assert code == 0 and out.startswith("qwen2.5-0.5b (494M parameters) on 1 x h100-sxm"), out[:120]
    code, out, _ = run_cli("recommend", "--model", "llama-3.2-1b", "--gpus", "1")
    assert code == 0 and out.startswith("llama-3.2-1b (1.2B parameters)"), out[:120]


def test_same_input_same_bytes(run_cli):
    a = run_cli(*SEED, "--format", "json")
    b = run_cli(*SEED, "--format", "json")
    assert a == b


@pytest.mark.parametrize("group", ["kb", "rules"])
def test_a_group_without_a_subcommand_prints_its_help_as_bare_shardwise_does(run_cli, group):
    code, out, err = run_cli(group)
    assert code == 0 and err == "" and out.startswith(f"Usage: shardwise {group} [OPTIONS] COMMAND")
    assert out == run_cli(group, "--help")[1] and "Commands:" in out
    code, out, err = run_cli()
    assert code == 0 and out == run_cli("--help")[1]


@pytest.mark.parametrize("args,line", [
    (["kb", "nope"], "no such command 'nope'; kb takes gpus, links or models"),
    (["rules", "lnt"], "no such command 'lnt' (did you mean lint?); rules takes facts, graph, init, lint, list or test"),
])
def test_an_unknown_subcommand_names_the_ones_its_group_takes(run_cli, args, line):
    code, out, err = run_cli(*args)
    assert code == 2 and out == "" and err == f"shardwise: error: {line}\n"


def test_kb_lists(run_cli):
    for what in ("gpus", "models", "links"):
        code, out, _ = run_cli("kb", what)
        assert code == 0 and len(out.splitlines()) > 5
    code, out, _ = run_cli("kb", "models", "--format", "json")
    assert json.loads(out)["llama-3-8b"]["total_params"] == 8_030_261_248


BAD = [
    (["memory", "--model", "llama-3-70b", "--gpus", "0", "--layout", "tp=8"], "--gpus"),
    (["search", "--model", "llama-3-8b", "--gpus", "8", "--top", "1_0"], "in the digits 0-9"),
    (["search", "--model", "llama-3-8b", "--gpus", "8", "--top", "0"], "--top: 0 is not from 1 to 1000"),
    # a link inside a node the GPU cannot have: a PCIe card on NVLink, an H100 on NVLink 5
    (["recommend", "--model", "llama-3-8b", "--gpus", "16", "--gpu", "rtx-4090", "--interconnect", "nvlink4"],
     "this GPU's link inside a node is pcie4"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "16", "--gpu", "h100-sxm", "--interconnect", "nvlink5"],
     "this GPU's link inside a node is nvlink4"),
    # a PCIe Gen4 card named on Gen5 was timed at twice the bandwidth its own link can carry
    (["recommend", "--model", "llama-3-8b", "--gpus", "16", "--gpu", "l40s", "--interconnect", "pcie5"],
     "this GPU's link inside a node is pcie4; allowed: pcie4, pcie"),
    # an A100's host interface is PCIe Gen4: named on Gen5 it was timed at twice what it carries
    (["recommend", "--model", "llama-3-8b", "--gpus", "16", "--gpu", "a100-80gb", "--interconnect", "pcie5"],
     "this GPU's link inside a node is nvlink3; allowed: nvlink3, pcie (pcie4), or a link between nodes"),
    # 'nvlink' on an MI300X was taken silently as its Infinity Fabric
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--gpu", "mi300x", "--interconnect", "nvlink"],
     "this GPU's link inside a node is infinity-fabric, not NVLink"),
    # the MI355X's fourth-generation Infinity Fabric is its own, as the MI300X's is
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--gpu", "mi355x", "--interconnect", "nvlink"],
     "this GPU's link inside a node is infinity-fabric-4, not NVLink"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--gpu", "mi355x", "--interconnect", "infinity-fabric"],
     "this GPU's link inside a node is infinity-fabric-4; allowed: infinity-fabric-4, pcie (pcie5)"),
    # a node larger than the GPU's NVLink domain would be timed as one NVLink island
    (["recommend", "--model", "llama-3-70b", "--gpus", "32", "--gpu", "h100-sxm", "--gpus-per-node", "16"],
     "h100-sxm's nvlink4 joins at most 8 GPUs"),
    (["memory", "--model", "llama-3-70b", "--gpus", "-8", "--layout", "tp=8"], "gpus"),
    (["memory", "--model", "llama-3-70b", "--gpus", "12", "--layout", "tp=4"],
     "multiple of --gpus-per-node 8; use whole nodes: a multiple of 8 GPUs, or --gpus-per-node 6, 4, 3, 2 or 1"),
    (["memory", "--model", "llama-3-70c", "--gpus", "8", "--layout", "tp=8"], "did you mean llama-3-70b"),
    # a name of separators only begins every name once they are stripped: no arbitrary five offered
    (["recommend", "--model", "."], "unknown model '.'; known: bloom-176b, deepseek-r1"),
    (["memory", "--model", "llama-3-70b", "--gpu", "h100", "--gpus", "8", "--layout", "tp=8"], "did you mean"),
    (["memory", "--model", "llama-3-70b", "--gpus", "32", "--layout", "tp=8,pp=2,dp=4,cp=2"], "must equal the GPU count"),
    (["memory", "--model", "gpt-3-175b", "--gpus", "64", "--layout", "tp=64"], "does not divide the 96 attention heads"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--layout", "tp=8,zero=5"], "allowed: 0, 1, 2, 3"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--layout", "tp=8,foo=1"], "unknown key 'foo'"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--layout", "tp=eight"], "must be an integer"),
    (["memory", "--model", "llama-3-70b", "--params", "70B", "--gpus", "8", "--layout", "tp=8"], "exactly one of"),
    (["memory", "--params", "70Q", "--gpus", "8", "--layout", "tp=8"], "--params"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--seq-len", "0", "--layout", "tp=8"], "seq-len"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--gpu", "a100-80gb", "--precision", "fp8", "--layout", "tp=8"], "FP8"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--interconnect", "carrier-pigeon", "--layout", "tp=8"], "--interconnect"),
    # '200gb/s' was sent to `shardwise kb links` to find the name; the names are in the line
    (["recommend", "--model", "llama-3-8b", "--gpus", "16", "--interconnect", "200gb/s"],
     "(infiniband is NDR, 400 Gb/s a GPU) or a link of `shardwise kb links`: ethernet-100g, ethernet-100g-node, "
     "infiniband-hdr, infiniband-ndr"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--gpu-memory", "4", "--layout", "tp=8"], "from 8 to 320"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--layout", "dp=8,ep=2"], "no experts"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--layout", "tp=8", "--global-batch", "3", "--mbs", "2"], "does not divide"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--mbs", "100000"], "--mbs 100000 exceeds the global batch"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--layout", "tp=0"], "tp=0 must be a positive integer"),
    (["recommend", "--params", "70", "--gpus", "8"], "did you mean 70B?"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--layout", "zero_stage=3,shard_group=8"], "give shard=N"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--mbs", "2", "--layout", "tp=2,mbs=1"],
     "--mbs 2 and --layout mbs=1 disagree"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--recompute", "full", "--layout", "tp=2,recompute=none"],
     "--recompute full and --layout recompute=none disagree"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--training", "lora", "--lora-rank", "100000"],
     "allowed: 1 to 4096"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "eight"], "(--gpus: GPU count (1-16384; default 8))"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--mbs", "0"], "--mbs: got 0; input should be greater"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8"], "--layout"),
    (["recommend", "--model", "llama-3-8b", "--price-per-gpu-hour", "1" + "0" * 300],
     "--price-per-gpu-hour: got 1e+300; input should be less than or equal to 1000"),
    (["recommend", "--model", "llama-3-8b", "--token-budget", "1" + "0" * 30], "--token-budget: got 1e+30"),
    (["memory", "--model", "llama-3.1-70b", "--gpus", "2", "--gpu", "a100-80gb", "--training", "qlora",
      "--layout", "tp=2"], "tp=2, etp=1 with --training qlora: bitsandbytes' 4-bit weights have no tensor-parallel"),
    (["memory", "--model", "mixtral-8x7b", "--gpus", "8", "--training", "qlora", "--framework", "fsdp",
      "--layout", "tp=1,ep=2,etp=2,zero=3"], "etp=2 with --training qlora"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--training", "lora", "--framework", "deepspeed",
      "--layout", "pp=2,dp=4,zero=1"], "DeepSpeed's pipeline engine (a PipelineModule) does not take"),
    # a node the GPU's link cannot build, on fewer GPUs than the node: refused as on a full one
    (["recommend", "--params", "1B", "--gpu", "a100-40gb", "--gpus", "8", "--gpus-per-node", "16"],
     "--gpus-per-node 16: a100-40gb's nvlink3 joins at most 8 GPUs"),
    # a pipeline refusal names only frameworks that pipeline this training: not DeepSpeed for
    # adapters, not Megatron for QLoRA (the hf line named both; QLoRA's named megatron)
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--training", "lora", "--framework", "hf",
      "--layout", "pp=2,dp=4,zero=1"], "or --framework megatron or fsdp [hf-no-pipeline]"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--training", "qlora", "--framework", "hf",
      "--layout", "pp=2,dp=4,zero=1"], "or --framework fsdp [hf-no-pipeline]"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--training", "qlora", "--framework", "deepspeed",
      "--layout", "pp=2,dp=4,zero=1"], "or --framework fsdp [adapters-pipeline]"),
    (["memory", "--model", "llama-3-70b", "--gpus", "8", "--framework", "hf",
      "--layout", "pp=2,dp=4,zero=1"], "or --framework deepspeed, megatron or fsdp [hf-no-pipeline]"),
    (["frobnicate"], "No such command"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--allocator", "sometimes"], "'caching', 'expandable'"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--price-per-gpu-hour", "inf", "--token-budget", "1B"], "finite"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--seq-len", "99999999999999999999"], "--seq-len"),
    # an empty or zero value is refused, not read as "not given" and replaced by a default
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--gpu", ""], "unknown gpu ''"),
    (["recommend", "--model", "llama-3-8b", "--gpus", "8", "--gpus-per-node", "0"], "from 1 to 72"),
    (["recommend", "--model", "", "--gpus", "8"], "--model: empty"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--layout", ""], "no settings given"),
    (["memory", "--model", "llama-3-8b", "--gpus", "8", "--layout", ",,"], "no settings given"),
    (["export", "--model", "llama-3-8b", "--gpus", "8", "--to", "deepspeed", "--layout", ""], "no settings given"),
]


@pytest.mark.parametrize("args,needle", BAD)
def test_bad_input_is_one_line_exit_2(run_cli, args, needle):
    code, out, err = run_cli(*args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert needle.lower() in lines[0].lower()


def test_job_file(run_cli, tmp_path):
    p = tmp_path / "job.yaml"
    p.write_text("model: llama-3-70b\ngpus: 32\nseq_len: 8192\n")
    code, out, err = run_cli("memory", "-f", str(p), "--layout", "tp=8,pp=4,mbs=1", "--format", "json")
    assert code == 0, err and json.loads(out)["job"]["seq_len"] == 8192
    p.write_text("model: llama-3-70b\ngpus: 32\nsequence: 8192\n")
    code, _, err = run_cli("memory", "-f", str(p), "--layout", "tp=8,pp=4")
    assert code == 2 and "unknown setting 'sequence'" in err
    p.write_text("model: llama-3-70b\ngpus: 32\nseq_len: 8192\ngpus: 64\n")     # PyYAML would keep the last
    code, _, err = run_cli("memory", "-f", str(p), "--layout", "tp=8,pp=4")
    assert code == 2 and f"{p}:4" in err and "'gpus' given twice" in err
    p.write_text("model: llama-3-70b\ngpus: 32\nseq_len: 8192\nseq-len: 4096\n")   # one setting, two spellings
    code, _, err = run_cli("memory", "-f", str(p), "--layout", "tp=8,pp=4")
    assert code == 2 and "'seq-len' given twice" in err
    p.write_text("model: [unclosed\n")
    code, _, err = run_cli("memory", "-f", str(p), "--layout", "tp=8")
    assert code == 2 and "not valid YAML" in err and len(err.strip().splitlines()) == 1


EMPTY_PATHS = [
    (["recommend", "--model", "llama-3-8b", "--rules", ""], "--rules: an empty path; give a rule file or folder"),
    (["recommend", "--model", "llama-3-8b", "--playbook", ""], "--playbook: an empty path; give a folder"),
    (["recommend", "-f", "", "--model", "llama-3-8b"], "-f: an empty path; give a YAML job file"),
    (["compare", "-f", "", "--model", "llama-3-8b", "--vary", "gpus=8,16"], "-f: an empty path"),
    (["rules", "lint", ""], "rules lint: an empty path; give a rule file or folder"),
    (["rules", "init", ""], "rules init: an empty path; give a new or empty folder"),
    (["rules", "test", ""], "rules test: an empty path"),
    (["rules", "list", "--rules", ""], "--rules: an empty path"),
    (["rules", "graph", "--playbook", ""], "--playbook: an empty path"),
    (["export", "--model", "llama-3-8b", "--to", "deepspeed", "-o", ""], "-o: an empty path; give a folder"),
    (["report", "--model", "llama-3-8b", "-o", ""], "-o: an empty path; give the HTML file"),
    (["explain", "--model", "llama-3-8b", "--why", "tp", "--graph", ""], "--graph: an empty path"),
]


@pytest.mark.parametrize("args,needle", EMPTY_PATHS)
def test_an_empty_path_is_refused_not_read_as_this_folder_or_as_not_given(run_cli, tmp_path, monkeypatch, args, needle):
    """Path('') is the current folder and `if path:` reads '' as not given: `--rules ''` loaded
    every *.yaml here, `--playbook ''` ran the shipped playbook, `-f ''` dropped the job file,
    `rules init ''` copied the playbook here, `export -o ''` printed instead of writing. Each is
    refused in one line, as an empty --model is, in a folder that holds a rule file and nothing
    else is written to."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "house.yaml").write_text('rules:\n  - id: house.x\n    title: t\n    priority: 500\n'
                                         '    then:\n      - note: "a house note"\n    because: because\n')
    code, out, err = run_cli(*args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (code, out, err)
    assert needle in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["house.yaml"]


def test_an_empty_path_inside_a_job_or_policy_test_file_is_refused(run_cli, tmp_path):
    """Joined to the file's own folder, '' named that folder: a job file's `hf_config: ""` read
    the config.json beside it, a policy test's `rules: [""]` every rule file beside it."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 512,
                                                      "intermediate_size": 1024, "num_hidden_layers": 2,
                                                      "num_attention_heads": 8, "vocab_size": 1000}))
    job = tmp_path / "job.yaml"
    job.write_text('hf_config: ""\ngpus: 8\n')
    code, out, err = run_cli("recommend", "-f", str(job))
    assert code == 2 and out == "" and f"{job}: 'hf_config': empty" in err
    cases = tmp_path / "cases.yaml"
    for extra, needle in (('rules: [""]\n', "'rules:': an empty path"), ('playbook: ""\n', "'playbook:': an empty path")):
        cases.write_text(extra + "cases:\n  - job: {model: llama-3-8b, gpus: 8}\n    expect: {fits: true}\n")
        code, out, err = run_cli("rules", "test", str(cases))
        assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1, err


SMALL = ["--model", "llama-3-8b", "--gpus", "8"]
REPEATS = [
    (["recommend", "--model", "llama-3-8b", "--model", "llama-3-70b", "--gpus", "8"],
     "--model given twice (llama-3-8b, llama-3-70b): give it once"),
    (["recommend", *SMALL, "--gpus", "16"], "--gpus given twice (8, 16): give it once"),
    (["recommend", *SMALL, "--gpus=16", "--gpus", "32"], "--gpus given 3 times (8, 16, 32): give it once"),
    (["memory", *SMALL, "--layout", "tp=2", "--layout", "tp=4"], "--layout given twice (tp=2, tp=4): give it once"),
    (["explain", *SMALL, "--why", "tp", "--why", "pp"], "--why given twice (tp, pp): give it once"),
    (["recommend", "-f", "JOB", "-f", "JOB"], "-f given twice (JOB, JOB): give it once"),
    (["recommend", "-fJOB", "--job-file=JOB"], "-f/--job-file given twice (JOB, JOB): give it once"),
    (["compare", *SMALL, "--vary", "gpu=h100-sxm,h200", "--seq-len", "4k", "--seq-len", "8k"],
     "--seq-len given twice (4k, 8k): give it once"),
    (["kb", "gpus", "--format", "json", "--format=yaml"], "--format given twice (json, yaml): give it once"),
    (["rules", "graph", "-o", "a.svg", "--graph", "b.svg"], "-o/--graph given twice (a.svg, b.svg): give it once"),
]


@pytest.mark.parametrize("args,line", REPEATS)
def test_a_single_value_option_given_twice_is_refused_not_the_last_taken(run_cli, tmp_path, monkeypatch, args, line):
    """click keeps the last of a repeated option: --gpus 8 --gpus 16 ran 16 GPUs and -f a -f b
    dropped a. Every command's single-value options are refused when repeated, in each way
    click reads them (--opt v, --opt=v, -f v, -fv), before anything is written."""
    monkeypatch.chdir(tmp_path)
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b\ngpus: 8\n")
    code, out, err = run_cli(*[a.replace("JOB", str(job)) for a in args])
    assert code == 2 and out == "" and err == f"shardwise: error: {line.replace('JOB', str(job))}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["job.yaml"]


def test_options_declared_repeatable_still_repeat(run_cli, tmp_path):
    rule = tmp_path / "house.yaml"
    rule.write_text('rules:\n  - id: house.x\n    title: t\n    priority: 500\n'
                    '    then:\n      - note: "a house note"\n    because: because\n')
    other = tmp_path / "other.yaml"
    other.write_text(rule.read_text().replace("house.x", "house.y"))
    code, out, err = run_cli("recommend", *SMALL, "--rules", str(rule), "--rules", str(other))
    assert code == 0, err
    code, out, err = run_cli("compare", *SMALL, "--vary", "gpu=h100-sxm,h200", "--vary", "mbs=1,2")
    assert code == 0, err
    # --help still shows the help whatever else is given
    code, out, _ = run_cli("recommend", *SMALL, "--gpus", "16", "--help")
    assert code == 0 and out.startswith("Usage: shardwise recommend")


def test_a_rule_that_cannot_be_evaluated_is_refused_in_one_line(run_cli, tmp_path):
    rules = tmp_path / "house.yaml"
    rules.write_text('rules:\n  - id: house.x\n    title: t\n    priority: 500\n'
                     '    when: "cluster.gpus / (cluster.gpus - 16) > 1"\n    then:\n      - require: "layout.tp <= 4"\n'
                     '    because: because\n')
    # a constant divisor of 0 is refused on loading (test_rule_files); this one is 0 for this job only
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "16", "--rules", str(rules))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "rule house.x (" in err and "its condition cannot be evaluated for this job: division by zero" in err


def test_a_layout_expression_undefined_for_some_layouts_is_refused_not_taken_as_false(run_cli, tmp_path):
    """A require or prefer that divides by zero (or takes log2 of 0) on some layouts has no value
    there; taking that as 'false' would quietly remove those layouts (every pp=1 layout here) or
    count a preference as broken. It is refused in one line naming the rule and a layout; the
    same rule with a guard that settles those layouts first runs."""
    def rule(action):
        return ('rules:\n  - id: house.x\n    title: t\n    priority: 500\n    when: "true"\n    then:\n'
                f'      - {action}\n    because: because\n')
    rules = tmp_path / "house.yaml"
    for action, what in (('require: "layout.dp / (layout.pp - 1) <= 100"', "require"),
                         ('require: "(layout.dp / (layout.pp - 1) > 100) == false"', "require"),
                         ('prefer: "log2(layout.cp - 1) < 5"\n        worth: 50', "prefer")):
        rules.write_text(rule(action))
        code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--rules", str(rules))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert f"rule house.x ({rules}:" in err and f"{what} '" in err and "has no value for" in err and "e.g. tp=" in err
    rules.write_text(rule('require: "layout.pp == 1 or layout.dp / (layout.pp - 1) <= 100"'))
    code, out, _ = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--rules", str(rules))
    assert code == 0 and "pp" in out


def test_a_gemma3_config_whose_text_config_is_not_an_object_is_refused(run_cli, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "gemma3", "text_config": ["not", "an", "object"]}))
    code, out, err = run_cli("recommend", "--hf-config", str(cfg), "--gpus", "8")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "text_config" in err


def test_a_gpu_timed_below_its_datasheet_peak_is_named_in_the_assumptions(run_cli):
    """A GB200 is timed at its sustained share of the datasheet peak, and the answer says so (it
    is why its MFU reads low); an H100, timed at its datasheet peak, gets no such line."""
    def assumptions(gpu):
        code, out, _ = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--gpu", gpu, "--format", "json")
        assert code == 0
        return [a for a in json.loads(out)["assumptions"] if "datasheet peak" in a]
    assert assumptions("gb200") == ["gb200 timed at 84% of its datasheet peak (kb/data/gpus.yaml sustained_share: "
                                    "set from NVIDIA's published runs on it and put down to the clock its power "
                                    "limit holds under training load); MFU is against the datasheet"]
    assert assumptions("h100-sxm") == []


def test_a_layout_with_expert_tensor_parallelism_says_so(run_cli, tmp_path):
    """etp=2 splits each expert's GEMMs over two GPUs: Mixtral 8x22B at TP 2 PP 4 EP 8 holds 5.5 GiB
    less and runs 27% slower than at etp=1, yet memory's layout line and the export's '# layout:'
    header read the same for both, so two answers looked like one layout. Both now name etp where
    it is not 1 (and a layout with etp=1 reads as before)."""
    job = ["--model", "mixtral-8x22b", "--gpus", "64"]
    lines = {}
    for etp in (1, 2):
        code, out, err = run_cli("memory", *job, "--layout", f"tp=2,pp=4,ep=8,etp={etp},zero=1,mbs=1")
        assert code == 0, err
        lines[etp] = [x for x in out.splitlines() if x.startswith("layout:")][0]
    assert "ep=8 etp=2 " in lines[2] and "etp" not in lines[1], lines
    code, out, err = run_cli("export", "--to", "megatron", "-o", str(tmp_path), *job,
                             "--layout", "tp=2,pp=4,ep=8,etp=2,zero=1,mbs=1")
    assert code == 0, err
    head = (tmp_path / "megatron_pretrain.sh").read_text().splitlines()[1]
    assert head.startswith("# layout:") and "ep=8 etp=2 " in head, head


def test_memory_names_the_layout_settings_it_defaulted(run_cli):
    """A --layout without zero is ZeRO 0 -- the full optimizer states on each of the two replicas,
    25 GiB more than Megatron's usual distributed optimizer here -- so the answer says it took
    that default, as it does for every setting the user did not give; settings given are not
    listed."""
    code, out, err = run_cli("memory", "--model", "llama-3-70b", "--gpus", "64", "--seq-len", "8192",
                             "--layout", "tp=8,pp=4,dp=2,mbs=1,recompute=full")
    assert code == 0, err
    line = [x for x in out.splitlines() if x.startswith("assumption: --layout left out")]
    assert len(line) == 1 and "zero=0" in line[0] and "vp=1" in line[0] and "tp" not in line[0].split(":")[2]
    code, out, err = run_cli("memory", "--model", "llama-3-70b", "--gpus", "64", "--seq-len", "8192",
                             "--layout", "tp=8,pp=4,vp=1,cp=1,dp=2,zero=1,sp=on,mbs=1,recompute=full")
    assert code == 0 and "--layout left out" not in out


@pytest.mark.parametrize("line, key, needle", [("gpu: 8", "gpu", "unknown gpu '8'"),
                                               ("seq_len: .inf", "seq_len", "is not a count"),
                                               ("training: lorra", "training", "'lorra'"),
                                               ("gpus: 0", "gpus", "from 1 to 16384")])
def test_a_job_file_value_is_refused_by_its_key_not_a_flag(run_cli, tmp_path, line, key, needle):
    """A bad value from a job file names the file and its key; the flag named instead was one the
    user never typed. The same value as a flag still names the flag."""
    job = tmp_path / "job.yaml"
    job.write_text(f"model: llama-3-8b\n{line}\n")
    code, out, err = run_cli("recommend", "-f", str(job))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"{job}: '{key}':" in err and needle in err and "--" + key.replace("_", "-") + ":" not in err


def test_outputs_that_cannot_be_written_and_repeated_rows_are_refused_before_anything_prints(run_cli, tmp_path):
    """-o naming a file, not a folder, says so; a --graph that cannot be written fails before the
    explanation is printed (it was printed, then the error); --format takes any case, as the
    other choices do; a --vary value given twice would print the same row twice."""
    f = tmp_path / "a-file"
    f.write_text("x")
    code, out, err = run_cli("export", "--model", "llama-3-8b", "--to", "megatron", "-o", str(f))
    assert code == 2 and str(f) in err and "is a file" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli("export", "--model", "llama-3-8b", "--to", "megatron", "-o", "/dev/null")
    assert code == 2 and "/dev/null exists and is not a folder" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--why", "tp", "--graph",
                             str(tmp_path / "no" / "such" / "g.svg"))
    assert code == 2 and out == "" and "--graph" in err
    code, out, err = run_cli("search", "--model", "llama-3-8b", "--top", "1", "--format", "JSON")
    assert code == 0 and json.loads(out)["top"], err
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", "gpus=8,8")
    assert code == 2 and "8 name one value more than once" in err
    for vary in ("seq_len=4k,4096", "gpu=h100-sxm,H100-SXM"):      # one value, written two ways
        code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", vary)
        assert code == 2 and "name one value more than once" in err, vary


def test_memory_and_recommend_write_time_and_cost_alike(run_cli):
    """The same budget and price read the same way in both commands: 500B tokens, not 5e+11, and
    dollars on the cost and the price."""
    args = ["--model", "llama-3-8b", "--gpus", "8", "--token-budget", "500B", "--price-per-gpu-hour", "2"]
    code, out, err = run_cli("memory", *args, "--layout", "dp=8,mbs=1")
    assert code == 0, err
    assert "for 500B tokens" in out and "5e+11" not in out and " at $2.00 per GPU-hour" in out
    code, out, err = run_cli("recommend", *args)
    assert "time to train 500B tokens" in out and " at $2.00 per GPU-hour" in out


def test_a_run_of_hours_reads_in_hours_without_a_zero_days(run_cli):
    """200M tokens of Llama 3 8B fine-tuned on 16 A100s is about an hour: it read '1.0 h (0.0 days)'.
    Under a day it reads in hours alone; a run of days keeps both."""
    job = ["--model", "llama-3-8b", "--gpu", "a100-80gb", "--gpus", "16", "--training", "finetune"]
    code, out, err = run_cli("recommend", *job, "--token-budget", "200M")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("time to train 200M tokens: "))
    assert line.endswith(" h") and "days" not in line, line
    code, out, err = run_cli("recommend", *job, "--token-budget", "20B")
    line = next(x for x in out.splitlines() if x.startswith("time to train 20B tokens: "))
    assert line.endswith(" days)"), line


def test_a_short_run_reads_in_minutes_and_cents_not_as_zero(run_cli):
    """10M tokens on 8 H100s is under two minutes and under a dollar: it read 'time to train 10M
    tokens: 0.0 h (0.0 days), $0' in recommend, 0.0 and $0 in compare."""
    args = ["--model", "llama-3-8b", "--gpus", "8", "--token-budget", "10M", "--price-per-gpu-hour", "2"]
    code, out, err = run_cli("recommend", *args, "--format", "json")
    assert code == 0, err
    mt = json.loads(out)["metrics"]
    minutes = 10e6 / mt["tokens_per_s"] / 60
    code, out, err = run_cli("recommend", *args)
    assert f"time to train 10M tokens: {minutes:.1f} min, ${mt['cost']:.2f} at $2.00 per GPU-hour" in out
    assert "0.0 h" not in out and "$0 " not in out
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--token-budget", "10M", "--price-per-gpu-hour", "2",
                             "--vary", "gpus=8,16")
    row = next(x for x in out.splitlines() if x.startswith("8 "))
    assert row.split()[-2:] == [f"{mt['time_to_train_h']:.2f}", f"${mt['cost']:.2f}"], row


def test_without_a_token_budget_the_answer_names_the_flag_that_gives_time_and_cost(run_cli):
    """Without --token-budget there is no time to train, and a --price-per-gpu-hour given alone
    was dropped without a word: recommend and memory now say which flag gives the time and cost."""
    args = ["--model", "llama-3-8b", "--gpus", "8", "--price-per-gpu-hour", "2"]
    for cmd in (["recommend"], ["memory", "--layout", "dp=8,mbs=1"]):
        code, out, err = run_cli(*cmd, *args)
        assert code == 0, err
        line = next(x for x in out.splitlines() if x.startswith("time to train"))
        assert "not estimated: give --token-budget (tokens to train, e.g. 100B" in line and "--price-per-gpu-hour" in line
        code, out, err = run_cli(*cmd, *args, "--token-budget", "500B")
        assert code == 0 and "not estimated" not in out, err


def test_a_valid_job_with_no_layout_is_not_called_bad_input(run_cli, tmp_path):
    """70B on 8 H100s fits nowhere: recommend answers NO LAYOUT (status 0); explain, report and
    export have nothing to show and say why in one line with status 3 -- 2 is for bad input."""
    job = ["--params", "70B", "--gpus", "8"]
    code, out, _ = run_cli("recommend", *job)
    assert code == 0 and "NO LAYOUT" in out
    for cmd in (["explain", "--why", "tp"], ["report", "-o", str(tmp_path / "r.html")],
                ["export", "--to", "megatron", "-o", str(tmp_path / "x")]):
        code, out, err = run_cli(*cmd, *job)
        assert code == 3 and len(err.strip().splitlines()) == 1 and "it would fit on" in err, (cmd, code, err)
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "x").exists()


def test_json_is_strict_json_and_a_policy_worth_everything_does_not_break_the_answer(run_cli, tmp_path):
    """Alternatives the hard rules do not allow have no objective to compare: the JSON says null,
    never -Infinity (which JSON readers other than Python's reject); and a house preference worth
    100% that every layout breaks, beside the playbook's, is refused in one line (no division by
    a 0 objective, no internal error): the layouts it left at 0 would be chosen by headroom."""
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    code, out, err = run_cli("recommend", "--model", "llama-3-70b", "--gpus", "16", "--framework", "fsdp",
                             "--format", "json")
    assert code == 0, err
    alts = [a for s in strict(out)["settings"].values() for a in s["alternatives"]]
    assert any(a["objective_delta_pct"] is None and a["layout"] for a in alts)
    rule = tmp_path / "all.yaml"
    rule.write_text('rules:\n  - id: house.everything\n    title: Worth everything\n    priority: 500\n    then:\n'
                    '      - avoid: "layout.tp >= 1"\n        worth: 100\n    because: "a test policy"\n')
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--rules", str(rule))
    assert code == 2 and "internal error" not in err and len(err.strip().splitlines()) == 1, err
    assert "house.everything" in err and "every layout the rules allow" in err, err


@pytest.mark.parametrize("flag,says", [
    ("--training", "pretrain (default)"),
    ("--training", "lora / qlora: a frozen (qlora: 4-bit) base with PEFT adapters"),
    ("--precision", "pure-bf16: weights, gradients and optimizer states all bf16"),
    ("--optimizer", "adamw (default): the framework's own fused AdamW"),
    ("--attention", "flash (default)"),
    # sdpa was said to be "timed as flash"; on Gemma 3 or Mistral under the Trainer it is 20% slower
    ("--attention", "a sliding-window or chunked model under hf or deepspeed computes the whole dense-masked square"),
    ("--framework", "default megatron for pretrain, hf for the rest"),
    ("--gpu", "default h100-sxm"),
    ("--gpus", "default 8"),
    ("--interconnect", "InfiniBand NDR between"),
    # a newcomer with 200 Gb/s InfiniBand typed 'infiniband' and was timed on NDR's 400 Gb/s unwarned
    ("--interconnect", "infiniband is NDR, 400 Gb/s a GPU; 200 Gb/s HDR is infiniband-hdr"),
    ("--global-batch", "128 sequences otherwise"),
    ("--price-per-gpu-hour", "in dollars"),
])
def test_help_says_what_each_job_choice_means_and_its_default(run_cli, flag, says):
    """A newcomer reads --help before the README: each choice flag says what its values mean and
    which one a job gets when it is left out (the value the assumption lines then name)."""
    from shardwise.cli.recommend_cmd import recommend
    (option,) = [p for p in recommend.params if flag in p.opts]
    assert says in (option.help or "")


def test_explain_help_says_what_each_setting_it_explains_is(run_cli):
    """`explain --help` listed --why [tp|pp|vp|...] as 'the setting to explain': a newcomer who
    met 'vp' and 'zero' in recommend's table had to leave the command to learn what they are.
    Each choice is named in words."""
    code, out, err = run_cli("explain", "--help")
    assert code == 0, err
    words = " ".join(out.split())
    for says in ("tp tensor", "pp pipeline", "vp virtual pipeline stages", "dp data", "cp context",
                 "ep expert", "zero the ZeRO stage", "sp sequence", "mbs micro-batch",
                 "recompute activation recomputation"):
        assert says in words, says


@pytest.mark.parametrize("args, command", [
    (("recommend", "--model", "llama-3-8b", "--seq-len", "4", "k"), "shardwise recommend"),
    (("compare", "--model", "llama-3-8b", "--vary", "gpus=8,16", "--token-budget", "300", "billion"),
     "shardwise compare"),
    (("recommend", "llama-3-8b"), "shardwise recommend"),
])
def test_a_stray_word_is_told_how_to_write_the_value(run_cli, args, command):
    """`--seq-len 4 k` or `--token-budget 300 billion` answered click's 'Got unexpected extra
    argument (k)', which names no flag and nothing to type instead. The line still names the word,
    and says a value is one word after its flag and where the flags are listed."""
    code, out, err = run_cli(*args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "unexpected extra argument" in err and "one word" in err and f"`{command} --help`" in err
    assert "--seq-len 4k" in err


def test_a_stray_word_after_a_command_without_those_flags_is_not_shown_them(run_cli):
    """`kb gpus extra`: kb gpus takes no --seq-len or --token-budget, so the hint gives none as
    an example of how to write a value."""
    code, out, err = run_cli("kb", "gpus", "extra")
    assert code == 2 and "one word" in err and "--seq-len" not in err and "`shardwise kb gpus --help`" in err


def test_job_file_help_says_what_its_keys_are(run_cli, tmp_path):
    """`-f` was 'YAML job file (flags override it)': nothing said what a key is named, and a
    newcomer guessed `sequence_length:` or `num_gpus:`. The help names the keys by example, and
    the example it gives is a job file that runs."""
    from shardwise.cli.recommend_cmd import recommend
    (option,) = [p for p in recommend.params if "-f" in p.opts]
    assert "the job flags' names" in option.help and "seq_len: 32k" in option.help
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b\ngpus: 64\nseq_len: 32k\n")
    code, out, err = run_cli("recommend", "-f", str(job))
    assert code == 0 and "sequence 32,768 tokens" in out.splitlines()[0], err


def test_a_token_count_given_as_the_sequence_batch_is_sent_to_the_token_flag(run_cli):
    """`--global-batch 4M` was refused with the flag's help, 'global batch, sequences (default:
    about 4M tokens ...)': the line repeated the 4M the user typed and never named
    --global-batch-tokens, the flag that takes it."""
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--global-batch", "4M")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "'4M'" in err and "--global-batch-tokens 4M" in err


def test_a_token_count_given_as_the_job_files_sequence_batch_is_sent_to_the_token_key(run_cli, tmp_path):
    """The job file's `global_batch: 4M` read only "'global_batch' must be int, got '4M'"."""
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b\nglobal_batch: 4M\n")
    code, out, err = run_cli("recommend", "-f", str(job))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "'global_batch' must be int, got '4M'" in err and "global_batch_tokens: 4M" in err


def test_recommend_says_what_its_communication_and_bubble_percentages_are_of(run_cli):
    """'exposed communication 3.8%, bubble 0.0%' left a reader to guess: of the step, of the
    communication, of the ideal? They are shares of the step time beside them, as `memory` says."""
    import re
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("throughput: "))
    assert re.search(r"step [0-9.]+ s, of which exposed communication [0-9.]+% and pipeline bubble [0-9.]+%$", line)


def test_an_unknown_gpu_that_begins_catalog_names_suggests_those_names_first(run_cli):
    """'--gpu h100' is what a newcomer with H100s types; the suggestion offered h800 and h200
    before h100-sxm and never the PCIe or NVL H100. Names that begin with the typed one come first."""
    code, out, err = run_cli("recommend", "--model", "llama-3-70b", "--gpu", "h100")
    assert code == 2 and out == ""
    assert "did you mean h100-nvl, h100-pcie, h100-sxm, h100-sxm-96gb-500w, h800?" in err


def test_the_slow_fabric_warning_says_what_its_share_counts_and_how_to_price_a_faster_one(run_cli):
    """The exposed share is all communication, not DP's alone (metrics.comm_overhead_pct); the
    warning read as if Ethernet's gradient reduction were all of it, with nothing to do about it.
    It now says what the share counts, and the comparison that prices RoCE and InfiniBand --
    which runs as written."""
    job = ["--model", "llama-3-70b", "--gpus", "64", "--gpu", "a100-40gb", "--seq-len", "2048"]
    code, out, err = run_cli("memory", *job, "--interconnect", "ethernet",
                             "--layout", "tp=1,pp=1,zero=3,recompute=full,mbs=1")
    assert code == 0, err
    (warning,) = [x for x in out.splitlines() if x.startswith("warning: data-parallel traffic (gradient reductions; "
                                                               "under ZeRO-3 the parameter gathers too) crosses nodes")]
    assert "exposed communication (all of it: TP, PP, CP, EP and DP)" in warning
    assert "--vary interconnect=ethernet,roce,infiniband in place of --interconnect" in warning
    code, out, err = run_cli("compare", *job, "--vary", "interconnect=ethernet,roce,infiniband")
    assert code == 0, err


def test_the_slow_fabric_warning_counts_expert_parallel_all_to_all_among_its_share(run_cli):
    """metrics.comm_overhead_pct counts the expert-parallel all-to-all too: Qwen3-30B-A3B on 64
    H100s over Ethernet spends most of its exposed communication there (EP 1.01 s of 1.24 s), and
    the warning's 'all of it: TP, PP, CP and DP' left the largest part out."""
    code, out, err = run_cli("recommend", "--model", "qwen3-30b-a3b", "--gpus", "64", "--interconnect", "ethernet",
                             "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["metrics"]["comm_exposed_s"]["ep"] > 0
    (warning,) = [w for w in d["warnings"] if "which has no RDMA" in w]
    assert "(all of it: TP, PP, CP, EP and DP)" in warning, warning


def test_a_catalog_models_positions_assumption_says_a_step_the_user_can_take(run_cli, tmp_path):
    """--model gemma-3-12b printed 'config.json gives no max_position_embeddings ... give
    max_position_embeddings to set it': the user gave no config.json, so there was nothing to give
    it in. The line now names the flag that takes a file, for a catalog name and a file alike."""
    job = ("--gpus", "16", "--seq-len", "8k", "--training", "finetune")
    code, out, err = run_cli("recommend", "--model", "gemma-3-12b", *job)
    assert code == 0, err
    line = next(x for x in out.splitlines() if "max_position_embeddings" in x)
    assert line.endswith("--hf-config with a config.json that gives max_position_embeddings sets it")
    from catalog_configs import CATALOG_CONFIGS
    (tmp_path / "config.json").write_text(json.dumps(CATALOG_CONFIGS["gemma-3-12b"]))
    code, out, err = run_cli("recommend", "--hf-config", str(tmp_path), *job)
    assert code == 0, err
    assert line in out.splitlines()


def test_the_settings_table_never_splits_a_rule_id_at_its_hyphen(run_cli):
    """Qwen2.5 0.5B fine-tuned on 4 A100-40GB: the vp row names the validity rules vp-framework and
    vp-chunks; wrapped at hyphens it printed 'break vp-' and 'chunks)' on the next line, an id a
    reader cannot look up. No line of the table ends at a hyphen, and vp-chunks reads whole."""
    args = ["--model", "qwen2.5-0.5b", "--gpus", "4", "--gpu", "a100-40gb", "--training", "finetune",
            "--seq-len", "2048"]
    code, table, _ = run_cli("recommend", *args)
    assert code == 0
    assert not [line for line in table.splitlines() if line.endswith("-")], table
    assert "vp-chunks" in table


def test_compare_costs_each_gpu_type_at_its_own_price(run_cli):
    """'Should we buy H200s?' is a question of cost per GPU type: one --price-per-gpu-hour for every
    row costs an H200 as an H100. --gpu-price gives each type its price; each row's cost is its
    hours x GPUs x its own price, and --price-per-gpu-hour prices the types not named."""
    job = ("compare", "--model", "llama-3-70b", "--gpus", "64", "--token-budget", "10B", "--format", "json")
    code, out, err = run_cli(*job, "--vary", "gpu=h100-sxm,h200", "--gpu-price", "h100-sxm=2.49",
                             "--gpu-price", "H200=3.10")
    assert code == 0, err
    rows = {r["variant"]["gpu"]: r for r in json.loads(out)["variants"]}
    for gpu, price in (("h100-sxm", 2.49), ("h200", 3.10)):
        assert rows[gpu]["cost"] == pytest.approx(rows[gpu]["time_to_train_h"] * 64 * price, rel=1e-3)
    code, out, _ = run_cli(*job, "--vary", "gpu=h100-sxm,h200", "--gpu-price", "h200=3.10", "--price-per-gpu-hour", "2")
    rows = {r["variant"]["gpu"]: r for r in json.loads(out)["variants"]}
    assert rows["h100-sxm"]["cost"] == pytest.approx(rows["h100-sxm"]["time_to_train_h"] * 64 * 2, rel=1e-3)
    assert rows["h200"]["cost"] == pytest.approx(rows["h200"]["time_to_train_h"] * 64 * 3.10, rel=1e-3)


@pytest.mark.parametrize("prices, says", [
    (("h200=3.10",), "--gpu-price gives no price for h100-sxm, which rows run on"),
    (("h100-sxm=2", "h200=3", "b200=5"), "--gpu-price b200: no row runs on it"),
    (("h200=3", "H200=4"), "--gpu-price: h200 is priced twice"),
    (("h300=3",), "--gpu-price: unknown gpu 'h300'"),
    (("h200=-1",), "--gpu-price 'h200=-1': the price must be a number of dollars from 0 to 1000"),
    (("h200",), "--gpu-price 'h200': expected GPU=PRICE"),
])
def test_compare_refuses_a_gpu_price_that_would_cost_a_row_by_a_rule_not_given(run_cli, prices, says):
    args = [a for p in prices for a in ("--gpu-price", p)]
    code, out, err = run_cli("compare", "--model", "llama-3-70b", "--gpus", "64", "--vary", "gpu=h100-sxm,h200", *args)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_readmes_sample_answer_is_what_the_quick_start_prints(run_cli):
    """The README shows a newcomer an excerpt of the quick start's answer and explains its lines:
    each line it quotes is a line the command prints, so the explanation cannot drift from it."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    command = re.search(r"pip install \. && shardwise (recommend [^\n]+)", readme).group(1).split()
    block = readme.split("<!-- sample answer:", 1)[1].split("```", 2)[1]
    quoted = [x for x in block.splitlines() if x.strip()]
    code, out, err = run_cli(*command)
    printed = out.splitlines()
    assert code == 0, err
    assert len(quoted) >= 10 and all(q in printed for q in quoted), [q for q in quoted if q not in printed]


def test_the_readmes_policy_test_example_passes_only_with_its_policy(run_cli, tmp_path):
    """The README's `rules test` example says it passes saved at the repository's top, and fails
    without the shipped policy it names, so a newcomer sees a house rule change the answer. Its
    tp-never-crosses-pcie case passed without the policy too (the playbook alone had come to take
    TP 1 there), so the example showed a policy that changed nothing. Both halves are checked."""
    from pathlib import Path
    top = Path(__file__).resolve().parents[1]
    readme = (top / "README.md").read_text()
    block = readme.split("runs policy test\ncases:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    assert block.startswith("rules: ["), block
    with_policy = tmp_path / "cases.yaml"
    policy = re.search(r"rules: \[([^\]]+)\]", block).group(1)
    with_policy.write_text(block.replace(policy, str(top / policy), 1))
    code, out, err = run_cli("rules", "test", str(with_policy))
    assert code == 0 and "1 passed, 0 failed" in out, (out, err)
    without = tmp_path / "cases-without.yaml"
    without.write_text(block.split("\n", 1)[1])
    code, out, err = run_cli("rules", "test", str(without))
    assert code != 0 and "0 passed, 1 failed" in out, (out, err)


def test_the_readmes_commands_list_every_setting_explain_takes(run_cli):
    """The README's Commands block is where a newcomer learns what `explain --why` takes; it
    listed tp to recompute but not offload, which explain answers (and which the table shows on
    GB200/GB300). Each choice of --why is in the block's explain line, and nothing else is."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    listed = re.search(r"shardwise explain +\[job flags\] --why (\S+)", readme).group(1).split("|")
    code, _, err = run_cli("explain", "--model", "llama-3-8b", "--why", "nothing")
    offered = re.search(r"is not one of (.+)\.", err).group(1).replace("'", "").split(", ")
    assert code == 2 and listed == offered, (listed, offered)


def test_compare_of_gpu_counts_in_nodes_of_six(run_cli):
    """`compare --gpus-per-node 6 --vary gpus=6,12` was refused with '--gpus 8 is not a multiple
    of --gpus-per-node 6': the job was first checked with the default 8 GPUs, which the varied
    counts replace and the user never gave (nor may give beside --vary gpus). Each count is now
    its own row; a row the nodes do not take is still refused on its own."""
    code, out, err = run_cli("compare", "--model", "qwen3-0.6b", "--gpus-per-node", "6", "--seq-len", "1024",
                             "--vary", "gpus=6,12,16", "--format", "json")
    assert code == 0, err
    rows = {r["variant"]["gpus"]: r for r in json.loads(out)["variants"]}
    assert rows[6]["best"] and rows[12]["best"]
    assert rows[16]["best"] is None and "--gpus 16 is not a multiple of --gpus-per-node 6" in rows[16]["why"]
    # a setting every row shares that no row can take is still refused once, for the job
    code, out, err = run_cli("compare", "--model", "qwen3-0.6b", "--gpus-per-node", "6", "--gpu", "nope",
                             "--vary", "gpus=6,12")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "nope" in err


def test_compare_refused_for_every_varied_gpu_count_names_the_counts_given(run_cli):
    """`compare --gpus-per-node 6 --vary gpus=7,9`: no row can run, so the job is refused once --
    but it was refused as '--gpus 8 is not a multiple of --gpus-per-node 6', the default every row
    replaces and the user never gave. The refusal now names a count the user varied."""
    code, out, err = run_cli("compare", "--model", "qwen3-0.6b", "--gpus-per-node", "6", "--seq-len", "1024",
                             "--vary", "gpus=7,9")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--gpus 7 is not a multiple of --gpus-per-node 6" in err and "--gpus 8" not in err, err
    # a --vary that does not parse is refused for itself, not for the default it was to replace
    code, out, err = run_cli("compare", "--model", "qwen3-0.6b", "--gpus-per-node", "6", "--vary", "gpus=7,x")
    assert code == 2 and "--vary gpus" in err and "--gpus 8" not in err, err
