"""The search: one set of formulas scored two ways, named exclusions, the table the decision reads,
feasibility and neighbour facts, house policies, sizing."""
import json

import numpy as np
import pytest

from shardwise.kb.build import build_job
from shardwise.kb.validity import check_layout
from shardwise.kb.memory.estimate import estimate_memory
from shardwise.kb.perf.step import step_time
from shardwise.kb.resolve import global_batch
from shardwise.decision.result import as_dict
from shardwise.decision.run import decide
from shardwise.search.score import score
from shardwise.search.space import build_space, index_of

JOBS = [
    dict(model="llama-3-70b", gpus=32, seq_len=8192),
    dict(model="llama-3-8b", gpus=64, seq_len=131072, framework="fsdp"),
    dict(model="mixtral-8x7b", gpus=64, framework="hf"),
    dict(model="qwen3-30b-a3b", gpus=16, precision="fp8", framework="deepspeed"),
    dict(model="llama-3-70b", gpus=8, gpu="a100-80gb", training="lora", framework="fsdp"),
    dict(model="llama-3-8b", gpus=16, gpu="h200", training="rlhf", recompute="full"),
    dict(model="qwen3-235b-a22b", gpus=256, gpu="gb200", precision="fp8"),
    dict(model="qwen3-235b-a22b", gpus=256, gpu="gb200", precision="fp8", cuda_graphs="full-iteration"),
]


@pytest.mark.parametrize("kw", JOBS, ids=lambda kw: f"{kw['model']}-{kw['gpus']}-{kw.get('framework', 'megatron')}"
                                                 f"{'-graphs' if kw.get('cuda_graphs') else ''}")
def test_vectorised_scores_equal_the_single_layout_estimators(kw):
    job = build_job(**kw)
    gb, _ = global_batch(job)
    space = build_space(job, gb)
    sc = score(job, space)
    rng = np.random.default_rng(7)
    for i in rng.choice(len(space), size=min(60, len(space)), replace=False):
        lay = space.layout(int(i))
        check_layout(job, lay)                      # everything the space holds is a layout the job can run
        mem = estimate_memory(job, lay)
        st = step_time(job, lay)
        assert sc["peak_gib"][i] == pytest.approx(mem.peak_gib, rel=1e-12)
        assert sc["split_peak_gib"][i] == pytest.approx(mem.split_peak_gib, rel=1e-12)
        assert sc["largest_block_gib"][i] == pytest.approx(mem.largest_block_gib, rel=1e-12)
        assert sc["tokens_per_s"][i] == pytest.approx(st.tokens_per_s, rel=1e-12)
        assert sc["mfu_pct"][i] == pytest.approx(st.mfu_pct, rel=1e-12)
        assert sc["moe_host_pct"][i] == pytest.approx(100 * st.moe_host_s / st.step_time_s, rel=1e-12, abs=1e-12)
        assert sc["bubble_pct"][i] == pytest.approx(100 * st.bubble_s / st.step_time_s, rel=1e-9, abs=1e-12)
        assert sc["comm_overhead_pct"][i] == pytest.approx(100 * st.comm_exposed_s / st.step_time_s, rel=1e-9, abs=1e-12)


def test_every_exclusion_is_named_and_framework_limits_hold():
    job = build_job(model="llama-3-70b", gpus=64, framework="deepspeed")
    space = build_space(job, 512)
    ex = {e["rule"]: e["excluded"] for e in space.excluded}
    assert ex["deepspeed-pipeline-zero"] > 0 and ex["vp-framework"] > 0
    a = space.arrays
    assert not np.any((a["pp"] > 1) & (a["zero"] >= 2))            # DeepSpeed's pipeline engine: ZeRO <= 1
    assert np.all(a["vp"] == 1)
    assert np.all(a["tp"] * a["pp"] * a["cp"] * a["dp"] == 64)
    assert np.all(a["mbs"] * a["grad_accum"] * a["dp"] == 512)
    assert sum(ex.values()) + len(space) == space.candidates


def test_our_fastest_llama3_70b_fp8_layout_promises_no_more_than_nvidias_tuned_layout_ran():
    """Megatron-Bridge publishes TP4 PP8 VP5 DP2, mbs 1, GBS 128 for Llama 3 70B FP8 on 64 H100s,
    measured at 1,619 tokens/s a GPU (benchmarks/calibration/published_runs.yaml,
    megatron-bridge-llama3-70b-h100-64-6). The layout the search ranks fastest must not be
    predicted more than 8% faster than that tuned layout ran: a search that promised far more
    than NVIDIA's own tuning reached would be selling a speed-up the model made up. (This
    compared our prediction of the tuned layout with our best prediction; the model reads that
    layout 12% below its measured speed, so the comparison measured that error more than the
    search. Since Megatron's gradients are reduced in bf16, as its recipes and our export run
    them, ZeRO-2 layouts read 8.5% above it.)"""
    import yaml
    from pathlib import Path
    runs = yaml.safe_load((Path(__file__).resolve().parents[1] / "benchmarks" / "calibration" /
                           "published_runs.yaml").read_text())
    row = next(r for r in runs if r["id"] == "megatron-bridge-llama3-70b-h100-64-6")
    assert (row["tp"], row["pp"], row["vp"], row["micro_batch_size"]) == (4, 8, 5, 1)
    d = decide(build_job(model="llama-3-70b", gpus=64, seq_len=row["seq_len"], precision="fp8",
                         global_batch=row["global_batch_size"]))
    t, a = d.table, d.table.space.arrays
    assert ((a["tp"] == 4) & (a["pp"] == 8) & (a["vp"] == 5) & (a["mbs"] == 1) & d.allowed).any()
    assert t.tokens_per_s[d.choice.fastest] / 64 / row["tokens_per_sec_per_gpu"] - 1 < 0.08


