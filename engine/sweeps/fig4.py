"""Fig. 4 past the paper's grid: test BCE over (l, l₊) on a choice of binary data sets (MATH A8).

A cell is one (l, l₊) with all its inits (engine.topology.width_sweep.train_cell); the assembled
arrays and metrics have the form ``reproduce topo-breast-cancer`` has always written (docs/EXPORTS.md).
The data are loaded once by the caller and shipped with the plan, so workers on other machines
need no copy of a CSV; their digest is part of the recorded settings, so a resume on changed data
is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core import datasets
from engine.core.errors import EngineInputError
from engine.core.exports import fields, grid_to_json
from engine.core.validation import integer
from engine.sweeps.executors import Cancelled, stopping
from engine.sweeps.runner import SweepPlan, SweepRun
from engine.topology.width_sweep import CELL_CHUNK_NEURONS, SPLIT_SEED, SweepSettings, train_cell

DATASETS = ("breast-cancer", "wine", "digits-binary")  # or a FILE.csv / FILE.npz
MAX_L = 256
MAX_INITS = 10_000
MAX_STEPS = 1_000_000
QUICK = dict(ls=tuple(range(2, 10)), n_inits=4, steps=150)  # reproduce topo-breast-cancer --quick
FULL = dict(ls=tuple(range(2, 10)), n_inits=100, steps=1000)  # the paper's grid


def _binary_labels(Y: np.ndarray, name: str) -> np.ndarray:
    if Y.shape[1] != 1:
        raise EngineInputError(f"{name!r}: Y has {Y.shape[1]} columns; the sweep needs one label column")
    values = np.unique(Y[:, 0])
    if len(values) < 2:
        raise EngineInputError(f"{name!r}: the label column has one class only ({values[0]:g}); it needs two")
    if len(values) > 2:
        raise EngineInputError(
            f"{name!r}: the label column has {len(values)} classes; BCE needs exactly two (0/1 or any two values)"
        )
    return (Y[:, 0] == values[1]).astype(np.float64)


def load_dataset(name: str) -> datasets.DataSplit:
    """breast-cancer (569 × 30, malignant 0 / benign 1: the paper's), wine (178 × 13, cultivar 0
    against the others), digits-binary (360 × 64, the digits 0 and 1), or FILE.csv / FILE.npz
    with the label in the last column (any two values; the larger is class 1)."""
    if name == "breast-cancer":
        return datasets.breast_cancer(seed=SPLIT_SEED)
    if name == "wine":
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        return datasets.standardized_split(
            X.astype(np.float64), (y == 0).astype(np.float64), seed=SPLIT_SEED, name=name
        )
    if name == "digits-binary":
        from sklearn.datasets import load_digits

        X, y = load_digits(n_class=2, return_X_y=True)
        return datasets.standardized_split(X.astype(np.float64), y.astype(np.float64), seed=SPLIT_SEED, name=name)
    if Path(name).suffix.lower() in (".csv", ".npz"):
        X, Y = datasets.load_xy_file(name)
        return datasets.standardized_split(X, _binary_labels(Y, Path(name).name), seed=SPLIT_SEED, name=Path(name).name)
    raise EngineInputError(f"data set {name!r} unknown; choose one of {', '.join(DATASETS)} or a FILE.csv")


def digest(split: datasets.DataSplit) -> str:
    h = hashlib.sha256()
    for a in (split.X_train, split.Y_train, split.X_test, split.Y_test):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Fig4Context:
    """What each cell needs: the settings and the split (shipped once per worker)."""

    settings: SweepSettings
    X_train: np.ndarray
    y_train: np.ndarray  # (N,)
    X_test: np.ndarray
    y_test: np.ndarray


def compute_cell(ctx: Fig4Context, cell) -> dict:
    l, lp = cell
    out = train_cell(ctx.X_train, ctx.y_train, ctx.X_test, ctx.y_test, ctx.settings, l, lp, stopping)
    if out is None:
        raise Cancelled
    return {"test_bce": out[0], "W1": out[1], "W2": out[2]}


def cell_cost(ctx: Fig4Context, cell) -> float:
    """Seconds, roughly, for packing cells into tasks (the numbers never depend on it): per step,
    torch's fixed overhead per chunk plus a cost per sample, neuron and input, both measured on
    2 cores (benchmarks/README.md)."""
    l = cell[0]
    s, (n, d) = ctx.settings, ctx.X_train.shape
    chunks = -(-s.n_inits // max(1, CELL_CHUNK_NEURONS // l))
    return s.steps * (chunks * 1.5e-4 + 7e-10 * n * (d + 1) * l * s.n_inits)


def plan(
    dataset: str = "breast-cancer",
    ls=FULL["ls"],
    n_inits: int = FULL["n_inits"],
    steps: int = FULL["steps"],
    lr: float = 0.1,
    c0: float = 1.0,
    sign_policy: str = "positive",
    seed: int = 0,
    split: datasets.DataSplit | None = None,
) -> SweepPlan:
    """The Fig. 4 sweep on ``dataset``: cells (l, l₊) for l in ``ls``, l₊ = 0..l."""
    for l in ls:
        integer("hidden size l", l, 1, MAX_L)
    integer("inits per (l, l₊)", n_inits, 1, MAX_INITS)
    integer("steps", steps, 1, MAX_STEPS)
    s = SweepSettings(ls=tuple(ls), n_inits=n_inits, steps=steps, lr=lr, c0=c0, sign_policy=sign_policy, seed=seed)
    split = load_dataset(dataset) if split is None else split
    ctx = Fig4Context(s, split.X_train, split.Y_train[:, 0], split.X_test, split.Y_test[:, 0])
    record = {
        **dataclasses.asdict(s),
        "ls": list(s.ls),
        "dataset": str(dataset),
        "data_sha256": digest(split),
        "n_train": len(split.X_train),
        "d": split.X_train.shape[1],
    }
    cells = [(l, lp) for l in s.ls for lp in range(l + 1)]
    return SweepPlan("fig4", record, ("l", "lp"), tuple(cells), compute_cell, ctx, cell_cost)


@dataclass(frozen=True)
class Fig4Result:
    """The assembled sweep, as engine.topology.width_sweep.SweepResult lays it out: row r of runs /
    test_bce / W1 / W2 is one run (l, l₊, init); W1 and W2 padded with zero neurons to max l."""

    settings: SweepSettings
    ls: np.ndarray
    l_plus: np.ndarray
    mean: np.ndarray  # (nL, max l + 1) mean test BCE; NaN where l₊ > l or not computed yet
    std: np.ndarray
    runs: np.ndarray  # (R, 3)
    test_bce: np.ndarray
    W1: np.ndarray
    W2: np.ndarray
    n_diverged: int


def cell_grids(ls, cells) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std of test BCE per (l, l₊) over the cells given (a partial sweep's too)."""
    ls = list(ls)
    shape = (len(ls), max(ls) + 1)
    mean, std = np.full(shape, np.nan), np.full(shape, np.nan)
    for (l, lp), arrays in cells.items():
        if l in ls:
            mean[ls.index(l), lp], std[ls.index(l), lp] = arrays["test_bce"].mean(), arrays["test_bce"].std()
    return mean, std


