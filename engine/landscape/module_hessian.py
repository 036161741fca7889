"""PyHessian's measures for any PyTorch model: top eigenpairs, trace, density and full spectrum.

Everything here is built on one operation, ``module_hvp`` (exact Hessian-vector products of
``ModuleLoss``'s L), handed to the machinery that already serves the MLPs (docs/MATH.md C2, C4,
B12.5):

- the k largest eigenpairs by Lanczos with full re-orthogonalisation (``top_eigenpairs_job``),
  stopped at the first step where every Ritz value's error estimate (its residual, or for the
  eigenvalues alone the smaller Kato–Temple estimate) is within ``tol`` of its value;
- the trace by Hutchinson's estimator with Rademacher probes (``hessian.hutchinson_samples_job``),
  with the top eigenpairs deflated so they add nothing to its variance, and its standard error;
- the spectral density by stochastic Lanczos quadrature (``density.slq_job``);
- up to ``FULL_SPECTRUM_MAX_PARAMS`` parameters, the whole Hessian, formed column block by column
  block from products with the identity, and its every eigenvalue.

The products: when the gradient's graphs over all the chunks fit ``RETAINED_GRAPH_MAX_BYTES``
(measured on the first chunk's graph), ∇L is formed once with its graph kept and each product is
one backward through it (reverse-over-reverse, PyHessian's product); otherwise every product
redoes the forward chunk by chunk (``ModuleLoss.hvp``, forward-over-reverse), so memory is one
chunk's graph. Beyond that: a few P-vectors, the Lanczos basis and its products (2 × steps), a
probe block, or a P × ``FULL_BLOCK`` block of columns.
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
# Identity columns per block when the Hessian is formed: P × 64 float64 is 1.5 MB at P = 3000.
FULL_BLOCK = 64
# The gradient's graphs are kept for the products when all the chunks' graphs together hold at
# most this. On benchmarks/bench_any_model.py's ResNet-20 (128 inputs, float32, one thread) a
# product on the kept graph took 1.2 s, one that redoes the forward 2.5 s.
RETAINED_GRAPH_MAX_BYTES = 2 << 30
# Lanczos steps before ARPACK takes over: the basis and its products are 2 × steps P-vectors in
# float64, held within LANCZOS_BASIS_BYTES. The top eigenvalue of that ResNet-20 met a 1e-3
# residual bound in 9 steps; the test CNN's top three met machine precision in 42.
LANCZOS_STEPS = 80
LANCZOS_BASIS_BYTES = 2 << 30


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


def module_hvp(loss, flat=None, max_graph_bytes: int = RETAINED_GRAPH_MAX_BYTES):
    """``hvp(V)`` = H(θ) @ each row of V, for V (P,) or (m, P): the convention of
    ``hessian.hvp_function`` and ``density.hvp_function``. The result comes back in V's dtype and
    on V's device (the Lanczos basis is float64 numpy); products are counted in ``hvp.count``.

    When the gradient's graphs over all the chunks hold at most ``max_graph_bytes`` (0: never),
    they are built once here and every product is one backward through them; ``hvp.gradient`` is
    then ∇L(θ), which came with them, and ``hvp.retained`` is True. Otherwise each product is
    ``ModuleLoss.hvp`` (the forward redone, chunk by chunk, vmapped over groups of vectors) and
    ``hvp.gradient`` is None."""
    theta = loss.flat(flat)
    kept = retained_gradient(loss, theta, max_graph_bytes) if max_graph_bytes > 0 else None
    if kept is None:
        rows = lambda V: loss.hvp(theta, V.T).T
    else:
        leaf, g = kept
        # one backward per vector: autograd's batched backward (is_grads_batched, a vmap) took
        # 1.7× as long as a loop on the ResNet-20 of benchmarks/bench_any_model.py
        one = lambda v: torch.autograd.grad(g, leaf, v, retain_graph=True)[0]
        rows = lambda V: torch.stack([one(v) for v in V])

    def hvp(V: torch.Tensor) -> torch.Tensor:
        hvp.count += 1 if V.ndim == 1 else len(V)
        W = V.to(loss.device, loss.dtype)
        return rows(W[None] if V.ndim == 1 else W).reshape(V.shape).to(V.device, V.dtype)

    hvp.count = 0
    hvp.one = hvp  # rows are handled here, one backward or one vmapped group each
    hvp.batched = True
    hvp.retained = kept is not None
    hvp.gradient = None if kept is None else kept[1].detach()
    return hvp


def retained_gradient(loss, theta, max_bytes: int = RETAINED_GRAPH_MAX_BYTES):
    """(θ as a leaf, ∇L(θ) with its graph kept): the chunks' gradients summed, each formed with
    ``create_graph=True`` so that H v is one backward of ∇L·v. None, and nothing kept, when the
    first chunk's graph times the number of chunks exceeds ``max_bytes``."""
    shares = loss.chunk_objectives()
    leaf = theta.detach().clone().requires_grad_()
    total = None
    for i, share in enumerate(shares):
        (g,) = torch.autograd.grad(share(leaf), leaf, create_graph=True)
        if i == 0 and graph_bytes(g) * len(shares) > max_bytes:
            return None
        total = g if total is None else total + g
    return leaf, total


