"""Local minima of small nets, the γ-embedding, B and D, and the Theorem 9 verdict (docs/MATH.md B2–B7, B9).

A construction trains a small net to a critical point (restarting until its minimum is strict and
the B matrices of the neurons to be split are definite), then splits neurons by γ^r_λ and
verifies every step with the full Hessian. Results are frozen dataclasses with typed verdicts
(engine.minima.verdicts); every Hessian and L-BFGS run goes through progress.wait_for, so the jobs
yield as often as the job contract asks however large the net.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_optimize
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.core.runtime import configure_torch_threads
from engine.landscape.hessian import full_spectrum
from engine.minima.verdicts import INSIDE_0_1, OUTSIDE_0_1, Definiteness, Interval, Verdict

# An eigenvalue counts as zero when |e| ≤ EIG_TOL_REL · max(1, max|e|). Rounding in a float64
# Hessian of these nets is ~1e-14 (docs/MATH.md B7 saw −4e−14), genuine curvatures are ≥ 1e−7.
EIG_TOL_REL = 1e-9
# D counts as zero below this norm: at a critical point it is a gradient-like quantity (~1e-9).
D_TOL = 1e-6
GRAD_TOL = 1e-8


@dataclass(frozen=True)
class HessianSummary:
    min: float
    max: float
    n_zero: int
    n_negative: int
    tol: float

    @staticmethod
    def of(eigs: np.ndarray) -> HessianSummary:
        tol = EIG_TOL_REL * max(1.0, float(np.abs(eigs).max()))
        return HessianSummary(
            float(eigs.min()), float(eigs.max()), int((np.abs(eigs) <= tol).sum()), int((eigs < -tol).sum()), tol
        )


def hessian_spectrum(arch: Arch, theta, X, Y) -> tuple[np.ndarray, HessianSummary]:
    """Sorted eigenvalues of the full Hessian and their summary (``tol`` is what counts as zero)."""
    _, eigs, _ = full_spectrum(arch, theta, X, Y)
    return eigs, HessianSummary.of(eigs)


def critical_point_kind(h: HessianSummary, grad_norm: float) -> Verdict:
    """The one verdict rule of the app (command line, steps table, panels): a point is a saddle or a
    minimum only where it is critical (‖∇L‖ < GRAD_TOL); elsewhere the Hessian's inertia says nothing."""
    if not grad_norm < GRAD_TOL:
        return Verdict.NOT_CRITICAL
    if h.n_negative:
        return Verdict.SADDLE
    return Verdict.DEGENERATE_MINIMUM if h.n_zero else Verdict.STRICT_MINIMUM


def definiteness(eigs: np.ndarray) -> Definiteness:
    tol = EIG_TOL_REL * max(1.0, float(np.abs(eigs).max())) if eigs.size else 0.0
    pos, neg = (eigs > tol).sum(), (eigs < -tol).sum()
    if pos == eigs.size:
        return Definiteness.POSITIVE_DEFINITE
    if neg == eigs.size:
        return Definiteness.NEGATIVE_DEFINITE
    if pos and neg:
        return Definiteness.INDEFINITE
    if pos:
        return Definiteness.POSITIVE_SEMIDEFINITE
    return Definiteness.NEGATIVE_SEMIDEFINITE if neg else Definiteness.ZERO


@dataclass(frozen=True)
class NeuronBD:
    layer: int
    neuron: int
    B: np.ndarray  # (n_in, n_in), n_in = n_{l-1} (+1 with biases)
    B_eigs: np.ndarray
    badge: Definiteness  # of B
    D: np.ndarray  # (n_in, n_{l+1}); D[i, s] = D^{r,s}_i
    D_norm: float

    @property
    def admits_split(self) -> bool:
        """Theorem 9 applies to a split of this neuron (B4): B definite and D = 0."""
        return self.badge.definite and self.D_norm <= D_TOL


