"""How the decision's numbers read in text (no imports: the CLI's renderers use it cheaply)."""
from __future__ import annotations


def _decimals(x: float) -> int | None:
    """How many decimals a percent difference is read to: 0.1 or more to one, below that to
    two, and under 0.005 none (shown as 0: the estimator cannot tell such layouts apart)."""
    x = abs(x)
    return 1 if round(x, 2) >= 0.1 else 2 if x >= 0.005 else None


def pct(x: float) -> str:
    """A percent difference as people read it, unsigned (_decimals)."""
    n = _decimals(x)
    return f"{abs(x):.{n}f}%" if n else "0%"


def pct_value(x: float) -> float:
    """The number pct() shows, signed: the JSON's percents are rounded with it, so that a
    renderer reading the JSON and one reading the unrounded figure print the same digits
    (rounding to 2 decimals and then to 1 turned -2.749 into 2.8% beside a 2.7%)."""
    n = _decimals(x)
    return round(x, n) if n else 0.0


def slower(x: float) -> str:
    """'3.2% slower', or 'as fast, to 0.01%' when the estimator cannot tell the two apart."""
    p = pct(x)
    return f"{p} slower" if p != "0%" else "as fast, to 0.01%"


def slower_or_faster(x: float) -> str:
    """How much slower a layout is, ``x`` percent (a negative ``x``: how much faster)."""
    return slower(x) if x >= 0 else faster(-x)


def faster(x: float) -> str:
    """'3.2% faster', or 'as fast (to 0.01%)' when the estimator cannot tell the two apart."""
    p = pct(x)
    return f"{p} faster" if p != "0%" else "as fast (to 0.01%)"
