"""Time per step: FLOPs (flops.py), shape-dependent compute (compute.py) and the memory-bound
traffic around it (traffic.py, unfused.py; the optimizer's and the weight casts' in
param_traffic.py), collectives over the links groups span (comm.py), the data-parallel
synchronisation of each ZeRO stage (dp_sync.py), composed with the pipeline schedule (step.py).

``from shardwise.kb.perf import step_time`` works as before; step.py loads on first use."""

__all__ = ["StepTime", "step_time"]


def __getattr__(name: str):
    if name in __all__:
        from . import step
        return getattr(step, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
