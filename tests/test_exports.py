"""Exports, first layer: pure-Python checks of every framework's file, and golden files.

The second layer (each framework's own parser) is tests/test_framework_parsers.py.
Regenerate the golden files after an intended change with SHARDWISE_UPDATE_GOLDEN=1.
"""
import ast
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from shardwise.export import FRAMEWORKS, Target, export, export_all
from shardwise.export.deepspeed import check as ds_check
from shardwise.export.megatron.run import script_args
from shardwise.kb.frameworks import RANK_CAPACITY_FACTOR
from shardwise.kb.memory.activations import PAGED_STASH_FACTOR
from shardwise.kb.build import build_job
from shardwise.kb.validity import check_layout
from shardwise.kb.errors import InputError
from shardwise.kb.layout import Layout

GOLDEN = Path(__file__).parent / "golden" / "exports"
SEEDS = {
    # seed 001: 70B on 32 H100, mbs 4 -> the rules' TP8 PP4
    "llama-3-70b-tp8-pp4": dict(model="llama-3-70b", gpus=32, gpu="h100-sxm", interconnect="infiniband",
                                seq_len=8192, mbs=4),
    # seed 004: a 7B model at 128K tokens on 64 H100 -> context parallelism
    "llama-2-7b-128k-cp": dict(model="llama-2-7b", gpus=64, gpu="h100-sxm", seq_len=131072),
}


# The golden files pin the exporters, not the decision: each seed job with a fixed layout (the
# layouts the seed pages describe), so a change of headline does not rewrite them.
SEED_LAYOUTS = {
    "llama-3-70b-tp8-pp4": Layout(tp=8, pp=4, dp=1, sp=True, mbs=4, grad_accum=128, recompute="full"),
    "llama-2-7b-128k-cp": Layout(tp=8, pp=1, dp=2, cp=4, zero=1, sp=True, mbs=2, grad_accum=8, recompute="none"),
}


def seed_target(name):
    job = build_job(**SEEDS[name])
    lay = SEED_LAYOUTS[name]
    check_layout(job, lay)
    return Target(job, lay)


def layouts():
    """A spread of layouts that exercise every mapping (vp, cp, ep, zero 0-3, HSDP, recompute)."""
    dense = build_job(model="llama-3-70b", gpus=64, seq_len=8192)
    moe = build_job(model="mixtral-8x7b", gpus=64, seq_len=4096)
    fp8 = build_job(model="llama-3-8b", gpus=16, precision="fp8", framework="fsdp", token_budget="10B")
    fp8_megatron = build_job(model="llama-3-8b", gpus=16, precision="fp8")
    # NVIDIA's Llama 3.1 405B GB200 layout: 126 layers over 16 stages of 4 chunks, split as
    # Megatron splits it (embedding and loss as a layer each, kb/stages.pipeline_slots)
    big = build_job(model="llama-3.1-405b", gpu="gb200", gpus=256, seq_len=8192, global_batch=768)
    odd = build_job(model="llama-3-70b", gpus=48, seq_len=4096)
    trainer = build_job(model="llama-3-8b", gpus=16, training="finetune")       # hf: DeepSpeed's ZeRO
    # expert parallelism as DeepSpeed AutoEP: the Trainer at ZeRO-3, DeepSpeed at ZeRO-0; and a
    # family AutoEP has no preset for (DeepSpeed's MoE layer in the model code)
    trainer_moe = build_job(model="mixtral-8x7b", gpus=64, training="finetune", framework="hf")
    deepspeed_moe = build_job(model="qwen3-30b-a3b", gpus=16, framework="deepspeed")
    native_moe = build_job(model="gpt-oss-20b", gpus=16, framework="deepspeed")
    # the Trainer at 32K with its sequence split four ways: DeepSpeed's Ulysses, counted without an mpu
    trainer_long = build_job(model="llama-3-8b", gpus=16, training="finetune", seq_len=32768)
    # full-iteration CUDA graphs: HybridEP capacity, op fuser and paged stash beside the EP overlap
    graphed_moe = build_job(model="qwen3-30b-a3b", gpus=64, gpu="gb200", precision="fp8", cuda_graphs="full-iteration")
    # eager attention: Megatron's unfused backend, a note for the others
    eager = build_job(model="llama-3-8b", gpus=8, training="finetune", framework="hf", attention="eager")
    # MLA: per-module recomputation reruns the up-projections too (mla_up_proj)
    mla = build_job(model="deepseek-v2-lite", gpus=16)
    return [
        Target(big, Layout(tp=4, pp=16, vp=4, dp=4, zero=1, sp=True, mbs=1, grad_accum=192, recompute="none")),
        Target(dense, Layout(tp=4, pp=8, vp=5, dp=2, zero=1, sp=True, mbs=1, grad_accum=64, recompute="none")),
        Target(dense, Layout(tp=8, pp=1, dp=4, cp=2, zero=3, sp=True, mbs=1, grad_accum=32, recompute="full")),
        Target(dense, Layout(tp=2, pp=2, dp=16, zero=2, sp=False, mbs=2, grad_accum=4, recompute="selective")),
        Target(dense, Layout(tp=1, pp=1, dp=64, zero=3, shard=8, mbs=1, grad_accum=2, recompute="full")),
        Target(moe, Layout(tp=2, pp=2, dp=16, ep=8, zero=1, sp=True, mbs=1, grad_accum=4)),
        # per-module recomputation: dense (core_attn layernorm) and MoE (+ moe_act, grouped GEMM)
        Target(dense, Layout(tp=8, pp=2, dp=4, zero=1, sp=True, mbs=1, grad_accum=32, recompute="modules")),
        Target(moe, Layout(tp=1, pp=1, dp=64, ep=8, zero=1, mbs=1, grad_accum=1, recompute="modules")),
        Target(fp8, Layout(tp=2, pp=1, dp=8, zero=0, sp=True, mbs=2, grad_accum=8)),
        Target(fp8_megatron, Layout(tp=2, pp=1, dp=8, zero=1, sp=True, mbs=2, grad_accum=8)),
        # splits Megatron's flags cannot build, written as --pipeline-model-parallel-layout:
        # 10 layers a rank over 3 chunks, and 80 layers over 6 stages of 2 chunks
        Target(dense, Layout(tp=8, pp=8, vp=3, dp=1, zero=1, sp=True, mbs=1, grad_accum=16, recompute="none")),
        Target(odd, Layout(tp=8, pp=6, vp=2, dp=1, zero=1, sp=True, mbs=1, grad_accum=18, recompute="none")),
        Target(trainer, Layout(dp=16, zero=3, mbs=1, grad_accum=8, recompute="full")),
        Target(trainer_moe, Layout(dp=64, ep=8, zero=3, mbs=1, grad_accum=2, recompute="full")),
        Target(deepspeed_moe, Layout(dp=16, ep=8, zero=0, mbs=1, grad_accum=4, recompute="full")),
        Target(native_moe, Layout(dp=16, ep=8, zero=2, mbs=1, grad_accum=4, recompute="full")),
        Target(trainer_long, Layout(dp=4, cp=4, zero=3, mbs=1, grad_accum=8, recompute="full")),
        # per-module recompute under the graph: Megatron refuses it with dropout, which the export turns off
        Target(graphed_moe, Layout(tp=1, pp=2, vp=2, dp=32, ep=8, zero=1, mbs=1, grad_accum=32, recompute="modules")),
        Target(mla, Layout(tp=2, pp=1, dp=8, ep=8, zero=1, sp=True, mbs=1, grad_accum=8, recompute="modules")),
        Target(eager, Layout(dp=8, zero=1, mbs=1, grad_accum=4, recompute="full")),
    ]


def test_eager_attention_is_exported_or_said():
    """The estimate sized eager attention's score matrices: Megatron's launch asks for its unfused
    backend; every other export says where eager attention has to be set, or that it cannot be."""
    tg = layouts()[-1]
    assert tg.job.training.attention == "eager"
    out = export_all(tg)
    assert "--attention-backend unfused" in out["megatron"]["files"]["megatron_pretrain.sh"]
    for fw in ("deepspeed", "fsdp", "accelerate"):
        assert any('attn_implementation="eager"' in c for c in out[fw]["caveats"]), fw
    for fw in ("torchtitan", "nanotron"):
        assert any(c.startswith("eager attention:") for c in out[fw]["caveats"]), fw
    flash2 = export("megatron", Target(build_job(model="llama-3-8b", gpus=8, attention="flash2"), tg.layout))
    assert "--attention-backend flash" in flash2.files["megatron_pretrain.sh"]
    flash = export_all(Target(build_job(model="llama-3-8b", gpus=8, training="finetune", framework="hf"), tg.layout))
    assert "--attention-backend" not in flash["megatron"]["files"]["megatron_pretrain.sh"]
    assert not any("eager" in c for fw in flash.values() for c in fw["caveats"])


def test_a_script_is_told_to_ask_for_the_windowed_kernel_the_estimate_sized():
    """Gemma 3 12B under the Trainer at 8K with --attention flash: the estimate sized flash-attn's
    windowed kernel on its sliding layers, which the user's from_pretrained must ask for --
    transformers' default, sdpa, masks the windows densely. The script-configuring exports say so;
    not below the window, not where the estimate sized sdpa, not for the frameworks that run their
    own kernel."""
    lay = Layout(dp=16, zero=3, mbs=1, recompute="full")

    def said(**kw):
        out = export_all(Target(build_job(model="gemma-3-12b", gpus=16, training="finetune", framework="hf", **kw),
                                lay))
        return {fw: [c for c in r.get("caveats", []) if "sliding windows sized for a flash-attn kernel" in c]
                for fw, r in out.items()}
    at8k = said(seq_len=8192)
    assert all(at8k[fw] and 'attn_implementation="flash_attention_3"' in at8k[fw][0]
               for fw in ("deepspeed", "fsdp", "accelerate")), at8k
    assert not at8k["megatron"] and not at8k["torchtitan"] and not at8k["nanotron"]
    assert not any(said(seq_len=512).values()) and not any(said(seq_len=8192, attention="sdpa").values())


