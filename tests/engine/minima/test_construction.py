"""construction: B and D against finite differences, the embedding, Theorem 9's verdict, B6 descent."""

import numpy as np
import pytest

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.minima import construction as C
from engine.minima.pipeline import teacher_data
from engine.minima.verdicts import INSIDE_0_1, OUTSIDE_0_1, Verdict
from tests.references import finite_difference_hessian, numpy_loss


def second_difference(f, h=1e-4):
    return (f(h) - 2 * f(0) + f(-h)) / h**2


def test_B_and_D_match_finite_differences_in_B4_coordinates():
    rng = np.random.default_rng(1)
    arch = mlp.Arch((2, 3, 2, 1), "tanh", True)
    X, Y = rng.normal(size=(7, 2)), rng.normal(size=7)
    theta = mlp.init_params(arch, rng, 1.5)
    bd = {(n.layer, n.neuron): n for n in C.neuron_bd(arch, theta, X, Y)}
    lam, r = 0.3, 1
    big, t2 = C.embed(arch, theta, 1, r, lam)
    L = lambda p: mlp.loss(big, p, X, Y)

    def pair_direction(e):  # ε_d = e, ε̄ = 0
        d = np.zeros(big.n_params)
        W = d[big.block("W1").slice].reshape(4, 2)
        b = d[big.block("b1").slice]
        W[3], W[r], b[3], b[r] = (1 - lam) * e[:2], -lam * e[:2], (1 - lam) * e[2], -lam * e[2]
        return d

    e = rng.normal(size=3)
    d = pair_direction(e)
    assert second_difference(lambda h: L(t2 + h * d)) == pytest.approx(lam * (1 - lam) * e @ bd[1, r].B @ e, rel=1e-5)
    for s in range(2):  # Δ_s on the outgoing weights pairs with ε_d,i through D^{r,s}_i
        dv = np.zeros(big.n_params)
        V = dv[big.block("W2").slice].reshape(2, 4)
        V[s, 3], V[s, r] = 1, -1
        for i in range(3):
            di = pair_direction(np.eye(3)[i])
            h = 1e-4
            mixed = (
                L(t2 + h * dv + h * di) - L(t2 + h * dv - h * di) - L(t2 - h * dv + h * di) + L(t2 - h * dv - h * di)
            ) / (4 * h * h)
            assert mixed == pytest.approx(bd[1, r].D[i, s], rel=1e-5, abs=1e-8)


def test_embedding_preserves_function_and_rejects_bad_splits():
    rng = np.random.default_rng(2)
    arch = mlp.Arch((2, 3, 2, 1), "sigmoid", True)
    theta = rng.normal(size=arch.n_params)
    X = rng.normal(size=(11, 2))
    for layer, lam in ((1, 0.3), (2, 2.5), (2, -1.0)):
        big, t2 = C.embed(arch, theta, layer, 1, lam)
        assert big.widths[layer] == arch.widths[layer] + 1
        assert np.abs(mlp.predict(big, t2, X) - mlp.predict(arch, theta, X)).max() < 1e-12
    with pytest.raises(EngineInputError, match="no hidden layer"):
        C.embed(mlp.Arch((2, 1)), np.zeros(2), 1, 0, 0.5)
    with pytest.raises(EngineInputError, match="not a hidden layer"):
        C.embed(arch, theta, 3, 0, 0.5)
    with pytest.raises(EngineInputError, match="no hidden layer"):
        run_to_completion(C.construct_job(X, rng.normal(size=11), (2, 1), schedule=((1, 1),)))


@pytest.fixture(scope="module")
def built():
    X, Y = teacher_data((2, 5, 5, 1), 20, seed=0)
    updates = []
    c = run_to_completion(
        C.construct_job(X, Y, (2, 1, 1, 1), schedule=((1, 3), (2, 3)), max_restarts=30), updates.append
    )
    return c, updates


