"""How much work a job does between two yields, for the "yield every ~50 ms" promise, counted in
units of work instead of timed.

The jobs decide when to yield from a clock (``time.perf_counter``). Here each job's module sees
a clock that moves only with work: every call of the job's work primitive (a gradient, one
training step of a sweep chunk, a batch of draws, a chunk of slice losses) advances it by
``UNIT_S``. The job's own rule then fixes how many units it may do between two yields, whatever
the machine's speed or load; a job that stopped consulting its clock inside a loop, or yielded
only at the end, does all its units at once and fails. Work on ``progress.wait_for``'s helper
thread is not counted: the job yields every 50 ms of real time while it waits for it.
"""

from __future__ import annotations

import functools
import threading
import time
from types import SimpleNamespace

import numpy as np

UNIT_S = 0.001  # the clock's step per unit of work: about what one GUI-sized unit costs here
WAIT_FOR_THREAD = "engine-wait-for"  # engine.core.progress.wait_for's helper


class WorkClock:
    """A clock that advances ``unit_s`` with each unit of work, from any thread but wait_for's."""

    def __init__(self, unit_s: float = UNIT_S):
        self.units, self.unit_s = 0, unit_s
        self._lock = threading.Lock()

    def now(self) -> float:
        return self.units * self.unit_s

    def tick(self, units: int = 1) -> None:
        if threading.current_thread().name != WAIT_FOR_THREAD:
            with self._lock:
                self.units += units

    def counted(self, function):
        """``function``, each call one unit (counted once it returns: the work is done)."""

        @functools.wraps(function)
        def call(*args, **kwargs):
            result = function(*args, **kwargs)
            self.tick()
            return result

        return call

    def counted_steps(self, generator_function):
        """A generator function whose every item is one unit (a training step)."""

        @functools.wraps(generator_function)
        def steps(*args, **kwargs):
            for item in generator_function(*args, **kwargs):
                self.tick()
                yield item

        return steps

    def counted_subjob(self, job_function):
        """A job function (a generator returning its result) whose whole run is one unit."""

        @functools.wraps(job_function)
        def job(*args, **kwargs):
            result = yield from job_function(*args, **kwargs)
            self.tick()
            return result

        return job

    def counted_compute(self, evaluate_job):
        """engine.landscape.slices.evaluate_job with each loss a ``compute`` call returns (a point
        of a plane or line, each point along a direction's slice) one unit, on one thread: its
        pool maps every chunk at once, so two workers compute ahead of the job by as much as the
        scheduler lets them (865 points between two yields in one run, 97 in another), which says
        nothing about the job's own rule."""

        def counted(compute):
            def call(i0, i1):
                result = compute(i0, i1)
                self.tick(int(np.size(result)))
                return result

            return call

        @functools.wraps(evaluate_job)
        def job(n_items, compute, chunk, *_threads):
            return evaluate_job(n_items, counted(compute), chunk, 1)

        return job

    def as_time_module(self):
        """What a job's module sees as ``time``: this clock for perf_counter and monotonic."""
        return SimpleNamespace(perf_counter=self.now, monotonic=self.now, time=time.time, sleep=time.sleep)


def install(monkeypatch, clock: WorkClock, clocked=(), work=(), steps=()) -> None:
    """``clocked``: modules whose ``time`` becomes ``clock``; ``work`` / ``steps``: (owner, name) of
    the functions (generator functions) whose calls (items) are the units of work."""
    for module in clocked:
        monkeypatch.setattr(module, "time", clock.as_time_module())
    for owner, name in work:
        monkeypatch.setattr(owner, name, clock.counted(getattr(owner, name)))
    for owner, name in steps:
        monkeypatch.setattr(owner, name, clock.counted_steps(getattr(owner, name)))


def most_work_between_yields(job, clock: WorkClock) -> tuple[int, int]:
    """(the most units of work one ``next(job)`` did, the first (start-up) one included; all the
    units the job did)."""
    worst, start = 0, clock.units
    while True:
        before = clock.units
        try:
            next(job)
        except StopIteration:
            return max(worst, clock.units - before), clock.units - start
        worst = max(worst, clock.units - before)
