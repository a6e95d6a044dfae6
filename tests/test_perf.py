"""Step-time model: the FLOPs convention, the calibrated compute, and how layouts change time."""
import json
import statistics

import pytest

from shardwise.kb import catalog
from shardwise.kb.build import build_job
from shardwise.kb.perf import step_time
from shardwise.kb.perf.flops import hardware_flops_per_token, model_flops_per_token
from shardwise.kb.resolve import resolve_layout

calibration = pytest.importorskip("calibration")


def run(job, text):
    lay, _ = resolve_layout(job, text)
    return step_time(job, lay)


def test_model_flops_follow_megatrons_counter():
    """6(N - embedding) + causal attention: NVIDIA's TFLOP/s / tokens/s ratio for 70B at 8k is 449 GFLOP."""
    assert model_flops_per_token(catalog.model("llama-3-70b"), 8192) / 1e9 == pytest.approx(449.2, abs=0.5)
    assert model_flops_per_token(catalog.model("llama-3.1-405b"), 8192) / 1e9 == pytest.approx(2524.0, abs=2)
    m = catalog.model("llama-3-8b")
    assert hardware_flops_per_token(m, 4096, "full") > hardware_flops_per_token(m, 4096, "selective") > model_flops_per_token(m, 4096)


def test_adapter_training_is_credited_only_the_flops_it_runs(run_cli):
    """LoRA's frozen base computes no weight gradients: its model FLOPs are 4N + attention
    (forward, input gradient; the attention core 3x), so its MFU is not read off 6N."""
    from shardwise.kb.params import total_params
    m = catalog.model("llama-3-8b")
    full, lora = model_flops_per_token(m, 4096), model_flops_per_token(m, 4096, frozen=True)
    weights = 2.0 * (total_params(m) - m.vocab * m.hidden)          # one forward through the weights
    assert full - lora == pytest.approx(weights, rel=1e-4)             # norms are no GEMM
    code, out, err = run_cli("memory", "--model", "llama-3-8b", "--gpus", "1", "--training", "lora",
                             "--layout", "tp=1", "--format", "json")
    d = json.loads(out)
    assert code == 0 and "4(N - embedding)" in d["metrics"]["mfu_basis"]
    assert d["metrics"]["mfu_pct"] == pytest.approx(
        100 * lora * d["metrics"]["tokens_per_s_per_gpu"] / 989e12, rel=0.01)


def test_lora_is_faster_than_full_fine_tuning_where_its_adapters_run_in_bf16():
    """A frozen base runs no weight-gradient GEMMs; PEFT's fp32 casts around the adapters cost
    only where the adapters stay fp32 (the Trainer's own data parallelism): under FSDP2 and
    DeepSpeed's bf16 engine a LoRA step is shorter than full fine-tuning's on the same layout."""
    def step(framework, training, layout, gpus=16):
        job = build_job(model="llama-3-8b", gpus=gpus, seq_len=8192, global_batch=128, framework=framework,
                        training=training)
        return step_time(job, resolve_layout(job, layout)[0]).step_time_s
    for fw in ("fsdp", "hf", "deepspeed"):
        assert step(fw, "lora", "zero=3,mbs=1,recompute=none") < step(fw, "finetune", "zero=3,mbs=1,recompute=none")
    from shardwise.kb.perf.compute import layer_time, lora_bytes_per_token
    m = catalog.model("llama-3-8b")
    t = build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework="hf", training="lora").training
    assert lora_bytes_per_token(m, t, False, True) > 1.5 * lora_bytes_per_token(m, t, False, False)
    # the Trainer's own DDP keeps PEFT's adapters fp32 and pays the casts; its ZeRO (DeepSpeed) does not
    job = build_job(model="llama-3-8b", gpus=16, seq_len=8192, global_batch=128, framework="hf", training="lora")
    ddp, zero = (resolve_layout(job, f"zero={z},mbs=1,recompute=none")[0] for z in (0, 2))
    extra = layer_time(m, job.training, ddp, job.cluster.gpu, False).elementwise \
        - layer_time(m, job.training, zero, job.cluster.gpu, False).elementwise
    cast = 8192 * (lora_bytes_per_token(m, t, False, True) - lora_bytes_per_token(m, t, False, False)) \
        / (job.cluster.gpu.hbm_gbps * 1e9)
    assert extra == pytest.approx(cast, rel=1e-6)


def test_lora_dropout_lengthens_the_step_by_its_own_traffic():
    """PEFT's lora_dropout runs one more elementwise kernel on each adapter's input, forward and
    backward (the input, its dropped-out copy and the mask, and their gradients): a LoRA step with
    dropout is longer than without, by that traffic over HBM and no more, at Llama 3 8B's shape
    with DeepSpeed's bf16 adapters (10 bytes a feature: q, k, v, o, gate, up and down's inputs)."""
    from shardwise.kb.perf.compute import layer_time
    def layer(p):
        job = build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework="deepspeed", training="lora",
                        lora_dropout=p)
        lay = resolve_layout(job, "zero=1,mbs=1,recompute=none")[0]
        return job, layer_time(job.model, job.training, lay, job.cluster.gpu, False), step_time(job, lay).step_time_s
    job, plain, plain_step = layer(0.0)
    _, dropped, dropped_step = layer(0.1)
    m = job.model
    inputs = 4 * m.hidden + 2 * m.hidden + m.ffn          # q, k, v, o (h each here), gate and up (h), down (F)
    traffic = 8192 * 10.0 * inputs / (job.cluster.gpu.hbm_gbps * 1e9)
    assert dropped.elementwise - plain.elementwise == pytest.approx(traffic, rel=1e-6)
    assert dropped.gemm == plain.gemm
    assert dropped_step > plain_step


def test_lora_traffic_reads_each_adapted_linear_of_a_shared_expert_once(tmp_path):
    """PEFT puts one adapter on each nn.Linear it wraps, and each adapter's lora_A reads that
    linear's input once: GraniteMoeShared's shared MLP is one fused input_linear (h x 2S) and
    output_linear (modeling_granitemoeshared.py GraniteMoeSharedMLP), so its input is read once,
    not once for a gate and once for an up; Qwen2-MoE's shared_expert_gate (h x 1) is a linear
    PEFT adapts beside gate, up and down. The dropout PEFT runs on each adapter's input (10 bytes a
    feature in bf16) shows how many input features the traffic counts, per MoE layer: the same
    linears lora_params counts."""
    from shardwise.kb.perf.compute import lora_bytes_per_token
    shapes = {"num_hidden_layers": 4, "num_attention_heads": 16, "vocab_size": 32000, "tie_word_embeddings": False}
    configs = {
        "granitemoeshared": {"hidden_size": 1024, "intermediate_size": 512, "shared_intermediate_size": 1024,
                             "num_key_value_heads": 8, "num_local_experts": 32, "num_experts_per_tok": 8},
        "qwen2_moe": {"hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408,
                      "shared_expert_intermediate_size": 5632, "num_key_value_heads": 16, "num_experts": 60,
                      "num_experts_per_tok": 4},
    }
    for model_type, cfg in configs.items():
        path = tmp_path / f"{model_type}.json"
        path.write_text(json.dumps({"model_type": model_type, **shapes, **cfg}))
        t = {p: build_job(hf_config=str(path), gpus=8, framework="deepspeed", training="lora", lora_dropout=p)
             for p in (0.0, 0.1)}
        m = t[0.0].model
        h, s = m.hidden, m.shared_width
        attention = 3 * h + m.q_width                          # q, k, v read h, o the heads' output
        shared = h + s if model_type == "granitemoeshared" else 2 * h + s + h   # +h: shared_expert_gate
        inputs = (lora_bytes_per_token(m, t[0.1].training, True, False)
                  - lora_bytes_per_token(m, t[0.0].training, True, False)) / 10.0
        assert inputs == attention + shared, model_type


def test_megatron_lora_traffic_reads_bridges_fused_adapters_and_each_routed_copy():
    """Megatron-Bridge's adapters sit on the fused linear_qkv and linear_fc1 (one input read each,
    not q, k, v and gate, up apart as PEFT's), and the routed experts' shared adapter pair reads
    every permuted token: a token's top_k copies. Hand count in bf16 (6 bytes an input feature,
    32 an output feature): Llama 3 8B, inputs h + q + h + F = 26,624, outputs (q + 2 kv) + h + 2F +
    h = 43,008; Qwen3-30B-A3B's MoE layer, attention h + q in, q + 2 kv + h out, and 8 copies of
    the expert pair, h + F_e in and 2 F_e + h out each."""
    from shardwise.kb.perf.compute import lora_bytes_per_token
    dense = build_job(model="llama-3-8b", gpus=8, training="lora", framework="megatron")
    assert lora_bytes_per_token(dense.model, dense.training, False, False) == 6 * 26_624 + 32 * 43_008
    moe = build_job(model="qwen3-30b-a3b", gpus=8, training="lora", framework="megatron")
    m = moe.model
    ins = m.hidden + m.q_width + 8 * (m.hidden + m.expert_ffn)
    outs = m.q_width + 2 * m.kv_width + m.hidden + 8 * (2 * m.expert_ffn + m.hidden)
    assert lora_bytes_per_token(m, moe.training, True, False) == 6 * ins + 32 * outs


def test_per_layer_compute_matches_the_h100_measurements():
    rows = calibration.layer_compute_rows()
    assert len(rows) == 24
    assert max(abs(r["error"]) for r in rows) < 0.08
    assert statistics.median(abs(r["error"]) for r in rows) < 0.03


def _median(rows):
    return statistics.median(abs(r["error"]) for r in rows)


@pytest.fixture(scope="module")
def published():
    if not calibration.CALIBRATION.exists():
        pytest.skip("no calibration data")
    return calibration.throughput_rows()


