"""What each framework would build from our exports, read back through its own parsers.

    semantics.py ITEMS.json

ITEMS is a list of {"id", "framework", "dir", "world", "dp"}; for each one this prints a JSON
line {"id", "built": {...}} (or {"id", "error"}), the degrees, batch, sequence, recomputation,
precision, optimizer and launch that the framework's own code derives from the files in dir:
Megatron's parse_args + validate_args + TransformerConfig, DeepSpeedConfig (with an mpu of DP
ranks) and DeepSpeed's launcher parser, torchtitan's ConfigManager + ParallelDims, Accelerate's
launch path, the FSDP2 module's meshes on the fake process group, and torchrun's own argument
parser for the launch lines. One process for all items: each framework is imported once.
tests/test_framework_semantics.py compares the result with the layout shardwise printed.
"""
import contextlib
import io
import json
import os
import re
import shlex
import sys
import traceback

os.environ.setdefault("DS_ACCELERATOR", "cpu")


def torchrun(line: str) -> dict:
    """torchrun's own parser (torch.distributed.run) on a launch line's options."""
    from torch.distributed.run import get_args_parser
    words = shlex.split(line.replace("\\\n", " "), comments=True)
    words = words[words.index("torchrun") + 1:]
    a = get_args_parser().parse_args(words[:words.index(next(w for w in words if w.endswith(".py") or w == "-m"))]
                                     + ["x.py"])
    return {"nnodes": a.nnodes, "nproc_per_node": int(a.nproc_per_node), "rdzv_backend": a.rdzv_backend,
            "rdzv_endpoint": a.rdzv_endpoint}


def megatron(d, item):
    from megatron_args import parse
    script = os.path.join(d, "megatron_pretrain.sh")
    args, cfg = parse(script, str(item["world"]))
    text = open(script).read()
    sharding = {False: None}.get(args.use_megatron_fsdp, args.data_parallel_sharding_strategy)
    return {"world": args.world_size, "tp": args.tensor_model_parallel_size, "pp": args.pipeline_model_parallel_size,
            "vp": args.virtual_pipeline_model_parallel_size or 1, "cp": args.context_parallel_size,
            "ep": args.expert_model_parallel_size, "etp": args.expert_tensor_parallel_size, "dp": args.data_parallel_size,
            "zero": {None: 1 if args.use_distributed_optimizer else 0, "no_shard": 0, "optim": 1, "optim_grads": 2,
                     "optim_grads_params": 3}[sharding],
            "optimizer_instances": args.num_distributed_optimizer_instances, "sp": bool(args.sequence_parallel),
            "mbs": args.micro_batch_size, "gbs": args.global_batch_size,
            "ga": args.global_batch_size // (args.micro_batch_size * args.data_parallel_size),
            "seq": args.seq_length, "recompute": cfg.recompute_granularity, "recompute_method": cfg.recompute_method,
            "recompute_num_layers": cfg.recompute_num_layers,
            "recompute_modules": sorted(cfg.recompute_modules or []) if cfg.recompute_granularity == "selective" else [],
            "bf16": bool(args.bf16), "fp8": args.fp8, "fp8_recipe": args.fp8_recipe if args.fp8 else None,
            "fp8_param_gather": bool(args.fp8_param_gather), "optimizer": args.optimizer,
            "decoupled_weight_decay": getattr(args, "decoupled_weight_decay", True),
            "adam_beta1": args.adam_beta1, "adam_beta2": args.adam_beta2, "weight_decay": args.weight_decay,
            "sgd_momentum": args.sgd_momentum, "train_iters": args.train_iters, "finetune": bool(args.finetune),
            "launch": torchrun(text[text.index("\ntorchrun "):])}