def test_constructed_minimum_is_psd_and_turns_saddle_outside_I(built):
    c, updates = built
    # fractions are in [0, 1], or NaN (unknown) while a Hessian or an L-BFGS run is under way
    assert updates and all(0 <= u.fraction <= 1 or u.fraction != u.fraction for u in updates)
    assert c.arch.widths == (2, 4, 4, 1) and len(c.steps) == 7 and len(c.restarts) >= 1
    small_eigs = np.linalg.eigvalsh(mlp.hessian(c.small_arch, c.small_params, c.X, c.Y))
    assert small_eigs.min() > 0 and c.steps[0].grad_norm < 1e-8
    # same loss, critical, PSD Hessian with a kernel (the degenerate directions)
    assert abs(c.steps[-1].loss - c.steps[0].loss) < 1e-12
    assert c.steps[-1].grad_norm < 1e-8
    eigs = np.linalg.eigvalsh(mlp.hessian(c.arch, c.params, c.X, c.Y))
    assert eigs.min() > -1e-10 and (np.abs(eigs) < 1e-9).sum() > 0
    v = c.verification
    assert v.verdict is Verdict.NON_ATTRACTING and v.unmet == ()
    # I from the sign of the pair's B (B checked against finite differences above), and it holds λ
    assert v.interval == (INSIDE_0_1 if v.B_eigs.max() > 0 else OUTSIDE_0_1) and v.interval.contains(v.lam)
    assert c.steps[-1].verdict is Verdict.NON_ATTRACTING and c.steps[0].verdict is Verdict.STRICT_MINIMUM
    # D vanishes in the B5 cases: every neuron of the constructed net
    assert max(n.D_norm for n in c.neurons) < 1e-9
    for lam, saddle in ((0.9, False), (1.0, False), (1.3, True), (-0.5, True)):
        probe = C.move_last_lambda(c, lam)
        assert abs(probe.loss - c.steps[-1].loss) < 1e-12
        independent_min = np.linalg.eigvalsh(mlp.hessian(c.arch, probe.params, c.X, c.Y)).min()
        assert (independent_min < -1e-7) == saddle
        assert (probe.verdict is Verdict.SADDLE) == saddle
        assert v.interval.contains(lam) == (not saddle) or lam == 1.0  # λ = 1: on I's boundary
        if saddle:  # negative curvature, and the reason names λ outside I
            assert any("outside I" in reason for reason in probe.unmet)


def test_descent_direction_lowers_loss_as_B6_predicts(built):
    c, _ = built
    probe = C.move_last_lambda(c, 2.0)
    ts = np.array([-1e-2, 1e-2, 0.3])
    curve = C.descent_curve(c, probe, ts)
    assert all(value < probe.loss for value in curve.loss)
    d = curve.direction
    H = mlp.hessian(c.arch, probe.params, c.X, c.Y)
    # the change is quadratic in t to leading order: ½ dᵀHd t² (higher orders ~1% at t = 0.01)
    assert (curve.loss[1] - probe.loss) / (0.5 * d @ H @ d * 1e-4) == pytest.approx(1, abs=0.03)
    # B4 with ε_d = e (B's top eigenvector), normalised: ‖d_raw‖² = (1−λ)² + λ²
    lam, B_top = 2.0, C.verify_split(c.arch, probe.params, c.X, c.Y, c.splits[-1]).B_eigs.max()
    assert d @ H @ d == pytest.approx(lam * (1 - lam) * B_top / ((1 - lam) ** 2 + lam**2), rel=1e-8)


def test_search_reports_rejected_restarts():
    X, Y = teacher_data((2, 5, 5, 1), 20, seed=1)
    with pytest.raises(EngineInputError, match="restarts"):
        run_to_completion(C.search_minimum_job(mlp.Arch((2, 1, 1, 1)), X, Y, [1, 2], seed=0, max_restarts=2))


def test_degenerate_direction_moves_lambda_and_keeps_the_loss(built):
    c, _ = built
    for split in c.splits[:1] + c.splits[-1:]:
        d = C.degenerate_direction(c.arch, c.params, split)
        assert np.linalg.norm(d) == pytest.approx(1, abs=1e-14)
        W = c.params[c.arch.block(f"W{split.layer + 1}").slice].reshape(c.arch.block(f"W{split.layer + 1}").shape)
        per_unit = 1 / (np.sqrt(2) * np.linalg.norm(W[:, split.new] + W[:, split.origin]))
        lam0 = C.split_lambda(c.arch, c.params, split)
        for s in (-0.7, 0.3, 2.0):
            moved = C.set_split_lambda(c.arch, c.params, split, lam0 + s * per_unit)
            assert np.abs(c.params + s * d - moved).max() < 1e-12
        line = C.line_losses(c, c.params, d, np.linspace(-2, 2, 9))
        assert np.ptp(line.loss) < 1e-12


def test_any_split_can_be_moved_and_the_path_carries_verdicts(built):
    c, _ = built
    # the first layer-1 split, not the last; which side of 1 is a saddle depends on the sign of its B
    path = run_to_completion(C.degenerate_path_job(c, [0.5, 2.0], split=0))
    assert sorted(path.verdicts) == [Verdict.NON_ATTRACTING, Verdict.SADDLE]
    assert path.interval.contains(path.lam[path.verdicts.index(Verdict.NON_ATTRACTING)])
    probe = C.move_lambda(c, path.lam[path.verdicts.index(Verdict.SADDLE)], split=0)
    assert probe.split == 0 and abs(probe.loss - c.steps[-1].loss) < 1e-12 and probe.hessian_min < -1e-7
    assert C.descent_curve(c, probe, [0.1]).loss[0] < probe.loss
    with pytest.raises(EngineInputError, match="does not exist"):
        C.move_lambda(c, 0.5, split=len(c.splits))


