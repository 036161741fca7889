"""Hessians at any size: the full spectrum for small nets, Lanczos and Hutchinson beyond.

Up to ``FULL_SPECTRUM_MAX_PARAMS`` parameters the Hessian is formed (``mlp.hessian``) and
diagonalised. Beyond that a P×P matrix no longer fits the time budget (41k parameters would be
13 GB and an O(P³) eigensolve), so only Hessian-vector products are used:

- the extreme eigenpairs by Lanczos (ARPACK's ``eigsh`` on a ``LinearOperator``);
- the trace by Hutchinson's estimator with Rademacher probes, with its standard error.

HVPs are reverse-over-reverse on a retained gradient graph, in float64 (see ``hvp_function``).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_sparse_linalg, torch
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, run_to_completion, wait_for
from engine.core.runtime import configure_torch_threads

# Forming and diagonalising the Hessian costs ~P² memory and ~P³ time. Near this limit (2—52—52—1,
# random start) forming and eigvalsh together still took well under Lanczos and Hutchinson; beyond
# a few thousand parameters the P³ term makes Lanczos the cheaper (benchmarks/README.md).
FULL_SPECTRUM_MAX_PARAMS = 3000
# Lanczos vectors kept between ARPACK restarts. At the random start of 2—200—200—1, whose
# extremes sit in a dense cluster, 60 needed 1206 HVPs where scipy's default (2k+1 or 20) needed
# 1397, for 20 MB of vectors.
LANCZOS_NCV = 60
# Hutchinson probes per batched backward pass: enough to amortise Python overhead, few enough
# to yield progress often on a 41k-parameter net.
PROBE_BATCH = 16


@dataclass(frozen=True, eq=False)
class HessianReport:
    """Extreme eigenvalues (ascending in both arrays) and the trace of the loss Hessian."""

    method: str  # "full" or "lanczos"
    n_params: int
    lowest: np.ndarray  # the k smallest eigenvalues, ascending
    highest: np.ndarray  # the k largest eigenvalues, ascending
    trace: float
    trace_stderr: float  # 0 for "full"; Hutchinson's standard error for "lanczos"
    lowest_vectors: np.ndarray | None = None  # (P, k), columns match ``lowest``
    highest_vectors: np.ndarray | None = None  # (P, k), columns match ``highest``
    spectrum: np.ndarray | None = None  # every eigenvalue, "full" only
    n_hvp: int = 0  # Hessian-vector products used (0 for "full")
    probes: int = 0  # Hutchinson probes (0 for "full")
    seconds: float = 0.0


def full_spectrum(arch: Arch, theta, X, Y, vectors: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(H, its eigenvalues ascending, its eigenvectors as columns or None): the formed Hessian's
    whole spectrum, the dense path up to ``FULL_SPECTRUM_MAX_PARAMS`` parameters."""
    H = mlp.hessian(arch, theta, X, Y)
    eigs, V = np.linalg.eigh(H) if vectors else (np.linalg.eigvalsh(H), None)
    return H, eigs, V


def hvp_function(arch: Arch, theta, X, Y) -> Callable[[torch.Tensor], torch.Tensor]:
    """``hvp(V)`` = H @ V for V of shape (P,) or (m, P), float64 tensors, H at ``theta``.

    The gradient g = ∇L is built once with its graph kept; each product is then one backward
    pass, H v = ∇(g·v): several times cheaper per product on 2—200—200—1 than torch.func's jvp of
    grad, which redoes the forward and backward every time, and cheaper batched too.
    """
    t, Xt, yt = mlp.tensors(theta, X, mlp.as_targets(Y))
    t.requires_grad_(True)
    (g,) = torch.autograd.grad(mlp.loss_t(arch, t, Xt, yt), t, create_graph=True)

    def hvp(V: torch.Tensor) -> torch.Tensor:
        return torch.autograd.grad(g, t, V, retain_graph=True, is_grads_batched=V.ndim == 2)[0]

    return hvp


class _Cancelled(Exception):
    """Raised inside ARPACK's matvec when the job is closed, to abandon the eigensolve."""


@functools.cache
def _operator_class():
    """The LinearOperator class, made on first use: scipy loads only when a Hessian is wanted."""
    return type("_HessianOperator", (_HessianProducts, scipy_sparse_linalg.LinearOperator), {})


def _hessian_operator(hvp, n: int, stop: threading.Event, lift: tuple | None = None):
    return _operator_class()(hvp, n, stop, lift)


