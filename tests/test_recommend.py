"""`shardwise recommend` on the seed scenarios, with house policies, and its JSON contract."""
import json
import subprocess
import sys

import pytest

from shardwise.kb.build import build_job
from shardwise.rules.recommend import recommend


def rec(**kw):
    extra = kw.pop("rules", [])
    return recommend(build_job(**kw), extra)


def test_seed_000_70b_on_32_h100_with_mbs_4():
    """TP 8 inside the node, PP 4 across nodes, and since mbs=4 cannot fit without
    recomputation at that layout, the output says so and what it did (full recompute)."""
    r = rec(model="llama-3-70b", gpus=32, gpu="h100-sxm", seq_len=8192, mbs=4, interconnect="infiniband")
    lay = r["layout"]
    assert (lay["tp"], lay["pp"], lay["dp"], lay["mbs"]) == (8, 4, 1, 4)
    assert lay["sp"] and lay["zero_stage"] >= 1
    assert lay["recompute"] == "full" and r["memory"]["fits"]
    assert any("mbs=4 was fixed" in n and "full recomputation" in n for n in r["notes"])
    applied = [t["rule"] for t in r["trace"] if t["outcome"] == "applied"]
    assert applied.index("tp.fit-in-node") < applied.index("pp.across-nodes") < applied.index("recompute.full")
    tp = r["rationale"]["tp"]
    assert tp["rule"] == "tp.fit-in-node" and tp["file"] == "rules/tp.yaml" and tp["line"] > 0
    assert "79.7 GiB" in tp["because"]


@pytest.mark.parametrize("gpus", [64, 256])
def test_seed_003_70b_scales_with_data_parallelism(gpus):
    r = rec(model="llama-3-70b", gpus=gpus, gpu="h100-sxm", seq_len=8192)
    lay = r["layout"]
    assert r["memory"]["fits"] and r["memory"]["peak_gib"] <= 0.95 * r["memory"]["capacity_gib"]
    assert lay["tp"] <= 8 and lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == gpus
    assert lay["dp"] >= gpus // 32          # model parallelism stays within a few nodes
    assert lay["global_batch"] == lay["mbs"] * lay["grad_accum"] * lay["dp"]


def test_seed_003_70b_lora_on_8_a100():
    r = rec(model="llama-3-70b", gpus=8, gpu="a100-80gb", training="lora", framework="hf", seq_len=4096)
    assert r["memory"]["fits"] and r["layout"]["tp"] <= 8 and r["layout"]["pp"] == 1
    full = rec(model="llama-3-70b", gpus=8, gpu="a100-80gb", training="finetune", framework="hf", seq_len=4096)
    assert not full["memory"]["fits"] and any("no layout the playbook reached fits" in w for w in full["warnings"])


def test_seed_004_7b_at_128k_on_64_h100_uses_context_parallelism():
    r = rec(model="llama-2-7b", gpus=64, gpu="h100-sxm", seq_len=131072)
    lay = r["layout"]
    assert lay["cp"] >= 4 and lay["tp"] == 8 and r["memory"]["fits"]
    assert "cp.long-sequence" in [t["rule"] for t in r["trace"]]


def test_moe_gets_expert_parallelism_in_the_node():
    r = rec(model="mixtral-8x7b", gpus=16, seq_len=4096)
    assert r["layout"]["ep"] == 8 and r["memory"]["fits"]


def test_house_policies_are_honoured_and_refusals_traced():
    r = rec(model="llama-3-8b", gpus=8, gpu="h100-pcie", seq_len=4096, rules=["rules/policies/tp-never-crosses-pcie.yaml"])
    assert r["layout"]["tp"] == 1 and r["memory"]["fits"]
    refused = [t for t in r["trace"] if t["outcome"].startswith("refused")]
    assert refused and "policy.no-tp-on-pcie" in refused[0]["outcome"]
    deep = rec(model="llama-3.1-405b", gpus=256, seq_len=8192, rules=["rules/policies/pp-at-most-8.yaml"])
    assert deep["layout"]["pp"] <= 8
    assert any(c["rule"] == "policy.pp-at-most-8" for c in deep["constraints"])


def test_long_context_policy_forces_full_recompute_without_looping():
    r = rec(model="llama-3-8b", gpus=16, seq_len=131072, rules=["rules/policies/full-recompute-above-64k.yaml"])
    assert r["layout"]["recompute"] == "full"


def test_json_contract(run_cli):
    code, out, err = run_cli("recommend", "--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    for k in ("tp", "pp", "vp", "dp", "cp", "ep", "zero_stage", "sp", "mbs", "grad_accum", "global_batch", "recompute"):
        assert k in d["layout"]
    for k in ("comm_overhead_pct", "bubble_pct", "mfu_pct", "tokens_per_s", "step_time_s", "time_to_train_h"):
        assert k in d["metrics"]
    assert isinstance(d["alternatives"], list) and isinstance(d["warnings"], list)
    for t in d["trace"]:
        assert {"rule", "file", "line", "set", "because"} <= set(t)
    assert all(len(f["sha256"]) == 64 for f in d["rule_files"])


def test_table_and_markdown_render(run_cli):
    for fmt in ("table", "markdown", "yaml"):
        code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--format", fmt)
        assert code == 0 and "tp" in out, err


JOBS = [["--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192", "--mbs", "4"],
        ["--model", "mixtral-8x7b", "--gpus", "16"]]


def test_runs_do_not_leak_into_each_other(run_cli):
    """Two jobs in one process give the same bytes as each in its own process."""
    together = [run_cli("recommend", *j, "--format", "json")[1] for j in JOBS + JOBS[::-1]]
    alone = [subprocess.run([sys.executable, "-m", "shardwise.cli.main", "recommend", *j, "--format", "json"],
                            capture_output=True, text=True, check=True).stdout for j in JOBS]
    assert together[0] == alone[0] == together[3]
    assert together[1] == alone[1] == together[2]


def test_gradient_sync_over_ethernet_is_flagged():
    slow = rec(model="llama-3-8b", gpus=64, interconnect="ethernet")
    fast = rec(model="llama-3-8b", gpus=64, interconnect="infiniband")
    assert any("over ethernet-100g" in w for w in slow["warnings"])
    assert not any("ethernet" in w for w in fast["warnings"])
    assert slow["metrics"]["comm_overhead_pct"] > fast["metrics"]["comm_overhead_pct"]