def test_the_headline_is_allowed_and_the_fastest_is_the_fastest_allowed():
    d = decide(build_job(model="llama-3-70b", gpus=32, seq_len=8192))
    t = d.table
    assert d.allowed[d.index] and d.allowed[d.choice.fastest]
    assert t.tokens_per_s[d.choice.fastest] == t.tokens_per_s[d.allowed].max()
    assert d.choice.objective[d.index] == d.choice.objective[d.allowed].max()
    assert np.all(t.peak_gib[d.allowed] <= 0.95 * job_capacity(d) + 1e-9)     # memory.fit-margin is hard


def job_capacity(d):
    return d.job.cluster.gpu.memory_gib


def test_neighbour_facts_compare_a_layout_with_itself_one_setting_changed():
    d = decide(build_job(model="llama-3-70b", gpus=64, seq_len=8192))
    t, f = d.table, d.feasibility
    a = t.space.arrays
    zero = f.column("same.min_zero")
    rng = np.random.default_rng(3)
    for i in rng.choice(np.flatnonzero(d.allowed), size=40, replace=False):
        twins = np.ones(len(t), dtype=bool)
        for k in ("tp", "pp", "vp", "cp", "ep", "sp", "mbs", "rc"):
            twins &= a[k] == a[k][i]
        assert zero[i] == a["zero"][twins & d.allowed].min()
        pp1 = (a["tp"] == a["tp"][i]) & (a["cp"] == a["cp"][i]) & (a["pp"] == 1) & d.allowed
        pp1 &= a["ep"] <= max(a["ep"][i], d.job.cluster.domain_block)
        assert f.column("same.pp1_fits")[i] == pp1.any()


def test_a_pipeline_that_keeps_experts_in_the_node_is_needed_where_pp1_spreads_them():
    """Megatron-Core's MoE guide keeps EP x TP inside the NVLink domain and takes PP before EP
    across nodes (megatron/core/transformer/moe/README.md, "Tuning Guide of Parallel Mappings"):
    a pipelined layout with EP 8 on 8-GPU nodes does not break pp.only-when-needed because a
    PP = 1 layout fits only with EP 16 or more. Qwen3 235B LoRA on 96 H100s has such layouts;
    the old fact counted any PP = 1 layout of the same TP and CP and charged them all."""
    d = decide(build_job(model="qwen3-235b-a22b", gpus=96, seq_len=4096, training="lora", framework="megatron",
                         global_batch=96))
    a, fits = d.table.space.arrays, d.feasibility.column("same.pp1_fits")
    dom = d.job.cluster.domain_block
    pp1 = d.allowed & (a["pp"] == 1)
    key = a["tp"] * 10 ** 6 + a["cp"]
    only_wide = np.isin(key, key[pp1 & (a["ep"] > dom)]) & ~np.isin(key, key[pp1 & (a["ep"] <= dom)])
    inside = d.allowed & (a["pp"] > 1) & (a["ep"] <= dom) & only_wide
    assert inside.any() and not fits[inside].any()
    # a pipeline with EP across nodes itself still breaks it where PP = 1 fits at that EP
    wide = d.allowed & (a["pp"] > 1) & (a["ep"] > dom) & only_wide
    assert wide.any() and fits[wide].all()
    # the headline keeps its experts inside the node and honours the rule
    assert d.layout.ep <= dom and "pp.only-when-needed" not in [p.rule.id for p, m in zip(d.preferences, d.broken)
                                                               if m[d.index]]