class _HessianProducts:
    """H as a LinearOperator (``_hessian_operator``) counting its products and stopping when
    ``stop`` is set."""

    def __init__(self, hvp, n: int, stop: threading.Event, lift: tuple | None = None):
        super().__init__(np.float64, (n, n))
        self._hvp, self._stop, self.count = hvp, stop, 0
        self._lift = lift  # (V, shifts): adds V diag(shifts) Vᵀ, see _lowest_lift

    def _matvec(self, v):
        return self._matmat(np.asarray(v, dtype=np.float64).reshape(-1, 1)).ravel()

    def _matmat(self, V):
        if self._stop.is_set():
            raise _Cancelled
        self.count += V.shape[1]
        HV = self._hvp(torch.from_numpy(np.ascontiguousarray(V.T, dtype=np.float64))).numpy().T
        if self._lift is not None:
            U, shifts = self._lift
            HV = HV + U @ (shifts[:, None] * (U.T @ V))
        return HV

    def _adjoint(self):
        return self  # symmetric


def arpack_end_job(
    hvp,
    n: int,
    k: int,
    which: str,
    vectors: bool = True,
    tol: float = 0.0,
    seed: int = 0,
    maxiter: int | None = None,
    ncv: int | None = LANCZOS_NCV,
    lift: tuple | None = None,
) -> Job[tuple]:
    """Job: the k eigenpairs at one end of H's spectrum (``which`` "LA", the largest, or "SA",
    the smallest), ascending, their eigenvectors (n, k) with ``vectors``, and the HVPs used, by
    ARPACK's implicitly restarted Lanczos (``eigsh``) on ``hvp``, which maps rows (m, n) to rows,
    as ``hvp_function``'s. ``tol``: ARPACK's bound on each Ritz pair's residual ‖Hv − θv‖ relative
    to |θ| (0: machine precision); an eigenvalue of H then lies within that residual of θ.
    ``lift``: (V, shifts), H + V diag(shifts) Vᵀ instead (``_lowest_lift``). The module
    toolkit's own Lanczos (``module_hessian.extreme_eigenpairs_job``) falls back on this one."""
    v0 = np.random.default_rng(seed).standard_normal(n)  # fixed start: reproducible results

    def solve(stop):
        op = _hessian_operator(hvp, n, stop, lift)
        out = scipy_sparse_linalg.eigsh(
            op,
            k=k,
            which=which,
            v0=v0,
            tol=tol,
            maxiter=maxiter,
            ncv=None if ncv is None else min(n - 1, max(ncv, 2 * k + 1)),
            return_eigenvectors=vectors,
        )
        return out, op.count

    label = "lowest" if which == "SA" else "highest"
    out, count = yield from wait_for(solve, f"Lanczos: {label} {k} eigenvalues")
    vals, vecs = out if vectors else (out, None)
    order = np.argsort(vals)
    return vals[order], (vecs[:, order] if vectors else None), count


def _lowest_lift(top, top_v) -> tuple:
    """The ``lift`` that moves H's top eigenvalues down to the smallest of them, top[0].

    Lanczos converges at a rate set by an eigenvalue's gap relative to the spectrum's width; a
    few huge Gauss–Newton eigenvalues make that width enormous and the search for the lowest
    crawl (10k HVPs on 2—200—200—1, against 56 HVPs lifted). Moving them to top[0],
    not to 0, keeps them above every eigenvalue not found, so none can pass for a lowest one.
    """
    return top_v, top[0] - top


def hutchinson_trace_job(
    hvp, n: int, probes: int, seed: int = 0, known: tuple | None = None
) -> Job[tuple[float, float]]:
    """Job: (trace estimate, standard error) from ``probes`` Rademacher probes z, mean of zᵀHz.

    Unbiased because E[zzᵀ] = I; the standard error is the sample standard deviation over
    √probes (a probe's variance is 2 Σ_{i≠j} H_ij²). With ``known`` = (eigenvalues, orthonormal
    eigenvectors V), tr H = Σ eigenvalues + tr(PHP), P = I − VVᵀ, and only tr(PHP) is estimated:
    the top eigenvalues that dominate Σ H_ij² no longer add to the variance (as in Hutch++).
    """
    return mean_and_stderr((yield from hutchinson_samples_job(hvp, n, probes, seed, known)))


