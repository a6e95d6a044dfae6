"""DeepSpeed: a ds_config.json for the data-parallel side, and the launch line for the rest.

Schema: DeepSpeed 0.19 DeepSpeedConfig (docs/reference/framework-configs.md section 1).
train_batch_size = micro-batch x accumulation x DP ranks (TP and PP ranks excluded, as
DeepSpeed counts them when an mpu is given). TP and PP degrees are not JSON keys: they go to
the launcher (Megatron-DeepSpeed's --tensor-model-parallel-size / PipelineModule(num_stages)).
Expert parallelism is the JSON's expert_parallel section (AutoEP) where DeepSpeed has a preset for
the model, else DeepSpeed's MoE layer in the model code.
"""
from __future__ import annotations

import json

from shardwise.kb.defaults import ADAPTERS
from shardwise.kb.errors import InputError
from shardwise.kb.frameworks import ULYSSES_FRAMEWORKS, autoep_preset
from shardwise.kb.validity import autoep_runs

from .deepspeed_env import to_other_nodes, ulysses_environment
from .optimizer import CONSTRUCTOR, WHAT, ZERO_UNTESTED, named, trainer_caveats, trainer_flags
from .target import Export, Target, allocator_environment, memory_as_run, with_caveats

TOP_LEVEL = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
             "gradient_clipping", "steps_per_print", "bf16", "fp16", "zero_optimization", "pipeline",
             "wall_clock_breakdown", "activation_checkpointing", "expert_parallel", "sequence_parallel_size",
             "optimizer", "zero_allow_untested_optimizer"}

# The JSON's optimizer section for what DeepSpeed builds itself (engine._configure_basic_optimizer):
# "AdamW" is its FusedAdam (adam_w_mode), or with torch_adam torch.optim.AdamW with the foreach the
# section gives (engine.get_optimizer_configuration); any other type is the torch.optim class of that
# exact name (getattr(torch.optim, type)): SGD, with the momentum the estimate sizes a buffer for.
# 8-bit AdamW and transformers' Adafactor are not DeepSpeed's: the script passes them.
JSON_OPTIMIZER = {
    "adamw-fused": {"type": "AdamW"},
    "adamw-foreach": {"type": "AdamW", "params": {"torch_adam": True, "foreach": True}},
    "adamw-single": {"type": "AdamW", "params": {"torch_adam": True, "foreach": False}},
    "sgd": {"type": "SGD", "params": {"momentum": 0.9}},
}