def neuron_bd(arch: Arch, theta, X, Y) -> list[NeuronBD]:
    """B and D (B3) for every hidden neuron, from one forward/backward pass."""
    import torch

    t, Xt, yt = mlp.tensors(theta, X, mlp.as_targets(Y))
    t.requires_grad_(True)
    f, zs, acts = mlp.forward_batch(arch, t.unsqueeze(0), Xt, keep=True)
    # δ_{α,s} = ∂ℓ_α/∂z_{l+1,s}(x_α): the summed loss's gradient w.r.t. pre-activations is per-sample.
    deltas = torch.autograd.grad(((f - yt) ** 2).sum(), zs)
    Ws, _ = mlp.unpack(arch, t.detach())
    out = []
    for l in range(1, arch.n_layers):
        a = Xt if l == 1 else acts[l - 1][0].detach().T  # (N, n_{l-1}); acts[0] is the unbatched Xᵀ
        if arch.bias:
            a = torch.cat([a, torch.ones(len(a), 1, dtype=a.dtype)], 1)
        delta = deltas[l][0].detach()  # (n_{l+1}, N)
        z = zs[l - 1][0].detach()  # (n_l, N)
        for r in range(arch.widths[l]):
            back = (delta * Ws[l][:, r : r + 1]).sum(0)  # Σ_s δ_{α,s} v_{s,r}
            B = (a.T * (back * mlp.sigma(arch.activation, z[r], 2))) @ a
            D = (a.T * mlp.sigma(arch.activation, z[r], 1)) @ delta.T
            B, D = B.numpy(), D.numpy()
            eigs = np.linalg.eigvalsh(B)
            out.append(NeuronBD(l, r, B, eigs, definiteness(eigs), D, float(np.linalg.norm(D))))
    return out


def train_to_critical(arch: Arch, X, Y, theta0, gtol: float = GRAD_TOL, newton_steps: int = 8, stop=None):
    """L-BFGS to near-convergence, then Newton steps (least squares if H is singular) to polish.
    ``stop`` (a threading.Event, set when the job is cancelled) ends the work early."""
    fun = lambda p: mlp.loss_and_grad(arch, p, X, Y)
    configure_torch_threads()  # one BLAS thread: a multi-threaded OpenBLAS made L-BFGS many times slower

    def callback(intermediate_result):
        if stop is not None and stop.is_set():
            raise StopIteration  # scipy ends the run and returns the current point

    res = scipy_optimize.minimize(
        fun,
        np.asarray(theta0, float),
        jac=True,
        method="L-BFGS-B",
        callback=callback,
        options=dict(maxiter=3000, gtol=1e-7, ftol=1e-15),
    )
    theta = res.x
    value, g = fun(theta)
    for _ in range(newton_steps):
        if np.linalg.norm(g) < 1e-3 * gtol or (stop is not None and stop.is_set()):
            break
        step = np.linalg.lstsq(mlp.hessian(arch, theta, X, Y), g, rcond=None)[0]
        cand_value, cand_g = fun(theta - step)
        if not np.isfinite(cand_value) or np.linalg.norm(cand_g) >= np.linalg.norm(g):
            break
        theta, value, g = theta - step, cand_value, cand_g
    return theta, value, float(np.linalg.norm(g))


@dataclass(frozen=True)
class Split:
    layer: int
    origin: int  # neuron r that was split
    new: int  # index of the added neuron (appended last in its layer)
    lam: float


def embed(arch: Arch, theta, layer: int, neuron: int, lam: float) -> tuple[Arch, np.ndarray]:
    """γ^r_λ (B2): append a copy of neuron r of hidden layer ``layer``; split its outgoing weights λ : 1−λ."""
    if arch.n_layers < 2:
        raise EngineInputError(f"network {arch.widths} has no hidden layer to split a neuron in")
    if not 1 <= layer < arch.n_layers:
        raise EngineInputError(f"layer {layer} is not a hidden layer of {arch.widths}; use 1..{arch.n_layers - 1}")
    if not 0 <= neuron < arch.widths[layer]:
        raise EngineInputError(
            f"neuron {neuron + 1} does not exist in layer {layer}: its neurons are 1..{arch.widths[layer]}"
        )
    Ws, bs = mlp.unpack(arch, np.asarray(theta, float))
    Ws, bs = [W.copy() for W in Ws], [None if b is None else b.copy() for b in bs]
    i = layer - 1  # list index of W_layer
    Ws[i] = np.vstack([Ws[i], Ws[i][neuron]])
    if arch.bias:
        bs[i] = np.append(bs[i], bs[i][neuron])
    v = Ws[i + 1][:, neuron].copy()
    Ws[i + 1] = np.hstack([Ws[i + 1], lam * v[:, None]])
    Ws[i + 1][:, neuron] = (1 - lam) * v
    new_arch = Arch(
        arch.widths[:layer] + (arch.widths[layer] + 1,) + arch.widths[layer + 1 :], arch.activation, arch.bias
    )
    return new_arch, mlp.pack(Ws, bs if arch.bias else None)


