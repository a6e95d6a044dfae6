"""A job: model, cluster and training spec together (what a layout must satisfy: kb/validity.py)."""
from __future__ import annotations

from dataclasses import dataclass

from .schema import ClusterSpec, ModelSpec, TrainingSpec


@dataclass(frozen=True)
class Job:
    model: ModelSpec
    cluster: ClusterSpec
    training: TrainingSpec


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
