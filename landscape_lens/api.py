"""The toolkit's operations on a model, data and loss as the researcher holds them.

Each function builds the engine's loss over a flat θ once (``landscape_lens.inputs.objective``:
any ``nn.Module`` through ``torch.func.functional_call``, its batch norm in eval mode) and runs the
engine's job for the operation, with a progress bar on a terminal. A module that is a chain of
``Linear`` layers and one activation (ReLU, sigmoid, tanh) under a named loss takes the batched
MLP kernel for its planes (``engine.landscape.plane``): layer 1 formed once for the whole grid,
every other layer one batched product; the numbers are those of the general path.

Bad arguments raise ``APIInputError`` (a ``ValueError``) whose one line names the argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from landscape_lens.inputs import (
    APIInputError,
    api_errors,
    check_options,
    checkpoint_states,
    objective,
    real_array,
    run_job,
    state_of,
)
from landscape_lens.results import Hessian, Interpolation, Plane, TrajectoryPlane, layout_of

IGNORE = {"none": "none", "biases": "biasbn", "biasbn": "biasbn"}


@api_errors
def plane(
    model,
    data=None,
    *,
    loss: str | Callable = "auto",
    points: int = 51,
    extent: float = 1.0,
    directions: str | tuple = "filter",
    ignore: str = "none",
    seed: int = 0,
    dtype: str = "float64",
    device: str = "cpu",
    batch_size: int | None = None,
    factory: Callable | None = None,
    progress: bool = True,
) -> Plane:
    """The loss over a plane through the model's parameters: L(θ + α d1 + β d2).

    Parameters
    ----------
    model : nn.Module or path
        The model at θ (landscape_lens.inputs).
    data : (X, Y), Dataset, DataLoader, iterable of batches or path
        What the loss is summed over; optional for the app's .npz, which holds its own.
    loss : {"auto", "sum", "mean", "cross-entropy"} or callable
        A callable ``loss_fn(model, batch)`` returns the batch's mean loss as a scalar tensor.
    points : int
        Grid points a side (α, β each ``points`` values over [−extent, extent]).
    extent : float
        Half the side of the square, in units of the directions.
    directions : str or (d1, d2)
        "filter" (Li et al.'s filter normalisation), "layer", "random" (unit norm), "hessian" (the
        top two eigenvectors), "hessian-extremes" (the bottom, then the top eigenvector), or two
        flat vectors of P numbers each.
    ignore : {"none", "biases"}
        "biases" zeroes every 1-D parameter (biases, batch norm) in the directions.
    seed : int
        The random directions' seed (and Lanczos's start).
    dtype, device, batch_size, factory, progress
        Precision, "cpu" or "cuda", samples per chunk, a state_dict's module builder, and
        whether to draw a progress bar on a terminal.

    Returns
    -------
    Plane
        ``.loss`` (points, points), ``.alpha``, ``.beta``, ``.theta``, ``.d1``, ``.d2``,
        ``.param_names``; ``.save(path)``, ``.plot()``.
    """
    from engine.landscape import operations

    check_options(points=points, extent=extent, seed=seed)
    if ignore not in IGNORE:
        raise APIInputError(f"ignore={ignore!r}: choose one of none, biases")
    f = objective(model, data, loss, factory=factory, batch_size=batch_size, dtype=dtype, device=device)
    d1 = d2 = None
    if not isinstance(directions, str):
        d1, d2 = _given_directions(directions, f.n_params)
        directions = "given"
    elif directions not in operations.DIRECTIONS:
        raise APIInputError(f"directions={directions!r}: choose one of {', '.join(operations.DIRECTIONS)}, or (d1, d2)")
    job = operations.plane_job(f, points, extent, directions, IGNORE[ignore], seed, d1, d2)
    return Plane(**_fields(run_job(job, "plane", progress)), **layout_of(f))


@api_errors
def hessian(
    model,
    data=None,
    *,
    loss: str | Callable = "auto",
    top_k: int = 3,
    bottom_k: int = 0,
    probes: int = 100,
    density: bool = False,
    density_probes: int = 10,
    steps: int = 80,
    full: bool | None = None,
    seed: int = 0,
    tol: float = 0.0,
    dtype: str = "float64",
    device: str = "cpu",
    batch_size: int | None = None,
    factory: Callable | None = None,
    progress: bool = True,
) -> Hessian:
    """The Hessian's measures at the model's parameters, from exact Hessian-vector products.

    Parameters
    ----------
    model, data, loss, dtype, device, batch_size, factory, progress
        As for ``plane``.
    top_k : int
        The largest eigenvalues (descending), by Lanczos, each with its residual.
    bottom_k : int
        The smallest (most negative) eigenvalues (ascending), by Lanczos on that end; 0: none.
    probes : int
        Hutchinson probes for the trace and its standard error.
    density : bool
        Also the spectral density by stochastic Lanczos quadrature (``density_probes`` probes of
        ``steps`` steps).
    full : bool, optional
        Form the whole Hessian (one product per parameter) and its every eigenvalue: True asks
        for it, False never, None when it costs no more products than the estimates.
    seed, tol
        The probes' and Lanczos's seed; the eigenvalues' relative error (0: machine precision).

    Returns
    -------
    Hessian
        ``.eigenvalues``, ``.bottom_eigenvalues``, ``.trace``, ``.trace_se``, ``.density``,
        ``.hessian``, ``.spectrum``; ``.save(path)``, ``.plot()``.
    """
    from engine.landscape import operations

    check_options(
        top_k=top_k, bottom_k=bottom_k, probes=probes, steps=steps, density_probes=density_probes, seed=seed, tol=tol
    )
    f = objective(model, data, loss, factory=factory, batch_size=batch_size, dtype=dtype, device=device)
    options = dict(top_k=top_k, bottom_k=bottom_k, probes=probes, seed=seed, tol=tol, steps=steps, full=full)
    options["density_probes"] = density_probes if density else 0
    result = run_job(operations.hessian_job(f, **options), "Hessian", progress)
    return Hessian(**{**_fields(result), **layout_of(f)})


@api_errors
def interpolation(
    model_a,
    model_b,
    data=None,
    *,
    loss: str | Callable = "auto",
    points: int = 201,
    lo: float = -0.5,
    hi: float = 1.5,
    dtype: str = "float64",
    device: str = "cpu",
    batch_size: int | None = None,
    factory: Callable | None = None,
    progress: bool = True,
) -> Interpolation:
    """The loss along the line from model a to model b, L((1 − α) θ_a + α θ_b), α over [lo, hi].

    Parameters
    ----------
    model_a : nn.Module or path
        The line's start (α = 0), and the architecture.
    model_b : nn.Module, state_dict or path
        The end (α = 1): the same architecture. Batch norm's running statistics are
        interpolated with the parameters.
    points : int
        Values of α, evenly spaced.
    Others as for ``plane``.

    Returns
    -------
    Interpolation
        ``.alpha``, ``.loss``, ``.accuracy`` (for cross-entropy), ``.barrier``; ``.save``, ``.plot``.
    """
    from engine.landscape import operations

    check_options(points=points, lo=lo, hi=hi)
    f = objective(model_a, data, loss, factory=factory, batch_size=batch_size, dtype=dtype, device=device)
    job = operations.interpolation_job(f, state_of(model_b), points, lo, hi)
    result = run_job(job, "interpolation", progress)
    return Interpolation(**{**_fields(result), **layout_of(f)})


@api_errors
def trajectory_plane(
    checkpoints: Sequence,
    model,
    data=None,
    *,
    loss: str | Callable = "auto",
    points: int = 51,
    extent: float | None = None,
    dtype: str = "float64",
    device: str = "cpu",
    batch_size: int | None = None,
    factory: Callable | None = None,
    progress: bool = True,
) -> TrajectoryPlane:
    """Training checkpoints on their PCA plane, and the loss over it around the last one.

    Parameters
    ----------
    checkpoints : sequence of state_dicts, modules or files, or a run folder
        Oldest first, at least three; a folder written by ``Recorder`` gives its checkpoints.
    model : nn.Module or path
        The architecture the checkpoints are states of.
    points, extent
        Grid points a side; the half-side (default: the path's extent with a margin).
    Others as for ``plane``.

    Returns
    -------
    TrajectoryPlane
        ``.plane``, ``.path`` (T, 2), ``.path_loss``, ``.explained``; ``.save``, ``.plot``.
    """
    from engine.landscape import operations

    check_options(points=points, **({} if extent is None else {"extent": extent}))
    f = objective(model, data, loss, factory=factory, batch_size=batch_size, dtype=dtype, device=device)
    job = operations.trajectory_job(f, checkpoint_states(checkpoints), points, extent)
    result = run_job(job, "trajectory plane", progress)
    plane_ = Plane(**_fields(result.plane), **layout_of(f))
    return TrajectoryPlane(**{**_fields(result), "plane": plane_, **layout_of(f)})


# ------------------------------------------------------------------ helpers
def _fields(result) -> dict:
    from dataclasses import fields

    return {f.name: getattr(result, f.name) for f in fields(result)}


def _given_directions(directions, n_params: int) -> tuple[np.ndarray, np.ndarray]:
    if not (isinstance(directions, (tuple, list)) and len(directions) == 2):
        raise APIInputError("directions: a name or a pair (d1, d2) of flat vectors")
    out = []
    for name, d in zip(("d1", "d2"), directions):
        d = real_array(f"directions: {name}", d)
        if d.shape != (n_params,):
            raise APIInputError(f"directions: {name} has shape {d.shape}; the model has {n_params} parameters")
        if not np.isfinite(d).all():
            raise APIInputError(f"directions: {name} contains NaN or inf")
        out.append(d)
    return out[0], out[1]
