"""Hugging Face Accelerate 1.15: an `accelerate launch` YAML with FSDP2 and a parallelism_config,
or, for a job whose ZeRO is DeepSpeed's (hf, deepspeed) and needs no TP/CP, Accelerate's DeepSpeed
path with the ds_config.json the DeepSpeed export writes, or, for the Trainer at ZeRO-0, its own
DDP (MULTI_GPU).

docs/reference/framework-configs.md section 4. Accelerate has no pipeline parallelism:
the exported config is the PP = 1 slice (TP x CP x DP processes), said as a caveat.
ParallelismConfig refuses TP/CP with pure replication, so ZeRO-0 with TP becomes a 1-replica
FSDP shard group. num_processes counts every process of the slice.
"""
from __future__ import annotations

import yaml

from shardwise.kb.defaults import ADAPTERS
from shardwise.kb.validity import autoep_runs

from .deepspeed import export as deepspeed_export
from .deepspeed import trainer_runs_itself
from .optimizer import WHAT, fsdp2_refuses, named, script_caveat
from .target import Export, Target, all_experts_caveats, dp_dims, hsdp_caveats, memory_as_run, with_caveats

# the decoder-layer class FSDP wraps, per model family (transformers' modeling_<family>.py)
LAYER_CLASS = {"llama": "LlamaDecoderLayer", "mistral": "MistralDecoderLayer", "ministral": "MinistralDecoderLayer",
               "mixtral": "MixtralDecoderLayer",
               "qwen2": "Qwen2DecoderLayer", "qwen2_moe": "Qwen2MoeDecoderLayer", "qwen3": "Qwen3DecoderLayer",
               "qwen3_moe": "Qwen3MoeDecoderLayer", "gemma": "GemmaDecoderLayer", "gemma2": "Gemma2DecoderLayer",
               "gemma3": "Gemma3DecoderLayer", "phi3": "Phi3DecoderLayer", "granite": "GraniteDecoderLayer",
               "gpt_oss": "GptOssDecoderLayer", "deepseek_v2": "DeepseekV2DecoderLayer",
               "deepseek_v3": "DeepseekV3DecoderLayer", "falcon": "FalconDecoderLayer", "bloom": "BloomBlock",
               "olmo2": "Olmo2DecoderLayer", "smollm3": "SmolLM3DecoderLayer", "glm4_moe": "Glm4MoeDecoderLayer",
               "olmoe": "OlmoeDecoderLayer", "granitemoe": "GraniteMoeDecoderLayer",
               "granitemoeshared": "GraniteMoeSharedDecoderLayer", "dots1": "Dots1DecoderLayer", "llama4": "Llama4TextDecoderLayer",
               "olmo3": "Olmo3DecoderLayer", "exaone4": "Exaone4DecoderLayer", "seed_oss": "SeedOssDecoderLayer",
               "ernie4_5_moe": "Ernie4_5_MoeDecoderLayer", "ministral3": "Ministral3DecoderLayer"}


# --precision -> Accelerate's mixed_precision. pure-bf16 is "no": with any mixed precision Accelerate's
# FSDP2 preparation upcasts the parameters to fp32 master weights (utils/fsdp_utils.py
# fsdp2_prepare_model, "FSDP upcast of low precision parameters to fp32"), which pure-bf16 has none of
MIXED_PRECISION = {"bf16": "bf16", "fp8": "fp8", "pure-bf16": "no"}


