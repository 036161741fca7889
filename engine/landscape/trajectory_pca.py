"""An optimizer's path drawn on the loss over its PCA plane, as Li et al. 2018 do (docs/MATH.md B12.3).

Random planes almost never contain an optimizer's path: in high dimension two random directions
are nearly orthogonal to any fixed one. Li et al. take the trajectory θ_0 … θ_T, subtract its end
point, and use the top two principal directions of those differences as the plane's axes, centred
at the end point. Their code hands the differences to sklearn's PCA, which centres them on their
mean first; so does this module (an SVD of the centred matrix, ``pca_explained`` its variance
ratios). The path itself is projected without that mean, (θ_t − θ_T)·c_k, so it ends at (0, 0).

``--compare``: several optimizers from the same start share one plane, centred at the first
run's end, fitted to all runs' points together.

A user's own checkpoints (``checkpoint_plane_job``): the common case of a model trained elsewhere,
its state_dicts saved along the way. The checkpoints θ_0 … θ_T (their parameters, flattened as
``ModuleLoss.names``) minus the last one go to ``pca_directions`` (sklearn's centring, as Li et
al.'s code); the plane is centred at the last checkpoint and covers the projected path with a
margin (``path_grid``). The surface is evaluated with the last checkpoint's buffers (batch norm's
running statistics), so its centre is that model's loss; each checkpoint's own loss, in
``trajectory_loss``, uses its own buffers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, subjob
from engine.core.runtime import configure_torch_threads
from engine.landscape.plane import MAX_MODULE_GRID, PlaneResult, check_grid, mlp_grid_job, module_grid_job, points_job

OPTIMIZERS = ("gd", "adam", "sgd")
MAX_STEPS = 100_000
MAX_TRAJECTORY_FLOATS = 200_000_000  # 1.6 GB of recorded parameters, all runs together
SGD_BATCH = 32
MARGIN = 0.25  # the plane reaches this share of the path's range beyond it on each side


def default_lr(optimizer: str, kind: str, n_samples: int) -> float:
    """Adam 1e-3; GD and SGD 0.1, over N for the summed loss (its gradient grows with N)."""
    if optimizer == "adam":
        return 1e-3
    return 0.1 / n_samples if kind == "sum" else 0.1


@dataclass(frozen=True, eq=False)
class Trajectory:
    optimizer: str
    lr: float
    params: np.ndarray  # (T, P): θ before step 1, then after every step
    loss: np.ndarray  # (T,): the full-data loss at each row


def check_optimizer(name: str) -> str:
    if name not in OPTIMIZERS:
        raise EngineInputError(f"unknown optimizer {name!r}; choose one of: {', '.join(OPTIMIZERS)}")
    return name


def train_job(
    arch: Arch,
    theta,
    X,
    Y,
    steps: int,
    optimizer: str = "gd",
    lr: float | None = None,
    kind: str = "sum",
    seed: int = 0,
    batch: int = SGD_BATCH,
) -> Job[Trajectory]:
    """Job: ``steps`` steps of ``optimizer`` from ``theta``, recording every parameter vector.

    gd: full-batch gradient descent θ ← θ − h∇L. adam: torch.optim.Adam on the full batch. sgd:
    minibatches of ``batch`` samples drawn without replacement each epoch (seeded), the step on
    the minibatch estimate of the full loss (the batch's loss × N/B for the summed loss).
    """
    configure_torch_threads()
    check_optimizer(optimizer)
    if not 1 <= steps <= MAX_STEPS:
        raise EngineInputError(f"training steps {steps} must be within 1 .. {MAX_STEPS}")
    X, _ = mlp.check_data(arch, X, Y, kind)
    if (steps + 1) * arch.n_params > MAX_TRAJECTORY_FLOATS:
        raise EngineInputError(
            f"{steps} steps × {arch.n_params} parameters exceed the trajectory limit "
            f"of {MAX_TRAJECTORY_FLOATS:g} numbers"
        )
    lr = default_lr(optimizer, kind, len(X)) if lr is None else float(lr)
    if not (np.isfinite(lr) and lr > 0):
        raise EngineInputError(f"learning rate {lr} must be a positive number")
    Xt = torch.as_tensor(X)
    y = mlp.target_tensor(arch, Y, kind)
    t = torch.tensor(np.asarray(theta, float), requires_grad=True)
    opt = torch.optim.Adam([t], lr=lr) if optimizer == "adam" else torch.optim.SGD([t], lr=lr)
    rng = np.random.default_rng(seed)
    order, pos = rng.permutation(len(X)), 0
    params, losses = np.empty((steps + 1, arch.n_params)), np.empty(steps + 1)
    last = time.perf_counter()
    for k in range(steps + 1):
        params[k] = t.detach().numpy()
        full = mlp.loss_t(arch, t, Xt, y, kind)
        losses[k] = float(full.detach())
        if not np.isfinite(losses[k]):
            raise EngineInputError(
                f"{optimizer} diverged at step {k} (loss {losses[k]}); use a smaller --lr than {lr:g}"
            )
        if k == steps:
            break
        if optimizer == "sgd":
            batch = min(batch, len(X))
            if pos + batch > len(X):
                order, pos = rng.permutation(len(X)), 0
            idx = torch.as_tensor(order[pos : pos + batch])
            pos += batch
            yb = y[idx] if y.ndim == 1 else y[:, idx]
            objective = mlp.loss_t(arch, t, Xt[idx], yb, kind) * (len(X) / len(idx) if kind == "sum" else 1.0)
        else:
            objective = full
        opt.zero_grad()
        objective.backward()
        opt.step()
        if time.perf_counter() - last > 0.05:
            last = time.perf_counter()
            yield Progress((k + 1) / steps, f"{optimizer}: step {k + 1}/{steps}, loss {losses[k]:.4g}")
    return Trajectory(optimizer, lr, params, losses)


@dataclass(frozen=True, eq=False)
class PCAPlane:
    """The trajectories' PCA plane and the loss over it: what plane.npz holds in ``--train`` mode."""

    plane: PlaneResult  # theta = center, d1, d2 = the components
    runs: tuple  # Trajectory per optimizer, the first one defines the centre
    center: np.ndarray  # (P,)
    components: np.ndarray  # (2, P) orthonormal
    explained: np.ndarray  # (2,) explained variance ratios
    paths: np.ndarray  # (R, T, 2): (θ_t − center) @ componentsᵀ for each run


def pca_directions(trajectories, center) -> tuple[np.ndarray, np.ndarray]:
    """Top two principal directions (2, P) of the stacked θ_t − center, centred on their mean as
    sklearn's PCA does, and their explained variance ratios (2,). Signs: the first run's start
    has non-negative coordinates."""
    M = np.concatenate([np.asarray(T, float) - center for T in trajectories])
    if len(M) < 3:
        raise EngineInputError("a PCA plane needs a trajectory of at least 2 steps")
    Mc = M - M.mean(0)
    # the T × T Gram matrix instead of an SVD of T × P: T ≪ P (200 × 118,000 here)
    evals, evecs = np.linalg.eigh(Mc @ Mc.T)
    evals, evecs = evals[::-1], evecs[:, ::-1]
    if evals[1] <= 1e-30 * max(evals[0], 1e-300):
        raise EngineInputError("the trajectory moves along a single line; its PCA plane is undefined")
    comps = (evecs[:, :2].T @ Mc) / np.sqrt(evals[:2])[:, None]
    comps /= np.linalg.norm(comps, axis=1, keepdims=True)  # exact unit rows despite rounding
    start = M[0] @ comps.T
    comps *= np.where(start < 0, -1.0, 1.0)[:, None]
    return comps, evals[:2] / evals[evals > 0].sum()


def path_grid(paths, n: int, extent: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The plane's axes α, β (n,) each: covering every path (…, 2) with a ``MARGIN`` share of its
    range beyond it on each side, or [−extent, extent] when given."""
    if extent is not None:
        alpha = np.linspace(-extent, extent, n)
        return alpha, alpha.copy()
    points = np.asarray(paths, float).reshape(-1, 2)
    lo, hi = points.min(0), points.max(0)
    pad = MARGIN * np.maximum(hi - lo, 1e-12)
    return tuple(np.linspace(lo[k] - pad[k], hi[k] + pad[k], n) for k in (0, 1))


def pca_plane_job(
    arch: Arch,
    theta,
    X,
    Y,
    steps: int,
    optimizers=("gd",),
    lr: float | None = None,
    kind: str = "sum",
    n: int = 51,
    extent: float | None = None,
    seed: int = 0,
    dtype: str = "float64",
    device: str = "cpu",
    threads: int = 1,
) -> Job[PCAPlane]:
    """Job: train each optimizer ``steps`` steps from ``theta``, fit the PCA plane and evaluate
    the n×n loss over it. The grid covers every path with a margin, or [−extent, extent]²."""
    optimizers = tuple(check_optimizer(o) for o in optimizers)
    if not optimizers or len(set(optimizers)) != len(optimizers):
        raise EngineInputError(f"optimizers {optimizers} must be one or more distinct names")
    check_grid(n, 1.0 if extent is None else extent)
    share = 0.6 / len(optimizers)
    runs = []
    for r, name in enumerate(optimizers):
        job = train_job(arch, theta, X, Y, steps, name, lr, kind, seed)
        runs.append((yield from subjob(job, r * share, (r + 1) * share, f"train {name}: ")))
    center = runs[0].params[-1]
    comps, explained = pca_directions([run.params for run in runs], center)
    paths = np.stack([(run.params - center) @ comps.T for run in runs])
    alpha, beta = path_grid(paths, n, extent)
    job = mlp_grid_job(arch, center, comps[0], comps[1], alpha, beta, X, Y, kind, dtype, device, threads)
    loss = yield from subjob(job, 0.6, 1.0, "PCA plane: ")
    plane = PlaneResult(
        alpha,
        beta.copy(),
        loss,
        center,
        comps[0],
        comps[1],
        mlp.loss(arch, center, X, Y, kind),
        kind,
        "pca",
        "none",
        seed,
    )
    return PCAPlane(plane, tuple(runs), center, comps, explained, paths)


def check_count(count: int, n_params: int) -> None:
    """Enough checkpoints for a plane, and not more than memory holds (before any is read)."""
    if count < 3:
        raise EngineInputError(f"a PCA plane needs at least 3 checkpoints; got {count}")
    if count * n_params > MAX_TRAJECTORY_FLOATS:
        raise EngineInputError(
            f"{count} checkpoints × {n_params} parameters exceed the trajectory limit of "
            f"{MAX_TRAJECTORY_FLOATS:g} numbers"
        )


def checkpoint_plane_job(
    loss, checkpoints: Sequence[Mapping], n: int = 51, extent: float | None = None
) -> Job[PCAPlane]:
    """Job: the PCA plane of ``checkpoints`` (state_dicts, oldest first, at least three) and the
    n×n loss over it; the grid covers the path with a margin, or [−extent, extent]². ``loss``: a
    ``ModuleLoss``."""
    check_grid(n, 1.0 if extent is None else extent, MAX_MODULE_GRID)
    check_count(len(checkpoints), loss.n_params)
    params = np.stack([loss.flatten(state).double().cpu().numpy() for state in checkpoints])
    buffers = [loss.state_buffers(state) for state in checkpoints]
    center = params[-1]
    comps, explained = pca_directions([params], center)
    path = (params - center) @ comps.T
    evaluate = lambda t: (loss.loss(params[t], buffers[t]), None)
    own, _ = yield from subjob(points_job(len(params), evaluate, "checkpoint"), 0.0, 0.1, "checkpoint losses: ")
    alpha, beta = path_grid(path, n, extent)
    grid = yield from subjob(module_grid_job(loss, center, comps[0], comps[1], alpha, beta, buffers[-1]), 0.1, 1.0, "")
    plane = PlaneResult(alpha, beta, grid, center, comps[0], comps[1], float(own[-1]), loss.kind, "pca", "none")
    run = Trajectory("checkpoints", float("nan"), params, own)
    return PCAPlane(plane, (run,), center, comps, explained, path[None])
