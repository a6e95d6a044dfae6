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


# A number in exponent notation, with a count's optional suffix: '1e4', '7E9', '1.5e+3', '1e3K'
_EXPONENT = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))[eE]([+-]?[0-9]+)\s*([kKmMbBtT]?)\s*")


def exponent_refusal(name: str, text, binary: bool | None = None) -> InputError | None:
    """The refusal of a number written with an exponent ('1e4'), or None for any other text.
    Numbers are written in the digits 0-9 (README, "Bad input"), with the counts' K/M/B/T
    suffixes; Python's float() would take '1e4', and did on some flags but not on others nor
    in job files, so it is refused everywhere, the number written out as the hint. ``binary``
    (None: not a count) adds the count's suffix form where it is exact: 7e9 -> 7B."""
    m = _EXPONENT.fullmatch(str(text)) if isinstance(text, str) else None
    if not m:
        return None
    from decimal import Decimal
    mantissa, exponent, suffix = m.groups()
    hint = ""
    # written out only where that is short: not 1e999999999 (nor an exponent Decimal cannot hold)
    value = Decimal(f"{mantissa}e{exponent}") if len(exponent.lstrip("+-").lstrip("0")) <= 3 else None
    if value is not None and -12 <= value.adjusted() <= 24:
        digits = f"{value:f}"
        if "." in digits:
            digits = digits.rstrip("0").rstrip(".")
        hint = f", e.g. {digits}{suffix}"
        if binary is not None and not suffix:
            short = binary_label(float(value)) if binary else _decimal_label(value)
            hint += f" or {short}" if short and short != digits else ""
    shown = text.strip() if len(text.strip()) <= 40 else text.strip()[:40] + "..."
    return InputError(f"{name}: '{shown}': write the number with digits{hint}")


def _decimal_label(value) -> str:
    """7000000000 -> '7B', 1500000 -> '1.5M', '' without a short exact name."""
    for suffix, unit in (("T", 10 ** 12), ("B", 10 ** 9), ("M", 10 ** 6), ("K", 10 ** 3)):
        if value >= unit and (value * 100 / unit) == int(value * 100 / unit):
            digits = f"{value / unit:f}"    # trailing zeros go only after a point: 70B stays 70B, not 7B
            return (digits.rstrip("0").rstrip(".") if "." in digits else digits) + suffix
    return ""


def parse_count(text, flag: str = "--params", binary: bool = False, example: str = "") -> float:
    """'70B', '1.5T', '350M', '7000000000' -> a positive number; K/M/B/T are powers of 1000, or
    of 1024 with ``binary`` (token batches, sequence lengths). No exponent (exponent_refusal).
    ``example``: what a refusal shows to type instead, where the default (4M, 70B) is not one."""
    refusal = exponent_refusal(flag, text, binary)
    if refusal:
        raise refusal
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)     # a number the code passes (str(1e16) would be '1e+16'), not text typed
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMbBtT]?)\s*", str(text))
        if not m:
            raise InputError(f"{flag}: '{text}' is not a count; use a number with an optional K/M/B/T suffix, "
                             f"e.g. {example or ('4M' if binary else '70B')}")
        value = float(m.group(1)) * (BINARY if binary else DECIMAL)[m.group(2).lower()]
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{flag}: '{text}' must be a positive count")
    return value


def parse_seq_len(value) -> int:
    """--seq-len / ``seq_len:``: a whole number of tokens, K binary (32k = 32,768)."""
    if isinstance(value, bool):
        raise InputError(f"--seq-len: {value!r} is not a number of tokens; e.g. 8192 or 32k")
    n = parse_count(value, "--seq-len", binary=True, example="8192 or 32k")   # not 4M: a batch's, not a sequence's
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
