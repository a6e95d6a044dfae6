"""Memory per GPU: model states (states.py) with the optimizer's states and temporaries
(optimizers.py), activations (activations/), logits (logits.py),
allowances outside PyTorch's allocator (overheads.py), composed into the step's peak
(estimate.py).

``from shardwise.kb.memory import estimate_memory`` works as before; estimate.py loads on
first use, so that importing one of the term modules does not load them all."""

__all__ = ["MemoryEstimate", "estimate_memory"]


def __getattr__(name: str):
    if name in __all__:
        from . import estimate
        return getattr(estimate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
