"""Paper B's Fig. 3 construction over many data seeds: how often each outcome happens (MATH B7).

A cell is (data seed, splits per layer): draw the teacher data with that seed (one draw: the seed
*is* the data), search the small 2—1—1—1 minimum, split each hidden neuron ``splits`` times
with λ, and record the verdict of the wide network, its loss L*, the smallest Hessian eigenvalue
at the saddle (the last split moved to ``saddle_lam``) and the predicted probability that a
random slice there dips below L* (Imhof, over all parameters and over the split pair). A seed
whose draw has no suitable minimum is an outcome too, not an error.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.validation import integer, real
from engine.sweeps.executors import run_job
from engine.sweeps.runner import SweepPlan, SweepRun

NO_MINIMUM = "no suitable minimum"
MAX_SPLITS = 60


@dataclass(frozen=True)
class MinimaSettings:
    data_seeds: tuple
    splits: tuple = (20,)  # splits of each hidden layer's neuron: 2—(1+n)—(1+n)—1
    lam: float = 0.99  # engine.minima.reproduce.DIP_SPLIT_LAM
    saddle_lam: float = 2.0
    n_samples: int = 20
    max_restarts: int = 15

    def __post_init__(self):
        object.__setattr__(self, "data_seeds", tuple(integer("data seed", v, 0, 2**31) for v in self.data_seeds))
        object.__setattr__(self, "splits", tuple(integer("splits", v, 0, MAX_SPLITS) for v in self.splits))
        object.__setattr__(self, "lam", real("split λ", self.lam))
        object.__setattr__(self, "saddle_lam", real("saddle λ", self.saddle_lam))
        object.__setattr__(self, "n_samples", integer("data samples", self.n_samples, 2, 10_000))
        object.__setattr__(self, "max_restarts", integer("restarts", self.max_restarts, 1, 1000))


def _no_saddle() -> dict:
    nan = np.float64(np.nan)
    return {"saddle_min_eig": nan, "saddle_verdict": np.str_(""), "predicted_dip_all": nan, "predicted_dip_pair": nan}


def compute_cell(s: MinimaSettings, cell) -> dict:
    from engine.minima import construction as C
    from engine.minima import dip_probability as DP
    from engine.minima.pipeline import Figure3Settings, construction_job

    seed, n = cell
    fs = Figure3Settings(
        seed=seed,
        lam=s.lam,
        schedule=((1, n), (2, n)),
        n_samples=s.n_samples,
        max_restarts=s.max_restarts,
        data_tries=1,
        slices=None,
        path=None,
        plane=None,
    )
    try:
        c, _ = run_job(construction_job(fs))
    except EngineInputError:
        return {"verdict": np.str_(NO_MINIMUM), "L_star": np.float64(np.nan), "restarts": np.int64(-1), **_no_saddle()}
    out = {"verdict": np.str_(c.steps[-1].verdict.value), "L_star": np.float64(c.steps[-1].loss)}
    out["restarts"] = np.int64(len(c.restarts))
    if not c.splits:
        return {**out, **_no_saddle()}
    probe = C.move_lambda(c, s.saddle_lam)
    last = c.splits[-1]
    families = {
        "all": DP.index_family(c.arch, "all"),
        "pair": DP.index_family(c.arch, "pair", layer=last.layer, pair=(last.origin, last.new)),
    }
    predicted = {k: DP.predicted_for_family(c.arch, probe.params, c.X, c.Y, f) for k, f in families.items()}
    return {
        **out,
        "saddle_min_eig": np.float64(probe.hessian_min),
        "saddle_verdict": np.str_(probe.verdict.value),
        **{f"predicted_dip_{k}": np.float64(np.nan if v is None else v) for k, v in predicted.items()},
    }


def cell_cost(s: MinimaSettings, cell) -> float:
    return 0.2 + 0.03 * cell[1]  # fitted to measured cells, mostly Hessians (benchmarks/README.md)


def plan(s: MinimaSettings) -> SweepPlan:
    cells = [(seed, n) for n in s.splits for seed in s.data_seeds]
    record = {
        "data_seeds": list(s.data_seeds),
        "splits": list(s.splits),
        "lam": s.lam,
        "saddle_lam": s.saddle_lam,
        "n_samples": s.n_samples,
        "max_restarts": s.max_restarts,
    }
    return SweepPlan("minima", record, ("seed", "splits"), tuple(cells), compute_cell, s, cell_cost)


FIELDS = ("L_star", "saddle_min_eig", "predicted_dip_all", "predicted_dip_pair")


def table(run: SweepRun) -> list[dict]:
    """Per split count: how many seeds gave each (wide-network verdict, saddle verdict)."""
    s: MinimaSettings = run.plan.context
    rows = []
    for n in s.splits:
        counts = Counter(
            (str(run.cells[(seed, n)]["verdict"]), str(run.cells[(seed, n)]["saddle_verdict"])) for seed in s.data_seeds
        )
        for (verdict, saddle), k in sorted(counts.items(), key=lambda kv: -kv[1]):
            row = {"splits": n, "verdict": verdict, "saddle_verdict": saddle, "count": k}
            rows.append({**row, "fraction": k / len(s.data_seeds)})
    return rows


def metrics(run: SweepRun) -> dict:
    cells = [
        {"data_seed": seed, "splits": n, **{k: _plain(v) for k, v in run.cells[(seed, n)].items()}}
        for seed, n in run.plan.cells
    ]
    return {**dict(run.plan.settings), "outcomes": table(run), "cells": cells}


def _plain(v):
    v = np.asarray(v)
    if v.dtype.kind == "U":
        return str(v)
    x = v.item()
    return None if isinstance(x, float) and not np.isfinite(x) else x


def arrays(run: SweepRun) -> dict:
    cells = run.plan.cells
    out = {"cells": np.array(cells, dtype=np.int64).reshape(-1, 2)}
    for k in FIELDS:
        out[k] = np.array([run.cells[c][k] for c in cells], dtype=np.float64)
    out["restarts"] = np.array([run.cells[c]["restarts"] for c in cells], dtype=np.int64)
    out["verdict"] = np.array([str(run.cells[c]["verdict"]) for c in cells])
    out["saddle_verdict"] = np.array([str(run.cells[c]["saddle_verdict"]) for c in cells])
    return out
