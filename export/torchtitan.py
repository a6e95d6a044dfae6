"""torchtitan 0.3: a run_train.sh command (registry --module/--config plus tyro overrides).

TOML configs are gone since 0.3 (docs/reference/framework-configs.md section 5). FSDP2
shards over data_parallel_shard_degree; ZeRO-1 has no torchtitan equivalent (the nearest is
fsdp_reshard_after_forward never, which is ZeRO-2). With PP, local_batch_size carries every
micro-batch of the step and pipeline_parallel_microbatch_size the micro-batch; without PP,
accumulation = global / (local x DP).
"""
from __future__ import annotations

from shardwise.kb.frameworks import torchtitan_async_tp
from shardwise.kb.memory.logits import TORCHTITAN_LOSS_CHUNKS, loss_chunks

from .optimizer import WHAT, named, runs_instead
from .target import Export, Target, dp_dims, hsdp_caveats, shell_command, with_caveats
from .torchtitan_build import build_caveat, missing_blocks

# torchtitan model registry entries (torchtitan/models/*/__init__.py of 0.3.0)
REGISTRY = {
    "llama-3-8b": ("llama3", "llama3_8b"), "llama-3.1-8b": ("llama3", "llama3_8b"),
    "llama-3-70b": ("llama3", "llama3_70b"), "llama-3.1-70b": ("llama3", "llama3_70b"),
    "llama-3.1-405b": ("llama3", "llama3_405b"),
    "qwen3-32b": ("qwen3", "qwen3_32b"), "qwen3-30b-a3b": ("qwen3", "qwen3_30b_a3b"),
    "deepseek-v3": ("deepseek_v3", "deepseek_v3_671b"),
    "gpt-oss-20b": ("gpt_oss", "gpt_oss_20b"), "gpt-oss-120b": ("gpt_oss", "gpt_oss_120b"),
}

# What each registry module's entries build that no flag changes: the RMSNorm eps and the RoPE
# scaling (torchtitan 0.3.0: models/common/nn_modules.py RMSNorm.Config eps 1e-5, which llama3,
# deepseek_v3 and gpt_oss leave as it is; qwen3/__init__.py _EPS 1e-6; llama3/__init__.py
# ComplexRoPE scaling "llama", Llama 3.1's; deepseek_v3 and gpt_oss "yarn"; qwen3 none)
REGISTRY_NUMERICS = {"llama3": (1e-5, "llama3"), "qwen3": (1e-6, ""), "deepseek_v3": (1e-5, "yarn"),
                     "gpt_oss": (1e-5, "yarn")}
TORCHTITAN_NORM_EPS = 1e-5


def registry_caveats(m, module: str | None, conf: str | None) -> list[str]:
    """Where the registry entry (or, for a model without one, RMSNorm.Config's default eps) builds
    other numerics than the model's: torchtitan 0.3 takes the model from a Python registry
    function, so the command line cannot set them."""
    if module is None:
        return [] if m.norm_eps == TORCHTITAN_NORM_EPS else [
            f"its norm epsilon is {m.norm_eps:g} (config.json rms_norm_eps): give that function's RMSNorm.Config "
            f"eps={m.norm_eps:g}; torchtitan's default is {TORCHTITAN_NORM_EPS:g}"]
    eps, scaling = REGISTRY_NUMERICS[module]
    caveats = []
    if m.norm_eps != eps:
        caveats.append(f"torchtitan's {conf} builds its RMSNorms with eps {eps:g}; {m.name} trains with "
                       f"{m.norm_eps:g} (config.json rms_norm_eps): set eps in a copy of the registry entry; same "
                       "shapes, other numerics")
    if m.rope_scaling != scaling:
        caveats.append(f"torchtitan's {conf} applies {scaling or 'no'} RoPE scaling; {m.name} has "
                       f"{m.rope_scaling or 'none'} (config.json rope_scaling): change the rope in a copy of the "
                       "registry entry; same shapes, other numerics")
    return caveats


