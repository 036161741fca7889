"""The window's Fig. 4 and Fig. 5 pages on the sweep runner: any executor (this process cell by
cell, or Ray), live maps as cells arrive, and a store that keeps every finished cell.

The pages draw ``width_sweep.SweepProgress`` / ``SweepResult`` and ``probability.ProbabilityMaps``;
these jobs turn the runner's ``SweepPartial`` into the same types, so the pages need not know
which executor ran. The store's folder is ``out_root/<kind>-<hash of the settings>`` unless one
is given: the same settings find their finished cells again (a cancelled sweep resumes where it
stopped), and different settings never mix.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np

from engine.core.progress import Job, Progress
from engine.sweeps import fig4, fig5
from engine.sweeps.runner import SweepPartial, SweepPlan, sweep_job
from engine.topology.probability import CLOSED_FORM_SCHEMES, MapSettings, ProbabilityMaps, probability_grid
from engine.topology.width_sweep import SweepProgress, SweepResult, SweepSettings


def store_folder(plan: SweepPlan, out_root, folder=None) -> Path:
    """``folder``, or one under ``out_root`` named by the plan's kind and settings."""
    if folder:
        return Path(folder)
    key = hashlib.sha256(json.dumps(dict(plan.settings), sort_keys=True, default=str).encode()).hexdigest()[:12]
    return Path(out_root) / f"{plan.kind}-{key}"


def _cells_job(plan: SweepPlan, out_dir: Path, as_partial, executor: str, address: str | None) -> Job:
    """The runner's updates with each SweepPartial mapped by ``as_partial``; returns its SweepRun."""
    inner = sweep_job(plan, out_dir, executor=executor, address=address or None, mode="resume")
    try:
        while True:
            try:
                update = next(inner)
            except StopIteration as stop:
                return stop.value
            partial = as_partial(update.partial) if isinstance(update.partial, SweepPartial) else None
            yield Progress(update.fraction, update.message, partial)
    finally:
        inner.close()  # cancelled: outstanding Ray tasks stop, finished cells stay on disk


def fig4_job(
    s: SweepSettings, out_root, folder=None, executor: str = "local", address: str | None = None
) -> Job[SweepResult]:
    """Fig. 4 on breast cancer as the window's page shows it, computed cell by cell by the runner."""
    plan = fig4.plan("breast-cancer", s.ls, s.n_inits, s.steps, s.lr, s.c0, s.sign_policy, s.seed)
    ls, runs_per_cell = list(s.ls), s.n_inits

    def as_progress(partial: SweepPartial) -> SweepProgress:
        mean, std = fig4.cell_grids(ls, partial.cells)
        return SweepProgress(
            np.array(ls), np.arange(max(ls) + 1), mean, std, partial.done * runs_per_cell, partial.total * runs_per_cell
        )

    run = yield from _cells_job(plan, store_folder(plan, out_root, folder), as_progress, executor, address)
    res = fig4.assemble(run)
    return SweepResult(**{f.name: getattr(res, f.name) for f in dataclasses.fields(SweepResult)})


def fig5_job(
    s: MapSettings, out_root, folder=None, executor: str = "local", address: str | None = None
) -> Job[ProbabilityMaps]:
    """Fig. 5's maps as the window's page shows them: the closed forms at once, the Monte Carlo
    points (every ``mc_stride``-th d and l) as the runner's cells."""
    ds, ls = np.arange(1, s.d_max + 1), np.arange(1, s.l_max + 1)
    closed = {scheme: probability_grid(ds, ls, scheme) for scheme in CLOSED_FORM_SCHEMES}
    mc_ds, mc_ls = tuple(int(d) for d in ds[:: s.mc_stride]), tuple(int(l) for l in ls[:: s.mc_stride])
    if not s.mc_samples:
        return ProbabilityMaps(s, ds, ls, closed, {scheme: np.zeros((0, 4)) for scheme in CLOSED_FORM_SCHEMES})
    grid = fig5.Fig5Settings(mc_ds, mc_ls, CLOSED_FORM_SCHEMES, s.mc_samples, s.seed)
    plan = fig5.plan(grid)

    def as_maps(partial: SweepPartial) -> ProbabilityMaps:
        g = fig5.grids(grid, partial.cells)
        mc = {}
        for scheme in CLOSED_FORM_SCHEMES:
            rows = [
                (d, l, g[f"mc_{scheme}"][a, b], g[f"se_{scheme}"][a, b])
                for a, d in enumerate(mc_ds)
                for b, l in enumerate(mc_ls)
                if np.isfinite(g[f"mc_{scheme}"][a, b])
            ]
            mc[scheme] = np.array(rows, dtype=np.float64).reshape(-1, 4)
        return ProbabilityMaps(s, ds, ls, closed, mc)

    yield Progress(0.0, "closed forms done", as_maps(SweepPartial("fig5", 0, len(plan.cells), {}, executor, 0, 0)))
    run = yield from _cells_job(plan, store_folder(plan, out_root, folder), as_maps, executor, address)
    return as_maps(SweepPartial("fig5", len(run.cells), len(run.cells), run.cells, run.executor, run.workers, 0))
