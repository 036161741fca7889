"""Plane directions for any module, normalised per filter or per layer as Li et al. 2018 do
(docs/MATH.md B8, B12.1; engine.landscape.directions does the same for paper B's flat MLPs).

A direction lives in θ's flat layout: the module's parameter tensors, in ``named_parameters()``
order, each flattened (``ModuleLoss.names`` and ``.shapes``). Its raw draw is a standard Gaussian,
row k of ``np.random.default_rng(seed).standard_normal((count, n))``; then, tensor by tensor:

- ``random``: nothing per tensor; the whole direction is scaled to unit norm at the end;
- ``filter``: a tensor of two or more dimensions is a stack of filters along its first axis
  (a convolution's output channels, a linear layer's rows): filter i of the direction is scaled
  to the norm of θ's filter i, as Li et al.'s ``normalize_directions_for_weights`` does;
- ``layer``: such a tensor as a whole to the norm of θ's tensor.

One-dimensional tensors (biases, batch norm's weights and biases) and scalars: with
``ignore="biasbn"`` (Li et al.'s ``--xignore biasbn``) the direction is zero there; otherwise
``filter`` and ``layer`` copy θ's values into it (as Li et al. do) and ``random`` keeps its draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.core.errors import EngineInputError
from engine.landscape.directions import check_normalization

IGNORE = ("none", "biasbn")


def check_ignore(name: str | None) -> str:
    name = "none" if name is None else name
    if name not in IGNORE:
        raise EngineInputError(f"unknown --ignore {name!r}; choose one of: {', '.join(IGNORE)}")
    return name


def _blocks(shapes: Sequence[tuple]) -> list[tuple[slice, tuple]]:
    out, pos = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        out.append((slice(pos, pos + size), tuple(shape)))
        pos += size
    return out


def filter_norms(shapes: Sequence[tuple], v) -> np.ndarray:
    """The norm of every filter (first-axis slice of each tensor of ≥ 2 dimensions) of the flat
    ``v`` (..., n), concatenated in parameter order: what a filter-normalised direction shares with θ."""
    v = np.asarray(v, float)
    parts = [
        np.linalg.norm(v[..., s].reshape(*v.shape[:-1], shape[0], -1), axis=-1)
        for s, shape in _blocks(shapes)
        if len(shape) >= 2
    ]
    return np.concatenate(parts, axis=-1) if parts else np.zeros((*v.shape[:-1], 0))


def normalize(shapes: Sequence[tuple], theta, d, normalization: str = "filter", ignore: str = "none") -> np.ndarray:
    """Raw directions ``d`` ((n,) or (K, n)) rescaled as ``normalization`` says; a new array."""
    check_normalization(normalization)
    ignore = check_ignore(ignore)
    blocks = _blocks(shapes)
    n = blocks[-1][0].stop if blocks else 0
    theta = np.asarray(theta, float)
    d = np.array(d, dtype=float, copy=True)
    if d.shape[-1] != n or theta.shape != (n,):
        raise EngineInputError(f"directions have shape {d.shape} and θ {theta.shape}; expected (…, {n})")
    tiny = np.finfo(float).tiny
    lead = d.shape[:-1]
    for s, shape in blocks:
        if len(shape) < 2:
            if ignore == "biasbn":
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
    shapes: Sequence[tuple], theta, count: int = 2, seed: int = 0, normalization: str = "filter", ignore: str = "none"
) -> np.ndarray:
    """``count`` seeded, normalised directions (count, n): row k is the k-th standard Gaussian
    draw of ``np.random.default_rng(seed)``, then ``normalize``."""
    if count < 1:
        raise EngineInputError(f"number of directions {count} must be at least 1")
    n = sum(int(np.prod(s, dtype=np.int64)) for s in shapes)
    raw = np.random.default_rng(seed).standard_normal((count, n))
    return normalize(shapes, theta, raw, normalization, ignore)
