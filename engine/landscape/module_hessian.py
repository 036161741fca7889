"""PyHessian's measures for any PyTorch model: top eigenpairs, trace, density and full spectrum.

Everything here is built on one operation, ``ModuleLoss.hvp`` (exact Hessian-vector products
summed over memory-bounded chunks of the data), handed to the machinery that already serves the
MLPs (docs/MATH.md C2, C4, B12.5):

- the k largest eigenpairs by Lanczos (``hessian.top_eigenpairs_job``: ARPACK's ``eigsh`` on a
  scipy LinearOperator);
- the trace by Hutchinson's estimator with Rademacher probes (``hessian.hutchinson_samples_job``),
  with the top eigenpairs deflated so they add nothing to its variance, and its standard error;
- the spectral density by stochastic Lanczos quadrature (``density.slq_job``);
- up to ``FULL_SPECTRUM_MAX_PARAMS`` parameters, the whole Hessian, formed column block by column
  block from products with the identity, and its every eigenvalue.

Memory is one chunk's forward-over-reverse graph (``ModuleLoss``) plus a few P-vectors: the
Lanczos basis (ncv vectors), a probe block, or a P × ``FULL_BLOCK`` block of columns.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job, Progress, on_helper_thread, run_to_completion
from engine.core.validation import integer, real
from engine.landscape import density as slq
from engine.landscape import hessian
from engine.landscape.density import Density
from engine.landscape.hessian import FULL_SPECTRUM_MAX_PARAMS

MAX_TOP_K = 100
MAX_PROBES = 10_000
# Identity columns per block when the Hessian is formed: P × 64 float64 is 1.5 MB at P = 3000,
# and ModuleLoss groups them into vmapped products of its own HVP_GROUP.
FULL_BLOCK = 64
# ARPACK's Lanczos vectors between restarts. scipy's default (2k + 1, at least 20): for the top
# few eigenvalues it converges within one or two restarts, where the 60 that hessian.py keeps
# for its clustered lowest end would spend 60 products before the first convergence test.
TOP_NCV = None


@dataclass(frozen=True, eq=False)
class ModuleHessian:
    """What hessian.npz holds (docs/EXPORTS.md): the Hessian of ``loss_kind`` at θ, in θ's flat order."""

    param_names: tuple[str, ...]  # the module's named_parameters(), in order
    param_shapes: tuple[tuple[int, ...], ...]
    theta: np.ndarray  # (P,): the point, the flat concatenation of the parameters
    loss: float  # L(θ)
    eigenvalues: np.ndarray  # (k,): the k largest, descending
    eigenvectors: np.ndarray  # (P, k): unit columns matching ``eigenvalues``
    residuals: np.ndarray  # (k,): ‖Hv − λv‖ of each pair, from one more product each
    trace: float  # Hutchinson's estimate
    trace_se: float  # its standard error
    trace_samples: np.ndarray  # (probes,): each probe's estimate Σλ_top + zᵀPHPz
    hessian: np.ndarray | None  # (P, P): the Hessian itself, formed when P ≤ the size limit
    spectrum: np.ndarray | None  # (P,): its every eigenvalue, ascending
    density: Density | None  # SLQ, when asked for
    kind: str
    n_samples: int
    batch_size: int
    seed: int
    tol: float
    n_hvp: int  # Hessian-vector products used, all measures together
    seconds: float

    @property
    def n_params(self) -> int:
        return len(self.theta)


def module_hvp(loss, flat=None):
    """``hvp(V)`` = H(θ) @ each row of V, for V (P,) or (m, P): the convention of
    ``hessian.hvp_function`` and ``density.hvp_function``, on ``ModuleLoss.hvp`` (columns in, columns
    out). The result comes back in V's dtype and on V's device (the LinearOperator works in float64
    numpy); products are counted in ``hvp.count``."""
    theta = loss.flat(flat)

    def hvp(V: torch.Tensor) -> torch.Tensor:
        hvp.count += 1 if V.ndim == 1 else len(V)
        HV = loss.hvp(theta, V.T if V.ndim == 2 else V)
        return (HV.T if V.ndim == 2 else HV).to(V.device, V.dtype)

    hvp.count = 0
    hvp.one = hvp  # ModuleLoss vmaps its own groups of vectors: rows need no separate path
    hvp.batched = True
    return hvp


def check_options(loss, top_k: int, probes: int, density_probes: int = 0, steps: int = 80, tol: float = 0.0) -> None:
    """Refuse every bad option before any product is spent."""
    integer("top-k", top_k, 1, min(MAX_TOP_K, max(loss.n_params - 2, 1)))
    integer("probes", probes, 2, MAX_PROBES)
    real("tol", tol, 0.0, 0.5)
    if density_probes:
        slq.check_slq(loss.n_params, density_probes, steps)
    if loss.n_params < 3:
        raise EngineInputError(f"Lanczos needs at least 3 parameters, the model has {loss.n_params}")


