"""Random directions for slices and planes, normalised as Li et al. 2018 do (docs/MATH.md B8, B12.1).

A raw direction is a standard Gaussian in the flat layout of engine.core.mlp. Its scale then
decides what a plot shows: with unit directions a step t moves every network by the same
Euclidean length, which means a lot for small weights and little for large ones, so plots of two
networks cannot be compared. Li et al. rescale instead:

- ``random``: the whole direction to unit norm (this app's default for paper B's slices);
- ``filter``: each filter to the norm of the same filter of θ. For a Linear layer a filter is
  one output neuron's row of W_l, so row p of the direction's W_l gets norm ‖θ's W_l[p]‖;
- ``layer``: each weight matrix W_l to the norm of θ's W_l.

Biases (Li et al.'s 1-D parameters): with ``ignore="biases"`` (their ``--xignore biasbn``) the
direction's bias components are zero; otherwise ``filter`` and ``layer`` copy θ's biases into
the direction, as their ``normalize_directions_for_weights`` does, and ``random`` keeps the
Gaussian bias components before the unit scaling.

Seeded: the same (seed, index) gives the same direction on every machine (numpy's PCG64).
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.mlp import Arch

NORMALIZATIONS = ("random", "filter", "layer")
IGNORE = ("none", "biases")


def check_normalization(name: str) -> str:
    if name not in NORMALIZATIONS:
        raise EngineInputError(f"unknown direction normalisation {name!r}; choose one of: {', '.join(NORMALIZATIONS)}")
    return name


def check_ignore(name: str | None) -> str:
    name = "none" if name is None else name
    if name not in IGNORE:
        raise EngineInputError(f"unknown --ignore {name!r}; choose one of: {', '.join(IGNORE)}")
    return name


DRAWS_PER_BLOCK = 1 << 16  # ~2 ms of Gaussian draws


def gaussian_draws(count: int, dim: int, seed: int = 0, what: str = "number of directions") -> np.ndarray:
    """(count, dim) standard Gaussian draws of ``np.random.default_rng(seed)``, row k the k-th: what
    every family of random directions in the app (these, slices', dip_probability's) is made from,
    so a seed names the same draws everywhere."""
    if count < 1:
        raise EngineInputError(f"{what} {count} must be at least 1")
    # Drawn a block of rows at a time, the same numbers as one call: numpy's generator holds the
    # GIL for a whole call, and paper B's 5000 directions in one took ~150 ms, the window's
    # longest stall in nonattr-fig3's run; between blocks the GUI thread gets its turn.
    rng, out = np.random.default_rng(seed), np.empty((count, dim))
    rows = max(1, DRAWS_PER_BLOCK // max(dim, 1))
    for start in range(0, count, rows):
        rng.standard_normal(out=out[start : start + rows])
    return out


def unit_rows(d: np.ndarray) -> np.ndarray:
    """Each direction (the last axis) scaled to norm 1."""
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def filter_norms(arch: Arch, v) -> list[np.ndarray]:
    """The norms of every filter (row of each W_l) of a flat vector ``v`` (..., P): one array
    (..., n_l) per layer. What a filter-normalised direction shares with θ."""
    v = np.asarray(v, float)
    out = []
    for l in range(1, arch.n_layers + 1):
        blk = arch.block(f"W{l}")
        out.append(np.linalg.norm(v[..., blk.slice].reshape(*v.shape[:-1], *blk.shape), axis=-1))
    return out


def normalize(arch: Arch, theta, d, normalization: str = "filter", ignore: str = "none") -> np.ndarray:
    """Rescale raw directions ``d`` ((P,) or (K, P)) as ``normalization`` says; a new array."""
    check_normalization(normalization)
    ignore = check_ignore(ignore)
    theta = np.asarray(theta, float)
    d = np.array(d, dtype=float, copy=True)
    if d.shape[-1] != arch.n_params or theta.shape != (arch.n_params,):
        raise EngineInputError(f"directions have shape {d.shape} and θ {theta.shape}; expected (…, {arch.n_params})")
    biases = [arch.block(f"b{l}").slice for l in range(1, arch.n_layers + 1)] if arch.bias else []
    if ignore == "biases":
        for b in biases:
            d[..., b] = 0.0
    if normalization == "random":
        return unit_rows(d)
    tiny = np.finfo(float).tiny
    for l in range(1, arch.n_layers + 1):
        blk = arch.block(f"W{l}")
        W = theta[blk.slice].reshape(blk.shape)
        D = d[..., blk.slice].reshape(*d.shape[:-1], *blk.shape)  # a view: scaled in place
        if normalization == "filter":
            D *= (np.linalg.norm(W, axis=-1) / np.maximum(np.linalg.norm(D, axis=-1), tiny))[..., None]
        else:
            D *= (np.linalg.norm(W) / np.maximum(np.linalg.norm(D, axis=(-2, -1)), tiny))[..., None, None]
    if ignore == "none":
        for b in biases:
            d[..., b] = theta[b]
    return d


def directions(
    arch: Arch, theta, count: int = 2, seed: int = 0, normalization: str = "filter", ignore: str = "none"
) -> np.ndarray:
    """``count`` seeded, normalised directions (count, P): row k is the k-th standard Gaussian
    draw of ``np.random.default_rng(seed)`` (shape (count, P)), then ``normalize``."""
    return normalize(arch, theta, gaussian_draws(count, arch.n_params, seed), normalization, ignore)
