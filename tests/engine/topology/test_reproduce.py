"""The three topological-obstruction experiments (``reproduce topo-*``), checked from their exports.

Every metric is recomputed here with numpy alone from the .npz files, the way an outside
script would (docs/EXPORTS.md): no engine function is used for the recomputation.
"""

import json

import numpy as np
import pytest

from engine.core.progress import run_to_completion
from engine.experiments import run_experiment


def _relu_net(X, W1, W2):
    """f(x) = Σ_k W2[k] relu(W1[k] · x) for (…, l, d) / (…, l) weights; X (N, d)."""
    return np.einsum("...nk,...k->...n", np.maximum(np.einsum("nd,...kd->...nk", X, W1), 0.0), W2)


def test_topo_toy_quick_shows_the_effect_and_its_exports_recompute(tmp_path):
    m = run_to_completion(run_experiment("topo-toy", tmp_path, quick=True, seed=0))
    assert json.loads((tmp_path / "metrics.json").read_text()) == m
    runs = {r["name"]: r for r in m["runs"]}
    assert set(runs) == {"obstructed_gd", "free_gd", "obstructed_flow", "free_flow"}
    for opt in ("gd", "flow"):
        assert runs[f"obstructed_{opt}"]["final_loss"] > 0.9 * m["mean_Y2"]
        assert runs[f"obstructed_{opt}"]["s_final"] == [1, 1] and not runs[f"obstructed_{opt}"]["sign_flips"]
        assert runs[f"free_{opt}"]["final_loss"] < 1e-2 and runs[f"free_{opt}"]["s_final"] == [1, -1]
    assert runs["free_flow"]["max_rel_c_drift"] < 1e-6 < runs["free_gd"]["max_rel_c_drift"]
    assert m["effect_shown"] and "alive" in m["dead_neuron_policy"]
    assert (tmp_path / "toy.png").stat().st_size > 0
    for name, run in runs.items():
        with np.load(tmp_path / f"traj_{name}.npz", allow_pickle=False) as z:
            X, Y, W1, W2, loss, c = z["X"], z["Y"], z["W1"], z["W2"], z["loss"], z["c"]
            assert W1.shape == (501, 2, 2) and W2.shape == (501, 1, 2) and X.shape == (500, 2)
            np.testing.assert_array_equal(z["time"], z["step"] * m["lr"])
            flips = z["sign_flips"]
        # The loss at every recorded step, the invariants, and the run's metrics, from the weights.
        F = _relu_net(X, W1, W2[:, 0, :])
        np.testing.assert_allclose(np.mean((F - Y[:, 0]) ** 2, axis=1), loss, rtol=1e-12)
        assert run["final_loss"] == pytest.approx(np.mean((F[-1] - Y[:, 0]) ** 2), rel=1e-12)
        c_rec = np.sum(W1**2, axis=2) - W2[:, 0, :] ** 2
        np.testing.assert_allclose(c_rec, c, atol=1e-14)
        assert run["max_rel_c_drift"] == pytest.approx(np.max(np.abs(c_rec - run["c_init"]) / 0.1), rel=1e-9)
        assert run["s_final"] == np.sign(W2[-1, 0]).astype(int).tolist()
        assert flips.tolist() == run["sign_flips"]
        assert np.all(W1[0] >= 0) and np.all(W2[0] > 0)  # the toy init: alive inputs, positive outputs
        assert m["mean_Y2"] == pytest.approx(np.mean(Y**2), rel=1e-14)
        np.testing.assert_allclose(Y[:, 0], -X.sum(1), rtol=0, atol=0)


def test_topo_breast_cancer_quick_every_test_bce_recomputes(tmp_path):
    m = run_to_completion(run_experiment("topo-breast-cancer", tmp_path, quick=True, seed=0))
    assert m["ls"] == list(range(2, 10))
    mean = np.array(m["mean_test_bce"], dtype=float)
    assert mean.shape == (8, 10) and np.isnan(mean[0, 3]) and np.all(np.isfinite(mean[7]))
    assert (tmp_path / "breast_cancer.png").exists() and (tmp_path / "metrics.json").exists()
    with np.load(tmp_path / "sweep.npz", allow_pickle=False) as z:
        runs, W1, W2, bce = z["runs"], z["W1"], z["W2"], z["test_bce"]
        X, y = z["X_test"], z["Y_test"][:, 0]
        ls, npz_mean, npz_std = z["ls"], z["mean"], z["std"]
    assert runs.shape == (m["n_inits"] * sum(l + 1 for l in ls), 3) and W1.shape == (len(runs), 9, 30)
    # Every run's held-out BCE from its weights; the padding beyond its l is zero.
    for r, (l, _, _) in enumerate(runs):
        assert not W1[r, l:].any() and not W2[r, l:].any()
        F = np.maximum(X @ W1[r, :l].T, 0.0) @ W2[r, :l]
        assert np.mean(np.logaddexp(0.0, F) - y * F) == pytest.approx(bce[r], abs=1e-10)
    # Cell statistics from the per-run numbers.
    for a, l in enumerate(ls):
        for lp in range(l + 1):
            cell = bce[(runs[:, 0] == l) & (runs[:, 1] == lp)]
            assert mean[a, lp] == pytest.approx(cell.mean(), abs=1e-14) == npz_mean[a, lp]
            assert npz_std[a, lp] == pytest.approx(cell.std(), abs=1e-14)


def test_topo_probability_quick_exports_recompute(tmp_path):
    m = run_to_completion(run_experiment("topo-probability", tmp_path, quick=True, seed=0))
    with np.load(tmp_path / "probability.npz", allow_pickle=False) as z:
        d, l, xavier, kaiming, checks = (
            z["d"],
            z["l"],
            z["closed_xavier_normal"],
            z["closed_kaiming_normal"],
            z["checks"],
        )
        torch_p, torch_se, torch_l = z["torch_p"], z["torch_se"], z["torch_l"]
    assert xavier.shape == kaiming.shape == (50, 50) and d.tolist() == l.tolist() == list(range(1, 51))
    np.testing.assert_array_equal(np.array(m["kaiming_normal"]), kaiming)
    # d = 1 has elementary closed forms: F_{1,1}(x) = (2/π) arctan √x, and Xavier's ratio is 1 there.
    np.testing.assert_allclose(kaiming[0], 1 - (2 / np.pi * np.arctan(np.sqrt(l))) ** l, rtol=1e-12)
    np.testing.assert_allclose(xavier[0], 1 - 0.5**l, rtol=1e-12)
    # Monte Carlo checks: z-scores and their maximum from the rows (d, l, scheme, closed, MC, se).
    z_scores = (checks[:, 4] - checks[:, 3]) / checks[:, 5]
    assert m["max_abs_z"] == pytest.approx(np.max(np.abs(z_scores)), rel=1e-12) and m["max_abs_z"] < 5
    grids = (xavier, kaiming)
    for dd, ll, s, closed, _, _ in checks:
        assert closed == grids[int(s)][int(dd) - 1, int(ll) - 1]
    assert m["pytorch_default"]["d1_exact"] == pytest.approx(1 - (1 - 1 / (2 * np.sqrt(torch_l))) ** torch_l)
    assert np.all(np.abs(torch_p[0] - m["pytorch_default"]["d1_exact"]) < 5 * torch_se[0])
    assert m["d30_l1"]["kaiming_normal"] == kaiming[29, 0]
