"""Megatron's activation offloading to host memory (Layout.offload, --cpu-offloading-num-layers):
the memory it frees, the copies it adds where the host link is slow, the layouts Megatron
refuses, the search's use of it, and the export. NVIDIA's own Llama 3 70B layout on 64 GB200
(Megatron-FSDP, 20 of 80 layers offloaded, no recomputation: Megatron-Bridge
llama3_workload_base_configs.py LLAMA3_70B_PRETRAIN_CONFIG_GB200_BF16_V1) is the example."""
import json

import pytest

from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError
from shardwise.kb.layout import Layout
from shardwise.kb.resolve import resolve_layout
from shardwise.kb.memory import estimate_memory
from shardwise.kb.perf import step_time

from conftest import refused

JOB = ("--model", "llama-3-70b", "--gpu", "gb200", "--gpus", "64", "--seq-len", "8192", "--global-batch", "128",
       "--framework", "megatron")
NVIDIA = Layout(dp=64, zero=3, mbs=1, grad_accum=2, recompute="none", offload=20)


def gb200_job(gpu="gb200"):
    return build_job(model="llama-3-70b", gpu=gpu, gpus=64, seq_len=8192, global_batch=128, framework="megatron")


def test_nvidias_offloading_layout_fits_and_would_not_without_it():
    # it ran; without the 20 layers in host memory its 80 layers' activations do not fit in 185 GiB
    job = gb200_job()
    assert estimate_memory(job, NVIDIA).fits
    assert not estimate_memory(job, NVIDIA.with_(offload=0)).fits


def test_the_offloaded_layers_leave_the_gpu_and_are_what_host_memory_holds():
    # Transformer Engine keeps at most (layers - offloaded) sets of activations on the GPU
    job = gb200_job()
    none, some = estimate_memory(job, NVIDIA.with_(offload=0)), estimate_memory(job, NVIDIA.with_(offload=40))
    freed = none.breakdown_gib["activations"] - some.breakdown_gib["activations"]
    assert freed == pytest.approx(some.host_offload_gib, rel=1e-9)
    # 40 of 80 layers: half of the layers' activations (the token ids stay)
    assert freed == pytest.approx(none.breakdown_gib["activations"] / 2, rel=0.01)
    assert none.host_offload_gib == 0 and "host_offload_gib" not in none.as_dict()


def test_copies_hide_behind_compute_over_nvlink_c2c_but_not_over_pcie():
    # the same layout: on GB200 (NVLink-C2C, 450 GB/s a direction) the copies hide behind the
    # compute; on an H100 (PCIe Gen5, 64 GB/s) 70 layers' copies outlast the forward
    lay = NVIDIA.with_(offload=70)
    fast = step_time(gb200_job(), lay).comm_by_kind_s["offload"]
    slow = step_time(gb200_job("h100-sxm"), lay).comm_by_kind_s["offload"]
    assert fast == 0.0 and slow > 0.5
    assert "offload" not in step_time(gb200_job(), NVIDIA.with_(offload=0)).comm_by_kind_s


def test_all_but_one_layer_offloaded_overlaps_nothing():
    # Transformer Engine: with layers - 1 offloaded "compute and transfers cannot overlap"
    job = gb200_job()
    last = step_time(job, NVIDIA.with_(offload=79))
    assert last.comm_by_kind_s["offload"] > 0
    assert last.step_time_s > step_time(job, NVIDIA.with_(offload=78)).step_time_s


@pytest.mark.parametrize("text,framework,says", [
    ("dp=64,zero=3,offload=20", "fsdp", "offload=20 is Megatron's activation offloading"),
    ("pp=2,dp=32,offload=20", "megatron", "needs pp=1"),
    ("dp=64,recompute=full,offload=20", "megatron", "needs recompute=none"),
    ("dp=64,offload=-1", "megatron", "non-negative"),
])
def test_layouts_megatron_refuses_are_refused_with_the_reason(text, framework, says):
    # as `memory --layout` and `export --layout` read one (kb/resolve.resolve_layout)
    job = build_job(model="llama-3-70b", gpu="gb200", gpus=64, seq_len=8192, global_batch=128, framework=framework)
    with pytest.raises(InputError, match=says):
        resolve_layout(job, text)


def test_offloading_every_layer_is_refused_on_the_command_line(run_cli):
    # Megatron's TransformerConfig: "CPU offloading can be done only for layers less than 80"
    err = refused(run_cli, "memory", *JOB, "--layout", "dp=64,zero=3,mbs=1,offload=80")
    assert "offload-megatron" in err and "from 1 to 79" in err


