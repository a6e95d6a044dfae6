"""Framework profiles (kb/data/frameworks.yaml), read once: what each framework can run and
how much communication it hides. One place answers "does this framework have X"."""
from __future__ import annotations

from .package_data import package_yaml


def _profiles() -> dict:
    return package_yaml("frameworks")["frameworks"]


def profile(framework: str) -> dict:
    return _profiles()[framework]


def has_sequence_parallel(framework: str) -> bool:
    """Whether the framework shards norms and dropouts over the TP ranks (its `sequence_parallel`)."""
    return bool(profile(framework)["sequence_parallel"])


def recompute_modes(framework: str) -> tuple[str, ...]:
    """The recomputation modes the framework can run (its `recompute`)."""
    return tuple(profile(framework)["recompute"])


def autoep_preset(family: str) -> str | None:
    """DeepSpeed AutoEP's preset for a model family (its config.json model_type), or None where
    AutoEP has none: the frameworks.yaml `autoep` section, with its source."""
    return package_yaml("frameworks")["autoep"]["presets"].get(family)


def autoep_families() -> tuple[str, ...]:
    """The model families DeepSpeed AutoEP has a preset for, sorted."""
    return tuple(sorted(package_yaml("frameworks")["autoep"]["presets"]))


def megatron_ep_overlap(lay):
    """Whether Megatron-Core can hide the expert-parallel all-to-all behind another micro-batch's
    compute (--overlap-moe-expert-parallel-comm, the batch-level 1F1B overlap NVIDIA's MoE recipes
    run as moe_a2a_overlap): TransformerConfig.__post_init__ accepts it only with EP > 1, an
    alltoall or flex dispatcher, no full recomputation (nor a recompute method), and interleaved
    stages when PP > 1. The Megatron export sets it exactly where this holds, and the step time
    counts the profile's `ep` overlap only there. Works on the search's layout arrays."""
    from .vec import where
    return where((lay.ep > 1) & ((lay.pp == 1) | (lay.vp > 1)), lay.recompute != "full", False)
