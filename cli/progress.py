"""A progress bar on stderr for a search that takes a while (issue 16: DeepSeek-V3 on 1,024 GPUs
took 3.5 s with nothing on screen).

The bar appears only when stderr is a terminal and only once the command has run for
DELAY_S, so that quick answers, pipes, files and CI logs never see it; it is erased when the
command ends, leaving stdout's answer as it was. The search reports through
``search/score.score(progress=...)``: once per (pipeline depth, recompute) group of layouts.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager

# "about a second": below it a bar only flickers (issue 16)
DELAY_S = 1.0
# redraw at most ten times a second: smooth to the eye, cheap for the terminal
REDRAW_S = 0.1
WIDTH = 30


def render(done: int, total: int, width: int = WIDTH) -> str:
    """One line: ``scoring layouts [#########.....] 62% (16,512 of 26,624)``."""
    frac = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
    filled = int(frac * width)
    return f"scoring layouts [{'#' * filled}{'.' * (width - filled)}] {100 * frac:3.0f}% ({done:,} of {total:,})"


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):      # no isatty, or a closed stream
        return False


class Bar:
    """The hook ``score`` calls: ``bar(done, total)`` draws after DELAY_S from the bar's start,
    on a terminal only; ``close()`` erases what it drew."""

    def __init__(self, stream, delay: float | None = None, clock=time.monotonic):
        self.stream, self.clock = stream, clock
        self.delay = DELAY_S if delay is None else delay
        self.enabled = is_terminal(stream)
        self.start = clock()
        self.last_draw = None
        self.shown = 0                          # length of the line on screen, 0 when none

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay:
            return
        if self.last_draw is not None and now - self.last_draw < REDRAW_S and done < total:
            return
        line = render(done, total)
        self.stream.write("\r" + line.ljust(self.shown))
        self.stream.flush()
        self.shown, self.last_draw = max(self.shown, len(line)), now

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0


_ACTIVE: list = []


def hook():
    """The bar of the command running now, for ``decide(..., progress=hook())``; None when
    stderr is not a terminal (then nothing is drawn or even timed)."""
    return _ACTIVE[-1] if _ACTIVE else None


@contextmanager
def search_progress(stream=None):
    """While a command runs on a terminal, ``hook()`` gives the Bar its search reports to."""
    bar = Bar(sys.stderr if stream is None else stream)
    if not bar.enabled:
        yield bar
        return
    _ACTIVE.append(bar)
    try:
        yield bar
    finally:
        _ACTIVE.pop()
        bar.close()