def test_offloading_runs_under_a_dense_models_full_iteration_graph(run_cli):
    # Megatron-Core 0.19.2 TransformerConfig refuses CUDA graphs with CPU offloading only where
    # cuda_graph_impl != "full_iteration" (Transformer Engine's docs recommend capturing the whole
    # forward and backward in one graph); its parser takes this export (test_framework_parsers)
    code, out, err = run_cli("memory", "--format", "json", *JOB, "--cuda-graphs", "full-iteration",
                             "--layout", "dp=64,zero=3,mbs=1,offload=20")
    assert code == 0, err
    assert json.loads(out)["memory"]["host_offload_gib"] > 0


def test_offloading_is_refused_with_a_graphed_moe_models_paged_stash(run_cli):
    # a MoE layer under a full-iteration graph runs Megatron's paged stash (the export's
    # --moe-paged-stash), which TransformerConfig refuses with cpu_offloading
    err = refused(run_cli, "memory", "--model", "qwen3-30b-a3b", "--gpu", "gb200", "--gpus", "64",
                  "--precision", "fp8", "--framework", "megatron", "--cuda-graphs", "full-iteration",
                  "--layout", "dp=64,ep=8,zero=1,mbs=1,offload=12")
    assert "offload-megatron" in err and "paged stash" in err


def test_the_search_offloads_under_a_dense_models_full_iteration_graph():
    from shardwise.search.space import offload_steps
    job = build_job(model="llama-3-70b", gpu="gb200", gpus=64, seq_len=8192, global_batch=128,
                    framework="megatron", cuda_graphs="full-iteration")
    assert offload_steps(job) == [0, 10, 20, 30, 40, 50, 60, 70]
    moe = build_job(model="qwen3-30b-a3b", gpu="gb200", gpus=64, precision="fp8", framework="megatron",
                    cuda_graphs="full-iteration")
    assert offload_steps(moe) == [0]


def test_the_search_offloads_on_gb200_as_nvidia_does(run_cli):
    # NVIDIA runs Llama 3 70B on GB200 without TP, PP or recomputation, with activations offloaded
    # over NVLink-C2C; offloading is what makes room for that layout, and the answer says so
    code, out, err = run_cli("recommend", "--format", "json", *JOB)
    assert code == 0, err
    d = json.loads(out)
    lay = d["layout"]
    assert lay["offload"] > 0 and lay["tp"] == 1 and lay["pp"] == 1 and lay["recompute"] == "none"
    assert d["memory"]["host_offload_gib"] > 0
    code, out, err = run_cli("recommend", *JOB)
    assert f"offload     {lay['offload']}" in out
    # what goes to host memory is said beside the GPU's figure, as `memory` and the report say it
    memory_line = next(x for x in out.splitlines() if x.startswith("memory per GPU: "))
    assert (f"in host memory ({lay['offload']} layers offloaded) {d['memory']['host_offload_gib']:.1f}"
            in memory_line)


def test_no_offloading_where_the_framework_has_none(run_cli):
    code, out, err = run_cli("search", "--format", "json", *JOB[:-2], "--framework", "fsdp", "--top", "20")
    assert code == 0, err
    rows = json.loads(out)["top"]
    assert len(rows) == 20 and all(r["layout"]["offload"] == 0 for r in rows)


def test_a_house_rule_can_forbid_offloading(run_cli, tmp_path):
    policy = tmp_path / "no-offload.yaml"
    policy.write_text("rules:\n  - id: house.no-offload\n    title: never offload\n    priority: 900\n"
                      "    then:\n      - require: \"layout.offload == 0\"\n    because: our hosts are small\n")
    code, out, err = run_cli("recommend", "--format", "json", *JOB, "--rules", str(policy))
    assert code == 0, err
    assert json.loads(out)["layout"]["offload"] == 0


def test_no_offloading_over_pcie(run_cli):
    # an H100's host link is PCIe Gen5, which a node's GPUs share and the model does not price:
    # the search leaves offloading out there (a --layout with it is still estimated)
    args = ("--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192", "--framework", "megatron")
    code, out, err = run_cli("search", "--format", "json", *args, "--top", "50")
    assert code == 0, err
    assert all(r["layout"]["offload"] == 0 for r in json.loads(out)["top"])
    code, out, err = run_cli("memory", "--format", "json", *args, "--layout", "tp=8,dp=4,zero=1,mbs=1,offload=40")
    assert code == 0 and json.loads(out)["memory"]["host_offload_gib"] > 0, err


LLAMA_405B = ("--model", "llama-3.1-405b", "--gpu", "gb200", "--gpus", "256", "--seq-len", "8192",
              "--global-batch", "512", "--framework", "megatron")