def choose_split(
    arch: Arch, theta, X, Y, layer: int, lam: float = 0.5, lam_outside: float = -1.0, neuron: int = 0
) -> tuple[int, float]:
    """Which copy of ``neuron`` to split next, and with which λ (B7).

    Prefer copies whose B is positive (semi)definite, split with ``lam`` in (0, 1), taking the one
    with the largest outgoing weight so the copies stay balanced and the curvature λ(1−λ)B does
    not vanish. If every copy's B is negative, split once with ``lam_outside`` ∉ [0, 1]: the new
    copy's outgoing weight has the opposite sign, hence a positive B, and the rest follow from it.
    """
    Ws, bs = mlp.unpack(arch, np.asarray(theta, float))
    rows = Ws[layer - 1] if bs[0] is None else np.column_stack([Ws[layer - 1], bs[layer - 1]])
    copies = np.flatnonzero((rows == rows[neuron]).all(1))
    badge = {n.neuron: n.badge for n in neuron_bd(arch, theta, X, Y) if n.layer == layer}
    weight = np.linalg.norm(Ws[layer], axis=0)
    for sign, lam_used in ((1, lam), (-1, lam_outside)):
        ok = [c for c in copies if badge[c].sign == sign]
        if ok:
            return int(max(ok, key=lambda c: weight[c])), lam_used
    raise EngineInputError(
        f"no copy of neuron {neuron + 1} in layer {layer} has a semidefinite, nonzero B "
        f"({badge[neuron]}), so no split gives a region of minima"
    )


def set_split_lambda(arch: Arch, theta, split: Split, lam: float) -> np.ndarray:
    """Re-divide the pair's total outgoing weight as λ : 1−λ; the function is unchanged."""
    theta = np.array(theta, float)
    W = theta[arch.block(f"W{split.layer + 1}").slice].reshape(arch.block(f"W{split.layer + 1}").shape)
    total = W[:, split.new] + W[:, split.origin]
    W[:, split.new], W[:, split.origin] = lam * total, (1 - lam) * total
    return theta


@dataclass(frozen=True)
class Verification:
    lam: float
    interval: Interval  # I of Theorem 9 for this split
    B_eigs: np.ndarray  # of the pair (= the origin's B before the split)
    D_norm: float
    loss: float
    hessian: HessianSummary
    verdict: Verdict
    unmet: tuple[str, ...] = ()  # why Theorem 9 does not apply (empty when it does)
    pair_B: np.ndarray = field(repr=False, default=None)
    hessian_eigs: np.ndarray = field(repr=False, default=None)  # the full spectrum at this λ


def pair_B(arch: Arch, theta, X, Y, split: Split) -> tuple[np.ndarray, float]:
    """B of the pair (new, origin) and ‖D‖ of the origin, from one forward/backward pass (no Hessian).

    B is linear in the outgoing weights and the pair shares z and a, so B_new + B_r is the
    origin's B before the split; D does not depend on the outgoing weights at all."""
    bd = {(n.layer, n.neuron): n for n in neuron_bd(arch, theta, X, Y)}
    return bd[split.layer, split.new].B + bd[split.layer, split.origin].B, bd[split.layer, split.origin].D_norm