def test_hessian_spectrum_and_step_of_agree_with_finite_differences(built):
    """The spectrum against the eigenvalues of a Hessian from second differences of a numpy loss
    (no torch.func, no mlp.hessian); the summary's counts against counts on that spectrum, whose
    zero block (the splits' flat directions) and next eigenvalue lie farther from the zero tolerance
    than the differences' own error; step_of's loss and gradient against the same numpy loss.

    The differences' error is estimated, not assumed: by Weyl, each eigenvalue of the difference
    Hessian at step h lies within ‖H_h − H_true‖₂ of the true one, and 2‖H_h − H_2h‖₂ bounds that
    (truncation grows 4× from h to 2h; the rounding noise ε·f/h², which depends on the CPU's
    floating-point kernels, is of the size of the difference itself)."""
    c, _ = built
    f = lambda p: numpy_loss(c.arch, p, c.X, c.Y)
    eigs, h = C.hessian_spectrum(c.arch, c.params, c.X, c.Y)
    fd_hessian = finite_difference_hessian(f, c.params, h=1e-4)
    fd = np.linalg.eigvalsh(fd_hessian)
    error = 2 * np.linalg.norm(fd_hessian - finite_difference_hessian(f, c.params, h=2e-4), 2)
    scale = max(1.0, np.abs(fd).max())
    assert error < 1e-6 * scale  # sharp enough: a 1e-4 relative bug in the spectrum is ~1e-2
    assert np.all(np.diff(eigs) >= 0)
    assert np.abs(eigs - fd).max() <= error
    tol = 1e-9 * scale  # construction.EIG_TOL_REL, the documented meaning of "zero"
    assert not np.any(np.abs(np.abs(fd) - tol) <= error)  # no eigenvalue the differences cannot place
    assert (h.n_zero, h.n_negative) == (int(np.sum(np.abs(fd) <= tol)), int(np.sum(fd < -tol)))
    assert h.n_zero >= len(c.splits) > 0  # each split adds a flat direction: the counts are not 0 = 0
    assert abs(h.min - fd[0]) <= error and abs(h.max - fd[-1]) <= error
    step = C.step_of("final", c.arch, c.params, c.X, c.Y)
    assert step.hessian == h and step.widths == c.arch.widths
    assert step.loss == pytest.approx(f(c.params), rel=1e-12)
    g = np.array([(f(c.params + e) - f(c.params - e)) / 2e-6 for e in np.eye(len(c.params)) * 1e-6])
    assert step.grad_norm == pytest.approx(np.linalg.norm(g), abs=1e-8) and step.grad_norm < C.GRAD_TOL


def test_shallow_split_outside_0_1_with_negative_B_is_a_minimum():
    """B5: in the last hidden layer D = 0 by itself; B < 0 makes λ = 1.5 a minimum, λ = 0.5 a saddle."""
    X, Y = teacher_data((1, 2, 1), 10, 0, input_scale=2.0)
    c = run_to_completion(C.construct_job(X, Y, (1, 1, 1), schedule=((1, 1),), lam=0.5, lam_outside=1.5))
    assert c.small_neurons[0].badge == "negative definite" and c.splits[0].lam == 1.5
    assert c.verification.verdict is Verdict.NON_ATTRACTING and c.verification.interval == OUTSIDE_0_1
    assert c.verification.interval.contains(1.5) and not c.verification.interval.contains(0.5)
    probe = C.move_lambda(c, 0.5)
    assert probe.verdict is Verdict.SADDLE and probe.unmet


def test_descent_line_and_plane_need_no_hessian(built, monkeypatch):
    """B6's direction needs only the pair's B (one backward pass), never the full Hessian."""
    from engine.minima import pipeline as figure3

    c, _ = built
    probe = C.move_last_lambda(c, 2.0)
    expected = C.descent_curve(c, probe, [0.2])

    def no_hessian(*args, **kwargs):
        raise AssertionError("a full Hessian was computed")

    monkeypatch.setattr(mlp, "hessian", no_hessian)
    assert C.descent_curve(c, probe, [0.2]).loss == pytest.approx(expected.loss, abs=0)
    plane = run_to_completion(figure3.probe_plane_job(c, probe.params, probe.split, 5, 0.5))
    assert plane.loss[2, 2] == pytest.approx(probe.loss, rel=1e-12)
