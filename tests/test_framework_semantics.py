"""Exports, third layer: what each framework would build from the export is the layout shardwise
printed, or the export says where it is not.

For a grid of jobs (dense and MoE; TP/PP/VPP/CP/EP; ZeRO 0-3 and HSDP; every recomputation;
bf16, pure-bf16, fp8; LoRA/QLoRA; long context; a batch in tokens; odd GPU counts; several
nodes) every framework's export is read back by that framework's own code
(tests/frameworks/semantics.py, in SHARDWISE_FRAMEWORK_VENV) and each field it builds -- world
size, degrees, ZeRO stage or sharding, micro-batch, accumulation, global batch, sequence,
recomputation and its modules, precision, optimizer, train steps, the launch's nodes and
processes per node -- is compared with the layout and job. A field that differs must be named
by one of the export's caveats ("cannot express: ..."); a framework that cannot take the job
refuses it (export_all's "refused"). Nanotron's loader is not installable (test_framework_parsers),
so its YAML is read here as its loader would map it.
"""
import functools
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from shardwise.export import Target, export_all, recompute_modules
from shardwise.export.deepspeed import trainer_runs_itself
from shardwise.kb.build import build_job
from shardwise.kb.layout import Layout

HERE = Path(__file__).parent / "frameworks"
VENV = os.environ.get("SHARDWISE_FRAMEWORK_VENV", "")
PY = Path(VENV) / "bin" / "python" if VENV else None