def deepspeed(d, item):
    import deepspeed.comm as dscomm
    from deepspeed.launcher.runner import parse_args as ds_launcher
    from deepspeed.runtime.config import DeepSpeedConfig

    class MPU:
        def get_data_parallel_world_size(self):
            return item["dp"]

    raw = json.load(open(os.path.join(d, "ds_config.json")))
    dscomm.get_rank = lambda *a, **k: 0
    dscomm.get_world_size = lambda *a, **k: item["world"]
    c = DeepSpeedConfig(raw, mpu=None if "train_batch_size" not in raw else MPU())
    out = {"gbs": c.train_batch_size, "mbs": c.train_micro_batch_size_per_gpu, "ga": c.gradient_accumulation_steps,
           "dp": c.world_size, "zero": c.zero_optimization_stage, "bf16": c.bfloat16_config.enabled,
           "fp16": c.float16_config.enabled,
           "bf16_master": c.bfloat16_config.bf16_master_weights_and_grads,
           "bf16_states": c.bfloat16_config.bf16_optimizer_states,
           "hpz": c.zero_config.zero_hpz_partition_size, "ulysses": raw.get("sequence_parallel_size", 1),
           "optimizer": c.optimizer_name, "optimizer_params": c.optimizer_params,
           "autoep": raw.get("expert_parallel", {}).get("autoep_size")}
    launch = os.path.join(d, "launch.sh")
    if os.path.exists(launch):
        line = next(x for x in open(launch) if x.startswith(("deepspeed ", "torchrun ")))
        if line.startswith("torchrun "):
            # the Trainer at ZeRO-0 runs its own DDP: torchrun, whose c10d rendezvous stands where
            # DeepSpeed's launcher needs a hostfile for several nodes
            t = torchrun(line)
            rest = shlex.split(line)[shlex.split(line).index("train.py") + 1:]
            nodes, per_node, several = int(t["nnodes"]), t["nproc_per_node"], t["rdzv_backend"] == "c10d"
        else:
            words = shlex.split(line)[1:]
            a = ds_launcher(words)
            rest = a.user_args
            nodes, per_node, several = a.num_nodes, a.num_gpus, "--hostfile" in words
        flag = {rest[i]: rest[i + 1] for i in range(len(rest) - 1) if rest[i].startswith("--")}
        out["launch"] = {"nnodes": nodes, "nproc_per_node": per_node, "hostfile": several,
                         "deepspeed": "--deepspeed" in rest or "--deepspeed_config" in rest,
                         "tp": int(flag.get("--tensor-model-parallel-size", 1)),
                         "pp": int(flag.get("--pipeline-model-parallel-size", 1)),
                         "cp": int(flag.get("--ds-sequence-parallel-size", 1)),
                         "steps": int(flag.get("--train-iters", flag.get("--max_steps", 0))) or None,
                         "trainer_mbs": int(flag.get("--per_device_train_batch_size", 0)) or None,
                         "trainer_ga": int(flag.get("--gradient_accumulation_steps", 0)) or None}
    return out


def torchtitan(d, item):
    import shims
    shims.install(("torchtitan.",))
    from torchtitan.config.manager import ConfigManager
    from torchtitan.distributed.parallel_dims import ParallelDims
    text = open(os.path.join(d, "torchtitan_train.sh")).read()
    module, config = re.search(r"MODULE=(\S+)", text).group(1), re.search(r"CONFIG=(\S+)", text).group(1)
    flags = shlex.split(text.split("./run_train.sh", 1)[1].replace("\\\n", " "), comments=True)
    if module == "$MODULE":
        # no registry entry (the export says so): the parallelism flags parse the same over any model's
        module, config = "llama3", "llama3_8b"
    import torchtitan.components.quantization.float8 as F8
    F8.has_cuda_capability = lambda *a: True      # a Float8 registry entry is for an SM89+ GPU
    with contextlib.redirect_stdout(io.StringIO()):
        cfg = ConfigManager().parse_args(["--module", module, "--config", config] + flags)
    p, t = cfg.parallelism, cfg.training
    pd = ParallelDims.from_config(p, item["world"])
    dp = pd.dp_replicate * pd.dp_shard
    group = cfg.optimizer.param_groups[0]
    ac = type(cfg.activation_checkpoint).__qualname__.split(".")[0]
    nodes = re.search(r"torchrun (--nnodes .*?) -m torchtitan.train", text)
    pp_mb = p.pipeline_parallel_microbatch_size if pd.pp > 1 else t.local_batch_size
    stages = (-(-(cfg.model_spec.model.n_layers if hasattr(cfg.model_spec.model, "n_layers")
                  else len(cfg.model_spec.model.layers)) + 2) // p.pipeline_parallel_layers_per_stage
              if pd.pp > 1 and p.pipeline_parallel_layers_per_stage else pd.pp)
    return {"world": pd.world_size, "tp": pd.tp, "pp": pd.pp, "vp": stages // pd.pp, "cp": pd.cp, "ep": pd.ep,
            "dp": dp, "dp_replicate": pd.dp_replicate, "dp_shard": pd.dp_shard,
            "reshard": p.fsdp_reshard_after_forward, "sp": p.enable_sequence_parallel and pd.tp > 1,
            "schedule": p.pipeline_parallel_schedule if pd.pp > 1 else None,
            "mbs": pp_mb, "gbs": t.global_batch_size,
            "ga": t.global_batch_size // (t.local_batch_size * dp) * (t.local_batch_size // pp_mb),
            "seq": t.seq_len, "steps": t.steps, "dtype": t.dtype, "param_dtype": t.mixed_precision_param,
            "float8": "Float8" in repr(cfg.model_spec.model) or "MXFP8" in repr(cfg.model_spec.model),
            "recompute": {"SelectiveAC": "selective", "FullAC": "full", "NoAC": "none", "NoneType": "none"}.get(ac, ac),
            "optimizer": group.optimizer_name, "betas": list(group.optimizer_kwargs.get("betas", ())),
            "weight_decay": group.optimizer_kwargs.get("weight_decay"), "implementation": cfg.optimizer.implementation,
            "ngpu": int(re.search(r"NGPU=(\d+)", text).group(1)),
            "launch": torchrun("torchrun " + nodes.group(1) + " x.py") if nodes else None}


