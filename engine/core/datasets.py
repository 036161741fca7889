"""Data sets: the paper's toy target, breast cancer, and user files (.npz / .csv)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.npz import read_xy
from engine.core.validation import integer


def toy_dataset(n: int = 8000, seed: int = 0, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """MATH A8 toy, in any dimension: X ~ U([0,1]^d), Y = −Σ x_i (d = 2 is the paper's Fig. 3).
    Returns X (n, d), Y (n, 1), float64; the same seed gives the same points."""
    n, d = integer("number of points n", n, 1), integer("dimension d", d, 1)
    X = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, d))
    return X, -(X.sum(axis=1, keepdims=True))


@dataclass(frozen=True)
class DataSplit:
    """A data set's training and test parts (not paper B's neuron split, construction.Split)."""

    X_train: np.ndarray
    Y_train: np.ndarray  # (N, 1), labels in {0, 1}
    X_test: np.ndarray
    Y_test: np.ndarray


def standardized_split(X, y, test_fraction: float = 0.2, seed: int = 0, name: str = "data") -> DataSplit:
    """A stratified split of (X, labels y), standardized with the training part's mean and std only
    (no test information leaks into training)."""
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise EngineInputError(f"test_fraction = {test_fraction!r} must lie strictly between 0 and 1")
    try:
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_fraction, stratify=y, random_state=seed)
    except ValueError as error:
        parts = f"{round(100 * (1 - test_fraction))}/{round(100 * test_fraction)}"
        raise EngineInputError(f"data set {name!r} cannot be split {parts} by class: {error}") from None
    mu, sd = X_tr.mean(axis=0), X_tr.std(axis=0)
    sd[sd == 0] = 1.0
    return DataSplit((X_tr - mu) / sd, y_tr[:, None], (X_te - mu) / sd, y_te[:, None])


def breast_cancer(seed: int = 0, test_fraction: float = 0.2) -> DataSplit:
    """scikit-learn's bundled breast cancer set (569 × 30), split by ``standardized_split``."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return standardized_split(X, y.astype(np.float64), test_fraction, seed, "breast-cancer")


def load_xy_file(path) -> tuple[np.ndarray, np.ndarray]:
    """Load a user data set as float64 X (N, d) and Y (N, e).

    - ``.npz``: arrays ``X`` (N, d) or (N,) and ``Y`` (N, e) or (N,).
    - ``.csv``: header-less numeric table, comma separated; the *last column* is Y (e = 1)
      and the others are X. Lines starting with ``#`` are ignored.
    Raises EngineInputError for a missing file, missing keys, bad shapes, non-numeric
    entries, NaN/inf, or fewer than one sample.
    """
    path = Path(path)
    if not path.is_file():
        raise EngineInputError(f"data file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        X, Y = read_xy(path)
    elif suffix == ".csv":
        try:
            table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2, comments="#")
        except ValueError as exc:
            raise EngineInputError(f"data file {path.name!r} is not a header-less numeric CSV: {exc}") from exc
        if table.shape[1] < 2:
            raise EngineInputError(
                f"data file {path.name!r} has {table.shape[1]} column(s); "
                "need at least one input column and the last column as Y"
            )
        X, Y = table[:, :-1], table[:, -1:]
    else:
        raise EngineInputError(f"data file {path.name!r}: unsupported extension {suffix!r} (use .npz or .csv)")
    return _as_xy(X, Y, path.name)


def _as_xy(X, Y, name: str) -> tuple[np.ndarray, np.ndarray]:
    arrays = []
    for key, a in (("X", X), ("Y", Y)):
        if a.dtype.kind not in "biuf":
            raise EngineInputError(f"{name!r}: {key} has non-numeric dtype {a.dtype}")
        a = np.asarray(a, dtype=np.float64)
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
            raise EngineInputError(f"{name!r}: {key} has shape {a.shape}; expected (N, columns) with N >= 1")
        if not np.all(np.isfinite(a)):
            raise EngineInputError(f"{name!r}: {key} contains NaN or inf")
        arrays.append(a)
    X, Y = arrays
    if X.shape[0] != Y.shape[0]:
        raise EngineInputError(f"{name!r}: X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    return X, Y