def test_recommend_lists_alternatives_with_why_not(run_cli):
    code, out, err = run_cli("recommend", "--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192", "--mbs", "4",
                             "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    alts = d["alternatives"]
    assert len(alts) == 5
    for a in alts:
        assert set(a) >= {"layout", "metrics", "why_not"} and a["why_not"]
    s = d["search"]
    assert s["valid"] > 1000 and s["allowed"] > 100 and s["best"]["tokens_per_s"] >= d["metrics"]["tokens_per_s"]


def test_a_house_policy_is_honoured_by_the_search(run_cli, tmp_path):
    pol = tmp_path / "no-pp.yaml"
    pol.write_text("rules:\n  - id: house.no-pp\n    priority: 999\n    then:\n"
                   "      - require: 'layout.pp == 1'\n    because: our jobs restart too often for pipelines\n")
    code, out, err = run_cli("search", "--model", "llama-3-70b", "--gpus", "64", "--seq-len", "8192",
                             "--global-batch", "128", "--rules", str(pol), "--top", "30", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["top"] and all(a["layout"]["pp"] == 1 for a in d["top"])
    assert "pp=1" in d["search"]["best"]["layout"]
    assert any(c["rule"] == "house.no-pp" and c["excluded"] > 0 for c in d["search"]["constraints"])


def test_the_search_weighs_the_caching_allocators_split_peak(run_cli):
    """h200_fresh_boundary.jsonl's L12 at 29,696 tokens: mbs 2 ran out in its second step under
    PyTorch's caching allocator (its 28 GiB logits block found its last copy's segment split) and
    fit with expandable segments. The playbook's memory.split-segments (worth 5%) takes mbs 1 under
    the caching allocator, 4% slower, and says why; with expandable segments there is no split
    peak and mbs 2 is the headline."""
    job = ("recommend", "--model", "llama-3.2-3b", "--gpu", "h200", "--gpus", "1", "--seq-len", "29696",
           "--training", "finetune", "--framework", "hf", "--attention", "sdpa", "--optimizer", "adafactor",
           "--global-batch", "2", "--format", "json")
    code, out, err = run_cli(*job)
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"]["mbs"] == 1 and d["memory"]["split_peak_gib"] <= d["memory"]["capacity_gib"]
    assert any("memory.split-segments" in a["why_not"] and a["layout"]["mbs"] == 2 for a in d["alternatives"])
    code, out, err = run_cli(*job, "--allocator", "expandable")
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"]["mbs"] == 2 and d["memory"]["split_peak_gib"] == 0


@pytest.mark.parametrize("policy", ["forbid: 'layout.mbs >= 1'", "require: 'not memory.fits'"])
def test_a_policy_that_forbids_every_fitting_layout_is_named_not_blamed_on_memory(policy, tmp_path):
    """Memory is not the problem, so no cluster sizing: the answer names the policy in the way."""
    pol = tmp_path / "nothing.yaml"
    pol.write_text(f"- id: house.nothing\n  priority: 990\n  then: [{{{policy}}}]\n  because: x\n")
    d = as_dict(decide(build_job(model="llama-3-8b", gpus=8), [str(pol)]))
    s = d["search"]
    assert d["layout"] is None and s["best"] is None and s["sizing"] is None
    assert "fit in memory, but the rules allow none" in s["nothing_allowed"]
    assert "house.nothing" in s["nothing_allowed"] and s["nothing_allowed"] in d["warnings"]


def test_search_command_lists_top_n(run_cli):
    code, out, err = run_cli("search", "--model", "llama-3-8b", "--gpus", "16", "--top", "3")
    assert code == 0, err
    rows = [ln for ln in out.splitlines() if ln[:2] in ("1 ", "2 ", "3 ", "4 ")]
    assert [ln[0] for ln in rows] == ["1", "2", "3"]


def test_compare_gives_one_row_per_variant(run_cli):
    code, out, err = run_cli("compare", "--model", "llama-3-70b", "--seq-len", "8192", "--token-budget", "10B",
                             "--price-per-gpu-hour", "2", "--vary", "gpu=h100-sxm,h200", "--vary", "gpus=64,128",
                             "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["variants"]
    assert [(v["variant"]["gpu"], v["variant"]["gpus"]) for v in rows] == [
        ("h100-sxm", 64), ("h100-sxm", 128), ("h200", 64), ("h200", 128)]
    for v in rows:
        assert v["best"] and v["tokens_per_s"] > 0 and v["cost"] > 0
    h100 = {v["variant"]["gpus"]: v for v in rows if v["variant"]["gpu"] == "h100-sxm"}
    assert h100[128]["time_to_train_h"] < h100[64]["time_to_train_h"]


def test_compare_says_when_more_gpus_do_not_speed_the_job_up_in_proportion_and_why(run_cli):
    """A budget owner asking '64 or 256 GPUs?' saw 4x the GPUs give about 3x the tokens/s with
    nothing saying why: a global batch of 64 sequences splits over at most 64 data-parallel ranks,
    so the other GPUs split each sequence (TP, CP). Said under the table, with the time and cost
    ratios; a step up that scales in proportion is not."""
    job = ["--model", "llama-3-8b", "--seq-len", "8k", "--token-budget", "100B", "--price-per-gpu-hour", "2"]
    code, out, err = run_cli("compare", *job, "--global-batch", "64", "--vary", "gpus=64,256", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    small, big = d["variants"]
    more = big["tokens_per_s"] / small["tokens_per_s"]
    assert more < 0.9 * 4 and big["dp"] <= 64 and big["cost"] > small["cost"]
    (line,) = d["scaling"]
    assert line.startswith(f"scaling: 64 -> 256 GPUs (4x) give {more:.2f}x the tokens/s: the time x")
    assert ("the global batch of 64 sequences splits evenly over at most DP 64 on 256 GPUs, so the added GPUs "
            "went to TP x CP x PP") in line
    code, out, err = run_cli("compare", *job, "--global-batch", "64", "--vary", "gpus=64,256")
    assert code == 0 and line in out.split("\n\n")[1].splitlines(), out      # under the table
    code, out, err = run_cli("compare", *job, "--global-batch", "1024", "--vary", "gpus=8,16", "--format", "json")
    assert code == 0 and json.loads(out)["scaling"] == [], out


def test_compare_names_the_fastest_and_cheapest_row_and_a_lead_too_close_to_call(run_cli):
    """'64 or 128 GPUs, H100 or H200?': the table gave the figures and left the answer to be read
    off by eye. The fastest and the cheapest rows are named, with their lead over the next, and a
    lead smaller than the spread of the model's error on runs like the row is said to be too close."""
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--token-budget", "100B", "--price-per-gpu-hour", "2",
                             "--vary", "gpus=8,16", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    rows = d["variants"]
    fast = max(rows, key=lambda r: r["tokens_per_s"])
    cheap = min(rows, key=lambda r: r["cost"])
    assert d["fastest"] == fast["variant"] and d["cheapest"] == cheap["variant"]
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--token-budget", "100B", "--price-per-gpu-hour", "2",
                             "--vary", "gpus=8,16")
    lines = out.split("\n\n")[1].splitlines()
    other = lambda r: next(x for x in rows if x is not r)  # noqa: E731
    lead = (fast["tokens_per_s"] / other(fast)["tokens_per_s"] - 1) * 100
    assert lines[0].startswith(f"fastest: gpus={fast['variant']['gpus']} ({fast['tokens_per_s']:,.0f} tokens/s, "
                               f"{fast['time_to_train_h']:,.1f} h), {lead:.1f}% faster than the next, gpus=")
    gap = (other(cheap)["cost"] / cheap["cost"] - 1) * 100
    lo, hi = cheap["checked"]["error_pct"]
    assert lines[1].startswith(f"cheapest: gpus={cheap['variant']['gpus']} (${cheap['cost']:,.0f}), the next, gpus=")
    assert (f"costs {gap:.1f}% more" if gap >= 0.05 else "costs less than 0.1% more") in lines[1]
    assert ("too close to call" in lines[1]) == (gap < hi - lo), (lines[1], gap, hi - lo)
    # a row priced at 0 costs nothing: said in dollars, no ratio (this divided by zero)
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--gpus", "8", "--token-budget", "1T",
                             "--vary", "price_per_gpu_hour=0,2.5")
    assert code == 0, err
    lines = out.split("\n\n")[1].splitlines()
    assert lines[0].startswith("fastest: price_per_gpu_hour=0.0 (") and lines[0].endswith(
        " h), tied with price_per_gpu_hour=2.5")          # the same job twice: a tie, not 'too close to call'
    assert lines[1].startswith("cheapest: price_per_gpu_hour=0.0 ($0.00), the next, price_per_gpu_hour=2.5, costs $")


def test_a_run_of_seconds_reads_in_hours_to_its_json_rounding_not_as_zero(run_cli):
    """One 4M-token step of Llama 3 8B on 64 H100s takes seconds: compare's hours column, its
    fastest line and search's hours column read '0.00' (and '0.00 h'), the zero a short run was
    meant no longer to show. Under 0.01 h the hours are given to 0.0001 h, as the JSON gives them."""
    job = ["--model", "llama-3-8b", "--token-budget", "5M", "--price-per-gpu-hour", "2"]
    code, out, err = run_cli("compare", *job, "--vary", "gpus=8,64", "--format", "json")
    assert code == 0, err
    h = {r["variant"]["gpus"]: r["time_to_train_h"] for r in json.loads(out)["variants"]}
    assert 0 < h[64] < 0.01 <= h[8] < 1
    code, out, err = run_cli("compare", *job, "--vary", "gpus=8,64")
    assert code == 0, err
    rows = {x.split()[0]: x.split() for x in out.splitlines() if x[:2] in ("8 ", "64")}
    assert rows["64"][-2] == f"{h[64]:.4f}" and rows["8"][-2] == f"{h[8]:.2f}", rows
    assert f", {h[64]:.4f} h)," in out and "0.00 h" not in out
    code, out, err = run_cli("search", *job, "--gpus", "64", "--top", "1")
    assert code == 0, err
    first = out.splitlines()[3].split()             # the layout's cell has spaces: hours is the cell before the cost
    cost = next(i for i, x in enumerate(first) if x.startswith("$"))
    assert first[cost - 1] == f"{h[64]:.4f}", out


def test_search_gives_each_layouts_time_and_cost_to_train_the_budget(run_cli):
    """search took --token-budget and --price-per-gpu-hour and dropped them without a word: a
    budget owner ranking layouts saw no hours or cost. Each layout now has them, the headline's
    equal to recommend's; without a budget the columns are not there."""
    job = ["--model", "llama-3-8b", "--gpus", "8", "--token-budget", "1T", "--price-per-gpu-hour", "2.37"]
    code, out, err = run_cli("search", *job, "--top", "3", "--format", "json")
    assert code == 0, err
    top = json.loads(out)["top"]
    code, out, err = run_cli("recommend", *job, "--format", "json")
    head = json.loads(out)["metrics"]
    assert (top[0]["metrics"]["time_to_train_h"], top[0]["metrics"]["cost"]) == (head["time_to_train_h"], head["cost"])
    for a in top:
        hours = 1e12 / a["metrics"]["tokens_per_s"] / 3600
        assert a["metrics"]["time_to_train_h"] == pytest.approx(hours, abs=0.01)
        assert a["metrics"]["cost"] == pytest.approx(hours * 8 * 2.37, abs=0.5)
    code, out, err = run_cli("search", *job, "--top", "3")
    header = out.splitlines()[1].split()
    assert header[header.index("comm%") + 1: header.index("comm%") + 3] == ["hours", "cost"]
    assert f"${top[1]['metrics']['cost']:,.0f}" in out.splitlines()[4]
    code, out, err = run_cli("search", "--model", "llama-3-8b", "--gpus", "8", "--top", "1")
    assert "hours" not in out.splitlines()[1]


def test_compare_varies_the_model_itself(run_cli):
    """--vary model=... needs no --model, and --vary params=... replaces the base's --model: both
    were refused as two or no model sources."""
    code, out, err = run_cli("compare", "--gpus", "8", "--vary", "model=llama-3-8b,qwen3-8b", "--format", "json")
    assert code == 0, err
    assert [v["variant"]["model"] for v in json.loads(out)["variants"]] == ["llama-3-8b", "qwen3-8b"]
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--gpus", "8", "--vary", "params=7B,13B",
                             "--format", "json")
    assert code == 0, err
    assert all(v["best"] for v in json.loads(out)["variants"])
    code, out, err = run_cli("compare", "--gpu", "h200", "--vary", "gpus=8,16")
    assert code == 2 and "give exactly one of --model NAME" in err


def test_a_variant_the_job_cannot_take_is_its_row_and_the_rest_are_answered(run_cli):
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--gpus", "8", "--vary", "mbs=1,2048",
                             "--format", "json")
    assert code == 0, err
    ok, bad = json.loads(out)["variants"]
    assert ok["best"] and bad["best"] is None and bad["why"].startswith("refused: --mbs 2048 exceeds")
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--gpus", "8", "--vary", "mbs=4096,2048")
    assert code == 2 and err.count("\n") == 1 and "--mbs 4096 exceeds" in err