def test_published_runs_h100_bf16_median_within_10_percent(published):
    rows = [r for r in published if r["gpu"] == "H100" and r["precision"] == "bf16"]
    assert len(rows) >= 40 and _median(rows) <= 0.10


def test_published_runs_h100_fp8_median_within_10_percent(published):
    rows = [r for r in published if r["gpu"] == "H100" and r["precision"] == "fp8"]
    assert len(rows) >= 70 and _median(rows) <= 0.10


def test_published_moe_runs_median_within_10_percent(published):
    """MoE was 39% off before the fixed MoE layer time and the DeepEP overlap, 22.8% with one
    fixed time per layer, 15.3% with its part per local expert, 14.2% with the overlap counted
    only where Megatron runs it and the Blackwell sustained share, 7.8% with the full-iteration
    CUDA graphs of NVIDIA's 26.06+ recipes; this keeps the family from sliding back. Its p90 on
    the rows the model knows was 63% until gpt-oss's eager Megatron ops were priced (kb/perf/
    unfused.py), 46% with them."""
    rows = [r for r in published if r["moe"]]
    assert len(rows) >= 60 and _median(rows) <= 0.10
    kept = sorted(abs(r["error"]) for r in rows if not r["unmodelled"])
    assert kept[int(round(0.9 * (len(kept) - 1)))] <= 0.50


def test_published_runs_p90_within_20_percent_without_the_rows_set_apart(published):
    """Issue 17's p90 target, on the rows that ran under conditions the model knows (the others,
    power-capped GPUs, a named regression, Paxml, are reported apart by benchmarks/throughput.py):
    21.7% before the full-iteration CUDA graphs, 17.7% with them."""
    errs = sorted(abs(r["error"]) for r in published if not r["unmodelled"])
    assert len(errs) >= 200 and errs[int(round(0.9 * (len(errs) - 1)))] <= 0.20


def test_runs_on_full_iteration_cuda_graphs_are_read_without_the_moe_host_time(published):
    """NVIDIA's MXFP8 MoE recipes from the NeMo 26.06 stack capture the whole step in one CUDA
    graph: DeepSeek-V3, Qwen3-30B-A3B and Qwen3-235B-A22B on GB200/GB300 ran 13-34% faster than
    the same layouts timed with the host-side MoE time; read without it, every one is within 12%
    (GPT-OSS 120B aside, 44-57% too fast on every container, graphs or not)."""
    graphed = {c["row"]["id"] for c in calibration.throughput_cases() if c["job"].training.cuda_graphs != "none"}
    rows = [r for r in published if r["id"] in graphed and "gpt-oss" not in r["id"]]
    assert len(rows) >= 12 and max(abs(r["error"]) for r in rows) <= 0.12


def test_full_iteration_cuda_graphs_remove_the_moe_host_time_and_nothing_else():
    """The same MoE job and layout: the graphed step is shorter by exactly the MoE layers' fixed
    time (kb/perf/step.moe_layer_overhead), and a dense model's step does not change."""
    from shardwise.kb.layout import Layout
    from shardwise.kb.perf import step_time
    from shardwise.kb.perf.step import moe_layer_overhead
    lay = Layout(tp=1, pp=1, dp=8, ep=8, zero=1, mbs=4, grad_accum=16)
    plain = build_job(model="qwen3-30b-a3b", gpus=8, gpu="gb200", precision="fp8", global_batch=512)
    graphed = build_job(model="qwen3-30b-a3b", gpus=8, gpu="gb200", precision="fp8", global_batch=512,
                        cuda_graphs="full-iteration")
    m = plain.model
    host = m.moe_layers * moe_layer_overhead(plain.training, m.experts / lay.ep) * lay.grad_accum
    assert host > 0
    assert step_time(plain, lay).step_time_s - step_time(graphed, lay).step_time_s == pytest.approx(host, rel=1e-6)
    assert step_time(plain, lay).moe_host_s == pytest.approx(host, rel=1e-9) and step_time(graphed, lay).moe_host_s == 0
    # with pipeline stages the saving includes the bubble's share, which moe_host_s counts too
    big = dict(model="qwen3-235b-a22b", gpus=256, gpu="gb200", precision="fp8", global_batch=8192)
    staged = Layout(tp=1, pp=8, vp=3, dp=32, ep=32, zero=1, mbs=1, grad_accum=256)
    saved = step_time(build_job(**big), staged).step_time_s - step_time(build_job(**big, cuda_graphs="full-iteration"),
                                                                        staged).step_time_s
    assert step_time(build_job(**big), staged).moe_host_s == pytest.approx(saved, rel=1e-6)
    dense = Layout(tp=1, pp=1, dp=8, zero=1, mbs=1, grad_accum=128)
    times = [step_time(build_job(model="llama-3-8b", gpus=8, cuda_graphs=g), dense).step_time_s
             for g in ("none", "full-iteration")]
    assert times[0] == times[1]


def test_moe_layer_time_holds_on_runs_outside_the_fit():
    """Megatron-MoE-ModelZoo's Qwen3-235B H100 rows (benchmarks/moe_check.py), not in the data
    the MoE constants were fitted on: both within 10% (the fit's own condition)."""
    import moe_check
    for what, _, meas, pred in moe_check.predictions():
        assert abs(pred / meas - 1) < 0.10, (what, pred, meas)


