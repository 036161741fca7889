"""Registry of headless experiments: name -> job writing metrics.json, .npz data and PNG figures.

The table below names each experiment's job function; the modules that define them never
import this one, so the registry adds no import cycle. ``main.py reproduce NAME`` runs
``run_experiment``, which the GUI presets reach through the same engine jobs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.progress import Job
from engine.core.validation import MAX_SEED, integer


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    target: str  # "module:function"; function(out_dir: Path, quick: bool, seed: int) -> Job[metrics]

    @property
    def run(self) -> Callable[..., Job[dict]]:
        module, function = self.target.split(":")
        return getattr(importlib.import_module(module), function)


_EXPERIMENTS = [
    Experiment(
        "topo-toy",
        "Paper Fig. 3: a disconnected invariant set blocks GD and gradient flow on a toy target",
        "engine.topology.reproduce:run_toy",
    ),
    Experiment(
        "topo-breast-cancer",
        "Paper Fig. 4: test BCE on breast cancer vs hidden size l and free neurons l+",
        "engine.sweeps.reproduce:run_breast_cancer",
    ),
    Experiment(
        "topo-probability",
        "Paper Fig. 5: probability of an obstruction at init vs (d, l), closed form and Monte Carlo",
        "engine.sweeps.reproduce:run_probability",
    ),
    Experiment(
        "nonattr-deep",
        "B7 / Fig. 3: 2—1—1—1 minimum split to 2—21—21—1; slices at the minimum and a saddle",
        "engine.minima.reproduce:run_deep",
    ),
    Experiment(
        "nonattr-shallow",
        "Fukumizu–Amari 1—1—1 → 1—2—1, then widened beyond N samples (Theorem 13)",
        "engine.minima.reproduce:run_shallow",
    ),
    Experiment(
        "nonattr-infinity",
        "B10: a suboptimal minimum at infinity (biases → ∞), GD drift and escape",
        "engine.minima.reproduce:run_infinity",
    ),
    Experiment(
        "nonattr-path",
        "B11: a non-increasing path from the constructed minimum to a global one",
        "engine.minima.reproduce:run_path",
    ),
]


def experiments() -> dict[str, Experiment]:
    return {e.name: e for e in sorted(_EXPERIMENTS, key=lambda e: e.name)}


def run_experiment(name: str, out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    known = experiments()
    if name not in known:
        raise EngineInputError(f"unknown experiment {name!r}; choose one of: {', '.join(known)}")
    seed = integer("--seed", seed, 0, MAX_SEED)
    out_dir = Path(out_dir)
    try:
        if out_dir.exists() and not out_dir.is_dir():
            raise EngineInputError(f"--out {out_dir} exists and is not a folder")
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise EngineInputError(
            f"cannot create the output folder {str(out_dir)[:80]}: {error.strerror or error}"
        ) from None
    return known[name].run(out_dir, quick=quick, seed=seed)
