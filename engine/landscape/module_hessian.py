"""PyHessian's measures for any PyTorch model: top eigenpairs, trace, density and full spectrum.

Everything here is built on one operation, ``module_hvp`` (exact Hessian-vector products of
``ModuleLoss``'s L), handed to the machinery that already serves the MLPs (docs/MATH.md C2, C4,
B12.5):

- the k largest eigenpairs, and on request the k smallest, by Lanczos with full
  re-orthogonalisation (``extreme_eigenpairs_job``, ``which`` "top" or "bottom"), stopped at the
  first step where every Ritz value's error estimate (its residual, or for the eigenvalues alone
  the smaller Kato–Temple estimate) is within ``tol`` of its scale;
- the trace by Hutchinson's estimator with Rademacher probes (``hessian.hutchinson_samples_job``),
  with the top eigenpairs deflated so they add nothing to its variance, and its standard error;
- the spectral density by stochastic Lanczos quadrature (``density.slq_job``);
- the whole Hessian, formed column block by column block from products with the identity, and its
  every eigenvalue: when asked (``full=True``, up to ``FULL_SPECTRUM_MAX_PARAMS`` parameters), or
  by default when its P products are no more than the estimates take (``forms_hessian``);
- the extreme-curvature plane (``hessian_extreme_directions_job``): the eigenvectors of the
  smallest and the largest eigenvalue, and ``critical_point_verdict``, which reads a saddle off the
  smallest eigenvalue and its error.

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
from enum import Enum

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job, Progress, on_helper_thread, run_to_completion
from engine.core.validation import integer, real
from engine.landscape import density as slq
from engine.landscape import hessian
from engine.landscape.density import Density
from engine.landscape.evaluation import second_derivatives
from engine.landscape.hessian import FULL_SPECTRUM_MAX_PARAMS

MAX_TOP_K = 100
MAX_PROBES = 10_000
# Identity columns per block when the Hessian is formed: P × 64 float64 is 1.5 MB at P = 3000.
FULL_BLOCK = 64
# The gradient's graphs are kept for the products when all the chunks' graphs together hold at
# most this. On benchmarks/bench_any_model.py's ResNet-20 a product on the kept graph took about
# half as long as one that redoes the forward.
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
    bottom_eigenvalues: np.ndarray | None  # (bottom_k,): the smallest, ascending; None when none asked
    bottom_eigenvectors: np.ndarray | None  # (P, bottom_k): unit columns matching them
    bottom_residuals: np.ndarray | None  # (bottom_k,): ‖Hv − λv‖ of each, an error bound on each eigenvalue
    trace: float  # Hutchinson's estimate
    trace_se: float  # its standard error
    trace_samples: np.ndarray  # (probes,): each probe's estimate Σλ_top + zᵀPHPz
    hessian: np.ndarray | None  # (P, P): the Hessian itself, formed when asked or cheaper (``module_hessian_job``)
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
    with second_derivatives():
        kept = retained_gradient(loss, theta, max_graph_bytes) if max_graph_bytes > 0 else None
    if kept is None:
        rows = lambda V: loss.hvp(theta, V.T).T
    else:
        leaf, g = kept
        # one backward per vector: autograd's batched backward (is_grads_batched, a vmap) was
        # slower than a loop on the ResNet-20 of benchmarks/bench_any_model.py
        one = lambda v: torch.autograd.grad(g, leaf, v, retain_graph=True)[0]
        rows = lambda V: torch.stack([one(v) for v in V])

    def hvp(V: torch.Tensor) -> torch.Tensor:
        hvp.count += 1 if V.ndim == 1 else len(V)
        W = V.to(loss.device, loss.dtype)
        with second_derivatives():
            HW = rows(W[None] if V.ndim == 1 else W)
        return HW.reshape(V.shape).to(V.device, V.dtype)

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


ENDS = ("top", "bottom")


def check_options(
    loss,
    top_k: int,
    probes: int,
    density_probes: int = 0,
    steps: int = 80,
    tol: float = 0.0,
    bottom_k: int = 0,
    full: bool | None = None,
    max_full: int | None = None,
) -> None:
    """Refuse every bad option before any product is spent, each in one line naming it.

    Raises
    ------
    EngineInputError
        ``top_k`` outside [1, min(MAX_TOP_K, P − 2)], ``bottom_k`` outside [0, min(MAX_TOP_K, P)],
        ``probes`` outside [2, MAX_PROBES], ``tol`` outside [0, 0.5], a bad SLQ setting,
        ``full`` not None/True/False, ``full=True`` past ``FULL_SPECTRUM_MAX_PARAMS`` parameters,
        ``full`` and ``max_full`` both given, or fewer than 3 parameters.
    """
    integer("top-k", top_k, 1, min(MAX_TOP_K, max(loss.n_params - 2, 1)))
    integer("bottom-k", bottom_k, 0, min(MAX_TOP_K, loss.n_params))
    integer("probes", probes, 2, MAX_PROBES)
    real("tol", tol, 0.0, 0.5)
    if density_probes:
        slq.check_slq(loss.n_params, density_probes, steps)
    if loss.n_params < 3:
        raise EngineInputError(f"Lanczos needs at least 3 parameters, the model has {loss.n_params}")
    if full is not None and not isinstance(full, (bool, np.bool_)):
        raise EngineInputError(f"full = {full!r} must be True, False or None (formed only when cheaper)")
    if full is not None and max_full is not None:
        raise EngineInputError("give full or max_full, not both (max_full is the older spelling)")
    if max_full is not None:
        integer("max_full", max_full, 0)
    if full and loss.n_params > FULL_SPECTRUM_MAX_PARAMS:
        raise EngineInputError(
            f"full = True: the Hessian of {loss.n_params} parameters is not formed beyond "
            f"{FULL_SPECTRUM_MAX_PARAMS}; leave full out for the Lanczos and Hutchinson estimates"
        )


def estimated_products(n: int, bottom_k: int = 0, probes: int = 100, density_probes: int = 0, steps: int = 80) -> int:
    """The Hessian-vector products the estimates are planned to take: ``min(n, LANCZOS_STEPS)`` for
    the top's Lanczos and as many again for the bottom's when ``bottom_k`` > 0, one per trace probe,
    ``density_probes`` × ``steps`` for SLQ. Lanczos often stops sooner (and ARPACK, past its basis,
    takes more), so this is the plan, not a count. Forming the Hessian takes n products, so
    ``module_hessian_job`` forms it by default only when n is at most this."""
    lanczos = min(n, LANCZOS_STEPS)
    return lanczos * (2 if bottom_k else 1) + probes + density_probes * steps


def forms_hessian(
    n: int, full: bool | None, max_full: int | None, bottom_k: int, probes: int, density_probes: int, steps: int
) -> bool:
    """Whether ``module_hessian_job`` forms the whole Hessian: ``full`` True always (the options
    were checked), False never; None when n ≤ ``FULL_SPECTRUM_MAX_PARAMS`` and forming (n products)
    costs no more than the estimates (``estimated_products``). ``max_full``, the older option,
    forms it exactly when n ≤ ``max_full`` (0: never)."""
    if max_full is not None:
        return n <= max_full
    if full is None:
        return n <= min(FULL_SPECTRUM_MAX_PARAMS, estimated_products(n, bottom_k, probes, density_probes, steps))
    return bool(full)


def module_hessian_job(
    loss,
    top_k: int = 3,
    probes: int = 100,
    seed: int = 0,
    tol: float = 0.0,
    max_full: int | None = None,
    density_probes: int = 0,
    steps: int = 80,
    deflate: bool = True,
    bottom_k: int = 0,
    full: bool | None = None,
) -> Job[ModuleHessian]:
    """Job: PyHessian's measures of ``loss``'s Hessian at θ, on exact Hessian-vector products.

    Parameters
    ----------
    loss : ModuleLoss
        The loss and its point θ.
    top_k, bottom_k : int
        The largest and (0: none) the smallest eigenpairs, each end by its own Lanczos run
        (``extreme_eigenpairs_job``), each eigenvalue with its measured residual.
    probes : int
        Hutchinson probes for the trace.
    seed : int
        Seeds the Lanczos starts and the probes.
    tol : float
        The eigenvalues' error estimate (``ritz_errors``) relative to |λ| for the top and to the
        spectrum's largest |Ritz value| for the bottom; 0: machine precision.
    max_full : int or None
        The older option: form the Hessian exactly when P ≤ ``max_full`` (0: never).
    density_probes, steps : int
        With ``density_probes`` > 0, the SLQ density of ``steps`` Lanczos steps.
    deflate : bool
        Estimate only tr(PHP) beyond the top eigenpairs (MATH.md C2); off, the probes are plain
        Rademacher vectors and a probe's variance is 2 Σ_{i≠j} H_ij².
    full : bool or None
        Form the whole Hessian (P products) and its spectrum: True always (refused past
        ``FULL_SPECTRUM_MAX_PARAMS``), False never, None only when that costs no more products
        than the estimates take (``forms_hessian``).

    Returns
    -------
    ModuleHessian
        The measures. The measures run on a helper thread (``on_helper_thread``): one product of
        a large model can take seconds. Each progress message ends with the products done out of
        those planned and the time left at the pace so far, and the fraction is their ratio.

    Raises
    ------
    EngineInputError
        A bad option (``check_options``), before any product.
    """
    check_options(loss, top_k, probes, density_probes, steps, tol, bottom_k, full, max_full)
    form = forms_hessian(loss.n_params, full, max_full, bottom_k, probes, density_probes, steps)
    measures = _measures_job(loss, top_k, bottom_k, probes, seed, tol, form, density_probes, steps, deflate)
    return (yield from on_helper_thread(measures, f"Hessian of {loss.n_params} parameters"))


def _measures_job(loss, top_k, bottom_k, probes, seed, tol, form, density_probes, steps, deflate) -> Job[ModuleHessian]:
    began = time.perf_counter()
    n, hvp, tol = loss.n_params, module_hvp(loss), attainable_tol(loss, tol)
    lanczos = min(n, LANCZOS_STEPS)
    plan = {
        "top": lanczos,
        "bottom": lanczos if bottom_k else 0,
        "trace": probes,
        "full": n if form else 0,
        "density": density_probes * steps,
    }
    stage = lambda name, job: _counted(job, hvp, plan, name, began)
    planned = sum(plan.values())
    yield Progress(0.0, f"Hessian of {n} parameters: Lanczos for the top {top_k}, {planned} products planned")
    # the eigenvalues are the measure asked for: Lanczos stops on their error (the Ritz vectors,
    # which deflate the trace, are exported with their measured residuals)
    vals, vecs, residuals = yield from stage("top", top_eigenpairs_job(hvp, n, top_k, tol, seed, vectors=False))
    low = low_vecs = low_res = None
    if bottom_k:
        job = extreme_eigenpairs_job(hvp, n, bottom_k, tol, seed + 3, vectors=False, which="bottom")
        low, low_vecs, low_res = yield from stage("bottom", job)
    job = hessian.hutchinson_samples_job(hvp, n, probes, seed + 1, (vals, vecs) if deflate else None)
    samples = yield from stage("trace", job)
    trace, trace_se = hessian.mean_and_stderr(samples)
    H = (yield from stage("full", formed_hessian_job(hvp, n))) if form else None
    dens = None
    if density_probes:
        job = slq.slq_job(hvp, n, density_probes, steps, seed + 2, None, loss.dtype, loss.device)
        dens = yield from stage("density", job)
    return ModuleHessian(
        param_names=tuple(loss.names),
        param_shapes=tuple(loss.shapes),
        theta=loss.theta.double().cpu().numpy(),
        loss=loss.loss(),
        eigenvalues=vals,
        eigenvectors=vecs,
        residuals=residuals,
        bottom_eigenvalues=low,
        bottom_eigenvectors=low_vecs,
        bottom_residuals=low_res,
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


def _counted(job: Job, hvp, plan: dict[str, int], name: str, began: float) -> Job:
    """Job: ``job``, one stage of ``plan`` ({stage: products planned}), re-yielded with the fraction
    of all planned products done and, in its message, "done/total products" and the time left at
    the pace so far (``eta_text``). The total is revised as stages finish: a finished stage counts
    the products it took, the running one at least those it has taken, the later ones their plan."""
    first = hvp.count
    later = list(plan)[list(plan).index(name) + 1 :]
    while True:
        try:
            update = next(job)
        except StopIteration as stop:
            plan[name] = hvp.count - first
            return stop.value
        done = hvp.count
        total = done + max(plan[name] - (done - first), 0) + sum(plan[s] for s in later)
        left = (time.perf_counter() - began) / done * (total - done) if done else float("nan")
        text = f"{update.message} — {done}/{total} products, {eta_text(left)}"
        yield Progress(done / total if total else 1.0, text, update.partial)


def eta_text(seconds: float) -> str:
    """ "about 2 min 5 s left" for the time left in seconds; "time left unknown" before the first
    product has given a pace (NaN)."""
    if not np.isfinite(seconds):
        return "time left unknown"
    s = int(round(seconds))
    if s < 1:
        return "under a second left"
    if s < 60:
        return f"about {s} s left"
    if s < 3600:
        return f"about {s // 60} min {s % 60} s left"
    return f"about {s // 3600} h {s % 3600 // 60} min left"


def attainable_tol(loss, tol: float) -> float:
    """``tol``, but no tighter than products in ``loss.dtype`` can resolve: float32 products carry
    relative errors near 1e-6, so a residual bound at machine precision would never be met; √ε
    (3.5e-4) is still well inside the 1e-3 that PyHessian's power iteration aims at."""
    return tol if loss.dtype == torch.float64 else max(tol, float(np.sqrt(torch.finfo(loss.dtype).eps)))


