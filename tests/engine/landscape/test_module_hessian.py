"""PyHessian's measures on any module (engine.landscape.module_hessian), held to a dense Hessian.

The reference is ``torch.autograd.functional.hessian`` of the plain module's loss: the module in
float64 and eval mode, called with θ's pieces and its buffers, ``torch.nn.functional.cross_entropy``
on its outputs. No ModuleLoss, no chunks, no Hessian-vector product, eigendecomposed by numpy.
Every tolerance is the computed quantity's own error bound: a Ritz pair's residual, the
difference between the product operator and the dense matrix (Weyl), the standard error.
"""

import copy
import threading

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import Progress, on_helper_thread, run_to_completion
from engine.io.module_network import ModuleNetwork
from engine.landscape import density
from engine.landscape import module_hessian as measures
from engine.landscape.module_hessian import graph_bytes, hessian_directions, module_hessian, module_hvp
from engine.landscape.module_loss import ModuleLoss
from tests.models import CLASSES, images, trained_cnn

N = 8  # samples: the reference and the products cost per sample, the measures per product
PROBES = 40
EPS = np.finfo(np.float64).eps


def network() -> ModuleNetwork:
    labels = np.random.default_rng(0).integers(0, CLASSES, N)
    return ModuleNetwork(trained_cnn(), images(N).numpy().astype(np.float64), labels, None, "test")


def dense_hessian(module: torch.nn.Module, X, Y) -> np.ndarray:
    """The reference: the cross-entropy's Hessian of a float64 copy of ``module`` in eval mode."""
    model = copy.deepcopy(module).double().eval()
    names, shapes = zip(*[(n, p.shape) for n, p in model.named_parameters()])
    buffers = {n: b for n, b in model.named_buffers()}
    X, Y = torch.as_tensor(np.asarray(X, np.float64)), torch.as_tensor(Y)

    def loss(flat):
        pieces = flat.split([int(np.prod(s)) for s in shapes])
        params = {n: p.view(s) for n, p, s in zip(names, pieces, shapes)}
        return torch.nn.functional.cross_entropy(torch.func.functional_call(model, {**params, **buffers}, (X,)), Y)

    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return torch.autograd.functional.hessian(loss, theta, vectorize=True).numpy()


@pytest.fixture(scope="module")
def case():
    net = network()
    H = dense_hessian(net.module, net.X, net.Y)
    loss = ModuleLoss(net, "cross-entropy", batch_size=N)
    result = module_hessian(loss, top_k=3, probes=PROBES, seed=3, full=True)  # P > the 120 products planned
    return net, H, loss, result


def test_the_formed_hessian_is_the_dense_one(case):
    _, H, loss, r = case
    assert r.hessian.shape == (loss.n_params, loss.n_params) and loss.n_params > 800
    # two exact float64 computations: they differ by rounding, a few ε per term of the N-sample sums
    scale = np.linalg.norm(H, 2)
    assert np.linalg.norm(r.hessian - H, 2) <= 1e3 * EPS * scale * np.sqrt(loss.n_params)
    # Weyl: each eigenvalue moves by at most the spectral norm of the difference
    weyl = np.linalg.norm(r.hessian - H, 2) + loss.n_params * EPS * scale
    np.testing.assert_allclose(r.spectrum, np.linalg.eigvalsh(H), rtol=0, atol=weyl)


def test_top_three_eigenpairs_match_the_dense_ones(case):
    _, H, loss, r = case
    lam, U = np.linalg.eigh(H)
    lam, U = lam[::-1][:3], U[:, ::-1][:, :3]
    assert np.all(np.diff(r.eigenvalues) < 0)
    # each Ritz value is within its residual of an eigenvalue of the product operator, which is
    # within ‖H_op − H‖ of the dense one's
    HU = module_hvp(loss)(torch.from_numpy(np.ascontiguousarray(U.T))).numpy().T
    operator_gap = np.linalg.norm(HU - H @ U, 2)
    bound = r.residuals + operator_gap + loss.n_params * EPS * np.abs(lam).max()
    assert np.all(np.abs(r.eigenvalues - lam) <= bound)
    assert np.all(np.abs(r.eigenvalues - lam) <= 1e-3 * np.abs(lam))  # the criterion
    np.testing.assert_allclose(np.linalg.norm(r.eigenvectors, axis=0), 1.0, atol=1e-12)
    assert np.all(np.abs(np.sum(r.eigenvectors * U, axis=0)) >= 0.999)


