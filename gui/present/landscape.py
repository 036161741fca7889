"""The landscape toolkit tab's view state: what its plane, interpolation and density pages draw.

``present(result)`` is a pure function of an ``engine.landscape.toolkit.ToolkitResult``; the
workspace draws the state, and a session saves it (``engine.io.session_arrays.TOOLKIT_STATE``
checks it when a session is opened). Keys:

- ``mode``: the toolkit mode that made it (plane, pca, interpolation, density);
- ``plane``: ``alpha`` (A,), ``beta`` (B,), ``loss`` (A, B) as the job computed it, ``L_star``,
  ``kind``, ``labels`` [x, y], ``path_names`` [R], ``paths`` (R, T, 2) in (α, β) (R may be 0);
- ``interpolation``: ``alpha``, ``loss`` (M,), ``loss_a``, ``loss_b``, ``barrier``; for a
  classifier also ``accuracy`` (M,), ``accuracy_a``, ``accuracy_b``, ``accuracy_barrier``;
- ``density``: ``grid``, ``density`` (G,), ``extremes`` (2,), ``trace``, ``sum_squares``,
  ``probes``, ``steps``; for a module also its Hessian's ``top_eigenvalues`` (k,) descending,
  and the Hutchinson ``hutchinson_trace`` with its standard error ``hutchinson_se``;
- ``persistence`` (with every ``plane``): the plane's 0-dimensional sublevel-set persistence
  (engine.landscape.persistence): ``birth``, ``death`` (k,) (+inf the global minimum's),
  ``minima`` (k, 2) each minimum's (α, β); ``share`` the threshold as a share of the plane's loss
  range and ``threshold`` in loss units; ``labels`` (A, B) ``basin_map`` at the threshold;
  ``components`` (A, B) the same at threshold 0, with each of its components' ``persistence``
  and ``absorbed`` (its absorber's component, −1 the global minimum's), from which ``relabel``
  gives the map at any other threshold without a job;
- ``extremes`` (the "hessian-extremes" plane): ``random``, the random filter plane as ``plane``;
  ``verdict`` and ``dips_text`` (the sentences), ``share``, ``count``, ``t`` (T,), ``dips`` (K, T)
  the random directions' losses, ``bottom_eigenvalue``, ``top_eigenvalue``, ``bottom_error``,
  ``top_error``, ``gradient_norm``.

``from_saved`` turns a result file read back (landscape_lens.results.load: a plane, a PCA plane,
an interpolation or a Hessian with its density) into a ToolkitResult, which ``present`` draws.
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job
from engine.landscape import persistence as P
from engine.landscape.density import Density
from engine.landscape.interpolation import Interpolation
from engine.landscape.module_hessian import ModuleHessian
from engine.landscape.plane import PlaneResult
from engine.landscape.toolkit import EXTREMES, ToolkitResult
from engine.landscape.trajectory_pca import PCAPlane

from . import Presented

BASIN_SHARE = 0.02  # default persistence threshold: this share of the plane's loss range


def present(result: ToolkitResult, share: float = BASIN_SHARE) -> dict:
    """The view state of ``result``; ``share``: the basin map's persistence threshold, as a share
    of the plane's loss range (max − min of its finite values)."""
    state: dict = {"mode": result.mode}
    if result.plane is not None:
        p = result.plane
        state["plane"] = _plane(p, _direction_labels(p, result.extremes), [], np.zeros((0, 1, 2)))
        if result.random_plane is not None:
            state["extremes"] = extremes_state(result)
    elif result.pca is not None:
        pca = result.pca
        labels = [f"PC{k + 1} ({100 * pca.explained[k]:.1f} % of the variance)" for k in (0, 1)]
        state["plane"] = _plane(pca.plane, labels, [run.optimizer for run in pca.runs], np.asarray(pca.paths, float))
    if "plane" in state:
        state["persistence"] = persistence_state(state["plane"], share)
    if result.interpolation is not None:
        i = result.interpolation
        state["interpolation"] = {
            "alpha": np.asarray(i.alpha, float),
            "loss": np.asarray(i.loss, float),
            "loss_a": float(i.loss_a),
            "loss_b": float(i.loss_b),
            "barrier": float(i.barrier),
        }
        if i.accuracy is not None:  # a classifier: linear mode connectivity's error along the line
            state["interpolation"].update(
                accuracy=np.asarray(i.accuracy, float),
                accuracy_a=float(i.accuracy_a),
                accuracy_b=float(i.accuracy_b),
                accuracy_barrier=float(i.accuracy_barrier),
            )
    elif result.density is not None:
        state["density"] = density_state(result.density)
        h = result.hessian
        if h is not None:
            state["density"].update(
                top_eigenvalues=np.asarray(h.eigenvalues, float),
                hutchinson_trace=float(h.trace),
                hutchinson_se=float(h.trace_se),
            )
    return state


def density_state(d) -> dict:
    """What the density view draws of an ``engine.landscape.density.Density`` (the minima tab's too)."""
    return {
        "grid": np.asarray(d.grid, float),
        "density": np.asarray(d.density, float),
        "extremes": np.asarray(d.extremes, float),
        "trace": float(d.trace),
        "sum_squares": float(d.sum_squares),
        "probes": int(d.nodes.shape[0]),
        "steps": int(d.steps_done.max()),
    }


