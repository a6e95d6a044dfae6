"""Framework exports: one module per framework, each `export(Target) -> Export`.

The modules load when an export is built, not when the package is imported (`shardwise
export --help` and `recommend` print without them; issue 16)."""
from __future__ import annotations

from importlib import import_module

# framework name -> its module in this package
FRAMEWORKS = {"deepspeed": "deepspeed", "megatron": "megatron", "nanotron": "nanotron", "torchtitan": "torchtitan",
              "fsdp": "fsdp", "accelerate": "accelerate"}


def __getattr__(name: str):
    if name in ("Export", "Target"):
        from . import target
        return getattr(target, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def module(framework: str):
    return import_module(f"{__name__}.{FRAMEWORKS[framework]}")


def recompute_modules(model) -> tuple[str, ...]:
    """Megatron-Core's per-module recomputation (kb/choices.RECOMPUTE "modules"; only Megatron has
    it): core attention and the norms, the experts' activation in an MoE model -- which
    TransformerConfig accepts only with grouped GEMM ("moe_act in recompute_modules is only
    supported with moe_grouped_gemm"), as the MoE exports run -- and MLA's up-projections in an
    MLA model, which it accepts only with multi_latent_attention ("mla_up_proj in
    recompute_modules is only supported with multi_latent_attention"), as NVIDIA's DeepSeek-V3
    recipes run them (Megatron-Bridge scripts/performance/configs/deepseek/
    deepseek_workload_base_configs.py: recompute_modules=["mla_up_proj", ...])."""
    return (("core_attn", "layernorm") + (("moe_act",) if model.is_moe else ())
            + (("mla_up_proj",) if model.is_mla else ()))


# Exports that are a whole training run with no adapter path: Megatron-LM's pretrain_gpt.py,
# torchtitan and Nanotron train every weight of the model, from random weights unless told to
# load a checkpoint. The others (DeepSpeed, FSDP2, Accelerate) configure the parallelism of the
# user's own training script, which sets up PEFT.
WHOLE_RUNS = ("megatron", "torchtitan", "nanotron")


def training_carried(framework: str, job) -> list[str]:
    """What the job's training type needs that this export does not set up (said in the file
    and the output); an adapter job to an export that trains every weight is refused: the layout
    was sized for frozen weights, with no gradients or optimizer states, and would run out of
    memory as a full run."""
    from shardwise.kb.defaults import ADAPTERS
    from shardwise.kb.errors import InputError
    t = job.training
    qlora = t.training == "qlora"
    if t.training in ADAPTERS and framework in WHOLE_RUNS:
        allowed = ", ".join(f for f in FRAMEWORKS if f not in WHOLE_RUNS)
        raise InputError(f"export --to {framework}: its launch trains every weight, with no LoRA adapters"
                         f"{' or 4-bit base weights' if qlora else ''}, and this layout was sized for "
                         f"{t.training}'s frozen weights (no gradients or optimizer states for them); allowed for "
                         f"--training {t.training}: {allowed}, which configure your own PEFT training script")
    if t.training in ADAPTERS:
        # FSDP / ZeRO-3 shard the 4-bit weights only in a float storage dtype (bitsandbytes'
        # FSDP-QLoRA guide: bnb_4bit_quant_storage=torch.bfloat16)
        dropout = f", lora_dropout={t.lora_dropout!r}" if t.lora_dropout else ""
        return [f"the LoRA adapters (rank {t.lora_rank}) are your PEFT script's (peft.LoraConfig(r={t.lora_rank}{dropout}))"
                + (", and the 4-bit base weights its bitsandbytes config (BitsAndBytesConfig(load_in_4bit=True, "
                   "bnb_4bit_quant_type='nf4', bnb_4bit_quant_storage=torch.bfloat16), the storage dtype that lets "
                   "ZeRO-3 / FSDP shard them)" if qlora else "") + "; this file sets the parallelism"]
    out = []
    # Megatron's script loads it (export/megatron/run.py checkpoint_args); the others start from random weights
    if t.training in ("finetune", "rlhf") and framework in WHOLE_RUNS and framework != "megatron":
        out.append(f"the run starts from random weights: {'fine-tuning' if t.training == 'finetune' else 'RLHF'} "
                   "loads the model's checkpoint (its checkpoint settings)")
    if t.training == "rlhf":
        alg = t.rl_algorithm
        held = {"ppo": "four models (policy, value, reference, reward)"}.get(alg, "two models (policy, reference)")
        if framework in WHOLE_RUNS:
            out.append(f"RLHF's {alg.upper()} holds {held}, as the estimate counts them; this file launches the "
                       "policy's training alone")
        else:
            # the frozen models as TRL places them: trl/models/utils.py prepare_deepspeed keeps ZeRO
            # stage 3 for them and sets any lower stage to 0, whole on every GPU (kb/memory/states.frozen_bf16)
            beside = ("the value, reference and reward models the estimate holds beside it (the frozen two"
                      if alg == "ppo" else "the reference model the estimate holds beside it (frozen,")
            loop = {"ppo": "rollout generation and the PPO loop", "grpo": "rollout generation and the GRPO loop",
                    "dpo": "the DPO loss over each pair's chosen and rejected sequences"}[alg]
            trainer = {"ppo": "PPOTrainer", "grpo": "GRPOTrainer", "dpo": "DPOTrainer"}[alg]
            pairs = ("; its batch sizes count preference pairs, as DPOTrainer's per_device_train_batch_size does, "
                     "half the estimate's sequences" if alg == "dpo" else "")
            out.append("RLHF: this file configures the policy's training alone (its parallelism, and steps that "
                       f"count the policy's optimizer steps); {beside} sharded at ZeRO-3, whole on every GPU below "
                       f"it), {loop} are your RLHF script's (TRL's {trainer}, OpenRLHF, verl){pairs}")
    return out


def zero_grad_carried(framework: str, job, lay) -> list[str]:
    """--zero-grad zeros is the training loop's call, which no config key sets (the Trainer's and
    torchtitan's loops call zero_grad() with PyTorch's set_to_none=True): said where it changes
    the estimate, where the layout's recipe keeps the gradients only because the loop does
    (kb/memory/states.Recipe.loop_kept: not Megatron's or DeepSpeed's buffers, which the
    Trainer hands the model to from ZeRO-1 on)."""
    from shardwise.kb.memory.states import recipe
    if framework == "megatron" or not recipe(job.training, lay.zero).loop_kept:
        return []
    return ["the estimate keeps the gradients between steps (--zero-grad zeros): the training loop calls "
            "optimizer.zero_grad(set_to_none=False), which no key of this file sets"]


def attention_carried(framework: str, job) -> list[str]:
    """Eager attention, which the estimate sized with its whole score matrices (and timed
    through HBM), where the export cannot set it: torchtitan and Nanotron have no unfused path
    (SDPA or FlexAttention; flash-attn), and the files that configure the user's own script
    (DeepSpeed, FSDP2, Accelerate) leave the model's attention to its from_pretrained call.
    Megatron's launch sets it (export/megatron/attention.py attention_backend_args)."""
    if framework == "megatron":
        return []
    if job.training.attention != "eager":
        return _window_kernel_carried(framework, job)
    if framework in WHOLE_RUNS:
        return [f"eager attention: {framework} runs a fused kernel, with no unfused path, so it needs less memory "
                "and time than the estimate, which sized eager's score matrices"]
    return ["eager attention is the model's from_pretrained(..., attn_implementation=\"eager\") in your script, "
            "which no key of this file sets"]


def _window_kernel_carried(framework: str, job) -> list[str]:
    """--attention flash or flash2 on a transformers model with sliding windows past them: the
    estimate sized flash-attn's windowed kernel, which the script's from_pretrained must ask for
    (the build kb/resolve.window_flash_build names, as the answer does); transformers' default,
    sdpa, masks the windows densely."""
    from shardwise.kb.resolve import window_flash_build
    build = None if framework in WHOLE_RUNS else window_flash_build(job)
    if build is None:
        return []
    kernel = f'"{build.impl}"' + (f", {build.no_fa3}" if build.no_fa3 else "") \
        + (f') (or "{build.other}", sized by --attention flash2' if build.other else "")
    return [f"sliding windows sized for a flash-attn kernel: your script's from_pretrained(..., "
            f"attn_implementation={kernel}), which no key of this file sets; transformers' default, sdpa, masks the "
            "windows densely, slower and larger"]


def loss_carried(framework: str, job) -> list[str]:
    """The loss's chunking where the export runs another (kb/memory/logits.loss_chunks): torchtitan's
    command sets the job's chunks (--loss.num_chunks), but one chunk still runs its ChunkedLossWrapper;
    the scripts the FSDP2 and Accelerate files serve take it whole unless they chunk it themselves."""
    from shardwise.kb.memory.logits import loss_chunks
    t = job.training
    if t.framework != "fsdp":
        return []
    chunks = loss_chunks(t)
    if framework == "torchtitan" and chunks == 1:
        # the command sets --loss.num_chunks (export/torchtitan.py); one chunk still runs the wrapper
        return ["--loss.num_chunks 1 still runs torchtitan's ChunkedLossWrapper, whose fp32 gradient of the hidden "
                "states (GradAccumulator, 4 bytes x hidden a token) the unchunked loss the estimate sized does not hold"]
    if framework in ("fsdp", "accelerate") and chunks > 1:
        return [f"the estimate sized torchtitan's loss, in {chunks} sequence chunks (ChunkedLossWrapper); a loss over "
                "the whole sequence in your script holds the whole logits (`--loss-chunks 1` sizes that)"]
    return []


def allocator_carried(framework: str, job) -> list[str]:
    """PyTorch's allocator where the export does not launch the run as the estimate assumed
    (kb/memory/overheads.allocator): torchtitan's run_train.sh always sets expandable segments; the
    files that configure the user's own launch (FSDP2, Accelerate, Nanotron) set no environment.
    The Megatron and DeepSpeed launch scripts export it themselves (target.allocator_environment)."""
    from shardwise.kb.memory.overheads import allocator
    kind = allocator(job.training)
    if framework == "torchtitan":
        # said where the user chose the caching allocator; a job sized for another framework's
        # default differs from torchtitan's run in more than this, which its other lines say
        return [] if job.training.allocator != "caching" else [
            "run_train.sh launches with PYTORCH_ALLOC_CONF=expandable_segments:True, where the estimate assumed "
            "PyTorch's caching allocator (--allocator caching), which holds more near capacity"]
    if framework in ("megatron", "deepspeed") or kind != "expandable":
        return []
    why = (", as torchtitan launches (--allocator caching sizes PyTorch's default)"
           if job.training.allocator == "default" else " (--allocator expandable)")
    return [f"the estimate assumes expandable segments{why}: set expandable_segments:True in PYTORCH_CUDA_ALLOC_CONF, "
            "and in PYTORCH_ALLOC_CONF if the environment sets it (torch reads one of them), which no key of this "
            "file does"]


def export(framework: str, target):
    """The framework's export; a layout with per-module recomputation goes to the others as
    selective recomputation, their nearest, and says so; so does a job timed on Megatron's
    full-iteration CUDA graphs, which the others cannot run. What the training type needs beyond
    the parallelism (adapters, a checkpoint to load) is said, or refused (training_carried)."""
    carried, lay = training_carried(framework, target.job), target.layout
    carried += zero_grad_carried(framework, target.job, lay)
    carried += attention_carried(framework, target.job)
    carried += loss_carried(framework, target.job)
    carried += allocator_carried(framework, target.job)
    if framework != "megatron" and target.job.training.cuda_graphs != "none":
        carried.append("--cuda-graphs full-iteration is Megatron-Core's whole-step CUDA graph; this runs without "
                       "it" + (", so the MoE layers' host-side time, which the estimate left out, is back"
                               if target.job.model.is_moe else ""))
    if framework != "megatron" and lay.recompute == "modules":
        lay = lay.with_(recompute="selective")
        carried.append(f"per-module recomputation ({' '.join(recompute_modules(target.job.model))}) is "
                       "Megatron-Core's --recompute-modules; exported as selective recomputation, the nearest")
    if framework != "megatron" and lay.offload:
        from .target import memory_as_run
        carried.append(f"offload={lay.offload}: activation offloading to host memory is Megatron-Core's "
                       f"(--cpu-offloading-num-layers); this runs without it, "
                       f"{memory_as_run(type(target)(target.job, lay), offload=0)}")
        lay = lay.with_(offload=0)
    ex = module(framework).export(type(target)(target.job, lay, tuple(carried)))
    ex.caveats[:0] = carried
    return ex


def export_all(target) -> dict:
    """Every framework's export (as dicts); a framework that refuses the job gives its reason."""
    from shardwise.kb.errors import InputError
    out = {}
    for name in FRAMEWORKS:
        try:
            out[name] = export(name, target).as_dict()
        except InputError as e:
            out[name] = {"framework": name, "files": {}, "caveats": [], "refused": str(e)}
    return out