def export(tg: Target) -> Export:
    lay, t = tg.layout, tg.job.training
    own = trainer_runs_itself(tg)
    if t.framework == "hf" and lay.tp > 1:
        # the Trainer's TP here is Accelerate's ParallelismConfig; under DeepSpeed it would be
        # AutoTP (tensor_parallel.autotp_size, transformers integrations/deepspeed.py), which this
        # export does not write -- without it the Trainer counts every rank as data-parallel and
        # refuses a train_batch_size over the DP ranks alone (trainer_config_process)
        raise InputError(f"export --to deepspeed: tp={lay.tp} under the transformers Trainer is exported as "
                         "Accelerate's ParallelismConfig, not as DeepSpeed's AutoTP (tensor_parallel.autotp_size), "
                         "which this export does not write; allowed for this layout: --to accelerate or fsdp, or a "
                         "layout with tp=1")
    if t.training in ADAPTERS and lay.pp > 1:
        # the adapters-pipeline validity rule, for a layout planned under another framework (an
        # FSDP2 script's torch.distributed.pipelining): DeepSpeed's pipeline engine trains a
        # PipelineModule, and a PEFT model is a transformers model, not one
        raise InputError(f"export --to deepspeed: pp={lay.pp} with --training {t.training}: PEFT's adapters sit in a "
                         "transformers model, which DeepSpeed's pipeline engine (a PipelineModule) does not take; "
                         "allowed for this layout: --to fsdp (torch.distributed.pipelining in your PEFT script), or a "
                         "layout with pp=1")
    caveats = []
    stage = lay.zero
    if lay.pp > 1 and lay.zero >= 2:
        # DeepSpeed's pipeline engine asserts "ZeRO-2 and ZeRO-3 are incompatible with pipeline
        # parallelism" (runtime/pipe/engine.py): a layout chosen for another framework gets the
        # nearest stage it runs, and the caveat says what that costs in memory
        stage = 1
        caveats.append(f"zero={lay.zero} with pp={lay.pp}: DeepSpeed's pipeline engine runs ZeRO-0/1 only; written "
                       f"as ZeRO-1, whose whole gradients{' and weights' if lay.zero == 3 else ''} take more memory "
                       f"per GPU than this layout was estimated with")
    # buckets and optimizer settings as in framework-configs.md's verified DeepSpeed example
    zero = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True,
            "reduce_bucket_size": 500000000, "allgather_bucket_size": 500000000}
    if lay.shard:
        zero["zero_hpz_partition_size"] = lay.shard
        caveats.append(f"HSDP shard group {lay.shard}: mapped to ZeRO++ hpZ (secondary partition of "
                       f"{lay.shard} ranks), which shards parameters only")
    cfg = {
        "train_batch_size": tg.script_global_batch,
        "train_micro_batch_size_per_gpu": tg.script_mbs,
        "gradient_accumulation_steps": lay.grad_accum,
        "gradient_clipping": 1.0,
        "steps_per_print": 10,
        "bf16": {"enabled": t.precision in ("bf16", "fp8", "pure-bf16")},
        "fp16": {"enabled": False},
        "zero_optimization": zero,
        "wall_clock_breakdown": False,
    }
    if lay.pp > 1:
        cfg["pipeline"] = {"partition": "parameters", "activation_checkpoint_interval": 1 if lay.recompute == "full" else 0}
    if lay.vp > 1:
        caveats.append(f"vp={lay.vp}: DeepSpeed's pipeline engine has no interleaved schedule; plain 1F1B over "
                       f"{lay.pp} stages")
    if lay.cp > 1:
        # Ulysses: without an mpu (the Trainer's path) DeepSpeedConfig counts world / sequence_parallel_size
        # data-parallel ranks for train_batch_size (deepspeed/runtime/config.py, "HF zero.init case")
        cfg["sequence_parallel_size"] = lay.cp
        if t.framework == "hf":
            # the Trainer checks train_batch_size against world_size x micro-batch x accumulation,
            # counting the sequence-parallel ranks as data-parallel (transformers
            # integrations/deepspeed.py trainer_config_process); left out, DeepSpeed derives it
            # over world / sequence_parallel_size and the Trainer skips the check
            del cfg["train_batch_size"]
        if t.framework not in ULYSSES_FRAMEWORKS:
            # a Trainer or DeepSpeed job's CP is Ulysses in the estimate too (kb/perf/step.py)
            caveats.append(f"cp={lay.cp}: ring-attention context parallelism is not a DeepSpeed feature; the nearest "
                           f"is Ulysses (sequence_parallel_size {lay.cp}, the attention wrapped by DeepSpeed's "
                           f"UlyssesSPAttentionHF or Accelerate's sp_backend deepspeed), which splits heads with "
                           f"all-to-alls where the estimate times a ring")
    if lay.sp:
        caveats.append("Megatron sequence parallelism is not in DeepSpeed's JSON (Megatron-DeepSpeed: --sequence-parallel)")
    if lay.recompute == "selective":
        caveats.append("selective recomputation has no DeepSpeed-JSON key (a Megatron(-DeepSpeed) flag); "
                       "enable it in the model code")
    elif lay.recompute == "full" and lay.pp == 1:
        # under PP the JSON sets it (the pipeline's activation_checkpoint_interval, above); else
        # the Trainer's flag (which launch.sh passes) or a script's own model code turns it on
        caveats.append("full recomputation is the Trainer's --gradient_checkpointing "
                       "(model.gradient_checkpointing_enable()), not a DeepSpeed-JSON key" if t.framework == "hf"
                       else "full recomputation is enabled in your script's model code "
                            "(model.gradient_checkpointing_enable() on a transformers model)")
    if t.precision == "fp8":
        caveats.append("FP8 has no DeepSpeed-JSON key: it comes from Transformer Engine in the model code")
    if t.precision == "pure-bf16" and not own:
        caveats += _pure_bf16(tg, cfg["bf16"], stage)
    notes = []
    if lay.ep > 1:
        more, notes = _experts(tg, cfg)
        caveats += more
    more, opt_notes = _optimizer(tg, cfg)
    caveats += more
    notes += opt_notes
    if own:
        # DeepSpeed's ZeRO-0 keeps fp32 masters and states even where the plan is pure-bf16 (_pure_bf16)
        caveats.append(f"zero=0 under the transformers Trainer is the Trainer's own "
                       f"{'DDP' if lay.dp > 1 else 'single process'}, without DeepSpeed, as the estimate sized it, "
                       "so launch.sh starts train.py without --deepspeed; given --deepspeed ds_config.json, "
                       "DeepSpeed's ZeRO-0 engine would run instead, with bf16 weights beside an fp32 master in its "
                       "optimizer wrapper (" + memory_as_run(tg, framework="deepspeed", precision="bf16"
                                                             if t.precision == "pure-bf16" else None) + ")")
        if t.precision == "pure-bf16":
            caveats.append("pure-bf16: the Trainer keeps the dtype your script loads the model in: load it in "
                           "bfloat16 (from_pretrained(..., torch_dtype=torch.bfloat16))")
    ulysses, more = ulysses_environment(tg)
    caveats += more
    env = allocator_environment(tg.job) + ulysses
    if not own:     # torchrun runs the script on every node, each with this environment
        env += to_other_nodes(tg, env)
    launch = with_caveats(tg.header(), caveats) + [
        f"# TP {lay.tp} x PP {lay.pp}" + (f" x CP {lay.cp} (Ulysses sequence parallelism, the nearest)" if lay.cp > 1
                                          else "")
        + f" x DP {lay.dp} = {lay.tp * lay.pp * lay.dp * lay.cp} GPUs: "
        + (f"the Trainer's own {'DDP over the ' + str(lay.dp) + ' ranks' if lay.dp > 1 else 'process'}; "
           "ds_config.json is for a --deepspeed run" if own
           else f"DeepSpeed counts train_batch_size over the {lay.dp} DP ranks"),
    ] + notes + env + launch_lines(tg)
    return Export("deepspeed", {"ds_config.json": json.dumps(cfg, indent=2) + "\n",
                                "launch.sh": "\n".join(launch) + "\n"}, caveats)