def top_eigenpairs_job(hvp, n: int, k: int, tol: float = 0.0, seed: int = 0, vectors: bool = True) -> Job[tuple]:
    """Job: (the k largest eigenvalues, descending; their unit eigenvectors (n, k); each pair's
    residual ‖Hy − θy‖): ``extreme_eigenpairs_job`` at the top end."""
    return (yield from extreme_eigenpairs_job(hvp, n, k, tol, seed, vectors, "top"))


def bottom_eigenpairs_job(hvp, n: int, k: int, tol: float = 0.0, seed: int = 0, vectors: bool = True) -> Job[tuple]:
    """Job: (the k smallest eigenvalues, ascending, the most negative first; their unit
    eigenvectors (n, k); each pair's residual ‖Hy − θy‖): ``extreme_eigenpairs_job`` at the bottom."""
    return (yield from extreme_eigenpairs_job(hvp, n, k, tol, seed, vectors, "bottom"))


def extreme_eigenpairs_job(
    hvp, n: int, k: int, tol: float = 0.0, seed: int = 0, vectors: bool = True, which: str = "top"
) -> Job[tuple]:
    """Job: the k eigenpairs at one end of the spectrum by Lanczos on ``hvp``.

    Lanczos with full re-orthogonalisation: after m products H Q_m = Q_m T_m + β_m q_{m+1} e_mᵀ, so
    a Ritz pair (θ, y = Q_m s) of the tridiagonal T_m has residual r = β_m |s_m|. It stops at the
    first step where every one of the k at the asked end has an error estimate within
    max(tol, ε) of its scale, or where the Krylov space is invariant (β_m ≈ 0). The scale is |θ|
    at the top; at the bottom it is the largest |Ritz value| (about ‖H‖), since the smallest
    eigenvalues of a trained network sit near 0, where an error relative to |θ| could never be met.
    The estimate (``ritz_errors``) is r itself with ``vectors`` (then an eigenvalue of H lies
    within r of θ, and y is the eigenvector to an angle of about r / gap), and without it the
    eigenvalue's, min(r, r² / gap): the same accuracy in θ from fewer products, the vectors' left
    coarser. The residuals returned are measured, ‖(H Q_m) s − θ Q_m s‖ from the products kept,
    not the estimate. If ``LANCZOS_STEPS`` (or the basis memory) do not suffice, ARPACK's
    implicitly restarted Lanczos takes over (``which`` "LA" or "SA"): a restart from one vector
    would lose the other pairs.

    Parameters
    ----------
    hvp : callable
        ``module_hvp``'s product: rows (m, n) to rows; its ``gradient``, when known, joins the
        start of the top's run (``start_vector``).
    n, k : int
        The dimension and the number of pairs, 1 ≤ k ≤ n.
    tol : float
        The relative error estimate to stop at (0: machine precision).
    seed : int
        Seeds the start vector.
    vectors : bool
        Stop on the vectors' estimate (r) rather than the eigenvalues' (min(r, r²/gap)).
    which : {"top", "bottom"}
        The end: the largest eigenvalues, returned descending, or the smallest, ascending.

    Returns
    -------
    tuple of (np.ndarray, np.ndarray, np.ndarray)
        The eigenvalues (k,), their unit eigenvectors (n, k) and the measured residuals (k,).

    Raises
    ------
    EngineInputError
        ``which`` neither "top" nor "bottom".
    """
    if which not in ENDS:
        raise EngineInputError(f"which = {which!r} must be 'top' or 'bottom'")
    top = which == "top"
    steps = int(min(n, LANCZOS_STEPS, max(2 * k + 2, LANCZOS_BASIS_BYTES // (16 * n))))
    bound = max(tol, float(np.finfo(np.float64).eps))
    # the gradient lies mostly in the top eigenvectors' span: a help for the top, none for the bottom
    start = torch.from_numpy(start_vector(n, seed, getattr(hvp, "gradient", None) if top else None))
    Q, HQ, T, converged = yield from _lanczos_run(hvp, start, k, steps, bound, vectors, which)
    if converged:
        theta, S = np.linalg.eigh(T)
        pick = slice(None, None, -1) if top else slice(None)
        theta, S = theta[pick][:k].copy(), torch.from_numpy(S[:, pick][:, :k].copy())
        Y, HY = (Q.T @ S).numpy(), (HQ.T @ S).numpy()
        return theta, Y / np.linalg.norm(Y, axis=0), np.linalg.norm(HY - Y * theta, axis=0)
    del Q, HQ
    vals, vecs, _ = yield from hessian.arpack_end_job(hvp, n, k, "LA" if top else "SA", tol=tol, seed=seed, ncv=steps)
    if top:
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


def _lanczos_run(
    hvp, q: torch.Tensor, k: int, steps: int, bound: float, vectors: bool, which: str = "top"
) -> Job[tuple]:
    """Job: up to ``steps`` Lanczos steps from unit float64 ``q``: (the basis Q (m, n), its products
    HQ, both tensors, the tridiagonal T (m, m), whether the k Ritz values at the ``which`` end met
    ``bound`` (``extreme_eigenpairs_job`` says against what scale)). The basis is in torch, on
    torch's threads: numpy's BLAS threads, spinning on a busy machine, took several times the CPU
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
        end = slice(max(j + 1 - k, 0), j + 1) if which == "top" else slice(0, min(k, j + 1))
        estimate = ritz_errors(theta, beta * np.abs(S[-1]), vectors)[end]
        scale = np.abs(theta).max()
        reference = np.abs(theta[end]) if which == "top" else np.full(len(estimate), scale)
        invariant = beta <= n * np.finfo(np.float64).eps * scale
        converged = j + 1 >= k and bool(np.all(estimate <= bound * reference))
        relative = np.max(estimate / np.maximum(reference, np.finfo(np.float64).tiny))
        text = f"Lanczos step {j + 1}: {which} {k} relative error estimate {relative:.1e}"
        yield Progress((j + 1) / steps, text)
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


@dataclass(frozen=True, eq=False)
class ExtremeDirections:
    """The extreme-curvature plane at θ (Böttcher & Wheeler 2022): the eigenvectors of the Hessian's
    smallest and largest eigenvalues, each signed so that its largest-magnitude component is
    positive, with their Ritz values and error bounds (each a measured residual ‖Hd − λd‖: an
    eigenvalue of H lies within it, Krylov–Bogoliubov)."""

    d1: np.ndarray  # (P,): unit eigenvector of the smallest (most negative) eigenvalue
    d2: np.ndarray  # (P,): unit eigenvector of the largest
    bottom_eigenvalue: float
    top_eigenvalue: float
    bottom_error: float
    top_error: float
    gradient_norm: float  # ‖∇L(θ)‖, for ``critical_point_verdict``
    n_hvp: int

    def verdict(self, tol: float = 1e-8) -> CriticalPointVerdict:
        """``critical_point_verdict`` of this point."""
        return critical_point_verdict(self.gradient_norm, self.bottom_eigenvalue, self.bottom_error, tol)


def hessian_extreme_directions_job(loss, tol: float = 0.0, seed: int = 0) -> Job[ExtremeDirections]:
    """Job: the plane of the Hessian's extreme curvatures, d1 along its smallest eigenvalue, d2 along
    its largest, for drawing the plane that a saddle's descent direction spans.

    A random plane through a saddle whose negative curvature lives in a few of P directions dips
    only where its directions' quadratic form is negative (MATH.md C1), which is rare; the bottom
    eigenvector is the descent direction itself, so this plane shows it whenever it exists.

    Parameters
    ----------
    loss : ModuleLoss
        The loss and its point θ.
    tol : float
        Each Lanczos run's relative error estimate on the vectors (the residual; 0: machine
        precision, floored for float32 as ``attainable_tol``).
    seed : int
        Seeds the two runs' starts (the bottom's with ``seed + 1``).

    Returns
    -------
    ExtremeDirections
        d1, d2 (unit, sign-fixed as ``hessian_directions_job``'s), the two eigenvalues, their
        measured residuals and ‖∇L(θ)‖. Runs on a helper thread, as ``module_hessian_job``.

    Raises
    ------
    EngineInputError
        ``tol`` outside [0, 0.5] or fewer than 3 parameters.
    """
    check_options(loss, 1, 2, tol=tol, bottom_k=1)

    def directions():
        hvp, t = module_hvp(loss), attainable_tol(loss, tol)
        top, top_v, top_r = yield from top_eigenpairs_job(hvp, loss.n_params, 1, t, seed)
        low, low_v, low_r = yield from bottom_eigenpairs_job(hvp, loss.n_params, 1, t, seed + 1)
        g = hvp.gradient if hvp.gradient is not None else loss.gradient()
        d1, d2 = (d * np.sign(d[np.argmax(np.abs(d))]) for d in (low_v[:, 0], top_v[:, 0]))
        return ExtremeDirections(
            d1=d1,
            d2=d2,
            bottom_eigenvalue=float(low[0]),
            top_eigenvalue=float(top[0]),
            bottom_error=float(low_r[0]),
            top_error=float(top_r[0]),
            gradient_norm=float(g.double().norm()),
            n_hvp=hvp.count,
        )

    return (yield from on_helper_thread(directions(), f"extreme Hessian directions of {loss.n_params} parameters"))


def hessian_extreme_directions(loss, tol: float = 0.0, seed: int = 0) -> ExtremeDirections:
    """``hessian_extreme_directions_job`` run to completion (headless callers and tests)."""
    return run_to_completion(hessian_extreme_directions_job(loss, tol, seed))


class PointKind(str, Enum):
    """What ``critical_point_verdict`` finds a point to be. Values are the JSON spelling; "saddle"
    and "not a critical point" are paper B's (``engine.minima.verdicts.Verdict``)."""

    SADDLE = "saddle"
    MINIMUM_OR_FLAT = "minimum or flat"
    NOT_CRITICAL = "not a critical point"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class CriticalPointVerdict:
    """``kind``, and the sentence that says it with its numbers."""

    kind: PointKind
    text: str

    def __str__(self) -> str:
        return self.text


def critical_point_verdict(
    gradient_norm: float, bottom_eigenvalue: float, bottom_error: float, tol: float = 1e-8
) -> CriticalPointVerdict:
    """The inspector's rule (paper B's ``engine.minima.construction.verdict``, whose ``GRAD_TOL`` is
    the default ``tol``) from the smallest eigenvalue alone: a point is critical when
    ‖∇L‖ < ``tol``, and the Hessian's inertia says something only there. A critical point is a
    saddle when λ_min + error < 0: an eigenvalue of H lies within ``bottom_error`` of the Ritz value
    (Krylov–Bogoliubov), so H certainly has a negative one. Otherwise it is a "minimum or flat": no
    eigenvalue found is negative beyond its error, which leaves a strict minimum, a degenerate one
    and a flat saddle (negative only at higher order) apart from each other undecided.

    Parameters
    ----------
    gradient_norm : float
        ‖∇L(θ)‖, finite and ≥ 0.
    bottom_eigenvalue : float
        The smallest Ritz value of the Hessian, finite.
    bottom_error : float
        Its error bound (the residual), finite and ≥ 0.
    tol : float
        The gradient norm below which the point is critical, > 0.

    Returns
    -------
    CriticalPointVerdict
        ``kind`` one of ``PointKind``; ``text`` says it with the numbers, e.g.
        "not a critical point (‖∇L‖ = 3.10e-02 ≥ 1e-08)".

    Raises
    ------
    EngineInputError
        An argument not finite, a negative norm or error, or ``tol`` ≤ 0.
    """
    gradient_norm = real("gradient_norm", gradient_norm, 0.0)
    bottom_eigenvalue = real("bottom_eigenvalue", bottom_eigenvalue)
    bottom_error = real("bottom_error", bottom_error, 0.0)
    tol = real("tol", tol, positive=True)
    if not gradient_norm < tol:
        text = f"not a critical point (‖∇L‖ = {gradient_norm:.2e} ≥ {tol:g})"
        return CriticalPointVerdict(PointKind.NOT_CRITICAL, text)
    where = f"‖∇L‖ = {gradient_norm:.2e}, λ_min = {bottom_eigenvalue:.3e} ± {bottom_error:.1e}"
    if bottom_eigenvalue + bottom_error < 0:
        return CriticalPointVerdict(PointKind.SADDLE, f"saddle ({where})")
    return CriticalPointVerdict(PointKind.MINIMUM_OR_FLAT, f"minimum or flat ({where})")


def module_hessian(loss, **options) -> ModuleHessian:
    """``module_hessian_job`` run to completion (headless callers and tests)."""
    return run_to_completion(module_hessian_job(loss, **options))