def test_compare_says_what_its_empty_columns_need(run_cli):
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", "gpus=8,16")
    assert code == 0 and out.rstrip().endswith("(hours and cost need --token-budget, and cost --price-per-gpu-hour too)")
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", "gpus=8,16", "--token-budget", "1B")
    assert out.rstrip().endswith("(cost needs --price-per-gpu-hour)")
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", "gpus=8,16", "--token-budget", "1B",
                             "--price-per-gpu-hour", "2")
    assert "need" not in out


@pytest.mark.parametrize("vary, msg", [("gpus=x", "must be int"), ("colour=red", "SETTING=V1,V2"),
                                       ("gpus=", "no values"),
                                       # a value no job could take is the input's error, not a row
                                       ("gpus=8,0", "--vary gpus=0: --gpus: 0 must be an integer from 1 to 16384"),
                                       ("gpu=h100-sxm,h999", "known: a10"), ("seq_len=4096,abc", "not a count"),
                                       ("training=lora,bogus", "'finetune'"), ("interconnect=foo", "allowed: nvlink"),
                                       # a value left out is no row fewer, said nowhere
                                       ("gpu=h100-sxm,,h200", "an empty value"), ("gpus=8,16,", "an empty value")])
def test_compare_refuses_bad_vary(run_cli, vary, msg):
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", vary)
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_a_varied_setting_the_job_also_gives_is_refused(run_cli, tmp_path):
    """--vary gpus=16,32 --gpus 64 ran the rows on 16 and 32 GPUs, the 64 dropped without a word;
    as a flag or in the job file, a setting that is also varied is a conflict."""
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--gpus", "64", "--vary", "gpus=16,32")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, out, err)
    assert "--gpus 64 and --vary gpus=16,32: give one" in err
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b\ngpus: 64\n")
    code, out, err = run_cli("compare", "-f", str(job), "--vary", "gpus=16,32")
    assert code == 2 and out == "" and f"{job}: gpus 64 and --vary gpus=16,32: give one" in err, err
    code, out, err = run_cli("compare", "-f", str(job), "--gpus", "8", "--vary", "gpus=16,32")
    assert code == 2 and "--gpus 8 and --vary gpus=16,32" in err, err
    code, out, err = run_cli("compare", "-f", str(job), "--vary", "gpu=h100-sxm,h200")      # another setting
    assert code == 0, err