def _pure_bf16(tg: Target, bf16: dict, stage: int) -> list[str]:
    """pure-bf16 (no fp32 master weights, bf16 optimizer states: kb/memory/states.py). With bf16 on,
    DeepSpeed keeps fp32 masters unless the ZeRO optimizer is told otherwise: bf16_master_weights_and_grads
    and bf16_optimizer_states (runtime/precision_config.py; config.py asserts ZeRO 1-3 for both). At
    ZeRO-0 it wraps the optimizer in FP16_Optimizer, which keeps fp32 masters whatever the JSON says
    (engine.py _configure_optimizer, DDP_BFLOAT16)."""
    if stage >= 1:
        bf16.update(bf16_master_weights_and_grads=True, bf16_optimizer_states=True)
        return []
    # the optimizer it wraps steps the fp32 masters, so its states are fp32 too: DeepSpeed's bf16
    # recipe (a deepspeed job at pure-bf16 is never planned at ZeRO-0: kb/validity.py)
    return ["pure-bf16 at ZeRO-0: DeepSpeed's bf16 optimizer wrapper keeps fp32 master weights and so fp32 "
            "optimizer states (bf16 masters and optimizer states need ZeRO 1-3), not what this layout was estimated "
            f"with ({memory_as_run(tg, precision='bf16', framework='deepspeed')})"]


