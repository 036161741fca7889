"""The protocol for long work: a generator that yields ``Progress`` and returns its result.

The same generator drives the GUI worker (which forwards ``partial`` to the views, pauses
and cancels between yields), the command line and the tests (``run_to_completion``).
Yield often -- at least as often as ``wait_for``'s default ``every_s`` -- so pause and cancel stay
responsive (the job contract of docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

R = TypeVar("R")


@dataclass(frozen=True)
class Progress:
    fraction: float  # in [0, 1]; float('nan') when unknown
    message: str = ""
    partial: Any = None  # plain data the views may draw now; must never be mutated later


Job = Generator[Progress, None, R]


def run_to_completion(job: Job[R], on_progress: Callable[[Progress], None] | None = None) -> R:
    """Drive a job headless and return what it returns."""
    while True:
        try:
            update = next(job)
        except StopIteration as stop:
            return stop.value
        if on_progress is not None:
            on_progress(update)


def subjob(
    job: Job[R], start: float, stop: float, prefix: str = "", partial: Callable[[Any], Any] | None = None
) -> Generator[Progress, None, R]:
    """Re-yield a nested job's progress mapped into [start, stop] of the parent's; return its result.

    Use as ``result = yield from subjob(inner(), 0.2, 0.6, "landscape: ")``. ``partial`` maps
    the nested job's partial results to the parent's (None stays None).
    """
    while True:
        try:
            update = next(job)
        except StopIteration as stop_:
            return stop_.value
        frac = update.fraction
        shown = update.partial if partial is None or update.partial is None else partial(update.partial)
        yield Progress(start + (stop - start) * frac if frac == frac else float("nan"), prefix + update.message, shown)


def wait_for(
    call: Callable[[threading.Event], R],
    message: str,
    every_s: float = 0.05,
    status: Callable[[], tuple[float, str]] | None = None,
) -> Job[R]:
    """Job: run one blocking call (an L-BFGS run, a Hessian) on a helper thread, yielding every
    ``every_s`` while it runs, so pause and cancel stay responsive around work that cannot yield.

    ``call(stop)`` gets an Event that is set when the job is closed (cancelled); a call that can
    check it (an optimizer callback) should stop early. Exceptions re-raise in the job. The
    numbers are exactly those of calling ``call`` directly. ``status()``, when given, says how far
    the call has come: each yield is then ``Progress(*status())`` instead of (NaN, ``message``).
    """
    stop, box = threading.Event(), {}

    def target():
        try:
            box["value"] = call(stop)
        except BaseException as error:  # re-raised in the job's thread below
            box["error"] = error

    thread = threading.Thread(target=target, name="engine-wait-for", daemon=True)
    thread.start()
    try:
        while True:
            thread.join(every_s)
            if not thread.is_alive():
                break
            yield Progress(*status()) if status else Progress(float("nan"), message)
    finally:
        stop.set()
    if "error" in box:
        raise box["error"]
    return box["value"]


class _Closed(Exception):
    """Ends a job driven by ``on_helper_thread`` at its next step once the outer job is closed."""


def on_helper_thread(job: Job[R], message: str) -> Job[R]:
    """Job: drive ``job`` on ``wait_for``'s helper thread, for jobs whose every step can be long
    (a Hessian-vector product of a large model). Yields every ``wait_for`` interval with ``job``'s
    latest progress; a close stops ``job`` at its next step. The numbers are exactly ``job``'s."""
    latest = Progress(0.0, message)

    def call(stop: threading.Event) -> R:
        def seen(update: Progress) -> None:
            nonlocal latest
            if stop.is_set():
                raise _Closed
            latest = update

        return run_to_completion(job, seen)

    return (yield from wait_for(call, message, status=lambda: (latest.fraction, latest.message)))
