"""The sweep runner: one engine job that computes a plan's missing cells on an executor.

``sweep_job(plan, out_dir, ...)`` is a job like every other (engine.core.progress): it yields
``Progress`` whose ``partial`` is a ``SweepPartial`` with every cell finished so far, as plain
arrays, and returns a ``SweepRun``. Closing the generator (GUI cancel, Ctrl-C in the command
line) cancels the outstanding tasks and keeps every finished cell on disk; a later run with
``mode="resume"`` computes only the missing ones.

Cells go to the executor packed in tasks: one cell per task on ``local`` (nothing to amortise;
a cancel waits for at most one cell) and, on ``ray``, consecutive cells of about t = √(2oW/n)
estimated seconds (``task_seconds``): Ray's per-task overhead o (``TASK_OVERHEAD_S``) weighed
against the tail at the end, for W seconds of work on n workers. A paper-size Fig. 4 grid gets
tasks of about a second, a test grid of tiny cells a few cells each. The packing never changes
a number: every cell is computed on its own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress
from engine.sweeps.executors import make_executor
from engine.sweeps.grid import Cell, cell_name, check_grid
from engine.sweeps.store import CellStore

TASK_OVERHEAD_S = 2e-3  # a Ray task's round trip, alone or many at once (bench_sweep.py; benchmarks/README.md)
MIN_TASK_S, MAX_TASK_S = 0.02, 2.0  # task sizes are kept within these, whatever the estimates say
POLL_S = 0.05  # the job yields at least this often


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep computes. ``compute(context, cell)`` is a module-level function (so Ray can
    ship it by reference) returning a dict of arrays; ``settings`` (JSON data) determine every
    number and are recorded in sweep.json; ``cost(context, cell)`` is a rough estimate in seconds."""

    kind: str
    settings: Mapping[str, Any]
    axes: tuple[str, ...]
    cells: tuple[Cell, ...]
    compute: Callable[[Any, Cell], dict]
    context: Any
    cost: Callable[[Any, Cell], float] | None = None

    def __post_init__(self):
        object.__setattr__(self, "cells", check_grid(self.cells, self.kind))

    def name(self, cell: Cell) -> str:
        return cell_name(self.axes, cell)


@dataclass(frozen=True)
class SweepPartial:
    """The cells finished so far (read back from an earlier run or computed now), in no order."""

    kind: str
    done: int
    total: int
    cells: Mapping[Cell, dict]  # a fresh dict each time; its arrays are never edited
    executor: str
    workers: int
    reused: int  # cells found on disk at the start


@dataclass(frozen=True)
class SweepRun:
    plan: SweepPlan
    out_dir: str
    cells: Mapping[Cell, dict]  # every cell, in grid order
    computed: int  # cells computed by this run
    reused: int  # cells read back from the store
    executor: str
    workers: int
    tasks: int
    seconds: float  # the whole run's, the executor's start included
    startup_s: float = 0.0  # starting the executor (a local Ray: its driver, cluster and workers)


def task_seconds(total_s: float, workers: int, overhead_s: float = TASK_OVERHEAD_S) -> float:
    """The task size t that minimises the sweep's time W/n · (1 + o/t) + t/2: per-task overhead o
    against the tail, the half task a worker still has when the others are done. t = √(2oW/n)."""
    return min(MAX_TASK_S, max(MIN_TASK_S, math.sqrt(2 * overhead_s * total_s / max(1, workers))))


def pack(plan: SweepPlan, cells: list, workers: int) -> list[tuple]:
    """Consecutive cells in tasks of about ``task_seconds`` estimated work each."""
    if not cells:
        return []
    cost = [plan.cost(plan.context, c) if plan.cost else MIN_TASK_S for c in cells]
    target = task_seconds(sum(cost), workers)
    tasks, current, acc = [], [], 0.0
    for c, s in zip(cells, cost):
        current.append(c)
        acc += s
        if acc >= target:
            tasks.append(tuple(current))
            current, acc = [], 0.0
    if current:
        tasks.append(tuple(current))
    return tasks


def sweep_job(
    plan: SweepPlan,
    out_dir,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    mode: str = "new",
    cells_per_task: int | None = None,
) -> Job[SweepRun]:
    """Job: compute the plan's missing cells on ``executor``, writing each under ``out_dir/cells``.

    ``mode``: "new" (refuse a folder with a sweep), "resume" (same settings only; compute what is
    missing) or "replace". ``cells_per_task`` overrides the packing (the benchmark measures it).
    """
    t0 = time.perf_counter()
    store = CellStore(out_dir)
    store.open(plan.kind, dict(plan.settings), len(plan.cells), mode, check_only=True)
    names = {plan.name(c): c for c in plan.cells}
    total = len(plan.cells)
    all_there = mode == "resume" and store.record_path.exists() and set(names) <= store.finished()
    # Start the executor before anything is written, so a bad executor or address leaves no trace.
    ex = None if all_there else make_executor(executor, address, workers)
    startup_s = time.perf_counter() - t0
    try:
        store.open(plan.kind, dict(plan.settings), total, mode)
        on_disk = store.finished() & set(names)
        cells: dict[Cell, dict] = {}
        for i, name in enumerate(sorted(on_disk)):
            cells[names[name]] = store.read(name)
            if i % 200 == 199:
                yield Progress(float("nan"), f"{plan.kind}: reading {i + 1}/{len(on_disk)} finished cells")
        reused = len(cells)
        missing = [c for c in plan.cells if c not in cells]
        if not missing:
            yield Progress(1.0, f"{plan.kind}: all {total} cells already done")
            return SweepRun(plan, str(out_dir), {c: cells[c] for c in plan.cells}, 0, reused, executor, 0, 0, 0.0)
        n_workers = ex.workers
        if executor == "local":
            tasks = [(c,) for c in missing]
        elif cells_per_task is not None:
            k = int(cells_per_task)
            if k < 1:
                raise EngineInputError(f"cells per task = {k} must be at least 1")
            tasks = [tuple(missing[i : i + k]) for i in range(0, len(missing), k)]
        else:
            tasks = pack(plan, missing, n_workers)
        ex.start(plan.compute, plan.context)
        for task in tasks:
            ex.submit(task)

        def partial() -> SweepPartial:
            return SweepPartial(plan.kind, len(cells), total, dict(cells), executor, n_workers, reused)

        where = f"on {executor} ({n_workers} worker{'' if n_workers == 1 else 's'})"
        yield Progress(reused / total, f"{plan.kind}: {reused}/{total} cells {where}", partial())
        outstanding = len(tasks)
        while outstanding:
            finished = ex.poll(POLL_S)
            for _, results in finished:
                outstanding -= 1
                for cell, arrays in results:
                    store.write(plan.name(cell), arrays)
                    cells[tuple(cell)] = arrays
            done = len(cells)
            yield Progress(
                done / total,
                f"{plan.kind}: {done}/{total} cells {where}",
                partial() if finished else None,
            )
    finally:
        if ex is not None:
            ex.close()  # on return, error or close(): cancel what is still out; finished cells are on disk
    missing_now = [c for c in plan.cells if c not in cells]
    if missing_now:
        raise EngineInputError(f"{len(missing_now)} cells did not come back, e.g. {plan.name(missing_now[0])}")
    return SweepRun(
        plan,
        str(out_dir),
        {c: cells[c] for c in plan.cells},
        total - reused,
        reused,
        executor,
        n_workers,
        len(tasks),
        time.perf_counter() - t0,
        startup_s,
    )
