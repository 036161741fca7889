"""The Hessian's smallest eigenpairs, the extreme-curvature plane and the critical-point verdict
(engine.landscape.module_hessian), held to dense Hessians computed here.

The reference is ``torch.func.hessian`` of the loss written out in this file (the module called
with θ's pieces by ``torch.func.functional_call``, the loss by ``torch.nn.functional``), no
ModuleLoss and no Hessian-vector product, eigendecomposed by numpy and, for the smallest end, by
ARPACK on the dense matrix. A saddle with a closed-form smallest eigenvalue is built by hand.
"""

import re
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse.linalg
import torch

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import module_hessian as measures
from engine.landscape.module_hessian import (
    PointKind,
    critical_point_verdict,
    eta_text,
    forms_hessian,
    hessian_extreme_directions,
    module_hessian,
    module_hessian_job,
)
from engine.landscape.module_loss import ModuleLoss

EPS = np.finfo(np.float64).eps


def mlp_case(seed: int = 0):
    """A 5—16—3 tanh MLP on 30 regression samples, summed squared loss: 147 parameters."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).double()
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((30, 5)), rng.standard_normal((30, 3))
    reference = lambda f, y: (f - y).square().sum()
    return model, X, Y, "sum", reference


def cnn_case(seed: int = 1):
    """A 3×3 convolution (4 channels) on 6×6 images, tanh, then a linear layer to 3 classes, mean
    cross-entropy on 24 samples: 40 + 195 = 235 parameters."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(64, 3)
    ).double()
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((24, 1, 6, 6)), rng.integers(0, 3, 24)
    reference = lambda f, y: torch.nn.functional.cross_entropy(f, y)
    return model, X, Y, "cross-entropy", reference


CASES = {"mlp": mlp_case, "cnn": cnn_case}


def dense(model, X, Y, reference):
    """(θ, the loss's gradient and its Hessian at θ), by torch.func over the flat parameters."""
    names, shapes = zip(*[(n, p.shape) for n, p in model.named_parameters()])
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)

    def loss(flat):
        pieces = flat.split([int(np.prod(s)) for s in shapes])
        params = {n: p.view(s) for n, p, s in zip(names, pieces, shapes)}
        return reference(torch.func.functional_call(model, params, (Xt,)), Yt)

    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return theta.numpy(), torch.func.grad(loss)(theta).numpy(), torch.func.hessian(loss)(theta).numpy()


def module_loss(model, X, Y, kind) -> ModuleLoss:
    net = SimpleNamespace(module=model.eval(), X=X, Y=Y, fixed_batch=None)
    return ModuleLoss(net, kind, batch_size=len(X))


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    model, X, Y, kind, reference = CASES[request.param]()
    theta, g, H = dense(model, X, Y, reference)
    return request.param, module_loss(model, X, Y, kind), theta, g, H


def rounding(H) -> float:
    """What float64 products may differ from the dense matrix by: a few ε per term of the sums."""
    return 1e3 * EPS * np.linalg.norm(H, 2) * np.sqrt(len(H))


def test_the_reference_is_the_module_losss_own_point_and_gradient(case):
    _, loss, theta, g, H = case
    np.testing.assert_array_equal(loss.theta.numpy(), theta)
    np.testing.assert_allclose(loss.gradient().numpy(), g, rtol=0, atol=rounding(H))


