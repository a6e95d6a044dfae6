"""Time per step: FLOPs (flops.py), shape-dependent compute (compute.py), collectives over the
links groups span (comm.py), composed with the pipeline schedule (step.py)."""
from .step import StepTime, step_time

__all__ = ["StepTime", "step_time"]
