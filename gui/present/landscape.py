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
  and the Hutchinson ``hutchinson_trace`` with its standard error ``hutchinson_se``.
"""

from __future__ import annotations

import numpy as np

from engine.core.progress import Job
from engine.landscape.toolkit import ToolkitResult

from . import Presented


def present(result: ToolkitResult) -> dict:
    state: dict = {"mode": result.mode}
    if result.plane is not None:
        p = result.plane
        state["plane"] = _plane(p, [f"d1, {p.normalization}", f"d2, {p.normalization}"], [], np.zeros((0, 1, 2)))
    elif result.pca is not None:
        pca = result.pca
        labels = [f"PC{k + 1} ({100 * pca.explained[k]:.1f} % of the variance)" for k in (0, 1)]
        state["plane"] = _plane(pca.plane, labels, [run.optimizer for run in pca.runs], np.asarray(pca.paths, float))
    elif result.interpolation is not None:
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


def presented_job(job: Job[ToolkitResult]) -> Job[Presented]:
    """``job``'s result with its view state, made on the job's own (worker) thread."""
    result = yield from job
    return Presented(result, present(result))