# (job settings, layout or None for the recommendation)
GRID = {
    "70b-64-recommended": (dict(model="llama-3-70b", gpus=64, seq_len=8192, token_budget="100B"), None),
    "8b-8-recommended": (dict(model="llama-3-8b", gpus=8, token_budget="10B"), None),
    "8b-12-odd-nodes": (dict(model="llama-3-8b", gpus=12, gpus_per_node=4), None),
    "8b-12-pp-slice": (dict(model="llama-3-8b", gpus=12, gpus_per_node=4),
                       Layout(pp=2, dp=6, zero=1, mbs=1, grad_accum=8, recompute="full")),
    "8b-24-tokens-batch": (dict(model="llama-3-8b", gpus=24, global_batch_tokens="4M", token_budget="20B"), None),
    "8b-pure-bf16": (dict(model="llama-3-8b", gpus=16, precision="pure-bf16", framework="fsdp"), None),
    "8b-pure-bf16-z0": (dict(model="llama-3-8b", gpus=8, precision="pure-bf16", framework="fsdp"),
                        Layout(dp=8, zero=0, mbs=1, grad_accum=8, recompute="full")),
    "8b-fp8-megatron": (dict(model="llama-3-8b", gpus=16, precision="fp8"), None),
    "8b-fp8-fsdp": (dict(model="llama-3-8b", gpus=16, precision="fp8", framework="fsdp"), None),
    "8b-lora": (dict(model="llama-3-8b", gpus=8, training="lora"), None),
    "70b-qlora": (dict(model="llama-3-70b", gpus=8, training="qlora"), None),
    "8b-finetune-hf": (dict(model="llama-3-8b", gpus=16, training="finetune", framework="hf"), None),
    "8b-128k-cp": (dict(model="llama-3-8b", gpus=32, seq_len="128k"), None),
    "8b-32k-hf-ulysses": (dict(model="llama-3-8b", gpus=16, training="finetune", seq_len=32768),
                          Layout(dp=4, cp=4, zero=3, mbs=1, grad_accum=8, recompute="full")),
    "70b-vpp": (dict(model="llama-3-70b", gpus=64, seq_len=8192),
                Layout(tp=4, pp=8, vp=5, dp=2, zero=1, sp=True, mbs=1, grad_accum=64, recompute="none")),
    "70b-tp-cp-z3": (dict(model="llama-3-70b", gpus=64, seq_len=8192),
                     Layout(tp=8, dp=4, cp=2, zero=3, sp=True, mbs=1, grad_accum=32, recompute="full")),
    "70b-z2-selective": (dict(model="llama-3-70b", gpus=64, seq_len=8192),
                         Layout(tp=2, pp=2, dp=16, zero=2, mbs=2, grad_accum=4, recompute="selective")),
    "70b-hsdp": (dict(model="llama-3-70b", gpus=64, seq_len=8192),
                 Layout(dp=64, zero=3, shard=8, mbs=1, grad_accum=2, recompute="full")),
    "70b-z1-hsdp": (dict(model="llama-3-70b", gpus=64, seq_len=8192),
                    Layout(tp=8, dp=8, zero=1, shard=4, sp=True, mbs=1, grad_accum=16, recompute="full")),
    "70b-modules": (dict(model="llama-3-70b", gpus=64, seq_len=8192),
                    Layout(tp=8, pp=2, dp=4, zero=1, sp=True, mbs=1, grad_accum=32, recompute="modules")),
    "70b-48-odd": (dict(model="llama-3-70b", gpus=48), None),
    "mixtral-ep": (dict(model="mixtral-8x7b", gpus=64),
                   Layout(tp=2, pp=2, dp=16, ep=8, zero=1, sp=True, mbs=1, grad_accum=4)),
    "mixtral-modules": (dict(model="mixtral-8x7b", gpus=64),
                        Layout(dp=64, ep=8, zero=1, mbs=1, grad_accum=1, recompute="modules")),
    "mixtral-recommended": (dict(model="mixtral-8x7b", gpus=32, token_budget="50B"), None),
    "qwen3-moe-deepspeed": (dict(model="qwen3-30b-a3b", gpus=16, framework="deepspeed"),
                            Layout(dp=16, ep=8, zero=0, mbs=1, grad_accum=4, recompute="full")),
    "qwen3-moe-fsdp": (dict(model="qwen3-30b-a3b", gpus=32, framework="fsdp"), None),
    "deepseek-v3": (dict(model="deepseek-v3", gpus=256, gpu="h200"), None),
    "405b-gb200": (dict(model="llama-3.1-405b", gpu="gb200", gpus=256, seq_len=8192, global_batch=768), None),
    "8b-fsdp-recommended": (dict(model="llama-3-8b", gpus=32, framework="fsdp", token_budget="1T"), None),
    "8b-deepspeed-recommended": (dict(model="llama-3-8b", gpus=16, framework="deepspeed"), None),
    "8b-sgd": (dict(model="llama-3-8b", gpus=8, optimizer="sgd"), Layout(dp=8, zero=1, mbs=1, grad_accum=8)),
    "8b-8bit-adam": (dict(model="llama-3-8b", gpus=8, optimizer="adamw-8bit", framework="deepspeed"), None),
    # the Trainer's own DDP at ZeRO-0 (torchrun, no --deepspeed), on one node and on two
    "8b-lora-trainer-ddp": (dict(model="llama-3-8b", gpus=8, training="lora"),
                            Layout(dp=8, zero=0, mbs=2, grad_accum=8, recompute="full")),
    "8b-lora-trainer-ddp-2-nodes": (dict(model="llama-3-8b", gpus=16, training="lora"),
                                    Layout(dp=16, zero=0, mbs=2, grad_accum=4, recompute="full")),
    "8b-z0-tp": (dict(model="llama-3-8b", gpus=16, framework="fsdp"),
                 Layout(tp=2, dp=8, zero=0, sp=True, mbs=2, grad_accum=4, recompute="selective")),
    "13b-multinode-ethernet": (dict(model="llama-2-13b", gpus=32, interconnect="ethernet"), None),
    # Llama 4: chunked attention on the RoPE layers (Scout, every layer MoE) and Maverick's MoE
    # every second layer, recommended and split into pipeline stages
    "llama4-scout-recommended": (dict(model="llama-4-scout", gpus=32), None),
    "llama4-maverick-recommended": (dict(model="llama-4-maverick", gpus=128), None),
    "llama4-maverick-pp": (dict(model="llama-4-maverick", gpus=128),
                           Layout(tp=2, pp=4, dp=16, ep=32, zero=1, sp=True, mbs=1, grad_accum=64, recompute="full")),
    # 62 layers over 9 stages of 6 chunks: Megatron's pipeline layout, torchtitan's own split
    "qwen3-coder-uneven-vpp": (dict(model="qwen3-coder-480b-a35b", gpus=144), None),
    "phi4-mini-partial-rope": (dict(model="phi-4-mini", gpus=8), None),
    "gemma3-12b-recommended": (dict(model="gemma-3-12b", gpus=8), None),
    "granite-3.3-8b-recommended": (dict(model="granite-3.3-8b", gpus=8), None),
    # config.json files: Mistral Small 3.2 under its Pixtral wrapper (mistral3), dots.llm1 (dots1)
    "mistral3-config": (dict(hf="MISTRAL_SMALL_32", gpus=16), None),
    "dots1-config": (dict(hf="DOTS_LLM1", gpus=64), None),
}

