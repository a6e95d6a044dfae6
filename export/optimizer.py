"""--optimizer in the exports: the optimizer each framework's file runs, and what it cannot run.

"adamw" means the framework's own AdamW (kb/memory/optimizers.FRAMEWORK_ADAMW: a fused one in every
profile), which is every framework's default: the files leave it to the framework. Any other
name (kb/memory/optimizers.py sizes each) is written where the framework has a setting for it
and said (`cannot express:`) where it has none, with the optimizer the file runs instead and
the estimated memory of the run as it goes.
"""
from __future__ import annotations

from .target import Target, memory_as_run

# The optimizer the estimate sized, as a training script constructs it (kb/memory/optimizers.py):
# torch's AdamW in each implementation, bitsandbytes' blockwise 8-bit AdamW, transformers' Adafactor
# as the Trainer builds it (optim="adafactor": scale_parameter and relative_step off), and SGD with
# momentum (one buffer a parameter; torch.optim.SGD keeps none at its default momentum 0).
CONSTRUCTOR = {
    "adamw-fused": "torch.optim.AdamW(params, lr=lr, fused=True)",
    "adamw-foreach": "torch.optim.AdamW(params, lr=lr, foreach=True)",
    "adamw-single": "torch.optim.AdamW(params, lr=lr, foreach=False)",
    "adamw-8bit": "bitsandbytes.optim.AdamW8bit(params, lr=lr)",
    "adafactor": "transformers.optimization.Adafactor(params, lr=lr, scale_parameter=False, relative_step=False)",
    "sgd": "torch.optim.SGD(params, lr=lr, momentum=0.9)",
}
# The module each constructor needs imported (torch is imported by every script).
IMPORT = {"adamw-8bit": "bitsandbytes.optim", "adafactor": "transformers.optimization"}

# The transformers Trainer's --optim (and --optim_args) for each (transformers trainer_optimizer.py:
# adamw_torch is torch.optim.AdamW at its defaults, the foreach implementation on CUDA;
# adamw_torch_fused passes fused=True; sgd reads momentum from optim_args). The Trainer has no
# name for the single-tensor AdamW: adamw_torch, the nearest, runs foreach (trainer_caveats).
TRAINER = {"adamw-fused": ("adamw_torch_fused", None), "adamw-foreach": ("adamw_torch", None),
           "adamw-single": ("adamw_torch", None), "adamw-8bit": ("adamw_bnb_8bit", None),
           "adafactor": ("adafactor", None), "sgd": ("sgd", "momentum=0.9")}

# What DeepSpeed's ZeRO calls a tested optimizer (deepspeed/runtime/zero/utils.py
# ZERO_SUPPORTED_OPTIMIZERS: torch's Adam/AdamW, its FusedAdam, Adagrad, Lion); under ZeRO any
# other refuses to start without "zero_allow_untested_optimizer": true.
ZERO_UNTESTED = ("adamw-8bit", "adafactor", "sgd")

# Optimizers that cannot step FSDP2's parameters, DTensors sharded over the mesh: transformers'
# Adafactor keeps its factored moments as plain tensors ("aten.add_.Tensor got mixed torch.Tensor
# and DTensor"), and torch.optim.Adafactor's norm needs a placement change it refuses (both on the
# fake process group, torch 2.13, transformers 5.24).
DTENSOR_REFUSES = ("adafactor",)

WHAT = {"adamw-fused": "fused AdamW", "adamw-foreach": "torch's foreach AdamW",
        "adamw-single": "torch's single-tensor AdamW", "adamw-8bit": "8-bit AdamW (bitsandbytes' AdamW8bit)",
        "adafactor": "Adafactor", "sgd": "SGD with momentum"}


def named(tg: Target) -> str | None:
    """The optimizer the user named, or None for "adamw" (the framework's own, its default)."""
    o = tg.job.training.optimizer
    return None if o == "adamw" else o


def runs_instead(tg: Target, has_not: str, runs: str, runs_as: str | None) -> str:
    """The caveat for an optimizer the framework cannot run: what it lacks, what the file runs
    instead and, where ``runs_as`` names it as an --optimizer, the estimate of the run with it."""
    o = tg.job.training.optimizer
    memory = f" ({memory_as_run(tg, optimizer=runs_as)})" if runs_as else ""
    return f"--optimizer {o}: {has_not}; this file runs {runs}{memory}"


def trainer_flags(tg: Target) -> str:
    """The Trainer's optimizer flags for the job's optimizer ('' for the framework's own AdamW,
    the Trainer's default adamw_torch_fused)."""
    o = named(tg)
    if o is None:
        return ""
    optim, args = TRAINER[o]
    return f" --optim {optim}" + (f" --optim_args {args}" if args else "")


def trainer_caveats(tg: Target) -> list[str]:
    """What the Trainer's --optim cannot name: the single-tensor AdamW (adamw_torch runs foreach)."""
    if named(tg) != "adamw-single":
        return []
    return [runs_instead(tg, "the Trainer's --optim has no single-tensor AdamW (pass your own "
                             "torch.optim.AdamW(..., foreach=False) as Trainer(optimizers=...))",
                         "adamw_torch, torch's foreach AdamW, with a temporary of every parameter at the step",
                         "adamw-foreach")]


def script_caveat(tg: Target, where: str) -> list[str]:
    """For a file that configures the user's own training script and has no optimizer setting
    (``where`` names the file): the optimizer the script constructs."""
    o = named(tg)
    if o is None:
        return []
    optim, args = TRAINER[o]
    trainer = ("the Trainer has no name for it: its adamw_torch runs torch's foreach AdamW" if o == "adamw-single"
               else f"the Trainer: --optim {optim}{' --optim_args ' + args if args else ''}")
    return [f"--optimizer {o}: {where} has no optimizer setting; your script constructs it, "
            f"{CONSTRUCTOR[o]} ({trainer})"]


def fsdp2_refuses(tg: Target) -> list[str]:
    """The caveat for an optimizer that cannot step FSDP2's sharded parameters (DTENSOR_REFUSES)."""
    o = named(tg)
    if o not in DTENSOR_REFUSES:
        return []
    return [f"--optimizer {o}: {WHAT[o]} cannot step FSDP2's sharded (DTensor) parameters (transformers' and "
            "torch's both fail on them), so no optimizer is written: the run needs another --optimizer, or "
            "DeepSpeed's ZeRO, whose optimizer steps plain tensors"]
