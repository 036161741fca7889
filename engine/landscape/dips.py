"""How many random directions dip below L(θ): paper B's Fig. 3c for any model, and the
extreme-curvature plane for paper B's flat MLPs.

A random plane through a saddle shows the saddle only when one of its directions dips: L(θ + t d)
below L(θ) for some t > 0. Böttcher & Wheeler (2022) and paper B's Fig. 3c (about 1 % of random
directions dip at its saddle) make the point that random projections hide saddles. ``dips_job``
counts it for any loss: K seeded random directions, normalised as a plane's (per filter by
default), each evaluated at a few t in (0, extent], a direction counted when any of its losses lies
below L(θ) by more than rounding (``DIP_TOL`` of |L(θ)|).

The t are spaced geometrically from extent / 100 to extent: at a critical point the curve starts
as L(θ) + ½ t² dᵀHd, so the small t see the quadratic form's sign, and the large ones what a plot
of that extent would show. At a point that is not critical the gradient's first-order term makes
about half of all directions dip; the verdict beside the share says which case it is.

``mlp_extreme_directions`` gives paper B's flat MLPs (``engine.core.mlp``) the same
``ExtremeDirections`` as ``module_hessian.hessian_extreme_directions_job`` gives a module: their
Hessian is small enough to form and diagonalise exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job, wait_for
from engine.landscape import directions as D

DIP_DIRECTIONS = 100  # paper B's Fig. 3c counts a share: 100 directions resolve 1 %
DIP_STEPS = 5  # t values a direction
DIP_TOL = 1e-12  # a loss below L(θ) by at most this much of |L(θ)| is rounding, not a dip
# Random directions drawn at once: the (count, P) block of draws stays small for a large model.
DRAW_BLOCK = 16
MAX_DIP_DIRECTIONS = 10_000
# An MLP's Hessian formed and diagonalised whole up to this many parameters (hessian.FULL_SPECTRUM_MAX_PARAMS).
MLP_FULL_HESSIAN = 3000


@dataclass(frozen=True, eq=False)
class Dips:
    """``losses[k, i]`` = L(θ + t[i] d_k) for K random directions d_k; ``L_star`` = L(θ)."""

    t: np.ndarray  # (T,): step lengths in (0, extent]
    losses: np.ndarray  # (K, T)
    L_star: float
    normalization: str
    seed: int

    @property
    def dipped(self) -> np.ndarray:
        """(K,) bool: the directions whose curve goes below L(θ) beyond rounding."""
        floor = self.L_star - DIP_TOL * max(abs(self.L_star), np.finfo(float).tiny)
        return (self.losses < floor).any(axis=1)

    @property
    def count(self) -> int:
        return int(self.losses.shape[0])

    @property
    def share(self) -> float:
        """The fraction of the directions that dip."""
        return float(np.count_nonzero(self.dipped)) / self.count

    def text(self) -> str:
        n = int(np.count_nonzero(self.dipped))
        return (
            f"{n} of {self.count} random {self.normalization} directions ({100 * self.share:.3g} %) dip below "
            f"L(θ) for t in ({self.t[0]:.3g}, {self.t[-1]:.3g}]"
        )


def dip_steps(extent: float, steps: int = DIP_STEPS) -> np.ndarray:
    """``steps`` values of t from extent / 100 to extent, geometrically spaced."""
    if not (np.isfinite(extent) and extent > 0):
        raise EngineInputError(f"dip extent {extent} must be a positive number")
    return np.geomspace(extent / 100, extent, steps) if steps > 1 else np.array([float(extent)])


def dips_job(
    evaluate,
    layout,
    theta,
    L_star: float,
    extent: float = 1.0,
    count: int = DIP_DIRECTIONS,
    normalization: str = "filter",
    ignore: str = "none",
    seed: int = 0,
    steps: int = DIP_STEPS,
) -> Job[Dips]:
    """Job: ``count`` random directions (``directions.directions`` of ``layout`` at θ, drawn
    ``DRAW_BLOCK`` at a time from seeds ``seed``, ``seed`` + 1, …) each evaluated at ``dip_steps``.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(points)`` → losses (Q,) for points (Q, P), flat parameter vectors; called on a
        helper thread.
    layout : Arch or the parameter tensors' shapes
        As ``directions.directions`` takes it.
    theta : (P,) array
        The point.
    L_star : float
        L(θ), as ``evaluate`` computes it.

    Raises
    ------
    EngineInputError
        ``count`` outside 1 … ``MAX_DIP_DIRECTIONS``, or a bad extent or normalisation.
    """
    if not 1 <= count <= MAX_DIP_DIRECTIONS:
        raise EngineInputError(f"dip directions {count} must be within 1 .. {MAX_DIP_DIRECTIONS}")
    theta = np.asarray(theta, float)
    t = dip_steps(extent, steps)
    losses = np.full((count, len(t)), np.nan)
    done = [0]
    # OpenMP keeps a thread count per thread, and a fresh one starts with every core: the helper
    # takes the caller's (one in the window), as engine.landscape.plane.points_job's does
    threads = torch.get_num_threads()

    def work(stop):
        torch.set_num_threads(threads)
        for start in range(0, count, DRAW_BLOCK):
            if stop.is_set():
                return None
            rows = min(DRAW_BLOCK, count - start)
            d = D.directions(layout, theta, rows, seed + start // DRAW_BLOCK, normalization, ignore)
            points = theta[None, None, :] + t[None, :, None] * d[:, None, :]
            losses[start : start + rows] = np.asarray(evaluate(points.reshape(-1, theta.size)), float).reshape(rows, -1)
            done[0] = start + rows
        return losses

    status = lambda: (done[0] / count, f"random direction {done[0]}/{count}")  # noqa: E731
    values = yield from wait_for(work, "random directions", status=status)
    return Dips(t, values, float(L_star), normalization, seed)


def mlp_extreme_directions(arch, theta, X, Y, kind: str = "sum"):
    """``ExtremeDirections`` of a flat MLP at θ from its whole Hessian (``mlp.hessian``, exact):
    the eigenvectors of its smallest and largest eigenvalues, signed as a module's, each with its
    measured residual ‖Hd − λd‖, and ‖∇L(θ)‖."""
    from engine.core import mlp
    from engine.landscape.module_hessian import ExtremeDirections

    if arch.n_params > MLP_FULL_HESSIAN:
        raise EngineInputError(
            f"extreme-curvature directions of an MLP form its Hessian: {arch.n_params} parameters, at most "
            f"{MLP_FULL_HESSIAN}; save it as a .pt2 to use Lanczos instead"
        )
    H = mlp.hessian(arch, theta, X, Y, kind)
    values, vectors = np.linalg.eigh(H)
    _, gradient = mlp.loss_and_grad(arch, theta, X, Y, kind)
    ends = []
    for k in (0, -1):
        d = vectors[:, k] * np.sign(vectors[np.argmax(np.abs(vectors[:, k])), k])
        ends.append((d, float(values[k]), float(np.linalg.norm(H @ d - values[k] * d))))
    (d1, low, low_r), (d2, top, top_r) = ends
    return ExtremeDirections(d1, d2, low, top, low_r, top_r, float(np.linalg.norm(gradient)), 0)


def mlp_evaluator(arch, X, Y, kind: str = "sum"):
    """``evaluate(points)`` for ``dips_job``: a flat MLP's losses at (Q, P) points, float64."""
    from engine.core import mlp

    Xt = torch.as_tensor(np.asarray(X, float))
    y = mlp.target_tensor(arch, Y, kind)
    return lambda points: mlp.loss_batch(arch, torch.as_tensor(points), Xt, y, kind).numpy()


def module_evaluator(loss):
    """``evaluate(points)`` for ``dips_job``: a ``ModuleLoss``'s value at each point, one pass each."""
    return lambda points: np.array([loss.loss(loss.flat(p)) for p in points])
