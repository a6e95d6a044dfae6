"""Exports, second layer: each framework's own parser accepts what shardwise writes.

Runs only where the framework environment exists (tests/frameworks/setup.sh builds it; .ci/run
does, the README says how): SHARDWISE_FRAMEWORK_VENV names it. Each check is its own
subprocess, so one framework's imports cannot disturb another's. Nanotron's loader is only in
its GitHub main (PyPI's 0.4 does not import): its check skips with that reason.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from shardwise.export import Target, export

from test_exports import SEEDS, layouts, seed_target

HERE = Path(__file__).parent / "frameworks"
VENV = os.environ.get("SHARDWISE_FRAMEWORK_VENV", "")
PY = Path(VENV) / "bin" / "python" if VENV else None

pytestmark = pytest.mark.skipif(not (PY and PY.exists()),
                                reason="framework parsers not installed: bash tests/frameworks/setup.sh "
                                       ".venv-frameworks, then SHARDWISE_FRAMEWORK_VENV=.venv-frameworks")

FILES = {"deepspeed": "ds_config.json", "megatron": "megatron_pretrain.sh", "torchtitan": "torchtitan_train.sh",
         "accelerate": "accelerate_config.yaml", "fsdp": "fsdp2_sharding.py"}


def targets():
    out = [seed_target(name) for name in sorted(SEEDS)] + layouts()
    return out


def validate(framework, tg, tmp_path):
    ex = export(framework, tg)
    for name, text in ex.files.items():
        (tmp_path / name).write_text(text)
    path = str(tmp_path / FILES[framework])
    lay = tg.layout
    extra = {"deepspeed": [str(lay.dp), str(lay.world), str(lay.pp), str(lay.tp), tg.job.model.family,
                           tg.job.training.framework], "megatron": [str(lay.world)], "torchtitan": [str(lay.world)],
             "accelerate": [], "fsdp": [str(lay.world), str(lay.shard_group if lay.zero >= 1 else 1)]}[framework]
    env = dict(os.environ, PYTHONPATH=f"{HERE}:{Path(VENV) / 'megatron-core'}", DS_ACCELERATOR="cpu",
               TOKENIZERS_PARALLELISM="false")
    return subprocess.run([str(PY), str(HERE / f"validate_{framework}.py"), path, *extra], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.parametrize("framework", sorted(FILES))
@pytest.mark.parametrize("index", range(len(SEEDS) + len(layouts())))
def test_framework_parser_accepts_the_export(framework, index, tmp_path):
    tg = targets()[index]
    if framework == "torchtitan" and tg.job.model.name not in ("llama-3-8b", "llama-3-70b"):
        # torchtitan's llama3_405b registry entry turns on Float8 linears, which its CPU build
        # cannot construct (the export says so in a caveat)
        pytest.skip(f"{tg.job.model.name}: no torchtitan registry entry the CPU parser can build")
    r = validate(framework, tg, tmp_path)
    assert r.returncode == 0 and "OK " in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])


def test_framework_parser_refuses_a_broken_export(tmp_path):
    """The harness can fail: a DeepSpeed batch that counts all GPUs as DP ranks is refused."""
    tg = seed_target(sorted(SEEDS)[0])
    ex = export("deepspeed", tg)
    (tmp_path / "ds_config.json").write_text(ex.files["ds_config.json"])
    env = dict(os.environ, PYTHONPATH=str(HERE), DS_ACCELERATOR="cpu")
    r = subprocess.run([str(PY), str(HERE / "validate_deepspeed.py"), str(tmp_path / "ds_config.json"),
                        str(tg.layout.world)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode != 0 and "AssertionError" in r.stderr


def test_nanotron_loader():
    pytest.skip("Nanotron's config loader is only in its GitHub main; PyPI's 0.4 fails to import "
                "(framework-configs.md section 3): nanotron exports are checked by tests/test_exports.py only")


def test_megatron_builds_the_model_the_estimate_sized(tmp_path):
    """Every catalog model exported to Megatron: Megatron's own parameter count of what the
    script builds is the estimate's (within 0.5%: Megatron leaves biases, QK norms and position
    tables out of its count), with config.json's vocabulary rows (--padded-vocab-size) where TP
    splits them and Megatron's padding where it does not, and the built config has the
    model's gating, QK norm, attention kind, MoE layers, shared experts, sliding-window layers,
    RoPE base, scaling, share of each head and the layers without it, and the router's score
    function, softmax placement, expert groups (DeepSeek-V3's 4 of 8, where Megatron scores a
    group as the model does) and weight scale, and linear RoPE scaling (Gemma 3's 8). Llama 4
    Scout and Maverick, read from config.json, too: its script was refused by TransformerConfig
    ("Please use --moe-router-pre-softmax when topk is 1"); and Mistral Small 3.2 (mistral3: a Mistral text_config under Pixtral, heads of 128 in 5120) and
    dots.llm1 (dots1: DeepSeek-V3's biased sigmoid router under Qwen3's q/k norms) from theirs."""
    from shardwise.export.megatron.family_caveats import GEMMA_FAMILIES
    from shardwise.export.megatron.moe import GROUP_SCORE_TOP
    from shardwise.kb import catalog
    from shardwise.kb.build import build_job
    from shardwise.kb.layout import Layout
    from shardwise.kb.params import total_params

    from test_params import DOTS_LLM1, HF_CONFIGS, MISTRAL_SMALL_32
    configs = {name: HF_CONFIGS[name][0] for name in ("llama4_scout", "llama4_maverick")}
    configs.update(mistral_small_32=MISTRAL_SMALL_32, dots_llm1=DOTS_LLM1)
    items, models = [], {}
    for name in [*catalog.model_names(), *configs]:
        if name in configs:
            cfg = tmp_path / name / "config.json"
            cfg.parent.mkdir()
            cfg.write_text(json.dumps(configs[name]))
            job = build_job(hf_config=str(cfg), gpus=64, seq_len=4096)
        else:
            job = build_job(model=name, gpus=64, seq_len=4096)
        m = job.model
        lay = Layout(tp=2, pp=2, dp=16, ep=8 if m.is_moe else 1, zero=1, sp=True, mbs=1, grad_accum=4)
        path = tmp_path / f"{name}.sh"
        path.write_text(export("megatron", Target(job, lay)).files["megatron_pretrain.sh"])
        items.append(f"{path},{lay.world},{m.vocab}")
        models[str(path)] = m
    env = dict(os.environ, PYTHONPATH=f"{HERE}:{Path(VENV) / 'megatron-core'}", TOKENIZERS_PARALLELISM="false")
    r = subprocess.run([str(PY), str(HERE / "megatron_model.py"), *items], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    built = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(built) == len(items)
    for b in built:
        m = models[b["script"]]
        assert abs(b["params"] / total_params(m) - 1) < 0.005, (m.name, b["params"], total_params(m))
        # config.json's rows, as the estimate sizes them and a checkpoint holds them, where TP 2 splits them
        assert b["vocab_rows"] == (m.vocab if m.vocab % 2 == 0 else -(-m.vocab // 256) * 256), m.name
        assert (b["gated"], b["qk_layernorm"], b["mla"], b["moe_layers"], b["shared_ffn"], b["qkv_bias"]) == \
            (m.mlp != "gelu", m.qk_norm, m.is_mla, m.moe_layers, m.shared_width,
             m.qkv_bias or m.linear_bias), m.name
        assert [i for i, v in enumerate(b["no_rope"]) if v] == list(m.nope_layers), m.name
        assert b["rotary_percent"] == m.rotary_fraction, m.name
        assert b["one_plus_w_norm"] == (m.family in GEMMA_FAMILIES), m.name     # Gemma's x / rms x (1 + w)
        assert b["norm_eps"] == m.norm_eps, m.name                              # Qwen's, Gemma's 1e-6
        assert b["qk_l2_norm"] == (m.qk_l2_norm_layers > 0) and b["rotary_interleaved"] == (m.family == "llama4"), m.name
        if m.is_moe:
            assert b["score_function"] == ("sigmoid" if m.router_bias or m.family == "llama4" else "softmax"), m.name
            assert b["pre_softmax"] == (m.router_pre_softmax and not m.router_bias), m.name    # softmax routers
            exact = m.group_limited and m.top_k // m.router_group_topk == GROUP_SCORE_TOP[m.router_topk_method]
            assert b["groups"] == ([m.router_groups, m.router_group_topk] if exact else [None, None]), m.name
            assert b["topk_scale"] == (m.router_scale if m.router_scale != 1 else None), m.name
            assert b["probs_on_input"] == (m.family == "llama4" and m.top_k == 1), m.name
        # a window of at least the 4,096-token sequence is left out (export/megatron/architecture.py model_args)
        assert (b["window"], b["window_layers"]) == \
            (([m.sliding_window - 1, 0], m.sliding_layers) if m.window_masks(4096) else (None, 0)), m.name
        if not m.learned_pos:
            assert b["rotary_base"] == m.rope_theta, m.name
            assert b["rope_scaling"] == (m.rope_factor if m.rope_scaling == "llama3" else False), m.name
            # Gemma 3's linear scaling by 8: the positions divided by it, as transformers divides inv_freq
            assert b["interpolation"] == (m.rope_factor if m.rope_scaling == "linear" else None), m.name
            if m.rope_scaling == "yarn":        # MLA's rope type, or the yarn position embedding
                assert "yarn" in (b["rope_type"], b["position"]), m.name
                assert (b["yarn_factor"], b["mscale_all_dim"]) == (m.rope_factor, m.rope_param("mscale_all_dim", 0.0))


def test_accelerate_wraps_a_decoder_layer_class_transformers_has():
    """The FSDP wrap class of every family the Accelerate export names exists in transformers
    (Accelerate refuses a class it cannot find in the model)."""
    from shardwise.export.accelerate import LAYER_CLASS
    code = ("import importlib, sys\n"
            "missing = [c for f, c in (a.split(':') for a in sys.argv[1:])\n"
            "           if not hasattr(importlib.import_module(f'transformers.models.{f}.modeling_{f}'), c)]\n"
            "print('MISSING', missing)")
    args = [f"{f}:{c}" for f, c in sorted(LAYER_CLASS.items())]
    r = subprocess.run([str(PY), "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "MISSING []" in r.stdout, (r.stdout[-2000:], r.stderr[-2000:])


@pytest.mark.parametrize("pp,vp,recompute,overlapped", [(1, 1, "selective", True), (2, 2, "none", True),
                                                        (2, 1, "none", False), (1, 1, "full", False)])
def test_megatron_hides_the_expert_all_to_all_where_it_can(pp, vp, recompute, overlapped, tmp_path):
    """The Megatron export of an MoE layout dispatches by all-to-all and asks for the EP overlap
    (--overlap-moe-expert-parallel-comm) exactly where Megatron-Core's TransformerConfig accepts it
    -- PP 1, or PP with interleaving; no full recomputation -- and the script passes parse_args,
    validate_args and TransformerConfig either way."""
    from shardwise.kb.build import build_job
    from shardwise.kb.layout import Layout
    job = build_job(model="mixtral-8x7b", gpus=32, seq_len=4096, global_batch=64)
    dp = 32 // pp
    lay = Layout(pp=pp, vp=vp, dp=dp, ep=8, zero=1, mbs=1, grad_accum=64 // dp, recompute=recompute)
    tg = Target(job, lay)
    text = export("megatron", tg).files["megatron_pretrain.sh"]
    assert "--moe-token-dispatcher-type alltoall" in text
    assert ("--overlap-moe-expert-parallel-comm" in text) == overlapped
    r = validate("megatron", tg, tmp_path)
    assert r.returncode == 0 and "OK " in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])


@pytest.mark.parametrize("graphs", ["none", "full-iteration"])
def test_megatron_accepts_activation_offloading(graphs, tmp_path):
    """NVIDIA's Llama 3 70B layout on 64 GB200 (Megatron-FSDP, 20 of 80 layers' activations in host
    memory: Megatron-Bridge llama3_workload_base_configs.py LLAMA3_70B_PRETRAIN_CONFIG_GB200_BF16_V1)
    exported to Megatron passes parse_args, validate_args and TransformerConfig, whose
    __post_init__ checks the offloaded layers against the model's, PP, recomputation and CUDA
    graphs (all but --cuda-graph-impl full_iteration refused), which the tool admits alike
    (validity rule offload-megatron)."""
    from shardwise.kb.build import build_job
    from shardwise.kb.layout import Layout
    from shardwise.kb.validity import check_layout
    job = build_job(model="llama-3-70b", gpu="gb200", gpus=64, seq_len=8192, global_batch=128,
                    framework="megatron", cuda_graphs=graphs)
    tg = Target(job, Layout(dp=64, zero=3, mbs=1, grad_accum=2, recompute="none", offload=20))
    check_layout(job, tg.layout)     # raises InputError where the tool refuses it
    text = export("megatron", tg).files["megatron_pretrain.sh"]
    assert "--cpu-offloading-num-layers 20" in text
    # a captured graph replays its copies into the same pinned buffers: Transformer Engine's docs
    # (CPU Offloading and CUDA Graphs) need them retained before PyTorch 2.11
    assert ("--cpu-offloading-retain-pinned-cpu-buffers" in text) == (graphs == "full-iteration")
    r = validate("megatron", tg, tmp_path)
    assert r.returncode == 0 and "OK " in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])


@pytest.mark.parametrize("model,gpu,gpus,seq,gbs,lay", [
    # NVIDIA's published MoE layouts (benchmarks/calibration/published_runs.yaml): Qwen3-235B-A22B on
    # 256 H100 in FP8-CS (TP 2 with SP, 94 + 2 slots over 8 x 4 virtual stages, ETP 1), DeepSeek-V3 on
    # 256 B300 at PP 16 (61 layers, three dense, a --pipeline-model-parallel-layout), DeepSeek-V3 on 256
    # GB200 at PP 4 x VP 4 (uneven chunks), Mixtral 8x22B at 64K with CP 8 inside PP 4 x VP 14
    ("qwen3-235b-a22b", "h100-sxm", 256, 4096, 8192, dict(tp=2, pp=8, vp=4, dp=16, ep=32, zero=1, sp=True, mbs=1,
                                                          grad_accum=512, recompute="modules")),
    ("deepseek-v3", "b200", 256, 4096, 4096, dict(pp=16, dp=16, ep=8, zero=1, mbs=1, grad_accum=256,
                                                  recompute="modules")),
    ("deepseek-v3", "gb200", 256, 4096, 4096, dict(pp=4, vp=4, dp=64, ep=64, zero=1, mbs=1, grad_accum=64,
                                                   recompute="modules")),
    ("mixtral-8x22b", "b200", 256, 65536, 64, dict(tp=2, pp=4, vp=14, cp=8, dp=4, ep=8, zero=1, sp=True, mbs=1,
                                                   grad_accum=16, recompute="none")),
])
def test_megatron_accepts_nvidias_fp8_moe_layouts(model, gpu, gpus, seq, gbs, lay, tmp_path):
    """The layouts NVIDIA publishes for its FP8 MoE runs, exported to Megatron, pass parse_args,
    validate_args and TransformerConfig -- per-module recompute with FP8 (which TransformerConfig
    allows from Transformer Engine 2.6), MLA's up-projections, the first dense layers in an uneven
    pipeline, CP with EP."""
    from shardwise.kb.build import build_job
    from shardwise.kb.layout import Layout
    job = build_job(model=model, gpu=gpu, gpus=gpus, seq_len=seq, global_batch=gbs, precision="fp8")
    tg = Target(job, Layout(**lay))
    r = validate("megatron", tg, tmp_path)
    assert r.returncode == 0 and "OK " in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])


def test_accelerate_builds_the_trainers_ulysses_from_the_exported_environment():
    """The variables the DeepSpeed export sets for a Trainer job's CP are the ones Accelerate reads:
    Accelerator's ACCELERATE_USE_PARALLELISM_CONFIG switch, and a ParallelismConfig built from
    the environment with DeepSpeed's sequence parallelism of the layout's CP and the attention set."""
    from test_exports import _trainer_ulysses
    launch = _trainer_ulysses().files["launch.sh"].splitlines()
    env = dict(os.environ)
    env.update(x.removeprefix("export ").split("=", 1) for x in launch if x.startswith(("export ACCELERATE_",
                                                                                        "export PARALLELISM_")))
    code = ("import os\nfrom accelerate import ParallelismConfig\n"
            "assert os.environ['ACCELERATE_USE_PARALLELISM_CONFIG'] == 'true'\n"
            "pc = ParallelismConfig()\n"
            "print('SP', pc.sp_size, pc.sp_backend, pc.sp_enabled, pc.sp_handler.sp_attn_implementation)")
    r = subprocess.run([str(PY), "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "SP 2 deepspeed True flash_attention_3" in r.stdout, (r.stdout[-2000:], r.stderr[-2000:])
