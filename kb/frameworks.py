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
    """Whether the Megatron export hides the expert-parallel all-to-all behind another
    micro-batch's compute (--overlap-moe-expert-parallel-comm, the batch-level 1F1B overlap
    NVIDIA's recipes call moe_a2a_overlap), and so whether the estimate counts the profile's `ep`
    overlap (kb/perf/step.ep_hidden_share) and the extra warm-up forward it costs in memory
    (kb/memory/activations.stage_activations): wherever Megatron-Core accepts it. That is EP > 1,
    an alltoall or flex dispatcher, no full recomputation (nor a recompute method), interleaved
    stages when PP > 1 (TransformerConfig.__post_init__); without PP it pairs one micro-batch's
    forward with another's backward (pipeline_parallel/combined_1f1b.py), so a step of one
    micro-batch has nothing to pair.

    NVIDIA turns it on where the all-to-all crosses nodes (Qwen3-235B and DeepSeek-V3 on H100,
    Megatron-Bridge's qwen3 and deepseek workload configs; Megatron-MoE-ModelZoo: 19.7 s ->
    17.6 s a step) and mostly leaves it off inside an NVL72 rack, where it dispatches with
    HybridEP / DeepEP over NVLink instead (WorkloadBaseConfig's default). Exposing those runs'
    all-to-all in full read them 9-14% too slow (Qwen3-30B, DeepSeek-V3 on GB200 and B200): the
    faster dispatch hides about as much, so the estimate takes the overlap on every layout
    Megatron allows. Works on the search's layout arrays."""
    from .vec import where
    pairs = ((lay.pp == 1) & (lay.grad_accum > 1)) | ((lay.pp > 1) & (lay.vp > 1))
    return where((lay.ep > 1) & pairs, lay.recompute != "full", False)
