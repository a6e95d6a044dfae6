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
