"""Random directions for slices and planes, normalised as Li et al. 2018 do (docs/MATH.md B8, B12.1).

A direction lives in θ's flat layout: the parameter tensors in order, each flattened. The layout
is given as an ``Arch`` (paper B's MLPs: W1, b1, W2, b2, … as engine.core.mlp lays them out) or as
the tensors' shapes (any module: ``ModuleLoss.shapes``, its ``named_parameters()`` in order). A raw
direction is a standard Gaussian, row k of ``np.random.default_rng(seed).standard_normal((count,
P))``. Its scale then decides what a plot shows: with unit directions a step t moves every
network by the same Euclidean length, which means a lot for small weights and little for large
ones, so plots of two networks cannot be compared. Li et al. rescale instead, tensor by tensor:

- ``random``: nothing per tensor; the whole direction to unit norm (this app's default for
  paper B's slices);
- ``filter``: a tensor of two or more dimensions is a stack of filters along its first axis (a
  convolution's output channels, a linear layer's rows: one output neuron's row of W_l); filter
  i of the direction is scaled to the norm of θ's filter i;
- ``layer``: such a tensor as a whole to the norm of θ's tensor.

One-dimensional tensors (biases, batch norm's weights and biases) and scalars: with ``ignore``
"biases" or "biasbn" (Li et al.'s ``--xignore biasbn``; the two names say the same) the direction
is zero there; otherwise ``filter`` and ``layer`` copy θ's values into it, as their
``normalize_directions_for_weights`` does, and ``random`` keeps the Gaussian draw before the
unit scaling.

Seeded: the same (seed, index) gives the same direction on every machine (numpy's PCG64).
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.mlp import Arch

NORMALIZATIONS = ("random", "filter", "layer")
IGNORE = ("none", "biases", "biasbn")


def check_normalization(name: str) -> str:
    if name not in NORMALIZATIONS:
        raise EngineInputError(f"unknown direction normalisation {name!r}; choose one of: {', '.join(NORMALIZATIONS)}")
    return name


def check_ignore(name: str | None) -> str:
    name = "none" if name is None else name
    if name not in IGNORE:
        raise EngineInputError(f"unknown --ignore {name!r}; choose one of: {', '.join(IGNORE)}")
    return name


def shapes_of(layout) -> tuple[tuple[int, ...], ...]:
    """The parameter tensors' shapes, in θ's order: an ``Arch``'s blocks, or the shapes themselves."""
    if isinstance(layout, Arch):
        return tuple(tuple(b.shape) for b in layout.blocks)
    return tuple(tuple(int(n) for n in shape) for shape in layout)


def _blocks(layout) -> list[tuple[slice, tuple]]:
    out, pos = [], 0
    for shape in shapes_of(layout):
        size = int(np.prod(shape, dtype=np.int64))
        out.append((slice(pos, pos + size), shape))
        pos += size
    return out


DRAWS_PER_BLOCK = 1 << 16  # Gaussian draws per call: short enough to hand the GIL back often


def gaussian_draws(count: int, dim: int, seed: int = 0, what: str = "number of directions") -> np.ndarray:
    """(count, dim) standard Gaussian draws of ``np.random.default_rng(seed)``, row k the k-th: what
    every family of random directions in the app (these, slices', dip_probability's) is made from,
    so a seed names the same draws everywhere."""
    if count < 1:
        raise EngineInputError(f"{what} {count} must be at least 1")
    # Drawn a block of rows at a time, the same numbers as one call: numpy's generator holds the
    # GIL for a whole call, and paper B's 5000 directions in one call were the window's longest
    # stall in nonattr-fig3's run; between blocks the GUI thread gets its turn.
    rng, out = np.random.default_rng(seed), np.empty((count, dim))
    rows = max(1, DRAWS_PER_BLOCK // max(dim, 1))
    for start in range(0, count, rows):
        rng.standard_normal(out=out[start : start + rows])
    return out


def unit_rows(d: np.ndarray) -> np.ndarray:
    """Each direction (the last axis) scaled to norm 1."""
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def filter_norms(layout, v) -> np.ndarray:
    """The norm of every filter (first-axis slice of each tensor of ≥ 2 dimensions; a row of each
    W_l) of the flat ``v`` (..., P), concatenated in parameter order (layer 1's rows first): what a
    filter-normalised direction shares with θ."""
    v = np.asarray(v, float)
    parts = [
        np.linalg.norm(v[..., s].reshape(*v.shape[:-1], shape[0], -1), axis=-1)
        for s, shape in _blocks(layout)
        if len(shape) >= 2
    ]
    return np.concatenate(parts, axis=-1) if parts else np.zeros((*v.shape[:-1], 0))


def normalize(layout, theta, d, normalization: str = "filter", ignore: str = "none") -> np.ndarray:
    """Raw directions ``d`` ((P,) or (K, P)) rescaled as ``normalization`` says; a new array."""
    check_normalization(normalization)
    ignore = check_ignore(ignore)
    blocks = _blocks(layout)
    n = blocks[-1][0].stop if blocks else 0
    theta = np.asarray(theta, float)
    d = np.array(d, dtype=float, copy=True)
    if d.shape[-1] != n or theta.shape != (n,):
        raise EngineInputError(f"directions have shape {d.shape} and θ {theta.shape}; expected (…, {n})")
    tiny = np.finfo(float).tiny
    lead = d.shape[:-1]
    for s, shape in blocks:
        if len(shape) < 2:
            if ignore != "none":
                d[..., s] = 0.0
            elif normalization != "random":
                d[..., s] = theta[s]
            continue
        if normalization == "random":
            continue
        axes = -1 if normalization == "filter" else (-2, -1)
        W = theta[s].reshape(shape[0], -1)
        D = d[..., s].reshape(*lead, shape[0], -1)
        norm = lambda a: np.linalg.norm(a, axis=axes, keepdims=True)
        d[..., s] = (D * (norm(W) / np.maximum(norm(D), tiny))).reshape(*lead, -1)
    if normalization == "random":
        d /= np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), tiny)
    return d


def directions(
    layout, theta, count: int = 2, seed: int = 0, normalization: str = "filter", ignore: str = "none"
) -> np.ndarray:
    """``count`` seeded, normalised directions (count, P): row k is the k-th standard Gaussian
    draw of ``np.random.default_rng(seed)`` (shape (count, P)), then ``normalize``. ``layout``:
    an ``Arch`` or the parameter tensors' shapes."""
    n = sum(int(np.prod(shape, dtype=np.int64)) for shape in shapes_of(layout))
    return normalize(layout, theta, gaussian_draws(count, n, seed), normalization, ignore)