def test_hessian_directions_are_the_top_two_eigenvectors(case):
    _, H, loss, _ = case
    U = np.linalg.eigh(H)[1][:, ::-1]
    d1, d2 = hessian_directions(loss)
    assert abs(d1 @ U[:, 0]) >= 0.999 and abs(d2 @ U[:, 1]) >= 0.999
    for d in (d1, d2):  # the sign convention: the largest component is positive
        assert d[np.argmax(np.abs(d))] > 0


def _check_probe_spread(samples: np.ndarray, A: np.ndarray) -> None:
    """A Rademacher probe's zᵀAz has variance 2 Σ_{i≠j} A_ij²: the sample variance must match it
    within 4 of its own standard errors, √((m₄ − s⁴)/n) from the samples' fourth moment."""
    n = len(samples)
    exact = 2 * (np.sum(A * A) - np.sum(np.diag(A) ** 2))
    s2 = samples.var(ddof=1)
    m4 = np.mean((samples - samples.mean()) ** 4)
    assert abs(s2 - exact) <= 4 * np.sqrt(max(m4 - s2 * s2, 0.0) / n)


def test_trace_is_within_four_standard_errors_and_its_error_matches_the_spread(case):
    _, H, loss, r = case
    assert len(r.trace_samples) == PROBES
    assert abs(r.trace - np.trace(H)) <= 4 * r.trace_se
    assert r.trace_se == pytest.approx(r.trace_samples.std(ddof=1) / np.sqrt(PROBES), rel=1e-12)
    # the top eigenpairs are deflated: the probes see PHP, P = I − VVᵀ
    P = np.eye(loss.n_params) - r.eigenvectors @ r.eigenvectors.T
    _check_probe_spread(r.trace_samples - r.eigenvalues.sum(), P @ H @ P)


def test_plain_rademacher_trace_matches_its_closed_form_spread(case):
    _, H, loss, _ = case
    r = module_hessian(loss, top_k=1, probes=PROBES, seed=5, max_full=0, deflate=False)
    assert r.hessian is None and r.spectrum is None
    assert abs(r.trace - np.trace(H)) <= 4 * r.trace_se
    _check_probe_spread(r.trace_samples, H)


def test_chunked_equals_unchunked(case):
    net, _, loss, whole = case
    chunked_loss = ModuleLoss(net, "cross-entropy", batch_size=3)  # chunks of 3, 3 and 2
    chunked = module_hessian(chunked_loss, top_k=3, probes=PROBES, seed=3, max_full=0)
    # the two operators differ by the chunk sums' rounding: measured on the eigenvectors
    V = torch.from_numpy(np.ascontiguousarray(whole.eigenvectors.T))
    delta = np.linalg.norm((module_hvp(chunked_loss)(V) - module_hvp(loss)(V)).numpy(), 2)
    bound = whole.residuals + chunked.residuals + delta
    assert np.all(np.abs(chunked.eigenvalues - whole.eigenvalues) <= bound + EPS * np.abs(whole.eigenvalues))
    gap = np.min(np.abs(np.diff(whole.spectrum[::-1][:4])))
    # Davis–Kahan, and the rounding of a float64 dot product of two unit P-vectors (P ε)
    cosines = np.abs(np.sum(chunked.eigenvectors * whole.eigenvectors, axis=0))
    assert np.all(cosines >= 1 - (bound / gap) ** 2 - loss.n_params * EPS)
    # the same probes, z' = (I − VVᵀ)z: each sample moves by at most ‖z‖² = P times the operators'
    # difference, plus ‖H‖ times the projectors' (Davis–Kahan: bound / gap)
    atol = 4 * loss.n_params * bound.max() * (1 + np.abs(whole.spectrum).max() / gap)
    np.testing.assert_allclose(chunked.trace_samples, whole.trace_samples, rtol=0, atol=atol)


def test_density_of_a_module_integrates_to_the_trace(case):
    _, H, loss, full = case
    r = module_hessian(loss, top_k=1, probes=2, max_full=0, density_probes=4, steps=30)
    d = r.density
    assert d.n_params == loss.n_params and d.nodes.shape == (4, 30)
    # the products' operator is within ‖H_op − H‖ of the dense H; the quadrature adds rounding
    gap = np.linalg.norm(full.hessian - H, 2) + 30 * EPS * np.linalg.norm(H, 2)
    # Gauss quadrature is exact for degree ≤ 2m − 1: Σ τθ = vᵀHv for each unit probe v
    V0 = density.probe_vectors(loss.n_params, 4, r.seed + 2)
    np.testing.assert_allclose(d.moment(1), np.einsum("pi,ij,pj->p", V0, H, V0), rtol=0, atol=gap)
    lam = np.linalg.eigvalsh(H)  # Ritz values lie inside the spectrum
    assert lam[0] - gap <= d.extremes[0] and d.extremes[1] <= lam[-1] + gap