def flags(tg: Target) -> tuple[list[str], list[str], tuple]:
    lay, m, t = tg.layout, tg.job.model, tg.job.training
    caveats = []
    module, conf = REGISTRY.get(m.name, (None, None))
    # the eps a registry function should set is moot where no function builds the model
    said = [] if module is None and missing_blocks(m, t.seq_len) else registry_caveats(m, module, conf)
    if module is None:
        caveats.append(build_caveat(m, t.seq_len, lay.cp))
        module, conf = "$MODULE", "$CONFIG"
    caveats += said
    rep, shard = dp_dims(lay)
    caveats += hsdp_caveats(lay)
    # ZeRO-3 reshards after forward, but not a pipelined stage: the estimate sizes and times it
    # unsharded from forward to backward, gathered once a step, as torchtitan's "default" policy
    # runs it under PP (distributed/fsdp.py get_fsdp_reshard_after_forward_policy; states.py)
    reshard = "always" if lay.zero == 3 and lay.pp == 1 else "never"
    if lay.zero == 1:
        caveats.append("ZeRO-1: torchtitan has none; FSDP2 with reshard never (ZeRO-2: gradients sharded too)")
    f = ["--parallelism.data_parallel_replicate_degree", rep, "--parallelism.data_parallel_shard_degree", shard,
         "--parallelism.fsdp_reshard_after_forward", reshard,
         "--parallelism.tensor_parallel_degree", lay.tp]
    f += ["--parallelism.enable_sequence_parallel" if lay.sp else "--parallelism.no-enable-sequence-parallel"]
    if lay.tp > 1:
        # async TP exactly where the step time hides TP behind it (frameworks.torchtitan_async_tp,
        # which needs the model compiled: CompileConfig refuses it without "model" in components,
        # which deepseek_v3_671b's entry leaves out); off elsewhere, where the symmetric memory it
        # needs has no NVLink, overriding registry entries that set it (llama3_405b)
        f += (["--compile.enable", "--compile.components", "model,loss", "--compile.enable_async_tensor_parallel"]
              if torchtitan_async_tp(lay, tg.job.cluster) else ["--compile.no-enable-async-tensor-parallel"])
    f += ["--parallelism.pipeline_parallel_degree", lay.pp]
    if lay.pp > 1:
        f += ["--parallelism.pipeline_parallel_schedule", "Interleaved1F1B" if lay.vp > 1 else "1F1B",
              "--parallelism.pipeline_parallel_microbatch_size", lay.mbs]
        if lay.vp > 1:
            # torchtitan counts the embedding and the output as a layer each and builds
            # ceil((L + 2) / layers_per_stage) virtual stages (generate_llm_fqn_per_model_part)
            stages = lay.pp * lay.vp
            per = max(1, -(-(m.layers + 2) // stages))
            built = -(-(m.layers + 2) // per)
            f += ["--parallelism.pipeline_parallel_layers_per_stage", per]
            if built != stages:
                caveats.append(f"{m.layers} layers + embedding + output do not split into {stages} virtual stages of "
                               f"{per}: torchtitan would build {built}")
        local = lay.mbs * lay.grad_accum
    else:
        local = lay.mbs
    f += ["--parallelism.context_parallel_degree", lay.cp, "--parallelism.expert_parallel_degree", lay.ep,
          "--training.local_batch_size", local, "--training.global_batch_size", tg.global_batch,
          "--training.seq_len", t.seq_len]
    if t.framework == "fsdp" and loss_chunks(t) != TORCHTITAN_LOSS_CHUNKS:
        # the chunks the fsdp estimate sized; every registry entry's loss is ChunkedLossWrapper
        # (components/loss.py), num_chunks 8. A job sized for another framework keeps the recipe's
        f += ["--loss.num_chunks", loss_chunks(t)]
    if tg.train_steps:
        f += ["--training.steps", tg.train_steps]
    if t.precision == "pure-bf16":
        f += ["--training.dtype", "bfloat16"]
    else:
        f += ["--training.mixed_precision_param", "bfloat16"]
    if lay.pp > 1 or lay.ep > 1:
        # CUDA graphs (on by default) refuse pipelining and the all-to-all EP dispatcher
        # (torchtitan trainer.py Config._validate_cuda_graphs)
        f += ["--training.disable_cuda_graphs"]
    if t.precision == "fp8":
        caveats.append("fp8: torchtitan sets Float8 as a model converter in a registry function "
                       "(e.g. llama3_8b_mxfp8); this command trains in bf16")
    elif conf == "llama3_405b":
        caveats.append("torchtitan's llama3_405b registry entry turns on Float8 linears (converters); for the "
                       f"{t.precision} run planned here, drop them from a copy of that entry")
    more, caveats_opt = optimizer_flags(tg)
    f += more
    caveats += caveats_opt
    ac = {"none": "activation-checkpoint:none", "selective": "activation-checkpoint:selective",
          "full": "activation-checkpoint:full"}[lay.recompute]
    return [str(x) for x in f] + [ac], caveats, (module, conf)


# --optimizer.implementation for torch's AdamW (OptimizersContainer.Config: fused, the default;
# foreach; for-loop, torch's single-tensor one)
IMPLEMENTATION = {"adamw-fused": "fused", "adamw-foreach": "foreach", "adamw-single": "for-loop"}


def optimizer_flags(tg: Target) -> tuple[list, list[str]]:
    """torchtitan 0.3's optimizer: the registry's param groups name it (AdamW, the default), and
    torchtitan builds Adam, AdamW and DistMuon only (OptimizersContainer
    _resolve_optimizer_factory); --optimizer.implementation picks AdamW's kernel. SGD, 8-bit AdamW
    and Adafactor are not torchtitan's: the registry's fused AdamW runs, said with its memory."""
    o = named(tg)
    if o is None:
        return [], []
    if o in IMPLEMENTATION:
        return ["--optimizer.implementation", IMPLEMENTATION[o]], []
    return [], [runs_instead(tg, f"torchtitan builds Adam, AdamW and DistMuon only, no {WHAT[o]}",
                             "the registry entry's AdamW, fused", "adamw-fused")]


def export(tg: Target) -> Export:
    f, caveats, (module, conf) = flags(tg)
    c = tg.job.cluster
    multi = [] if c.nodes == 1 else [
        # run_train.sh starts torchrun on one node (rdzv endpoint localhost); torchtitan's
        # multinode_trainer.slurm runs the same module on every node
        f"# {c.nodes} nodes: run_train.sh starts one; on each node run torchrun --nnodes {c.nodes} "
        f"--nproc_per_node {c.gpus_per_node} --rdzv_backend c10d --rdzv_endpoint $HEAD_NODE:29500 -m torchtitan.train "
        f"--module {module} --config {conf} with these flags (torchtitan's multinode_trainer.slurm)"]
    lines = with_caveats(tg.header(), caveats) + [tg.steps_comment(unset="torchtitan's default --training.steps")] \
        + multi + shell_command(
        f"NGPU={c.gpus_per_node} MODULE={module} CONFIG={conf} ./run_train.sh", f, positional=("activation-",))
    return Export("torchtitan", {"torchtitan_train.sh": "\n".join(lines) + "\n"}, caveats)