def test_offloading_stays_within_the_grace_cpus_memory(run_cli):
    # a Grace CPU's 480 GB over its two GPUs: 223.5 GiB a GPU. Llama 3.1 405B without TP offloads
    # 110 of 126 layers to fit (437 GiB a GPU): the headline must not, and a --layout that does is
    # told the recommendation would refuse it
    code, out, err = run_cli("recommend", "--format", "json", *LLAMA_405B)
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"]["offload"] > 0 and 0 < d["memory"]["host_offload_gib"] <= 223.5
    code, out, err = run_cli("memory", *LLAMA_405B, "--layout", "dp=256,zero=3,mbs=1,offload=110")
    assert code == 0, err
    assert "fits on the GPU" in out and "would refuse it: offload.fits-host-memory" in out


@pytest.mark.parametrize("model", ["deepseek-v2-lite", "glm-4.5-air"])
def test_the_offloaded_layers_are_the_first_ones_dense_or_moe(model):
    # Megatron offloads the FIRST N layers (Transformer Engine: "First num_layers layers are
    # offloaded"); these models open with one dense layer whose MLP keeps less than a routed
    # MoE layer's, so offloading it frees less than offloading the MoE layer after it -- not
    # the mean of all the layers each time
    job = build_job(model=model, gpu="gb200", gpus=64, seq_len=4096, global_batch=64, framework="megatron")
    lay = Layout(dp=64, ep=8, zero=1, mbs=1, grad_accum=1, recompute="none")
    act = [estimate_memory(job, lay.with_(offload=n)).breakdown_gib["activations"] for n in (0, 1, 2)]
    host = [estimate_memory(job, lay.with_(offload=n)).host_offload_gib for n in (1, 2)]
    first, second = act[0] - act[1], act[1] - act[2]
    assert first < 0.85 * second
    assert host[0] == pytest.approx(first, rel=1e-9) and host[1] == pytest.approx(first + second, rel=1e-9)


def test_exposed_host_copies_are_said_as_a_share_of_the_step_and_only_where_exposed(run_cli):
    h100 = ("--model", "llama-3-70b", "--gpus", "64", "--seq-len", "8192", "--global-batch", "128",
            "--framework", "megatron")
    code, out, err = run_cli("memory", *h100, "--layout", "tp=8,dp=8,zero=1,mbs=1,offload=78")
    assert code == 0, err
    assert "(host copies of offloaded activations: " in out and "% of the step)" in out
    code, out, err = run_cli("memory", *JOB, "--layout", "dp=64,zero=3,mbs=1,offload=30")
    assert code == 0 and "host copies" not in out, err


def test_search_rows_say_what_they_put_in_host_memory(run_cli):
    # offload.fits-host-memory is a hard rule on it: the ranking shows it beside the GPU's peak
    code, out, err = run_cli("search", "--format", "json", *JOB, "--top", "5")
    assert code == 0, err
    rows = json.loads(out)["top"]
    assert all((r["layout"]["offload"] > 0) == ("host_offload_gib" in r["memory"]) for r in rows)
    assert any(r["layout"]["offload"] > 0 for r in rows)


def test_the_search_leaves_whole_layer_offloading_out_for_moe_models(run_cli):
    # NVIDIA's MoE recipes offload chosen modules, not whole layers; offered whole layers, the
    # search put Qwen3-30B-A3B on 64 GB200 19% above NVIDIA's tuned layout, a speed no run backs
    code, out, err = run_cli("search", "--format", "json", "--model", "qwen3-30b-a3b", "--gpu", "gb200",
                             "--gpus", "64", "--seq-len", "4096", "--framework", "megatron", "--top", "20")
    assert code == 0, err
    assert all(r["layout"]["offload"] == 0 for r in json.loads(out)["top"])
    code, out, err = run_cli("memory", "--format", "json", "--model", "qwen3-30b-a3b", "--gpu", "gb200", "--gpus",
                             "64", "--seq-len", "4096", "--framework", "megatron", "--layout", "dp=64,ep=8,zero=1,offload=12")
    assert code == 0 and json.loads(out)["memory"]["host_offload_gib"] > 0, err


def test_the_trace_graph_shows_the_offloaded_layers_where_they_were_an_option():
    # the graph a review meeting reads ends in one box a setting; the answer offloads, so it says how much
    from shardwise.decision.result import as_dict
    from shardwise.decision.run import decide
    from shardwise.explain.trace_graph import trace_graph
    d = decide(gb200_job(), [])
    src = trace_graph(as_dict(d)).source
    assert d.layout.offload > 0 and f'"offload = {d.layout.offload}"' in src
    h100 = decide(build_job(model="llama-3-8b", gpus=8), [])
    assert "offload =" not in trace_graph(as_dict(h100)).source