def assemble(run: SweepRun) -> Fig4Result:
    p = run.plan
    s: SweepSettings = p.context.settings
    L, d = max(s.ls), p.context.X_train.shape[1]
    R = s.n_inits * len(p.cells)
    runs = np.zeros((R, 3), dtype=np.int64)
    bce, W1, W2 = np.empty(R), np.zeros((R, L, d)), np.zeros((R, L))
    for k, (l, lp) in enumerate(p.cells):
        rows = slice(k * s.n_inits, (k + 1) * s.n_inits)
        c = run.cells[(l, lp)]
        runs[rows] = [(l, lp, i) for i in range(s.n_inits)]
        bce[rows], W1[rows, :l], W2[rows, :l] = c["test_bce"], c["W1"], c["W2"]
    mean, std = cell_grids(s.ls, run.cells)
    return Fig4Result(s, np.array(s.ls), np.arange(L + 1), mean, std, runs, bce, W1, W2, int(np.sum(~np.isfinite(bce))))


def metrics(run: SweepRun, res: Fig4Result) -> dict:
    s = res.settings
    return {
        **dataclasses.asdict(s),
        "ls": list(s.ls),
        "dataset": run.plan.settings["dataset"],
        "data_sha256": run.plan.settings["data_sha256"],
        "l_plus": res.l_plus.tolist(),
        "mean_test_bce": grid_to_json(res.mean),
        "std_test_bce": grid_to_json(res.std),
        "n_diverged": res.n_diverged,
        "init": "kaiming_normal",
        "loss": "BCE with logits",
        "optimizer": "full-batch GD",
        "split": "stratified 80/20, standardized on train",
    }


def arrays(run: SweepRun, res: Fig4Result) -> dict:
    ctx = run.plan.context
    return dict(
        **fields(res, "ls", "l_plus", "mean", "std", "runs", "test_bce", "W1", "W2"),
        X_train=ctx.X_train,
        Y_train=ctx.y_train[:, None],
        X_test=ctx.X_test,
        Y_test=ctx.y_test[:, None],
    )
