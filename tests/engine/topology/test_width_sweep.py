"""The batched Fig. 4 sweep against the unbatched per-run path, and its typed results."""

import dataclasses

import numpy as np
import pytest

from engine.core import datasets
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.topology.width_sweep import (
    SweepProgress,
    SweepResult,
    SweepSettings,
    breast_cancer_sweep,
    held_out_bce,
    sweep_init,
    train_run_bce,
)

SMALL = SweepSettings(ls=[2, 4], n_inits=2, steps=40, sign_policy="independent")


def test_batched_sweep_equals_per_run_training():
    partials = []
    res = run_to_completion(
        breast_cancer_sweep(SMALL, chunk=5), lambda u: u.partial is not None and partials.append(u.partial)
    )
    assert isinstance(res, SweepResult) and res.settings == SMALL
    split = datasets.breast_cancer(seed=0)
    assert res.runs.shape == (2 * (3 + 5), 3) and res.W1.shape == (16, 4, 30) and res.W2.shape == (16, 4)
    for r, ((l, lp, i), bce) in enumerate(zip(res.runs, res.test_bce)):
        p = sweep_init(30, l, lp, i, 0, sign_policy="independent")
        assert np.sum(p.W1**2, 1) - p.W2[0] ** 2 == pytest.approx([1.0] * lp + [-1.0] * (l - lp))
        q = train_run_bce(split.X_train, split.Y_train, p, 0.1, 40)
        assert held_out_bce(q) == pytest.approx(bce, abs=1e-12)
        # The stored final weights are this run's, padded with zero neurons.
        np.testing.assert_allclose(res.W1[r, :l], q.W1, atol=1e-12)
        np.testing.assert_allclose(res.W2[r, :l], q.W2[0], atol=1e-12)
        assert not res.W1[r, l:].any() and not res.W2[r, l:].any()
    assert np.isnan(res.mean[0, 3]) and np.isfinite(res.mean[1, 4])
    # Partials count up to the result; their cells agree with it where a cell is complete.
    assert all(isinstance(p, SweepProgress) for p in partials)
    assert [p.done for p in partials] == sorted(p.done for p in partials) and partials[-1].done == 16
    np.testing.assert_array_equal(partials[-1].mean, res.mean)


def test_chunking_and_threads_change_only_rounding():
    # Other chunk sizes change the GEMM shapes, so the last bits may differ, nothing more.
    a = run_to_completion(breast_cancer_sweep(SMALL, chunk=3, threads=1))
    b = run_to_completion(breast_cancer_sweep(SMALL, chunk=64, threads=2))
    np.testing.assert_allclose(a.test_bce, b.test_bce, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.W1, b.W1, rtol=0, atol=1e-12)


def test_settings_are_checked_before_any_job_exists():
    with pytest.raises(EngineInputError, match="sign policy"):
        SweepSettings(sign_policy="mixed")
    with pytest.raises(EngineInputError, match="lr"):
        SweepSettings(lr=-1.0)
    with pytest.raises(EngineInputError, match="inits"):
        SweepSettings(n_inits=0)
    with pytest.raises(EngineInputError, match="hidden size"):
        SweepSettings(ls=[2, 2.5])
    assert SweepSettings(ls=range(2, 4)).ls == (2, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        SMALL.steps = 3
