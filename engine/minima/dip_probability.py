"""How likely a random-direction slice is to show a saddle: predicted and observed dip fractions.

A slice draws ``L(θ + t d)`` for Gaussian directions d. At a critical point the curve starts as
``L* + ½ t² dᵀHd``, so it dips below L* (to second order) exactly when dᵀHd < 0; the norm of d
does not change that sign. For a *family* of directions d = V z, z ~ N(0, I_k) (V selects some
parameters, or spans some eigenvectors), dᵀHd = zᵀ (VᵀHV) z = Σ λ_i w_i² with λ the eigenvalues
of the restricted Hessian VᵀHV and w iid standard normal. Its chance of being negative is a
Gaussian quadratic form's distribution at 0, computed exactly by Imhof's inversion formula.

A saddle with one small negative eigenvalue among hundreds of large positive ones is almost
never seen over all parameters (issue 12: 7e-9 at the 2—21—21—1 saddle), but can be seen often
in a family aligned with the split neurons. The observed fractions check the prediction: one
counts dᵀHd < 0 (the same second-order event, sampled), the other whether the actual loss curve
goes below L* on a grid of t (what a plot shows, higher orders included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_integrate, torch
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, run_to_completion
from engine.core.runtime import configure_torch_threads
from engine.landscape import hessian
from engine.landscape.directions import gaussian_draws, unit_rows
from engine.minima.construction import EIG_TOL_REL

FAMILY_KINDS = ("all", "layer", "neuron", "pair")
# Default slice grid for the curve check: small |t| so that second order dominates, as in a plot
# zoomed to the critical point; t = 0 is left out (it is L* itself).
DEFAULT_TS = np.array([-0.1, -0.05, -0.02, -0.01, 0.01, 0.02, 0.05, 0.1])
# Widest family predicted from HVPs on a big net: dim HVPs and a dim³ eigensolve, as costly as
# the full Hessian of a net at hessian.FULL_SPECTRUM_MAX_PARAMS.
MAX_FAMILY_DIM = hessian.FULL_SPECTRUM_MAX_PARAMS
# Columns of V per batched HVP when restricting a big net's Hessian: 64 × 41k floats = 21 MB.
HVP_BATCH = 64
# Parameter vectors per batch of loss evaluations (directions × len(ts)): about engine.landscape.slices's
# cache-sized chunks, and a progress yield every few tens of ms on 2—21—21—1.
CURVE_POINTS = 2000


def negative_probability(eigenvalues, zero_tol_rel: float = EIG_TOL_REL) -> float:
    """P(Σ λ_i w_i² < 0) for iid standard normal w, by Imhof (1961) at x = 0:

        P(Q < 0) = ½ − (1/π) ∫₀^∞ sin θ(u) / (u ρ(u)) du,
        θ(u) = ½ Σ arctan(λ_i u),   ρ(u) = Π (1 + λ_i² u²)^¼.

    Eigenvalues with |λ| ≤ zero_tol_rel · max|λ| are rounding, not curvature, and are dropped;
    all remaining ≥ 0 gives exactly 0, all ≤ 0 exactly 1.
    """
    lam = np.asarray(eigenvalues, dtype=np.float64).ravel()
    if lam.size == 0 or not np.isfinite(lam).all():
        raise EngineInputError("negative_probability needs a non-empty list of finite eigenvalues")
    top = np.abs(lam).max()
    if top == 0:
        raise EngineInputError("every eigenvalue is zero: dᵀHd is 0 for every direction")
    lam = lam[np.abs(lam) > zero_tol_rel * top] / top  # the sign of Q is scale-free
    if (lam > 0).all():
        return 0.0
    if (lam < 0).all():
        return 1.0
    return float(np.clip(0.5 - _imhof_integral(lam) / np.pi, 0.0, 1.0))


def _imhof_integral(lam: np.ndarray) -> float:
    """∫₀^∞ sin θ(u) / (u ρ(u)) du for eigenvalues scaled to max|λ| = 1.

    Integrated in s = ln u, where the integrand sin θ / ρ is smooth on every scale 1/|λ_i|, one
    quad per factor-of-4 band so that none is skipped. The far tail decays only like u^(−1−m/2)
    (m = number of eigenvalues): for λ = (1, −3e-6) the part beyond u = 4/min|λ| is 2.6e-5, which
    scipy's quad on [U, ∞) returned as 4e-11, so the bands run on until a bound on the tail is
    below 1e-15 instead: for u ≥ U ≥ 1/min|λ|, ρ(u) ≥ ρ(U) (u/U)^(m/2) 2^(−m/4).
    """
    m = len(lam)
    log_rho = lambda u: 0.25 * np.log1p((lam * u) ** 2).sum()
    integrand = lambda s: np.sin(0.5 * np.arctan(lam * np.exp(s)).sum()) * np.exp(-log_rho(np.exp(s)))
    u0 = 1e-8  # below it sin θ(u)/u = ½Σλ + O(u²): that piece is ½Σλ·u0 in closed form
    U = 4 / np.abs(lam).min()
    while 0.25 * m * np.log(2) + np.log(2 / m) - log_rho(U) > np.log(1e-15):
        U *= 4
    edges = np.arange(np.log(u0), np.log(U) + np.log(4), np.log(4))
    total = 0.5 * lam.sum() * u0
    for a, b in zip(edges[:-1], edges[1:]):
        total += scipy_integrate.quad(integrand, a, b, epsabs=1e-16, epsrel=1e-12, limit=100)[0]
    return total


@dataclass(frozen=True, eq=False)
class Family:
    """Directions d = V z with z ~ N(0, I): ``indices`` (V selects parameters) or ``basis`` (P, k)."""

    name: str
    n_params: int
    indices: np.ndarray | None = None
    basis: np.ndarray | None = None

    @property
    def dim(self) -> int:
        return len(self.indices) if self.indices is not None else self.basis.shape[1]

    def directions(self, z: np.ndarray) -> np.ndarray:
        """Rows of ``z`` (n, dim) as full parameter directions (n, P)."""
        if self.basis is not None:
            return z @ self.basis.T
        d = np.zeros((len(z), self.n_params))
        d[:, self.indices] = z
        return d

    def restrict(self, H: np.ndarray) -> np.ndarray:
        """VᵀHV, the Hessian of L(θ + V z) in z."""
        if self.basis is not None:
            return self.basis.T @ H @ self.basis
        return H[np.ix_(self.indices, self.indices)]


def family_indices(
    arch: Arch, kind: str, layer: int | None = None, neuron: int | None = None, pair: tuple | None = None
) -> np.ndarray:
    """Flat parameter indices of a family: "all"; "layer" (W_l and b_l of ``layer``); "neuron"
    (incoming weights and bias of ``neuron`` in ``layer``); "pair" (those of both neurons in
    ``pair`` of ``layer``, e.g. a split neuron and its copy)."""
    if kind == "all":
        return np.arange(arch.n_params)
    if kind not in FAMILY_KINDS:
        raise EngineInputError(f"unknown direction family {kind!r}; choose one of: {', '.join(FAMILY_KINDS)}")
    if layer is None or not 1 <= layer <= arch.n_layers:
        raise EngineInputError(f"family {kind!r} needs a layer in 1..{arch.n_layers}, got {layer!r}")
    if kind == "layer":
        parts = [np.arange(arch.block(f"W{layer}").slice.start, arch.block(f"W{layer}").slice.stop)]
        if arch.bias:
            parts.append(np.arange(arch.block(f"b{layer}").slice.start, arch.block(f"b{layer}").slice.stop))
        return np.concatenate(parts)
    neurons = (neuron,) if kind == "neuron" else tuple(pair or ())
    if kind == "pair" and (len(neurons) != 2 or neurons[0] == neurons[1]):
        raise EngineInputError(f"family 'pair' needs two different neurons, got {pair!r}")
    first = sum(arch.widths[1:layer])  # neuron_blocks() lists layer 1's neurons, then layer 2's, …
    blocks = arch.neuron_blocks()
    for r in neurons:
        if r is None or not 0 <= r < arch.widths[layer]:
            raise EngineInputError(f"neuron {r!r} does not exist in layer {layer} (width {arch.widths[layer]})")
    return np.concatenate([blocks[first + r] for r in neurons])


def index_family(arch: Arch, kind: str, **where) -> Family:
    """``family_indices`` as a Family, named for display (e.g. "pair 1:(0, 20)")."""
    idx = family_indices(arch, kind, **where)
    label = {
        "all": "all parameters",
        "layer": f"layer {where.get('layer')}",
        "neuron": f"neuron {where.get('layer')}:{where.get('neuron')}",
        "pair": f"pair {where.get('layer')}:{tuple(where.get('pair') or ())}",
    }[kind]
    return Family(label, arch.n_params, indices=idx)


def eigenvector_family(arch: Arch, theta, X, Y, k: int, **report_options) -> Family:
    """The span of the k lowest Hessian eigenvectors (Lanczos beyond hessian.FULL_SPECTRUM_MAX_PARAMS)."""
    report = hessian.hessian_report(arch, theta, X, Y, k=k, vectors=True, **report_options)
    return Family(f"{k} lowest eigenvectors", arch.n_params, basis=report.lowest_vectors)


def restricted_hessian(
    arch: Arch,
    theta,
    X,
    Y,
    family: Family,
    H: np.ndarray | None = None,
    max_full: int = hessian.FULL_SPECTRUM_MAX_PARAMS,
) -> np.ndarray:
    """VᵀHV from H (given, or formed when the net has at most ``max_full`` parameters), else
    from HVPs with the family's columns only."""
    if H is None and arch.n_params <= max_full:
        H = mlp.hessian(arch, theta, X, Y)
    if H is not None:
        return family.restrict(H)
    if family.dim > MAX_FAMILY_DIM:
        raise EngineInputError(
            f"family {family.name!r} spans {family.dim} dimensions; an exact prediction "
            f"needs at most {MAX_FAMILY_DIM} (choose a layer, neuron or pair)"
        )
    hvp = hessian.hvp_function(arch, theta, X, Y)
    R = np.empty((family.dim, family.dim))
    for j0 in range(0, family.dim, HVP_BATCH):  # a batch of V's columns at a time: (batch, P) memory
        V = family.directions(np.eye(family.dim)[j0 : j0 + HVP_BATCH])
        HV = hvp(torch.from_numpy(V)).numpy()
        R[j0 : j0 + len(V)] = HV[:, family.indices] if family.basis is None else HV @ family.basis
    return 0.5 * (R + R.T)