def _experts(tg: Target, cfg: dict) -> tuple[list[str], list[str]]:
    """Expert parallelism, as (caveats, launch-script notes): DeepSpeed AutoEP from the JSON where
    it has a preset for the model and the layout is within its limits (kb/data/frameworks.yaml
    autoep, kb/validity.autoep_runs); otherwise DeepSpeed's MoE layer in the model code, which
    ZeRO-3 refuses."""
    lay, m = tg.layout, tg.job.model
    if autoep_runs(tg.job, lay):
        cfg["expert_parallel"] = {"enabled": True, "autoep_size": lay.ep, "preset_model": autoep_preset(m.family)}
        caveats = (["AutoEP's DeepSeek presets turn off the auxiliary-loss-free expert bias (load_balance_coeff "
                    "is not supported)"] if m.family.startswith("deepseek") else [])
        return caveats, [f"# EP {lay.ep}: DeepSpeed AutoEP (ds_config expert_parallel; deepspeed >= 0.19.2, >= 0.19.3 "
                         f"with ZeRO-3) replaces the MoE blocks of the {m.family} model (transformers >= 5.0) "
                         "at deepspeed.initialize"]
    why = ("no AutoEP preset for " + m.family + " models" if not autoep_preset(m.family)
           else "outside AutoEP's limits (tp 1, etp 1; under ZeRO-3 no Ulysses or hpZ)")
    return [f"ep={lay.ep}: {why}, so expert parallelism is DeepSpeed's MoE layer in the model code "
            f"(deepspeed.moe.layer.MoE(ep_size={lay.ep}))"
            + (", which refuses ZeRO-3: zero=3 with it does not run" if lay.zero == 3 else "")], []


def _optimizer(tg: Target, cfg: dict) -> tuple[list[str], list[str]]:
    """The optimizer, as (caveats, launch-script notes). Under the Trainer (hf) it is the Trainer's
    --optim (launch_lines), which the Trainer builds and hands DeepSpeed: the JSON has no optimizer
    section, which would replace it. Otherwise the JSON's optimizer section builds it where DeepSpeed
    can (JSON_OPTIMIZER), and the script passes it where DeepSpeed cannot. Under ZeRO an optimizer
    DeepSpeed has not tested (ZERO_UNTESTED) needs zero_allow_untested_optimizer, which the Trainer
    and Accelerate set themselves for the optimizer they hand DeepSpeed (transformers
    integrations/deepspeed.py deepspeed_optim_sched, accelerate's _prepare_deepspeed) and a script
    of its own does not."""
    o, caveats, notes = named(tg), [], []
    if o is None:
        return [], []
    if tg.job.training.framework == "hf":
        caveats += trainer_caveats(tg)
    elif o in JSON_OPTIMIZER:
        cfg["optimizer"] = json.loads(json.dumps(JSON_OPTIMIZER[o]))
        notes.append(f"# ds_config.json's optimizer section builds {WHAT[o]}, as the estimate sized it, at its "
                     "constructor's default learning rate and with no scheduler: add optimizer.params.lr and a "
                     "scheduler section (a client optimizer passed to deepspeed.initialize replaces the section)")
    else:
        caveats.append(f"--optimizer {o}: DeepSpeed's JSON cannot build {WHAT[o]}; your script passes "
                       f"{CONSTRUCTOR[o]} to deepspeed.initialize(optimizer=...)")
    if o in ZERO_UNTESTED and tg.layout.zero >= 1 and tg.job.training.framework != "hf":
        cfg["zero_allow_untested_optimizer"] = True
    return caveats, notes


def trainer_runs_itself(tg: Target) -> bool:
    """Whether the transformers Trainer runs the layout without DeepSpeed: at ZeRO-0 with no Ulysses CP
    and no expert parallelism (the two the Trainer gets only from DeepSpeed), it wraps the model in
    DDP itself (one process on one GPU), which the estimate sizes (kb/memory/overheads.py
    ddp_gradient_buckets; the Trainer's fp32 weights, kb/memory/states.py). Launched with --deepspeed
    even at stage 0, the Trainer hands the model to DeepSpeed's engine, which casts it to bf16 and
    keeps an fp32 master in its optimizer wrapper (engine.py _configure_optimizer): another peak."""
    lay = tg.layout
    return (tg.job.training.framework == "hf" and lay.zero == 0 and lay.cp == 1 and lay.ep == 1 and lay.tp == 1
            and lay.pp == 1)


