"""2-D planes L(θ + α d1 + β d2) of any module (docs/MATH.md B8, B12.2), and the point loop the
module toolkit's other modes share.

Unlike paper B's MLPs (engine.landscape.plane), a module's forward is opaque: every grid point is
one ``ModuleLoss`` evaluation over all the data, chunk by chunk. The points run on a helper
thread (``wait_for``), so the job yields every ~50 ms however long one point takes, and a
cancel stops the loop at the next point. A grid is evaluated row by row (``plane_row``): each
row is a pure function of (θ, d1, d2, α_i, β), which is what a distributed run hands out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job, wait_for
from engine.landscape import module_directions as MD
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.plane import PlaneResult

# Points a side: each point is a pass over all the data, so 201² = 40,401 passes is the most a
# plane of a module asks for (a 1001² MLP plane runs through one batched kernel instead).
MAX_GRID = 201


def check_grid(n: int, extent: float) -> None:
    if not 2 <= n <= MAX_GRID:
        raise EngineInputError(
            f"plane size {n} must be within 2 .. {MAX_GRID} points a side for a module (each point is a pass "
            f"over all the data)"
        )
    if not (np.isfinite(extent) and extent > 0):
        raise EngineInputError(f"plane extent {extent} must be a positive number")


def points_job(
    count: int, evaluate: Callable[[int], tuple[float, float | None]], message: str = "point"
) -> Job[tuple[np.ndarray, np.ndarray]]:
    """Job: ``evaluate(i)`` = (loss, accuracy or None) for i < count, on a helper thread; returns
    (losses, accuracies) as float64 arrays (accuracy NaN where None)."""
    losses, accuracy = np.full(count, np.nan), np.full(count, np.nan)
    done = [0]
    # OpenMP keeps a thread count per thread and a fresh one starts with every core: the helper
    # thread takes the caller's (one in the window and in sweeps, every core from the command line)
    threads = torch.get_num_threads()

    def work(stop: threading.Event):
        torch.set_num_threads(threads)
        for i in range(count):
            if stop.is_set():
                return None
            value, acc = evaluate(i)
            losses[i], accuracy[i] = value, np.nan if acc is None else acc
            done[0] = i + 1
        return losses, accuracy

    status = lambda: (done[0] / count, f"{message} {done[0]}/{count}")
    return (yield from wait_for(work, message, status=status))


def _point(theta: torch.Tensor, d1: torch.Tensor, d2: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """θ + a d1 + b d2, in one fixed order of operations: a row anywhere equals the grid's, bit for bit."""
    return theta + a * d1 + b * d2


def plane_row(loss: ModuleLoss, theta, d1, d2, alpha: float, beta, buffers=None) -> np.ndarray:
    """L(θ + α d1 + β_j d2) for every β_j: one row of a grid, float64 (len(beta),)."""
    theta, d1, d2 = (loss.flat(v) for v in (theta, d1, d2))
    points = (_point(theta, d1, d2, float(alpha), float(b)) for b in np.asarray(beta, float))
    return np.array([loss.loss(p, buffers) for p in points])


def grid_job(loss: ModuleLoss, theta, d1, d2, alpha, beta, buffers=None) -> Job[np.ndarray]:
    """Job: the (len(alpha), len(beta)) grid of L(θ + α_i d1 + β_j d2), point by point."""
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    theta, d1, d2 = (loss.flat(v) for v in (theta, d1, d2))
    m = len(beta)

    def evaluate(k: int):
        i, j = divmod(k, m)
        return loss.loss(_point(theta, d1, d2, float(alpha[i]), float(beta[j])), buffers), None

    values, _ = yield from points_job(len(alpha) * m, evaluate, "plane point")
    return values.reshape(len(alpha), m)


def module_plane_job(
    loss: ModuleLoss,
    n: int = 51,
    extent: float = 1.0,
    normalization: str = "filter",
    ignore: str = "none",
    seed: int = 0,
    d1=None,
    d2=None,
    grid=None,
) -> Job[PlaneResult]:
    """Job: the n×n plane α, β ∈ [−extent, extent] through θ along two seeded, normalised
    directions (engine.landscape.module_directions), or along ``d1``, ``d2`` when given (then
    ``normalization`` only names them, e.g. "hessian"). ``grid(θ, d1, d2, α, β)``: a job giving
    the loss grid elsewhere (engine.sweeps.module_plane: rows on an executor), else ``grid_job``."""
    check_grid(n, extent)
    theta = loss.theta.cpu().numpy().astype(float)
    if (d1 is None) != (d2 is None):
        raise EngineInputError("give both plane directions d1 and d2, or neither")
    if d1 is None:
        d1, d2 = MD.directions(loss.shapes, theta, 2, seed, normalization, ignore)
    else:
        MD.check_ignore(ignore)
        d1, d2 = (np.asarray(torch.as_tensor(d).double().cpu(), float) for d in (d1, d2))
        for name, d in (("d1", d1), ("d2", d2)):
            if d.shape != theta.shape:
                raise EngineInputError(f"direction {name} has shape {d.shape}; expected ({loss.n_params},)")
    alpha = np.linspace(-extent, extent, n)
    beta = alpha.copy()
    job = grid_job(loss, theta, d1, d2, alpha, beta) if grid is None else grid(theta, d1, d2, alpha, beta)
    values = yield from job
    return PlaneResult(alpha, beta, values, theta, d1, d2, loss.loss(theta), loss.kind, normalization, ignore, seed)