def test_compare_says_what_differs_between_rows_and_each_warning_once(run_cli):
    """16 and 24 GPUs take the default 4M-token batch as 1,024 and 1,056 sequences, and only one
    of llama-3-8b and mixtral-8x7b carries the MoE low-confidence warning: the table hid both.
    The assumptions that differ are said per row, each warning once with the rows it concerns;
    the table itself is unchanged."""
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--vary", "gpus=16,24")
    assert code == 0, err
    assert "assumption (gpus=16): global batch not given" in out and "1,024 sequences" in out
    assert "assumption (gpus=24): global batch not given" in out and "taken as 1,056" in out
    assert "assumption (" not in out.split("gpus=24")[0].split("\n\n")[0]     # under the table, not in it
    assert "defaults used for settings not given" not in out           # the same in every row
    code, out, err = run_cli("compare", "--gpus", "16", "--vary", "model=llama-3-8b,mixtral-8x7b")
    assert code == 0, err
    moe = [x for x in out.splitlines() if "MoE step time" in x]
    assert len(moe) == 1 and moe[0].startswith("warning (model=mixtral-8x7b): low confidence"), out
    table = out.split("\n\n")[0].splitlines()
    assert len(table) == 4 and table[0].split() == ["model", "best", "layout", "tokens/s", "likely", "tokens/s", "hours", "cost"]
    code, out, err = run_cli("compare", "--gpus", "16", "--vary", "model=mixtral-8x7b,qwen3-30b-a3b")
    moe = [x for x in out.splitlines() if "MoE step time" in x]
    assert code == 0 and len(moe) == 1 and moe[0].startswith("warning (every row): low confidence"), out
    code, out, err = run_cli("compare", "--gpus", "16", "--vary", "model=llama-3-8b,mixtral-8x7b", "--format", "json")
    rows = json.loads(out)["variants"]
    assert [any("MoE" in w for w in r["warnings"]) for r in rows] == [False, True]
    assert all(any("global batch" in a for a in r["assumptions"]) for r in rows)


def test_a_job_that_fits_nowhere_gets_a_cluster_size():
    from shardwise.search.sizing import fits_somewhere, smallest_count, with_cluster
    job = build_job(model="llama-3.1-405b", gpus=8, seq_len=8192)
    d = decide(job)
    assert d.layout is None and d.sizing["smallest_gpus"] > 8
    n = smallest_count(job, d.constraints)
    assert n and n > 8 and n % 8 == 0
    assert fits_somewhere(with_cluster(job, n), d.constraints)
    assert n - 8 <= 8 or not fits_somewhere(with_cluster(job, n - 8), d.constraints)


def test_a_full_fine_tune_that_fits_nowhere_names_the_leaner_recipes_that_fit_on_its_own_gpus():
    """Llama 3 8B fully fine-tuned on one H100 needs fp32 weights, gradients and AdamW states
    (16 bytes a parameter) under the Trainer's defaults: the refusal names the recipes that fit
    there -- the model loaded in bf16, and LoRA -- each answering when given, and names none the
    user already chose (an explicit --precision bf16) or that the framework does not run."""
    kw = dict(model="llama-3-8b", gpus=1, gpu="h100-sxm", seq_len=4096, training="finetune")
    d = decide(build_job(**kw))
    assert d.layout is None
    assert d.sizing["recipes_that_fit"] == ["--precision pure-bf16", "--training lora"]
    assert "with --precision pure-bf16 (bf16 weights, no fp32 master copy) or --training lora" in d.nothing_allowed
    assert decide(build_job(**dict(kw, precision="pure-bf16"))).layout is not None
    assert decide(build_job(**dict(kw, training="lora"))).layout is not None
    # the user's own precision is kept; 8-bit AdamW alone (10 bytes a parameter) does not fit
    assert decide(build_job(**dict(kw, precision="bf16"))).sizing["recipes_that_fit"] == ["--training lora"]
    # pre-training is not fine-tuned with adapters, and Megatron runs its own AdamW and precision
    assert decide(build_job(**dict(kw, training="pretrain", framework="megatron"))).sizing["recipes_that_fit"] == []



def test_a_refusal_under_a_pinned_micro_batch_names_the_recipes_that_fit_once_the_pin_is_dropped():
    """Llama 3 8B fully fine-tuned on one H100 with --mbs 16 fits nowhere, and no recipe fits
    while the pin holds, so the sizing under the pin sent the user to 8 GPUs. Dropping --mbs alone
    does not fit either (the fp32 states), so neither is "what is in the way"; together they are:
    the refusal names the recipes that fit on the same GPU once --mbs is dropped, and each answers."""
    kw = dict(model="llama-3-8b", gpus=1, gpu="h100-sxm", seq_len=8192, training="finetune")
    d = decide(build_job(**kw, mbs=16))
    assert d.layout is None and d.sizing["recipes_that_fit"] == []
    assert d.sizing["smallest_gpus"] > 1
    assert d.sizing["without_pins"] == {"without": ["--mbs 16"],
                                        "ways": ["--precision pure-bf16 --optimizer adamw-8bit", "--training lora"]}
    assert ("without --mbs 16 it would also fit on these 1 x h100-sxm with --precision pure-bf16 --optimizer "
            "adamw-8bit (bf16 weights, no fp32 master copy) or --training lora (replacing --training finetune)"
            in d.nothing_allowed)
    assert decide(build_job(**dict(kw, training="lora"))).layout is not None
    assert decide(build_job(**dict(kw, training="lora"), mbs=16)).layout is None
    assert decide(build_job(**kw, precision="pure-bf16", optimizer="adamw-8bit")).layout is not None
    # a pin that is alone in the way is named as such, with no second clause
    d = decide(build_job(**dict(kw, training="lora"), mbs=64))
    assert "--mbs 64 is what is in the way" in d.nothing_allowed and "without_pins" not in d.sizing