def theorem9_interval(B_eigs: np.ndarray) -> Interval:
    """I from the sign of B: (0, 1) for B ≥ 0, (−∞, 0) ∪ (1, ∞) for B ≤ 0 (semidefinite counts: a
    split of copied inputs has a kernel in B), none for an indefinite or zero B."""
    return {1: INSIDE_0_1, -1: OUTSIDE_0_1}.get(definiteness(B_eigs).sign, Interval())


def verify_split(arch: Arch, theta, X, Y, split: Split, eigs: np.ndarray | None = None) -> Verification:
    """Theorem 9 (B4–B5) for the pair (new, origin) of ``split`` at the current λ (one full Hessian
    unless its eigenvalues ``eigs`` are given)."""
    B, D_norm = pair_B(arch, theta, X, Y, split)
    B_eigs = np.linalg.eigvalsh(B)
    interval = theorem9_interval(B_eigs)
    lam = split_lambda(arch, theta, split)
    if eigs is None:
        eigs = hessian_spectrum(arch, theta, X, Y)[0]
    h = HessianSummary.of(eigs)
    value, g = mlp.loss_and_grad(arch, theta, X, Y)
    grad_norm = float(np.linalg.norm(g))
    unmet = tuple(
        msg
        for ok, msg in [
            (grad_norm < GRAD_TOL, f"not a critical point (‖∇L‖ = {grad_norm:.2e})"),
            (not interval.empty, f"B is {definiteness(B_eigs)}"),
            (D_norm <= D_TOL, f"D ≠ 0 (norm {D_norm:.2e})"),
            (interval.contains(lam), f"λ = {lam:g} outside I = {interval}"),
        ]
        if not ok
    )
    verdict = critical_point_kind(h, grad_norm)
    if verdict is not Verdict.NOT_CRITICAL and verdict is not Verdict.SADDLE:
        verdict = Verdict.CONDITIONS_NOT_MET if unmet else Verdict.NON_ATTRACTING
    return Verification(lam, interval, B_eigs, D_norm, value, h, verdict, unmet, B, eigs)


def split_lambda(arch: Arch, theta, split: Split) -> float:
    """The pair's current λ (later splits of the same neuron change it from ``split.lam``)."""
    W = np.asarray(theta)[arch.block(f"W{split.layer + 1}").slice].reshape(arch.block(f"W{split.layer + 1}").shape)
    total = W[:, split.new] + W[:, split.origin]
    k = int(np.argmax(np.abs(total)))
    return float(W[k, split.new] / total[k])


def degenerate_direction(arch: Arch, theta, split: Split) -> np.ndarray:
    """B9: the unit vector that moves λ of ``split`` and nothing else, so the function (and the
    loss) is constant along it: θ + s·d = set_split_lambda(θ, λ + s / (√2 ‖v̄‖)), v̄ the pair's
    total outgoing weight."""
    d = np.zeros(arch.n_params)
    blk = arch.block(f"W{split.layer + 1}")
    W, V = d[blk.slice].reshape(blk.shape), np.asarray(theta, float)[blk.slice].reshape(blk.shape)
    total = V[:, split.new] + V[:, split.origin]
    if not np.any(total):
        raise EngineInputError(f"split {split} has zero outgoing weight: λ is not defined")
    W[:, split.new], W[:, split.origin] = total, -total
    return d / np.linalg.norm(d)


def descent_direction(arch: Arch, theta, split: Split, B: np.ndarray) -> np.ndarray:
    """B6: ε_d = e, ε̄ = 0 for the pair, with e the eigenvector of B whose curvature λ(1−λ)e·Be is
    most negative; unit norm, flat in the documented layout."""
    lam = split_lambda(arch, theta, split)
    vals, vecs = np.linalg.eigh(lam * (1 - lam) * B)
    e = vecs[:, 0]
    d = np.zeros(arch.n_params)
    W = d[arch.block(f"W{split.layer}").slice].reshape(arch.block(f"W{split.layer}").shape)
    n_w = W.shape[1]
    W[split.new] += (1 - lam) * e[:n_w]
    W[split.origin] -= lam * e[:n_w]
    if arch.bias:
        b = d[arch.block(f"b{split.layer}").slice]
        b[split.new] += (1 - lam) * e[n_w]
        b[split.origin] -= lam * e[n_w]
    return d / np.linalg.norm(d)