def predicted_dip_fraction(H_family: np.ndarray, zero_tol_rel: float = EIG_TOL_REL) -> float:
    """P(dᵀHd < 0) for the family's Gaussian d, from its restricted Hessian."""
    return negative_probability(np.linalg.eigvalsh(H_family), zero_tol_rel)


@dataclass(frozen=True)
class DipFractions:
    family: str
    dim: int
    n: int
    predicted: float  # Imhof, second order
    quadratic: float  # sampled fraction with dᵀHd < 0 (same event as predicted)
    curve: float  # sampled fraction whose loss curve goes below L* − margin on ts
    quadratic_stderr: float  # √(p(1−p)/n) at the predicted p: the yardstick for agreement
    ts: tuple


def dip_fractions(arch: Arch, theta, X, Y, family: Family, **options) -> DipFractions:
    """``dip_fractions_job`` run to completion (headless callers and tests)."""
    return run_to_completion(dip_fractions_job(arch, theta, X, Y, family, **options))


def dip_fractions_job(
    arch: Arch,
    theta,
    X,
    Y,
    family: Family,
    n: int = 20_000,
    ts=DEFAULT_TS,
    seed: int = 0,
    H: np.ndarray | None = None,
    margin: float | None = None,
) -> Job[DipFractions]:
    """Job: predicted and observed dip fractions of ``n`` unit-norm directions from ``family``.

    A curve dips when min over ``ts`` of L(θ + t d) < L* − ``margin`` (default 1e-12·max(1, L*),
    above float rounding of L so flat directions do not count as dips).
    """
    if n < 1:
        raise EngineInputError(f"number of directions n = {n} must be at least 1")
    configure_torch_threads()
    yield Progress(0.0, f"Hessian restricted to {family.name}")
    HF = restricted_hessian(arch, theta, X, Y, family, H)
    predicted = predicted_dip_fraction(HF)
    yield Progress(0.0, f"predicted {predicted:.3g}; sampling {n} directions", partial={"predicted": predicted})
    z = np.random.default_rng(seed).standard_normal((n, family.dim))
    quadratic = float((((z @ HF) * z).sum(1) < 0).mean())  # a BLAS product: einsum crawled at dim 504
    L_star = mlp.loss(arch, theta, X, Y)
    margin = 1e-12 * max(1.0, abs(L_star)) if margin is None else margin
    ts_t = torch.as_tensor(np.asarray(ts, float))
    th, Xt, yt = mlp.tensors(theta, X, mlp.as_targets(Y))
    dips, chunk = 0, max(1, CURVE_POINTS // len(ts_t))
    for i0 in range(0, n, chunk):
        d = family.directions(z[i0 : i0 + chunk])
        d = torch.from_numpy(d / np.linalg.norm(d, axis=1, keepdims=True))
        points = th + ts_t[None, :, None] * d[:, None, :]  # (chunk, len(ts), P)
        losses = mlp.loss_batch(arch, points.reshape(-1, arch.n_params), Xt, yt).reshape(len(d), -1)
        dips += int((losses.min(1).values < L_star - margin).sum())
        done = min(i0 + chunk, n)
        yield Progress(done / n, f"loss curves: {done}/{n} directions", partial={"curve_dips": dips, "done": done})
    se = float(np.sqrt(max(predicted * (1 - predicted), 0.0) / n))
    return DipFractions(family.name, family.dim, n, predicted, quadratic, dips / n, se, tuple(float(t) for t in ts))


SLICE_FAMILIES = ("all", "layer", "neuron", "pair", "eigen")


def slice_family(
    arch: Arch, theta, X, Y, kind: str, layer: int = 1, neuron: int = 0, pair: tuple | None = None, k: int = 5
) -> Family:
    """The family a slice panel draws its directions from: all parameters, one layer's block, one
    neuron's incoming weights, the split pair's incoming weights (``pair`` = (layer, origin, copy)),
    or the span of the ``k`` lowest Hessian eigenvectors ("eigen")."""
    if kind == "eigen":
        return eigenvector_family(arch, theta, X, Y, k)
    if kind == "pair":
        if pair is None:
            raise EngineInputError("directions over 'the split pair' need a split: split a neuron first")
        return index_family(arch, "pair", layer=pair[0], pair=tuple(pair[1:]))
    if kind not in SLICE_FAMILIES:
        raise EngineInputError(f"unknown direction family {kind!r}; choose one of: {', '.join(SLICE_FAMILIES)}")
    return index_family(
        arch,
        kind,
        **({"layer": layer} if kind == "layer" else {"layer": layer, "neuron": neuron} if kind == "neuron" else {}),
    )


def family_directions(family: Family, K: int, seed: int = 0) -> np.ndarray:
    """K unit-norm directions d = V z / ‖V z‖, z ~ N(0, I): the distribution the prediction is for."""
    return unit_rows(family.directions(gaussian_draws(K, family.dim, seed, "number of directions K =")))


def predicted_for_family(arch: Arch, theta, X, Y, family: Family) -> float | None:
    """The predicted dip fraction, or None when the family is too wide for an exact one."""
    if family.dim > MAX_FAMILY_DIM:
        return None
    return predicted_dip_fraction(restricted_hessian(arch, theta, X, Y, family))
