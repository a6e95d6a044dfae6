"""Memory per GPU: model states (states.py) with the optimizer's states and temporaries
(optimizers.py), activations (activations.py), logits (logits.py),
allowances outside PyTorch's allocator (overheads.py), composed into the step's peak
(estimate.py)."""
from .estimate import MemoryEstimate, estimate_memory

__all__ = ["MemoryEstimate", "estimate_memory"]