@dataclass(frozen=True)
class Step:
    description: str
    widths: tuple
    loss: float
    grad_norm: float
    hessian: HessianSummary
    verdict: Verdict


@dataclass(frozen=True)
class Restart:
    index: int
    loss: float
    grad_norm: float
    accepted: bool
    reason: str  # why it was rejected ("" when accepted)


@dataclass(frozen=True)
class Construction:
    arch: Arch  # final (wide) network
    params: np.ndarray  # final flat vector
    X: np.ndarray
    Y: np.ndarray
    small_arch: Arch
    small_params: np.ndarray
    small_neurons: tuple  # NeuronBD of the small net
    neurons: tuple  # NeuronBD of the final net
    restarts: tuple  # Restart records of the search
    steps: tuple  # Step records: the small net, then one per split
    splits: tuple  # Split history
    verification: Verification | None  # of the last split

    @property
    def activation(self) -> str:
        return self.arch.activation

    @property
    def weights(self) -> list:
        """W1, W2, … of the final net, (n_l, n_{l−1}) each."""
        return [np.array(W) for W in mlp.unpack(self.arch, self.params)[0]]

    @property
    def split_lams(self) -> list[float]:
        """Each split's current λ (later splits of the same neuron change it from ``Split.lam``)."""
        return [split_lambda(self.arch, self.params, s) for s in self.splits]


def spectrum_job(arch: Arch, theta, X, Y, message: str = "Hessian") -> Job[tuple[np.ndarray, HessianSummary]]:
    """hessian_spectrum as a job: the Hessian runs on a helper thread while the job keeps yielding."""
    return (yield from wait_for(lambda stop: hessian_spectrum(arch, theta, X, Y), message))


def _restart(arch: Arch, X, Y, theta0, split_layers, stop):
    """One restart of the search: (theta, loss, grad_norm, reason it is rejected or "")."""
    theta, value, gnorm = train_to_critical(arch, X, Y, theta0, stop=stop)
    if gnorm >= GRAD_TOL:
        return theta, value, gnorm, f"not converged (grad norm {gnorm:.1e})"
    kind = critical_point_kind(hessian_spectrum(arch, theta, X, Y)[1], gnorm)
    if kind is not Verdict.STRICT_MINIMUM:
        return theta, value, gnorm, kind.value
    bd = {(n.layer, n.neuron): n for n in neuron_bd(arch, theta, X, Y)}
    bad = [
        f"B({l}) {bd[l, 0].badge} (eigs {np.array2string(bd[l, 0].B_eigs, precision=2)})"
        for l in split_layers
        if not bd[l, 0].badge.definite
    ]
    return theta, value, gnorm, "; ".join(bad)


def search_minimum_job(
    arch: Arch, X, Y, split_layers=(1,), seed: int = 0, max_restarts: int = 100, init_scale: float = 2.0
) -> Job[tuple]:
    """Restart from random points until a strict minimum whose neuron-0 B is definite (either sign;
    Theorem 9 has an interval for each) in every layer of ``split_layers``.
    Returns (theta, loss, grad_norm, restarts)."""
    configure_torch_threads()
    X, Y = mlp.check_data(arch, X, Y)
    rng = np.random.default_rng(seed)
    restarts = []
    for k in range(max_restarts):
        theta0 = mlp.init_params(arch, rng, init_scale)
        theta, value, gnorm, reason = yield from wait_for(
            lambda stop: _restart(arch, X, Y, theta0, split_layers, stop), f"restart {k + 1}"
        )
        restarts.append(Restart(k, value, gnorm, not reason, reason))
        yield Progress((k + 1) / max_restarts, f"restart {k + 1}: " + (reason or "accepted"), tuple(restarts))
        if not reason:
            return theta, value, gnorm, tuple(restarts)
    raise EngineInputError(
        f"no strict minimum with definite B in layers {list(split_layers)} after "
        f"{max_restarts} restarts of {arch.widths}; try another seed or more restarts"
    )


