"""Scalar-or-array arithmetic, so that one formula scores one layout and a whole search space.

Every estimator is written once. Called with a Layout (Python numbers) it runs plain Python
and returns floats; called with a LayoutArrays (NumPy arrays, search/space.py) the same lines
broadcast over every candidate at once. Only the branches that depend on a layout setting go
through these helpers; branches on the job (model, cluster, framework) stay ordinary ``if``s.
"""
from __future__ import annotations

import math

import numpy as np


_ARRAY = np.ndarray


def _any_array(*xs) -> bool:
    for x in xs:
        if type(x) is _ARRAY:
            return True
    return False


def where(cond, a, b):
    """``a if cond else b``, elementwise when any argument is an array."""
    if type(cond) is _ARRAY or type(a) is _ARRAY or type(b) is _ARRAY:
        return np.where(cond, a, b)
    return a if cond else b


def _fold(array_op, plain_op, xs):
    if not _any_array(*xs):
        return plain_op(xs)
    out = xs[0]
    for x in xs[1:]:
        out = array_op(out, x)
    return out


def minimum(*xs):
    return _fold(np.minimum, min, xs)


def maximum(*xs):
    return _fold(np.maximum, max, xs)


def floor(x):
    """int(x) for a non-negative scalar, np.floor for an array."""
    return np.floor(x) if isinstance(x, np.ndarray) else int(x)


def ceil_log2(n):
    return np.ceil(np.log2(n)) if isinstance(n, np.ndarray) else math.ceil(math.log2(n))


def both(a, b):
    """Logical and."""
    return np.logical_and(a, b) if _any_array(a, b) else (a and b)