def accelerate(d, item):
    import yaml
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env
    path = os.path.join(d, "accelerate_config.yaml")
    raw = yaml.safe_load(open(path))
    for k in list(os.environ):
        if k.startswith(("FSDP_", "PARALLELISM_CONFIG_", "ACCELERATE_")):
            del os.environ[k]
    os.chdir(d)
    args = launch_command_parser().parse_args(["--config_file", path, "--main_process_port", "0", "train.py"])
    args, defaults, mp_from_config = _validate_launch_command(args)
    out = {"processes": args.num_processes, "machines": args.num_machines, "type": raw["distributed_type"]}
    if raw["distributed_type"] == "DEEPSPEED":
        args.deepspeed_fields_from_accelerate_config = ",".join(
            list(defaults.deepspeed_config) + (["mixed_precision"] if mp_from_config else []))
        _, env = prepare_deepspeed_cmd_env(args)
        os.environ.update(env)
        from accelerate.utils import DeepSpeedPlugin
        ds = DeepSpeedPlugin().deepspeed_config
        return {**out, "zero": ds["zero_optimization"]["stage"], "mbs": ds["train_micro_batch_size_per_gpu"],
                "ga": ds["gradient_accumulation_steps"], "dp": args.num_processes,
                "precision": "bf16" if ds.get("bf16", {}).get("enabled") else "fp32",
                "bf16_master": ds.get("bf16", {}).get("bf16_master_weights_and_grads", False)}
    if raw["distributed_type"] in ("MULTI_GPU", "NO"):
        env = prepare_multi_gpu_env(args) if raw["distributed_type"] == "MULTI_GPU" else {}
        return {**out, "tp": 1, "cp": 1, "dp_replicate": args.num_processes, "dp_shard": 1, "reshard": None,
                "recompute": None, "precision": env.get("ACCELERATE_MIXED_PRECISION", args.mixed_precision)}
    env = prepare_multi_gpu_env(args)
    os.environ.update(env)
    from accelerate import ParallelismConfig
    from accelerate.utils import FullyShardedDataParallelPlugin
    plugin = FullyShardedDataParallelPlugin()
    pc = ParallelismConfig()
    return {**out, "tp": pc.tp_size, "cp": pc.cp_size, "dp_replicate": pc.dp_replicate_size,
            "dp_shard": pc.dp_shard_size,
            "reshard": plugin.reshard_after_forward, "recompute": plugin.activation_checkpointing,
            "precision": env.get("ACCELERATE_MIXED_PRECISION", args.mixed_precision)}


_PG = {}


def fsdp(d, item):
    import importlib.util

    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    if _PG.get("world") != item["world"]:
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=item["world"])
        _PG["world"] = item["world"]
    spec = importlib.util.spec_from_file_location(f"exported_{item['id']}", os.path.join(d, "fsdp2_sharding.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mesh, fmesh = mod.build_mesh("cpu"), mod.build_fsdp_mesh("cpu")
    dims = dict(zip(mesh.mesh_dim_names, mesh.shape))
    block = torch.nn.Sequential(torch.nn.Linear(8, 8, bias=False))
    model = torch.nn.Sequential(block)
    mod.shard(model, [block], fmesh)
    w = next(model.parameters())
    return {"world": mesh.size(), "tp": dims["tp"], "pp": dims["pp"], "cp": dims["cp"],
            "dp": dims["dp_replicate"] * dims["dp_shard"], "shard": fmesh.shape[-1],
            "reshard": mod.RESHARD_AFTER_FORWARD, "mbs": mod.MICRO_BATCH, "ga": mod.GRAD_ACCUM, "gbs": mod.GLOBAL_BATCH,
            "recompute": mod.ACTIVATION_CHECKPOINTING, "param_dtype": str(w.dtype).replace("torch.", ""),
            "compute_dtype": str(model[0]._get_fsdp_state()._mp_policy.param_dtype).replace("torch.", "")
            if hasattr(model[0], "_get_fsdp_state") else None}


for item in json.load(open(sys.argv[1])):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    here = os.getcwd()
    try:
        built = globals()[item["framework"]](item["dir"], item)
        print(json.dumps({"id": item["id"], "built": built}, default=str), flush=True)
    except BaseException as e:  # noqa: BLE001 -- one item's failure is its result, not the run's
        print(json.dumps({"id": item["id"], "error": f"{type(e).__name__}: {e}"[:2000],
                          "trace": traceback.format_exc()[-1500:]}), flush=True)
    finally:
        os.chdir(here)