def step_of(description: str, arch: Arch, theta, X, Y, verdict: Verdict | None = None, eigs=None) -> Step:
    """One row of the steps table; ``eigs`` (the Hessian's eigenvalues) when already computed."""
    value, g = mlp.loss_and_grad(arch, theta, X, Y)
    if eigs is None:
        eigs = hessian_spectrum(arch, theta, X, Y)[0]
    h, grad_norm = HessianSummary.of(eigs), float(np.linalg.norm(g))
    return Step(description, arch.widths, value, grad_norm, h, verdict or critical_point_kind(h, grad_norm))


def _split_once(arch: Arch, theta, X, Y, layer: int, lam: float, lam_outside: float):
    """Choose, embed and verify one split: (arch, theta, Split, Verification, Step); one Hessian."""
    r, lam_used = choose_split(arch, theta, X, Y, layer, lam, lam_outside)
    arch, theta = embed(arch, theta, layer, r, lam_used)
    split = Split(layer, r, arch.widths[layer] - 1, lam_used)
    eigs = hessian_spectrum(arch, theta, X, Y)[0]
    verification = verify_split(arch, theta, X, Y, split, eigs)
    step = step_of(
        f"split neuron {r + 1} of layer {layer} (λ={lam_used:g})", arch, theta, X, Y, verification.verdict, eigs
    )
    return arch, theta, split, verification, step


def construct_job(
    X,
    Y,
    small_widths=(2, 1, 1, 1),
    activation: str = "sigmoid",
    bias: bool = False,
    schedule=((1, 20), (2, 20)),
    lam: float = 0.5,
    lam_outside: float = -1.0,
    seed: int = 0,
    max_restarts: int = 100,
    theta0=None,
) -> Job[Construction]:
    """Small minimum (searched, or trained from ``theta0``), then ``schedule``: (layer, count) pairs of
    splits of neuron 0's copies in that layer (see ``choose_split``). Every step is verified.
    Partials are the tuple of Steps so far."""
    configure_torch_threads()
    arch = Arch(tuple(small_widths), activation, bias)
    X, Y = mlp.check_data(arch, X, Y)
    schedule = [(int(l), int(c)) for l, c in schedule]
    for l, _ in schedule:
        if not 1 <= l < arch.n_layers:
            raise EngineInputError(
                f"schedule layer {l} is not a hidden layer of {arch.widths}"
                + ("" if arch.n_layers > 1 else " (it has no hidden layer)")
            )
    if theta0 is None:
        theta, _, _, restarts = yield from subjob(
            search_minimum_job(arch, X, Y, sorted({l for l, _ in schedule}), seed, max_restarts),
            0.0,
            0.3,
            "search: ",
            partial=lambda _: None,
        )
    else:
        theta = (yield from wait_for(lambda stop: train_to_critical(arch, X, Y, theta0, stop=stop), "training"))[0]
        restarts = ()
    small_arch, small_theta = arch, theta
    first = yield from wait_for(
        lambda stop: step_of(f"trained {'—'.join(map(str, arch.widths))}", arch, theta, X, Y),
        "Hessian of the small net",
    )
    steps, splits, verification = [first], [], None
    total = sum(c for _, c in schedule)
    for layer, count in schedule:
        for _ in range(count):
            arch, theta, split, verification, step = yield from wait_for(
                lambda stop: _split_once(arch, theta, X, Y, layer, lam, lam_outside), f"splitting layer {layer}"
            )
            splits.append(split)
            steps.append(step)
            yield Progress(
                0.3 + 0.7 * len(splits) / max(total, 1),
                f"{'—'.join(map(str, arch.widths))}: {verification.verdict}",
                tuple(steps),
            )
    return Construction(
        arch,
        theta,
        X,
        Y,
        small_arch,
        small_theta,
        tuple(neuron_bd(small_arch, small_theta, X, Y)),
        tuple(neuron_bd(arch, theta, X, Y)),
        restarts,
        tuple(steps),
        tuple(splits),
        verification,
    )