def _plane(plane, labels: list[str], names: list[str], paths: np.ndarray) -> dict:
    return {
        "alpha": np.asarray(plane.alpha, float),
        "beta": np.asarray(plane.beta, float),
        "loss": np.asarray(plane.loss, float),
        "L_star": float(plane.L_star),
        "kind": str(plane.kind),
        "labels": labels,
        "path_names": names,
        "paths": paths,
    }


def _direction_labels(p, extremes) -> list[str]:
    if p.normalization == EXTREMES:
        if extremes is None:  # read back from a file: the eigenvalues are not in it
            return ["d1, the Hessian's bottom eigenvector", "d2, its top eigenvector"]
        return [
            f"d1, bottom eigenvector (λ = {extremes.bottom_eigenvalue:.3g})",
            f"d2, top eigenvector (λ = {extremes.top_eigenvalue:.3g})",
        ]
    return [f"d1, {p.normalization}", f"d2, {p.normalization}"]


def extremes_state(result: ToolkitResult) -> dict:
    """The extreme plane's companions: the random plane, the dips and the verdict."""
    e, d, r = result.extremes, result.dips, result.random_plane
    norm = np.linalg.norm(r.d1)
    random = _plane(r, [f"d1, filter (‖d1‖ = {norm:.3g})", "d2, filter"], [], np.zeros((0, 1, 2)))
    return {
        "random": random,
        "verdict": str(e.verdict()),
        "dips_text": d.text(),
        "share": d.share,
        "count": d.count,
        "t": np.asarray(d.t, float),
        "dips": np.asarray(d.losses, float),
        "bottom_eigenvalue": float(e.bottom_eigenvalue),
        "top_eigenvalue": float(e.top_eigenvalue),
        "bottom_error": float(e.bottom_error),
        "top_error": float(e.top_error),
        "gradient_norm": float(e.gradient_norm),
    }


def persistence_state(plane: dict, share: float = BASIN_SHARE) -> dict:
    """A plane state's persistence, basin map at ``share`` of its loss range, and what ``relabel``
    needs for any other threshold."""
    loss = plane["loss"]
    p = P.persistence(loss)
    finite = loss[np.isfinite(loss)]
    span = float(finite.max() - finite.min()) if finite.size else 0.0
    threshold = float(share) * span
    components = P.basin_map(loss, 0.0, p)
    # the components kept at threshold 0 (persistence > 0), in birth order as basin_map numbers them
    kept = np.flatnonzero(p.persistence > 0)
    position = np.full(len(p), -1, dtype=np.int64)
    position[kept] = np.arange(len(kept))
    absorbed = np.where(p.absorbed_by[kept] >= 0, position[np.maximum(p.absorbed_by[kept], 0)], -1)
    rows, cols = np.unravel_index(p.birth_index, p.shape)
    return {
        "birth": p.birth.copy(),
        "death": p.death.copy(),
        "minima": np.column_stack([plane["alpha"][rows], plane["beta"][cols]]),
        "share": float(share),
        "span": span,
        "threshold": threshold,
        "labels": P.basin_map(loss, threshold, p),
        "components": components,
        "persistence": p.persistence[kept].copy(),
        "death_of": p.death[kept].copy(),
        "absorbed": absorbed,
        "kept_minima": np.column_stack([plane["alpha"][rows[kept]], plane["beta"][cols[kept]]]),
    }


def relabel(state: dict, threshold: float) -> np.ndarray:
    """Each component of ``state["components"]`` labelled by its basin at ``threshold`` (loss
    units): the components of persistence at most ``threshold`` take their absorber's label, the
    rest are numbered by birth; as ``persistence.basin_map`` labels, over the kept components alone."""
    if not (np.isfinite(threshold) or threshold == np.inf) or threshold < 0:
        raise EngineInputError(f"persistence threshold {threshold} must be a number ≥ 0")
    survives = (state["persistence"] > threshold) | (state["absorbed"] < 0)  # the global minimum's always
    resolved = np.arange(len(survives))
    for c in np.argsort(-state["death_of"], kind="stable").tolist():
        if not survives[c]:
            resolved[c] = resolved[state["absorbed"][c]]
    labels = np.full(len(survives), -1, dtype=np.int64)
    labels[survives] = np.arange(np.count_nonzero(survives))
    return labels[resolved]


def from_saved(result) -> ToolkitResult:
    """A result file read back (``landscape_lens.results.load``: its types subclass the engine's)
    as the ToolkitResult the tab draws: a plane, a PCA plane, an interpolation, or a Hessian's
    density (one saved without ``--density`` has nothing the tab draws: refused in one line)."""
    name = type(result).__name__
    if isinstance(result, PCAPlane):
        return ToolkitResult("pca", None, pca=result, message="PCA plane read back")
    if isinstance(result, PlaneResult):
        return ToolkitResult("plane", None, plane=result, message=f"plane read back ({result.normalization})")
    if isinstance(result, Interpolation):
        return ToolkitResult("interpolation", None, interpolation=result, message="interpolation read back")
    if isinstance(result, ModuleHessian):
        if not isinstance(result.density, Density):
            raise EngineInputError("the Hessian file holds no spectral density: save one computed with --density")
        return ToolkitResult("density", None, density=result.density, hessian=result, message="density read back")
    raise EngineInputError(f"the toolkit tab draws no {name}")


def presented_job(job: Job[ToolkitResult], share: float = BASIN_SHARE) -> Job[Presented]:
    """``job``'s result with its view state, made on the job's own (worker) thread."""
    result = yield from job
    return Presented(result, present(result, share))
