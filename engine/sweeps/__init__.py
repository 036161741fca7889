"""Sweeps past the papers' grids: a grid of cells, each a pure function of (settings, cell).

``runner.sweep_job`` runs a ``SweepPlan`` on an executor (``local`` threads, or ``ray``), writes
every finished cell at once under ``DIR/cells/`` and returns them all; ``fig4``, ``fig5`` and
``minima`` build the plans and assemble ``metrics.json`` and the arrays from the cells. Because
every cell is computed on its own, with seeds from its coordinates, the numbers do not depend
on the executor, the packing of cells into tasks, the order, or an interruption and resume.

A view runs a sweep as any other job, e.g. Fig. 4 on Ray, filling as cells arrive::

    plan = fig4.plan("breast-cancer", ls=range(2, 31), n_inits=100, steps=1000)
    job = jobs.fig4_job(plan, out_dir, figure=False, executor="ray", mode="resume")
    # each Progress.partial that is a runner.SweepPartial: fig4.cell_grids(plan.context.settings.ls,
    # partial.cells) -> (mean, std) maps so far; job.close() cancels and keeps the finished cells.

and Fig. 5 likewise with ``fig5.plan(fig5.Fig5Settings(...))``, ``jobs.fig5_job`` and ``fig5.grids``.
"""