def mean_and_stderr(samples: np.ndarray) -> tuple[float, float]:
    """The estimate from independent samples and its standard error (sample std / √count)."""
    return float(samples.mean()), float(samples.std(ddof=1) / np.sqrt(len(samples)))


def hutchinson_samples_job(hvp, n: int, probes: int, seed: int = 0, known: tuple | None = None) -> Job[np.ndarray]:
    """Job: the ``probes`` single-probe estimates of tr H that ``hutchinson_trace_job`` averages."""
    if probes < 2:
        raise EngineInputError(f"Hutchinson needs at least 2 probes for a standard error, got {probes}")
    rng = np.random.default_rng(seed)
    exact_part = 0.0 if known is None else float(np.sum(known[0]))
    samples = []
    for start in range(0, probes, PROBE_BATCH):
        m = min(PROBE_BATCH, probes - start)
        Z = rng.choice([-1.0, 1.0], size=(m, n))
        if known is not None:
            V = known[1]
            Z = Z - (Z @ V) @ V.T
        Zt = torch.from_numpy(Z)
        samples.append((Zt * hvp(Zt)).sum(1).numpy())
        yield Progress((start + m) / probes, f"Hutchinson trace: {start + m}/{probes} probes")
    return exact_part + np.concatenate(samples)


def hessian_report_job(
    arch: Arch,
    theta,
    X,
    Y,
    k: int = 6,
    vectors: bool = False,
    max_full: int = FULL_SPECTRUM_MAX_PARAMS,
    probes: int = 64,
    tol: float = 0.0,
    seed: int = 0,
    maxiter: int | None = None,
    deflate: int | None = None,
    ncv: int = LANCZOS_NCV,
) -> Job[HessianReport]:
    """Job: lowest and highest ``k`` eigenvalues (and eigenvectors with ``vectors``) and the trace.

    Full spectrum when the net has at most ``max_full`` parameters; otherwise Lanczos for each
    end (``tol`` is ARPACK's relative tolerance, 0 = machine precision) and Hutchinson with
    ``probes`` probes for the trace. ``deflate`` top eigenpairs (default: samples + k) are found
    first and lifted out of the way of the search for the lowest (see ``_lowest_lift``).
    """
    configure_torch_threads()
    n = arch.n_params
    if not 1 <= k:
        raise EngineInputError(f"number of eigenvalues k = {k} must be at least 1")
    began = time.perf_counter()
    if n <= max_full:
        yield Progress(float("nan"), f"full Hessian ({n} parameters)")
        H, eigs, V = full_spectrum(arch, theta, X, Y, vectors)
        k = min(k, n)
        return HessianReport(
            "full",
            n,
            eigs[:k],
            eigs[n - k :],
            float(np.trace(H)),
            0.0,
            V[:, :k] if vectors else None,
            V[:, n - k :] if vectors else None,
            spectrum=eigs,
            seconds=time.perf_counter() - began,
        )
    # The top of the spectrum first, m ≥ k pairs of it: with a summed squared loss on N samples
    # the Gauss–Newton part 2JᵀJ has rank ≤ N, so the top N eigenvalues can dwarf the rest
    # (29163 against |λ| < 2 on 2—200—200—1 near a minimum); see _lowest_lift.
    m = min(max(k, len(X) + k if deflate is None else deflate), n // 2)
    if k > m:
        raise EngineInputError(f"k = {k} eigenvalues from each end needs more than {2 * k} parameters")
    hvp = hvp_function(arch, theta, X, Y)
    top, top_v, n_high = yield from arpack_end_job(hvp, n, m, "LA", True, tol, seed + 1, maxiter, ncv)
    lift = _lowest_lift(top, top_v)
    low, low_v, n_low = yield from arpack_end_job(hvp, n, k, "SA", vectors, tol, seed, maxiter, ncv, lift)
    high, high_v = top[m - k :], (top_v[:, m - k :] if vectors else None)
    trace, stderr = yield from hutchinson_trace_job(hvp, n, probes, seed + 2, known=(top, top_v))
    return HessianReport(
        "lanczos",
        n,
        low,
        high,
        trace,
        stderr,
        low_v,
        high_v,
        n_hvp=n_low + n_high + probes,
        probes=probes,
        seconds=time.perf_counter() - began,
    )


def hessian_report(arch: Arch, theta, X, Y, **options) -> HessianReport:
    """``hessian_report_job`` run to completion (headless callers and tests)."""
    return run_to_completion(hessian_report_job(arch, theta, X, Y, **options))