def module_hessian_job(
    loss,
    top_k: int = 3,
    probes: int = 100,
    seed: int = 0,
    tol: float = 0.0,
    max_full: int = FULL_SPECTRUM_MAX_PARAMS,
    density_probes: int = 0,
    steps: int = 80,
    deflate: bool = True,
) -> Job[ModuleHessian]:
    """Job: the ``top_k`` largest eigenpairs, the Hutchinson trace over ``probes`` probes, the full
    spectrum when P ≤ ``max_full`` (0: never), and with ``density_probes`` > 0 the SLQ density of
    ``steps`` steps. ``tol``: ARPACK's relative residual bound (0: machine precision). ``deflate``:
    estimate only tr(PHP) beyond the top eigenpairs (MATH.md C2); off, the probes are plain
    Rademacher vectors and a probe's variance is 2 Σ_{i≠j} H_ij². The measures run on a helper
    thread (``on_helper_thread``): one product of a large model can take seconds."""
    check_options(loss, top_k, probes, density_probes, steps, tol)
    measures = _measures_job(loss, top_k, probes, seed, tol, max_full, density_probes, steps, deflate)
    return (yield from on_helper_thread(measures, f"Hessian of {loss.n_params} parameters"))


def _measures_job(loss, top_k, probes, seed, tol, max_full, density_probes, steps, deflate) -> Job[ModuleHessian]:
    began = time.perf_counter()
    n, hvp, tol = loss.n_params, module_hvp(loss), attainable_tol(loss, tol)
    yield Progress(0.0, f"Hessian of {n} parameters: Lanczos for the top {top_k}")
    vals, vecs, _ = yield from hessian.top_eigenpairs_job(hvp, n, top_k, tol, seed, ncv=TOP_NCV)
    vals, vecs = vals[::-1].copy(), vecs[:, ::-1].copy()  # descending
    residuals = _residuals(hvp, vals, vecs)
    samples = yield from hessian.hutchinson_samples_job(hvp, n, probes, seed + 1, (vals, vecs) if deflate else None)
    trace, trace_se = hessian.mean_and_stderr(samples)
    H = (yield from formed_hessian_job(hvp, n)) if n <= max_full else None
    dens = None
    if density_probes:
        dens = yield from slq.slq_job(hvp, n, density_probes, steps, seed + 2, None, loss.dtype, loss.device)
    return ModuleHessian(
        param_names=tuple(loss.names),
        param_shapes=tuple(loss.shapes),
        theta=loss.theta.double().cpu().numpy(),
        loss=loss.loss(),
        eigenvalues=vals,
        eigenvectors=vecs,
        residuals=residuals,
        trace=trace,
        trace_se=trace_se,
        trace_samples=samples,
        hessian=H,
        spectrum=None if H is None else np.linalg.eigvalsh(H),
        density=dens,
        kind=loss.kind,
        n_samples=loss.n_samples,
        batch_size=loss.batch_size,
        seed=seed,
        tol=tol,
        n_hvp=hvp.count,
        seconds=time.perf_counter() - began,
    )


def attainable_tol(loss, tol: float) -> float:
    """``tol``, but no tighter than products in ``loss.dtype`` can resolve: float32 products carry
    relative errors near 1e-6, so ARPACK asked for machine precision would never converge; √ε
    (3.5e-4) is still well inside the 1e-3 that PyHessian's power iteration aims at."""
    return tol if loss.dtype == torch.float64 else max(tol, float(np.sqrt(torch.finfo(loss.dtype).eps)))


def _residuals(hvp, vals: np.ndarray, vecs: np.ndarray) -> np.ndarray:
    """‖Hv − λv‖ per eigenpair: what the pairs are worth, measured rather than trusted."""
    HV = hvp(torch.from_numpy(np.ascontiguousarray(vecs.T))).numpy().T
    return np.linalg.norm(HV - vecs * vals, axis=0)


def formed_hessian_job(hvp, n: int, block: int = FULL_BLOCK) -> Job[np.ndarray]:
    """Job: H (n, n) formed from its products with the identity, ``block`` columns at a time, and
    symmetrized ((H + Hᵀ)/2 removes only rounding)."""
    H = np.empty((n, n))
    for start in range(0, n, block):
        stop = min(start + block, n)
        E = torch.zeros(stop - start, n, dtype=torch.float64)
        E[:, start:stop] = torch.eye(stop - start, dtype=torch.float64)
        H[start:stop] = hvp(E).numpy()  # row r of the block is H e_r = column r (H is symmetric)
        yield Progress(stop / n, f"full Hessian: {stop}/{n} columns")
    return 0.5 * (H + H.T)


def hessian_directions_job(loss, tol: float = 0.0, seed: int = 0) -> Job[tuple[np.ndarray, np.ndarray]]:
    """Job: the unit eigenvectors of the two largest eigenvalues, largest first, for
    ``--directions hessian``; each signed so that its largest-magnitude component is positive
    (ARPACK's sign is arbitrary)."""
    job = hessian.top_eigenpairs_job(module_hvp(loss), loss.n_params, 2, attainable_tol(loss, tol), seed, ncv=TOP_NCV)
    _, vecs, _ = yield from job
    d1, d2 = vecs[:, 1], vecs[:, 0]
    return tuple(d * np.sign(d[np.argmax(np.abs(d))]) for d in (d1, d2))


def hessian_directions(loss, tol: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``hessian_directions_job`` run to completion (the command line)."""
    return run_to_completion(hessian_directions_job(loss, tol, seed))


def module_hessian(loss, **options) -> ModuleHessian:
    """``module_hessian_job`` run to completion (headless callers and tests)."""
    return run_to_completion(module_hessian_job(loss, **options))
