"""Render a result (a plain dict) as json, yaml, markdown or a table. Output is deterministic:
the same input gives the same bytes (keys in insertion order, floats rounded by the producer)."""
from __future__ import annotations

import json
from typing import Callable

import click
import yaml

FORMATS = ["table", "json", "yaml", "markdown"]
# every command's --format, in any case like the job flags' choices (a click decorator, shared)
format_option = click.option("--format", "fmt", type=click.Choice(FORMATS, case_sensitive=False), default="table",
                             show_default=True)


def to_json(data: dict) -> str:
    # strict JSON: an Infinity or NaN that reached the answer is a bug to see, not text that
    # JSON readers other than Python's reject
    return json.dumps(data, indent=2, sort_keys=False, allow_nan=False)


def to_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def emit(data: dict, fmt: str, render: Callable[[bool], str]) -> None:
    """Print a command's result: json and yaml print the data, table and markdown print what
    ``render(markdown)`` draws from it."""
    if fmt == "json":
        click.echo(to_json(data))
    elif fmt == "yaml":
        click.echo(to_yaml(data), nl=False)
    else:
        click.echo(render(fmt == "markdown"))


def table(rows: list[list], headers: list[str], markdown: bool = False) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    if markdown:
        lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |",
                 "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    else:
        lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


def token_count(n: float) -> str:
    """A token count as people write it: 500B tokens, 1.5T tokens, 4,096 tokens."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:,.4g}{unit} tokens"
    return f"{n:,.0f} tokens"


def duration_text(mt: dict) -> str:
    """The time to train a run's metrics give: hours and days ('916.5 h (38.2 days)'), under a day
    in hours alone (a two-hour fine-tune read '1.0 h (0.0 days)'), or under an hour in minutes,
    from the budget and tokens/s themselves -- time_to_train_h is rounded to 0.01 h, and a short
    fine-tune read '0.0 h (0.0 days)'."""
    hours = mt["token_budget"] / mt["tokens_per_s"] / 3600.0
    if hours < 1:
        return f"{hours * 60:,.1f} min"
    if hours < 24:
        return f"{hours:,.1f} h"
    return f"{hours:,.1f} h ({hours / 24:,.1f} days)"


# what the time-to-train line says without a budget: the figure a budget owner came for is one flag away
NO_BUDGET = "not estimated: give --token-budget (tokens to train, e.g. 100B; for the cost also --price-per-gpu-hour)"


def hours(h: float) -> str:
    """A table cell's time to train in hours; under an hour to 0.01 h (a short run read 0.0), and
    under 0.01 h to 0.0001 h, the JSON's rounding (a run of seconds read 0.00)."""
    return f"{h:,.1f}" if h >= 1 else f"{h:.2f}" if h >= 0.01 else f"{h:.4f}"


def dollars(amount: float) -> str:
    """$73,322 -- or, under $100, with its cents ($0.49): a short run's cost read '$0'."""
    return f"${amount:,.0f}" if amount >= 100 else f"${amount:,.2f}"


def cost_text(cost: float, price: float) -> str:
    """The run's cost and the price it was reckoned at, in dollars (--price-per-gpu-hour)."""
    return f"{dollars(cost)} at ${price:,.2f} per GPU-hour"
