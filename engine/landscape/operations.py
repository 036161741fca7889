"""The toolkit's operations on any model's loss: one job each, for the API, the command line and
the toolkit tab alike (docs/ARCHITECTURE.md, "The toolkit's seam").

Every operation takes the loss over a flat θ (``ModuleLoss``: value, gradient, Hessian-vector
products, any module through ``functional_call``) and returns the engine's result type. Where the
module is a chain of ``Linear`` layers and one activation under a named loss, a plane goes to
the batched MLP kernel instead (``engine.landscape.plane``): the same losses, layer 1 formed once
for the whole grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job, subjob
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.plane import PlaneResult

DIRECTIONS = ("filter", "layer", "random", "hessian", "hessian-extremes")
IGNORE = ("none", "biasbn")
MLP_ACTIVATIONS = {"ReLU": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}


def plane_job(
    loss: ModuleLoss,
    points: int = 51,
    extent: float = 1.0,
    directions: str = "filter",
    ignore: str = "none",
    seed: int = 0,
    d1=None,
    d2=None,
    grid=None,
) -> Job[PlaneResult]:
    """Job: the ``points`` × ``points`` plane L(θ + α d1 + β d2), α, β ∈ [−extent, extent].

    Parameters
    ----------
    loss : ModuleLoss
        The model's loss over a flat θ.
    directions : str
        "filter", "layer", "random" (seeded Gaussian draws, normalised; MATH.md B12.1), "hessian"
        (the top two eigenvectors) or "hessian-extremes" (d1 the bottom, d2 the top eigenvector;
        MATH.md C5); ignored when ``d1`` and ``d2`` are given, which it then only names.
    ignore : {"none", "biasbn"}
        "biasbn" zeroes every 1-D parameter in random directions.
    grid : callable, optional
        ``grid(θ, d1, d2, α, β)``, a job computing the loss grid elsewhere (a sweep's rows).

    Returns
    -------
    PlaneResult
    """
    from engine.landscape import module_hessian as MH
    from engine.landscape import plane

    fast = mlp_backend(loss) if d1 is None and grid is None and not directions.startswith("hessian") else None
    # the MLP kernel takes up to plane.MAX_GRID points a side, a pass of the module per point fewer
    plane.check_grid(points, extent, plane.MAX_GRID if fast is not None else plane.MAX_MODULE_GRID)
    if ignore not in IGNORE:
        raise EngineInputError(f"unknown ignore {ignore!r}; choose one of: {', '.join(IGNORE)}")
    if d1 is None and directions not in DIRECTIONS:
        raise EngineInputError(f"unknown directions {directions!r}; choose one of: {', '.join(DIRECTIONS)}")
    rest = (0.0, 1.0)
    if d1 is None and directions == "hessian":
        d1, d2 = yield from subjob(MH.hessian_directions_job(loss, seed=seed), 0.0, 0.3, "Hessian directions: ")
        rest = (0.3, 1.0)
    elif d1 is None and directions == "hessian-extremes":
        found = yield from subjob(MH.hessian_extreme_directions_job(loss, seed=seed), 0.0, 0.3, "extreme curvature: ")
        d1, d2, rest = found.d1, found.d2, (0.3, 1.0)
    if fast is not None:
        arch, X, Y = fast
        theta = loss.theta.double().cpu().numpy()
        mlp_ignore = "biases" if ignore == "biasbn" else "none"
        dtype = "float64" if loss.dtype == torch.float64 else "float32"
        job = plane.plane_job(
            arch, theta, X, Y, points, extent, directions, mlp_ignore, seed, loss.kind, dtype, str(loss.device)
        )
        p = yield from subjob(job, *rest, "plane: ")
        return _replaced(p, ignore=ignore)
    job = plane.module_plane_job(loss, points, extent, directions, ignore, seed, d1, d2, grid)
    return (yield from subjob(job, *rest, "plane: "))


def hessian_job(loss: ModuleLoss, **options) -> Job:
    """Job: the Hessian's measures (``module_hessian.module_hessian_job``'s options: top_k,
    bottom_k, probes, density_probes, steps, full, seed, tol)."""
    from engine.landscape.module_hessian import module_hessian_job

    return (yield from module_hessian_job(loss, **options))


def interpolation_job(loss: ModuleLoss, state_b: Mapping, points: int = 201, lo: float = -0.5, hi: float = 1.5):
    """Job: the line from θ (with its buffers) to ``state_b``'s parameters and buffers (a
    state_dict of the same module), ``points`` values of α over [lo, hi]."""
    from engine.landscape.interpolation import module_interpolation_job

    theta_b, buffers_b = loss.flatten(state_b), loss.state_buffers(state_b)
    return (yield from module_interpolation_job(loss, theta_b, buffers_b, points, lo, hi))


def trajectory_job(loss: ModuleLoss, states: Sequence[Mapping], points: int = 51, extent: float | None = None):
    """Job: ``states`` (state_dicts, oldest first, at least three) on their PCA plane, and the
    loss over it around the last one; each state checked against the model first, named by its
    index when it does not match."""
    from engine.landscape.trajectory_pca import check_count, checkpoint_plane_job

    check_count(len(states), loss.n_params)
    for i, state in enumerate(states):
        try:
            loss.flatten(state)
        except EngineInputError as error:
            raise EngineInputError(f"checkpoints[{i}]: {error}") from None
    return (yield from checkpoint_plane_job(loss, states, points, extent))


def mlp_backend(loss: ModuleLoss):
    """(Arch, X, Y) when ``loss``'s module is an ``nn.Sequential`` of ``Linear`` layers with one
    activation (ReLU, sigmoid or tanh) between each two, all with biases or none, under a named
    loss on (X, Y) with no buffers: then the MLP kernel computes the same losses. Else None."""
    from engine.core import mlp

    module = loss.module
    if loss.custom or loss.fixed_batch is not None or loss.buffers or not isinstance(module, torch.nn.Sequential):
        return None
    if loss.X.ndim != 2 or not loss.X.is_floating_point():
        return None
    layers = list(module)
    linears, activations = layers[0::2], {type(a).__name__ for a in layers[1::2]}
    if len(layers) % 2 == 0 or len(linears) < 2 or any(type(m) is not torch.nn.Linear for m in linears):
        return None
    if len(activations) != 1 or not activations <= set(MLP_ACTIVATIONS):
        return None
    biases = {m.bias is not None for m in linears}
    if len(biases) > 1:
        return None
    widths = (linears[0].in_features,) + tuple(m.out_features for m in linears)
    arch = mlp.landscape_arch(widths, MLP_ACTIVATIONS[activations.pop()], biases.pop())
    X, Y = loss.X.double().cpu().numpy(), loss.Y.cpu().numpy()
    Y = Y.astype(np.float64) if loss.kind == "cross-entropy" else (Y[:, 0] if Y.shape[1] == 1 else Y)
    return arch, X, Y


def _replaced(result, **changes):
    from dataclasses import replace

    return replace(result, **changes)
