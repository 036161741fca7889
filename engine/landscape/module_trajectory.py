"""A user's own training checkpoints drawn on their PCA plane, as Li et al. 2018 do (docs/MATH.md
B12.3): the common case of a model trained elsewhere, its state_dicts saved along the way.

The checkpoints θ_0 … θ_T (their parameters, flattened as ``ModuleLoss.names``) minus the last
one go to engine.landscape.trajectory_pca's ``pca_directions`` (sklearn's centring, as Li et
al.'s code); the plane is centred at the last checkpoint and covers the projected path with a
margin (``path_grid``). The surface is evaluated with the last checkpoint's buffers (batch
norm's running statistics), so its centre is that model's loss; each checkpoint's own loss, in
``trajectory_loss``, uses its own buffers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job, subjob
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.module_plane import check_grid, grid_job, points_job
from engine.landscape.plane import PlaneResult
from engine.landscape.trajectory_pca import MAX_TRAJECTORY_FLOATS, PCAPlane, Trajectory, path_grid, pca_directions


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
    loss: ModuleLoss, checkpoints: Sequence[Mapping], n: int = 51, extent: float | None = None
) -> Job[PCAPlane]:
    """Job: the PCA plane of ``checkpoints`` (state_dicts, oldest first, at least three) and the
    n×n loss over it; the grid covers the path with a margin, or [−extent, extent]²."""
    check_grid(n, 1.0 if extent is None else extent)
    check_count(len(checkpoints), loss.n_params)
    params = np.stack([loss.flatten(state).double().cpu().numpy() for state in checkpoints])
    buffers = [loss.state_buffers(state) for state in checkpoints]
    center = params[-1]
    comps, explained = pca_directions([params], center)
    path = (params - center) @ comps.T
    evaluate = lambda t: (loss.loss(params[t], buffers[t]), None)
    own, _ = yield from subjob(points_job(len(params), evaluate, "checkpoint"), 0.0, 0.1, "checkpoint losses: ")
    alpha, beta = path_grid(path, n, extent)
    grid = yield from subjob(grid_job(loss, center, comps[0], comps[1], alpha, beta, buffers[-1]), 0.1, 1.0, "")
    plane = PlaneResult(alpha, beta, grid, center, comps[0], comps[1], float(own[-1]), loss.kind, "pca", "none")
    run = Trajectory("checkpoints", float("nan"), params, own)
    return PCAPlane(plane, (run,), center, comps, explained, path[None])
