import itertools

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.topology.initialization import initial_params
from engine.topology.invariants import (
    SignFlip,
    balances,
    beta0,
    component_label,
    counts,
    effective_component_index,
    effective_components,
    invariant_set_summary,
    poincare,
    rescale_to,
    same_component,
    same_effective_component,
    sign_flip_events,
)
from engine.topology.two_layer import TwoLayerNet, TwoLayerParams, forward, init_params


def _kunneth(d, e, c, bias):
    """Direct product of the per-neuron Poincaré polynomials, by repeated multiplication."""
    poly = np.array([1], dtype=object)
    for ck in c:
        n = (d if bias else d - 1) if ck > 0 else (e - 1 if ck < 0 else None)
        if n is None:
            continue  # contractible cone
        factor = np.zeros(n + 1, dtype=object)
        factor[0] += 1
        factor[n] += 1  # 1 + x^n (= 2 when n = 0)
        poly = np.convolve(poly, factor)
    return [int(x) for x in poly]


@pytest.mark.parametrize("d, e, bias", list(itertools.product([1, 2, 4], [1, 3], [False, True])))
def test_poincare_matches_kunneth(d, e, bias):
    rng = np.random.default_rng(d * 10 + e)
    for _ in range(5):
        c = rng.choice([-1.0, 0.0, 2.0], size=rng.integers(1, 7))
        P = poincare(d, e, c, bias)
        assert P == _kunneth(d, e, c, bias)
        assert beta0(d, e, c, bias) == P[0]


def test_beta0_closed_forms_and_summary():
    c = [0.3, -0.2, -1.0, 0.0]
    assert beta0(3, 1, c) == 4 and beta0(1, 1, c) == 8 and beta0(1, 1, c, bias=True) == 4 and beta0(3, 2, c) == 1
    assert effective_components(3, 1, c) == 3
    assert effective_components(1, 1, c) is None and effective_components(3, 2, c) is None
    s = invariant_set_summary(2, 1, c, False)
    assert set(s) == {"l_plus", "l_minus", "l_zero", "poincare", "beta0", "effective_components"}
    assert (s["l_plus"], s["l_minus"], s["l_zero"]) == (1, 2, 1) == counts(c)
    assert s["poincare"] == [4, 4] and s["beta0"] == 4 and s["effective_components"] == 3


@pytest.mark.parametrize("bias, e", [(False, 1), (True, 1), (False, 3), (True, 2)])
def test_rescale_hits_target_and_keeps_function(bias, e):
    rng = np.random.default_rng(5)
    net = TwoLayerNet(d=3, l=5, e=e, bias=bias)
    p = init_params(net, "kaiming_normal", rng)
    if bias:
        p.b1 = rng.normal(size=5)
        p.b2 = rng.normal(size=e)
    target = [2.0, -1.5, 0.0, 1e-3, -40.0]
    q = rescale_to(p, target)
    np.testing.assert_allclose(balances(q.W1, q.W2, q.b1), target, rtol=1e-12, atol=1e-12)
    X = rng.normal(size=(50, 3))
    np.testing.assert_allclose(forward(net, q, X), forward(net, p, X), rtol=1e-12, atol=1e-12)
    assert np.all(np.sign(q.W2) == np.sign(p.W2))  # α > 0 keeps the component


def test_rescale_degenerate_cases():
    p = TwoLayerParams(np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]), np.array([[3.0, 0.0, 0.0]]))
    q = rescale_to(p, [-2.0, 0.5, 0.0])
    np.testing.assert_allclose(balances(q.W1, q.W2), [-2.0, 0.5, 0.0], atol=1e-14)
    for c, msg in (
        ([1.0, 0.5, 0.0], "neuron 0: its input weights are zero"),
        ([-1.0, -0.5, 0.0], "neuron 1: its output weights are zero"),
        ([-1.0, 0.5, 0.1], "neuron 2: all its weights are zero"),
        ([-1.0, 0.5], "c has 2 value"),
        ([-1.0, 0.5, float("nan")], "finite"),
    ):
        with pytest.raises(EngineInputError, match=msg):
            rescale_to(p, c)