def _forwards(module: torch.nn.Module):
    """A list that grows by one at every forward call of ``module``, and the hook's handle."""
    calls = []
    return calls, module.register_forward_hook(lambda *_: calls.append(1))


@pytest.mark.parametrize("batch_size", [N, 3])  # one chunk; chunks of 3, 3 and 2
def test_products_on_the_kept_graph_are_the_dense_hessians_and_the_recomputed_ones(case, batch_size):
    net, H, _, _ = case
    loss = ModuleLoss(net, "cross-entropy", batch_size=batch_size)
    V = torch.as_tensor(np.random.default_rng(4).standard_normal((5, loss.n_params)))
    calls, hook = _forwards(loss.evaluated)  # the module as evaluated (its folded graph here)
    try:
        kept = module_hvp(loss)
        assert kept.retained and len(calls) == -(-N // batch_size)  # one forward per chunk, once
        HV_kept = kept(V).numpy()
        assert len(calls) == -(-N // batch_size)  # and none for the products
        redone = module_hvp(loss, max_graph_bytes=0)
        assert not redone.retained and redone.gradient is None
        HV_redone = redone(V).numpy()
        assert len(calls) > -(-N // batch_size)  # these redo the forward
    finally:
        hook.remove()
    # two exact float64 products against the dense matrix: rounding, a few ε per term of the sums
    rounding = 1e3 * EPS * np.linalg.norm(H, 2) * np.linalg.norm(V.numpy(), 2) * np.sqrt(loss.n_params)
    assert np.linalg.norm(HV_kept - V.numpy() @ H, 2) <= rounding
    assert np.linalg.norm(HV_kept - HV_redone, 2) <= rounding
    # the gradient that came with the graph is the one computed by torch.func, chunk by chunk
    np.testing.assert_allclose(kept.gradient.numpy(), loss.gradient().numpy(), rtol=0, atol=rounding)


@pytest.mark.parametrize("batch_size", [N, 3])
def test_products_on_the_kept_graph_are_finite_differences_of_the_gradient(case, batch_size):
    """Independent of every second-derivative formula (batch norm's and convolution's double
    backward, which the dense reference shares): central differences of the gradient, which takes
    first-order backward passes only, (∇L(θ + hv) − ∇L(θ − hv)) / 2h = Hv + O(h²)."""
    net, _, _, _ = case
    loss = ModuleLoss(net, "cross-entropy", batch_size=batch_size)
    hvp = module_hvp(loss)
    assert hvp.retained
    h = 1e-5
    for v in np.random.default_rng(6).standard_normal((3, loss.n_params)):
        v = torch.as_tensor(v / np.linalg.norm(v))
        g = lambda step: loss.gradient(loss.theta + step * v)
        central = lambda step: (g(step) - g(-step)) / (2 * step)
        D, D2 = central(h), central(2 * h)
        truncation = float((D2 - D).norm()) / 3  # Richardson: D(h) − Hv ≈ (D(2h) − D(h)) / 3
        rounding = 1e3 * EPS * float(loss.gradient().norm()) / h  # the gradients' rounding, over 2h
        # a relu or max-pool switching within 2h of θ would make D non-smooth: then the estimate means nothing
        assert truncation <= 1e-6 * float(D.norm())
        assert float((hvp(v) - D).norm()) <= truncation + rounding


def test_graph_bytes_counts_each_saved_tensor_once():
    a, b = (torch.randn(1000, dtype=torch.float64, requires_grad=True) for _ in range(2))
    assert graph_bytes((a * b).sum()) == 2 * 8000  # mul saves both factors
    assert graph_bytes((a * a).sum()) == 8000  # the same tensor, saved twice
    assert graph_bytes(torch.exp(a).sum()) == 8000  # exp saves its result
    assert graph_bytes(a.sum()) == 0  # sum keeps only a shape


def test_a_graph_over_the_budget_is_not_kept(case):
    net, _, _, _ = case
    loss = ModuleLoss(net, "cross-entropy", batch_size=3)
    assert module_hvp(loss).retained
    assert not module_hvp(loss, max_graph_bytes=1).retained


def test_lanczos_at_a_loose_tolerance_stops_within_its_residual_bound(case):
    _, H, loss, _ = case
    lam = np.linalg.eigvalsh(H)[::-1]
    hvp = module_hvp(loss)
    vals, vecs, residuals = run_to_completion(measures.top_eigenpairs_job(hvp, loss.n_params, 3, 1e-3, seed=1))
    # stopped on the bound β|s| ≤ 1e-3 |θ|; the residuals measured from the products agree with it
    # to their rounding
    rounding = 1e3 * EPS * np.linalg.norm(H, 2) * np.sqrt(loss.n_params)
    assert np.all(residuals <= 1e-3 * np.abs(vals) + rounding)
    assert hvp.count < 40  # fewer products than machine precision needed (42 with this CNN)
    # Krylov–Bogoliubov: some eigenvalue of H within each residual (H_op and H differ by rounding)
    nearest = np.min(np.abs(vals[:, None] - lam[None, :]), axis=1)
    assert np.all(nearest <= residuals + rounding)
    assert np.all(np.abs(vals - lam[:3]) <= 1e-3 * np.abs(lam[:3]))  # and they are the top three
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(3), rtol=0, atol=1e3 * EPS)


def test_lanczos_for_the_eigenvalues_alone_meets_tol_in_fewer_products(case):
    _, H, loss, _ = case
    lam = np.linalg.eigvalsh(H)[::-1][:3]
    counts = {}
    for vectors in (True, False):
        hvp = module_hvp(loss)
        vals, _, _ = run_to_completion(measures.top_eigenpairs_job(hvp, loss.n_params, 3, 1e-3, 1, vectors))
        counts[vectors] = hvp.count
        assert np.all(np.abs(vals - lam) <= 1e-3 * np.abs(lam))  # against H's own, not the estimate
    assert counts[False] < counts[True]


SPECTRA = {  # a Hessian's top: outliers above a bulk, a near-cluster, a smooth decay
    "outliers": lambda rng: np.concatenate([[5.0, 3.0, 2.0, 1.5], rng.uniform(-0.5, 1.0, 196)]),
    "cluster": lambda rng: np.concatenate([[3.0, 2.99, 2.9, 1.0], rng.uniform(-0.5, 0.9, 196)]),
    "decay": lambda rng: 3.0 * np.exp(-np.arange(200) / 8.0) + rng.normal(0.0, 0.01, 200),
}


class MatrixProducts:
    """H v for a dense symmetric H, counted."""

    def __init__(self, H):
        self.H, self.count = torch.from_numpy(H), 0

    def __call__(self, v):
        self.count += 1
        return v @ self.H


@pytest.mark.parametrize("spectrum", SPECTRA)
def test_the_eigenvalue_estimate_stops_lanczos_within_tol_of_the_true_eigenvalues(spectrum):
    """With ``vectors=False`` Lanczos stops on ritz_errors' Kato–Temple estimate: held to the true
    top three from the spectrum the matrix was made with, at every tolerance, in a random basis,
    and never later than the residual rule."""
    products = {True: 0, False: 0}
    for seed in range(3):
        rng = np.random.default_rng(seed)
        lam = SPECTRA[spectrum](rng)
        U = np.linalg.qr(rng.standard_normal((len(lam), len(lam))))[0]
        H = (U * lam) @ U.T
        top = np.sort(lam)[::-1][:3]
        for tol in (1e-2, 1e-3, 1e-4, 1e-6):
            for vectors in (True, False):
                hvp = MatrixProducts(H)
                vals, _, _ = run_to_completion(measures.top_eigenpairs_job(hvp, len(lam), 3, tol, seed, vectors))
                assert np.all(np.abs(vals - top) <= tol * np.abs(top) + 1e3 * EPS), (seed, tol, vectors)
                products[vectors] += hvp.count
    assert products[False] < products[True]


def test_ritz_errors_by_hand():
    theta, r = np.array([1.0, 2.5, 3.0]), np.array([0.4, 0.1, 0.01])
    # θ = 3: its gap is min(3 − 1 − 0.4, 3 − 2.5 − 0.1) = 0.4, so 0.01² / 0.4; θ = 2.5: gap 0.49,
    # and 0.1² / 0.49 < 0.1; θ = 1: gap 1.4, 0.16 / 1.4 < 0.4
    np.testing.assert_allclose(measures.ritz_errors(theta, r, vectors=False), [0.16 / 1.4, 0.01 / 0.49, 2.5e-4])
    np.testing.assert_array_equal(measures.ritz_errors(theta, r), r)  # for the vectors: the residuals
    # overlapping neighbours leave no gap: the residual stands
    np.testing.assert_array_equal(measures.ritz_errors(np.array([1.0, 1.1]), np.array([0.2, 0.2]), False), [0.2, 0.2])


def test_past_its_basis_lanczos_hands_over_to_arpack(case, monkeypatch):
    _, H, loss, _ = case
    monkeypatch.setattr(measures, "LANCZOS_STEPS", 8)  # too few steps for the top three at ε
    lam = np.linalg.eigvalsh(H)[::-1][:3]
    hvp = module_hvp(loss)
    vals, vecs, residuals = run_to_completion(measures.top_eigenpairs_job(hvp, loss.n_params, 3, 0.0, seed=1))
    assert hvp.count > 8 + 3  # the 8 steps, then ARPACK's own products and one each for the residuals
    rounding = 1e3 * EPS * np.linalg.norm(H, 2) * np.sqrt(loss.n_params)
    assert np.all(np.abs(vals - lam) <= residuals + rounding)
    assert np.all(np.abs(np.sum(vecs * np.linalg.eigh(H)[1][:, ::-1][:, :3], axis=0)) >= 0.999)


def test_bad_options_are_refused_before_any_product():
    loss = ModuleLoss(network(), "cross-entropy")
    for options, word in (
        (dict(top_k=0), "top-k"),
        (dict(probes=1), "probes"),
        (dict(tol=-1.0), "tol"),
        (dict(density_probes=2000), "probes"),
    ):
        with pytest.raises(EngineInputError, match=word):
            module_hessian(loss, **options)


def test_row_by_row_products_past_20000_parameters_match_dense_columns():
    """Issue #27's missing oracle: density.hvp_function on a net past BATCHED_HVP_MAX_PARAMS takes
    one backward per row (reverse-over-reverse on a retained graph). Held to columns of the dense
    Hessian computed another way: forward-over-reverse (torch.func.jvp of torch.func.grad) of the
    loss written out here, on the unit vectors of a few parameters from every block."""
    d, h = 2, 5000
    arch = mlp.landscape_arch((d, h, 1), "tanh", True)  # 2·5000 + 5000 + 5000 + 1 = 20,001 parameters
    assert arch.n_params == 20_001 > density.BATCHED_HVP_MAX_PARAMS
    rng = np.random.default_rng(7)
    theta = rng.standard_normal(arch.n_params) / np.sqrt(d)
    X, Y = rng.standard_normal((12, d)), rng.standard_normal(12)
    hvp = density.hvp_function(arch, theta, X, Y, "sum")
    assert hvp.batched is False

    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)

    def loss(t):  # θ = [W1 (h, d) row-major, b1, W2 (1, h), b2]
        W1, b1, W2, b2 = t[: h * d].view(h, d), t[h * d : h * d + h], t[h * d + h : h * d + 2 * h], t[-1]
        return ((torch.tanh(Xt @ W1.T + b1) @ W2 + b2 - Yt) ** 2).sum()

    columns = [0, 1, 7_777, h * d + 3, h * d + h + 11, arch.n_params - 1]  # W1, W1, W1, b1, W2, b2
    E = torch.zeros(len(columns), arch.n_params, dtype=torch.float64)
    E[range(len(columns)), columns] = 1.0
    t = torch.as_tensor(theta)
    dense = torch.stack([torch.func.jvp(torch.func.grad(loss), (t,), (e,))[1] for e in E]).numpy()
    rows = run_to_completion(density._products(hvp, E, "rows")).numpy()
    # the two differ by rounding: each entry sums 12 samples' terms, each a few roundings of |H|'s size
    np.testing.assert_allclose(rows, dense, rtol=0, atol=1e3 * EPS * np.abs(dense).max())
    np.testing.assert_allclose(rows[:, columns], rows[:, columns].T, rtol=0, atol=1e3 * EPS * np.abs(dense).max())


def test_on_helper_thread_yields_while_a_step_blocks_and_a_close_stops_it_at_the_next_step():
    """The measures' driver: a product of a large model can take seconds, so the job must yield
    while one runs, and a cancel must stop the work at its next step (events, not clocks)."""
    release, done = threading.Event(), []

    def steps():
        for i in range(5):
            release.wait()  # a long step: it ends only when the test lets it
            release.clear()
            done.append(i)
            yield Progress((i + 1) / 5, f"step {i + 1}")
        return "finished"

    job = on_helper_thread(steps(), "steps")
    assert next(job).message == "steps" and done == []  # a yield while step 1 blocks
    release.set()
    while next(job).message != "step 1":
        pass
    job.close()
    release.set()  # step 2 may finish, but the closed job's next step never starts
    for thread in threading.enumerate():
        if thread.name == "engine-wait-for":
            thread.join()
    assert done == [0, 1]