@dataclass(frozen=True)
class LambdaProbe:
    lam: float
    params: np.ndarray
    loss: float
    hessian_min: float
    verdict: Verdict
    unmet: tuple[str, ...] = ()
    split: int = -1  # index into Construction.splits of the split whose λ moved
    hessian_eigs: np.ndarray | None = None  # the full spectrum at θ(λ), what the spectrum view shows
    density: object = None  # past the full-Hessian limit: the SLQ density at θ(λ) (engine.landscape.density)


def _split_at(c: Construction, split: int) -> Split:
    if not c.splits:
        raise EngineInputError("this construction has no split whose λ could be moved")
    if not -len(c.splits) <= split < len(c.splits):
        raise EngineInputError(f"split {split} does not exist; this construction has {len(c.splits)}")
    return c.splits[split]


def move_lambda(c: Construction, lam: float, split: int = -1) -> LambdaProbe:
    """The GUI's λ slider: re-divide one split (default the last) as λ : 1−λ and verify
    (one Hessian, quick enough at the papers' sizes to follow the slider)."""
    s = _split_at(c, split)
    if not np.isfinite(lam):
        raise EngineInputError(f"λ = {lam!r} is not a finite number")
    theta = set_split_lambda(c.arch, c.params, s, lam)
    v = verify_split(c.arch, theta, c.X, c.Y, s)
    return LambdaProbe(float(lam), theta, v.loss, v.hessian.min, v.verdict, v.unmet, split, v.hessian_eigs)


def move_last_lambda(c: Construction, lam: float) -> LambdaProbe:
    return move_lambda(c, lam, -1)


def probe_job(c: Construction, lam: float, split: int = -1) -> Job[LambdaProbe]:
    """move_lambda as a job (its Hessian on a helper thread): the slider's live readout."""
    _split_at(c, split)  # a bad split fails at once, not on the helper thread
    return (yield from wait_for(lambda stop: move_lambda(c, lam, split), f"λ = {lam:.3g}"))


@dataclass(frozen=True)
class DegeneratePath:
    """B9 along one split's λ: loss, smallest Hessian eigenvalue and verdict at each λ."""

    lam: np.ndarray
    loss: np.ndarray
    hessian_min: np.ndarray
    verdicts: tuple[Verdict, ...]
    interval: Interval  # Theorem 9's I of this split
    split: int  # index into Construction.splits, ≥ 0


def degenerate_path_job(c: Construction, lams, split: int = -1) -> Job[DegeneratePath]:
    """B9: loss, smallest Hessian eigenvalue and Theorem 9 verdict along one split's λ; partials
    are the path so far."""
    s = _split_at(c, split)
    lams = np.asarray(lams, float)
    B, _ = pair_B(c.arch, c.params, c.X, c.Y, s)
    interval = theorem9_interval(np.linalg.eigvalsh(B))
    probes = []
    path = None
    for k, lam in enumerate(lams):
        probes.append((yield from probe_job(c, lam, split)))
        path = DegeneratePath(
            lams[: k + 1].copy(),
            np.array([p.loss for p in probes]),
            np.array([p.hessian_min for p in probes]),
            tuple(p.verdict for p in probes),
            interval,
            split % len(c.splits),
        )
        yield Progress((k + 1) / len(lams), f"λ = {lam:.3g}", path)
    return path


@dataclass(frozen=True)
class Line:
    """L(θ + t d) along a unit direction d."""

    direction: np.ndarray
    t: np.ndarray
    loss: np.ndarray


def descent_curve(c: Construction, probe: LambdaProbe, ts) -> Line:
    """B6 at a saddle ``probe``: the direction (flat, unit norm) and the loss along θ + t d."""
    split = _split_at(c, probe.split)
    B, _ = pair_B(c.arch, probe.params, c.X, c.Y, split)
    return line_losses(c, probe.params, descent_direction(c.arch, probe.params, split, B), ts)


def line_losses(c: Construction, theta, d, ts) -> Line:
    """L(θ + t d) for every t, in one batch."""
    import torch

    Xt, yt = mlp.tensors(c.X, c.Y)
    ts = np.asarray(ts, float)
    values = mlp.loss_batch(c.arch, torch.as_tensor(np.asarray(theta, float) + np.outer(ts, d)), Xt, yt).numpy()
    return Line(np.asarray(d), ts, values)
