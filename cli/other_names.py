"""What other tools call a setting (the Trainer, DeepSpeed, torchrun, Megatron), and what shardwise
takes instead: a flag or job-file key of that name is refused with it. String similarity alone
answered these wrongly or not at all: --micro-batch got "did you mean --global-batch?", --zero
"--zero-grad", --nodes "--model", and --grad-accum or --batch-size nothing.
"""
from __future__ import annotations

_MBS = ("mbs", "the micro-batch size: sequences per GPU in one forward and backward")
_BATCH = ("global_batch", "the global batch in sequences over all GPUs; in tokens, {global_batch_tokens}")
_GPUS = ("gpus", "the GPU count over all nodes")
_NODES = ("gpus", "the GPU count over all nodes, with {gpus_per_node}")
_SEQ = ("seq_len", "tokens per sequence, e.g. 4k")
_DERIVED_GA = (None, "gradient accumulation is not given: it is the global batch / (mbs x DP), so give "
                     "{global_batch} (and {mbs} to fix the micro-batch)")
_CHOSEN = (None, "shardwise chooses the layout (recommend, search); to name one, `shardwise memory` or `export` "
                 "with --layout 'tp=1,zero=3,mbs=1'")
_TRAINING = ("training", "the training type: pretrain, finetune, lora, qlora or rlhf")
_PRECISION = ("precision", "bf16, pure-bf16 or fp8")
# the Trainer's and Accelerate's on/off switch, and Megatron's older flag: whole layers recomputed,
# shardwise's full; none and selective are the other answers to the same question
_RECOMPUTE = ("recompute", "activation recomputation: full is the Trainer's gradient_checkpointing, whole decoder "
                           "layers; none, selective, modules, or auto to let shardwise choose")

OTHER_NAMES = {
    **dict.fromkeys(("micro_batch", "micro_batch_size", "micro_bs", "per_device_train_batch_size",
                     "train_micro_batch_size_per_gpu", "batch_size_per_gpu"), _MBS),
    **dict.fromkeys(("batch_size", "batch", "global_batch_size", "train_batch_size", "gbs"), _BATCH),
    **dict.fromkeys(("num_gpus", "n_gpus", "ngpus", "gpu_count", "world_size"), _GPUS),
    **dict.fromkeys(("nodes", "num_nodes", "nnodes", "n_nodes"), _NODES),
    **dict.fromkeys(("seq_length", "sequence_length", "max_seq_len", "max_seq_length", "seqlen",
                     "context_length"), _SEQ),
    **dict.fromkeys(("ga", "grad_accum", "gradient_accumulation", "gradient_accumulation_steps"), _DERIVED_GA),
    **dict.fromkeys(("zero", "zero_stage", "tp", "pp", "dp", "cp", "ep", "vp", "tensor_parallel",
                     "pipeline_parallel", "layout"), _CHOSEN),
    "training_type": _TRAINING,
    **{k: ("training", _TRAINING[1], v) for k, v in (("lora", "lora"), ("qlora", "qlora"), ("peft", "lora"),
                                                      ("finetune", "finetune"))},
    **dict.fromkeys(("dtype", "mixed_precision", "bf16"), _PRECISION),
    **dict.fromkeys(("gradient_checkpointing", "activation_checkpointing", "grad_checkpointing",
                     "checkpoint_activations", "recompute_activations", "recompute_granularity"), _RECOMPUTE),
    "lora_r": ("lora_rank", "PEFT's LoraConfig r"),
    **dict.fromkeys(("load_in_4bit", "bnb_4bit"), ("training", _TRAINING[1], "qlora")),
    "nproc_per_node": ("gpus_per_node", "GPUs per node"),
    "gpu_type": ("gpu", "a catalog GPU, e.g. a100-80gb (shardwise kb gpus)"),
    **dict.fromkeys(("model_name", "model_name_or_path"), ("model", "a catalog model, or {hf_config} PATH "
                                                                    "for a config.json")),
    "config": ("hf_config", "a Hugging Face config.json or its folder"),
}


class _Shown(dict):
    """A setting named in a hint, as the place it is typed writes it: --global-batch or global_batch."""

    def __init__(self, as_flag: bool):
        super().__init__()
        self.as_flag = as_flag

    def __missing__(self, key: str) -> str:
        return f"--{key.replace('_', '-')}" if self.as_flag else key


def other_name_hint(name: str, takes, as_flag: bool) -> str:
    """What to type instead of ``name`` (a flag, or a job-file key), where OTHER_NAMES has it and
    the command ``takes`` the setting it maps to (``takes``: the job keys, underscored); ""
    otherwise. ``as_flag`` writes settings as flags (--mbs), else as job-file keys (mbs)."""
    key = name.lstrip("-").replace("-", "_").lower()
    if key not in OTHER_NAMES:
        return ""
    target, what, *value = OTHER_NAMES[key]
    shown = _Shown(as_flag)
    if target is None:
        return what.format_map(shown)
    if target not in takes:
        return ""
    typed = f"{shown[target]} {value[0]}" if as_flag and value else \
        f"{shown[target]}: {value[0]}" if value else shown[target]
    return f"type {typed} ({what.format_map(shown)})"
