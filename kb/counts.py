"""Counts as users type them: ``70B`` parameters, ``100B`` tokens to train, ``4M`` tokens per
step, ``32k`` tokens per sequence.

Two conventions, as the field uses them (DESIGN.md, "Batch"): parameter counts and token
budgets are decimal (70B = 70 x 10^9; Chinchilla, the Llama papers), while token batches and
sequence lengths are binary (4M tokens = 4 x 2^20 = 4,194,304, the Llama 3 paper's "4M
tokens" step of 512 x 8,192; a 32K context = 32,768 tokens).
"""
from __future__ import annotations

import math
import re

from .errors import InputError

DECIMAL = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
BINARY = {"": 1, "k": 2 ** 10, "m": 2 ** 20, "b": 2 ** 30, "t": 2 ** 40}


def parse_count(text, flag: str = "--params", binary: bool = False) -> float:
    """'70B', '1.5T', '350M', '7e9' -> a positive number; K/M/B/T are powers of 1000, or of
    1024 with ``binary`` (token batches, sequence lengths)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBtT]?)\s*", str(text))
    if not m:
        raise InputError(f"{flag}: '{text}' is not a count; use a number with an optional K/M/B/T suffix, "
                         f"e.g. {'4M' if binary else '70B'}")
    value = float(m.group(1)) * (BINARY if binary else DECIMAL)[m.group(2).lower()]
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{flag}: '{text}' must be a positive count")
    return value


def parse_seq_len(value) -> int:
    """--seq-len / ``seq_len:``: a whole number of tokens, K binary (32k = 32,768)."""
    if isinstance(value, bool):
        raise InputError(f"--seq-len: {value!r} is not a number of tokens; e.g. 8192 or 32k")
    n = parse_count(value, "--seq-len", binary=True)
    if n != int(n):
        raise InputError(f"--seq-len: '{value}' is {n:,.1f} tokens, not a whole number; e.g. 8192 or 32k (= 32,768)")
    return int(n)


def binary_label(tokens: float) -> str:
    """4194304 -> '4M', 1536 -> '1.5K': the binary name of a token count, '' when it has no
    short one (so that a text never calls 4,000,000 tokens '4M')."""
    for suffix, unit in (("T", 2 ** 40), ("B", 2 ** 30), ("M", 2 ** 20), ("K", 2 ** 10)):
        if tokens >= unit:
            return f"{tokens / unit:g}{suffix}" if tokens * 4 / unit == int(tokens * 4 / unit) else ""
    return ""
