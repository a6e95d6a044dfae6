"""The environment a DeepSpeed launch script sets: the Trainer's Ulysses switch, and what the other
nodes of a multi-node launch need to be told.

The transformers Trainer turns DeepSpeed's Ulysses sequence parallelism on only through
Accelerate's ParallelismConfig (transformers 5.24 trainer.py: the sp_backend "deepspeed" branches;
accelerate 1.15 accelerator.py _prepare_deepspeed registers UlyssesSPAttentionHF and wraps the data
loader only where parallelism_config.sp_size > 1). ds_config.json's sequence_parallel_size alone
builds no sequence-parallel group: without an mpu DeepSpeed counts every rank as data-parallel,
and each holds whole sequences. A Trainer script built from TrainingArguments gets the config
from the environment: Accelerator reads ACCELERATE_USE_PARALLELISM_CONFIG, and ParallelismConfig
and its DeepSpeedSequenceParallelConfig the PARALLELISM_CONFIG_SP_* variables
(accelerate parallelism_config.py __post_init__, utils/dataclasses.py).

DeepSpeed's multi-node launcher (pdsh) gives the other nodes only variables named MLFLOW*,
PYTHON*, MV2*, UCX*, the accelerator's own (NCCL*) and the lines of .deepspeed_env in the home
or working folder (deepspeed 0.19.8 launcher/runner.py EXPORT_ENVS, DEEPSPEED_ENVIRONMENT_PATHS):
an `export` in the script reaches the first node alone.
"""
from __future__ import annotations

from shardwise.kb.frameworks import flash_attn_build

# Accelerate's Ulysses takes these attention implementations (utils/dataclasses.py
# DeepSpeedSequenceParallelConfig: _builtin_sp_attn, or a hub kernel), and refuses eager and flex_attention
SP_ATTENTION = ("flash_attention_2", "flash_attention_3", "sdpa")


def sp_attention(tg) -> tuple[str, list[str]]:
    """The attention implementation Accelerate's Ulysses runs for the job's --attention, and the
    caveats where it is not the one the estimate timed: FlashAttention-4 (Blackwell's flash class)
    is not among SP_ATTENTION, so flash-attn 2 runs. (Eager attention never gets here: CP needs a
    fused kernel, validity rule cp-fused-attention.)"""
    m, t, gpu = tg.job.model, tg.job.training, tg.job.cluster.gpu
    if t.attention == "sdpa":
        return "sdpa", []
    impl = flash_attn_build(t.attention, gpu, m.head_dim).impl
    if impl in SP_ATTENTION:
        return impl, []
    return "flash_attention_2", [f"Accelerate's Ulysses runs flash_attention_2, flash_attention_3 or sdpa, not {impl}, "
                                 f"which the estimate times: flash_attention_2 is set, slower on this GPU than timed"]


def ulysses_environment(tg) -> tuple[list[str], list[str]]:
    """(launch-script lines, caveats): the variables that turn the Trainer's Ulysses on for cp > 1
    under --framework hf (module docstring); nothing elsewhere -- a Megatron-DeepSpeed script takes
    --ds-sequence-parallel-size."""
    lay, t = tg.layout, tg.job.training
    if t.framework != "hf" or lay.cp == 1:
        return [], []
    impl, caveats = sp_attention(tg)
    lines = ["# the Trainer runs Ulysses only through Accelerate's ParallelismConfig, read from these variables; "
             "sequence_parallel_size in ds_config.json alone builds no sequence-parallel group",
             "export ACCELERATE_USE_PARALLELISM_CONFIG=true",
             f"export PARALLELISM_CONFIG_SP_SIZE={lay.cp}",
             "export PARALLELISM_CONFIG_SP_BACKEND=deepspeed",
             f"export PARALLELISM_CONFIG_SP_ATTN_IMPLEMENTATION={impl}"]
    return lines, caveats


def to_other_nodes(tg, lines: list[str]) -> list[str]:
    """Where DeepSpeed's launcher starts several nodes, the lines that hand them the variables
    ``lines`` export (module docstring): written to .deepspeed_env in the working folder, which
    the launcher reads (replacing that file; ~/.deepspeed_env is read as well)."""
    names = [x.split("=", 1)[0].removeprefix("export ") for x in lines if x.startswith("export ")]
    if tg.job.cluster.nodes == 1 or not names:
        return []
    names = list(dict.fromkeys(names))
    return ["# DeepSpeed's launcher passes the other nodes only NCCL_*, PYTHON*, UCX*, MV2*, MLFLOW* and the lines of "
            ".deepspeed_env: this run's variables go there (the file in this folder is replaced)",
            "printf '%s\\n' " + " ".join(f'"{n}=${n}"' for n in names) + " > .deepspeed_env"]