def test_moe_fixed_time_grows_with_the_experts_a_rank_holds():
    """The same MoE model and tokens per rank: a rank holding 16 experts (EP 8) runs 16 grouped
    GEMM members per layer and pays more fixed time per micro-batch than one holding 4 (EP 32),
    so doubling the micro-batch gains more at EP 8."""
    from shardwise.kb.layout import Layout
    from shardwise.kb.perf import step_time
    job = build_job(model="qwen3-235b-a22b", gpus=256, gpu="h100-sxm", seq_len=4096, global_batch=2048, mbs=1)

    def gain(ep):
        tps = [step_time(job, Layout(tp=2, pp=8, vp=4, dp=16, ep=ep, zero=1, sp=True, mbs=mbs,
                                     grad_accum=2048 // 16 // mbs)).tokens_per_s_per_gpu for mbs in (1, 2)]
        return tps[1] / tps[0]
    assert gain(8) > gain(32) > 1.0


def test_published_dense_runs_median_within_7_percent(published):
    """8.5% with every GPU read at its datasheet peak; 5.5% with the Blackwell parts read at
    their sustained share of it."""
    rows = [r for r in published if not r["moe"]]
    assert len(rows) >= 150 and _median(rows) <= 0.07


def test_published_runs_all_median_within_8_percent(published):
    """Issue 17's target for the multi-GPU step time: a median of at most 8% on the public rows
    (10.0% with every GPU at its datasheet peak and the EP overlap everywhere; 7.0% now)."""
    assert len(published) >= 200 and _median(published) <= 0.08


def test_published_blackwell_runs_are_read_at_their_sustained_peak(published):
    """At their datasheet peaks the dense B200 and GB200 rows ran 10-15% slower than predicted;
    with kb/data/gpus.yaml's sustained_share neither is biased by more than 5% either way. (The
    GB300's share comes from identical jobs, below; its dense rows still run 7% faster than
    predicted, nearly all of it the Llama 3.1 405B rows.)"""
    for gpu in ("B200", "GB200"):
        rows = [r for r in published if r["gpu"] == gpu and not r["moe"] and not r["unmodelled"]]
        assert len(rows) >= 6
        assert abs(statistics.median(r["error"] for r in rows)) <= 0.05, gpu


def test_gb300_share_is_the_gb200_share_times_what_identical_jobs_measured():
    """The GB300's sustained share is not fitted to its own rows: it is the GB200's times the
    median speed ratio of the jobs NVIDIA ran alike on both (benchmarks/sustained_share.py).
    Editing one share without the other breaks this."""
    import sustained_share
    ratios = [x[0] for x in sustained_share.identical_job_ratios("GB300", "GB200")]
    assert len(ratios) >= 8
    share = catalog.gpu("gb300").sustained_share / catalog.gpu("gb200").sustained_share
    assert share == pytest.approx(statistics.median(ratios), rel=0.01)


def test_mfu_is_against_the_datasheet_peak_not_the_sustained_one():
    """MFU keeps its usual meaning (model FLOP/s over the datasheet's dense peak) on a GPU whose
    step time is computed at a lower sustained peak: the same job on a GB200 with its share set
    to 1 runs faster, and its MFU rises with the speed, not with the share."""
    import dataclasses
    job = build_job(model="llama-3-8b", gpus=8, gpu="gb200", seq_len=8192, global_batch=128, precision="fp8")
    lay, _ = resolve_layout(job, "dp=8,zero=1,mbs=2,recompute=none")
    gpu = job.cluster.gpu
    assert gpu.sustained_share < 1
    datasheet = dataclasses.replace(job, cluster=job.cluster.model_copy(
        update={"gpu": gpu.model_copy(update={"sustained_share": 1.0})}))
    slow, fast = step_time(job, lay), step_time(datasheet, lay)
    assert fast.tokens_per_s > slow.tokens_per_s
    for st in (slow, fast):
        assert st.mfu_pct == pytest.approx(100 * st.model_tflops_per_gpu / gpu.tflops_fp8, rel=1e-9)


def test_pipeline_bubble_follows_the_schedule():
    job = build_job(model="llama-3-70b", gpus=32, seq_len=4096, global_batch=16)
    plain = run(job, "tp=8,pp=4,mbs=1,recompute=selective").metrics(job)
    inter = run(job, "tp=8,pp=4,vp=2,mbs=1,recompute=selective").metrics(job)
    # m = 16, p = 4: the 1F1B bubble is (p-1)/(m + p-1) ~ 16% of the step, halved by v = 2
    assert 12 < plain["bubble_pct"] < 20
    assert inter["bubble_pct"] < 0.6 * plain["bubble_pct"]
    assert inter["step_time_s"] < plain["step_time_s"]


def test_tensor_parallel_across_nodes_is_expensive():
    job = build_job(model="llama-3-70b", gpus=32, seq_len=4096, global_batch=64)
    in_node = run(job, "tp=8,pp=4,mbs=1,recompute=selective").metrics(job)
    across = run(job, "tp=16,pp=2,mbs=1,recompute=selective").metrics(job)
    # twice the layers a stage, and the userbuffer overlap lost outside the NVLink domain: the
    # ring's bandwidth across the two nodes' eight NICs is no better than NVLink's
    assert across["comm_exposed_s"]["tp"] > 4 * in_node["comm_exposed_s"]["tp"]
    assert across["tokens_per_s"] < in_node["tokens_per_s"]


def test_tensor_parallel_over_pcie_is_not_overlapped():
    """Megatron hides TP's SP collectives behind GEMMs only with Transformer Engine's userbuffers,
    which need the TP group connected over NVLink (TransformerEngine examples/pytorch/
    comm_gemm_overlap/README.md). On an L40S (PCIe) node the exposed TP time is the whole ring:
    layers x 4 all-reduces of mbs x s x h bf16 per micro-batch at PCIe 4 bus bandwidth."""
    job = build_job(model="llama-3-8b", gpus=8, gpu="l40s", seq_len=4096, global_batch=64)
    st = run(job, "tp=2,dp=4,mbs=1,recompute=none,sp=on")
    link = catalog.link("pcie4")
    nbytes = 4096 * 4096 * 2
    per_mb = 32 * 4 * (nbytes / (link.bus_gbps * 1e9) + link.latency_us * 1e-6)
    assert st.comm_by_kind_s["tp"] == pytest.approx(16 * per_mb, rel=0.01)


def test_a_group_that_straddles_two_nvl72_racks_runs_over_the_nics():
    """144 GB200 are two full NVL72 racks, ranks 0-71 and 72-143. An EP group of 16 cannot tile a
    72-GPU rack: ranks 64-79 sit half in each, so that group's all-to-all leaves NVLink for the
    NICs and the step waits on it. 128 GB200 run as two 64-GPU NVLink segments (Slurm
    topology/block --segment, as NVIDIA schedules NVL72), which groups of 16 tile."""
    def ep_seconds(gpus, ep):
        job = build_job(model="deepseek-v3", gpus=gpus, gpu="gb200", seq_len=4096, global_batch=2 * gpus)
        return run(job, f"tp=1,pp=1,dp={gpus},ep={ep},zero=3,mbs=1,recompute=full").comm_by_kind_s["ep"]
    assert ep_seconds(144, 16) > 4 * ep_seconds(144, 8)
    assert ep_seconds(128, 16) < 2 * ep_seconds(128, 8)


def test_slower_fabric_costs_data_parallel_time():
    fast = build_job(model="llama-3-8b", gpus=64, seq_len=4096, global_batch=64, framework="hf")
    slow = build_job(model="llama-3-8b", gpus=64, seq_len=4096, global_batch=64, framework="hf",
                     interconnect="ethernet")
    a = run(fast, "dp=64,zero=0,mbs=1,recompute=full")
    b = run(slow, "dp=64,zero=0,mbs=1,recompute=full")
    assert b.comm_by_kind_s["dp"] > 3 * a.comm_by_kind_s["dp"] and b.step_time_s > a.step_time_s


def test_fp8_is_faster_than_bf16_on_hopper():
    bf = build_job(model="llama-3-70b", gpus=64, seq_len=8192, global_batch=128)
    f8 = build_job(model="llama-3-70b", gpus=64, seq_len=8192, global_batch=128, precision="fp8")
    text = "tp=4,pp=8,vp=5,mbs=1,zero=1,recompute=none"
    ratio = run(f8, text).tokens_per_s / run(bf, text).tokens_per_s
    assert 1.2 < ratio < 1.8                        # published pairs: 1.2-1.5x


def test_time_and_cost_to_train():
    job = build_job(model="llama-3-70b", gpus=32, seq_len=8192, global_batch=512, token_budget="100B",
                    price_per_gpu_hour=2.5)
    mt = run(job, "tp=8,pp=4,mbs=1,recompute=selective").metrics(job)
    assert mt["time_to_train_h"] == pytest.approx(100e9 / mt["tokens_per_s"] / 3600, rel=1e-3)
    assert mt["cost"] == pytest.approx(mt["time_to_train_h"] * 32 * 2.5, rel=1e-3)
    assert 25 < mt["mfu_pct"] < 60


def test_flashattention2_is_capped_on_hopper_not_on_ampere():
    """FlashAttention-2 reaches 35% of the H100's peak (FA3 paper): a 32K-token job spends most
    of its time in attention and runs markedly slower with it there, while on the A100, where FA2
    is the native kernel, the two time alike."""
    def tps(gpu, attention):
        job = build_job(model="llama-3-8b", gpus=8, gpu=gpu, seq_len=32768, global_batch=8,
                        framework="fsdp", attention=attention)
        return run(job, "dp=8,zero=3,mbs=1,recompute=full").tokens_per_s
    assert tps("h100-sxm", "flash2") < 0.85 * tps("h100-sxm", "flash")
    assert tps("a100-80gb", "flash2") == pytest.approx(tps("a100-80gb", "flash"), rel=1e-9)


def test_torchtitan_runs_on_the_hardware_and_kernels_they_name(published):
    """torchtitan's December 2024 rows, read with the micro-batches torchtitan runs (no gradient
    accumulation; PP splits the local batch into pp micro-batches), its Grand Teton H100s (2.4
    TB/s, 500 W) and FlashAttention-2: they were 36-147% too fast before."""
    rows = [r for r in published if r["id"].startswith("torchtitan")]
    assert len(rows) == 16 and _median(rows) <= 0.22
    assert max(abs(r["error"]) for r in rows if "405b" in r["id"] and "cp" not in r["layout"]) <= 0.10


def test_sliding_window_layers_cost_only_their_window():
    """A windowed kernel skips the blocks a sliding window masks out: Mistral 7B's 4096-token
    window costs nothing at 4K and saves most of the attention at 32K, the average keys per query
    are w - w^2/2s (a direct count agrees to 1%), MFU credits only the window's work and says so, and
    the Trainer's SDPA and eager paths, which mask a full score matrix, save nothing."""
    import dataclasses
    from shardwise.kb.perf.flops import window_keys
    s, w = 32768, 4096
    exact = sum(min(i + 1, w) for i in range(s)) / s
    assert window_keys(s, w) == pytest.approx(exact, rel=0.01)
    assert window_keys(s, s) == window_keys(s, 2 * s) == s / 2

    mistral = catalog.model("mistral-7b")
    full = mistral.model_copy(update={"sliding_window": 0})

    def step(model, seq, attention="flash", text="dp=2,cp=4,zero=1,mbs=1,recompute=none"):
        job = build_job(model="mistral-7b", gpus=8, seq_len=seq, global_batch=16, attention=attention)
        job = dataclasses.replace(job, model=model)
        return step_time(job, resolve_layout(job, text)[0])

    assert step(mistral, 4096).step_time_s == pytest.approx(step(full, 4096).step_time_s, rel=1e-12)
    windowed, dense = step(mistral, 32768), step(full, 32768)
    assert windowed.step_time_s < 0.75 * dense.step_time_s
    # MFU is credited the window's work only, not the full causal count Megatron-Core would use
    assert model_flops_per_token(mistral, 32768) < 0.8 * model_flops_per_token(full, 32768)
    assert windowed.model_tflops_per_gpu * 1e12 == pytest.approx(
        windowed.tokens_per_s_per_gpu * model_flops_per_token(mistral, 32768), rel=1e-9)
    assert "sliding-window layers counted over their window" in windowed.metrics(
        build_job(model="mistral-7b", gpus=8, seq_len=32768, global_batch=16))["mfu_basis"]
    for kernel in ("sdpa", "eager"):
        trainer = "dp=8,zero=3,mbs=1,recompute=full"
        assert step(mistral, 8192, kernel, trainer).step_time_s == pytest.approx(
            step(full, 8192, kernel, trainer).step_time_s, rel=1e-12)


def test_megatrons_eager_paths_cost_their_memory_traffic(tmp_path):
    """Where Megatron's fused kernels stop, gpt-oss pays for eager PyTorch ops: YaRN RoPE (which
    Megatron-LM never fuses), the experts' output bias times the router probability, the clamped
    GLU's clamps. Each adds its bytes over the HBM bandwidth to the layer, exactly, per rank (a
    KV head replicated past TP 8 still rotates); none applies under the fused grouped MLP of
    full-iteration graphs (the RoPE one still does), in another framework, or to a model
    without the feature (Llama 3.1's own scaling is not YaRN); a config.json's swiglu_limit is
    read, and a bad one refused."""
    from shardwise.kb.errors import InputError
    from shardwise.kb.hf_config import read_hf_config
    from shardwise.kb.perf import unfused
    from shardwise.kb.perf.compute import layer_time

    oss = catalog.model("gpt-oss-120b")
    mega = build_job(model="llama-3.1-8b", gpus=8).training
    assert unfused.unfused_rope_bytes(catalog.model("llama-3.1-8b"), mega) == 0.0
    assert unfused.unfused_rope_bytes(oss, mega, 16) == (64 / 16 + 1) * 64 * unfused.UNFUSED_ROPE_EXTRA_BYTES

    job = build_job(model="gpt-oss-120b", gpu="gb200", gpus=64, seq_len=4096, global_batch=1280)
    lay = resolve_layout(job, "tp=1,pp=1,dp=64,ep=64,zero=1,mbs=4,recompute=none")[0]
    gpu, t = job.cluster.gpu, job.training
    tokens, hbm = 4 * 4096, gpu.hbm_gbps * 1e9

    def ew(model, training=t):
        return layer_time(model, training, lay, gpu, True).elementwise

    plain = oss.model_copy(update={"glu_limit": 0.0, "rope_scaling": "", "rope_factor": 0.0})
    rope = tokens * (64 + 8) * 64 * unfused.UNFUSED_ROPE_EXTRA_BYTES / hbm
    clamp = tokens * 4 * unfused.GLU_CLAMP_BYTES * 2 * 2880 / hbm
    bias = tokens * 4 * unfused.EXPERT_BIAS_BYTES * 2880 / hbm
    assert ew(oss) - ew(plain) == pytest.approx(rope + clamp, rel=1e-9)
    no_bias = plain.model_copy(update={"linear_bias": False})
    assert ew(plain) - ew(no_bias) == pytest.approx(bias, rel=1e-9)
    graphed = t.model_copy(update={"precision": "fp8", "cuda_graphs": "full-iteration"})
    assert ew(oss, graphed) - ew(no_bias, graphed) == pytest.approx(rope, rel=1e-9)
    fsdp = t.model_copy(update={"framework": "fsdp"})
    assert ew(oss, fsdp) == pytest.approx(ew(no_bias, fsdp), rel=1e-12)

    p = tmp_path / "config.json"
    cfg = {"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 201088,
           "num_local_experts": 32, "num_experts_per_tok": 4}
    for limit, read in ((5.5, 5.5), (None, 7.0)):
        p.write_text(json.dumps(dict(cfg, swiglu_limit=limit)))
        assert read_hf_config(str(p)).glu_limit == read
    p.write_text(json.dumps(dict(cfg, swiglu_limit="seven")))
    with pytest.raises(InputError, match="field 'swiglu_limit' must be a positive number"):
        read_hf_config(str(p))


def test_expert_gradients_cross_the_nodes_on_the_expert_data_parallel_group():
    """With EP 8 filling each node, the expert-DP group has one member per node and reduces
    over one NIC per rank, where the dense DP group's rings use all eight: moving the same bytes
    as expert gradients costs more than as dense ones. A dense model's (empty) expert group
    costs nothing, not even latency."""
    from shardwise.kb.perf.step import _dp_time
    job = build_job(model="mixtral-8x7b", gpus=64, gpu="h100-sxm")
    lay = resolve_layout(job, "tp=1,pp=1,ep=8,zero=3,mbs=1,recompute=full")[0]
    dense, experts, layers = 1.5e9, 5.6e9, (32, 32)
    assert _dp_time(job, lay, dense, experts, 0.0, *layers) > 1.5 * _dp_time(job, lay, dense + experts, 0.0, 0.0, *layers)
    llama = build_job(model="llama-3-8b", gpus=64, gpu="h100-sxm")
    tp8 = resolve_layout(llama, "tp=8,pp=1,zero=0,mbs=1,recompute=full")[0]
    assert _dp_time(llama, tp8.with_(dp=1), 1e9, 0.0, 0.0, 32, 0) == 0.0


def test_torchtitans_selective_recomputation_reruns_half_the_forward_matmuls():
    """torchtitan's per-op checkpointing keeps attention and every other matmul's output, so its
    recomputation costs a large share of full recomputation's (half the forward GEMMs and the
    forward elementwise work); Megatron's selective reruns only the attention core."""
    def share(framework):
        job = build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework=framework)
        zero = 3 if framework == "fsdp" else 1          # FSDP2 has no ZeRO-1
        t = {rc: step_time(job, resolve_layout(job, f"zero={zero},mbs=1,recompute={rc}")[0]).step_time_s
             for rc in ("none", "selective", "full")}
        return (t["selective"] - t["none"]) / (t["full"] - t["none"])
    assert share("fsdp") > 0.3 > share("megatron")


def test_compute_runs_at_the_sustained_peak_in_every_kernel():
    """GEMMs, flash and eager attention and the LM head all run at the datasheet peak x the
    GPU's sustained share; the memory-bound elementwise time does not depend on it."""
    import dataclasses
    from shardwise.kb.perf import compute, step
    from shardwise.kb.stages import all_stages
    for attention in ("flash", "eager"):
        job = build_job(model="llama-3-8b", gpus=8, gpu="gb200", seq_len=4096, global_batch=64,
                        attention=attention, framework="hf" if attention == "eager" else "megatron")
        lay, _ = resolve_layout(job, "dp=8,zero=1,mbs=1,recompute=none")
        full = dataclasses.replace(job, cluster=job.cluster.model_copy(
            update={"gpu": job.cluster.gpu.model_copy(update={"sustained_share": 1.0})}))
        share = job.cluster.gpu.sustained_share
        slow = compute.layer_time(job.model, job.training, lay, job.cluster.gpu, False)
        fast = compute.layer_time(full.model, full.training, lay, full.cluster.gpu, False)
        assert slow.gemm == pytest.approx(fast.gemm / share, rel=1e-9)
        assert slow.attention == pytest.approx(fast.attention / share, rel=1e-9) or attention == "eager"
        assert slow.elementwise == pytest.approx(fast.elementwise, rel=1e-9)
        stage = all_stages(job.model, lay)[-1]

        def head(j):
            # the LM head's GEMM; the loss after it is memory traffic, the same at any share
            loss = compute.loss_time(j.model, j.training, lay, j.cluster.gpu)
            return step._stage_time(j, lay, stage, True)[0] - step._stage_time(j, lay, stage, False)[0] - loss
        assert head(job) == pytest.approx(head(full) / share, rel=1e-9)
    # eager attention: its GEMMs slow down with the share, its score traffic through HBM does not
    assert fast.attention < slow.attention < fast.attention / share


def test_expert_all_to_all_is_hidden_only_where_megatron_can_overlap_it():
    """Megatron-Core overlaps the EP all-to-all with another micro-batch only with PP 1 or
    interleaved stages and no full recomputation (kb/frameworks.megatron_ep_overlap_share, the flag
    the export sets): without interleaving the same layout pays the all-to-all in full."""
    from shardwise.kb.frameworks import profile
    job = build_job(model="mixtral-8x7b", gpus=32, seq_len=4096, global_batch=64)
    plain = run(job, "pp=2,dp=16,ep=8,zero=1,mbs=1,recompute=none").comm_by_kind_s["ep"]
    inter = run(job, "pp=2,vp=2,dp=16,ep=8,zero=1,mbs=1,recompute=none").comm_by_kind_s["ep"]
    hidden = profile("megatron")["overlap"]["ep"]
    assert inter > 0 and plain == pytest.approx(inter / (1 - hidden), rel=1e-6)


def test_without_pipelining_the_first_and_last_micro_batch_hide_no_all_to_all():
    """Megatron's overlap without PP pairs one micro-batch's forward with another's backward: one
    micro-batch a step hides nothing, four hide three quarters of what interleaving would."""
    from shardwise.kb.frameworks import profile
    hidden = profile("megatron")["overlap"]["ep"]
    job = build_job(model="mixtral-8x7b", gpus=32, seq_len=4096, global_batch=32)
    one = run(job, "dp=32,ep=8,zero=1,mbs=1,recompute=none").comm_by_kind_s["ep"]
    job4 = build_job(model="mixtral-8x7b", gpus=32, seq_len=4096, global_batch=128)
    four = run(job4, "dp=32,ep=8,zero=1,mbs=1,recompute=none").comm_by_kind_s["ep"]
    assert four / 4 == pytest.approx(one * (1 - hidden * 3 / 4), rel=1e-6)


def test_megatron_hides_tp_communication_only_with_sequence_parallelism():
    """--tp-comm-overlap needs --sequence-parallel (Megatron's validate_args): without SP the
    estimate exposes the TP all-reduces in full, as the script runs them."""
    from shardwise.kb.frameworks import profile
    hidden = profile("megatron")["overlap"]["tp"]
    job = build_job(model="llama-3-70b", gpus=32, seq_len=4096, global_batch=64)
    on = run(job, "tp=8,pp=4,sp=on,mbs=1,recompute=selective").comm_by_kind_s["tp"]
    off = run(job, "tp=8,pp=4,sp=off,mbs=1,recompute=selective").comm_by_kind_s["tp"]
    assert off == pytest.approx(on / (1 - hidden), rel=1e-6)


def test_the_torch_native_loss_is_timed_as_its_memory_traffic_and_eager_scores_as_a_square():
    """transformers' and torchtitan's cross-entropy (logits.float(), log_softmax, nll_loss and
    their backward) moves 44 bytes per logit through HBM on the last stage; Megatron's runs fused
    in the recipes it is timed on. Eager attention computes and moves the whole square of scores,
    the causal mask added to it, not the causal half."""
    from shardwise.kb.perf import compute
    for framework, expected in (("hf", 44.0), ("fsdp", 44.0), ("megatron", 0.0)):
        job = build_job(model="llama-3-8b", gpus=8, seq_len=4096, global_batch=64, framework=framework)
        lay, _ = resolve_layout(job, f"dp=8,zero={3 if framework == 'fsdp' else 1},mbs=2,recompute=none")
        g = job.cluster.gpu
        seconds = compute.loss_time(job.model, job.training, lay, g)
        assert seconds == pytest.approx(expected * 2 * 4096 * 128256 / (g.hbm_gbps * 1e9 * compute.HBM_EFFICIENCY))
    job = build_job(model="llama-3-8b", gpus=8, seq_len=8192, global_batch=64, framework="hf", attention="eager")
    lay, _ = resolve_layout(job, "dp=8,zero=1,mbs=1,recompute=none")
    g = job.cluster.gpu
    attention = compute.layer_time(job.model, job.training, lay, g, False).attention
    square = 8192 * 8192 * job.model.heads
    assert attention > square * compute.EAGER_BYTES_PER_SCORE / (g.hbm_gbps * 1e9 * compute.HBM_EFFICIENCY)


def test_recomputing_a_lora_layer_runs_its_whole_forward_again():
    """A frozen base weight computes no weight gradient, so LoRA's forward is half of its GEMM
    time, not a third: checkpointing a LoRA layer recomputes the same forward GEMMs as a fully
    trained one (t12, t14, L08, L10 of the calibration steps were 9-21% fast without it)."""
    from shardwise.kb.perf import compute, step
    lt = {}
    for training in ("finetune", "lora"):
        job = build_job(model="llama-3-8b", gpus=1, gpu="h100-sxm", seq_len=4096, global_batch=1,
                        training=training, framework="hf")
        lay, _ = resolve_layout(job, "dp=1,mbs=1,recompute=full")
        lt[training] = compute.layer_time(job.model, job.training, lay, job.cluster.gpu, False)
    full, lora = lt["finetune"], lt["lora"]
    assert lora.gemm == pytest.approx(full.gemm * 2 / 3)
    assert lora.gemm_forward == pytest.approx(full.gemm_forward) == pytest.approx(full.gemm / 3)
    again = step.recompute_seconds("hf", "full", lora)
    assert again == pytest.approx(lora.gemm / 2 + lora.attention / 3.5 + lora.elementwise / 3)


def test_recomputing_eager_attention_runs_its_forward_traffic_again():
    """Eager attention's forward moves 26 of its 58 bytes a score (and a third of its GEMMs):
    full recomputation repeats that, more than the third of the total a flash kernel's forward
    is not far from."""
    from shardwise.kb.perf import compute, step
    job = build_job(model="qwen2.5-0.5b", gpus=1, gpu="h200", seq_len=16384, global_batch=1, training="finetune",
                    framework="hf", attention="eager")
    lay, _ = resolve_layout(job, "dp=1,mbs=1,recompute=full")
    lt = compute.layer_time(job.model, job.training, lay, job.cluster.gpu, False)
    assert lt.attention / 3 < lt.attention_forward < lt.attention / 2
    assert step.recompute_seconds("hf", "full", lt) == pytest.approx(
        lt.gemm_forward + lt.attention_forward + lt.elementwise / 3)


def test_selective_recomputation_reruns_eager_attention_where_it_is_not_kept():
    """torchtitan's per-op checkpointing keeps the SDPA outputs: with eager attention its bmm and
    softmax are recomputed, so selective costs more there than with a fused kernel; Megatron's
    selective recomputes the attention core either way, eager's forward traffic included."""
    def extra(framework, attention):
        job = build_job(model="llama-3-8b", gpus=8, gpu="h100-sxm", seq_len=4096, global_batch=64,
                        framework=framework, attention=attention)
        zero = 3 if framework == "fsdp" else 1          # FSDP2 has no ZeRO-1
        none = step_time(job, resolve_layout(job, f"dp=8,zero={zero},mbs=1,recompute=none")[0]).step_time_s
        sel = step_time(job, resolve_layout(job, f"dp=8,zero={zero},mbs=1,recompute=selective")[0]).step_time_s
        return sel - none
    assert extra("fsdp", "eager") > 2 * extra("fsdp", "flash")
    assert extra("megatron", "eager") > 2 * extra("megatron", "flash") > 0


def test_peft_merged_experts_train_their_weight_gradients():
    """PEFT's merged Mixtral experts compute their weight gradient (the merged weight's), so LoRA
    saves a third of the GEMM time only outside the routed experts, and the merge moves the
    experts' weights each micro-batch; Megatron's LoRA keeps its experts frozen."""
    from shardwise.kb.perf.compute import FROZEN_GEMM_SHARE, MERGED_BYTES_PER_PARAM, layer_time
    m = catalog.model("mixtral-8x7b")

    def times(framework, training):
        job = build_job(model="mixtral-8x7b", gpus=8, seq_len=4096, framework=framework, training=training)
        lay = resolve_layout(job, f"dp=8,zero={0 if framework == 'megatron' else 3},mbs=1,recompute=none")[0]
        return layer_time(m, job.training, lay, job.cluster.gpu, True), job
    full, _ = times("hf", "finetune")
    lora, job = times("hf", "lora")
    mega_full, _ = times("megatron", "finetune")
    mega_lora, _ = times("megatron", "lora")
    assert mega_lora.gemm == pytest.approx(FROZEN_GEMM_SHARE * mega_full.gemm, rel=1e-9)
    assert FROZEN_GEMM_SHARE * full.gemm < lora.gemm < full.gemm
    merge = MERGED_BYTES_PER_PARAM * 8 * 3 * 4096 * 14336 / (job.cluster.gpu.hbm_gbps * 1e9)
    assert lora.elementwise > merge


def test_fsdp_has_no_zero1_and_its_zero2_under_pipelining_reduces_once_a_step():
    """FSDP2 has no ZeRO-1 (a layout asking for it is refused, the search never offers it); under
    torch pipelining its ZeRO-2, like its ZeRO-3, reduce-scatters once a step, so it is never
    slower than ZeRO-3 on the same layout (it was 29% slower: 256 reduce-scatters a step)."""
    from shardwise.kb.errors import InputError
    job = build_job(model="llama-3.1-405b", gpus=1024, seq_len=8192, framework="fsdp")
    with pytest.raises(InputError, match="fsdp-no-zero1"):
        resolve_layout(job, "tp=8,pp=32,vp=4,dp=2,cp=2,zero=1,mbs=1,recompute=none")
    z2, z3 = (step_time(job, resolve_layout(job, f"tp=8,pp=32,vp=4,dp=2,cp=2,zero={z},mbs=1,recompute=none")[0])
              for z in (2, 3))
    assert z2.step_time_s <= z3.step_time_s


def test_zero1_gradient_traffic_hides_behind_one_micro_batch_at_most_without_a_pipeline():
    """70B, TP 8 x DP 8 over one 100 GbE NIC per GPU: the distributed optimizer's reduce-scatter and
    all-gather (several seconds) overlap the last micro-batch's backward and the next forward, not
    a flat 90% of themselves (which read 0.5 s exposed of 5 s)."""
    job = build_job(model="llama-3-70b", gpus=64, seq_len=4096, interconnect="ethernet")
    lay = resolve_layout(job, "tp=8,pp=1,dp=8,zero=1,mbs=2,recompute=full")[0]
    st = step_time(job, lay)
    assert st.comm_by_kind_s["dp"] > 0.5 * 0.9 * 5.0


def test_torchtitan_interleaving_needs_stages_its_split_can_build_and_megatron_fsdp_no_ep_overlap():
    """torchtitan splits L + 2 slots into stages of ceil((L + 2) / (PP x VP)) and refuses a count
    PP does not divide: 405B at PP 8 x VP 7 would build 43. Megatron-Core's EP-overlap schedule
    refuses Megatron-FSDP under interleaving, so the estimate hides no all-to-all there and the
    export does not ask for it."""
    from shardwise.kb.errors import InputError
    from shardwise.kb.frameworks import megatron_ep_overlap_share
    job = build_job(model="llama-3.1-405b", gpus=1024, seq_len=8192, framework="fsdp")
    with pytest.raises(InputError, match=r"torch-stage-split.*|makes 43"):
        resolve_layout(job, "tp=8,pp=8,vp=7,dp=8,cp=2,zero=3,mbs=1,recompute=none")
    assert resolve_layout(job, "tp=8,pp=8,vp=8,dp=8,cp=2,zero=3,mbs=1,recompute=none")[0].vp == 8
    moe = build_job(model="deepseek-v3", gpus=1024)
    for zero, hidden in ((1, True), (2, False), (3, False)):
        lay = resolve_layout(moe, f"tp=2,pp=2,vp=15,ep=256,zero={zero},mbs=1,recompute=none")[0]
        assert (megatron_ep_overlap_share(lay) > 0) == hidden


def test_the_trainers_and_deepspeeds_context_parallelism_is_ulysses():
    """DeepSpeed has no ring attention: the Trainer's and DeepSpeed's CP is Ulysses, four
    all-to-alls of the rank's q, k, v and output a layer forward and four backward, in the
    attention's path (no overlap), and it must split the heads; Megatron's CP stays a ring."""
    from shardwise.kb.errors import InputError
    from shardwise.kb.perf import comm
    from shardwise.kb.perf.step import ulysses_seconds
    job = build_job(model="llama-3-8b", gpus=8, seq_len=32768, framework="deepspeed", global_batch=8)
    lay = resolve_layout(job, "dp=4,cp=2,zero=1,mbs=1,recompute=none")[0]
    m, tokens = job.model, 32768 / 2
    link = comm.group_link(job.cluster, 2, comm.strides(lay)["cp"])
    by_hand = 2 * comm.all_to_all(link, 2, tokens * (4096 + 2 * 1024 + 4096) * 2.0)
    assert ulysses_seconds(m, lay, tokens, link) == pytest.approx(by_hand, rel=1e-9)
    assert step_time(job, lay).comm_by_kind_s["cp"] == pytest.approx(m.layers * lay.grad_accum * by_hand, rel=1e-6)
    ring = build_job(model="llama-3-8b", gpus=8, seq_len=32768, framework="megatron", global_batch=8)
    assert step_time(ring, resolve_layout(ring, "dp=4,cp=2,zero=1,mbs=1,recompute=none")[0]).comm_by_kind_s["cp"] \
        != pytest.approx(step_time(job, lay).comm_by_kind_s["cp"], rel=0.01)
    qwen = build_job(model="qwen2.5-7b", gpus=8, seq_len=8192, framework="hf", training="finetune")
    with pytest.raises(InputError, match="ulysses-splits-heads"):
        resolve_layout(qwen, "dp=1,cp=8,zero=3,mbs=1,recompute=full")


def test_fsdp_zero2_gathers_its_parameters_every_micro_batch():
    """FSDP2 reshards after each backward, so its ZeRO-2 gathers the parameters for every
    micro-batch's forward: on a slow network the exposed data-parallel time doubles with the
    micro-batches, as ZeRO-3's does; DeepSpeed's ZeRO-2 gathers once a step, after the optimizer."""
    def dp(fw, zero, ga):
        job = build_job(model="llama-3-8b", gpus=64, interconnect="ethernet", seq_len=2048, framework=fw,
                        global_batch=64 * ga)
        return run(job, f"dp=64,zero={zero},mbs=1,recompute=none").comm_by_kind_s["dp"]
    assert dp("fsdp", 2, 8) / dp("fsdp", 2, 4) == pytest.approx(2.0, rel=0.05)
    assert dp("fsdp", 3, 8) / dp("fsdp", 3, 4) == pytest.approx(2.0, rel=0.05)
    assert dp("deepspeed", 2, 8) / dp("deepspeed", 2, 4) < 1.9


def test_a_recomputed_attention_runs_its_context_parallel_ring_again():
    """Ring attention passes K/V cp - 1 times forward and K/V with their gradients backward; a
    recomputed attention runs its forward ring again: 4 passes for 3. Megatron's selective
    recomputation checkpoints the core attention, ring included; torchtitan's per-op policy saves
    the attention kernel's output, so only its full recomputation repeats the ring."""
    def cp(fw, rc):
        job = build_job(model="llama-3-8b", gpus=16, seq_len=131072, framework=fw, global_batch=16)
        return run(job, f"tp=1,cp=16,dp=1,zero={1 if fw == 'megatron' else 2},mbs=1,recompute={rc}").comm_by_kind_s["cp"]
    assert cp("megatron", "selective") / cp("megatron", "none") == pytest.approx(4 / 3, rel=0.01)
    assert cp("megatron", "full") == pytest.approx(cp("megatron", "selective"))
    assert cp("fsdp", "selective") == pytest.approx(cp("fsdp", "none"))
    assert cp("fsdp", "full") / cp("fsdp", "selective") == pytest.approx(4 / 3, rel=0.01)


def _llama4_scout(tmp_path, **kw):
    """Llama 4 Scout read from its config.json (36 RoPE layers chunked at 8192, 12 NoPE full)."""
    from test_params import HF_CONFIGS
    path = tmp_path / "scout" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(dict(HF_CONFIGS["llama4_scout"][0], **kw)))
    return str(path)


def test_llama4s_chunked_layers_cost_one_chunk_in_model_flops(tmp_path):
    """A token of a chunked layer attends within its own 8192-token chunk ((i mod c) + 1 keys): its
    attention costs the same at 32K as at 8K, and only the 12 global (NoPE) layers grow with the
    sequence. Before, every layer was counted full causal: 4x the chunked layers' attention at
    32K, MFU credited with work the model does not need."""
    import dataclasses
    from shardwise.kb.perf.flops import attention_flops, chunk_keys
    # the mean keys a query, against a direct count, with a part-filled last chunk
    s, c = 32768 + 3000, 8192
    assert chunk_keys(s, c) == pytest.approx(sum(i % c + 1 for i in range(s)) / s, rel=1e-3)
    assert chunk_keys(c, c) == chunk_keys(c // 2, c) * 2 == c / 2
    job = build_job(hf_config=_llama4_scout(tmp_path), gpus=32, seq_len=32768)
    m = job.model
    assert (m.attn_chunk, m.chunked_layers, m.layers - len(m.nope_layers)) == (8192, 36, 36)
    grow = model_flops_per_token(m, 32768) - model_flops_per_token(m, 8192)
    global_layers = m.layers - m.chunked_layers
    assert grow == pytest.approx(3.0 * global_layers * (attention_flops(m, 32768) - attention_flops(m, 8192)), rel=1e-12)
    # at and below one chunk nothing changes: chunked and full causal layers are the same there
    full = m.model_copy(update={"attn_chunk": 0, "chunked_layers": 0})
    assert model_flops_per_token(m, 8192) == pytest.approx(model_flops_per_token(full, 8192), rel=1e-12)
    # Megatron-Core has no chunked attention: it runs (and is timed running) them full causal,
    # so its step time is the unchunked model's and only the MFU credit drops
    lay = "dp=8,cp=4,ep=8,zero=3,mbs=1,recompute=full"
    chunked, causal = run(job, lay), run(dataclasses.replace(job, model=full), lay)
    assert chunked.step_time_s == pytest.approx(causal.step_time_s, rel=1e-12)
    ratio = model_flops_per_token(m, 32768) / model_flops_per_token(full, 32768)
    assert ratio < 0.85 and chunked.mfu_pct == pytest.approx(causal.mfu_pct * ratio, rel=1e-9)
    assert "chunked-attention layers counted over their 8,192-token chunk" in chunked.metrics(job)["mfu_basis"]


def test_transformers_sdpa_runs_llama4s_chunked_mask_over_the_whole_square(tmp_path):
    """transformers' Llama 4 under SDPA (and "flash", which it has no FlashAttention path for)
    passes the chunked mask as a dense tensor once the sequence reaches a chunk, with is_causal
    False: the kernel computes all s^2 scores of the chunked layers, twice the causal count, so
    the step is slower than a causal model's -- not faster, as the chunk's keys would have it.
    Below a chunk the mask is dropped for SDPA's causal flag, and eager computes the square for
    any model: no change there."""
    import dataclasses
    lay = "dp=32,zero=3,mbs=1,recompute=full"
    for seq, slower in ((32768, True), (8192, True), (4096, False)):
        for attention in ("sdpa", "flash", "eager"):
            job = build_job(hf_config=_llama4_scout(tmp_path), gpus=32, seq_len=seq, framework="deepspeed",
                            attention=attention)
            full = dataclasses.replace(job, model=job.model.model_copy(update={"attn_chunk": 0, "chunked_layers": 0}))
            chunked, causal = run(job, lay).step_time_s, run(full, lay).step_time_s
            if slower and attention != "eager":
                assert chunked > 1.02 * causal, (seq, attention)
            else:
                assert chunked == pytest.approx(causal, rel=1e-12), (seq, attention)


def test_transformers_sdpa_runs_a_sliding_window_over_the_whole_square():
    """transformers' SDPA past the window passes the sliding-window mask as a dense tensor with
    is_causal False: the kernel computes all s^2 scores on the sliding layers, twice the causal
    count and far more than the window a FlashAttention kernel computes -- so the step is slower
    than flash's, and slower than SDPA's on the same model without its window. Below the window
    the mask is dropped for SDPA's causal flag, and a model without a window does not move."""
    import dataclasses
    lay = "dp=8,zero=3,mbs=1,recompute=full"
    for model in ("mistral-7b", "gemma-3-4b"):
        for seq, slower in ((32768, True), (8192, True), (1023, False)):
            job = build_job(model=model, gpus=8, seq_len=seq, framework="hf", attention="sdpa")
            full = dataclasses.replace(job, model=job.model.model_copy(update={"sliding_window": 0, "full_attn_every": 0}))
            sdpa, causal = run(job, lay).step_time_s, run(full, lay).step_time_s
            if slower:
                assert sdpa > 1.02 * causal, (model, seq)
                flash = run(build_job(model=model, gpus=8, seq_len=seq, framework="hf", attention="flash"), lay)
                assert sdpa > 1.2 * flash.step_time_s, (model, seq)
            else:
                assert sdpa == pytest.approx(causal, rel=1e-12), (model, seq)
    llama = build_job(model="llama-3-8b", gpus=8, seq_len=32768, framework="hf", attention="sdpa")
    flash = build_job(model="llama-3-8b", gpus=8, seq_len=32768, framework="hf", attention="flash")
    assert run(llama, lay).step_time_s == pytest.approx(run(flash, lay).step_time_s, rel=1e-12)


def test_ulysses_runs_sdpa_causal_without_the_window():
    """DeepSpeed's Ulysses drops the attention mask before SDPA (ulysses_sp.py uattn_wrapper), so
    at cp 2 transformers' SDPA on Mistral 7B's sliding layers runs is_causal: at a sequence of one
    window (past it the layout is refused, ulysses-keeps-local-attention) that is flash-attn's
    step, not the dense s x s square the masked kernel computes without Ulysses."""
    job = build_job(model="mistral-7b", gpus=8, seq_len=4096, framework="deepspeed", attention="sdpa")
    flash = build_job(model="mistral-7b", gpus=8, seq_len=4096, framework="deepspeed", attention="flash")
    lay = "dp=4,cp=2,zero=3,mbs=1,recompute=full"
    assert run(job, lay).step_time_s == pytest.approx(run(flash, lay).step_time_s, rel=1e-12)
    one = "dp=8,zero=3,mbs=1,recompute=full"
    assert run(job, one).step_time_s > run(flash, one).step_time_s




def test_gradients_are_reduced_in_the_dtype_the_framework_keeps_them():
    """The data-parallel reduce-scatter moves the gradient buffer the memory estimate sizes and the
    export writes: bf16 for Megatron as NVIDIA's recipes run it (--grad-reduce-in-bf16, kb/data/
    frameworks.yaml grad_buffer_bytes), bf16 for the Trainer whose ZeRO is DeepSpeed's, fp32 for
    FSDP2's reduce dtype. With a pipeline the exposed share is the profile's (1 - overlap) alone,
    so the step's dp time reads back the bytes: under a bf16 buffer the gradients' reduce-scatter
    costs what the bf16 parameters' all-gather does."""
    from shardwise.kb.frameworks import profile
    from shardwise.kb.memory.states import recipe
    from shardwise.kb.perf import comm
    from shardwise.kb.stages import all_stages
    job = build_job(model="llama-3-70b", gpus=64, seq_len=4096, global_batch=128)
    lay = resolve_layout(job, "tp=8,pp=2,dp=4,zero=1,mbs=1,recompute=selective,sp=true")[0]
    assert recipe(job.training, 1).grads == 2.0
    params = max(s.dense for s in all_stages(job.model, lay))
    link = comm.collective_link(job.cluster, 4, comm.strides(lay)["dp"])
    gather = comm.all_gather(link, 4, params * 2.0)
    ov = profile("megatron")["overlap"]["dp"]
    assert step_time(job, lay).comm_by_kind_s["dp"] == pytest.approx((1 - ov) * 2 * gather, rel=1e-6)
    # the Trainer at ZeRO 1-3 hands its gradients to DeepSpeed's bf16 engine: what --framework deepspeed moves
    hf = build_job(model="llama-3-8b", gpus=16, seq_len=4096, global_batch=64, framework="hf")
    ds = build_job(model="llama-3-8b", gpus=16, seq_len=4096, global_batch=64, framework="deepspeed")
    lay = resolve_layout(hf, "dp=16,zero=1,mbs=1,recompute=full")[0]
    hf_dp, ds_dp = (step_time(j, lay).comm_by_kind_s["dp"] for j in (hf, ds))
    ov_hf, ov_ds = profile("hf")["overlap"]["dp"], profile("deepspeed")["overlap"]["dp"]
    assert hf_dp / (1 - ov_hf) == pytest.approx(ds_dp / (1 - ov_ds), rel=1e-6)


def test_mi300x_groups_smaller_than_the_node_run_on_their_own_xgmi_links():
    """The MI300X has no switch: each GPU is wired to each of its seven peers by one 64 GB/s link
    (kb/data/links.yaml infinity-fabric peer_gbps). A TP 2 pair all-reduces over its one link, a
    pipeline or CP-ring send goes over one link, and only a group of all eight reaches the 448 GB/s
    of seven links -- where a switched NVLink gives every pair the whole bandwidth."""
    from shardwise.kb.perf import comm
    mi = build_job(model="llama-3-70b", gpus=8, gpu="mi300x", seq_len=4096, global_batch=32)
    c = mi.cluster
    eff = c.intra.efficiency
    assert comm.collective_link(c, 2, 1).bw == pytest.approx(64e9 * eff)
    assert comm.collective_link(c, 4, 1).bw == pytest.approx(3 * 64e9 * eff)
    assert comm.collective_link(c, 8, 1).bw == pytest.approx(448e9 * eff)
    assert comm.p2p_link(c, 4, 2).bw == pytest.approx(64e9 * eff)
    h100 = build_job(model="llama-3-70b", gpus=8, seq_len=4096, global_batch=32)
    text = "tp=2,pp=4,dp=1,zero=1,mbs=1,recompute=full,sp=true"
    mi_st, h_st = run(mi, text), run(h100, text)
    # 44.8 GB/s over one xGMI link against 360 over NVSwitch: TP and PP cost about eight times as much
    assert mi_st.comm_by_kind_s["tp"] > 6 * h_st.comm_by_kind_s["tp"]
    assert mi_st.comm_by_kind_s["pp"] > 6 * h_st.comm_by_kind_s["pp"]
    # a switched link is unchanged: any pair gets the whole NVLink
    assert comm.collective_link(h100.cluster, 2, 1).bw == pytest.approx(comm.collective_link(h100.cluster, 8, 1).bw)


def test_mi355x_groups_run_on_their_own_faster_xgmi_links():
    """The MI355X is wired as the MI300X, a switchless mesh of eight, at 76.8 GB/s a link each way
    (kb/data/links.yaml infinity-fabric-4): a TP 2 pair gets one link, the whole node seven, and
    both are 1.2 times the MI300X's."""
    from shardwise.kb.perf import comm
    c = build_job(model="llama-3-70b", gpus=8, gpu="mi355x", seq_len=4096, global_batch=32).cluster
    old = build_job(model="llama-3-70b", gpus=8, gpu="mi300x", seq_len=4096, global_batch=32).cluster
    eff = c.intra.efficiency
    assert comm.collective_link(c, 2, 1).bw == pytest.approx(76.8e9 * eff)
    assert comm.collective_link(c, 8, 1).bw == pytest.approx(7 * 76.8e9 * eff)
    for size in (2, 8):
        assert comm.collective_link(c, size, 1).bw == pytest.approx(1.2 * comm.collective_link(old, size, 1).bw)


def test_zero3_over_a_thousand_ranks_pays_each_layers_ring_latency():
    """FSDP and ZeRO-3 gather and reduce-scatter one layer at a time, and NCCL runs those
    collectives on rings only (no tree), so each pays the link's latency on every one of its n - 1
    steps: Llama 3 8B fully sharded over 1,024 H100s spends far longer in its data-parallel
    collectives than over 64, although the bytes per rank are the same, and HSDP (shard groups of
    8, replicas all-reduced once a step) is then the faster layout -- as large FSDP jobs run it."""
    def st(gpus, text):
        job = build_job(model="llama-3-8b", gpus=gpus, seq_len=4096, global_batch=gpus, framework="fsdp")
        return run(job, text)
    small, big = st(64, "dp=64,zero=3,mbs=1,recompute=none"), st(1024, "dp=1024,zero=3,mbs=1,recompute=none")
    hsdp = st(1024, "dp=1024,zero=3,shard=8,mbs=1,recompute=none")
    # 32 layers x (2 gathers + 1 reduce-scatter) x 1,023 steps x 6 us: about 0.6 s a micro-batch
    assert big.comm_by_kind_s["dp"] > 10 * small.comm_by_kind_s["dp"]
    assert hsdp.step_time_s < 0.7 * big.step_time_s
    from shardwise.kb.perf import comm
    link = comm.Link(1e12, 6e-6)
    assert comm.all_gather(link, 1024, 0.0) == pytest.approx(1023 * 6e-6)
    assert comm.all_reduce(link, 1024, 0.0) == pytest.approx(20 * 6e-6)      # NCCL's tree: 2 log2 n
    # a small group's ring all-reduce is a reduce-scatter then an all-gather: 2 (n - 1) steps
    assert comm.all_reduce(link, 2, 0.0) == pytest.approx(2 * 6e-6)
    assert comm.all_reduce(link, 4, 0.0) == pytest.approx(4 * 6e-6)          # 6 ring steps, 4 tree steps
    assert comm.all_to_all(link, 2, 0.0) == pytest.approx(6e-6)


def test_the_trainers_fp32_experts_run_at_each_gpus_own_fp32_rate():
    """The Trainer's fp32 Mixtral experts run plain FP32 matmuls (autocast leaves them fp32): at the
    GPU's own FP32 rate over its BF16 tensor rate -- 67 / 989 on an H100, but 91.6 / 362 on an
    L40S, whose tensor cores are four times its FP32 units, not fifteen -- so an L40S's MoE layer
    is not timed as if it had an H100's ratio."""
    from shardwise.kb.perf.compute import expert_gemm_rate, layer_time
    def job(gpu):
        return build_job(model="mixtral-8x7b", gpus=8, gpu=gpu, seq_len=2048, framework="hf", training="finetune",
                         global_batch=8)
    h100, l40s = job("h100-sxm"), job("l40s")
    lay = resolve_layout(h100, "dp=8,zero=0,mbs=1,recompute=full")[0]
    # the MoE layer's GEMMs are mostly those fp32 experts, which the L40S's 91.6 TF of FP32 runs
    # faster than the H100's 67: its layer is no slower than the H100's, where a bf16 peak 2.7x
    # lower with the H100's ratio made it 2.7x slower
    ratio = layer_time(l40s.model, l40s.training, lay, l40s.cluster.gpu, True).gemm / \
        layer_time(h100.model, h100.training, lay, h100.cluster.gpu, True).gemm
    assert ratio < 1.0
    assert expert_gemm_rate(h100.training, lay, h100.cluster.gpu, h100.model) == pytest.approx(67 / 989)
    assert expert_gemm_rate(l40s.training, lay, l40s.cluster.gpu, l40s.model) == pytest.approx(91.6 / 362)


def test_full_recomputation_runs_the_expert_all_to_alls_again():
    """A recomputed MoE layer runs its forward again, the token dispatch and combine all-to-alls
    with it: six all-to-alls a layer where no recomputation runs four, as the TP collectives go
    from four to six. Without interleaving Megatron hides none of them, so the exposed EP time
    reads the count."""
    job = build_job(model="mixtral-8x7b", gpus=32, seq_len=4096, global_batch=64)
    base = "tp=1,pp=2,dp=16,ep=8,zero=1,mbs=1"
    plain, full = run(job, base + ",recompute=none"), run(job, base + ",recompute=full")
    assert plain.comm_by_kind_s["ep"] > 0
    assert full.comm_by_kind_s["ep"] == pytest.approx(1.5 * plain.comm_by_kind_s["ep"], rel=1e-9)


def test_an_h100_nvl_pair_talks_over_its_nvlink_bridge():
    """The H100 NVL is two PCIe cards joined by NVLink bridges, 600 GB/s between the pair
    (kb/data/gpus.yaml pair_link): a TP 2 group of adjacent ranks runs on the bridge, a TP 4 group
    on PCIe Gen5 between the pairs; the H100 PCIe, whose bridge is optional, stays on PCIe."""
    nvl = build_job(model="llama-3-70b", gpus=8, gpu="h100-nvl", seq_len=4096, global_batch=32)
    pcie = build_job(model="llama-3-70b", gpus=8, gpu="h100-pcie", seq_len=4096, global_batch=32)
    text = "tp=2,pp=4,zero=1,mbs=1,recompute=full,sp=true"
    # 240 GB/s over the bridge against 48 over PCIe: a fifth of the TP time
    assert run(nvl, text).comm_by_kind_s["tp"] < 0.3 * run(pcie, text).comm_by_kind_s["tp"]
    from shardwise.kb.perf import comm
    assert comm.collective_link(nvl.cluster, 4, 1).bw == pytest.approx(comm.collective_link(pcie.cluster, 4, 1).bw)
    assert comm.p2p_link(nvl.cluster, 2, 2).bw == pytest.approx(comm.p2p_link(pcie.cluster, 2, 2).bw)


def test_deepspeeds_bf16_pipeline_optimizer_steps_only_its_partition():
    """Under its pipeline engine at ZeRO-0 in bf16 DeepSpeed runs BF16_Optimizer, which keeps the
    fp32 master weights and moments of this rank's data-parallel partition only (the memory
    estimate shards them so): its optimizer step updates that partition, as ZeRO-1's does, not
    every parameter of the stage."""
    job = build_job(model="llama-3-70b", gpus=32, seq_len=4096, global_batch=64, framework="deepspeed")
    z0 = run(job, "tp=1,pp=8,dp=4,zero=0,mbs=1,recompute=full")
    z1 = run(job, "tp=1,pp=8,dp=4,zero=1,mbs=1,recompute=full")
    assert z0.optimizer_s == pytest.approx(z1.optimizer_s, rel=1e-9)


def test_deepspeeds_pure_bf16_step_copies_its_gradients_and_its_master():
    """At pure-bf16 DeepSpeed's ZeRO step flattens the partition's bf16 gradients into a new
    tensor and copies the stepped bf16 master back into the parameters (stage_1_and_2.py step):
    two more passes over the partition than a PyTorch loop's fused AdamW over the same bf16
    states, which steps the parameters in place -- 8 of the 28 bytes a parameter."""
    kw = dict(model="llama-3-8b", gpus=8, seq_len=4096, global_batch=64, precision="pure-bf16")
    ds = run(build_job(framework="deepspeed", **kw), "tp=1,pp=1,dp=8,zero=1,mbs=1,recompute=full")
    fsdp = run(build_job(framework="fsdp", **kw), "tp=1,pp=1,dp=8,zero=2,mbs=1,recompute=full")
    assert ds.optimizer_s == pytest.approx(fsdp.optimizer_s * 28 / 20, rel=1e-6)
    # the Trainer at ZeRO 1-3 hands its step to DeepSpeed's ZeRO optimizer, copies and all
    hf = run(build_job(framework="hf", **kw), "tp=1,pp=1,dp=8,zero=1,mbs=1,recompute=full")
    assert hf.optimizer_s == pytest.approx(ds.optimizer_s, rel=1e-6)


def test_a_nic_shared_by_the_node_gives_each_gpu_its_share():
    """ethernet-100g-node is one 100 GbE NIC a node's eight GPUs share (a cloud VM's network):
    a group that crosses nodes gets an eighth of it per GPU, and a ring collective whose eight
    members per node each lead a ring channel gets the node's whole NIC, not eight of them."""
    from shardwise.kb.layout import Layout
    from shardwise.kb.perf import comm

    def cluster(link):
        return build_job(model="llama-3-8b", gpus=32, gpu="a100-80gb", interconnect=link).cluster
    own, shared = cluster("ethernet-100g"), cluster("ethernet-100g-node")
    nic = catalog.link("ethernet-100g").bus_gbps * 1e9
    assert comm.group_link(own, 4, 8).bw == pytest.approx(nic)
    assert comm.group_link(shared, 4, 8).bw == pytest.approx(nic / 8)
    assert comm.collective_link(own, 32, 1).bw == pytest.approx(8 * nic)
    assert comm.collective_link(shared, 32, 1).bw == pytest.approx(nic)
    lay = Layout(tp=1, pp=1, dp=32, zero=1, mbs=2, grad_accum=16)
    def dp_seconds(link):
        job = build_job(model="llama-3-8b", gpus=32, gpu="a100-80gb", interconnect=link, global_batch=1024)
        return step_time(job, lay).comm_by_kind_s["dp"]
    assert dp_seconds("ethernet-100g-node") > 4 * dp_seconds("ethernet-100g")


def test_torchtitan_async_tp_is_counted_only_over_nvlink():
    """torchtitan hides part of TP only under async TP (--compile.enable_async_tensor_parallel),
    whose fused all-gather/reduce-scatter matmuls work on symmetric memory: every TP peer's buffer
    mapped into each GPU (torchtitan distributed/compile.py _maybe_enable_async_tp ->
    enable_symm_mem_for_group; torch CUDASymmetricMemory map_block, cuMemSetAccess per peer),
    NCCL's symmetric memory only where all GPUs are NVLink-connected (NVIDIA/nccl#2275). On an
    L40S (PCIe) node the TP time is the whole ring, as for Megatron; on an NVLink node it is
    hidden in part."""
    def tp_s(gpu):
        job = build_job(model="llama-3-8b", gpus=8, gpu=gpu, seq_len=4096, global_batch=64, framework="fsdp")
        return run(job, "tp=2,dp=4,mbs=1,recompute=none,sp=on,zero=3").comm_by_kind_s["tp"]
    link = catalog.link("pcie4")
    nbytes = 4096 * 4096 * 2
    per_mb = 32 * 4 * (nbytes / (link.bus_gbps * 1e9) + link.latency_us * 1e-6)
    assert tp_s("l40s") == pytest.approx(16 * per_mb, rel=0.01)


def test_an_fsdp_adapter_job_hides_no_tp_behind_async_tp():
    """Async TP is torchtitan's (--compile.enable_async_tensor_parallel); a LoRA job under
    --framework fsdp is the user's own FSDP2 script (activations.torchtitan_runs), which runs none,
    so its TP time is the whole ring even over NVLink, where the same layout pre-training under
    torchtitan hides part of it."""
    def tp_s(training):
        job = build_job(model="llama-3-8b", gpus=8, seq_len=4096, global_batch=64, framework="fsdp", training=training)
        return run(job, "tp=2,dp=4,mbs=1,recompute=none,sp=on,zero=3").comm_by_kind_s["tp"]
    assert tp_s("pretrain") == pytest.approx(0.7 * tp_s("lora"), rel=1e-6)


def test_eight_bit_adamw_step_under_a_master_weight_recipe_saves_its_moments_bytes():
    """8-bit AdamW under DeepSpeed's fp32-master recipe (the Trainer at ZeRO 1) still reads the fp32
    main parameter and gradient and writes both copies back; only its two moments shrink, from 4
    bytes to 1, each read and written: 12 of fused AdamW's 30 bytes a parameter go, 18 remain."""
    from shardwise.kb.perf.param_traffic import step_bytes_per_param
    from shardwise.kb.schema import TrainingSpec
    fused = step_bytes_per_param(TrainingSpec(seq_len=4096, framework="hf", optimizer="adamw-fused"), zero=1)
    eight = step_bytes_per_param(TrainingSpec(seq_len=4096, framework="hf", optimizer="adamw-8bit"), zero=1)
    assert (fused, eight) == (30.0, 18.0)


def test_mla_attention_gemms_are_the_projections_the_model_has():
    """The attention GEMMs timed on one rank multiply exactly the attention weights the model has:
    DeepSeek-V2-Lite has no q LoRA, one q_proj from the hidden state and no q down-projection."""
    from shardwise.kb.params import attention_projections
    from shardwise.kb.perf.compute import attention_shapes
    for name in ("deepseek-v3", "deepseek-v2-lite", "llama-3-8b"):
        m = catalog.model(name)
        weights = sum(i * o for i, o in attention_projections(m, fused=False))
        assert sum(n * k for _, n, k in attention_shapes(m, 1, 1)) == weights, name


def test_per_module_recompute_reruns_mlas_up_projections():
    """On an MLA model per-module recomputation (Megatron's mla_up_proj) reruns the q and kv
    up-projections' forward: their 2 x (q_lora x heads (nope + rope) + kv_lora x heads (nope + v))
    FLOPs a token a layer count in HFU, and their forward GEMM time in the step; a model without
    MLA reruns no GEMM under it."""
    from shardwise.kb.perf import compute, step
    m = catalog.model("deepseek-v3")
    up = 2.0 * (m.q_lora_rank * m.heads * (m.qk_nope_dim + m.qk_rope_dim) + m.kv_lora_rank * m.heads * (m.qk_nope_dim + m.v_head_dim))
    extra = hardware_flops_per_token(m, 4096, "modules") - hardware_flops_per_token(m, 4096, "selective")
    assert extra == pytest.approx(m.layers * up)
    llama = catalog.model("llama-3-8b")
    assert hardware_flops_per_token(llama, 4096, "modules") == hardware_flops_per_token(llama, 4096, "selective")
    job = build_job(model="deepseek-v3", gpus=256, gpu="h100-sxm", seq_len=4096, global_batch=2048)
    lay, _ = resolve_layout(job, "tp=2,pp=8,dp=16,ep=32,zero=1,sp=on,mbs=1,recompute=modules")
    lt = compute.layer_time(job.model, job.training, lay, job.cluster.gpu, True)
    shapes = compute.mla_up_shapes(job.model, 2, compute.tokens_local(job.training, lay))
    forward = sum(compute.gemm_seconds(*s, job.training, job.cluster.gpu) for s in shapes) / 3
    assert lt.up_proj_forward == pytest.approx(forward) and forward > 0
    assert step.recompute_seconds("megatron", "modules", lt) == pytest.approx(
        lt.attention_forward + lt.elementwise / 4 + forward)