def test_the_allocator_the_estimate_assumed_is_launched_or_said():
    """--allocator expandable: the Megatron and DeepSpeed launch scripts export expandable segments
    (appended to what the environment sets), the files of the user's own launch say to set it, and
    torchtitan's run_train.sh sets it itself; where the estimate assumed the caching allocator no
    launch sets it, and torchtitan's says that its launch sets it anyway."""
    lay = Layout(dp=8, zero=1, mbs=1)
    env = [f"export {v}=${{{v}:+${v},}}expandable_segments:True" for v in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")]
    grown = export_all(Target(build_job(model="llama-3-8b", gpus=8, allocator="expandable"), lay))
    assert all(e in grown["megatron"]["files"]["megatron_pretrain.sh"].splitlines() for e in env)
    assert all(e in grown["deepspeed"]["files"]["launch.sh"].splitlines() for e in env)
    for fw in ("fsdp", "accelerate", "nanotron"):
        assert any("expandable_segments:True in PYTORCH_CUDA_ALLOC_CONF, and in PYTORCH_ALLOC_CONF" in c
                   for c in grown[fw]["caveats"]), fw
    assert not any("expandable" in c for c in grown["torchtitan"]["caveats"])
    cached = export_all(Target(build_job(model="llama-3-8b", gpus=8, framework="fsdp", allocator="caching"), lay))
    assert any(c.startswith("run_train.sh launches with PYTORCH_ALLOC_CONF=expandable_segments:True")
               for c in cached["torchtitan"]["caveats"])
    for fw in ("megatron", "deepspeed", "fsdp", "accelerate", "nanotron"):
        assert not any("expandable_segments" in text for text in cached[fw].get("files", {}).values()), fw


def test_a_graphed_megatron_launch_keeps_its_capture_option_beside_expandable_segments():
    """PyTorch reads one allocator variable, not both: torch 2.14 PYTORCH_ALLOC_CONF where it is set
    (c10/core/AllocatorConfig.h), older CUDAAllocatorConfig PYTORCH_CUDA_ALLOC_CONF. With
    --allocator expandable the script sets both, so the full-iteration graph's
    graph_capture_record_stream_reuse:True, written into PYTORCH_CUDA_ALLOC_CONF alone, was lost
    under torch 2.14: each variable must end up with every option the launch asks for."""
    job = build_job(model="llama-3-8b", gpus=8, cuda_graphs="full-iteration", allocator="expandable")
    text = export("megatron", Target(job, Layout(dp=8, zero=1, mbs=1, grad_accum=8))).files["megatron_pretrain.sh"]
    env = {}
    for line in text.splitlines():
        for v in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
            prefix = f"export {v}=${{{v}:+${v},}}"
            if line.startswith(prefix):
                env.setdefault(v, []).append(line[len(prefix):])
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == env["PYTORCH_ALLOC_CONF"]
    assert {"expandable_segments:True", "graph_capture_record_stream_reuse:True"} <= set(env["PYTORCH_ALLOC_CONF"])


@pytest.mark.parametrize("tg", layouts(), ids=lambda t: t.layout.describe().replace(" ", ","))
def test_every_export_carries_the_layout(tg):
    lay = tg.layout
    out = export_all(tg)
    # DeepSpeed: the batch identity over DP ranks only, and its refusals
    ds = json.loads(out["deepspeed"]["files"]["ds_config.json"])
    # a pipeline with ZeRO-2/3 (a layout chosen for another framework) is written as ZeRO-1, which
    # DeepSpeed's pipeline engine runs, with a caveat
    assert ds_check(ds, lay.dp) == []
    if lay.pp > 1 and lay.zero >= 2:
        assert ds["zero_optimization"]["stage"] == 1
        assert "pipeline engine runs ZeRO-0/1 only" in out["deepspeed"]["files"]["launch.sh"]
    else:
        assert ds["zero_optimization"]["stage"] == lay.zero
    assert ds["train_micro_batch_size_per_gpu"] == lay.mbs and ds["gradient_accumulation_steps"] == lay.grad_accum
    assert ds.get("sequence_parallel_size", 1) == lay.cp
    # expert parallelism in the JSON exactly where DeepSpeed AutoEP has the model and runs the layout
    autoep = ds.get("expert_parallel")
    assert (autoep is not None) == (lay.ep > 1 and lay.tp == 1 and tg.job.model.family in ("mixtral", "qwen3_moe"))
    assert autoep is None or (autoep["enabled"] and autoep["autoep_size"] == lay.ep)
    # Megatron: every degree as a flag; DP implied by the world size
    args = script_args(out["megatron"]["files"]["megatron_pretrain.sh"])
    flag = lambda f: args[args.index(f) + 1] if f in args else None
    assert int(flag("--tensor-model-parallel-size")) == lay.tp and int(flag("--pipeline-model-parallel-size")) == lay.pp
    assert int(flag("--context-parallel-size")) == lay.cp and int(flag("--expert-model-parallel-size")) == lay.ep
    assert int(flag("--global-batch-size")) % (int(flag("--micro-batch-size")) * lay.dp) == 0
    # a token budget sets the step count: the fewest steps that train it
    budget = tg.job.training.token_budget
    if budget:
        steps, per_step = int(flag("--train-iters")), int(flag("--global-batch-size")) * tg.job.training.seq_len
        assert steps * per_step >= budget > (steps - 1) * per_step
        # DeepSpeed's launch line trains as many: the Trainer's --max_steps, Megatron-DeepSpeed's --train-iters
        launch = out["deepspeed"]["files"]["launch.sh"].split()
        key = "--max_steps" if tg.job.training.framework == "hf" else "--train-iters"
        assert int(launch[launch.index(key) + 1]) == steps
    custom = flag("--pipeline-model-parallel-layout")
    vp = len(custom.split("|")) // lay.pp if custom else int(flag("--num-virtual-stages-per-pipeline-rank") or 1)
    assert vp == lay.vp
    assert ("--sequence-parallel" in args) == lay.sp
    assert ("--use-distributed-optimizer" in args) == (lay.zero == 1)
    if lay.recompute == "modules":
        from shardwise.export import recompute_modules
        assert flag("--recompute-granularity") == "selective"
        listed = args[args.index("--recompute-modules") + 1:]
        assert tuple(listed[:len(recompute_modules(tg.job.model))]) == recompute_modules(tg.job.model)
        assert ("moe_act" in listed) == ("--moe-grouped-gemm" in args) == tg.job.model.is_moe
        assert ("mla_up_proj" in listed) == ("--multi-latent-attention" in args) == tg.job.model.is_mla
    else:
        assert (flag("--recompute-granularity") or "none") == lay.recompute
    # torchtitan: the degrees multiply to the world, batch arithmetic holds
    tt = out["torchtitan"]["files"]["torchtitan_train.sh"]
    val = lambda k: int(re.search(rf"--parallelism\.{k} (\d+)", tt).group(1))
    world = val("data_parallel_replicate_degree") * val("data_parallel_shard_degree") * val("context_parallel_degree") \
        * val("tensor_parallel_degree") * val("pipeline_parallel_degree")
    assert world == lay.world
    local = int(re.search(r"--training\.local_batch_size (\d+)", tt).group(1))
    assert lay.global_batch % (local * lay.dp) == 0
    # per-module recomputation goes to torchtitan as selective, the nearest (export.export says so)
    assert f"activation-checkpoint:{lay.recompute.replace('modules', 'selective')}" in tt
    # FSDP2: the mesh covers every GPU
    fs = out["fsdp"]["files"]["fsdp2_sharding.py"]
    shape = ast.literal_eval(re.search(r"MESH_SHAPE = (\(.*\))", fs).group(1))
    assert shape[0] * shape[1] * shape[2] * shape[3] * shape[4] == lay.world
    # ... and FSDP2 shards over the ranks the estimate shards over (CP ranks included)
    fsdp_shape = ast.literal_eval(re.search(r"FSDP_MESH_SHAPE = (\(.*\))", fs).group(1))
    assert fsdp_shape[2] == (lay.shard_group if lay.zero >= 1 else 1) and fsdp_shape[1] * fsdp_shape[2] == lay.dp * lay.cp
    assert f'ACTIVATION_CHECKPOINTING = "{lay.recompute.replace("modules", "selective")}"' in fs
    # Accelerate: a job whose ZeRO is DeepSpeed's launches DeepSpeed with the same JSON; otherwise
    # FSDP2, whose parallelism sizes multiply to num_processes (the PP = 1 slice)
    acc = yaml.safe_load(out["accelerate"]["files"]["accelerate_config.yaml"])
    if acc["distributed_type"] == "DEEPSPEED":
        assert tg.job.training.framework in ("hf", "deepspeed") and acc["num_processes"] == lay.dp
        assert lay.zero >= 1 or "expert_parallel" in ds
        assert out["accelerate"]["files"]["ds_config.json"] == out["deepspeed"]["files"]["ds_config.json"]
        assert acc["deepspeed_config"]["zero3_init_flag"] is (lay.zero == 3) and "mixed_precision" not in acc
    elif acc["distributed_type"] in ("MULTI_GPU", "NO"):
        # the Trainer's own DDP at ZeRO-0, as the estimate sized it
        assert tg.job.training.framework == "hf" and lay.zero == 0 and acc["num_processes"] == lay.dp == lay.world
    else:
        _check_fsdp_accelerate(acc, lay)
    if tg.job.training.framework == "hf":
        launch = out["deepspeed"]["files"]["launch.sh"]
        assert f"--per_device_train_batch_size {lay.mbs} --gradient_accumulation_steps {lay.grad_accum}" in launch
        assert ("--gradient_checkpointing" in launch) == (lay.recompute == "full")
    # Nanotron (dense only): batch per replica, no interleaving, ZeRO-1 at most
    if "refused" not in out["nanotron"]:
        nt = yaml.safe_load(out["nanotron"]["files"]["nanotron.yaml"])
        p, tok = nt["parallelism"], nt["tokens"]
        assert (p["tp"], p["pp"], p["dp"], p["context_parallel_size"]) == (lay.tp, lay.pp, lay.dp, lay.cp)
        assert tok["micro_batch_size"] * tok["batch_accumulation_per_replica"] * p["dp"] == lay.global_batch
        assert nt["optimizer"]["zero_stage"] == min(lay.zero, 1) and p["recompute_layer"] == (lay.recompute == "full")
    else:
        assert ((tg.job.model.is_moe and "experts" in out["nanotron"]["refused"])
                or (tg.job.model.kv_heads % lay.tp and "key/value heads" in out["nanotron"]["refused"])
                or (lay.cp > 1 and "context parallel" in out["nanotron"]["refused"]))


def _check_fsdp_accelerate(acc, lay):
    pc = acc["parallelism_config"]
    assert (pc["parallelism_config_dp_replicate_size"] * pc["parallelism_config_dp_shard_size"]
            * pc["parallelism_config_tp_size"] * pc["parallelism_config_cp_size"]) == acc["num_processes"]
    assert acc["num_processes"] == lay.world // lay.pp
    assert acc["fsdp_config"]["fsdp_reshard_after_forward"] is (lay.zero == 3)


def _layout_counts(text: str, pp: int) -> list[list[str]]:
    """Megatron's layout string, unrolled: per rank, its chunks' layer strings."""
    stages = [re.sub(r"t\*(\d+)", lambda g: "t" * int(g.group(1)), s) for s in text.split("|")]
    return [stages[r::pp] for r in range(pp)]


@pytest.mark.parametrize("model,gpus,pp,vp", [("llama-3-70b", 64, 8, 3), ("llama-3-70b", 48, 6, 2),
                                              ("llama-3-70b", 48, 6, 1), ("llama-3.1-405b", 72, 9, 4),
                                              ("llama-3.1-405b", 128, 16, 3)])
def test_megatron_builds_the_split_the_estimate_assumes(model, gpus, pp, vp):
    """Where Megatron's flags cannot build the split (vp not dividing a rank's layers, or pp not
    dividing them at all), the export names every virtual stage, with each rank's layer count
    the estimate's (kb/stages.layers_on_stage) and its chunks within one layer of each other."""
    from shardwise.kb.stages import layers_on_stage, pipeline_slots
    job = build_job(model=model, gpus=gpus, seq_len=4096)
    tp = gpus // pp
    lay = Layout(tp=tp, pp=pp, vp=vp, dp=1, zero=1, sp=True, mbs=1, grad_accum=2 * pp, recompute="none")
    check_layout(job, lay)
    args = script_args(export("megatron", Target(job, lay)).files["megatron_pretrain.sh"])
    assert "--num-virtual-stages-per-pipeline-rank" not in args and "--decoder-first-pipeline-num-layers" not in args
    ranks = _layout_counts(args[args.index("--pipeline-model-parallel-layout") + 1], pp)
    flat = "".join("".join(ranks[r][j] for r in range(pp)) for j in range(vp))
    assert flat[0] == "E" and flat[-1] == "L" and flat.count("t") == job.model.layers
    for r, chunks in enumerate(ranks):
        assert len(chunks) == vp and sum(c.count("t") for c in chunks) == sum(layers_on_stage(job.model, pp, r))
        # the embedding and the loss take a layer's place only where the estimate's split counts them
        counted = "tEL" if pipeline_slots(job.model, pp) == (1, 1) else "t"
        sizes = [sum(c.count(x) for x in counted) for c in chunks]
        assert max(sizes) - min(sizes) <= 1


def test_megatron_keeps_its_flags_where_they_build_the_split():
    tg = layouts()[0]          # 405B: 126 + embedding + loss = 8 a rank over pp 16, vp 4 divides it
    args = script_args(export("megatron", tg).files["megatron_pretrain.sh"])
    assert "--pipeline-model-parallel-layout" not in args and "--account-for-loss-in-pipeline-split" in args
    assert args[args.index("--num-virtual-stages-per-pipeline-rank") + 1] == "4"


def test_what_a_framework_cannot_express_is_said_in_the_file():
    out = export_all(layouts()[0])          # vp 5, ZeRO-1, PP 8
    assert any("interleaved" in c for c in out["nanotron"]["caveats"])
    assert any("pipeline parallelism" in c for c in out["accelerate"]["caveats"])
    assert any("ZeRO-1" in c for c in out["torchtitan"]["caveats"])
    # every layout, per-module recompute and CUDA graphs carried to the others included
    for tg in layouts():
        for fw, ex in export_all(tg).items():
            for c in ex["caveats"]:
                assert any(c in text for text in ex["files"].values()), (fw, tg.layout.describe(), c)


@pytest.mark.parametrize("scenario", sorted(SEEDS))
@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_golden_exports_of_the_seed_scenarios(scenario, framework):
    if framework == "nanotron" and seed_target(scenario).layout.cp > 1:
        # Nanotron's Llama has no context parallelism (test_export_refuses_cp_for_nanotron...)
        with pytest.raises(InputError, match="context parallel"):
            export(framework, seed_target(scenario))
        return
    ex = export(framework, seed_target(scenario))
    folder = GOLDEN / scenario
    for name, text in ex.files.items():
        path = folder / name
        if os.environ.get("SHARDWISE_UPDATE_GOLDEN"):
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert path.exists(), f"missing golden {path}; run with SHARDWISE_UPDATE_GOLDEN=1"
        assert text == path.read_text(), f"{framework} export of {scenario} changed: diff against {path}"


def test_export_command_writes_files_and_notes(run_cli, tmp_path):
    code, out, err = run_cli("export", "--model", "llama-3-70b", "--gpus", "64", "--seq-len", "8192",
                             "--layout", "tp=4,pp=8,vp=5,dp=2,zero=1,sp=true,mbs=1", "--global-batch", "128",
                             "--to", "nanotron", "-o", str(tmp_path))
    assert code == 0, err
    assert (tmp_path / "nanotron.yaml").exists() and "cannot express" in out and "interleaved" in out


def test_an_hsdp_group_that_splits_cp_groups_is_said_to_shard_wider():
    job = build_job(model="llama-3-70b", gpus=64, seq_len=8192)
    tg = Target(job, Layout(tp=8, pp=1, dp=2, cp=4, zero=3, shard=2, sp=True, mbs=1, grad_accum=64, recompute="full"))
    check_layout(job, tg.layout)
    for framework in ("fsdp", "accelerate", "torchtitan"):
        assert any("does not hold whole CP groups" in c for c in export(framework, tg).caveats)


def test_export_to_all_writes_a_folder_per_framework_and_says_which_refused(run_cli, tmp_path):
    code, out, err = run_cli("export", "--model", "mixtral-8x7b", "--gpus", "16", "--layout",
                             "tp=1,pp=1,ep=8,zero=1,mbs=1", "--to", "all", "-o", str(tmp_path))
    assert code == 0, err
    written = sorted(p.parent.name for p in tmp_path.glob("*/*"))
    assert set(written) == {"deepspeed", "megatron", "torchtitan", "fsdp", "accelerate"}
    assert "nanotron: not written" in out and "experts" in out
    code, out, err = run_cli("export", "--model", "llama-3-8b", "--gpus", "8", "--to", "all")
    assert code == 2 and "-o DIR" in err


def test_export_refuses_moe_for_nanotron_in_one_line(run_cli):
    code, out, err = run_cli("export", "--model", "mixtral-8x7b", "--gpus", "16", "--to", "nanotron")
    assert code == 2 and "experts" in err and len(err.strip().splitlines()) == 1


def test_export_refuses_a_tp_that_splits_kv_heads_for_nanotron_in_one_line(run_cli):
    """Nanotron's Config asserts num_key_value_heads >= tp at load and its Llama attention
    num_key_value_heads % tp == 0 (nanotron main config/config.py, models/llama.py): Llama 3.1
    405B's 8 KV heads at TP 16 got a nanotron.yaml that fails to load; TP 8 is written."""
    base = ("export", "--model", "llama-3.1-405b", "--gpus", "256", "--to", "nanotron")
    code, out, err = run_cli(*base, "--layout", "tp=16,pp=8,dp=2,mbs=1,zero=1")
    assert code == 2 and "key/value heads" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli(*base, "--layout", "tp=8,pp=16,dp=2,mbs=1,zero=1")
    assert code == 0, err


def test_export_refuses_cp_for_nanotron_in_one_line(run_cli):
    """Nanotron main's Llama has no context parallelism (only its Qwen2 model takes the CP group,
    for ring attention), and its trainer raises NotImplementedError("Init with Context parallel
    size > 1 not supported yet") for the random init the export writes (trainer.py
    _load_model_checkpoint): a cp=4 nanotron.yaml could not start."""
    code, out, err = run_cli("export", "--model", "llama-2-7b", "--gpus", "64", "--seq-len", "128k", "--to", "nanotron",
                             "--layout", "tp=8,pp=1,dp=2,cp=4,zero=1,mbs=1")
    assert code == 2 and "context parallel" in err and len(err.strip().splitlines()) == 1


def test_an_rlhf_export_says_it_configures_the_policys_training_alone():
    """An RLHF job's DeepSpeed, FSDP2 and Accelerate files read as a plain Trainer run: nothing
    said that they configure the policy's training only, while the estimate held the value,
    reference and reward models beside it and rollout generation is the RLHF script's. Each now
    says so, in the file and among the caveats, and none claims to run PPO."""
    job = build_job(model="llama-3-8b", gpus=8, training="rlhf")
    out = export_all(Target(job, Layout(dp=8, zero=3, mbs=1, grad_accum=16)))
    for fw in ("deepspeed", "fsdp", "accelerate"):
        said = [c for c in out[fw]["caveats"] if c.startswith("RLHF: this file configures the policy's training alone")]
        assert len(said) == 1 and "value, reference and reward models" in said[0], fw
        assert any(said[0] in text for text in out[fw]["files"].values()), fw


def test_a_dpo_export_counts_its_batch_in_preference_pairs():
    """TRL's DPOTrainer counts per_device_train_batch_size in pairs, two sequences each; the layout
    counts sequences. Written as sequences, the Trainer would run twice the micro-batch the
    estimate sized. The DeepSpeed config and launch line, the Accelerate note and the FSDP2
    module give pairs, and say so."""
    job = build_job(model="llama-3-8b", gpus=8, training="rlhf", rl_algorithm="dpo")
    out = export_all(Target(job, Layout(dp=8, zero=3, mbs=4, grad_accum=4)))
    ds = out["deepspeed"]["files"]
    cfg = json.loads(ds["ds_config.json"])
    assert (cfg["train_micro_batch_size_per_gpu"], cfg["train_batch_size"]) == (2, 64) and not ds_check(cfg, 8)
    assert "--per_device_train_batch_size 2 " in ds["launch.sh"]
    assert "micro-batch 2, gradient accumulation 4 (global batch 64)" in out["accelerate"]["files"]["accelerate_config.yaml"]
    assert "MICRO_BATCH = 2\n" in out["fsdp"]["files"]["fsdp2_sharding.py"]
    for fw in ("deepspeed", "fsdp", "accelerate"):
        assert any("count preference pairs" in c for c in out[fw]["caveats"]), fw


def test_an_export_says_what_the_training_type_needs_beyond_the_parallelism():
    """Exports carried only the layout: a QLoRA job went to Megatron as a from-scratch pretraining
    script of every weight, which the layout (sized for frozen weights) cannot hold. An adapter
    job is refused by the exports that train every weight (Megatron-LM, torchtitan, Nanotron) and
    told to the others as its PEFT script's; a fine-tune to Megatron is told to load its
    checkpoint; the Trainer's DeepSpeed path, which has no TP, refuses a TP layout."""
    for training in ("lora", "qlora"):
        job = build_job(model="llama-3-8b", gpus=8, training=training)
        out = export_all(Target(job, Layout(dp=8, zero=1, mbs=1, grad_accum=16)))
        for fw in ("megatron", "torchtitan", "nanotron"):
            assert out[fw]["refused"].startswith(f"export --to {fw}: its launch trains every weight"), fw
            assert f"allowed for --training {training}: deepspeed, fsdp, accelerate" in out[fw]["refused"]
        for fw in ("deepspeed", "fsdp", "accelerate"):
            said = [c for c in out[fw]["caveats"] if "your PEFT script's (peft.LoraConfig(r=16))" in c]
            assert said and any(said[0] in text for text in out[fw]["files"].values()), fw
            assert ("bnb_4bit_quant_storage=torch.bfloat16" in said[0]) == (training == "qlora")
    dropout = export_all(Target(build_job(model="llama-3-8b", gpus=8, training="lora", lora_dropout=0.05),
                                Layout(dp=8, zero=1, mbs=1, grad_accum=16)))
    assert any("peft.LoraConfig(r=16, lora_dropout=0.05)" in c for c in dropout["deepspeed"]["caveats"])
    exact = export_all(Target(build_job(model="llama-3-8b", gpus=8, training="lora", lora_dropout=0.123456789),
                              Layout(dp=8, zero=1, mbs=1, grad_accum=16)))
    assert any("lora_dropout=0.123456789)" in c for c in exact["deepspeed"]["caveats"])   # as given, not rounded
    tune = export_all(Target(build_job(model="llama-3-8b", gpus=8, training="finetune"),
                             Layout(dp=8, zero=1, mbs=1, grad_accum=16)))
    args = script_args(tune["megatron"]["files"]["megatron_pretrain.sh"])
    assert "--finetune" in args and "--load" in args
    assert not any("random weights" in c for c in tune["megatron"]["caveats"])
    for fw in ("torchtitan", "nanotron"):
        assert any(c.startswith("the run starts from random weights") for c in tune[fw]["caveats"]), fw
    lora_tp = Target(build_job(model="llama-3-70b", gpus=16, training="lora"),
                     Layout(tp=2, dp=8, zero=3, mbs=1, grad_accum=16))
    assert "not as DeepSpeed's AutoTP" in export_all(lora_tp)["deepspeed"]["refused"]


def test_an_adapter_layout_with_a_pipeline_is_not_written_as_a_deepspeed_pipeline(run_cli, tmp_path):
    """A LoRA / QLoRA job planned under --framework fsdp may split its PEFT model into pipeline
    stages (torch.distributed.pipelining); its DeepSpeed export wrote a `pipeline` section and
    --pipeline-model-parallel-size for a transformers model, which DeepSpeed's pipeline engine
    does not take (it needs a PipelineModule: the adapters-pipeline rule the search itself keeps).
    The export now refuses it, naming the exports that run that layout."""
    from conftest import refused
    job = ["--model", "llama-3-8b", "--gpus", "8", "--framework", "fsdp"]
    for training in ("lora", "qlora"):
        err = refused(run_cli, "export", *job, "--training", training, "--layout", "pp=2,dp=4,zero=2,mbs=1",
                      "--to", "deepspeed")
        assert "pp=2" in err and "PipelineModule" in err and "--to fsdp" in err, err
        code, out, err = run_cli("export", *job, "--training", training, "--layout", "pp=2,dp=4,zero=2,mbs=1",
                                 "--to", "all", "-o", str(tmp_path / training))
        assert code == 0, err
        assert "note: deepspeed: not written: " in out and not (tmp_path / training / "deepspeed").exists()
        assert (tmp_path / training / "fsdp" / "fsdp2_sharding.py").exists()
    # without adapters the model is the user's own PipelineModule, as before
    code, out, err = run_cli("export", *job, "--training", "finetune", "--layout", "pp=2,dp=4,zero=2,mbs=1",
                             "--to", "deepspeed")
    assert code == 0 and '"pipeline"' in out, err
    # and an adapter job at pp=1 still gets its DeepSpeed file
    code, out, err = run_cli("export", *job, "--training", "lora", "--layout", "dp=8,zero=2,mbs=1", "--to", "deepspeed")
    assert code == 0 and '"pipeline"' not in out, err


def test_recommend_json_carries_the_exports(run_cli):
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--format", "json")
    assert code == 0, err
    ex = json.loads(out)["exports"]
    assert set(ex) == set(FRAMEWORKS) and all(e["files"] for e in ex.values())


def test_a_mapping_that_needs_more_memory_says_whether_it_still_fits():
    """Where a framework runs more state than planned (Nanotron's ZeRO-1 for a ZeRO-3 plan,
    Accelerate's PP=1 slice of a pipeline), the caveat gives the estimate of what it runs."""
    from shardwise.kb.memory.estimate import estimate_memory
    job = build_job(model="llama-3-70b", gpus=64, seq_len=8192)
    for tp, dp, fits in ((8, 8, True), (1, 64, False)):     # 70B's weights and gradients unsharded at TP 1
        tg = Target(job, Layout(tp=tp, pp=1, dp=dp, zero=3, sp=tp > 1, mbs=1, grad_accum=16, recompute="full"))
        caveat = next(c for c in export("nanotron", tg).caveats if c.startswith("zero=3"))
        ran = estimate_memory(job, tg.layout.with_(zero=1))
        assert ran.fits is fits and f"estimated {ran.peak_gib:.1f} of {ran.capacity_gib:.1f} GiB" in caveat
        assert caveat.endswith("fits)" if fits else "does not fit)")
    tg = Target(job, Layout(tp=8, pp=4, dp=2, zero=1, sp=True, mbs=1, grad_accum=64, recompute="full"))
    caveat = next(c for c in export("accelerate", tg).caveats if c.startswith("pp=4"))
    assert "does not fit" in caveat


def test_megatron_precision_flags_are_the_recipe_the_estimate_sized():
    """The Megatron script keeps its gradient buffer in bf16 (--grad-reduce-in-bf16: plain --bf16
    would keep and reduce it in fp32, 2 bytes a parameter more than the estimate) and, in FP8,
    its weights in FP8 (--fp8-param-gather) where the distributed optimizer allows it; at ZeRO-0
    it cannot, and the estimate counts Transformer Engine's FP8 weight cache instead."""
    from shardwise.kb.memory import estimate_memory
    for zero in (0, 1):
        job = build_job(model="llama-3-8b", gpus=16, precision="fp8")
        lay = Layout(tp=2, pp=1, dp=8, zero=zero, sp=True, mbs=2, grad_accum=8)
        script = export("megatron", Target(job, lay)).files["megatron_pretrain.sh"]
        cache = estimate_memory(job, lay).breakdown_gib["fp8_weight_cache"]
        assert "--grad-reduce-in-bf16" in script
        assert ("--fp8-param-gather" in script) == (zero == 1) == (cache == 0), (zero, cache)


def test_megatron_overlaps_tp_communication_where_the_estimate_hides_it():
    """The estimate takes half the SP all-gather / reduce-scatter as hidden by Transformer
    Engine's userbuffers inside one NVLink domain and none across it (kb/perf/step.py); the
    script asks for that overlap (--tp-comm-overlap) exactly there."""
    job = build_job(model="llama-3-70b", gpus=32, seq_len=4096, global_batch=64)

    def script(tp, pp):
        dp = 32 // (tp * pp)
        lay = Layout(tp=tp, pp=pp, dp=dp, zero=1, sp=tp > 1, mbs=1, grad_accum=64 // dp)
        return export("megatron", Target(job, lay)).files["megatron_pretrain.sh"]
    assert "--tp-comm-overlap" in script(8, 4)
    assert "--tp-comm-overlap" not in script(16, 2)
    assert "--tp-comm-overlap" not in script(1, 4)


def test_megatron_asks_no_tp_overlap_where_the_tp_group_talks_over_pcie():
    """Transformer Engine's comm+GEMM overlap needs the TP group on one node "connected over
    NVLink/NVSwitch" (TransformerEngine examples/pytorch/comm_gemm_overlap/README.md,
    Requirements). An L40S box has PCIe only: TP=2 with SP there must not ask for
    --tp-comm-overlap; an H100 NVL pair (its NVLink bridge) and an NVLink node still do."""
    def script(gpu):
        job = build_job(model="llama-3-8b", gpus=8, gpu=gpu, seq_len=4096, global_batch=64)
        lay = Layout(tp=2, pp=1, dp=4, zero=1, sp=True, mbs=1, grad_accum=16)
        return export("megatron", Target(job, lay)).files["megatron_pretrain.sh"]
    assert "--tp-comm-overlap" not in script("l40s")
    assert "--tp-comm-overlap" in script("h100-nvl")
    assert "--tp-comm-overlap" in script("h100-sxm")


def test_megatron_says_what_tp_overlap_needs_on_an_amd_gpu():
    """--tp-comm-overlap is Transformer Engine's userbuffers, written for NVLink; ROCm's Transformer
    Engine gained a port only in 2026 (ROCm/TransformerEngine#367, P2P ring-exchange overlaps only),
    so an MI300X script that asks for it without a word fails in an older ROCm container. The flag
    stays where the estimate hides TP time, and the script says what it needs; an H100's does not."""
    def script(gpu):
        job = build_job(model="llama-3-70b", gpus=8, gpu=gpu, seq_len=4096, global_batch=64)
        lay = Layout(tp=8, pp=1, dp=1, zero=0, sp=True, mbs=1, grad_accum=64)
        return export("megatron", Target(job, lay)).files["megatron_pretrain.sh"]
    amd, nvidia = script("mi300x"), script("h100-sxm")
    assert "--tp-comm-overlap" in amd and "--tp-comm-overlap" in nvidia
    said = [line for line in amd.splitlines() if line.startswith("#") and "--tp-comm-overlap" in line]
    assert len(said) == 1 and "ROCm" in said[0] and "TransformerEngine#367" in said[0], said
    assert not any(line.startswith("#") and "ROCm" in line for line in nvidia.splitlines())


def test_megatron_asks_no_tp_overlap_for_a_tp_group_split_over_two_racks():
    """On 136 GB200 the job takes two racks of 68 (kb/schema.ClusterSpec.domain_block): a TP 8
    group at ranks 64-71 has half its members in each, so TE's userbuffers (one NVLink domain)
    cannot run it -- no --tp-comm-overlap, and the step hides none of that TP time; on 144 GB200
    (racks of 72, which TP 8 tiles) the overlap stays."""
    from shardwise.kb.perf.step import step_time

    def run(gpus):
        job = build_job(model="llama-3-70b", gpus=gpus, gpu="gb200", seq_len=4096, global_batch=gpus // 8 * 16)
        lay = Layout(tp=8, pp=1, dp=gpus // 8, zero=1, sp=True, mbs=1, grad_accum=16)
        return export("megatron", Target(job, lay)).files["megatron_pretrain.sh"], step_time(job, lay)
    split, whole = run(136), run(144)
    assert "--tp-comm-overlap" not in split[0] and "--tp-comm-overlap" in whole[0]
    assert split[1].comm_by_kind_s["tp"] > 2 * whole[1].comm_by_kind_s["tp"]


@pytest.mark.parametrize("pp,vp,ga,tp,recompute,overlap,connections", [
    (1, 1, 2, 1, "selective", True, "32"),       # PP 1 pairs micro-batches: overlap, many connections
    (1, 1, 1, 1, "selective", False, "1"),       # one micro-batch a step: nothing to pair with
    (2, 2, 4, 1, "none", True, "32"),            # interleaved PP
    (2, 1, 4, 1, "none", False, "1"),            # plain PP: Megatron refuses the overlap
    (1, 1, 2, 1, "full", False, "1"),            # full recompute: refused too
    (1, 1, 2, 2, "selective", True, "1"),        # TP needs one connection (Hopper): TP comes first
])
def test_megatron_moe_dispatch_and_overlap_flags(pp, vp, ga, tp, recompute, overlap, connections):
    """MoE tokens go by all-to-all (Megatron-LM defaults to allgather), the EP overlap flag is
    written exactly where Megatron-Core runs it and the estimate counts it, and the CUDA
    connection count follows what the layout needs."""
    job = build_job(model="mixtral-8x7b", gpus=16, seq_len=4096, global_batch=16 // (tp * pp) * ga)
    dp = 16 // (tp * pp)
    lay = Layout(tp=tp, pp=pp, vp=vp, dp=dp, ep=8 // tp, zero=1, sp=tp > 1, mbs=1, grad_accum=ga,
                 recompute=recompute)
    text = export("megatron", Target(job, lay)).files["megatron_pretrain.sh"]
    assert "--moe-token-dispatcher-type alltoall" in text
    assert ("--overlap-moe-expert-parallel-comm" in text) == overlap
    assert f"export CUDA_DEVICE_MAX_CONNECTIONS={connections}\n" in text


def test_megatron_fp8_uses_a_recipe_that_can_recompute_modules():
    """Megatron-Core refuses per-module recompute of norms and the experts' activation under
    delayed FP8 scaling; the export scales per tensor at the current step (FP8-CS, as NVIDIA's
    published runs), which allows it."""
    job = build_job(model="mixtral-8x7b", gpus=64, seq_len=4096, global_batch=256, precision="fp8")
    lay = Layout(dp=64, ep=8, zero=1, mbs=1, grad_accum=4, recompute="modules")
    text = export("megatron", Target(job, lay)).files["megatron_pretrain.sh"]
    assert "--fp8-recipe tensorwise" in text and "moe_act" in text and "delayed" not in text


def test_megatron_says_what_its_flags_need_without_calling_it_inexpressible():
    """A Transformer Engine version the flags need (FP8 with the norms and the experts' activation
    recomputed: TransformerConfig refuses it below TE 2.6; --tp-comm-overlap on ROCm) is something
    the script runs, not something Megatron cannot express: the export printed it as 'note:
    megatron cannot express: FP8 with the norms ... needs Transformer Engine >= 2.6', so a user
    took the launch for incomplete. It is said once, in the script, as what the run needs."""
    job = build_job(model="mixtral-8x7b", gpus=64, seq_len=4096, global_batch=256, precision="fp8")
    ex = export("megatron", Target(job, Layout(dp=64, ep=8, zero=1, mbs=1, grad_accum=4, recompute="modules")))
    text = ex.files["megatron_pretrain.sh"]
    assert not any("Transformer Engine" in c for c in ex.caveats), ex.caveats
    said = [line for line in text.splitlines() if "Transformer Engine >= 2.6" in line]
    assert len(said) == 1 and said[0].startswith("# needs: ") and "cannot express" not in said[0], said
    amd = build_job(model="llama-3-70b", gpus=8, gpu="mi300x", seq_len=4096, global_batch=64)
    ex = export("megatron", Target(amd, Layout(tp=8, pp=1, dp=1, zero=0, sp=True, mbs=1, grad_accum=64)))
    assert not any("ROCm" in c for c in ex.caveats), ex.caveats


def test_megatron_runs_full_iteration_cuda_graphs_as_the_estimate_times_them():
    """--cuda-graphs full-iteration: the script captures the step in one graph (without the NaN
    check validate_args refuses beside it), and for MoE pads each rank to the capacity and keeps
    the paged stash the estimate sized, on HybridEP with the op fuser they need; a dense model
    gets the graph alone, and a job without graphs none of it."""
    def script(model, graphs, lay):
        job = build_job(model=model, gpus=8, gpu="gb200", precision="fp8", seq_len=4096, global_batch=64,
                        cuda_graphs=graphs)
        return export("megatron", Target(job, lay)).files["megatron_pretrain.sh"]

    def args(model, graphs, lay):
        return script_args(script(model, graphs, lay))

    def value(a, flag):
        return a[a.index(flag) + 1]
    moe_lay = Layout(dp=8, ep=8, zero=1, mbs=1, grad_accum=8)
    a = args("qwen3-30b-a3b", "full-iteration", moe_lay)
    assert value(a, "--cuda-graph-impl") == "full_iteration" and "--no-check-for-nan-in-loss-and-grad" in a
    assert a[0] == "--num-layers"          # the launch line's arguments only, whatever the comments name
    assert value(a, "--moe-token-dispatcher-type") == "flex" and value(a, "--moe-flex-dispatcher-backend") == "hybridep"
    assert float(value(a, "--moe-expert-rank-capacity-factor")) == RANK_CAPACITY_FACTOR
    assert float(value(a, "--moe-paged-stash-buffer-size-factor-cuda")) == PAGED_STASH_FACTOR
    assert "--moe-paged-stash" in a and "--use-transformer-engine-op-fuser" in a
    # MXFP8, the recipe the fused grouped MLP runs, where an ungraphed FP8 job gets per-tensor scaling
    assert value(a, "--fp8-recipe") == "mxfp8" and "--reuse-grad-buf-for-mxfp8-param-ag" in a
    assert value(args("qwen3-30b-a3b", "none", moe_lay), "--fp8-recipe") == "tensorwise"
    assert value(args("llama-3-8b", "full-iteration", Layout(dp=8, zero=1, mbs=1, grad_accum=8)),
                 "--fp8-recipe") == "tensorwise"
    # the fused grouped MLP the op fuser needs: GLU interleaved by 32 and its kernel switched on
    assert value(a, "--moe-mlp-glu-interleave-size") == "32"
    assert float(value(a, "--moe-paged-stash-buffer-size-factor-cpu")) == 1.0
    text = script("qwen3-30b-a3b", "full-iteration", moe_lay)
    assert "export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1\n" in text
    assert "graph_capture_record_stream_reuse:True\n" in text and "interleaved in blocks of 32" in text
    assert "cannot express" not in text
    dense = args("llama-3-8b", "full-iteration", Layout(dp=8, zero=1, mbs=1, grad_accum=8))
    assert value(dense, "--cuda-graph-impl") == "full_iteration" and "--moe-paged-stash" not in dense
    dense_text = script("llama-3-8b", "full-iteration", Layout(dp=8, zero=1, mbs=1, grad_accum=8))
    assert "PYTORCH_CUDA_ALLOC_CONF" in dense_text and "NVTE_CUTEDSL_FUSED_GROUPED_MLP" not in dense_text
    plain = args("qwen3-30b-a3b", "none", moe_lay)
    assert "--cuda-graph-impl" not in plain and value(plain, "--moe-token-dispatcher-type") == "alltoall"
    assert "PYTORCH_CUDA_ALLOC_CONF" not in script("qwen3-30b-a3b", "none", moe_lay)


def test_megatron_trains_without_dropout_as_the_memory_estimate_counts():
    """Megatron defaults to 0.1 attention and hidden dropout; the estimate keeps no dropout masks
    (and graphed recomputation refuses dropout), so every script turns both off."""
    a = script_args(export("megatron", seed_target("llama-3-70b-tp8-pp4")).files["megatron_pretrain.sh"])
    assert a[a.index("--attention-dropout") + 1] == "0.0" and a[a.index("--hidden-dropout") + 1] == "0.0"


def test_other_frameworks_say_they_run_without_megatrons_cuda_graphs():
    """A job timed on Megatron's full-iteration CUDA graph exported to a framework without one
    says so, and for MoE that the host time the estimate left out is back; without graphs, no such note."""
    lay = Layout(dp=8, ep=8, zero=1, mbs=1, grad_accum=8)
    for graphs in ("full-iteration", "none"):
        job = build_job(model="qwen3-30b-a3b", gpus=8, gpu="gb200", precision="fp8", seq_len=4096, global_batch=64,
                        cuda_graphs=graphs)
        for fw in ("deepspeed", "torchtitan", "fsdp", "accelerate"):
            notes = [c for c in export(fw, Target(job, lay)).caveats if "--cuda-graphs" in c]
            assert (notes != []) == (graphs == "full-iteration"), (fw, graphs)
            assert all("host-side time" in c for c in notes)
        assert not [c for c in export("megatron", Target(job, lay)).caveats if "--cuda-graphs" in c]


@pytest.mark.parametrize("model", ["deepseek-v3", "gpt-oss-120b"])
def test_flash2_is_not_forced_on_a_model_te_flash_attn_cannot_run(model):
    """Transformer Engine's flash-attn backend has no MLA and no attention sinks; with
    --attention-backend flash the other backends are off and Megatron fails to start, so the
    export leaves Megatron its default and says why."""
    job = build_job(model=model, gpus=64, gpu="h100-sxm", attention="flash2")
    ex = export("megatron", Target(job, Layout(tp=1, pp=1, dp=64, ep=8, zero=1, mbs=1, grad_accum=4, recompute="full")))
    assert "--attention-backend" not in ex.files["megatron_pretrain.sh"]
    assert any(c.startswith("--attention flash2:") for c in ex.caveats)


def test_exports_say_where_the_loss_is_chunked_otherwise():
    """The estimate sizes torchtitan's loss in 8 chunks for fsdp: the FSDP2 and Accelerate files,
    which serve the user's own loss, say so; torchtitan says so when the job asked for another
    chunking than its recipe's."""
    lay = Layout(dp=8, zero=3, mbs=1, grad_accum=4, recompute="full")
    chunked = export_all(Target(build_job(model="llama-3-8b", gpus=8, framework="fsdp"), lay))
    whole = export_all(Target(build_job(model="llama-3-8b", gpus=8, framework="fsdp", loss_chunks=1), lay))
    for fw in ("fsdp", "accelerate"):
        assert any("--loss-chunks 1" in c for c in chunked[fw]["caveats"]), fw
        assert not any("chunk" in c for c in whole[fw]["caveats"]), fw
    assert not any("chunk" in c for c in chunked["torchtitan"]["caveats"])


def test_torchtitan_runs_the_loss_in_the_chunks_the_estimate_sized():
    """torchtitan 0.3's registry entries all take ChunkedLossWrapper, whose num_chunks its command
    line sets (--loss.num_chunks): a job that asks for other chunks than the recipe's 8 gets
    them, not a 'cannot express' caveat. One chunk still runs the wrapper, whose fp32 gradient of
    the hidden states (GradAccumulator) the unchunked estimate leaves out: said."""
    lay = Layout(dp=8, zero=3, mbs=1, grad_accum=4, recompute="full")

    def tt(**kw):
        return export_all(Target(build_job(model="llama-3-8b", gpus=8, framework="fsdp", **kw), lay))["torchtitan"]
    four, whole, chunked = tt(loss_chunks=4), tt(loss_chunks=1), tt()
    assert "--loss.num_chunks 4" in four["files"]["torchtitan_train.sh"]
    assert not any("chunk" in c for c in four["caveats"])
    assert "--loss.num_chunks 1" in whole["files"]["torchtitan_train.sh"]
    assert any("GradAccumulator" in c for c in whole["caveats"])
    assert "num_chunks" not in chunked["files"]["torchtitan_train.sh"]


def test_a_megatron_fine_tune_loads_the_checkpoint_the_script_checks_for():
    """A fine-tune (and RLHF's policy) exported to Megatron loads the model's weights: --load from
    $CHECKPOINT_DIR, which the shell refuses to leave unset (an empty --load would train from
    random weights), --finetune (weights only, iteration 0) and --exit-on-missing-checkpoint (a
    directory without a checkpoint stops the run rather than starting from random weights); a
    pre-training script loads nothing. The invented learning rate is said to be a placeholder."""
    import subprocess
    lay = Layout(dp=16, zero=1, mbs=1, grad_accum=8)
    for training in ("finetune", "rlhf"):
        text = export("megatron", Target(build_job(model="qwen3-8b", gpus=16, training=training), lay)) \
            .files["megatron_pretrain.sh"]
        args = script_args(text)
        load = args[args.index("--load") + 1]
        assert load.startswith("${CHECKPOINT_DIR:?") and "--finetune" in args and "--exit-on-missing-checkpoint" in args
        assert "CHECKPOINT_DIR (the model's weights as a Megatron checkpoint" in text
        assert "placeholders that shardwise does not size" in text and "a fine-tune usually runs a lower one" in text
        # bash stops at the unset variable, with its message, before torchrun starts
        launch = text[text.index("\ntorchrun "):].replace("torchrun ", "echo ", 1)
        r = subprocess.run(["bash", "-c", launch], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        assert r.returncode != 0 and "set CHECKPOINT_DIR to the Megatron checkpoint" in r.stderr
        r = subprocess.run(["bash", "-c", launch], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "CHECKPOINT_DIR": "/ckpt"})
        assert r.returncode == 0 and "--load /ckpt --finetune" in r.stdout
    pretrain = script_args(export("megatron", Target(build_job(model="qwen3-8b", gpus=16), lay)).files["megatron_pretrain.sh"])
    assert "--load" not in pretrain and "--finetune" not in pretrain


def test_megatron_max_position_embeddings_is_the_models():
    """--max-position-embeddings is config.json's max_position_embeddings (131072 for Llama 3.1),
    not the sequence: it sizes a learned position table (GPT-3's 2048, which a checkpoint holds),
    and for RoPE keeps the model the model's; at least the sequence, which Megatron requires."""
    def positions(model, seq_len):
        job = build_job(model=model, gpus=8, seq_len=seq_len)
        ex = export("megatron", Target(job, Layout(tp=8, dp=1, sp=True, mbs=1, grad_accum=8, recompute="full")))
        a = script_args(ex.files["megatron_pretrain.sh"])
        return int(a[a.index("--max-position-embeddings") + 1]), ex.caveats
    assert positions("llama-3.1-8b", 4096) == (131072, [])
    assert positions("llama-2-7b", 8192)[0] == 8192                  # past the model's 4096: the sequence
    assert positions("gpt-3-175b", 2048)[0] == 2048
    n, caveats = positions("gpt-3-175b", 4096)
    assert n == 4096 and any("learned position embedding of 2048 positions" in c for c in caveats)


# the setting each export writes for a named optimizer; None where the export says it cannot
OPTIMIZER_WRITTEN = {
    "megatron": {"adamw-fused": "--optimizer adam \\\n", "adamw-foreach": "--optimizer adam \\\n",
                 "adamw-single": "--optimizer adam \\\n", "adamw-8bit": None, "adafactor": None,
                 "sgd": "--optimizer sgd \\\n  --sgd-momentum 0.9"},
    "torchtitan": {"adamw-fused": "--optimizer.implementation fused", "adamw-foreach": "--optimizer.implementation foreach",
                   "adamw-single": "--optimizer.implementation for-loop", "adamw-8bit": None, "adafactor": None,
                   "sgd": None},
    "nanotron": {"adamw-fused": "torch_adam_is_fused: true", "adamw-foreach": "torch_adam_is_fused: false",
                 "adamw-single": "torch_adam_is_fused: false", "adamw-8bit": "torch_adam_is_fused: true",
                 "adafactor": "torch_adam_is_fused: true", "sgd": "optimizer_factory:\n    name: sgd"},
    "deepspeed": {"adamw-fused": '"type": "AdamW"', "adamw-foreach": '"foreach": true', "adamw-single": '"foreach": false',
                  "adamw-8bit": None, "adafactor": None, "sgd": '"type": "SGD"'},
    "fsdp": {"adamw-fused": "torch.optim.AdamW(params, lr=lr, fused=True)",
             "adamw-foreach": "torch.optim.AdamW(params, lr=lr, foreach=True)",
             "adamw-single": "torch.optim.AdamW(params, lr=lr, foreach=False)",
             "adamw-8bit": "bitsandbytes.optim.AdamW8bit(params, lr=lr)",
             "adafactor": None,
             "sgd": "torch.optim.SGD(params, lr=lr, momentum=0.9)"},
    "accelerate": dict.fromkeys(("adamw-fused", "adamw-foreach", "adamw-single", "adamw-8bit", "adafactor", "sgd")),
}
# what each export's cannot-express line names, where it has one
OPTIMIZER_SAID = {
    "megatron": ("adamw-foreach", "adamw-single", "adamw-8bit", "adafactor"),
    "torchtitan": ("adamw-8bit", "adafactor", "sgd"),
    "nanotron": ("adamw-single", "adamw-8bit", "adafactor", "sgd"),
    "deepspeed": ("adamw-8bit", "adafactor"),
    "fsdp": ("adafactor",),
    "accelerate": ("adamw-fused", "adamw-foreach", "adamw-single", "adamw-8bit", "adafactor", "sgd"),
}


@pytest.mark.parametrize("optimizer", ["adamw-fused", "adamw-foreach", "adamw-single", "adamw-8bit", "adafactor", "sgd"])
def test_every_export_writes_the_optimizer_or_says_it_cannot(optimizer):
    """--optimizer was dropped from every export (a Megatron script for SGD ran Adam). Each export
    writes the named optimizer where its framework has a setting for it, and otherwise says so in a
    cannot-express line, in the file, with what runs instead and its estimated memory."""
    job = build_job(model="llama-3-8b", gpus=8, optimizer=optimizer)
    out = export_all(Target(job, Layout(dp=8, zero=1, mbs=1, grad_accum=16, recompute="full")))
    for fw, ex in out.items():
        text = "".join(ex["files"].values())
        said = [c for c in ex["caveats"] if c.startswith(f"--optimizer {optimizer}:")]
        written = OPTIMIZER_WRITTEN[fw][optimizer]
        assert written is None or written in text, (fw, written)
        assert bool(said) == (optimizer in OPTIMIZER_SAID[fw]), (fw, said)
        assert written is not None or said, fw
        assert all(f"cannot express: {c}" in text for c in said), fw
        if fw in ("megatron", "torchtitan") and said and optimizer in ("adamw-8bit", "adafactor", "sgd"):
            assert re.search(r"estimated [\d.]+ of [\d.]+ GiB a GPU as it runs: (fits|does not fit)", said[0]), fw
    # the Megatron script runs no 8-bit optimizer: Adam's fp32 moments are more memory than the plan's
    if optimizer == "adamw-8bit":
        assert "--optimizer" not in script_args(out["megatron"]["files"]["megatron_pretrain.sh"])
    ds = json.loads(out["deepspeed"]["files"]["ds_config.json"])
    assert ds_check(ds, 8) == []
    assert ds.get("zero_allow_untested_optimizer") is (True if optimizer in ("adamw-8bit", "adafactor", "sgd") else None)
    if "optimizer" in ds:
        # Accelerate's DeepSpeed path shares the JSON, and stands for its optimizer with DummyOptim
        assert "DummyOptim" in out["accelerate"]["files"].get("accelerate_config.yaml", "") or \
            "ds_config.json" not in out["accelerate"]["files"]


@pytest.mark.parametrize("optimizer,flags", [("adamw-8bit", "--optim adamw_bnb_8bit"), ("adafactor", "--optim adafactor"),
                                             ("sgd", "--optim sgd --optim_args momentum=0.9"),
                                             ("adamw-foreach", "--optim adamw_torch"),
                                             ("adamw-fused", "--optim adamw_torch_fused")])
def test_the_trainer_launch_names_the_optimizer(optimizer, flags):
    """Under the transformers Trainer the optimizer is TrainingArguments' --optim, beside the
    DeepSpeed JSON (which has no optimizer section, which would replace the Trainer's)."""
    job = build_job(model="llama-3-8b", gpus=16, training="finetune", optimizer=optimizer)
    ex = export("deepspeed", Target(job, Layout(dp=16, zero=3, mbs=1, grad_accum=8, recompute="full")))
    assert ex.files["launch.sh"].rstrip().endswith(flags)
    assert "optimizer" not in json.loads(ex.files["ds_config.json"])


def test_the_default_optimizer_leaves_the_exports_as_they_were():
    """No --optimizer (or adamw, the framework's own AdamW) writes no optimizer setting: each
    framework's default is the fused AdamW the estimate sizes."""
    for optimizer in (None, "adamw"):
        job = build_job(model="llama-3-8b", gpus=8, **({"optimizer": optimizer} if optimizer else {}))
        out = export_all(Target(job, Layout(dp=8, zero=1, mbs=1, grad_accum=16, recompute="full")))
        assert "--optimizer" not in out["megatron"]["files"]["megatron_pretrain.sh"]
        assert "--optimizer." not in out["torchtitan"]["files"]["torchtitan_train.sh"]
        assert "optimizer" not in json.loads(out["deepspeed"]["files"]["ds_config.json"])
        assert "build_optimizer" not in out["fsdp"]["files"]["fsdp2_sharding.py"]
        assert not any("--optimizer" in c for ex in out.values() for c in ex["caveats"])


def test_export_to_all_carries_the_optimizer(run_cli, tmp_path):
    code, out, err = run_cli("export", "--model", "llama-3-8b", "--gpus", "8", "--optimizer", "sgd", "--to", "all",
                             "-o", str(tmp_path))
    assert code == 0, err
    assert "--optimizer sgd" in (tmp_path / "megatron" / "megatron_pretrain.sh").read_text()
    assert "note: torchtitan cannot express: --optimizer sgd:" in out
    code, out, err = run_cli("export", "--model", "llama-3-8b", "--gpus", "8", "--optimizer", "adamw-8bit",
                             "--to", "megatron")
    assert code == 0 and "cannot express: --optimizer adamw-8bit: Megatron has no 8-bit AdamW" in out


def test_nanotron_gates_with_the_models_activation_and_names_its_run_for_folders(run_cli, tmp_path):
    """A GeGLU model (config.json's gelu) is not exported to Nanotron as a SwiGLU one, and a model
    named by its Hugging Face id (the cache folder models--Qwen--...) gives a run name without the
    '/' that would make it a path."""
    folder = tmp_path / "models--Qwen--Qwen2.5-7B" / "snapshots" / "abc"
    folder.mkdir(parents=True)
    cfg = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
           "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768}
    for act, want in (("gelu", "gelu_pytorch_tanh"), ("silu", "silu")):
        (folder / "config.json").write_text(json.dumps(dict(cfg, hidden_act=act)))
        out = tmp_path / act
        code, _, err = run_cli("export", "--hf-config", str(folder / "config.json"), "--gpus", "8", "--to", "nanotron",
                               "-o", str(out))
        assert code == 0, err
        nt = yaml.safe_load((out / "nanotron.yaml").read_text())
        assert nt["model"]["model_config"]["hidden_act"] == want
        assert nt["general"]["run"].startswith("Qwen-Qwen2.5-7B-") and "/" not in nt["general"]["run"]


@pytest.mark.parametrize("model, says", [
    # 32 heads of 128 in a 5120 hidden size: Nanotron's d_qk = 5120 // 32 = 160 widens q, k, v and o
    # by 40 x (2 x 5120 x 1024 + 2 x 5120 x 256) parameters
    ("mistral-small-24b", ["each head 160 wide (hidden_size / num_attention_heads), not 128",
                           "524,288,000 parameters more than mistral-small-24b's"]),
    # Qwen2's q, k and v biases: 28 layers x (1536 + 2 x 256)
    ("qwen2.5-1.5b", ["no attention biases", "57,344 parameters fewer"]),
    # longrope has per-dimension factor lists, no one factor
    ("phi-4-mini", ["partial RoPE (0.75 of each head", "RoPE scaling longrope: not written"]),
    ("gemma-3-12b", ["RoPE scaling linear (factor 8): not written"]),
    ("gemma-3-12b", ["each head 240 wide", "q/k norms: Nanotron's Llama has none"]),
    ("llama-3-8b", []),
])
def test_nanotron_says_where_its_llama_builds_another_model(model, says):
    """Nanotron's Llama (models/llama.py) sizes each head hidden_size / num_attention_heads, has
    no attention biases, no q/k norms and rotates the whole head: a model with another head width,
    Qwen2's biases, Qwen3's or Gemma 3's q/k norms or Phi-4-mini's partial RoPE is not the model
    its YAML names, and the export says so whatever the family; a Llama has nothing to say."""
    job = build_job(model=model, gpus=8)
    caveats = export("nanotron", Target(job, Layout(dp=8, zero=1, mbs=1, grad_accum=8))).caveats
    for words in says:
        assert any(words in c for c in caveats), (words, caveats)
    if not says:
        assert not any("Nanotron's Llama" in c for c in caveats), caveats


@pytest.mark.parametrize("zero", [0, 1, 3])
def test_pure_bf16_keeps_no_fp32_master_weights_or_says_so(zero):
    """pure-bf16 is estimated with bf16 weights and optimizer states and no fp32 masters
    (kb/memory/states.py): every export that can run it so writes it so -- DeepSpeed's ZeRO
    optimizer with bf16 masters and states, Nanotron without its fp32 gradient accumulator (its
    master copy), Accelerate without a mixed precision (whose FSDP2 preparation upcasts to fp32),
    FSDP2 with the parameters sharded in bf16 -- and DeepSpeed at ZeRO-0, which cannot, says so.
    (The job is torchtitan's: Megatron has no pure-bf16 recipe, test_inputs.)"""
    job = build_job(model="llama-3-8b", gpus=8, precision="pure-bf16", framework="fsdp")
    out = export_all(Target(job, Layout(dp=8, zero=zero, mbs=1, grad_accum=8, recompute="full")))
    bf16 = json.loads(out["deepspeed"]["files"]["ds_config.json"])["bf16"]
    if zero:
        assert bf16 == {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}
    else:
        assert bf16 == {"enabled": True}
        assert any(c.startswith("pure-bf16 at ZeRO-0") for c in out["deepspeed"]["caveats"])
    assert yaml.safe_load(out["nanotron"]["files"]["nanotron.yaml"])["optimizer"]["accumulate_grad_in_fp32"] is False
    acc = yaml.safe_load(out["accelerate"]["files"]["accelerate_config.yaml"])
    assert acc["mixed_precision"] == "no" and any("pure-bf16" in c for c in out["accelerate"]["caveats"])
    assert "PARAM_DTYPE = torch.bfloat16" in out["fsdp"]["files"]["fsdp2_sharding.py"]
    mixed = export_all(Target(build_job(model="llama-3-8b", gpus=8), Layout(dp=8, zero=zero, mbs=1, grad_accum=8)))
    assert json.loads(mixed["deepspeed"]["files"]["ds_config.json"])["bf16"] == {"enabled": True}
    assert yaml.safe_load(mixed["nanotron"]["files"]["nanotron.yaml"])["optimizer"]["accumulate_grad_in_fp32"] is True
    assert yaml.safe_load(mixed["accelerate"]["files"]["accelerate_config.yaml"])["mixed_precision"] == "bf16"
    assert "PARAM_DTYPE = torch.float32" in mixed["fsdp"]["files"]["fsdp2_sharding.py"]


def test_megatron_export_of_a_pure_bf16_layout_says_whether_its_fp32_masters_fit():
    """Megatron-Core keeps fp32 main params under --bf16 (arguments.py: --main-params-dtype is
    fp32 or fp16), so its launch of a layout planned without fp32 masters holds its bf16 recipe's
    states: Llama 3 70B on 32 H100s at pure-bf16 under torchtitan fits TP2 ZeRO-3, and Megatron
    runs that layout at about 86 GiB, out of memory. The caveat says so, with the estimate of the
    run it launches, as Nanotron's ZeRO-1 caveat does."""
    from shardwise.kb.memory.estimate import estimate_memory
    job = build_job(model="llama-3-70b", gpus=32, precision="pure-bf16", framework="fsdp")
    lay = Layout(tp=2, dp=16, zero=3, sp=True, mbs=1, grad_accum=64)
    assert estimate_memory(job, lay).fits
    as_run = estimate_memory(build_job(model="llama-3-70b", gpus=32, precision="bf16"), lay)
    assert not as_run.fits
    caveat = [c for c in export("megatron", Target(job, lay)).caveats if c.startswith("pure-bf16")]
    assert caveat == ["pure-bf16 (no fp32 master weights): Megatron keeps fp32 main params with --bf16 "
                      f"(estimated {as_run.peak_gib:.1f} of {as_run.capacity_gib:.1f} GiB a GPU as it runs: "
                      "does not fit)"], caveat
    # DeepSpeed at ZeRO-0 keeps fp32 masters (and so fp32 Adam states) whatever the JSON says
    small = build_job(model="llama-3-8b", gpus=8, precision="pure-bf16", framework="fsdp")
    z0 = Layout(dp=8, zero=0, mbs=1, grad_accum=8, recompute="full")
    held = estimate_memory(build_job(model="llama-3-8b", gpus=8, precision="bf16", framework="deepspeed"), z0)
    assert held.peak_gib > estimate_memory(small, z0).peak_gib + 4 * 8.03e9 / 2**30
    said = [c for c in export("deepspeed", Target(small, z0)).caveats if c.startswith("pure-bf16 at ZeRO-0")]
    assert len(said) == 1 and said[0].endswith(f"(estimated {held.peak_gib:.1f} of {held.capacity_gib:.1f} GiB a "
                                               f"GPU as it runs: {'fits' if held.fits else 'does not fit'})"), said


def test_fsdp_export_of_an_fp8_job_says_it_computes_in_bf16():
    """The FSDP2 module has no FP8 setting (its policy computes in bf16): an fp8 job's export says
    where FP8 comes from rather than silently writing bf16."""
    job = build_job(model="llama-3-8b", gpus=16, precision="fp8", framework="fsdp")
    ex = export("fsdp", Target(job, Layout(dp=16, zero=3, mbs=1, grad_accum=8)))
    assert any(c.startswith("fp8: FSDP2 has no FP8 setting") for c in ex.caveats)
    assert "cannot express: fp8: FSDP2 has no FP8 setting" in ex.files["fsdp2_sharding.py"]


@pytest.mark.parametrize("gpus,per_node,pp,machines", [(12, 4, 2, 2), (64, 8, 4, 2), (16, 8, 1, 2), (8, 8, 2, 1)])
def test_accelerate_pipeline_slice_runs_on_as_many_machines_as_it_needs(gpus, per_node, pp, machines):
    """Accelerate's PP=1 slice of a pipeline layout: its processes over enough machines of the
    cluster's size (6 processes on one 4-GPU machine cannot start), never rounded down."""
    job = build_job(model="llama-3-8b", gpus=gpus, gpus_per_node=per_node)
    dp = gpus // pp
    cfg = yaml.safe_load(export("accelerate", Target(job, Layout(pp=pp, dp=dp, zero=1, mbs=1, grad_accum=4)))
                         .files["accelerate_config.yaml"])
    assert (cfg["num_processes"], cfg["num_machines"]) == (dp, machines)
    assert cfg["num_processes"] // cfg["num_machines"] <= per_node


def test_accelerate_on_several_machines_says_what_each_machine_sets():
    """Gemma 3 12B on 16 GPUs in 2 nodes exported 'num_machines: 2, machine_rank: 0' and nothing
    more: run as written on both nodes, both claim rank 0 and neither knows where machine 0 is.
    The file says which keys each machine sets (accelerate launch's --machine_rank,
    --main_process_ip, --main_process_port); on one machine it says nothing of it."""
    for gpus, framework, zero, said in ((16, "hf", 2, True), (16, "fsdp", 3, True), (8, "hf", 2, False)):
        job = build_job(model="gemma-3-12b", gpus=gpus, seq_len=8192, training="finetune", framework=framework)
        text = export("accelerate", Target(job, Layout(dp=gpus, zero=zero, mbs=1, grad_accum=128 // gpus))) \
            .files["accelerate_config.yaml"]
        assert ("# 2 machines: run this file on each, with machine_rank 0 to 1 (0 here) and main_process_ip / "
                "main_process_port set to machine 0's address" in text) == said, text


def test_accelerate_points_an_adapter_pipeline_at_an_export_that_runs_it():
    """Accelerate has no pipeline; its caveat named megatron or torchtitan as where a pipeline
    layout runs, which refuse a LoRA job (they train every weight). For an adapter job it names the
    FSDP2 export's torch pipelining, in the user's own PEFT script."""
    for training, where in (("lora", "the fsdp export"), ("pretrain", "megatron or torchtitan")):
        job = build_job(model="mistral-7b", gpus=6, gpu="rtx-4090", seq_len=1024, training=training, framework="fsdp")
        tg = Target(job, Layout(pp=3, vp=4, dp=2, zero=0, mbs=2, grad_accum=33))
        caveat = next(c for c in export("accelerate", tg).caveats if c.startswith("pp=3"))
        assert caveat.endswith(f"use {where}" + (" (torch.distributed.pipelining in your PEFT script))"
                                                  if training == "lora" else ")")), caveat
        if training == "lora":
            assert "torchtitan" not in caveat and "refused" not in export_all(tg)["fsdp"]


def test_fsdp_expert_caveat_names_no_refused_export_for_an_adapter_job():
    """FSDP2 has no expert parallelism; its caveat sent every job to torchtitan's export, which
    refuses a LoRA job (it trains every weight): Qwen3-30B-A3B LoRA on Megatron with EP 8 was told
    'torchtitan's export carries it' beside 'torchtitan: not written'. An adapter job is told that
    FSDP shards the experts; a pre-training job still gets torchtitan's flag."""
    for training in ("lora", "pretrain"):
        job = build_job(model="qwen3-30b-a3b", gpus=8, seq_len=4096, training=training, framework="megatron")
        tg = Target(job, Layout(dp=8, ep=8, zero=0, mbs=2, grad_accum=8 if training == "lora" else 64))
        caveat = next(c for c in export("fsdp", tg).caveats if c.startswith("ep=8"))
        if training == "lora":
            assert "carries it" not in caveat and "sharded by fully_shard" in caveat, caveat
            assert export_all(tg)["torchtitan"].get("refused"), "torchtitan should refuse a LoRA job"
        else:
            assert "--parallelism.expert_parallel_degree" in caveat, caveat


def _hf_script(tmp_path, cfg: dict, gpus: int, lay: Layout) -> tuple[list[str], list[str]]:
    """The pretrain_gpt.py arguments and caveats of a config.json's model under a given layout."""
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    ex = export("megatron", Target(build_job(hf_config=str(path), gpus=gpus), lay))
    return script_args(ex.files["megatron_pretrain.sh"]), ex.caveats


def _flag(args: list[str], name: str):
    return args[args.index(name) + 1] if name in args else None


LLAMA4_SCOUT = {"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
                "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048, "num_local_experts": 16,
                "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "use_qk_norm": True,
                "rope_theta": 500000.0, "attention_chunk_size": 8192}
LLAMA4_LAYOUT = Layout(dp=64, ep=8, zero=1, mbs=1, grad_accum=4, recompute="full")


def test_megatron_builds_llama4s_nope_layers_l2_norms_and_sigmoid_router(tmp_path):
    """Llama 4 Scout (modeling_llama4.py): RoPE on interleaved pairs left out of every fourth
    layer, weightless L2 q/k norms, a top-1 sigmoid router whose score scales the expert's input,
    and one shared expert. The script wrote none of the first four (a caveat asked the user to
    add them) and kept Megatron's softmax router, which TransformerConfig refuses at top 1
    ("Please use --moe-router-pre-softmax when topk is 1"): the script did not start. Only what
    Megatron-Core has no option for stays a caveat: the L2 norms it also puts on the NoPE
    layers, the temperature tuning and the chunked attention."""
    a, caveats = _hf_script(tmp_path, LLAMA4_SCOUT, 64, LLAMA4_LAYOUT)
    assert _flag(a, "--no-rope-freq") == "4"
    assert {"--rotary-interleaved", "--qk-l2-norm", "--moe-apply-probs-on-input"} <= set(a)
    assert _flag(a, "--moe-router-score-function") == "sigmoid" and _flag(a, "--moe-router-topk") == "1"
    assert _flag(a, "--moe-shared-expert-intermediate-size") == "8192" and _flag(a, "--moe-ffn-hidden-size") == "8192"
    assert _flag(a, "--ffn-hidden-size") == "16384" and "--moe-layer-freq" not in a   # every layer MoE
    text = " ".join(caveats)
    assert "12 layers without RoPE" in text and "chunked attention on 36 layers" in text and "temperature" in text
    assert "runs them as full causal attention" in text
    assert "add them" not in text and "--no-rope-freq" not in text and "softmax router" not in text
    # Maverick: no q/k norms, MoE every other layer (the dense ones 16384 wide, the experts 8192)
    a, caveats = _hf_script(tmp_path, dict(LLAMA4_SCOUT, use_qk_norm=False, interleave_moe_layer_step=2), 64,
                            LLAMA4_LAYOUT)
    assert "--qk-l2-norm" not in a and not any("L2" in c or "l2-norm" in c for c in caveats)
    # without a chunk size nothing is chunked, and no caveat says it is
    _, caveats = _hf_script(tmp_path, dict(LLAMA4_SCOUT, attention_chunk_size=None), 64, LLAMA4_LAYOUT)
    assert not any("chunked" in c for c in caveats)
    assert _flag(a, "--moe-layer-freq") == "([0]*1+[1])*24" and _flag(a, "--no-rope-freq") == "4"


def test_accelerate_says_transformers_llama4_runs_every_expert_where_fsdp_sized_top_k(tmp_path):
    """The Accelerate config wraps transformers' Llama4TextDecoderLayer, whose Llama4TextMoe
    passes every token through all 16 experts; --framework fsdp sizes a token-choice top-1 MoE.
    The export says so (and the FSDP2 module, for a script that builds transformers' model),
    with the factor; where the estimate already sized transformers' block (--framework hf,
    EP 1) or the launch routes top k (torchtitan), nothing is said."""
    path = tmp_path / "scout" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(LLAMA4_SCOUT))
    lay = Layout(dp=64, zero=3, mbs=1, grad_accum=4, recompute="full")
    fsdp = Target(build_job(hf_config=str(path), gpus=64, framework="fsdp"), lay)
    for to in ("accelerate", "fsdp"):
        said = [c for c in export(to, fsdp).caveats if "Llama4TextMoe" in c]
        assert len(said) == 1 and "all 16 routed experts" in said[0] and "16x" in said[0], (to, said)
    assert not any("Llama4TextMoe" in c for c in export("torchtitan", fsdp).caveats)
    hf = Target(build_job(hf_config=str(path), gpus=64, framework="hf"), lay)
    assert not any("Llama4TextMoe" in c for c in export("accelerate", hf).caveats)


def test_megatron_says_it_cannot_soft_cap_gemma2s_attention(tmp_path):
    """Gemma 2 caps its attention scores (attn_logit_softcapping 50: cap x tanh(s / cap));
    Megatron-Core has no soft-cap option, so the script trains uncapped scores: a caveat with the
    cap, where the export said nothing. A config.json with the cap turned off (null) and Gemma 3,
    which has none, get no such caveat."""
    lay = Layout(dp=8, zero=1, mbs=1, grad_accum=8)
    for name in ("gemma-2-2b", "gemma-2-9b"):
        said = [c for c in export("megatron", Target(build_job(model=name, gpus=8), lay)).caveats if "attention logit soft-capping" in c]
        assert len(said) == 1 and "at 50 " in said[0], (name, said)
    assert not any("attention logit soft-capping" in c for c in export("megatron", Target(build_job(model="gemma-3-4b", gpus=8), lay)).caveats)
    cfg = {"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
           "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000}
    assert any("attention logit soft-capping" in c for c in _hf_script(tmp_path, cfg, 8, lay)[1])
    assert not any("attention logit soft-capping" in c for c in _hf_script(tmp_path, dict(cfg, attn_logit_softcapping=None), 8, lay)[1])


GEMMA2_2B = {"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
             "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000}
GEMMA_LAYOUT = Layout(dp=8, zero=1, mbs=1, grad_accum=8)


def _said(name: str, what: str) -> list[str]:
    ex = export("megatron", Target(build_job(model=name, gpus=8), GEMMA_LAYOUT))
    return [c for c in ex.caveats if what in c]


def test_megatron_says_it_cannot_soft_cap_gemma2s_final_logits(tmp_path):
    """Gemma 2 caps its logits before the loss (final_logit_softcapping 30, Gemma2Config's default);
    the reader dropped the field and the script trained uncapped logits without a word. Gemma 3
    (final_logit_softcapping None) and a config.json that turns it off get no such caveat."""
    for name in ("gemma-2-2b", "gemma-2-9b", "gemma-2-27b"):
        said = _said(name, "final logit soft-capping")
        assert len(said) == 1 and "at 30 " in said[0], (name, said)
    assert not _said("gemma-3-4b", "final logit soft-capping")
    assert any("final logit soft-capping" in c for c in _hf_script(tmp_path, GEMMA2_2B, 8, GEMMA_LAYOUT)[1])
    off = dict(GEMMA2_2B, final_logit_softcapping=None)
    assert not any("final logit soft-capping" in c for c in _hf_script(tmp_path, off, 8, GEMMA_LAYOUT)[1])


def test_megatron_says_it_scales_gemmas_scores_by_the_head_dim_not_query_pre_attn_scalar(tmp_path):
    """Gemma 2 27B scales its scores by 144 ** -0.5 (query_pre_attn_scalar) and Gemma 3 27B by
    168 ** -0.5, both with head_dim 128; Megatron's softmax_scale has no flag, so the script's
    1/sqrt(128) is 1.061x and 1.146x theirs: a caveat with the factor. The 9B, 2B and the Gemma 3
    4B and 12B set it to their head dimension: nothing to say."""
    assert "1/sqrt(144)" in _said("gemma-2-27b", "query_pre_attn_scalar")[0]
    assert "1.061x" in _said("gemma-2-27b", "query_pre_attn_scalar")[0]
    assert "1/sqrt(168)" in _said("gemma-3-27b", "query_pre_attn_scalar")[0]
    for name in ("gemma-2-2b", "gemma-2-9b", "gemma-3-1b", "gemma-3-4b", "gemma-3-12b", "gemma-7b"):
        assert not _said(name, "query_pre_attn_scalar"), name
    # Gemma2Config's default query_pre_attn_scalar is 256: a 128-wide head that leaves it out is scaled by 1/16
    narrow = dict(GEMMA2_2B, head_dim=128)
    assert any("1/sqrt(256)" in c for c in _hf_script(tmp_path, narrow, 8, GEMMA_LAYOUT)[1])


def test_megatron_says_gemma3s_sliding_layers_rotate_with_another_base(tmp_path):
    """Gemma 3 rotates its sliding-window layers with rope_local_base_freq 10000 and its
    full-attention ones with rope_theta 1e6; Megatron's one --rotary-base rotates every layer with
    1e6: a caveat naming both bases. transformers 5's rope_parameters.sliding_attention is read as
    the same field; Gemma 2 (one base) gets none."""
    said = _said("gemma-3-4b", "rope_local_base_freq")
    assert len(said) == 1 and "RoPE base 10000 on the sliding-window layers" in said[0] and "1000000" in said[0]
    assert not _said("gemma-2-9b", "rope_local_base_freq")
    g3 = {"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
          "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144,
          "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                              "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}}}
    assert any("RoPE base 20000 on" in c for c in _hf_script(tmp_path, g3, 8, GEMMA_LAYOUT)[1])
    same = dict(g3, rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
    assert not any("rope_local_base_freq" in c for c in _hf_script(tmp_path, same, 8, GEMMA_LAYOUT)[1])


def test_megatron_builds_gemma3s_linear_rope_scaling(tmp_path):
    """Gemma 3 4B, 12B and 27B scale RoPE linearly by 8 (config.json rope_scaling linear): Megatron
    builds it as --rotary-seq-len-interpolation-factor 8 (positions / 8, the angles of transformers'
    inv_freq / 8); the script trained unscaled RoPE with a caveat saying Megatron could not. The
    sliding-window layers, which transformers leaves unscaled, are said with their base. A factor
    that is not whole has no flag (the flag is an int) and stays a caveat; longrope names no factor."""
    for name in ("gemma-3-4b", "gemma-3-12b", "gemma-3-27b"):
        ex = export("megatron", Target(build_job(model=name, gpus=8), GEMMA_LAYOUT))
        args = script_args(ex.files["megatron_pretrain.sh"])
        i = args.index("--rotary-seq-len-interpolation-factor")
        assert args[i + 1] == "8", name
        assert not any("trains unscaled RoPE" in c for c in ex.caveats), name
        assert any("rotates all of them with 1000000 and its linear scaling" in c for c in ex.caveats), name
    g3 = {"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
          "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144,
          "rope_scaling": {"rope_type": "linear", "factor": 2.5}}
    args, caveats = _hf_script(tmp_path, g3, 8, GEMMA_LAYOUT)
    assert "--rotary-seq-len-interpolation-factor" not in args
    assert any("RoPE scaling linear (factor 2.5)" in c and "unscaled RoPE" in c for c in caveats), caveats
    phi = export("megatron", Target(build_job(model="phi-4-mini", gpus=8), GEMMA_LAYOUT)).caveats
    assert any(c.startswith("RoPE scaling longrope: ") for c in phi), phi


def test_megatron_sandwich_norm_caveat_names_no_model_it_does_not_fit():
    """The post-norm caveat said "(Gemma 2)" on Gemma 3's scripts too: it now says what the layer
    has, once, for either."""
    for name in ("gemma-2-9b", "gemma-3-4b", "gemma-3-12b"):
        said = _said(name, "post-attention and post-MLP norms")
        assert len(said) == 1 and "(Gemma 2)" not in said[0], (name, said)
    assert not _said("gemma-7b", "post-attention and post-MLP norms")


def test_megatron_builds_gemmas_one_plus_w_norms_and_says_it_cannot_scale_the_embedding():
    """Every Gemma RMSNorm scales by (1 + w) (GemmaRMSNorm .forward), which is Megatron's
    --apply-layernorm-1p on TE's RMSNorm (zero_centered_gamma: x / RMS(x) x (1 + gamma)); the
    script wrote plain RMSNorm, whose w would be one less than the checkpoint's. Gemma multiplies
    its embedding output by sqrt(hidden), which Megatron's command line does only under MuP: a
    caveat with the factor. Llama gets neither."""
    for name, hidden in (("gemma-7b", 3072), ("gemma-2-9b", 3584), ("gemma-3-4b", 2560), ("gemma-3-12b", 3840)):
        ex = export("megatron", Target(build_job(model=name, gpus=8), GEMMA_LAYOUT))
        assert "--apply-layernorm-1p" in script_args(ex.files["megatron_pretrain.sh"]), name
        said = [c for c in ex.caveats if "embedding output scaled" in c]
        assert len(said) == 1 and f"= {hidden ** 0.5:.2f}" in said[0], (name, said)
    ex = export("megatron", Target(build_job(model="llama-3-8b", gpus=8), GEMMA_LAYOUT))
    assert "--apply-layernorm-1p" not in script_args(ex.files["megatron_pretrain.sh"])
    assert not any("embedding output scaled" in c for c in ex.caveats)


def test_megatron_no_rope_freq_takes_the_list_form_for_another_pattern(tmp_path):
    """no_rope_layers that are not every Nth layer (or an N that does not divide the layers, which
    TransformerConfig refuses as an integer) are --no-rope-freq's list form, 1 where RoPE is left
    out; SmolLM3's every fourth of 36 is the integer."""
    rope = [1] * 48
    rope[0] = rope[5] = rope[6] = 0
    a, _ = _hf_script(tmp_path, dict(LLAMA4_SCOUT, no_rope_layers=rope), 64, LLAMA4_LAYOUT)
    assert _flag(a, "--no-rope-freq") == "[1]*1+[0]*4+[1]*2+[0]*41"
    a, _ = _hf_script(tmp_path, dict(LLAMA4_SCOUT, num_hidden_layers=30, no_rope_layer_interval=4), 64,
                      LLAMA4_LAYOUT)
    assert _flag(a, "--no-rope-freq") == "[0]*3+[1]*1+[0]*3+[1]*1+[0]*3+[1]*1+[0]*3+[1]*1+[0]*3+[1]*1+[0]*3+[1]*1+[0]*3+[1]*1+[0]*2"
    smol = export("megatron", Target(build_job(model="smollm3-3b", gpus=8), Layout(dp=8, zero=1, mbs=1, grad_accum=8)))
    assert _flag(script_args(smol.files["megatron_pretrain.sh"]), "--no-rope-freq") == "4"
    assert not any("RoPE" in c for c in smol.caveats)


def test_llama4_top_k_above_one_keeps_megatrons_output_scaling_and_says_so(tmp_path):
    """--moe-apply-probs-on-input runs at top 1 only (experts.py asserts it), and Megatron's
    sigmoid router renormalises k > 1 scores where Llama 4's does not: a top-2 Llama 4 keeps the
    sigmoid router, leaves the flag out and says both."""
    a, caveats = _hf_script(tmp_path, dict(LLAMA4_SCOUT, num_experts_per_tok=2), 64, LLAMA4_LAYOUT)
    assert _flag(a, "--moe-router-score-function") == "sigmoid" and "--moe-apply-probs-on-input" not in a
    assert any("renormalises" in c for c in caveats) and any("input by its router score" in c for c in caveats)


def test_megatron_routes_and_rotates_as_olmoe_and_glm45_do(tmp_path):
    """OLMoE's norm_topk_prob false (its default, and OLMoE-1B-7B's file) weighs the top 8 by the
    softmax over all 64 experts: --moe-router-pre-softmax, not the caveat that asked for it; true
    renormalises, Megatron's default. GLM-4.5 rotates half of each head (partial_rotary_factor
    0.5): --rotary-percent 0.5, where the script rotated whole heads."""
    lay = Layout(dp=8, ep=8, zero=1, mbs=1, grad_accum=8)
    olmoe = export("megatron", Target(build_job(model="olmoe-1b-7b", gpus=8), lay))
    assert "--moe-router-pre-softmax" in script_args(olmoe.files["megatron_pretrain.sh"])
    assert not any("pre-softmax" in c for c in olmoe.caveats)
    cfg = {"model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16,
           "num_attention_heads": 16, "vocab_size": 50304}
    assert "--moe-router-pre-softmax" in _hf_script(tmp_path, cfg, 8, lay)[0]
    assert "--moe-router-pre-softmax" not in _hf_script(tmp_path, dict(cfg, norm_topk_prob=True), 8, lay)[0]
    glm = export("megatron", Target(build_job(model="glm-4.5-air", gpus=64), Layout(dp=64, ep=8, zero=1, mbs=1,
                                                                                     grad_accum=1, recompute="full")))
    assert _flag(script_args(glm.files["megatron_pretrain.sh"]), "--rotary-percent") == "0.5"
    assert not any("partial RoPE" in c or "rotary" in c for c in glm.caveats)


def test_megatron_scales_and_normalises_glm45_as_its_files_do():
    """GLM-4.5's file multiplies its routed weights by 2.5, GLM-4.5-Air's by 1.0 (nothing), and
    both take rms_norm_eps 1e-05, Megatron's own default (tests/catalog_configs.py gives the
    sources): GLM-4.5 gets --moe-router-topk-scaling-factor 2.5, Air no factor, and neither a
    --norm-epsilon. The catalog had taken Megatron-Bridge's mock configs' 2.5 for Air and 1e-6 for
    both, which scaled Air's routed experts 2.5-fold and set a tenth of the files' epsilon."""
    layouts = {"glm-4.5": (128, Layout(pp=4, dp=32, ep=8, zero=1, mbs=1, grad_accum=8, recompute="full")),
               "glm-4.5-air": (64, Layout(dp=64, ep=8, zero=1, mbs=1, grad_accum=1, recompute="full"))}
    scale = {}
    for name, (gpus, lay) in layouts.items():
        a = script_args(export("megatron", Target(build_job(model=name, gpus=gpus), lay)).files["megatron_pretrain.sh"])
        assert "--norm-epsilon" not in a, name
        scale[name] = _flag(a, "--moe-router-topk-scaling-factor")
    assert scale == {"glm-4.5": "2.5", "glm-4.5-air": None}


def test_megatron_says_it_renormalises_a_sigmoid_router_whose_config_does_not(tmp_path):
    """DeepSeek-V3's and GLM-4.5's routers renormalise their top-k sigmoid scores only where
    config.json's norm_topk_prob is true (their files, and both config classes' default).
    Megatron's sigmoid router renormalises whenever k > 1 and has no flag against it
    (moe_utils.py topk_routing_with_score_function; --moe-router-pre-softmax acts on softmax
    only): a file that sets it false gets the same script and a caveat saying the routing weights
    differ, where the export used to be silent. GLM-4.5 and Kimi K2 (DeepSeek-V3's architecture)
    as their files publish them, then flipped."""
    from catalog_configs import CATALOG_CONFIGS
    layouts = {"glm-4.5": Layout(pp=4, dp=16, ep=8, zero=1, mbs=1, grad_accum=4, recompute="full"),
               "kimi-k2": Layout(tp=8, pp=8, dp=16, ep=32, zero=1, mbs=1, grad_accum=16, recompute="full")}
    for name, lay in layouts.items():
        scripts = {}
        for norm in (True, False):
            (tmp_path / f"{name}-{norm}").mkdir()
            a, caveats = _hf_script(tmp_path / f"{name}-{norm}", dict(CATALOG_CONFIGS[name], norm_topk_prob=norm),
                                    lay.world, lay)
            scripts[norm] = a
            said = [c for c in caveats if "norm_topk_prob" in c]
            assert bool(said) == (not norm), (name, caveats)
            assert not said or ("renormalises" in said[0] and "top 8" in said[0])
        assert _flag(scripts[False], "--moe-router-score-function") == "sigmoid"
        assert "--moe-router-pre-softmax" not in scripts[False]     # no effect on a sigmoid router
        assert scripts[True] == scripts[False], name


def test_megatron_rotates_the_share_of_each_head_phi4_mini_names(tmp_path):
    """Phi-4-mini's config.json (model_type phi3) rotates the first 0.75 of each head
    (partial_rotary_factor; transformers' Phi3RotaryEmbedding builds dim = head_dim x 0.75): the
    Megatron script passes --rotary-percent 0.75, where it rotated whole heads. A phi3 file without
    the field (Phi-3, Phi-4) keeps Phi3Config's 1.0 and writes no flag."""
    mini = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
            "num_attention_heads": 24, "num_key_value_heads": 8, "vocab_size": 200064,
            "partial_rotary_factor": 0.75, "tie_word_embeddings": True}
    lay = Layout(dp=8, zero=1, mbs=1, grad_accum=8)
    assert _flag(_hf_script(tmp_path, mini, 8, lay)[0], "--rotary-percent") == "0.75"
    whole = {k: v for k, v in mini.items() if k != "partial_rotary_factor"}
    assert "--rotary-percent" not in _hf_script(tmp_path, whole, 8, lay)[0]


DEEPSEEK_V2 = {"model_type": "deepseek_v2", "hidden_size": 5120, "intermediate_size": 12288, "num_hidden_layers": 60,
               "num_attention_heads": 128, "vocab_size": 102400, "n_routed_experts": 160, "num_experts_per_tok": 6,
               "moe_intermediate_size": 1536, "n_shared_experts": 2, "first_k_dense_replace": 1,
               "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
               "v_head_dim": 128, "n_group": 8, "topk_group": 3, "topk_method": "group_limited_greedy",
               "routed_scaling_factor": 16.0, "norm_topk_prob": False}


def test_megatron_routes_as_deepseek_and_glm_do(tmp_path):
    """DeepSeek-V3 picks its 8 experts from the best 4 of 8 groups, each scored by the sum of its
    top 2 (noaux_tc), and scales the weights by 2.5: Megatron's group_limited_topk scores a group
    by its top 8 // 4 = 2, the same rule, so the script writes all three numbers where it left a
    caveat asking for them. Kimi K2 and GLM-4.5-Air have one group (no limit); Kimi scales by
    2.827, Air by 1.0, no factor at all. DeepSeek-V2-Lite weighs its top 6 by the softmax over all experts, not renormalised
    (--moe-router-pre-softmax). DeepSeek-V2 scores a group by its best expert, where Megatron
    would sum the top 6 // 3 = 2: no group flags, a caveat that says so, its scale 16 written."""
    big = Layout(tp=8, pp=8, dp=16, ep=32, zero=1, mbs=1, grad_accum=16, recompute="full")
    v3 = export("megatron", Target(build_job(model="deepseek-v3", gpus=1024), big))
    a = script_args(v3.files["megatron_pretrain.sh"])
    assert (_flag(a, "--moe-router-num-groups"), _flag(a, "--moe-router-group-topk"),
            _flag(a, "--moe-router-topk-scaling-factor")) == ("8", "4", "2.5")
    assert not any("group" in c for c in v3.caveats)
    kimi = script_args(export("megatron", Target(build_job(model="kimi-k2", gpus=1024), big)).files["megatron_pretrain.sh"])
    assert _flag(kimi, "--moe-router-topk-scaling-factor") == "2.827" and "--moe-router-num-groups" not in kimi
    glm = export("megatron", Target(build_job(model="glm-4.5-air", gpus=64),
                                    Layout(dp=64, ep=8, zero=1, mbs=1, grad_accum=1, recompute="full")))
    g = script_args(glm.files["megatron_pretrain.sh"])
    assert "--moe-router-topk-scaling-factor" not in g and "--moe-router-num-groups" not in g
    assert not any("routing" in c for c in glm.caveats)
    lite = script_args(export("megatron", Target(build_job(model="deepseek-v2-lite", gpus=8),
                                                 Layout(dp=8, ep=8, zero=1, mbs=1, grad_accum=8))).files["megatron_pretrain.sh"])
    assert "--moe-router-pre-softmax" in lite and "--moe-router-topk-scaling-factor" not in lite
    assert "--moe-router-num-groups" not in lite
    v2, caveats = _hf_script(tmp_path, DEEPSEEK_V2, 1024, big)
    assert "--moe-router-pre-softmax" in v2 and _flag(v2, "--moe-router-topk-scaling-factor") == "16.0"
    assert "--moe-router-num-groups" not in v2 and any("scores a group by its top 2" in c for c in caveats)
    # the same groups scored by their best expert with top 3 of 3 groups: 3 // 3 = 1, Megatron's rule
    v2, caveats = _hf_script(tmp_path, dict(DEEPSEEK_V2, num_experts_per_tok=3), 1024, big)
    assert (_flag(v2, "--moe-router-num-groups"), _flag(v2, "--moe-router-group-topk")) == ("8", "3")
    assert not any("group-limited" in c for c in caveats)


NORM_LAYOUT = Layout(dp=8, zero=1, mbs=1, grad_accum=8)


def test_exports_build_the_models_norm_epsilon(tmp_path):
    """Qwen, Gemma and DeepSeek normalise with eps 1e-6 (config.json rms_norm_eps); Megatron's
    default is 1e-5 (TransformerConfig.layernorm_epsilon) and Nanotron's config was written 1e-5
    for every model. Megatron gets --norm-epsilon where the model's is not its default, Nanotron the
    model's rms_norm_eps; a Llama (1e-5) is left as it was."""
    for name, eps in (("qwen3-8b", 1e-6), ("gemma-2-9b", 1e-6), ("qwen2.5-7b", 1e-6), ("llama-3.1-8b", None)):
        tg = Target(build_job(model=name, gpus=8), NORM_LAYOUT)
        a = script_args(export("megatron", tg).files["megatron_pretrain.sh"])
        assert (float(_flag(a, "--norm-epsilon")) if eps else _flag(a, "--norm-epsilon")) == eps, name
        if name != "gemma-2-9b":
            nt = yaml.safe_load(export("nanotron", tg).files["nanotron.yaml"].split("\n", 1)[1])
            assert nt["model"]["model_config"]["rms_norm_eps"] == (eps or 1e-5), name
    # a config.json's own epsilon, not its type's usual one
    cfg = dict(LLAMA4_SCOUT, rms_norm_eps=1e-06)
    a, _ = _hf_script(tmp_path, cfg, 64, LLAMA4_LAYOUT)
    assert float(_flag(a, "--norm-epsilon")) == 1e-6



def test_torchtitan_says_where_its_registry_entry_builds_other_numerics():
    """torchtitan 0.3 builds the model from a registry function the command line cannot change:
    its deepseek_v3_671b keeps RMSNorm's default eps 1e-5 (DeepSeek-V3: 1e-6), and its llama3
    entries apply Llama 3.1's RoPE scaling, which Llama 3 (8B, 70B) does not have. Both are said;
    Llama 3.1 and Qwen3, whose entries match, get neither."""
    def said(model, gpus, lay):
        return [c for c in export("torchtitan", Target(build_job(model=model, gpus=gpus, framework="fsdp"),
                                                       lay)).caveats if "numerics" in c or "eps" in c]
    dsv3 = said("deepseek-v3", 256, Layout(dp=256, ep=64, zero=3, mbs=1, grad_accum=1, recompute="full"))
    assert len(dsv3) == 1 and "eps 1e-05" in dsv3[0] and "trains with 1e-06" in dsv3[0]
    l3 = said("llama-3-8b", 8, NORM_LAYOUT)
    assert len(l3) == 1 and "applies llama3 RoPE scaling; llama-3-8b has none" in l3[0]
    assert said("llama-3.1-8b", 8, NORM_LAYOUT) == [] and said("qwen3-32b", 16, Layout(dp=16, zero=3, mbs=1,
                                                                                        grad_accum=2)) == []
    qwen = said("qwen2.5-7b", 8, NORM_LAYOUT)
    assert len(qwen) == 1 and "RMSNorm.Config eps=1e-06" in qwen[0]


def test_nanotron_counts_an_o_proj_bias_it_does_not_build():
    """Nanotron's Llama builds o_proj without a bias (models/llama.py CausalSelfAttention,
    bias=False), so a model with o_proj's bias (Seed-OSS's attention_out_bias, ModelSpec.o_bias)
    is another model: alone it is said, and beside q/k/v biases the parameter gap counts it too
    (Llama 3 8B: 32 layers x 4096 beside the q/k/v biases' 32 x (4096 + 2 x 1024))."""
    import dataclasses
    from shardwise.kb.params import total_params
    base = build_job(model="llama-3-8b", gpus=8)
    lay = Layout(dp=8, zero=1, mbs=1, grad_accum=8)
    for update, fewer in (({"o_bias": True}, 32 * 4096),
                          ({"o_bias": True, "qkv_bias": True}, 32 * (4096 + 4096 + 2 * 1024))):
        m = base.model.model_copy(update=update)
        caveats = export("nanotron", Target(dataclasses.replace(base, model=m), lay)).caveats
        said = [c for c in caveats if "Nanotron's Llama builds" in c]
        assert len(said) == 1 and "no attention biases" in said[0], caveats
        assert f"{fewer:,} parameters fewer than llama-3-8b's {total_params(m):,}" in said[0], said


def test_megatron_says_it_turns_off_the_dropout_a_config_trains_with(tmp_path):
    """A config.json that trains with dropout (Seed-OSS's 0.1 defaults, an attention_dropout) gets a
    script without it, as the Megatron estimate sizes it: the caveat says so; one without dropout
    has no such caveat."""
    cfg = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
           "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 32000}
    lay = Layout(dp=8, zero=1, mbs=1)
    a, caveats = _hf_script(tmp_path, dict(cfg, attention_dropout=0.1), 8, lay)
    assert _flag(a, "--attention-dropout") == "0.0"
    assert [c for c in caveats if "attention_dropout 0.1" in c and "turned off here" in c]
    assert not [c for c in _hf_script(tmp_path, cfg, 8, lay)[1] if "dropout" in c]


def test_torchtitan_says_which_models_its_modules_cannot_build():
    """A model with no torchtitan registry entry was told to write a config_registry function with
    its shape, even where no torchtitan 0.3 block builds it. From the spec's fields, the caveat now
    names what no module has (Gemma 2's sandwich norms, soft-capping and GeGLU; Llama 4's chunked
    attention and NoPE layers; Phi-4-mini's partial and longrope RoPE) or the module to write the
    entry in; a sliding window shorter than the sequence is built with VarlenAttention's window,
    which torchtitan refuses under context parallelism."""
    def said(model, seq_len=4096, cp=1, gpus=8):
        lay = Layout(dp=gpus // cp, cp=cp, zero=3, mbs=1, grad_accum=1)
        job = build_job(model=model, gpus=gpus, framework="fsdp", seq_len=seq_len)
        return [c for c in export("torchtitan", Target(job, lay)).caveats if "registry entry" in c]
    for model, gaps in (("gemma-2-9b", ("sandwich norms", "soft-capping at 50", "soft-capping at 30", "GEGLU MLP")),
                        ("llama-4-scout", ("chunked attention (chunks of 8192 on 36 layers)",
                                           "12 layers without RoPE")),
                        ("phi-4-mini", ("RoPE on 0.75 of each head", "longrope RoPE scaling")),
                        ("olmo-2-7b", ("q/k norms over whole projections",)),
                        ("granite-3.3-8b", ("multipliers",))):
        caveat, = said(model)
        assert "torchtitan 0.3 has no module for" in caveat and "style of" not in caveat, caveat
        assert all(g in caveat for g in gaps), (model, caveat)
        assert "window" not in caveat and "RMSNorm.Config eps" not in " ".join(said(model)), caveat
    for model, where in (("qwen2.5-7b", "llama3"), ("mixtral-8x7b", "qwen3"), ("deepseek-v2-lite", "deepseek_v3"),
                         ("qwen3-8b", "qwen3")):
        caveat, = said(model)
        assert "no module" not in caveat and f"in the style of {where}'s" in caveat, caveat
    mistral, = said("mistral-7b", seq_len=8192)
    assert "window_size=(4095, 0)" in mistral and "context parallelism" not in mistral
    assert "refuses varlen attention with context parallelism" in said("mistral-7b", seq_len=8192, cp=2)[0]
    # Ministral's 32,768-token window slides nothing at 8K tokens: plain causal attention builds it
    assert "window" not in said("ministral-8b", seq_len=8192)[0]


def test_megatron_builds_config_json_vocabulary_rows():
    """Megatron pads the tokenizer's vocabulary to a multiple of 128 x TP unless the script gives
    --padded-vocab-size: Llama 3's 128,256 became 129,024 rows at TP 8, and Qwen's tokenizer (151,665
    tokens) fewer rows than its checkpoint's 151,936. The script now passes config.json's vocabulary,
    which the estimate sizes and a fine-tune's checkpoint holds; where TP cannot split it evenly
    (Granite's 49,159 at TP 2) Megatron's padding stays and is said, with the checkpoint for a fine-tune."""
    for model, tp in (("llama-3-8b", 8), ("qwen3-8b", 1), ("deepseek-v3", 8)):
        job = build_job(model=model, gpus=64)
        lay = Layout(tp=tp, dp=64 // tp, zero=1, sp=tp > 1, mbs=1, grad_accum=1, recompute="full")
        args = script_args(export("megatron", Target(job, lay)).files["megatron_pretrain.sh"])
        assert args[args.index("--padded-vocab-size") + 1] == str(job.model.vocab), model
    for training, checkpoint in (("pretrain", False), ("finetune", True)):
        job = build_job(model="granite-3.3-8b", gpus=8, training=training)
        out = export("megatron", Target(job, Layout(tp=2, dp=4, zero=1, sp=True, mbs=1, grad_accum=1)))
        assert "--padded-vocab-size" not in script_args(out.files["megatron_pretrain.sh"])
        said = [c for c in out.caveats if "vocabulary of 49,159" in c]
        assert len(said) == 1 and "49,408 rows" in said[0] and "249 more" in said[0], out.caveats
        assert ("checkpoint" in said[0]) == checkpoint


def test_megatron_leaves_out_a_window_the_sequence_does_not_reach():
    """A sliding window of at least the sequence masks nothing (Phi-4-mini's 262,144 tokens,
    Ministral's 32,768 at 8K), yet --window-size made Transformer Engine treat it as sliding-window
    attention and turn off cuDNN fused attention under context parallelism (cp_comm_type p2p): the
    flag is now written only where the window is shorter than the sequence (Mistral's 4,096 at 8K)."""
    lay = Layout(tp=2, cp=2, dp=2, zero=1, sp=True, mbs=1, grad_accum=1, recompute="full")
    for model, seq_len, window in (("phi-4-mini", 8192, None), ("ministral-8b", 8192, None),
                                   ("ministral-8b", 65536, "32767,0"), ("mistral-7b", 8192, "4095,0"),
                                   ("mistral-7b", 4096, None)):
        job = build_job(model=model, gpus=8, seq_len=seq_len)
        args = script_args(export("megatron", Target(job, lay)).files["megatron_pretrain.sh"])
        assert _flag(args, "--window-size") == window, (model, seq_len)


def test_flash2_on_sliding_windows_names_flash_attention_2_in_the_answer_and_the_script():
    """--attention flash2 sizes flash-attn 2's windowed kernel on Gemma 3's sliding layers as flash
    does flash-attn 3's, but only flash said which attn_implementation the user's from_pretrained
    needs: under flash2 the answer and the DeepSpeed / FSDP2 / Accelerate files said nothing, and
    transformers' default, sdpa, masks the windows densely. Both now name flash_attention_2."""
    from shardwise.kb.resolve import assumptions
    job = build_job(model="gemma-3-12b", gpus=16, training="finetune", framework="hf", seq_len=8192,
                    attention="flash2")
    said = [a for a in assumptions(job) if "sliding-window layers" in a]
    assert len(said) == 1 and "attn_implementation flash_attention_2)" in said[0], said
    out = export_all(Target(job, Layout(dp=16, zero=3, mbs=1, recompute="full")))
    for fw in ("deepspeed", "fsdp", "accelerate"):
        carried = [c for c in out[fw].get("caveats", []) if "sliding windows sized for a flash-attn kernel" in c]
        assert len(carried) == 1 and 'attn_implementation="flash_attention_2")' in carried[0], (fw, carried)
        assert "flash_attention_3" not in carried[0]


def test_an_amd_gpu_is_not_told_to_ask_for_flashattention_3_on_sliding_windows():
    """Gemma 3 12B under the Trainer at 8K on MI300X: the answer and the DeepSpeed / FSDP2 /
    Accelerate files told the user's from_pretrained to ask for attn_implementation
    "flash_attention_3" -- flash-attn's Hopper build, which ROCm's flash-attn does not have
    (Dao-AILab/flash-attention#1653: no flash_attn_interface on MI300X). On an AMD GPU both name
    flash_attention_2, ROCm's CK / Triton build; an H100 is still told flash_attention_3."""
    from shardwise.kb.resolve import assumptions

    def said(gpu):
        job = build_job(model="gemma-3-12b", gpus=16, gpu=gpu, training="finetune", framework="hf", seq_len=8192)
        answer = [a for a in assumptions(job) if "sliding-window layers" in a]
        out = export_all(Target(job, Layout(dp=16, zero=3, mbs=1, recompute="full")))
        files = [c for fw in ("deepspeed", "fsdp", "accelerate") for c in out[fw].get("caveats", [])
                 if "sliding windows sized for a flash-attn kernel" in c]
        return answer, files
    answer, files = said("mi300x")
    assert len(answer) == 1 and len(files) == 3, (answer, files)
    for text in answer + files:
        assert "flash_attention_3" not in text and "flash_attention_2" in text and "ROCm" in text, text
    answer, files = said("h100-sxm")
    assert all("flash_attention_3" in text for text in answer + files)


def test_the_answer_and_the_scripts_name_one_flash_attn_build_on_every_catalog_gpu():
    """Which flash-attn build a sliding-window model asks for was decided twice, in the answer's
    line and in the DeepSpeed / FSDP2 / Accelerate caveat, each branching on the GPU itself; now
    kb/frameworks.flash_attn_build decides it and both word it. On every catalog GPU, under flash
    and flash2, both name the build it returns -- flash_attention_2 under flash2, on the AMD GPUs
    and on Ampere and Ada; flash_attention_3 on Hopper alone, the only GPUs its build runs on;
    flash_attention_4 on Blackwell -- and neither names the other build except as the
    --attention flash2 choice. (Mistral 7B's head size, 128, is one FlashAttention-4 runs windows
    at; at 256 see the test below.)"""
    from shardwise.kb import catalog
    from shardwise.kb.frameworks import flash_attn_build
    from shardwise.kb.resolve import assumptions
    from shardwise.export import attention_carried
    builds = set()
    for name in catalog.gpu_names():
        for attention in ("flash", "flash2"):
            job = build_job(model="mistral-7b", gpus=8, gpu=name, training="finetune", framework="hf",
                            seq_len=8192, attention=attention)
            build = flash_attn_build(attention, job.cluster.gpu, job.model.hd)
            builds.add((job.cluster.gpu.arch, attention, build.impl))
            answer = [a for a in assumptions(job) if "sliding-window layers" in a]
            assert len(answer) == 1 and f"(attn_implementation {build.impl}" in answer[0], (name, answer)
            for fw in ("deepspeed", "fsdp", "accelerate"):
                carried = attention_carried(fw, job)
                assert len(carried) == 1 and f'attn_implementation="{build.impl}"' in carried[0], (name, fw, carried)
            gpu = job.cluster.gpu
            for text in answer + carried:
                assert ("--attention flash2" in text) == (build.impl in ("flash_attention_3", "flash_attention_4")), (name, text)
                assert ("ROCm" in text) == (gpu.rocm and attention == "flash"), (name, text)
                assert ("built for Hopper alone" in text) == (attention == "flash" and not gpu.rocm
                                                             and gpu.arch != "hopper"), (name, text)
    flash = {("ampere", "flash_attention_2"), ("ada", "flash_attention_2"), ("hopper", "flash_attention_3"),
             ("blackwell", "flash_attention_4"), ("cdna3", "flash_attention_2"), ("cdna4", "flash_attention_2")}
    assert builds == {(a, "flash", impl) for a, impl in flash} | {(a, "flash2", "flash_attention_2") for a, _ in flash}


def test_torchtitan_cannot_build_ministral3s_position_scaled_query_past_its_original_positions(tmp_path):
    """Ministral 3 multiplies the query by 1 + 0.1 x log(1 + floor(position / 16,384)): 1 below
    16,384 positions, so llama3's attention builds it there, but past them no torchtitan 0.3
    attention scales the query by position, and the caveat told the user a llama3-style entry
    builds it. It now names the scaling as what no module has, at 32K and not at 8K."""
    import json
    cfg = {"model_type": "ministral3", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 34,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072}
    (tmp_path / "config.json").write_text(json.dumps(cfg))

    def said(seq_len):
        job = build_job(hf_config=str(tmp_path / "config.json"), gpus=8, framework="fsdp", seq_len=seq_len)
        caveat, = [c for c in export("torchtitan", Target(job, Layout(dp=8, zero=3, mbs=1, grad_accum=1))).caveats
                   if "registry entry" in c]
        return caveat
    assert "in the style of llama3's" in said(8192) and "query scaled" not in said(8192)
    long = said(32768)
    assert "no module for" in long and "style of" not in long
    assert "the query scaled by 1 + 0.1 x log(1 + floor(position / 16,384)) past 16,384 positions" in long, long


def test_ministral3_with_no_query_scaling_is_built_as_llama3_is(tmp_path):
    """A Ministral 3 file with llama_4_scaling_beta 0 multiplies its query by 1 + 0 x log(...) = 1 at
    every position, as llama3's attention does: the torchtitan caveat points at a llama3-style entry
    at 32K rather than naming a query scaling the model does not do."""
    import json
    rope = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0, "original_max_position_embeddings": 16384,
            "llama_4_scaling_beta": 0.0}
    cfg = {"model_type": "ministral3", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 34,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
           "rope_parameters": rope}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    job = build_job(hf_config=str(tmp_path / "config.json"), gpus=8, framework="fsdp", seq_len=32768)
    caveat, = [c for c in export("torchtitan", Target(job, Layout(dp=8, zero=3, mbs=1, grad_accum=1))).caveats
               if "registry entry" in c]
    assert "in the style of llama3's" in caveat and "query scaled" not in caveat, caveat
    # Megatron's caveat about the position scaling likewise, with beta 0 and with beta 0.1
    megatron = lambda b: [c for c in export("megatron", Target(build_job(hf_config=str(write(b)), gpus=8,
                                                                         seq_len=32768),
                                                               Layout(dp=8, zero=1, mbs=1, grad_accum=1))).caveats
                          if "query scaling by position" in c]

    def write(beta):
        path = tmp_path / f"b{beta}" / "config.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(dict(cfg, rope_parameters=dict(rope, llama_4_scaling_beta=beta))))
        return path
    assert megatron(0.0) == [] and len(megatron(0.1)) == 1


@pytest.mark.parametrize("gpus,training", [(1, "finetune"), (2, "lora")])
def test_the_trainer_at_zero0_launches_its_own_data_parallelism(gpus, training):
    """At ZeRO-0 the transformers Trainer runs the model itself (DDP on several GPUs), and that is
    what the estimate sizes (fp32 weights under autocast, DDP's gradient buckets). Passing
    --deepspeed would start DeepSpeed's ZeRO-0 engine instead (bf16 weights, an fp32 master in its
    optimizer wrapper): another peak. The launch line must start the Trainer without it, and the
    caveat must say what the JSON would run."""
    job = build_job(model="qwen2.5-1.5b", gpus=gpus, gpu="a100-80gb", seq_len=2048, training=training)
    lay = Layout(dp=gpus, zero=0, mbs=2, grad_accum=64 // gpus, recompute="full")
    check_layout(job, lay)
    ex = export("deepspeed", Target(job, lay))
    run = [x for x in ex.files["launch.sh"].splitlines() if x and not x.startswith("#")]
    assert len(run) == 1 and "--deepspeed" not in run[0], run
    assert run[0].startswith(f"torchrun --nnodes 1 --nproc-per-node {gpus} train.py ")
    assert f"--per_device_train_batch_size 2 --gradient_accumulation_steps {64 // gpus} --bf16 --gradient_checkpointing" \
        in run[0]
    said = [c for c in ex.caveats if "DeepSpeed's ZeRO-0 engine" in c]
    assert len(said) == 1 and "GiB a GPU as it runs" in said[0]
    # ZeRO 1-3 is DeepSpeed's under the Trainer: those still launch it with the JSON
    sharded = export("deepspeed", Target(job, Layout(dp=gpus, zero=3, mbs=2, grad_accum=64 // gpus,
                                                     recompute="full"))) if gpus > 1 else None
    assert sharded is None or "--deepspeed ds_config.json" in sharded.files["launch.sh"]


@pytest.mark.parametrize("gpus,kind", [(1, "NO"), (2, "MULTI_GPU")])
def test_accelerate_runs_the_trainers_own_ddp_at_zero0(gpus, kind):
    """The Accelerate config of a Trainer job at ZeRO-0 launches what the estimate sized: torch DDP
    (Accelerate's MULTI_GPU; one process: NO), not FSDP2 over a 1-wide shard, which keeps every
    parameter's bf16 copy from forward to backward (Llama 3.2 3B on one H100: 63.5 GiB against the
    Trainer's 68.5)."""
    job = build_job(model="qwen2.5-1.5b", gpus=gpus, gpu="a100-80gb", seq_len=2048, training="lora")
    lay = Layout(dp=gpus, zero=0, mbs=2, grad_accum=64 // gpus, recompute="full")
    ex = export("accelerate", Target(job, lay))
    acc = yaml.safe_load(ex.files["accelerate_config.yaml"].split("\n", 1)[1])
    assert acc["distributed_type"] == kind and acc["num_processes"] == gpus and acc["mixed_precision"] == "bf16"
    assert "fsdp_config" not in acc and "parallelism_config" not in acc
    assert any("--gradient_checkpointing" in c for c in ex.caveats)


def test_the_trainer_at_zero0_in_pure_bf16_names_deepspeeds_fp32_masters():
    """pure-bf16 at ZeRO-0 under the Trainer: the caveat on the JSON gives DeepSpeed's ZeRO-0 run as
    it holds it (fp32 masters and states, the bf16 recipe), and says no more of a DeepSpeed run
    that the torchrun line does not start."""
    from shardwise.export.target import memory_as_run
    job = build_job(model="qwen2.5-1.5b", gpus=1, gpu="a100-80gb", seq_len=2048, training="finetune",
                    precision="pure-bf16")
    tg = Target(job, Layout(dp=1, zero=0, mbs=4, grad_accum=32, recompute="none"))
    ex = export("deepspeed", tg)
    said = [c for c in ex.caveats if "DeepSpeed's ZeRO-0 engine" in c]
    assert len(said) == 1 and memory_as_run(tg, precision="bf16", framework="deepspeed") in said[0]
    assert not any(c.startswith("pure-bf16 at ZeRO-0") for c in ex.caveats)
    assert any("torch_dtype=torch.bfloat16" in c for c in ex.caveats)


def test_megatron_cp_on_sliding_windows_or_sinks_runs_the_all_to_all_transformer_engine_allows():
    """Transformer Engine's CP ring (Megatron's default --cp-comm-type p2p) asserts at the first
    forward on a sliding window that masks ("Context parallelism does not support sliding window
    attention with cp_comm_type='p2p'") and on learnable softmax (gpt-oss's sinks: a2a only;
    context_parallel.py attn_forward_func_with_cp). The export writes a2a there, which splits
    the heads: a CP that does not divide a rank's KV heads is refused, and the step times the
    all-to-alls, not a ring."""
    from shardwise.kb.perf import step_time
    from shardwise.kb.perf.comm import group_link, strides
    from shardwise.kb.perf.step import ulysses_seconds
    from shardwise.kb.errors import InputError
    from shardwise.kb.resolve import resolve_layout
    job = build_job(model="gpt-oss-120b", gpus=64, seq_len=32768, framework="megatron", global_batch=32)
    lay = resolve_layout(job, "tp=1,cp=8,ep=8,zero=1,mbs=1,recompute=full")[0]
    args = script_args(export("megatron", Target(job, lay)).files["megatron_pretrain.sh"])
    assert args[args.index("--cp-comm-type") + 1] == "a2a"
    tokens = 32768 / 8
    by_hand = ulysses_seconds(job.model, lay, tokens, group_link(job.cluster, 8, strides(lay)["cp"]))
    assert step_time(job, lay).comm_by_kind_s["cp"] == pytest.approx(job.model.layers * lay.grad_accum * by_hand,
                                                                     rel=1e-6)
    # 8 KV heads over tp 2: 4 a rank, which cp 8 does not divide
    with pytest.raises(InputError, match="cp=8.*KV heads"):
        resolve_layout(job, "tp=2,cp=8,ep=8,zero=1,mbs=1,recompute=full")
    dense = build_job(model="llama-3-8b", gpus=64, seq_len=32768, framework="megatron", global_batch=32)
    lay = resolve_layout(dense, "tp=1,cp=8,zero=1,mbs=1,recompute=full")[0]
    assert "--cp-comm-type" not in script_args(export("megatron", Target(dense, lay)).files["megatron_pretrain.sh"])


def test_torchtitan_runs_async_tp_exactly_where_the_step_time_hides_tp():
    """The step time hides part of torchtitan's TP only under async TP, which needs torch.compile
    and symmetric memory over NVLink (frameworks.torchtitan_async_tp). The export must turn it on
    there (--compile.enable_async_tensor_parallel, with --compile.enable, which torchtitan's
    CompileConfig requires) and off on a PCIe node -- where llama3_405b's registry entry would
    otherwise ask for it -- and say nothing without TP."""
    def flags(model, gpu, tp):
        job = build_job(model=model, gpus=8, gpu=gpu, seq_len=4096, global_batch=64, framework="fsdp")
        lay = Layout(tp=tp, pp=1, dp=8 // tp, zero=3, sp=tp > 1, mbs=1, grad_accum=64 // (8 // tp))
        return export("torchtitan", Target(job, lay)).files["torchtitan_train.sh"]
    nvlink = flags("llama-3-8b", "h100-sxm", 2)
    assert "--compile.enable \\" in nvlink and "--compile.enable_async_tensor_parallel" in nvlink
    # deepseek_v3_671b's entry compiles the loss alone, and async TP needs the model compiled
    assert "--compile.components model,loss" in flags("deepseek-v3", "h100-sxm", 2)
    pcie = flags("llama-3.1-405b", "l40s", 8)
    assert "--compile.no-enable-async-tensor-parallel" in pcie and "--compile.enable \\" not in pcie
    assert "async" not in flags("llama-3-8b", "h100-sxm", 1)


def test_torchtitan_keeps_a_pipelined_stage_unsharded_as_the_estimate_sized_it():
    """Under PP the estimate sizes ZeRO-3 as torchtitan runs it by default: the stage's parameters
    stay unsharded from forward to backward (fsdp_reshard_after_forward "default" resolves to
    False under PP, torchtitan distributed/fsdp.py get_fsdp_reshard_after_forward_policy) and are
    gathered once a step (kb/perf/step._dp_time, kb/memory/states.py). The export wrote "always",
    which re-gathers every micro-batch's forward and backward; without PP ZeRO-3 is "always"."""
    job = build_job(model="llama-3-70b", gpus=64, seq_len=4096, global_batch=128, framework="fsdp")

    def reshard(lay):
        text = export("torchtitan", Target(job, lay)).files["torchtitan_train.sh"]
        return re.search(r"--parallelism.fsdp_reshard_after_forward (\w+)", text).group(1)
    assert reshard(Layout(tp=8, pp=4, dp=2, zero=3, sp=True, mbs=1, grad_accum=64, recompute="full")) == "never"
    assert reshard(Layout(tp=8, pp=1, dp=8, zero=3, sp=True, mbs=1, grad_accum=16, recompute="full")) == "always"
    # the FSDP2 module the user's own pipeline script shards with, likewise
    module = export("fsdp", Target(job, Layout(tp=8, pp=4, dp=2, zero=3, sp=True, mbs=1, grad_accum=64,
                                                recompute="full"))).files["fsdp2_sharding.py"]
    assert "RESHARD_AFTER_FORWARD = False" in module


def test_a_blackwell_gpu_is_told_flash_attention_2_for_sliding_windows_at_head_size_256():
    """FlashAttention-4 on Blackwell runs head size 256 only in its dedicated kernel, which
    refuses local attention forward and backward (flash-attn flash_attn/cute/
    sm100_hd256_2cta_fmha_forward.py: "does not support local attention yet";
    sm100_hd256_2cta_fmha_backward.py). Gemma 3 12B (head_dim 256) on B200, B300, GB200 and
    GB300 was told attn_implementation flash_attention_4, which fails on its first sliding-window
    layer; it is told flash-attn 2, which runs windows at 256 there, and that --attention flash2
    times it. Mistral 7B (head_dim 128), which FA4 runs, keeps flash_attention_4."""
    from shardwise.kb import catalog
    from shardwise.kb.resolve import assumptions
    from shardwise.export import attention_carried
    blackwell = [n for n in catalog.gpu_names() if catalog.gpu(n).arch == "blackwell"]
    assert len(blackwell) >= 4
    for name in blackwell:
        for model, impl in (("gemma-3-12b", "flash_attention_2"), ("mistral-7b", "flash_attention_4")):
            job = build_job(model=model, gpus=8, gpu=name, training="finetune", framework="hf", seq_len=16384,
                            attention="flash")
            answer = [a for a in assumptions(job) if "sliding-window layers" in a]
            carried = [c for fw in ("deepspeed", "fsdp", "accelerate") for c in attention_carried(fw, job)]
            assert len(answer) == 1 and len(carried) == 3, (name, model, answer, carried)
            for text in answer + carried:
                assert impl in text and (impl == "flash_attention_4") == ("flash_attention_4" in text), (name, text)
                assert "--attention flash2" in text, (name, text)
                assert ("head size 256" in text) == (model == "gemma-3-12b"), (name, text)


def _trainer_ulysses(gpu="h100-sxm", gpus=16, **kw):
    from shardwise.kb.layout import Layout
    job = build_job(model="llama-3.1-8b", gpus=gpus, gpus_per_node=8, gpu=gpu, training="finetune", seq_len=8192,
                    framework="hf", **kw)
    lay = Layout(dp=gpus // 2, cp=2, zero=3, mbs=1, grad_accum=128 // (gpus // 2))
    return export("deepspeed", Target(job, lay))


def test_the_trainers_ulysses_is_turned_on_where_the_estimate_sized_it():
    """cp=2 under the Trainer is DeepSpeed's Ulysses, sized with each rank holding half of every
    sequence; ds_config.json's sequence_parallel_size alone builds no sequence-parallel group (the
    Trainer runs Ulysses only through Accelerate's ParallelismConfig), so every rank would have
    held whole sequences. launch.sh sets the variables Accelerate reads, and on two nodes hands
    them to the second through .deepspeed_env, which DeepSpeed's launcher passes on."""
    ex = _trainer_ulysses()
    launch = ex.files["launch.sh"].splitlines()
    for line in ("export ACCELERATE_USE_PARALLELISM_CONFIG=true", "export PARALLELISM_CONFIG_SP_SIZE=2",
                 "export PARALLELISM_CONFIG_SP_BACKEND=deepspeed",
                 "export PARALLELISM_CONFIG_SP_ATTN_IMPLEMENTATION=flash_attention_3"):
        assert line in launch, line
    handed = next(x for x in launch if x.endswith("> .deepspeed_env"))
    assert '"PARALLELISM_CONFIG_SP_SIZE=$PARALLELISM_CONFIG_SP_SIZE"' in handed
    assert launch.index(handed) < next(i for i, x in enumerate(launch) if x.startswith("deepspeed "))
    assert json.loads(ex.files["ds_config.json"])["sequence_parallel_size"] == 2
    # one node: nothing to hand on; Blackwell's FlashAttention-4 is not Accelerate's: flash-attn 2, said
    one = _trainer_ulysses(gpu="b200", gpus=8)
    assert ".deepspeed_env" not in one.files["launch.sh"]
    assert "export PARALLELISM_CONFIG_SP_ATTN_IMPLEMENTATION=flash_attention_2" in one.files["launch.sh"]
    assert any("not flash_attention_4" in c for c in one.caveats)


def test_a_multi_node_deepspeed_launch_hands_the_allocator_to_every_node():
    """An export line reaches the first node alone: DeepSpeed's launcher gives the others only
    NCCL_*, PYTHON*, ... and .deepspeed_env, so expandable segments were on one node of two."""
    job = build_job(model="llama-3.1-8b", gpus=16, gpus_per_node=8, gpu="h100-sxm", training="finetune",
                    seq_len=4096, framework="hf", allocator="expandable")
    from shardwise.kb.layout import Layout
    launch = export("deepspeed", Target(job, Layout(dp=16, zero=3, mbs=1, grad_accum=8))).files["launch.sh"]
    assert '"PYTORCH_CUDA_ALLOC_CONF=$PYTORCH_CUDA_ALLOC_CONF" "PYTORCH_ALLOC_CONF=$PYTORCH_ALLOC_CONF" > .deepspeed_env' \
        in launch
    one = build_job(model="llama-3.1-8b", gpus=8, gpu="h100-sxm", training="finetune", seq_len=4096, framework="hf",
                    allocator="expandable")
    assert ".deepspeed_env" not in export("deepspeed", Target(one, Layout(dp=8, zero=3, mbs=1, grad_accum=16))).files["launch.sh"]


def test_full_recomputation_is_said_where_the_job_turns_it_on():
    """A pp=1 Trainer job's DeepSpeed (and Accelerate-on-DeepSpeed) export said full recomputation
    came from 'gradient_checkpointing_enable(), or the pipeline's activation_checkpoint_interval',
    a pipeline it does not have, where the launch line passes the Trainer's --gradient_checkpointing."""
    from shardwise.kb.layout import Layout
    job = build_job(model="llama-3.1-8b", gpus=8, gpu="a100-80gb", training="finetune", seq_len=4096)
    tg = Target(job, Layout(dp=8, zero=3, mbs=4, grad_accum=4, recompute="full"))
    for name in ("deepspeed", "accelerate"):
        said = [c for c in export(name, tg).caveats if "full recomputation" in c]
        assert said and all("--gradient_checkpointing" in c and "pipeline" not in c for c in said), (name, said)
    assert "--gradient_checkpointing" in export("deepspeed", tg).files["launch.sh"]