FRAMEWORKS = ("megatron", "deepspeed", "torchtitan", "accelerate", "fsdp")
# which words a caveat uses for a field it cannot carry
SAID = {"zero": ("zero", "hsdp", "fsdp"), "vp": ("vp=", "interleav", "virtual"), "cp": ("cp=", "ulysses"),
        "ep": ("ep=",), "pp": ("pp=",), "recompute": ("recomput", "checkpointing"), "precision": ("fp8", "float8", "pure-bf16"),
        "optimizer": ("--optimizer",), "shard": ("hsdp",), "sp": ("sequence parallel",), "world": ("pp=",),
        "steps": ("train steps",)}


def job_of(settings: dict, folder: Path):
    """The grid's job; hf= names a config.json of tests/test_params.py, written to folder."""
    if "hf" in settings:
        import test_params
        settings = dict(settings)
        key = settings.pop("hf")
        path = folder / key.lower() / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(getattr(test_params, key)))
        settings["hf_config"] = str(path)
    return build_job(**settings)


@functools.lru_cache(maxsize=1)
def targets():
    import tempfile
    from shardwise.decision.run import decide
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        jobs = {name: job_of(settings, Path(folder)) for name, (settings, _) in GRID.items()}
    for name, (settings, lay) in GRID.items():
        job = jobs[name]
        out[name] = Target(job, lay if lay is not None else decide(job, [], None).layout)
    return out


def expected(tg: Target) -> dict:
    """The layout and job as each framework would carry them."""
    lay, job = tg.layout, tg.job
    c, t = job.cluster, job.training
    return {"world": c.gpus, "tp": lay.tp, "pp": lay.pp, "vp": lay.vp, "cp": lay.cp, "ep": lay.ep, "dp": lay.dp,
            "zero": lay.zero, "shard": lay.shard_group if lay.zero else 1, "sp": lay.sp and lay.tp > 1,
            "mbs": lay.mbs, "ga": lay.grad_accum, "gbs": lay.global_batch, "seq": t.seq_len,
            "recompute": lay.recompute, "precision": t.precision, "optimizer": t.optimizer, "steps": tg.train_steps,
            "nodes": c.nodes, "per_node": c.gpus_per_node}


