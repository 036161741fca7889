"""What a recorder measures at a checkpoint, each from a copy of the model holding the checkpoint.

- The rescaling invariants of every hidden unit (``engine.topology.unit_invariants``), per layer:
  c (units,), the law and why, the locked units and the share of negative c.
- The sharpness: the Hessian's largest eigenvalue of the loss on fixed data, by Lanczos on exact
  Hessian-vector products (``engine.landscape.module_hessian``), with the residual ‖Hy − λy‖ of
  its Ritz pair, a bound on the error: an eigenvalue of H lies within it of λ (MATH.md C4).
- Which checkpoints to keep once there are too many (``thin``).
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion

# Lanczos stops when the Kato–Temple estimate min(r, r²/gap) of the top eigenvalue is within this
# share of it; the residual r stored as the error is a bound, usually much larger than the error.
SHARPNESS_TOL = 1e-7
LOSS_KINDS = ("sum", "mean", "cross-entropy")


@dataclass(frozen=True)
class LayerRecord:
    """One layer's invariants at one checkpoint, as recorded.

    Attributes
    ----------
    name : str
        The layer whose units these are (the name ``layer_invariants`` gives).
    c : np.ndarray
        (units,) float64: each hidden unit's rescaling invariant.
    law : str
        Which conservation law c is (the name ``layer_invariants`` gives).
    locked : np.ndarray
        int64 indices of the units ``layer_invariants`` reports as locked.
    negative_share : float
        The share of the layer's units with c < 0.
    reason : str
        One line saying why the law holds or fails.
    """

    name: str
    c: np.ndarray
    law: str
    locked: np.ndarray
    negative_share: float
    reason: str = ""


class UnitInvariants:
    """The invariants of a model's hidden units as a function of a state_dict, its structure traced
    once (``engine.topology.unit_invariants``).

    The trace must run on the thread that runs the model, with no other module being called:
    ``torch.fx.symbolic_trace`` patches ``nn.Module.__call__`` process-wide while it traces. The
    per-state arithmetic is numpy and may run on any thread.

    Attributes
    ----------
    why_none : str or None
        When ``layer_invariants`` refuses the model (no hidden units, not traceable): its one-line
        reason, and every call returns None.
    """

    def __init__(self, module, example_input=None):
        from engine.topology import unit_invariants as ui

        self._ui, self.why_none = ui, None
        try:
            self._layers, self._shapes = ui._structure(module, example_input), ui._shapes(module)
        except EngineInputError as e:
            self.why_none = str(e)

    def __call__(self, state) -> list[LayerRecord] | None:
        if self.why_none is not None:
            return None
        return [
            LayerRecord(
                name=str(layer.name),
                c=np.asarray(layer.c, dtype=np.float64),
                law=str(layer.law),
                locked=np.asarray(layer.locked, dtype=np.int64).reshape(-1),
                negative_share=float(layer.negative_share),
                reason=str(layer.reason),
            )
            for layer in self._ui._invariants(self._layers, state, self._shapes)
        ]


def invariant_arrays(records: list[LayerRecord]) -> dict[str, np.ndarray]:
    """The arrays of an invariants file: "<layer>/c", "<layer>/law", "<layer>/locked",
    "<layer>/negative_share", "<layer>/reason" for each layer."""
    arrays = {}
    for r in records:
        arrays[f"{r.name}/c"] = r.c
        arrays[f"{r.name}/law"] = np.array(r.law)
        arrays[f"{r.name}/locked"] = r.locked
        arrays[f"{r.name}/negative_share"] = np.array(r.negative_share)
        arrays[f"{r.name}/reason"] = np.array(r.reason)
    return arrays


def records_of(arrays: dict[str, np.ndarray], layers: list[str]) -> list[LayerRecord]:
    """The records of an invariants file's arrays, in ``layers`` order (the manifest's)."""
    out = []
    for name in layers:
        out.append(
            LayerRecord(
                name=name,
                c=arrays[f"{name}/c"].astype(np.float64, copy=False),
                law=str(arrays[f"{name}/law"]),
                locked=arrays[f"{name}/locked"].astype(np.int64, copy=False),
                negative_share=float(arrays[f"{name}/negative_share"]),
                reason=str(arrays[f"{name}/reason"]),
            )
        )
    return out


def default_loss_kind(Y: np.ndarray) -> str:
    """cross-entropy for integer labels, otherwise mean squared error."""
    return "cross-entropy" if np.asarray(Y).dtype.kind in "biu" else "mean"


def as_numpy(value, what: str) -> np.ndarray:
    """A tensor or array as a numpy array (detached, on the CPU)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except Exception:
        raise EngineInputError(f"{what} is {type(value).__name__}; expected a tensor or an array") from None


def sharpness_loss(module, X: np.ndarray, Y: np.ndarray, kind: str):
    """``ModuleLoss`` of ``module`` (put in eval mode) on (X, Y): it copies the parameters now."""
    from engine.landscape.module_loss import ModuleLoss

    module.eval()
    # fold=False: folding traces with torch.fx, which would swap nn.Module.__call__ under the
    # training loop running beside this thread
    return ModuleLoss(types.SimpleNamespace(module=module, X=X, Y=Y, fixed_batch=None), kind, fold=False)


def sharpness_of(loss, seed: int, tol: float = SHARPNESS_TOL) -> tuple[float, float, int]:
    """(λ_max of the loss's Hessian at its θ, the residual ‖Hy − λy‖ of its Ritz pair, the
    products used), by Lanczos on exact products with the eigenvalue alone asked for."""
    from engine.landscape.module_hessian import attainable_tol, module_hvp, top_eigenpairs_job

    if loss.n_params < 3:
        raise EngineInputError(f"sharpness: Lanczos needs at least 3 parameters, the model has {loss.n_params}")
    hvp = module_hvp(loss)
    vals, _, residuals = run_to_completion(
        top_eigenpairs_job(hvp, loss.n_params, 1, attainable_tol(loss, tol), seed, vectors=False)
    )
    return float(vals[0]), float(residuals[0]), int(hvp.count)


def thin(steps: list[int], limit: int) -> list[int]:
    """The checkpoints kept of ``steps`` (ascending) when there are more than ``limit``: the
    first, the last, and for each of ``limit`` log-spaced targets between them (in steps since the
    first) the checkpoint nearest it on that log scale. At most ``limit``, never new steps."""
    if len(steps) <= limit:
        return list(steps)
    s = np.asarray(steps, dtype=np.float64)
    since = np.log1p(s - s[0])
    targets = np.linspace(0.0, since[-1], limit)
    nearest = np.abs(since[None, :] - targets[:, None]).argmin(axis=1)
    keep = set(nearest.tolist()) | {0, len(steps) - 1}
    return [steps[i] for i in sorted(keep)]