def test_a_lora_job_that_fits_nowhere_names_qlora_where_it_fits():
    """Llama 3 70B with LoRA on one H100 holds its bf16 base (about 130 GiB): QLoRA's 4-bit base
    fits the same GPU, and the refusal names it, as the flag that replaces --training lora."""
    kw = dict(model="llama-3-70b", gpus=1, gpu="h100-sxm", seq_len=4096, training="lora")
    d = decide(build_job(**kw))
    assert d.layout is None and d.sizing["recipes_that_fit"] == ["--training qlora"]
    assert "with --training qlora (replacing --training lora)" in d.nothing_allowed
    assert decide(build_job(**dict(kw, training="qlora"))).layout is not None

def test_other_gpus_that_fit_keep_the_jobs_nodes_where_their_usual_server_does_not_divide_it():
    """Mixtral 8x7B on 12 A100s in nodes of 4 fits nowhere; the refusal names the GPUs it would
    fit on. Every 8-GPU type was left out because 8 does not divide 12, though 12 B200s, H200s or
    MI300Xs in the job's own nodes of 4 run it (each named GPU answers, each left out does not)."""
    kw = dict(model="mixtral-8x7b", gpus=12, gpu="a100-80gb", gpus_per_node=4, seq_len=1024, global_batch=12)
    d = decide(build_job(**kw))
    named = d.sizing["gpus_that_fit"]
    assert d.layout is None and {"b200", "h200", "mi300x", "gb200"} <= set(named)
    for gpu in ("h200", "l40s"):
        assert (decide(build_job(**dict(kw, gpu=gpu))).layout is not None) == (gpu in named)


def test_the_cluster_size_keeps_the_node_size_the_user_gave_when_the_job_is_one_node():
    """Qwen3 30B-A3B fine-tuned on one node of 6 L40S (--gpus 6 --gpus-per-node 6) fits nowhere.
    The refusal said it would fit on 16 x l40s -- two 8-GPU servers -- and `--gpus 16
    --gpus-per-node 6` is refused as not whole nodes. The count must be whole nodes of 6 and fit
    there (12 does not: 18); left to its default, the node is the L40S's usual server of 8."""
    kw = dict(model="qwen3-30b-a3b", gpus=6, gpus_per_node=6, gpu="l40s", training="finetune", framework="fsdp")
    d = decide(build_job(**kw))
    n = d.sizing["smallest_gpus"]
    assert d.layout is None and n % 6 == 0, n
    assert decide(build_job(**dict(kw, gpus=n))).layout is not None
    assert decide(build_job(**dict(kw, gpus=n - 6))).layout is None
    free = dict(kw)
    free.pop("gpus_per_node")
    assert decide(build_job(**free)).sizing["smallest_gpus"] % 8 == 0


def test_the_cluster_size_is_not_thrown_far_by_node_counts_that_divide_nothing():
    """A 1M-token Llama 3 8B job fits on 4 nodes of H100s (TP 4 x CP 4 x DP 2) but not on 3, 5,
    9 or 17, whose degrees divide neither the heads nor the batch. Asked from 8 GPUs, the walk
    must answer 32, not a count it reached by stepping over those (it said 8,704), and agree
    with the answer asked from 16 GPUs."""
    from shardwise.search.sizing import fits_somewhere, smallest_count, with_cluster
    job = build_job(model="llama-3-8b", gpus=8, seq_len=1 << 20)
    d = decide(job)
    assert d.layout is None
    assert d.sizing["smallest_gpus"] == 32
    assert fits_somewhere(with_cluster(job, 32), d.constraints)
    assert not fits_somewhere(with_cluster(job, 24), d.constraints)
    assert smallest_count(build_job(model="llama-3-8b", gpus=16, seq_len=1 << 20), d.constraints) == 32


def test_a_refusal_under_a_defaulted_framework_names_the_framework_that_fits(run_cli):
    """Qwen2.5 0.5B LoRA at 32k tokens on one L4: the Trainer's whole fp32 logits (150k vocab)
    fit on no count of L4s, but torchtitan's chunked loss fits it on this one. The framework was
    the default, so the refusal says so, instead of 'no count fits' alone; given, it does not."""
    job = ["--model", "qwen2.5-0.5b", "--gpus", "1", "--gpu", "l4", "--seq-len", "32k", "--training", "lora"]
    code, out, err = run_cli("recommend", *job)
    assert code == 0, err
    assert "under --framework hf" in out and "on these 1 x l4 with --framework fsdp --loss-chunks 8" in out
    code, out, err = run_cli("recommend", *job, "--framework", "fsdp", "--loss-chunks", "8")
    assert code == 0 and "NO LAYOUT" not in out, err
    code, out, err = run_cli("recommend", *job, "--framework", "hf")
    assert code == 0 and "NO LAYOUT" in out and "--framework fsdp" not in out


def test_a_refusal_under_sdpa_on_sliding_windows_names_the_kernel_that_fits(run_cli):
    """Gemma 3 12B under DeepSpeed at 32k with --attention sdpa: transformers' dense window mask
    keeps DeepSpeed's Ulysses off (it would drop the windows), and one rank's whole fp32 logits
    fit on no count of H100s. FlashAttention applies the windows itself, so Ulysses splits the
    sequence and the job fits on these 16 GPUs: the refusal said only 'no count fits' and other
    GPUs; it names --attention flash, and flash does fit."""
    job = ["--model", "gemma-3-12b", "--gpus", "16", "--framework", "deepspeed", "--seq-len", "32k",
           "--global-batch", "96"]
    code, out, err = run_cli("recommend", *job, "--attention", "sdpa")
    assert code == 0 and "NO LAYOUT" in out, err
    assert "fits it with --attention sdpa" in out and "on these 16 x h100-sxm with --attention flash" in out
    code, out, err = run_cli("recommend", *job, "--attention", "flash")
    assert code == 0 and "NO LAYOUT" not in out, err