def test_component_labels_and_same_component():
    net = TwoLayerNet(d=2, l=3, e=1)
    base = initial_params(net, "kaiming_normal", 0, signs=[1, -1, 1], c=[-0.5, -0.5, 0.5])
    assert component_label(base.W1, base.W2).tolist() == [1, -1, 0]
    flipped_free = base.copy()
    flipped_free.W2[0, 2] *= -1  # free neuron: same component
    assert same_component(base, flipped_free)
    flipped_path = base.copy()
    flipped_path.W2[0, 0] *= -1
    assert not same_component(base, flipped_path)
    swapped = base.copy()
    swapped.W2[0, :2] *= -1  # labels (-1, +1): same sum, so same effective component
    assert not same_component(base, swapped) and same_effective_component(base, swapped)
    assert not same_effective_component(base, flipped_path)
    d1 = TwoLayerParams(np.array([[2.0]]), np.array([[1.0]]))  # d = 1, c > 0: input sign is the label
    assert component_label(d1.W1, d1.W2).tolist() == [1]
    assert same_effective_component(d1, d1) is None


@pytest.mark.parametrize("l", [1, 2, 3, 4])
def test_effective_component_index_brute_force(l):
    """Over every pathological pattern and every label: index equal ⇔ some permutation of the
    neurons maps one label onto the other (permutation + rescaling is the symmetry of Thm. 2),
    and the indices are exactly 0..l−, as many as effective_components counts."""
    for c in itertools.product([-1.0, 1.0], repeat=l):
        path = [k for k in range(l) if c[k] < 0]
        labels = []
        for signs in itertools.product([-1, 1], repeat=len(path)):
            s = [0] * l
            for k, v in zip(path, signs):
                s[k] = v
            labels.append(tuple(s))
        index = {s: effective_component_index(s) for s in labels}
        for a, b in itertools.product(labels, repeat=2):
            related = any(tuple(a[k] for k in perm) == b for perm in itertools.permutations(range(l)))
            assert (index[a] == index[b]) == related, (c, a, b)
        assert sorted(set(index.values())) == list(range(len(path) + 1))
        assert len(set(index.values())) == effective_components(2, 1, c)


def test_effective_component_index_of_real_parameters():
    net = TwoLayerNet(d=3, l=4, e=1)
    p = initial_params(net, "kaiming_normal", 1, signs=[1, -1, -1, 1], c=[-0.5, -0.5, 0.5, -1.0])
    label = component_label(p.W1, p.W2)
    assert label.tolist() == [1, -1, 0, 1]
    assert effective_component_index(label) == 2  # l− = 3, sum 1: class (1 + 3) / 2 of 0..3
    with pytest.raises(EngineInputError, match="label"):
        effective_component_index([2, 0])


def test_sign_flip_events_tell_finite_step_jumps_from_free_flips():
    step = np.array([0, 2, 4, 6])
    c = np.array([[-0.1, 0.1], [-0.1, 0.1], [0.2, 0.1], [0.2, 0.1]])  # neuron 0 drifts free by step 4
    # c is read at the last row before each flip's step; the row is the first that shows the flip
    assert sign_flip_events(step, c, [(2, 0), (3, 1), (6, 0)]) == [
        SignFlip(2, 0, 1, True),
        SignFlip(3, 1, 2, False),
        SignFlip(6, 0, 3, False),
    ]
    assert sign_flip_events(step, c, []) == []
    # A real one: with h = 0.3 the first GD step throws the pathological neuron 0 across v = 0,
    # while the free neuron 1 flips as gradient flow would let it.
    from engine.core.datasets import toy_dataset
    from engine.core.progress import run_to_completion
    from engine.topology.training import TrainConfig, train

    X, Y = toy_dataset(500, 0)
    net = TwoLayerNet(2, 2, 1)
    p = initial_params(net, "uniform", seed=0, a=1.41421356, c=[-0.1, 0.1], signs=[1, 1], positive_inputs=True)
    tr = run_to_completion(train(net, p, X, Y, TrainConfig("gd", lr=0.3, steps=20, stride=1)))
    assert tr.sign_flips == [(1, 0), (1, 1)]
    assert [e.jumped for e in sign_flip_events(tr.step, tr.c, tr.sign_flips)] == [True, False]


def test_bad_dimensions():
    with pytest.raises(EngineInputError, match="d = 0"):
        invariant_set_summary(0, 1, [1.0], False)
    with pytest.raises(EngineInputError, match="empty"):
        invariant_set_summary(2, 1, [], False)