def compare(fw: str, b: dict, tg: Target) -> dict:
    """field -> (built, expected) for each field the framework built otherwise."""
    e, lay, m = expected(tg), tg.layout, tg.job.model
    got = {}
    if fw == "megatron":
        rc = {"none": (None, []), "selective": ("selective", ["core_attn"]), "full": ("full", []),
              "modules": ("selective", sorted(recompute_modules(m)))}[lay.recompute]
        instances = lay.dp * lay.cp // lay.shard if lay.zero == 1 and lay.shard else 1
        got = {k: (b[k], e[k]) for k in ("world", "tp", "pp", "vp", "cp", "ep", "dp", "zero", "sp", "mbs", "ga", "seq")}
        got.update(gbs=(b["gbs"], e["gbs"]), recompute=((b["recompute"], b["recompute_modules"]), rc),
                   shard=(b["optimizer_instances"], instances),
                   precision=((b["bf16"], b["fp8"] is not None), (True, e["precision"] == "fp8")),
                   optimizer=(b["optimizer"], "sgd" if e["optimizer"] == "sgd" else "adam"),
                   steps=(b["train_iters"], e["steps"] or 100000),
                   launch=((b["launch"]["nnodes"], b["launch"]["nproc_per_node"],
                            b["launch"]["rdzv_backend"] if e["nodes"] > 1 else None),
                           (str(e["nodes"]), e["per_node"], "c10d" if e["nodes"] > 1 else None)))
        if lay.recompute == "full":
            got["recompute_method"] = ((b["recompute_method"], b["recompute_num_layers"]), ("uniform", 1))
    elif fw == "deepspeed":
        zero = min(lay.zero, 1) if lay.pp > 1 else lay.zero
        got = {k: (b[k], e[k]) for k in ("mbs", "ga", "gbs", "dp")}
        got.update(zero=(b["zero"], lay.zero), zero_runs=(b["zero"], zero), cp=(b["ulysses"], lay.cp),
                   precision=((b["bf16"], b["bf16_master"]), (True, e["precision"] == "pure-bf16")),
                   ep=(b["autoep"] or lay.ep, lay.ep))
        if "launch" in b:
            ln = b["launch"]
            got["launch"] = ((ln["nnodes"], ln["nproc_per_node"], ln["hostfile"]),
                             (e["nodes"], e["per_node"], e["nodes"] > 1))
            got["steps"] = (ln["steps"], e["steps"])
            # the Trainer at ZeRO-0 runs its own DDP, as sized; ZeRO 1-3, Ulysses and AutoEP are DeepSpeed's
            got["launches_deepspeed"] = (ln["deepspeed"], not trainer_runs_itself(tg))
            if ln["trainer_mbs"] is not None:
                got.update(trainer_batch=((ln["trainer_mbs"], ln["trainer_ga"]), (e["mbs"], e["ga"])))
            if ln["trainer_mbs"] is None:
                got.update(tp=(ln["tp"], lay.tp), pp=(ln["pp"], lay.pp))
    elif fw == "torchtitan":
        got = {k: (b[k], e[k]) for k in ("world", "tp", "pp", "vp", "cp", "ep", "dp", "sp", "mbs", "ga", "gbs", "seq",
                                         "recompute", "steps")}
        got["steps"] = (b["steps"] if e["steps"] else None, e["steps"])
        got["zero"] = (b["reshard"], "always" if lay.zero == 3 and lay.pp == 1 else "never")
        got["shard"] = (b["dp_shard"] * b["cp"] if lay.zero else 1, e["shard"])
        got["precision"] = ((b["dtype"], b["param_dtype"], b["float8"]),
                            ("bfloat16" if e["precision"] == "pure-bf16" else "float32", "bfloat16",
                             e["precision"] == "fp8"))
        got["launch"] = ((b["ngpu"], b["launch"] and (b["launch"]["nnodes"], b["launch"]["nproc_per_node"])),
                         (e["per_node"], (str(e["nodes"]), e["per_node"]) if e["nodes"] > 1 else None))
        if e["optimizer"] in ("adamw", "adamw-fused", "adamw-foreach", "adamw-single"):
            got["optimizer"] = (b["optimizer"], "AdamW")
    elif fw == "accelerate":
        nodes = -(-b["processes"] // e["per_node"])
        got = {"world": (b["processes"], e["world"]), "launch": (b["machines"], nodes)}
        if b["type"] in ("MULTI_GPU", "NO"):
            # the Trainer's own DDP at ZeRO-0: every process a replica, as sized
            got.update(dp=(b["dp_replicate"], e["dp"]), ddp=(True, trainer_runs_itself(tg)),
                       precision=(b["precision"], {"bf16": "bf16", "fp8": "fp8", "pure-bf16": "no"}[e["precision"]]))
        elif b["type"] == "DEEPSPEED":
            got.update(zero=(b["zero"], lay.zero), mbs=(b["mbs"], e["mbs"]), ga=(b["ga"], e["ga"]),
                       dp=(b["dp"], e["dp"]))
        else:
            got.update(tp=(b["tp"], lay.tp), cp=(b["cp"], lay.cp), dp=(b["dp_replicate"] * b["dp_shard"], lay.dp),
                       zero=(b["reshard"], lay.zero == 3), shard=(b["dp_shard"] * b["cp"] if lay.zero else 1, e["shard"]),
                       recompute=(b["recompute"], lay.recompute != "none"),
                       precision=(b["precision"], {"bf16": "bf16", "fp8": "fp8", "pure-bf16": "no"}[e["precision"]]))
    elif fw == "fsdp":
        got = {k: (b[k], e[k]) for k in ("world", "tp", "pp", "cp", "dp", "mbs", "ga", "gbs", "recompute", "shard")}
        got["zero"] = (b["reshard"], lay.zero == 3 and lay.pp == 1)
        got["precision"] = ((b["param_dtype"], b["compute_dtype"]),
                            ("bfloat16" if e["precision"] == "pure-bf16" else "float32", "bfloat16"))
        got["precision_fp8"] = (False, e["precision"] == "fp8")      # the module has no FP8 setting
    return {k: v for k, v in got.items() if v[0] != v[1]}


def said(field: str, caveats: list) -> bool:
    words = SAID.get(field.split("_")[0], (field,))
    return any(w in c.lower() for c in caveats for w in words)


def nanotron_built(text: str) -> dict:
    """What Nanotron's loader reads from our YAML (its dataclasses' field names, section 3 of
    the reference): the degrees, the batch (Config.global_batch_size = mbs x accumulation x dp)."""
    y = yaml.safe_load(text)
    p, tok = y["parallelism"], y["tokens"]
    return {"world": p["dp"] * p["tp"] * p["pp"] * p["context_parallel_size"], "tp": p["tp"], "pp": p["pp"],
            "cp": p["context_parallel_size"], "ep": p["expert_parallel_size"], "dp": p["dp"],
            "mbs": tok["micro_batch_size"], "ga": tok["batch_accumulation_per_replica"], "seq": tok["sequence_length"],
            "gbs": tok["micro_batch_size"] * tok["batch_accumulation_per_replica"] * p["dp"],
            "steps": tok["train_steps"], "recompute": "full" if p["recompute_layer"] else "none",
            "zero": y["optimizer"]["zero_stage"],
            "precision": (y["model"]["dtype"], y["optimizer"]["accumulate_grad_in_fp32"])}


def nanotron_differs(tg: Target, text: str) -> dict:
    b, e, lay = nanotron_built(text), expected(tg), tg.layout
    got = {k: (b[k], e[k]) for k in ("world", "tp", "pp", "cp", "ep", "dp", "mbs", "ga", "seq", "gbs")}
    got.update(zero=(b["zero"], lay.zero), recompute=(b["recompute"], lay.recompute),
               precision=(b["precision"], ("bfloat16", e["precision"] != "pure-bf16")))
    if e["steps"]:
        got["steps"] = (b["steps"], e["steps"])
    if lay.vp > 1:
        got["vp"] = (1, lay.vp)
    return {k: v for k, v in got.items() if v[0] != v[1]}


def run_semantics(tgs: dict, tmp: Path) -> dict:
    items, exports = [], {}
    for name, tg in tgs.items():
        out = export_all(tg)
        exports[name] = out
        for fw in FRAMEWORKS:
            if out[fw].get("refused"):
                continue
            d = tmp / name / fw
            d.mkdir(parents=True)
            for f, text in out[fw]["files"].items():
                (d / f).write_text(text)
            items.append({"id": f"{name}/{fw}", "framework": fw, "dir": str(d), "world": tg.layout.world,
                          "dp": tg.layout.dp})
    (tmp / "items.json").write_text(json.dumps(items))
    env = dict(os.environ, PYTHONPATH=f"{HERE}:{Path(VENV) / 'megatron-core'}", DS_ACCELERATOR="cpu",
               TOKENIZERS_PARALLELISM="false")
    r = subprocess.run([str(PY), str(HERE / "semantics.py"), str(tmp / "items.json")], capture_output=True, text=True,
                       env=env, timeout=1800)
    built = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            built[row["id"]] = row
    assert len(built) == len(items), (r.stdout[-2000:], r.stderr[-3000:])
    return exports, built


def silent_differences(tgs: dict, exports: dict, built: dict) -> list[str]:
    """Every field a framework builds otherwise than the layout, with no caveat naming it."""
    bad = []
    for name, tg in tgs.items():
        for fw in FRAMEWORKS + ("nanotron",):
            ex = exports[name][fw]
            if ex.get("refused"):
                continue
            if fw == "nanotron":
                diff = nanotron_differs(tg, ex["files"]["nanotron.yaml"])
            else:
                row = built[f"{name}/{fw}"]
                if "error" in row:
                    bad.append(f"{name}/{fw}: the framework refused it: {row['error']}")
                    continue
                diff = compare(fw, row["built"], tg)
            bad += [f"{name}/{fw}: {k} built {v[0]!r}, layout {v[1]!r}" for k, v in diff.items()
                    if not said(k, ex["caveats"])]
    return bad


@pytest.mark.skipif(not (PY and PY.exists()), reason="framework parsers not installed: SHARDWISE_FRAMEWORK_VENV")
def test_every_framework_builds_the_layout_or_says_so(tmp_path):
    tgs = targets()
    exports, built = run_semantics(tgs, tmp_path)
    assert silent_differences(tgs, exports, built) == []


def test_nanotron_carries_the_layout_or_says_so():
    """Nanotron has no installable loader: its YAML, read as its loader maps it, against the grid."""
    tgs = targets()
    exports = {name: export_all(tg) for name, tg in tgs.items()}
    bad = []
    for name, tg in tgs.items():
        ex = exports[name]["nanotron"]
        if ex.get("refused"):
            continue
        diff = nanotron_differs(tg, ex["files"]["nanotron.yaml"])
        bad += [f"{name}: {k} {v}" for k, v in diff.items() if not said(k, ex["caveats"])]
    assert bad == []


if __name__ == "__main__":       # the checker as a script: every difference, said or not
    import sys
    import tempfile
    tgs = targets()
    with tempfile.TemporaryDirectory() as tmp:
        exports, built = run_semantics(tgs, Path(tmp))
    for name, tg in tgs.items():
        print(f"== {name}: {tg.layout.describe()}")
        for fw in FRAMEWORKS + ("nanotron",):
            ex = exports[name][fw]
            if ex.get("refused"):
                print(f"  {fw}: refused: {ex['refused'][:160]}")
                continue
            if fw == "nanotron":
                diff = nanotron_differs(tg, ex["files"]["nanotron.yaml"])
            elif "error" in built[f"{name}/{fw}"]:
                print(f"  {fw}: ERROR {built[f'{name}/{fw}']['error'][:300]}")
                continue
            else:
                diff = compare(fw, built[f"{name}/{fw}"]["built"], tg)
            for k, v in diff.items():
                print(f"  {fw}: {k} built {v[0]!r} vs {v[1]!r} [{'said' if said(k, ex['caveats']) else 'SILENT'}]")
    sys.exit(0)