def config(tg: Target) -> tuple[dict, list[str]]:
    lay, m, t, c = tg.layout, tg.job.model, tg.job.training, tg.job.cluster
    caveats = []
    procs = lay.tp * lay.cp * lay.dp
    if lay.pp > 1:
        # where the pipeline can run instead: an adapter job only in a script of its own
        # (export.training_carried refuses Megatron-LM and torchtitan, which train every weight)
        instead = ("the fsdp export (torch.distributed.pipelining in your PEFT script)" if t.training in ADAPTERS
                   else "megatron or torchtitan")
        caveats.append(f"pp={lay.pp}: Accelerate has no pipeline parallelism; this is the PP=1 slice of "
                       f"{procs} processes (each holds all {lay.pp} stages: {memory_as_run(tg, pp=1, vp=1)}; use "
                       f"{instead})")
    rep, shard = dp_dims(lay)
    caveats += hsdp_caveats(lay)
    if lay.zero == 0 and (lay.tp > 1 or lay.cp > 1):
        rep, shard = 1, lay.dp
        caveats.append("ZeRO-0 with TP/CP: Accelerate needs an FSDP shard dimension; sharded over DP instead")
    if lay.zero == 1:
        caveats.append("ZeRO-1: FSDP has none; reshard_after_forward false (ZeRO-2) is the nearest")
    if lay.recompute == "selective":
        caveats.append("selective recomputation: Accelerate has only full per-layer activation checkpointing")
    if lay.sp:
        caveats.append("sequence parallelism follows Accelerate's TP plan (transformers' tp_plan), not Megatron's")
    if lay.ep > 1:
        caveats.append(f"ep={lay.ep}: Accelerate has no expert parallelism; experts are sharded by FSDP")
    caveats += fsdp2_refuses(tg) or script_caveat(tg, "Accelerate's config")
    if t.framework in ("hf", "deepspeed") and lay.zero >= 1:
        caveats.append(f"ZeRO-{lay.zero} runs here as FSDP2 (Accelerate's TP and CP need it), while the estimate sized "
                       "DeepSpeed's ZeRO buffers; `shardwise memory --framework fsdp --layout ...` sizes this config")
    if t.precision == "pure-bf16":
        caveats.append("pure-bf16: mixed_precision no, so that FSDP2 keeps the parameters in the dtype your script "
                       "loads them in: load the model in bfloat16 (from_pretrained(..., torch_dtype=torch.bfloat16))")
    layer = LAYER_CLASS.get(m.family)
    caveats += all_experts_caveats(tg, "Accelerate wraps")
    if layer is None:
        caveats.append(f"{m.name} ({m.family}) has no transformers class here: set fsdp_transformer_layer_cls_to_wrap "
                       "to your model's decoder-layer class")
    # enough machines to hold the processes; Accelerate starts num_processes // num_machines on each
    # (utils/launch.py prepare_multi_gpu_env: nproc_per_node), so they must divide evenly
    nodes = -(-procs // c.gpus_per_node)
    if procs % nodes:
        caveats.append(f"{procs} processes do not split evenly over {nodes} machines of {c.gpus_per_node} GPUs: "
                       f"Accelerate would start {procs // nodes} on each, {procs // nodes * nodes} in all")
    cfg = {
        "compute_environment": "LOCAL_MACHINE", "distributed_type": "FSDP",
        "mixed_precision": MIXED_PRECISION[t.precision],
        "num_machines": nodes, "num_processes": procs, "machine_rank": 0, "same_network": True,
        "rdzv_backend": "static", "main_training_function": "main", "use_cpu": False,
        "fsdp_config": {
            "fsdp_version": 2, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_transformer_layer_cls_to_wrap": layer or "$DECODER_LAYER_CLASS",
            "fsdp_reshard_after_forward": lay.zero == 3, "fsdp_offload_params": False,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT", "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_activation_checkpointing": lay.recompute != "none",
        },
        "parallelism_config": {
            "parallelism_config_dp_replicate_size": rep, "parallelism_config_dp_shard_size": shard,
            "parallelism_config_tp_size": lay.tp, "parallelism_config_cp_size": lay.cp,
        },
    }
    if lay.cp > 1:
        cfg["parallelism_config"]["parallelism_config_cp_backend"] = "torch"
    return cfg, caveats


def runs_deepspeed(tg: Target) -> bool:
    """Whether Accelerate should launch DeepSpeed rather than FSDP2: the job's ZeRO is DeepSpeed's
    (--framework deepspeed, or hf, where the Trainer hands ZeRO 1-3 to DeepSpeed and the estimate
    sizes DeepSpeed's buffers, kb/memory/overheads.py) and the layout needs nothing only FSDP2's
    ParallelismConfig has (TP, CP); or its expert parallelism is DeepSpeed AutoEP's, which the JSON
    carries (kb/validity.autoep_runs). ``distributed_type: DEEPSPEED`` with deepspeed_config_file is
    Accelerate's DeepSpeed path (framework-configs.md section 4)."""
    lay = tg.layout
    return (tg.job.training.framework in ("hf", "deepspeed") and (lay.zero >= 1 or autoep_runs(tg.job, lay))
            and lay.tp == 1 and lay.cp == 1 and lay.pp == 1)


def deepspeed_config(tg: Target) -> tuple[dict, list[str]]:
    """No mixed_precision key: beside a deepspeed_config_file, Accelerate's DeepSpeedPlugin refuses
    one from the config file ("the following accelerate config variables will be ignored"); the
    JSON's bf16 section sets the precision. The optimizer is the script's, or the JSON's where its
    optimizer section builds it (export/deepspeed._optimizer), which the script then stands for with
    accelerate.utils.DummyOptim (Accelerate refuses an optimizer in both)."""
    lay, c = tg.layout, tg.job.cluster
    cfg = {
        "compute_environment": "LOCAL_MACHINE", "distributed_type": "DEEPSPEED",
        "num_machines": max(1, lay.dp // c.gpus_per_node), "num_processes": lay.dp, "machine_rank": 0,
        "same_network": True, "rdzv_backend": "static", "main_training_function": "main", "use_cpu": False,
        "deepspeed_config": {"deepspeed_config_file": "ds_config.json", "zero3_init_flag": lay.zero == 3},
    }
    ds = deepspeed_export(tg)
    caveats = [c for c in ds.caveats if not c.startswith("--optimizer ")]
    if '"optimizer"' not in ds.files["ds_config.json"]:
        caveats += script_caveat(tg, "Accelerate's config")
    return cfg, caveats


def ddp_config(tg: Target) -> tuple[dict, list[str]]:
    """The Trainer's own data parallelism at ZeRO-0 (deepspeed.trainer_runs_itself): Accelerate's
    MULTI_GPU, torch DDP (one process: NO), whose gradient buckets the estimate sizes
    (kb/memory/overheads.py ddp_gradient_buckets); FSDP2 over a 1-wide shard would keep every
    parameter's bf16 copy from forward to backward instead. The config has no checkpointing key:
    the Trainer's --gradient_checkpointing sets it."""
    lay, t, c = tg.layout, tg.job.training, tg.job.cluster
    caveats = script_caveat(tg, "Accelerate's config")
    if lay.recompute != "none":
        caveats.append("full recomputation is your script's: the Trainer's --gradient_checkpointing "
                       "(model.gradient_checkpointing_enable())")
    if t.precision == "pure-bf16":
        caveats.append("pure-bf16: mixed_precision no: load the model in bfloat16 "
                       "(from_pretrained(..., torch_dtype=torch.bfloat16))")
    nodes = -(-lay.dp // c.gpus_per_node)
    return {"compute_environment": "LOCAL_MACHINE", "distributed_type": "MULTI_GPU" if lay.dp > 1 else "NO",
            "mixed_precision": MIXED_PRECISION[t.precision], "num_machines": nodes, "num_processes": lay.dp,
            "machine_rank": 0, "same_network": True, "rdzv_backend": "static", "main_training_function": "main",
            "use_cpu": False}, caveats


def export(tg: Target) -> Export:
    files = {}
    if trainer_runs_itself(tg):
        cfg, caveats = ddp_config(tg)
    elif runs_deepspeed(tg):
        cfg, caveats = deepspeed_config(tg)
        files["ds_config.json"] = deepspeed_export(tg).files["ds_config.json"]
    else:
        cfg, caveats = config(tg)
    head = "\n".join(with_caveats(tg.header(), caveats))
    body = yaml.safe_dump(cfg, sort_keys=False)
    note = (f"# per process: micro-batch {tg.script_mbs}, gradient accumulation {tg.layout.grad_accum} "
            f"(global batch {tg.script_global_batch}); pass them to your training loop\n")
    machines = cfg["num_machines"]
    if machines > 1:
        # The file is one machine's: accelerate launch needs each machine's rank and where
        # machine 0 listens (config keys machine_rank, main_process_ip, main_process_port).
        note += (f"# {machines} machines: run this file on each, with machine_rank 0 to {machines - 1} "
                 "(0 here) and main_process_ip / main_process_port set to machine 0's address and a free port "
                 "(or accelerate launch --machine_rank R --main_process_ip IP --main_process_port PORT)\n")
    if '"optimizer"' in files.get("ds_config.json", ""):
        note += (f"# ds_config.json's optimizer section builds {WHAT[named(tg)]}: your script hands "
                 "accelerator.prepare an accelerate.utils.DummyOptim(params) in its place\n")
    return Export("accelerate", {"accelerate_config.yaml": head + "\n" + note + body, **files}, caveats)
