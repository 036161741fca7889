"""The construction travels (export → load restores splits, verdicts and the λ interval) and grows
by hand (split any admissible neuron, undo)."""

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.io import netfile as netio
from engine.minima import construction as C
from engine.minima import pipeline as F
from engine.minima import workbench as W
from engine.minima.verdicts import Verdict
from tests.networks import strict_minimum_net

SMALL = F.Figure3Settings(
    schedule=((1, 2), (2, 1)), slices=F.SliceSettings(20, 7), path=(-0.5, 2.0, 4), plane=None, descent=(2.0, 5)
)


@pytest.fixture(scope="module")
def built():
    return run_to_completion(F.figure3_job(SMALL))


def export(c, path):
    return netio.save_network(path, c.arch, c.params, c.X, c.Y, history=W.history_of(c))


def test_export_then_load_restores_splits_verdicts_and_interval(built, tmp_path):
    c = built.construction
    loaded = run_to_completion(F.load_figure3_job(export(c, tmp_path / "c.npz"), SMALL.slices, SMALL))
    lc = loaded.construction
    assert lc.splits == c.splits and lc.small_arch == c.small_arch
    assert np.array_equal(lc.small_params, c.small_params) and np.array_equal(lc.params, c.params)
    assert [s.verdict for s in lc.steps[1:]] == [s.verdict for s in c.steps[1:]]
    assert lc.verification.verdict is c.verification.verdict is Verdict.NON_ATTRACTING
    assert lc.verification.interval == c.verification.interval
    assert loaded.path.interval == built.path.interval and loaded.path.verdicts == built.path.verdicts
    assert loaded.saddle.probe.verdict is Verdict.SADDLE
    # The λ slider of the loaded construction moves its last split exactly as the built one does.
    for lam in (0.3, 1.7):
        assert C.move_lambda(lc, lam).verdict is C.move_lambda(c, lam).verdict


def test_a_file_without_history_loads_without_splits(built, tmp_path):
    c = built.construction
    path = netio.save_network(tmp_path / "plain.npz", c.arch, c.params, c.X, c.Y)
    assert run_to_completion(F.load_figure3_job(path, None)).construction.splits == ()


@pytest.fixture(scope="module")
def strict_minimum():
    from engine.minima.report import inspect_network

    net = strict_minimum_net()
    report = inspect_network(net)
    assert report.verdict is Verdict.STRICT_MINIMUM and report.admitting
    step = C.Step("loaded", net.arch.widths, report.loss, report.grad_norm, report.hessian, report.verdict)
    return W.construction_of(net, step, report.neurons)


def test_split_by_hand_flips_with_lambda_and_undo_restores(strict_minimum):
    c = strict_minimum
    layer, neuron = W.admissible_neurons(c)[0]
    badge = next(n.badge for n in c.neurons if (n.layer, n.neuron) == (layer, neuron))
    inside, outside = (0.5, 2.0) if badge.startswith("positive") else (2.0, 0.5)
    split = run_to_completion(W.split_job(c, layer, neuron, inside))
    assert split.arch.widths[layer] == c.arch.widths[layer] + 1 and len(split.steps) == 2
    assert split.verification.verdict is Verdict.NON_ATTRACTING
    assert C.move_lambda(split, outside).verdict is Verdict.SADDLE
    back = W.undo_split(split)
    assert back.arch == c.arch and np.array_equal(back.params, c.params) and back.splits == () and len(back.steps) == 1
    with pytest.raises(EngineInputError, match="no split to undo"):
        W.undo_split(back)
    with pytest.raises(EngineInputError, match="does not exist"):
        run_to_completion(W.split_job(c, 1, 7, 0.5))


def test_slices_over_a_family_carry_the_predicted_dip_fraction(built):
    """Directions over the split pair at the saddle dip as often as predicted (dᵀHd < 0, small t);
    at the minimum nothing is predicted to dip and nothing does."""
    from dataclasses import replace

    c = built.construction
    pair = (c.splits[-1].layer, c.splits[-1].origin, c.splits[-1].new)
    s = F.SliceSettings(K=2000, P=9, T=1e-3, family="pair")
    at_min = run_to_completion(F.slices_job(c.arch, c.params, c.X, c.Y, replace(s, family="all"), pair))
    assert at_min.predicted == 0 and at_min.n_below == 0 and at_min.family == "all parameters"
    saddle = C.move_lambda(c, 2.0).params
    cut = run_to_completion(F.slices_job(c.arch, saddle, c.X, c.Y, s, pair))
    p = cut.predicted
    assert cut.family.startswith("pair") and 0.01 < p < 0.99
    assert abs(cut.frac_below - p) < 4 * np.sqrt(p * (1 - p) / s.K), (cut.frac_below, p)
    with pytest.raises(EngineInputError, match="split a neuron first"):
        run_to_completion(F.slices_job(c.arch, c.params, c.X, c.Y, s, None))