def test_bottom_eigenpairs_match_the_dense_spectrum(case):
    _, loss, _, _, H = case
    lam = np.linalg.eigvalsh(H)
    arpack = np.sort(scipy.sparse.linalg.eigsh(H, k=3, which="SA", tol=0, v0=np.ones(len(H)))[0])
    np.testing.assert_allclose(arpack, lam[:3], rtol=0, atol=1e-9 * np.abs(lam).max())  # the two references agree
    r = module_hessian(loss, top_k=2, bottom_k=3, probes=2, full=False)
    assert r.hessian is None and r.bottom_eigenvectors.shape == (loss.n_params, 3)
    assert np.all(np.diff(r.bottom_eigenvalues) >= 0)  # ascending, the most negative first
    scale = np.abs(lam[-1])
    np.testing.assert_allclose(r.bottom_eigenvalues, arpack, rtol=0, atol=1e-3 * scale)
    np.testing.assert_allclose(r.bottom_eigenvalues, lam[:3], rtol=0, atol=1e-3 * scale)
    # the residuals are what the dense matrix gives for the returned pairs, and each bounds the
    # distance to the nearest eigenvalue (Krylov–Bogoliubov)
    V, theta = r.bottom_eigenvectors, r.bottom_eigenvalues
    np.testing.assert_allclose(np.linalg.norm(V, axis=0), 1.0, rtol=0, atol=1e3 * EPS)
    dense_residuals = np.linalg.norm(H @ V - V * theta, axis=0)
    np.testing.assert_allclose(r.bottom_residuals, dense_residuals, rtol=0, atol=rounding(H))
    nearest = np.min(np.abs(theta[:, None] - lam[None, :]), axis=1)
    assert np.all(nearest <= r.bottom_residuals + rounding(H))
    # and the top end is untouched by asking for the bottom
    np.testing.assert_allclose(r.eigenvalues, lam[::-1][:2], rtol=0, atol=1e-3 * scale)


def test_extreme_directions_are_the_dense_extreme_eigenvectors(case):
    name, loss, _, g, H = case
    lam, U = np.linalg.eigh(H)
    spread = lam[-1] - lam[0]
    # the extremes are separated, so their eigenvectors are defined and Lanczos resolves them
    assert lam[1] - lam[0] > 1e-3 * spread and lam[-1] - lam[-2] > 1e-3 * spread, name
    e = hessian_extreme_directions(loss, seed=2)
    for d in (e.d1, e.d2):
        assert abs(np.linalg.norm(d) - 1) <= 1e3 * EPS
        assert d[np.argmax(np.abs(d))] > 0  # sign fixed as hessian_directions_job's
    assert abs(e.d1 @ U[:, 0]) >= 0.999 and abs(e.d2 @ U[:, -1]) >= 0.999
    assert abs(e.bottom_eigenvalue - lam[0]) <= e.bottom_error + rounding(H)
    assert abs(e.top_eigenvalue - lam[-1]) <= e.top_error + rounding(H)
    assert e.bottom_error <= 1e-6 * spread and e.top_error <= 1e-6 * spread  # tol 0: converged
    assert e.gradient_norm == pytest.approx(np.linalg.norm(g), rel=1e-9)
    # a random initialization is no critical point, and the verdict says so with the norm
    v = e.verdict()
    assert v.kind is PointKind.NOT_CRITICAL and f"{np.linalg.norm(g):.2e}" in v.text


def saddle_case(h: int = 6, n: int = 20):
    """A d—h—1 tanh MLP with every weight zero and the output bias at the targets' mean: f ≡ ȳ.

    The gradient vanishes (∂/∂W2 carries tanh(0) = 0, ∂/∂(W1, b1) carries W2 = 0, ∂/∂b2 is
    2 Σ (ȳ − y_α) = 0). The Hessian is 2N on b2 and, for each hidden unit j, the block
    [[0, cᵀ], [c, 0]] between W2_j and (W1_j, b1_j), with c = 2 Σ_α (ȳ − y_α) (x_α, 1); its
    eigenvalues are ±‖c‖ and 0. So λ_min = −‖c‖ < 0: a saddle, whose descent direction a random
    plane finds only by luck."""
    d = 3
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((n, d)), rng.standard_normal(n)
    model = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.Tanh(), torch.nn.Linear(h, 1)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model[2].bias.fill_(Y.mean())
    c = 2 * ((Y.mean() - Y)[:, None] * np.hstack([X, np.ones((n, 1))])).sum(0)
    return model, X, Y, np.linalg.norm(c)


def test_a_symmetric_critical_point_is_a_saddle_with_its_closed_form_curvature():
    model, X, Y, norm_c = saddle_case()
    _, g, H = dense(model, X, Y[:, None], lambda f, y: (f - y).square().sum())
    lam = np.linalg.eigvalsh(H)
    assert np.linalg.norm(g) < 1e-12 and lam[0] == pytest.approx(-norm_c, rel=1e-12)  # the closed form
    assert lam[-1] == pytest.approx(max(2 * len(X), norm_c), rel=1e-12)
    e = hessian_extreme_directions(module_loss(model, X, Y, "sum"))
    assert abs(e.bottom_eigenvalue + norm_c) <= e.bottom_error + rounding(H)
    assert e.d1 @ H @ e.d1 == pytest.approx(-norm_c, rel=1e-9)  # d1 is a direction of steepest curvature down
    assert e.gradient_norm < 1e-8
    v = e.verdict()
    assert v.kind is PointKind.SADDLE and v.text.startswith("saddle (")


