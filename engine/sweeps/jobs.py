"""Whole sweeps as engine jobs: run the cells, then assemble metrics.json and the arrays from them.

These are what ``main.py sweep`` and ``reproduce topo-breast-cancer`` / ``topo-probability`` run,
and what a GUI view can start: each yields the runner's ``SweepPartial`` (every cell finished so
far; ``fig4.cell_grids`` / ``fig5.grids`` turn it into the maps to draw) and returns the metrics.
Everything written is assembled from the cells alone, so it is the same however the cells came.
"""

from __future__ import annotations

from pathlib import Path

from engine.core.exports import save_arrays, write_metrics
from engine.core.progress import Job, Progress, subjob
from engine.sweeps import fig4, fig5
from engine.sweeps.runner import SweepPlan, SweepRun, sweep_job

ASSEMBLY = 0.97  # of the progress bar: the cells; the rest, writing the results


def _cells(plan: SweepPlan, out_dir, run_options: dict) -> Job[SweepRun]:
    inner = sweep_job(plan, out_dir, **run_options)
    try:
        return (yield from subjob(inner, 0.0, ASSEMBLY))
    finally:
        inner.close()  # a closed (cancelled) parent closes the runner now, not when it is collected


def fig4_job(plan: SweepPlan, out_dir, figure: bool = True, **run_options) -> Job[dict]:
    """``run_options``: executor, address, workers, mode, cells_per_task (runner.sweep_job)."""
    run = yield from _cells(plan, out_dir, run_options)
    res = fig4.assemble(run)
    save_arrays(Path(out_dir), "sweep.npz", **fig4.arrays(run, res))
    if figure:
        from engine.topology.figures import breast_cancer_figure

        breast_cancer_figure(Path(out_dir) / "breast_cancer.png", res)
    yield Progress(1.0, "fig4 sweep done")
    return write_metrics(Path(out_dir), fig4.metrics(run, res))


def fig5_job(plan: SweepPlan, out_dir, **run_options) -> Job[dict]:
    run = yield from _cells(plan, out_dir, run_options)
    save_arrays(Path(out_dir), "probability.npz", **fig5.arrays(run))
    yield Progress(1.0, "fig5 sweep done")
    return write_metrics(Path(out_dir), fig5.metrics(run))


def minima_job(plan: SweepPlan, out_dir, **run_options) -> Job[dict]:
    from engine.sweeps import minima

    run = yield from _cells(plan, out_dir, run_options)
    save_arrays(Path(out_dir), "minima.npz", **minima.arrays(run))
    yield Progress(1.0, "minima sweep done")
    return write_metrics(Path(out_dir), minima.metrics(run))
