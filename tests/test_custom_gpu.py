"""A GPU the catalog lacks, described by its own figures on the catalog GPU nearest it
(kb/custom_gpu.py; DESIGN.md: "catalog name or custom memory / dense TFLOP/s per precision / HBM
bandwidth"). NVIDIA's H20 is the example: Hopper silicon, 96 GB, 148 dense BF16 TFLOP/s, 296 FP8,
4.0 TB/s (NVIDIA H20 datasheet)."""
import json

from shardwise.kb.build import build_job
from shardwise.kb.perf import step_time
from shardwise.kb.layout import Layout

from conftest import refused

H20 = ("--gpu", "h100-sxm", "--gpu-memory", "96", "--gpu-tflops", "148", "--gpu-hbm-gbps", "4000")


def answer(run_cli, *args) -> dict:
    code, out, err = run_cli("recommend", "--format", "json", *args)
    assert code == 0, err
    return json.loads(out)


def test_a_gpu_with_a_seventh_of_the_compute_trains_about_a_seventh_as_fast():
    # one layout, timed on both: a compute-bound step takes the BF16 peak's ratio (148 / 989), a
    # little less where its memory-bound kernels and communication do not slow with it
    lay = Layout(tp=1, pp=1, dp=8, zero=1, mbs=2, grad_accum=64, recompute="none")
    h100 = step_time(build_job(model="llama-3-8b", gpus=8), lay).tokens_per_s
    h20 = step_time(build_job(model="llama-3-8b", gpus=8, gpu="h100-sxm", gpu_tflops=148.0), lay).tokens_per_s
    ratio = 148.0 / 989.0
    assert ratio <= h20 / h100 <= 1.25 * ratio


def test_the_fp8_peak_follows_the_catalog_ratio_unless_given():
    job = build_job(model="llama-3-8b", gpu="h100-sxm", gpu_tflops=148.0, precision="fp8")
    g = job.cluster.gpu
    assert abs(g.tflops_fp8 / g.tflops_bf16 - 1979.0 / 989.0) < 1e-9
    given = build_job(model="llama-3-8b", gpu="h100-sxm", gpu_tflops=148.0, gpu_fp8_tflops=250.0).cluster.gpu
    assert given.tflops_fp8 == 250.0 and given.tflops_bf16 == 148.0


def test_the_answer_names_the_figures_and_says_what_is_the_catalogs(run_cli):
    d = answer(run_cli, "--model", "llama-3-8b", "--gpus", "8", *H20)
    said = " ".join(d["assumptions"])
    assert "custom GPU on h100-sxm: dense BF16 148 TFLOP/s" in said
    assert "2x BF16, the catalog h100-sxm's ratio" in said and "HBM 4000 GB/s" in said
    warned = " ".join(d["warnings"])
    # its speed is the user's figures, unchecked; not "no run on h100-sxm", which is untrue
    assert "timed at the TFLOP/s and memory bandwidth given for it" in warned
    assert "no measured or published training run on h100-sxm" not in warned
    assert d["memory"]["capacity_gib"] == 96.0


def test_memory_alone_keeps_its_name_and_its_checked_speed(run_cli):
    job = build_job(model="llama-3-8b", gpu="h100-sxm", gpu_memory=64.0)
    assert job.cluster.gpu.name == "h100-sxm (64.0 GiB)" and job.cluster.gpu.speed_checked_on
    d = answer(run_cli, "--model", "llama-3-8b", "--gpu-memory", "64")
    assert not any("custom GPU" in a for a in d["assumptions"])


def test_a_job_file_takes_the_figures(run_cli, tmp_path):
    f = tmp_path / "h20.yaml"
    f.write_text("model: llama-3-8b\ngpus: 8\ngpu: h100-sxm\ngpu_memory: 96\ngpu_tflops: 148\ngpu_hbm_gbps: 4000\n")
    assert answer(run_cli, "-f", str(f)) == answer(run_cli, "--model", "llama-3-8b", "--gpus", "8", *H20)


def test_figures_out_of_range_or_without_the_silicon_are_refused(run_cli):
    assert "--gpu-tflops: 5.0 must be a number from 10 to 10000 TFLOP/s" in refused(
        run_cli, "recommend", "--model", "llama-3-8b", "--gpu-tflops", "5")
    assert "--gpu-hbm-gbps" in refused(run_cli, "recommend", "--model", "llama-3-8b", "--gpu-hbm-gbps", "50")
    assert "a100-80gb has no FP8 tensor cores" in refused(
        run_cli, "recommend", "--model", "llama-3-8b", "--gpu", "a100-80gb", "--gpu-fp8-tflops", "500")


def test_compare_refuses_one_gpus_figures_for_every_gpu_type(run_cli):
    err = refused(run_cli, "compare", "--model", "llama-3-8b", "--gpu-tflops", "148", "--vary", "gpu=h100-sxm,b200")
    assert "describe one GPU" in err
    code, out, err = run_cli("compare", "--model", "llama-3-8b", "--format", "json", "--vary", "gpu_tflops=148,989")
    assert code == 0, err
    rows = json.loads(out)["variants"]
    assert rows[0]["tokens_per_s"] < 0.2 * rows[1]["tokens_per_s"]


def test_a_memory_what_if_keeps_the_gpus_own_figures_and_reuses_its_table():
    """explain's 'if memory per GPU were ...' is the same custom GPU with other memory: named with
    its TFLOP/s still, timed at them, and keyed like the job for the scored table it reuses."""
    from shardwise.explain.why import _with_memory
    from shardwise.search.table import _any_memory
    job = build_job(model="llama-3-8b", gpus=8, gpu="h100-sxm", gpu_tflops=148.0)
    what_if = _with_memory(job, 120.0)
    assert what_if.cluster.gpu.name == "h100-sxm (120.0 GiB, 148 TFLOP/s)"
    assert what_if.cluster.gpu.tflops_bf16 == 148.0 and what_if.cluster.gpu.memory_gib == 120.0
    assert _any_memory(what_if) == _any_memory(job)


def test_its_speed_is_said_unchecked_with_no_likely_range(run_cli):
    # the H100's runs do not check a GPU timed at the user's figures: beside the warning that no
    # run checks its speed (an upper bound) the answer gives no likely range, as the README says
    d = answer(run_cli, "--model", "llama-3-8b", "--gpus", "8", *H20)
    c = d["metrics"]["checked"]
    assert c["runs"] == 0 and "tokens_per_s" not in c
    assert "none on h100-sxm (96.0 GiB, 148 TFLOP/s, 4000 GB/s))" in c["unchecked"], c
    # another memory size alone is the same silicon, checked on the H100's runs
    mem = answer(run_cli, "--model", "llama-3-8b", "--gpus", "8", "--gpu-memory", "96")
    assert mem["metrics"]["checked"]["runs"] > 0 and "none on" not in mem["metrics"]["checked"]["against"]