@pytest.mark.parametrize(
    "gradient_norm, bottom, error, kind",
    [
        (0.0, -1.0, 0.1, PointKind.SADDLE),
        (9.9e-9, -2e-3, 1e-3, PointKind.SADDLE),  # negative beyond its error
        (0.0, -1e-3, 1e-3, PointKind.MINIMUM_OR_FLAT),  # λ + error = 0: not certainly negative
        (0.0, -1e-3, 2e-3, PointKind.MINIMUM_OR_FLAT),
        (1e-12, 0.0, 0.0, PointKind.MINIMUM_OR_FLAT),
        (0.0, 5.0, 0.0, PointKind.MINIMUM_OR_FLAT),
        (1e-8, -1.0, 0.0, PointKind.NOT_CRITICAL),  # ‖∇L‖ = tol is not below it
        (3.1e-2, 5.0, 0.0, PointKind.NOT_CRITICAL),
    ],
)
def test_verdict_on_constructed_inputs(gradient_norm, bottom, error, kind):
    v = critical_point_verdict(gradient_norm, bottom, error)
    assert v.kind is kind and v.text.startswith(kind.value) and str(v) == v.text
    if kind is PointKind.NOT_CRITICAL:
        assert f"{gradient_norm:.2e}" in v.text


def test_verdict_tolerance_moves_the_line():
    assert critical_point_verdict(1e-6, -1.0, 0.0, tol=1e-5).kind is PointKind.SADDLE
    assert critical_point_verdict(1e-6, -1.0, 0.0, tol=1e-7).kind is PointKind.NOT_CRITICAL


@pytest.mark.parametrize(
    "args, word",
    [
        ((float("nan"), -1.0, 0.0), "gradient_norm"),
        ((-1.0, -1.0, 0.0), "gradient_norm"),
        ((0.0, float("inf"), 0.0), "bottom_eigenvalue"),
        ((0.0, -1.0, -0.1), "bottom_error"),
        ((0.0, -1.0, 0.0, 0.0), "tol"),
    ],
)
def test_verdict_refuses_bad_numbers_in_one_line(args, word):
    with pytest.raises(EngineInputError, match=word) as caught:
        critical_point_verdict(*args)
    assert "\n" not in str(caught.value)


def test_the_hessian_is_formed_when_asked_or_cheaper_and_not_otherwise():
    model, X, Y, kind, reference = mlp_case()
    loss = module_loss(model, X, Y, kind)
    _, _, H = dense(model, X, Y, reference)
    P = loss.n_params
    assert P == 147
    # P ≤ min(P, 80) + 100 probes: forming costs no more than the estimates, so it is formed
    r = module_hessian(loss, top_k=1, probes=100)
    assert r.hessian is not None and r.n_hvp >= P
    np.testing.assert_allclose(r.spectrum, np.linalg.eigvalsh(H), rtol=0, atol=rounding(H))
    # 80 + 2 products planned < P: not formed; asked: formed; refused: never
    assert module_hessian(loss, top_k=1, probes=2).hessian is None
    assert module_hessian(loss, top_k=1, probes=2, full=True).hessian is not None
    assert module_hessian(loss, top_k=1, probes=100, full=False).hessian is None
    # the older option keeps its meaning: formed exactly when P ≤ max_full
    assert module_hessian(loss, top_k=1, probes=100, max_full=0).hessian is None
    assert module_hessian(loss, top_k=1, probes=2, max_full=P).hessian is not None