def test_index_of_finds_a_layout_and_treats_single_replica_zero_as_zero0():
    d = decide(build_job(model="llama-3-70b", gpus=32, seq_len=8192))
    lay = d.layout
    assert index_of(d.table.space, lay) == d.index
    assert index_of(d.table.space, lay.with_(zero=1)) == (d.index if lay.dp * lay.cp == 1 else index_of(
        d.table.space, lay.with_(zero=1)))


def test_a_table_for_the_same_job_on_more_memory_is_reused_with_its_own_capacity():
    """explain's memory what-ifs search the job on a GPU of another size: the scores do not depend
    on the memory, so the table is reused, and what fits is judged at the what-if's capacity."""
    from shardwise.explain.why import _with_memory
    from shardwise.kb.build import build_job
    from shardwise.search.table import scored_table
    small = build_job(model="llama-3-8b", gpus=8, gpu_memory=40)
    large = _with_memory(small, 120)
    a, b = scored_table(small, 1024), scored_table(large, 1024, reuse=True)
    assert b.scores is a.scores and (a.capacity, b.capacity) == (40, 120)
    assert b.column("memory.fits").sum() > a.column("memory.fits").sum()
    other = scored_table(build_job(model="llama-3-8b", gpus=8, gpu_memory=40, seq_len=8192), 1024, reuse=True)
    assert other.scores is not a.scores
    # unasked, a search scores again (and draws its progress as it goes)
    assert scored_table(large, 1024).scores is not a.scores


