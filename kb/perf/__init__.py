"""Time per step: FLOPs (flops.py), shape-dependent compute (compute.py), collectives over the
links groups span (comm.py), composed with the pipeline schedule (step.py).

``from shardwise.kb.perf import step_time`` works as before; step.py loads on first use."""

__all__ = ["StepTime", "step_time"]


def __getattr__(name: str):
    if name in __all__:
        from . import step
        return getattr(step, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