def launch_lines(tg: Target) -> list[str]:
    """The launch command. A job on the transformers Trainer (--framework hf) passes the config
    with TrainingArguments' own flags, whose batch and precision must agree with the JSON or the
    Trainer refuses it (transformers integrations/deepspeed.py, HfTrainerDeepSpeedConfig:
    trainer_config_process matches micro-batch, accumulation, train_batch_size and bf16.enabled,
    trainer_config_finalize raises on "values that mismatch TrainingArguments") -- but at ZeRO-0, which
    the Trainer runs itself (trainer_runs_itself), torchrun starts it with the same flags and no
    --deepspeed; anything else is a
    Megatron-DeepSpeed-style script (pretrain_gpt.py), whose parallel-size flags build TP and PP."""
    lay, t, c = tg.layout, tg.job.training, tg.job.cluster
    # several nodes: DeepSpeed's launcher starts them over ssh from a hostfile
    hosts = ([f"# {c.nodes} nodes: list them in a hostfile, one 'HOST slots={c.gpus_per_node}' line each; the "
              "launcher starts every node from this one (pdsh/ssh)"] if c.nodes > 1 else [])
    run = (f"deepspeed {'--hostfile hostfile ' if c.nodes > 1 else ''}--num_nodes {c.nodes} "
           f"--num_gpus {c.gpus_per_node} train.py")
    # the steps that train --token-budget: TrainingArguments' max_steps, Megatron-DeepSpeed's
    # --train-iters (the script's own default where there is no budget)
    steps = tg.train_steps
    own = trainer_runs_itself(tg)
    if own:
        # torchrun starts the Trainer's DDP processes; with several nodes, each node runs the line
        hosts = ([f"# {c.nodes} nodes: run this on every node, with HEAD_NODE the first node's address (torchrun's "
                  "c10d rendezvous gives each node its rank)"] if c.nodes > 1 else [])
        run = (f"torchrun --nnodes {c.nodes} --nproc-per-node {c.gpus_per_node}"
               + (" --rdzv-backend c10d --rdzv-endpoint $HEAD_NODE:29500" if c.nodes > 1 else "") + " train.py")
    if t.framework == "hf":
        flags = ((" --deepspeed ds_config.json" if not own else "")
                 + f" --per_device_train_batch_size {tg.script_mbs}"
                 f" --gradient_accumulation_steps {lay.grad_accum} --bf16"
                 + (" --gradient_checkpointing" if lay.recompute == "full" else "")
                 + (f" --max_steps {steps}" if steps else "") + trainer_flags(tg))
        return ["# train.py is your transformers Trainer script (HfArgumentParser over TrainingArguments)",
                tg.steps_comment(unset="the script's own (num_train_epochs)")] + hosts + [run + flags]
    return ["# train.py is your script; the parallel-size flags are Megatron-DeepSpeed's (pretrain_gpt.py), "
            "elsewhere TP and PP are built in the model code",
            tg.steps_comment(unset="the script's own")] + hosts + [
            run + f" --deepspeed_config ds_config.json --tensor-model-parallel-size {lay.tp} "
                  f"--pipeline-model-parallel-size {lay.pp}"
                + (f" --ds-sequence-parallel-size {lay.cp}" if lay.cp > 1 else "")
                + (f" --train-iters {steps}" if steps else "")]


def check(cfg: dict, dp: int) -> list[str]:
    """Pure-Python check of a ds_config: what DeepSpeedConfig would refuse (and the typos it would not)."""
    errors = [f"unknown top-level key {k}" for k in cfg if k not in TOP_LEVEL]
    want = cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"] * dp
    if cfg.get("train_batch_size", want) != want:         # left out: DeepSpeed derives it
        errors.append("train_batch_size != micro-batch x accumulation x DP")
    if cfg["zero_optimization"]["stage"] not in (0, 1, 2, 3):
        errors.append("zero stage outside 0-3")
    if "pipeline" in cfg and cfg["zero_optimization"]["stage"] >= 2:
        errors.append("ZeRO-2/3 with DeepSpeed's pipeline engine")
    return errors