@pytest.mark.parametrize(
    "n, full, max_full, bottom_k, probes, density_probes, steps, formed",
    [
        (778, None, None, 0, 100, 0, 80, False),  # issue #57's CNN: 180 products asked for, not 778
        (180, None, None, 0, 100, 0, 80, True),
        (181, None, None, 0, 100, 0, 80, False),
        (260, None, None, 3, 100, 0, 80, True),  # the bottom's Lanczos doubles the 80
        (873, None, None, 0, 12, 12, 12, False),  # 80 + 12 + 144 = 236
        (1000, None, None, 1, 40, 10, 80, True),  # 160 + 40 + 800 = 1000
        (5000, None, None, 1, 100, 100, 80, False),  # never past FULL_SPECTRUM_MAX_PARAMS unasked
        (50, None, None, 0, 2, 0, 80, True),  # Lanczos needs at most P steps: 50 + 2 ≥ 50
        (10, False, None, 0, 100, 0, 80, False),
        (2000, True, None, 0, 2, 0, 80, True),
        (2000, None, 3000, 0, 2, 0, 80, True),
        (2000, None, 0, 0, 100, 100, 80, False),
    ],
)
def test_forms_hessian_counts_products(n, full, max_full, bottom_k, probes, density_probes, steps, formed):
    assert forms_hessian(n, full, max_full, bottom_k, probes, density_probes, steps) is formed


def test_bad_bottom_and_full_options_are_refused_in_one_line(monkeypatch):
    model, X, Y, kind, _ = mlp_case()
    loss = module_loss(model, X, Y, kind)
    monkeypatch.setattr(measures, "FULL_SPECTRUM_MAX_PARAMS", 100)  # the MLP's 147 are past it
    for options, word in (
        (dict(bottom_k=-1), "bottom-k"),
        (dict(bottom_k=loss.n_params + 1), "bottom-k"),
        (dict(bottom_k=1.5), "bottom-k"),
        (dict(full=True), "full = True"),
        (dict(full="yes"), "full"),
        (dict(full=False, max_full=10), "max_full"),
        (dict(max_full=-1), "max_full"),
    ):
        with pytest.raises(EngineInputError, match=word) as caught:
            module_hessian(loss, probes=2, **options)
        assert "\n" not in str(caught.value)


def test_past_its_basis_the_bottom_hands_over_to_arpack(monkeypatch):
    model, X, Y, kind, reference = cnn_case()
    loss = module_loss(model, X, Y, kind)
    _, _, H = dense(model, X, Y, reference)
    monkeypatch.setattr(measures, "LANCZOS_STEPS", 8)  # too few steps for the bottom two at ε
    hvp = measures.module_hvp(loss)
    vals, vecs, residuals = run_to_completion(measures.bottom_eigenpairs_job(hvp, loss.n_params, 2, 0.0, seed=1))
    assert hvp.count > 8 + 2  # the 8 steps, then ARPACK's products and one each for the residuals
    lam, U = np.linalg.eigh(H)
    assert np.all(np.abs(vals - lam[:2]) <= residuals + rounding(H))
    assert np.all(np.abs(np.sum(vecs * U[:, :2], axis=0)) >= 0.999)


def test_progress_counts_products_towards_a_total_and_says_the_time_left(monkeypatch):
    # every update of the measures themselves, not the helper thread's latest every 50 ms
    monkeypatch.setattr(measures, "on_helper_thread", lambda job, message: job)
    model, X, Y, kind, _ = mlp_case()
    loss = module_loss(model, X, Y, kind)
    updates = []
    r = run_to_completion(module_hessian_job(loss, top_k=1, bottom_k=1, probes=4, full=False), updates.append)
    pattern = re.compile(r" — (\d+)/(\d+) products, (about .* left|under a second left|time left unknown)$")
    counted = [(u, pattern.search(u.message)) for u in updates]
    counted = [(u, int(m[1]), int(m[2])) for u, m in counted if m]
    assert counted, [u.message for u in updates]
    dones = [done for _, done, _ in counted]
    assert dones == sorted(dones) and dones[-1] == r.n_hvp  # the last stage's last product is the last one
    assert counted[-1][1] == counted[-1][2]  # the plan's total is met at the end
    for u, done, total in counted:
        assert done <= total and u.fraction == pytest.approx(done / total)


@pytest.mark.parametrize(
    "seconds, text",
    [
        (float("nan"), "time left unknown"),
        (0.2, "under a second left"),
        (12.4, "about 12 s left"),
        (125.0, "about 2 min 5 s left"),
        (3725.0, "about 1 h 2 min left"),
    ],
)
def test_eta_text(seconds, text):
    assert eta_text(seconds) == text