def test_a_ranked_layout_names_the_preferences_it_breaks_as_the_headline_does(run_cli):
    """The ranking takes every broken preference's worth off a layout, the headline's own
    included; a ranked line that named only those the headline honours read '#3 18.8% slower;
    breaks X' above '#4 16.8% slower; breaks X', an order its text did not explain. Here the
    headline is past 90% of memory (memory.headroom) and so are the next layouts. (70B on the same
    GPUs was the case until memory.split-segments turned its headline away from 95% of memory.)"""
    code, out, err = run_cli("recommend", "--params", "34B", "--gpus", "32", "--seq-len", "8192", "--mbs", "4",
                             "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["memory"]["peak_gib"] > 0.9 * d["memory"]["capacity_gib"]
    tight = [a for a in d["alternatives"] if a["memory"]["used_pct"] > 90]
    assert tight
    for a in tight:
        assert "as the headline, breaks memory.headroom (worth 3%)" in a["why_not"], a["why_not"]
    roomy = [a for a in d["alternatives"] if a["memory"]["used_pct"] <= 90]
    assert all("as the headline" not in a["why_not"] for a in roomy)


@pytest.mark.parametrize("kw", [dict(model="llama-3-8b", gpus=8, framework="fsdp", global_batch=64),
                                dict(model="mixtral-8x7b", gpus=16, framework="deepspeed", seq_len=8192)],
                         ids=lambda kw: f"{kw['model']}-{kw['framework']}")
def test_the_space_holds_exactly_the_valid_candidates_in_grid_order(kw):
    """The space is the product of the settings' domains less what a validity rule (or
    zero-needs-replicas) removes, row by row in the grid's order: (tp, pp, cp), then vp, ep,
    ZeRO, HSDP, SP, micro-batch, recomputation. A candidate drawn from the domains is in the
    space exactly when the single-layout rules pass it; the same job lists the same rows."""
    from shardwise.kb.choices import MBS_MAX
    from shardwise.kb.job import divisors
    from shardwise.kb.validity import VALIDITY
    from shardwise.search.space import VP_MAX, offload_steps
    job = build_job(**kw)
    gb, _ = global_batch(job)
    space = build_space(job, gb)
    a = space.arrays
    g, m, c = job.cluster.gpus, job.model, job.cluster
    key = np.lexsort([a[f] for f in reversed(("tp", "pp", "cp", "vp", "ep", "zero", "shard", "sp", "mbs", "rc"))])
    assert np.array_equal(key, np.arange(len(space)))          # already in grid order
    assert sum(e["excluded"] for e in space.excluded) + len(space) == space.candidates
    rows = {tuple(int(a[f][i]) for f in a) for i in range(len(space))}
    rng = np.random.default_rng(11)
    held = 0
    for _ in range(400):
        tp = int(rng.choice([d for d in divisors(g) if d <= 2 * c.nvlink_domain]))
        pp = int(rng.choice([p for p in range(1, min(m.layers, g) + 1) if (g // tp) % p == 0]))
        cp = int(rng.choice(divisors(g // (tp * pp))))
        dp = g // (tp * pp * cp)
        s = dict(tp=tp, pp=pp, vp=int(rng.choice([1, rng.integers(1, VP_MAX + 1)])), dp=dp, cp=cp,
                 ep=int(rng.choice(divisors(m.experts) if m.is_moe else [1])), zero=int(rng.integers(0, 4)),
                 shard=int(rng.choice([0, max(1, c.gpus_per_node // tp)])) if kw["framework"] == "fsdp" else 0,
                 sp=int(rng.integers(0, 2)), mbs=int(rng.integers(1, MBS_MAX + 1)), rc=int(rng.integers(0, 4)),
                 offload=int(rng.choice(offload_steps(job))))
        s["grad_accum"] = gb // (s["mbs"] * dp)
        valid = all(bool(r.ok(job, dict(s, gb=gb))) for r in VALIDITY)
        single = s["zero"] > 0 and dp * cp == 1 and (not m.is_moe or tp * cp * dp == s["ep"])
        assert (tuple(s[f] for f in a) in rows) == (valid and not single), s
        held += valid and not single
    assert 0 < held < 400                                       # the draws hit both sides
    assert all(np.array_equal(a[f], b) for f, b in build_space(job, gb).arrays.items())


def test_a_batch_with_an_odd_factor_is_split_by_any_micro_batch_that_divides_it():
    """96 sequences on 32 ranks: 3 each. Powers of two alone leave mbs 1 x grad_accum 3 at DP 32;
    mbs 3 runs the step in one micro-batch, faster, and the search tries every divisor of the
    batch up to 64. A house policy of power-of-two micro-batches takes it back."""
    from shardwise.search.space import micro_batches
    assert micro_batches(96) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48]
    assert micro_batches(1024) == [1, 2, 4, 8, 16, 32, 64] and micro_batches(5) == [1, 5]
    job = build_job(model="llama-3-8b", gpus=32, seq_len=4096, global_batch=96)
    d = decide(job)
    assert d.layout.mbs == 3 and d.layout.grad_accum == 1 and d.layout.dp == 32
    pow2 = decide(job, ["rules/policies/mbs-powers-of-two.yaml"])
    assert pow2.layout.mbs in (1, 2, 4, 8, 16, 32, 64)
    assert d.table.tokens_per_s[d.index] > 1.03 * pow2.table.tokens_per_s[pow2.index]


def test_neighbour_facts_on_a_reused_table_are_those_of_a_fresh_search():
    """explain's memory what-ifs reuse the search's space (and the layout groups its neighbour
    facts are built on): what a layout's neighbours may do is judged at the what-if's own
    memory, as a search of that job from scratch judges it."""
    from shardwise.explain.why import _with_memory
    small = build_job(model="mixtral-8x7b", gpus=16)
    first = decide(small)
    what_ifs = {gib: decide(_with_memory(small, gib), reuse_scores=True) for gib in (120, 72)}
    for gib, reused in what_ifs.items():
        fresh = decide(_with_memory(small, gib))
        assert reused.table.space is first.table.space and fresh.table.space is not first.table.space
        for path in ("same.min_zero", "same.min_recompute", "same.pp1_fits"):
            assert np.array_equal(reused.feasibility.column(path), fresh.feasibility.column(path)), (gib, path)
        assert reused.nothing_allowed is None
        assert (reused.layout, reused.feasibility.fact("fit.count")) == (fresh.layout, fresh.feasibility.fact("fit.count"))


def test_torchtitan_experts_are_parallel_inside_the_shard_group_never_across_replicas():
    """torchtitan builds EP from dp_shard x cp x tp ranks (ParallelDims: "expert_parallel_degree
    must divide dp_shard * cp * tp"); its ZeRO-0 replicates over DP (dp_shard 1). A MoE job under
    --framework fsdp headlined tp=2 pp=4 vp=16 dp=4 ep=8 zero=0, which torchtitan refuses at start:
    EP 8 over cp x tp = 2 ranks. No such layout is searched, and --layout refuses one by name."""
    from shardwise.kb.errors import InputError
    from shardwise.kb.resolve import resolve_layout
    job = build_job(model="qwen3-30b-a3b", gpus=32, gpu="b200", framework="fsdp", seq_len=4096, global_batch=1000)
    gb, _ = global_batch(job)
    a = build_space(job, gb).arrays
    replicated = (a["zero"] == 0) & (a["ep"] > 1)
    assert replicated.any()                                     # ZeRO-0 with EP stays where cp x tp holds it
    assert np.all((a["cp"][replicated] * a["tp"][replicated]) % a["ep"][replicated] == 0)
    with pytest.raises(InputError, match=r"ep=8 with zero=0 under --framework fsdp.*torchtitan-ep-in-shard"):
        resolve_layout(job, "tp=2,pp=4,dp=4,ep=8,zero=0,sp=on,mbs=25,recompute=full")
    resolve_layout(job, "tp=2,pp=4,dp=4,ep=8,zero=2,sp=on,mbs=25,recompute=full")
    resolve_layout(job, "tp=4,pp=2,dp=4,ep=4,zero=0,sp=on,mbs=25,recompute=full")


def test_a_way_to_fit_is_named_only_if_the_house_policies_that_bind_it_then_allow_it(tmp_path):
    """A house policy whose condition reads the training (adapter jobs run without
    recomputation) binds the job the refusal's --training lora would make: Llama 3 8B LoRA at
    8,192 tokens without recomputation needs 86 GiB, past an L40S, so the refusal of the full
    fine-tune must not name LoRA under that policy -- it did, as the sizing judged the LoRA job
    by the fine-tune's own rules -- and still names it without the policy."""
    policy = tmp_path / "adapters.yaml"
    policy.write_text('rules:\n  - id: house.adapters-no-recompute\n    title: Adapters without recomputation\n'
                      '    priority: 990\n    when: "train.training in [\'lora\', \'qlora\']"\n'
                      '    then:\n      - pin: {recompute: none}\n    because: "a test policy"\n')
    kw = dict(model="llama-3-8b", gpus=1, gpu="l40s", seq_len=8192, training="finetune")
    assert decide(build_job(**kw)).sizing["recipes_that_fit"] == ["--training lora"]
    d = decide(build_job(**kw), extra_rules=[str(policy)])
    assert d.layout is None and d.sizing["recipes_that_fit"] == []
    assert decide(build_job(**dict(kw, training="lora")), extra_rules=[str(policy)]).layout is None


def test_pre_training_is_not_told_to_drop_its_fp32_master_weights():
    """Llama 3 8B pre-trained under the Trainer on one H100 fits only with the model in bf16
    (145 GiB under the defaults): pure bf16 from scratch loses the updates smaller than half a
    bf16 step (arXiv:2010.06192), so the refusal names no --precision pure-bf16 there, as it
    does for the same model fine-tuned from a checkpoint."""
    kw = dict(model="llama-3-8b", gpus=1, gpu="h100-sxm", seq_len=4096, framework="hf")
    assert "--precision pure-bf16" in decide(build_job(**kw, training="finetune")).sizing["recipes_that_fit"]
    d = decide(build_job(**kw, training="pretrain"))
    assert d.layout is None and not any("--precision" in f for f in d.sizing["recipes_that_fit"])
    assert "pure-bf16" not in d.nothing_allowed
