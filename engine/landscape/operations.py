"""The toolkit's operations on any model's loss: one job each, for the API, the command line and
the toolkit tab alike (docs/ARCHITECTURE.md, "The toolkit's seam").

Every operation takes the loss over a flat θ (``ModuleLoss``: value, gradient, Hessian-vector
products, any module through ``functional_call``) and returns the engine's result type. Where the
module is a chain of ``Linear`` layers and one activation under a named loss, a plane goes to
the batched MLP kernel instead (``engine.landscape.plane``): the same losses, layer 1 formed once
for the whole grid; a plane also takes an MLP held as (Arch, θ) directly (``MLPLoss``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job, subjob
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.plane import MLPLoss, PlaneResult

DIRECTIONS = ("filter", "layer", "random", "hessian", "hessian-extremes")
IGNORE = ("none", "biasbn")
MLP_ACTIVATIONS = {"ReLU": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}


def plane_job(
    loss: ModuleLoss | MLPLoss,
    points: int = 51,
    extent: float = 1.0,
    directions: str = "filter",
    ignore: str = "none",
    seed: int = 0,
    d1=None,
    d2=None,
    grid=None,
    labels: tuple = (),
) -> Job[PlaneResult]:
    """Job: the ``points`` × ``points`` plane L(θ + α d1 + β d2), α, β ∈ [−extent, extent].

    The one plane job: the API's, the command line's, the toolkit tab's and paper B's probe plane
    (``engine.minima.pipeline.probe_plane_job``). It draws or checks the directions and runs one
    of two kernels for the grid: the MLP kernel (``plane.mlp_grid_job``) for an ``MLPLoss`` or a
    module ``mlp_backend`` recognises (random directions only), else the module, point by point
    (``plane.module_grid_job``).

    Parameters
    ----------
    loss : ModuleLoss or MLPLoss
        The model's loss over a flat θ, or an MLP's (Arch, θ, data, named loss).
    points : int
        Grid points a side: at most ``plane.MAX_GRID`` on the MLP kernel, ``plane.MAX_MODULE_GRID``
        on a module (each point a pass over all the data).
    extent : float
        Half the side of the square, in units of the directions.
    directions : str
        "filter", "layer", "random" (seeded Gaussian draws, normalised; MATH.md B12.1), "hessian"
        (the top two eigenvectors) or "hessian-extremes" (d1 the bottom, d2 the top eigenvector;
        MATH.md C5), the last two for a ``ModuleLoss``; when ``d1`` and ``d2`` are given it only
        names them.
    ignore : {"none", "biasbn", "biases"}
        "biasbn" (or "biases", the same) zeroes every 1-D parameter in random directions.
    seed : int
        The random directions' seed (and Lanczos's start).
    d1, d2 : array of P numbers, optional
        The plane's directions, both or neither.
    grid : callable, optional
        ``grid(θ, d1, d2, α, β)``, a job computing the loss grid elsewhere (a sweep's rows).
    labels : tuple
        What d1 and d2 are, for a view's axes.

    Returns
    -------
    PlaneResult
    """
    from engine.landscape import directions as D
    from engine.landscape import module_hessian as MH
    from engine.landscape import plane

    module = isinstance(loss, ModuleLoss)
    auto = d1 is None and grid is None and not directions.startswith("hessian")
    fast = (mlp_backend(loss) if auto else None) if module else loss
    # the MLP kernel takes up to plane.MAX_GRID points a side, a pass of the module per point fewer
    plane.check_grid(points, extent, plane.MAX_GRID if fast is not None else plane.MAX_MODULE_GRID)
    if module and ignore not in IGNORE:
        raise EngineInputError(f"unknown ignore {ignore!r}; choose one of: {', '.join(IGNORE)}")
    D.check_ignore(ignore)
    if (d1 is None) != (d2 is None):
        raise EngineInputError("give both plane directions d1 and d2, or neither")
    if module and d1 is None and directions not in DIRECTIONS:
        raise EngineInputError(f"unknown directions {directions!r}; choose one of: {', '.join(DIRECTIONS)}")
    if fast is not None:
        mlp.check_loss(fast.kind)
    rest = (0.0, 1.0)
    if d1 is None and directions == "hessian" and module:
        d1, d2 = yield from subjob(MH.hessian_directions_job(loss, seed=seed), 0.0, 0.3, "Hessian directions: ")
        rest = (0.3, 1.0)
    elif d1 is None and directions == "hessian-extremes" and module:
        found = yield from subjob(MH.hessian_extreme_directions_job(loss, seed=seed), 0.0, 0.3, "extreme curvature: ")
        d1, d2, rest = found.d1, found.d2, (0.3, 1.0)
    theta = loss.theta.double().cpu().numpy() if module else np.asarray(loss.theta, float)
    if d1 is None:
        d1, d2 = D.directions(loss.shapes if module else loss.arch, theta, 2, seed, directions, ignore)
    else:
        d1, d2 = (np.asarray(torch.as_tensor(d).double().cpu(), float) for d in (d1, d2))
        for name, d in (("d1", d1), ("d2", d2)):
            if d.shape != theta.shape:
                raise EngineInputError(f"direction {name} has shape {d.shape}; expected ({theta.size},)")
    alpha = np.linspace(-extent, extent, points)
    beta = alpha.copy()
    if grid is None:
        grid = fast.grid_job if fast is not None else lambda *where: plane.module_grid_job(loss, *where)
    values = yield from subjob(grid(theta, d1, d2, alpha, beta), *rest, "plane: ")
    L_star = (fast if fast is not None else loss).loss(theta)
    return PlaneResult(alpha, beta, values, theta, d1, d2, L_star, loss.kind, directions, ignore, seed, labels)


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


def mlp_backend(loss: ModuleLoss) -> MLPLoss | None:
    """The same loss for the MLP kernel (its θ, data, loss, dtype and device) when ``loss``'s module
    is an ``nn.Sequential`` of ``Linear`` layers with one activation (ReLU, sigmoid or tanh)
    between each two, all with biases or none, under a named loss on (X, Y) with no buffers: then
    the MLP kernel computes the same losses. Else None."""
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
    dtype = "float64" if loss.dtype == torch.float64 else "float32"
    return MLPLoss(arch, loss.theta.double().cpu().numpy(), X, Y, loss.kind, dtype, str(loss.device))


def sequential_of(arch, params) -> torch.nn.Sequential:
    """An MLP held as (Arch, θ) as a module: an ``nn.Sequential`` of float64 Linear layers and
    ``arch``'s activation (named 0, 2, 4, …) whose flat parameters, in ``named_parameters()`` order,
    are ``params`` in the app's layout (W1, b1, W2, b2, …). The inverse of ``mlp_backend``: the
    API, the command line and the topology tab read the app's .npz of an MLP as this module."""
    Ws, bs = mlp.unpack(arch, np.asarray(params, float))
    module_name = {fn: name for name, fn in MLP_ACTIVATIONS.items()}[arch.activation]  # "relu" -> "ReLU"
    activation = getattr(torch.nn, module_name)
    layers = []
    for i, (W, b) in enumerate(zip(Ws, bs)):
        linear = torch.nn.Linear(W.shape[1], W.shape[0], bias=b is not None, dtype=torch.float64)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(np.array(W)))
            if b is not None:
                linear.bias.copy_(torch.from_numpy(np.array(b)))
        layers += [linear] if i == len(Ws) - 1 else [linear, activation()]
    return torch.nn.Sequential(*layers).eval()
