"""Find critical point (engine.minima.critical_search) reaches ‖∇L‖ < 1e-8, or says where it stopped
and why; and paper B's hypotheses under a chosen loss, in ``inspect``'s JSON, as derived here."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from engine.io import netfile
from engine.minima import critical_search as S
from tests.networks import strict_minimum_net
from tests.references import finite_difference_hessian, numpy_loss

ROOT = Path(__file__).resolve().parents[3]


def fd_gradient(f, theta) -> tuple[np.ndarray, float]:
    """Central differences of ``f`` alone, with their error estimate |g_h − g_{2h}| (Richardson)."""

    def at(h):
        E = np.eye(len(theta)) * h
        return np.array([(f(theta + e) - f(theta - e)) / (2 * h) for e in E])

    g, g2 = at(1e-5), at(2e-5)
    return g, float(np.linalg.norm(g - g2))


def test_find_critical_point_reaches_the_tolerance_it_promises():
    net = strict_minimum_net()
    start = net.params + 0.3 * np.random.default_rng(1).standard_normal(len(net.params))
    search = S.find_critical_point(net.arch, net.X, net.Y, start)
    f = lambda p: numpy_loss(net.arch, p, net.X, net.Y)
    g, error = fd_gradient(f, search.theta)
    assert error < 1e-9  # the differences are good enough to see 1e-8
    assert search.reached and search.stopped == "reached the tolerance"
    assert np.linalg.norm(g) < 1e-8 + 2 * error
    assert abs(search.loss - f(search.theta)) <= 1e-12 * max(1.0, f(search.theta))
    assert abs(search.distance - np.linalg.norm(search.theta - start)) <= 1e-12 * search.distance
    assert search.summary().startswith("Critical point found")


def test_a_search_that_stops_short_says_where_and_why_and_can_go_on(monkeypatch):
    net = strict_minimum_net()
    start = net.params + 0.3 * np.random.default_rng(1).standard_normal(len(net.params))
    monkeypatch.setattr(S, "LM_ITERATIONS", 2)
    short = S.find_critical_point(net.arch, net.X, net.Y, start, newton_steps=0)
    f = lambda p: numpy_loss(net.arch, p, net.X, net.Y)
    g, error = fd_gradient(f, short.theta)
    assert not short.reached and abs(short.grad_norm - np.linalg.norm(g)) <= 2 * error + 1e-12
    text = short.summary()
    assert f"‖∇L‖ = {short.grad_norm:.2e}" in text and "2 Levenberg–Marquardt and 0 Newton steps" in text
    assert "0 Newton steps taken" in text and "Go on searching" in text
    monkeypatch.setattr(S, "LM_ITERATIONS", 300)
    on = S.find_critical_point(net.arch, net.X, net.Y, short.theta)  # going on from where it stopped
    assert on.reached and np.linalg.norm(fd_gradient(f, on.theta)[0]) < 1e-8 + 2 * fd_gradient(f, on.theta)[1]


def test_inspect_reports_paper_b_hypotheses_under_the_mean_and_cross_entropy(tmp_path):
    """Derived here, from the definitions: the mean loss is the sum over N at every θ (so it is a
    positive multiple: same critical points, FD Hessian of the same inertia), a strict minimum
    stays one; cross-entropy of a one-output net is log e^f − f = 0 for every θ, no multiple of the
    squared loss, so paper B's hypotheses fail and its verdicts do not apply."""
    net = strict_minimum_net()
    path = netfile.save_network(tmp_path / "net.npz", net.arch, net.params, net.X, net.Y)
    f = lambda p: numpy_loss(net.arch, p, net.X, net.Y)
    N = len(net.X)
    mean = lambda p: f(p) / N
    rng = np.random.default_rng(0)
    thetas = [net.params + rng.standard_normal(len(net.params)) for _ in range(3)]
    ratios = [f(t) / mean(t) for t in thetas]
    mean_is_a_multiple = np.allclose(ratios, ratios[0], rtol=1e-12) and ratios[0] > 0
    ce = lambda p: 0.0  # one output: log Σ_c e^{f_c} − f_y = log e^f − f
    ce_is_a_multiple = len({round(ce(t) / f(t), 12) for t in thetas}) == 1 and ce(thetas[0]) != 0
    eigs = np.linalg.eigvalsh(finite_difference_hessian(mean, net.params))
    strict = eigs[0] > 1e-6 * eigs[-1]
    critical = np.linalg.norm(fd_gradient(mean, net.params)[0]) < 1e-8
    expected = {
        "mean": ({"squared loss": mean_is_a_multiple, "critical point": critical}, "strict minimum"),
        "cross-entropy": ({"squared loss": ce_is_a_multiple, "critical point": critical}, "conditions not met"),
    }
    assert mean_is_a_multiple and not ce_is_a_multiple and strict and critical
    for kind, (holds, verdict) in expected.items():
        done = subprocess.run(
            [sys.executable, "main.py", "inspect", str(path), "--loss", kind],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        loss = json.loads(done.stdout)["under_loss"]
        got = {h["name"]: h["holds"] for h in loss["hypotheses"]}
        assert loss["kind"] == kind and got == {**got, **holds} and got["one output"] and got["smooth activation"]
        assert loss["verdict"] == verdict
    bad = subprocess.run(
        [sys.executable, "main.py", "inspect", str(path), "--loss", "hinge"], cwd=ROOT, capture_output=True, text=True
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "hinge" in bad.stderr