def graph_bytes(root: torch.Tensor) -> int:
    """Bytes of the tensors that the autograd graph below ``root`` saved for its backward, each
    counted once (a tensor saved by several nodes is one allocation)."""
    seen, sizes, todo = set(), {}, [root.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            value = getattr(node, name)
            for t in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(t, torch.Tensor):
                    sizes[(t.data_ptr(), t.numel(), t.dtype)] = t.numel() * t.element_size()
        todo.extend(child for child, _ in node.next_functions)
    return sum(sizes.values())


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
    ``steps`` steps. ``tol``: the eigenvalues' relative error estimate (``ritz_errors``; 0: machine
    precision). ``deflate``:
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
    # the eigenvalues are the measure asked for: Lanczos stops on their error (the Ritz vectors,
    # which deflate the trace, are exported with their measured residuals)
    vals, vecs, residuals = yield from top_eigenpairs_job(hvp, n, top_k, tol, seed, vectors=False)
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
    relative errors near 1e-6, so a residual bound at machine precision would never be met; √ε
    (3.5e-4) is still well inside the 1e-3 that PyHessian's power iteration aims at."""
    return tol if loss.dtype == torch.float64 else max(tol, float(np.sqrt(torch.finfo(loss.dtype).eps)))


def top_eigenpairs_job(hvp, n: int, k: int, tol: float = 0.0, seed: int = 0, vectors: bool = True) -> Job[tuple]:
    """Job: (the k largest eigenvalues, descending; their unit eigenvectors (n, k); each pair's
    residual ‖Hy − θy‖) by Lanczos on ``hvp``, from the unit start of ``start_vector``.

    Lanczos with full re-orthogonalisation: after m products H Q_m = Q_m T_m + β_m q_{m+1} e_mᵀ, so
    a Ritz pair (θ, y = Q_m s) of the tridiagonal T_m has residual r = β_m |s_m|. It stops at the
    first step where every one of the top k has an error estimate ≤ max(tol, ε) |θ|, or where the
    Krylov space is invariant (β_m ≈ 0). The estimate (``ritz_errors``) is r itself with
    ``vectors`` (then an eigenvalue of H lies within r of θ, and y is the eigenvector to an angle
    of about r / gap), and without it the eigenvalue's, min(r, r² / gap): the same accuracy in θ
    from fewer products, the vectors' left coarser. The residuals returned are measured,
    ‖(H Q_m) s − θ Q_m s‖ from the products kept, not the estimate. If ``LANCZOS_STEPS`` (or the
    basis memory) do not suffice, ARPACK's implicitly restarted Lanczos takes over
    (``hessian.top_eigenpairs_job``): a restart from one vector would lose the other pairs."""
    steps = int(min(n, LANCZOS_STEPS, max(2 * k + 2, LANCZOS_BASIS_BYTES // (16 * n))))
    bound = max(tol, float(np.finfo(np.float64).eps))
    start = torch.from_numpy(start_vector(n, seed, getattr(hvp, "gradient", None)))
    Q, HQ, T, converged = yield from _lanczos_run(hvp, start, k, steps, bound, vectors)
    if converged:
        theta, S = np.linalg.eigh(T)
        theta, S = theta[::-1][:k].copy(), torch.from_numpy(S[:, ::-1][:, :k].copy())
        Y, HY = (Q.T @ S).numpy(), (HQ.T @ S).numpy()
        return theta, Y / np.linalg.norm(Y, axis=0), np.linalg.norm(HY - Y * theta, axis=0)
    del Q, HQ
    vals, vecs, _ = yield from hessian.top_eigenpairs_job(hvp, n, k, tol, seed, ncv=steps)
    vals, vecs = vals[::-1].copy(), vecs[:, ::-1].copy()
    HY = hvp(torch.from_numpy(np.ascontiguousarray(vecs.T))).numpy().T  # one more product each
    return vals, vecs, np.linalg.norm(HY - vecs * vals, axis=0)


def ritz_errors(theta: np.ndarray, residuals: np.ndarray, vectors: bool = True) -> np.ndarray:
    """Error estimates of Ritz values ``theta`` (ascending, all of T_m's) with residuals
    ``residuals``, MATH.md C4. ``vectors``: the residuals themselves, each a bound
    (Krylov–Bogoliubov). Otherwise each eigenvalue's: min(r, r² / gap) (Kato–Temple), where the
    gap to the rest of the spectrum is estimated from the other Ritz values, each moved by its own
    residual towards θ (an eigenvalue of H lies within it): min over j ≠ i of |θ_i − θ_j| − r_j.
    That counts only the eigenvalues some Ritz value has found; Lanczos finds the extreme ones
    first, and the tests and benchmarks/bench_any_model.py measure the error against H's own."""
    if vectors or len(theta) < 2:
        return residuals
    apart = np.abs(theta[:, None] - theta[None, :]) - residuals[None, :]
    np.fill_diagonal(apart, np.inf)
    gap = apart.min(axis=1)
    quadratic = np.divide(residuals**2, gap, out=np.full_like(residuals, np.inf), where=gap > 0)
    return np.minimum(residuals, quadratic)


def start_vector(n: int, seed: int, gradient=None) -> np.ndarray:
    """Lanczos's unit start: a seeded Gaussian vector, plus, when it is known, the gradient's
    direction. Where training moves, the gradient lies mostly in the span of the Hessian's top
    eigenvectors (Gur-Ari, Roberts & Dyer 2018, "Gradient descent happens in a tiny subspace"), so
    it brings those in from the first step; the random half keeps every eigenvector in reach.
    On benchmarks/bench_any_model.py's ResNet-20, 13 steps met a 1e-3 bound from the random start
    alone, 9 with the gradient."""
    q = np.random.default_rng(seed).standard_normal(n)
    q /= np.linalg.norm(q)
    if gradient is not None:
        g = gradient.double().cpu().numpy()
        if np.linalg.norm(g) > 0:
            q += g / np.linalg.norm(g)
    return q / np.linalg.norm(q)


def _lanczos_run(hvp, q: torch.Tensor, k: int, steps: int, bound: float, vectors: bool) -> Job[tuple]:
    """Job: up to ``steps`` Lanczos steps from unit float64 ``q``: (the basis Q (m, n), its products
    HQ, both tensors, the tridiagonal T (m, m), whether the top k's ``ritz_errors`` met ``bound``). The basis is in
    torch, on torch's threads: numpy's BLAS threads, spinning on a busy machine, took 7× the CPU
    time of this arithmetic on the ResNet-20 of benchmarks/bench_any_model.py."""
    n = len(q)
    Q, HQ = torch.empty(steps, n, dtype=torch.float64), torch.empty(steps, n, dtype=torch.float64)
    alphas, betas = [], []
    for j in range(steps):
        Q[j] = q
        HQ[j] = hvp(q)
        basis = Q[: j + 1]
        w = HQ[j] - basis.T @ (basis @ HQ[j])
        w -= basis.T @ (basis @ w)  # twice is enough (Kahan, Parlett)
        alphas.append(float(q @ HQ[j]))
        beta = float(w.norm())
        T = np.diag(alphas) + np.diag(betas, 1) + np.diag(betas, -1)
        theta, S = np.linalg.eigh(T)
        top = slice(max(j + 1 - k, 0), j + 1)
        estimate = ritz_errors(theta, beta * np.abs(S[-1]), vectors)[top]
        scale = np.abs(theta).max()
        invariant = beta <= n * np.finfo(np.float64).eps * scale
        converged = j + 1 >= k and bool(np.all(estimate <= bound * np.abs(theta[top])))
        relative = np.max(estimate / np.maximum(np.abs(theta[top]), np.finfo(np.float64).tiny))
        yield Progress((j + 1) / steps, f"Lanczos step {j + 1}: top {k} relative error estimate {relative:.1e}")
        if converged or invariant:
            return Q[: j + 1], HQ[: j + 1], T, True
        betas.append(beta)
        q = w / beta
    return Q, HQ, T, False


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
    (Lanczos's sign is arbitrary). Runs on a helper thread, as ``module_hessian_job``."""

    def directions():
        hvp = module_hvp(loss)
        _, vecs, _ = yield from top_eigenpairs_job(hvp, loss.n_params, 2, attainable_tol(loss, tol), seed)
        return tuple(d * np.sign(d[np.argmax(np.abs(d))]) for d in vecs.T)

    return (yield from on_helper_thread(directions(), f"Hessian directions of {loss.n_params} parameters"))


def hessian_directions(loss, tol: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``hessian_directions_job`` run to completion (the command line)."""
    return run_to_completion(hessian_directions_job(loss, tol, seed))


def module_hessian(loss, **options) -> ModuleHessian:
    """``module_hessian_job`` run to completion (headless callers and tests)."""
    return run_to_completion(module_hessian_job(loss, **options))
