"""Fig. 5 past the paper's grid: P[obstruction at init] over (d, l) per init scheme (MATH A7).

A cell is (scheme, d, l): its Monte Carlo estimate with ``samples`` draws from its own stream,
seeded by (seed, d, l, scheme) — so neighbouring estimates' errors are independent and any cell
can be recomputed alone — and, for Kaiming and Xavier normal, the closed form beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.exports import grid_to_json
from engine.core.validation import integer
from engine.sweeps.executors import run_job
from engine.sweeps.runner import SweepPlan, SweepRun
from engine.topology.probability import CLOSED_FORM_SCHEMES, obstruction_probability, obstruction_probability_mc_job
from engine.topology.two_layer import INITS

MAX_D = MAX_L = 10_000
MAX_SAMPLES = 100_000_000


@dataclass(frozen=True)
class Fig5Settings:
    ds: tuple
    ls: tuple
    schemes: tuple = ("kaiming_normal", "xavier_normal", "pytorch")
    samples: int = 20_000
    seed: int = 0
    points: tuple = ()  # (scheme, d, l) triples: just these cells of the grid (empty: all of it)

    def __post_init__(self):
        object.__setattr__(self, "ds", tuple(integer("d", v, 1, MAX_D) for v in self.ds))
        object.__setattr__(self, "ls", tuple(integer("l", v, 1, MAX_L) for v in self.ls))
        schemes = tuple(self.schemes)
        for s in schemes:
            if s not in INITS:
                raise EngineInputError(f"initialization {s!r} unknown; choose from {', '.join(INITS)}")
        if len(set(schemes)) != len(schemes) or not schemes:
            raise EngineInputError(f"schemes {list(schemes)} must be distinct, at least one")
        object.__setattr__(self, "schemes", schemes)
        object.__setattr__(self, "samples", integer("Monte Carlo draws", self.samples, 2, MAX_SAMPLES))
        object.__setattr__(self, "seed", integer("seed", self.seed, 0))
        points = tuple((str(sc), int(d), int(l)) for sc, d, l in self.points)
        for sc, d, l in points:
            if sc not in schemes or d not in self.ds or l not in self.ls:
                raise EngineInputError(f"point {(sc, d, l)} is not on the grid {schemes} × d {self.ds} × l {self.ls}")
        object.__setattr__(self, "points", points)


def compute_cell(s: Fig5Settings, cell) -> dict:
    k, d, l = cell  # k: the scheme's index in INITS, stable whatever schemes a sweep picks
    scheme = INITS[k]
    est, se = run_job(obstruction_probability_mc_job(d, l, scheme, s.samples, seed=(s.seed, d, l, k)))
    closed = obstruction_probability(d, l, scheme) if scheme in CLOSED_FORM_SCHEMES else np.nan
    return {"estimate": np.float64(est), "std_error": np.float64(se), "closed": np.float64(closed)}


def cell_cost(s: Fig5Settings, cell) -> float:
    _, d, l = cell
    return 2e-4 + 1.5e-8 * s.samples * l * (d + 2)  # a cost per normal draw and balance (measured)


def plan(s: Fig5Settings) -> SweepPlan:
    triples = s.points or [(sc, d, l) for sc in s.schemes for d in s.ds for l in s.ls]
    cells = [(INITS.index(sc), d, l) for sc, d, l in triples]
    record = {"ds": list(s.ds), "ls": list(s.ls), "schemes": list(s.schemes), "samples": s.samples, "seed": s.seed}
    if s.points:
        record["points"] = [list(p) for p in s.points]
    return SweepPlan("fig5", record, ("s", "d", "l"), tuple(cells), compute_cell, s, cell_cost)


def grids(s: Fig5Settings, cells) -> dict[str, np.ndarray]:
    """Per scheme, (nd, nl) grids ``mc_``, ``se_``, ``closed_`` (NaN where not computed yet)."""
    out = {}
    for sc in s.schemes:
        k = INITS.index(sc)
        for key, field in (("mc", "estimate"), ("se", "std_error"), ("closed", "closed")):
            g = np.full((len(s.ds), len(s.ls)), np.nan)
            for a, d in enumerate(s.ds):
                for b, l in enumerate(s.ls):
                    c = cells.get((k, d, l))
                    if c is not None:
                        g[a, b] = c[field]
            out[f"{key}_{sc}"] = g
    return out


def metrics(run: SweepRun) -> dict:
    s: Fig5Settings = run.plan.context
    g = grids(s, run.cells)
    z = [(g[f"mc_{sc}"] - g[f"closed_{sc}"]) / g[f"se_{sc}"] for sc in s.schemes if sc in CLOSED_FORM_SCHEMES]
    return {
        **dict(run.plan.settings),
        "monte_carlo": {sc: grid_to_json(g[f"mc_{sc}"]) for sc in s.schemes},
        "std_error": {sc: grid_to_json(g[f"se_{sc}"]) for sc in s.schemes},
        "closed_form": {sc: grid_to_json(g[f"closed_{sc}"]) for sc in s.schemes if sc in CLOSED_FORM_SCHEMES},
        "max_abs_z": float(max(np.max(np.abs(x)) for x in z)) if z else None,
    }


def arrays(run: SweepRun) -> dict:
    s: Fig5Settings = run.plan.context
    return dict(d=np.array(s.ds), l=np.array(s.ls), **grids(s, run.cells))
