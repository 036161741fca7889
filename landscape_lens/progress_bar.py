"""Progress of a long command on the terminal: one tqdm bar with percentage, rate and ETA.

``progress_bar(description)`` is a context manager giving a callback for
``engine.core.progress.run_to_completion``: jobs report ``Progress(fraction, message)`` with the
fraction in [0, 1], or NaN while unknown (the bar then keeps its place and shows the message).
When stderr is not a terminal (a pipe, a log file, a test) nothing is drawn, so logs and captured
output stay clean. The bar appears only once the work has run for ``delay`` seconds: quick
commands print nothing extra.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager

from tqdm import tqdm

PERCENT = 100.0  # the bar counts percent of the job (as a float), so its rate reads "%/s"


class ProgressBar:
    """A tqdm bar driven by job fractions (``__call__``) or by counts of items (``count``)."""

    def __init__(self, description: str = "", file=None, delay: float = 0.5):
        file = sys.stderr if file is None else file
        self._bar = tqdm(
            total=PERCENT,
            desc=description,
            file=file,
            disable=not _is_terminal(file),
            delay=delay,
            mininterval=0.1,
            dynamic_ncols=True,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}, {rate_fmt}{postfix}]",
            unit="%",
        )
        self._message = None

    @property
    def disabled(self) -> bool:
        return self._bar.disable

    def __call__(self, update) -> None:
        """One ``Progress`` of a job: move to its fraction (never backwards) and show its message."""
        self._advance(update.fraction)
        self._show(update.message)

    def count(self, done: int, total: int, message: str = "") -> None:
        """``done`` of ``total`` items (frames, runs) finished."""
        self._advance(done / total if total else float("nan"))
        self._show(message or f"{done}/{total}")

    def finish(self) -> None:
        self._advance(1.0)
        self._bar.close()

    def close(self) -> None:
        self._bar.close()

    def _advance(self, fraction: float) -> None:
        if fraction is None or not math.isfinite(fraction):
            return  # unknown: stay, the message says what is running
        target = min(max(fraction, 0.0), 1.0) * PERCENT
        if target > self._bar.n:
            self._bar.update(target - self._bar.n)

    def _show(self, message: str) -> None:
        if message and message != self._message:
            self._message = message
            self._bar.set_postfix_str(message[:60], refresh=False)


class CellBar:
    """A sweep's finished cells of its total on a tqdm bar whose rate and ETA count from the first
    cells' arrival, not from the start: what runs before them (Ray's workers starting, each task's
    first imports) is no rate, and counted in, it made the first ETAs several times too long. The
    first arrival is a burst (workers that started together finish their first cells within
    ``burst_s`` of each other), so the clock starts again at each arrival of that burst, and the
    cells that came in it are the base the rate counts from, as the window's Fig. 4 caption does
    (gui.views.fig4_view.SweepClock)."""

    def __init__(self, description: str, total: int, done: int, file=None, burst_s: float = 0.5):
        file = sys.stderr if file is None else file
        self._bar = tqdm(
            total=total,
            initial=done,
            desc=description,
            unit="cell",
            file=file,
            disable=not _is_terminal(file),
            dynamic_ncols=True,
            smoothing=0,  # the average rate since the clock started: tqdm's (n - initial) / elapsed
        )
        self._burst_s = burst_s
        self._burst_began: float | None = None  # on the bar's clock; None until the first cells
        self._burst_over = False

    @property
    def n(self) -> int:
        return self._bar.n

    def update(self, done: int) -> None:
        if done <= self._bar.n:
            return
        if not self._bar.disable and not self._burst_over:
            now = self._bar.start_t + self._bar.format_dict["elapsed"]
            if self._burst_began is None:
                self._burst_began = now
            if now - self._burst_began <= self._burst_s:  # the first cells: the clock starts with them
                self._bar.reset(self._bar.total)
                self._bar.initial = done
                self._bar.update(done)
                return
            self._burst_over = True
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._bar.close()


def _is_terminal(file) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


@contextmanager
def progress_bar(description: str = "", file=None, delay: float = 0.5):
    """``with progress_bar("reproduce topo-toy") as on_progress: run_to_completion(job, on_progress)``.
    The bar fills to 100 % when the block finishes and is left on screen; on an error it just stops."""
    bar = ProgressBar(description, file, delay)
    try:
        yield bar
    except BaseException:
        bar.close()
        raise
    bar.finish()
