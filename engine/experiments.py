"""Registry of headless experiments: name -> job writing metrics.json, .npz data and PNG figures.

Each experiment module registers itself with ``@register``; ``main.py reproduce NAME`` and the
GUI presets both go through ``run_experiment``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import EngineInputError
from .progress import Job

# Modules that define experiments; each owns its own names.
_EXPERIMENT_MODULES = ("engine.obstruction", "engine.nonattracting")


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    run: Callable[..., Job[dict]]  # run(out_dir: Path, quick: bool, seed: int) -> Job[metrics]


_REGISTRY: dict[str, Experiment] = {}


def register(name: str, description: str):
    def decorate(run):
        _REGISTRY[name] = Experiment(name, description, run)
        return run
    return decorate


def experiments() -> dict[str, Experiment]:
    for module in _EXPERIMENT_MODULES:
        importlib.import_module(module)
    return dict(sorted(_REGISTRY.items()))


def run_experiment(name: str, out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    known = experiments()
    if name not in known:
        raise EngineInputError(f"unknown experiment {name!r}; choose one of: {', '.join(known)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return known[name].run(out_dir, quick=quick, seed=seed)
