"""engine/topology/unit_invariants.py against invariants written out here from the weight tensors."""

import copy
import json

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.core.errors import EngineInputError
from engine.topology.probability import obstruction_probability, obstruction_probability_mc
from engine.topology.unit_invariants import (
    LayerInvariants,
    initial_negative_share,
    invariant_drift,
    invariants_report,
    layer_invariants,
)

SIDE = 8  # input images are SIDE × SIDE


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)).double()


def _cnn_sequential(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(2, 3, 3),  # 8 → 6
        nn.ReLU(),
        nn.MaxPool2d(2),  # 6 → 3
        nn.Conv2d(3, 4, 3, padding=1),  # 3 → 3
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 1),
    ).double()


class _FunctionalCNN(nn.Module):
    """The same CNN written with functional calls and a view, as hand-written models often are."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 3, 3)
        self.conv2 = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4 * 3 * 3, 1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = torch.relu(self.conv2(x))
        return self.head(x.view(x.size(0), -1))


def _cnn_functional(seed=0):
    torch.manual_seed(seed)
    return _FunctionalCNN().double()


def _cnn_parts(model):
    """(conv1, conv2, head) of either CNN."""
    if isinstance(model, nn.Sequential):
        return model[0], model[3], model[6]
    return model.conv1, model.conv2, model.head


def _mlp_expected(model):
    """Per hidden layer, c from the tensors: rows of W_i and b_i against the columns of W_{i+1}."""
    lin = [m for m in model if isinstance(m, nn.Linear)]
    out = []
    for a, b in zip(lin[:-1], lin[1:]):
        W, bias, V = a.weight.detach().numpy(), a.bias.detach().numpy(), b.weight.detach().numpy()
        out.append(np.array([W[k] @ W[k] + bias[k] ** 2 - V[:, k] @ V[:, k] for k in range(W.shape[0])]))
    return out


def _cnn_expected(model):
    """c of conv1's and conv2's channels, each written as its own loop over the tensors."""
    conv1, conv2, head = _cnn_parts(model)
    W1, b1 = conv1.weight.detach().numpy(), conv1.bias.detach().numpy()
    W2, b2 = conv2.weight.detach().numpy(), conv2.bias.detach().numpy()
    H = head.weight.detach().numpy()
    c1 = [float(np.sum(W1[k] ** 2) + b1[k] ** 2 - np.sum(W2[:, k, :, :] ** 2)) for k in range(3)]
    with torch.no_grad():  # the spatial size at the flatten, from a forward pass
        x = torch.zeros(1, 2, SIDE, SIDE, dtype=torch.float64)
        S = int(np.prod(conv2(F.max_pool2d(conv1(x), 2)).shape[2:]))
    c2 = [float(np.sum(W2[k] ** 2) + b2[k] ** 2 - np.sum(H[:, k * S : (k + 1) * S] ** 2)) for k in range(4)]
    return [np.array(c1), np.array(c2)]


def _close(a, b, rtol=1e-12):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(b)))))


def _example():
    return torch.zeros(2, 2, SIDE, SIDE, dtype=torch.float64)


# --- c and the law, against the tensors --------------------------------------------------------


def test_mlp_c_matches_the_tensors_and_every_law_is_rescaling():
    model = _mlp()
    layers = layer_invariants(model)
    assert [inv.name for inv in layers] == ["0.weight", "2.weight"]
    assert [inv.outgoing for inv in layers] == [("2.weight",), ("4.weight",)]
    for inv, expected in zip(layers, _mlp_expected(model)):
        assert isinstance(inv, LayerInvariants) and inv.c.dtype == np.float64
        _close(inv.c, expected)
        assert inv.law == "rescaling", inv.reason
        assert inv.negative_share == pytest.approx(np.mean(expected < 0))


@pytest.mark.parametrize("build", [_cnn_sequential, _cnn_functional])
@pytest.mark.parametrize("with_example", [False, True])
def test_cnn_channel_c_matches_the_tensors_through_pooling_and_flatten(build, with_example):
    model = build()
    layers = layer_invariants(model, example_input=_example() if with_example else None)
    assert len(layers) == 2
    for inv, expected in zip(layers, _cnn_expected(model)):
        _close(inv.c, expected)
        assert inv.law == "rescaling", inv.reason
    # the head reads 36 numbers per unit of conv2's 4 channels: v is no single number, nothing is locked
    assert all(inv.locked.size == 0 for inv in layers)


def test_a_state_dict_gives_the_weights_and_the_model_is_not_touched():
    model, other = _mlp(0), _mlp(1)
    before = copy.deepcopy(model.state_dict())
    layers = layer_invariants(model, other.state_dict())
    for inv, expected in zip(layers, _mlp_expected(other)):
        _close(inv.c, expected)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


class _GroupedCNN(nn.Module):
    """Leaky ReLU, average pooling, dropout, a grouped convolution and a mean over the spatial axes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3)
        self.drop = nn.Dropout(0.5)
        self.conv2 = nn.Conv2d(4, 6, 3, groups=2)
        self.head = nn.Linear(6, 1)

    def forward(self, x):
        x = self.drop(F.avg_pool2d(F.leaky_relu(self.conv1(x), 0.1), 1))
        return self.head(F.relu(self.conv2(x)).mean((2, 3)))  # global average pooling as a mean


def test_grouped_convolution_reads_each_channel_in_its_own_group():
    torch.manual_seed(4)
    model = _GroupedCNN().double().eval()
    layers = layer_invariants(model, example_input=_example())
    assert [inv.law for inv in layers] == ["rescaling", "rescaling"]
    W1, b1 = model.conv1.weight.detach().numpy(), model.conv1.bias.detach().numpy()
    W2 = model.conv2.weight.detach().numpy()  # (6, 2, 3, 3): outputs 0–2 read inputs 0–1, outputs 3–5 inputs 2–3
    v_sq = [np.sum(W2[3 * (k // 2) : 3 * (k // 2) + 3, k % 2] ** 2) for k in range(4)]
    _close(layers[0].c, np.array([np.sum(W1[k] ** 2) + b1[k] ** 2 - v_sq[k] for k in range(4)]))
    b2, H = model.conv2.bias.detach().numpy(), model.head.weight.detach().numpy()
    _close(layers[1].c, np.array([np.sum(W2[k] ** 2) + b2[k] ** 2 - H[0, k] ** 2 for k in range(6)]))
    # and the symmetry it stands for: rescaling channel 3 by that v keeps the function
    x = torch.randn(3, 2, SIDE, SIDE, dtype=torch.float64)
    with torch.no_grad():
        y0 = model(x)
        model.conv1.weight[3] *= 1.9
        model.conv1.bias[3] *= 1.9
        model.conv2.weight[3:6, 1] /= 1.9
        np.testing.assert_allclose(model(x).numpy(), y0.numpy(), rtol=1e-12, atol=1e-12)


# --- locked units ------------------------------------------------------------------------------


def _mlp_with_locked_units(seed=0):
    """The MLP with four last-hidden units pushed to c < 0 by growing their outgoing weight."""
    model = _mlp(seed)
    with torch.no_grad():
        model[4].weight[0, [1, 4, 6]] = torch.tensor([1.5, -2.0, 2.5], dtype=torch.float64)
        model[2].weight[3] *= 0.1  # a small incoming side makes unit 3 negative too
        model[2].bias[3] *= 0.1
        model[4].weight[0, 3] = 0.5
    return model


def test_locked_units_are_exactly_the_last_hidden_layers_negative_ones():
    model = _mlp_with_locked_units()
    first, last = layer_invariants(model)
    expected = _mlp_expected(model)
    assert np.sum(expected[1] < 0) >= 3
    np.testing.assert_array_equal(last.locked, np.nonzero(expected[1] < 0)[0])
    assert last.locked.dtype == np.int64
    assert np.sum(expected[0] < 0) > 0 and first.locked.size == 0  # v has 8 entries there: nothing locked


def test_a_scalar_head_on_a_pooled_channel_locks_it():
    torch.manual_seed(3)
    model = nn.Sequential(
        nn.Conv2d(1, 3, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 1)
    ).double()
    with torch.no_grad():
        model[4].weight[0, 0] = 5.0  # ‖v‖² = 25 > ‖w‖² + b²
    (inv,) = layer_invariants(model)
    W, b, v = model[0].weight.detach().numpy(), model[0].bias.detach().numpy(), model[4].weight.detach().numpy()
    expected = np.array([np.sum(W[k] ** 2) + b[k] ** 2 - v[0, k] ** 2 for k in range(3)])
    _close(inv.c, expected)
    assert inv.law == "rescaling"
    np.testing.assert_array_equal(inv.locked, np.nonzero(expected < 0)[0])
    assert 0 in inv.locked


# --- rescaling one unit ------------------------------------------------------------------------


def _rescale_cnn_unit(model, layer, k, a):
    """Multiply unit k's incoming side by a and divide its outgoing side by a, written out by hand."""
    conv1, conv2, head = _cnn_parts(model)
    with torch.no_grad():
        if layer == 0:
            conv1.weight[k] *= a
            conv1.bias[k] *= a
            conv2.weight[:, k] /= a
        else:
            S = head.in_features // conv2.out_channels
            conv2.weight[k] *= a
            conv2.bias[k] *= a
            head.weight[:, k * S : (k + 1) * S] /= a


def _cnn_sides(model, layer, k):
    """(‖w‖² + b², ‖v‖²) of unit k of the CNN's conv ``layer``, from the tensors."""
    conv1, conv2, head = _cnn_parts(model)
    conv = (conv1, conv2)[layer]
    W, b = conv.weight.detach(), conv.bias.detach()
    incoming = float(torch.sum(W[k] ** 2) + b[k] ** 2)
    if layer == 0:
        return incoming, float(torch.sum(conv2.weight.detach()[:, k] ** 2))
    S = head.in_features // conv.out_channels
    return incoming, float(torch.sum(head.weight.detach()[:, k * S : (k + 1) * S] ** 2))


@pytest.mark.parametrize("build", [_cnn_sequential, _cnn_functional])
@pytest.mark.parametrize("layer, k", [(0, 1), (1, 2), (1, 0)])
def test_rescaling_a_conv_channel_keeps_the_function_and_its_layers_other_c(build, layer, k):
    """The symmetry behind the law. Only the other units of the same layer keep their c: the rescaled
    unit's v is part of the next layer's incoming weights and its w of the previous layer's v."""
    model = build()
    x = torch.randn(6, 2, SIDE, SIDE, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    before = [inv.c for inv in layer_invariants(model)]
    with torch.no_grad():
        y0 = model(x)
    a = 2.7
    incoming, outgoing = _cnn_sides(model, layer, k)
    _rescale_cnn_unit(model, layer, k, a)
    with torch.no_grad():
        y1 = model(x)
    np.testing.assert_allclose(y1.numpy(), y0.numpy(), rtol=1e-12, atol=1e-12)
    after = [inv.c for inv in layer_invariants(model)]
    others = np.arange(before[layer].size) != k
    _close(after[layer][others], before[layer][others])
    _close(after[layer][k], a * a * incoming - outgoing / (a * a))
    for inv_c, expected in zip(after, _cnn_expected(model)):
        _close(inv_c, expected)


def test_rescaling_an_mlp_unit_keeps_the_function_and_its_layers_other_c():
    model = _mlp()
    x = torch.randn(10, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    before = [inv.c for inv in layer_invariants(model)]
    with torch.no_grad():
        y0 = model(x)
        model[2].weight[5] *= 0.3
        model[2].bias[5] *= 0.3
        model[4].weight[:, 5] /= 0.3
        y1 = model(x)
    np.testing.assert_allclose(y1.numpy(), y0.numpy(), rtol=1e-12, atol=1e-12)
    after = [inv.c for inv in layer_invariants(model)]
    _close(np.delete(after[1], 5), np.delete(before[1], 5))
    for inv_c, expected in zip(after, _mlp_expected(model)):
        _close(inv_c, expected)


# --- training ----------------------------------------------------------------------------------


def _gd(model, X, Y, h, steps):
    """Plain gradient descent on the MSE; the checkpoints (all steps) and max ‖∇L‖² seen."""
    states, grad_sq = [copy.deepcopy(model.state_dict())], 0.0
    params = list(model.parameters())
    for _ in range(steps):
        loss = torch.mean((model(X) - Y) ** 2)
        grads = torch.autograd.grad(loss, params)
        grad_sq = max(grad_sq, float(sum(torch.sum(g * g) for g in grads)))
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= h * g
        states.append(copy.deepcopy(model.state_dict()))
    return states, grad_sq


def _mlp_data():
    g = torch.Generator().manual_seed(5)
    X = torch.randn(40, 5, dtype=torch.float64, generator=g)
    return X, torch.sin(X.sum(dim=1, keepdim=True))


def _cnn_data():
    g = torch.Generator().manual_seed(6)
    X = torch.randn(12, 2, SIDE, SIDE, dtype=torch.float64, generator=g)
    return X, X.mean(dim=(1, 2, 3)).unsqueeze(1)


def _independent_c(model, state, which):
    probe = copy.deepcopy(model)
    probe.load_state_dict(state)
    return (_mlp_expected if which == "mlp" else _cnn_expected)(probe)


@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_gradient_descent_drift_is_first_order_in_the_step(which):
    build, data = (_mlp, _mlp_data) if which == "mlp" else (_cnn_sequential, _cnn_data)
    X, Y = data()
    T, drifts = 1e-2, []
    for h in (1e-4, 5e-5):
        model = build()
        steps = round(T / h)
        states, grad_sq = _gd(model, X, Y, h, steps)
        drift = invariant_drift(model, states)
        # The reported drift is c(t) − c(0) of the same checkpoints, computed independently.
        c0 = _independent_c(model, states[0], which)
        for t in (0, steps // 2, steps):
            ct = _independent_c(model, states[t], which)
            for (name, d), e0, et, inv in zip(drift, c0, ct, layer_invariants(model)):
                assert name == inv.name
                assert d.shape == (steps + 1, e0.size)
                np.testing.assert_allclose(d[t], et - e0, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(e0).max()))
        worst = max(float(np.max(np.abs(d))) for _, d in drift)
        # Each step changes c_k by h²(‖g_in‖² − ‖g_out‖²) (MATH A2), at most h²·‖∇L‖².
        assert 0 < worst <= h * T * grad_sq
        drifts.append(worst)
    assert 1.6 <= drifts[0] / drifts[1] <= 2.4


def test_no_locked_units_outgoing_weight_changes_sign_under_small_steps():
    model = _mlp_with_locked_units()
    X, Y = _mlp_data()
    Y = -3.0 * Y  # a target that pulls the output weights around
    locked = layer_invariants(model)[1].locked
    assert locked.size >= 3
    states, _ = _gd(model, X, Y, 1e-3, 400)
    v = np.array([s["4.weight"][0].numpy() for s in states])  # (T, 8)
    assert np.all(np.sign(v[:, locked]) == np.sign(v[0, locked]))
    for s in states[::50]:
        np.testing.assert_array_equal(layer_invariants(model, s)[1].locked, locked)
    assert not np.allclose(v[-1], v[0])  # the run did move the weights


# --- the other laws and bad inputs ---------------------------------------------------------------


def test_batch_norm_after_convolutions_reports_scale_and_is_scale_invariant():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(2, 3, 3),
        nn.BatchNorm2d(3, eps=1e-300),  # ε below rounding: exact invariance; the default 1e-5 only nearly (MATH A9)
        nn.ReLU(),
        nn.Conv2d(3, 4, 3),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4, 1),
    ).double()
    layers = layer_invariants(model)
    assert [inv.law for inv in layers] == ["scale", "scale"]
    assert all("BatchNorm2d" in inv.reason and inv.locked.size == 0 for inv in layers)
    # What the law says: with batch statistics, L(a w, a b) = L(w, b) for one channel (ε negligible).
    x, y = torch.randn(8, 2, SIDE, SIDE, dtype=torch.float64), torch.randn(8, 1, dtype=torch.float64)
    model.train()
    with torch.no_grad():
        loss0 = float(torch.mean((model(x) - y) ** 2))
        model[0].weight[1] *= 3.0
        model[0].bias[1] *= 3.0
        assert float(torch.mean((model(x) - y) ** 2)) == pytest.approx(loss0, rel=1e-12)


def test_gelu_net_reports_none():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 1)).double()
    layers = layer_invariants(model)
    assert [inv.law for inv in layers] == ["none", "none"]
    assert "GELU" in layers[0].reason and "Tanh" in layers[1].reason
    assert all(inv.locked.size == 0 for inv in layers)
    _close(layers[0].c, _mlp_expected(model)[0])  # c is computed whatever the law


class _Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 6)
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 6)
        self.out = nn.Linear(6, 1)

    def forward(self, x):
        h = F.relu(self.inp(x))
        h = F.relu(h + self.b(F.relu(self.a(h))))
        return self.out(h)


def test_residual_block_reports_none_for_the_units_feeding_the_add():
    layers = {inv.name: inv for inv in layer_invariants(_Residual().double())}
    assert set(layers) == {"inp.weight", "a.weight", "b.weight"}
    assert layers["a.weight"].law == "rescaling"
    for name in ("inp.weight", "b.weight"):
        assert layers[name].law == "none" and "residual sum" in layers[name].reason
    # inp's units are read by a and, through the sum, by out
    assert layers["inp.weight"].outgoing == ("a.weight", "out.weight")


class _NormedResidual(nn.Module):
    """A ResNet basic block: every convolution is followed by a BatchNorm before the sum."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn0 = nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3, eps=1e-300)
        self.conv1, self.bn1 = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3, eps=1e-300)
        self.conv2, self.bn2 = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3, eps=1e-300)
        self.head = nn.Linear(3, 1)

    def forward(self, x):
        x = F.relu(self.bn0(self.stem(x)))
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(F.relu(x + y), 1), 1))


def test_a_batch_norm_before_the_residual_sum_keeps_the_scale_law():
    torch.manual_seed(0)
    model = _NormedResidual().double().train()
    layers = {inv.name: inv for inv in layer_invariants(model)}
    assert {name: inv.law for name, inv in layers.items()} == {
        "stem.weight": "scale",
        "conv1.weight": "scale",
        "conv2.weight": "scale",
    }
    assert layers["stem.weight"].outgoing == ("conv1.weight", "head.weight")
    # the sum comes after the normalization, which has already absorbed the scale
    x, y = torch.randn(4, 2, SIDE, SIDE, dtype=torch.float64), torch.randn(4, 1, dtype=torch.float64)
    with torch.no_grad():
        loss0 = float(torch.mean((model(x) - y) ** 2))
        model.conv2.weight[2] *= 0.4
        model.stem.weight[0] *= 2.5
        model.stem.bias[0] *= 2.5
        assert float(torch.mean((model(x) - y) ** 2)) == pytest.approx(loss0, rel=1e-12)


class _Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.out = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 1)

    def forward(self, x):
        return self.out(F.relu(self.b(F.relu(self.b(F.relu(self.a(x)))))))


def test_a_layer_called_twice_is_one_layer_whose_units_and_readers_report_none():
    layers = layer_invariants(_Shared().double())
    assert [inv.name for inv in layers] == ["a.weight", "b.weight"]
    assert [inv.law for inv in layers] == ["none", "none"]
    assert all("called 2 times" in inv.reason for inv in layers)
    assert layers[1].outgoing == ("b.weight", "out.weight")


def test_a_model_without_hidden_units_is_refused():
    with pytest.raises(EngineInputError, match="no hidden units"):
        layer_invariants(nn.Linear(3, 1))
    with pytest.raises(EngineInputError, match="no hidden units"):
        layer_invariants(nn.Sequential(nn.Linear(3, 2), nn.ReLU()))


class _Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 1)

    def forward(self, x):
        h = self.a(x)
        if h.sum() > 0:  # data-dependent: fx cannot trace it
            h = F.relu(h)
        return self.b(h)


def test_untraceable_model_is_one_line_error_and_a_sequential_of_it_is_read_by_children():
    with pytest.raises(EngineInputError, match="cannot be traced") as err:
        layer_invariants(_Branchy())
    assert "\n" not in str(err.value)
    torch.manual_seed(0)
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1), _Branchy()).double()
    layers = layer_invariants(seq)
    assert [inv.law for inv in layers] == ["rescaling", "rescaling"]
    lin = [seq[0], seq[2], seq[4]]
    _close(layers[0].c, _mlp_expected(nn.Sequential(*lin))[0])


def test_other_architectures_and_bad_states_are_refused():
    model = _mlp()
    wider = nn.Sequential(nn.Linear(5, 9), nn.ReLU(), nn.Linear(9, 8), nn.ReLU(), nn.Linear(8, 1)).double()
    with pytest.raises(EngineInputError, match="checkpoint 1 is of another architecture") as err:
        invariant_drift(model, [model.state_dict(), wider.state_dict()])
    assert "\n" not in str(err.value)
    state = dict(model.state_dict())
    del state["2.bias"]
    with pytest.raises(EngineInputError, match="2.bias"):
        layer_invariants(model, state)
    with pytest.raises(EngineInputError, match="states is empty"):
        invariant_drift(model, [])
    with pytest.raises(EngineInputError, match="example_input does not fit"):
        layer_invariants(_cnn_sequential(), example_input=torch.zeros(1, 3, SIDE, SIDE, dtype=torch.float64))


def test_a_reshape_that_is_not_a_flatten_is_not_followed_with_an_example_input():
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.head = nn.Conv2d(1, 2, 3), nn.Linear(6, 1)

        def forward(self, x):  # (N, 2, 3, 3) → (N, 3, 6): channels interleave along the last axis
            return self.head(F.relu(self.conv(x)).reshape(x.shape[0], 3, 6)).sum(dim=1)

    (inv,) = layer_invariants(Odd(), example_input=torch.zeros(1, 1, 5, 5))
    assert inv.law == "none" and "reshape" in inv.reason


# --- at initialization -------------------------------------------------------------------------


def test_initial_negative_share_of_pytorch_default_init_agrees_with_paper_a_monte_carlo():
    d, l, draws = 3, 4, 3000
    model = nn.Sequential(nn.Linear(d, l), nn.ReLU(), nn.Linear(l, 1))
    share = initial_negative_share(model, draws=draws, seed=0)
    assert set(share) == {"0.weight"}
    # nn.Linear's default init is the "pytorch" scheme of MATH A1 (biases included); paper A's Monte
    # Carlo gives P[some c_k < 0] = 1 − (1 − p)^l for independent units, so p = 1 − (1 − P)^(1/l).
    P, P_se = obstruction_probability_mc(d, l, "pytorch", n_samples=200_000, seed=1, bias=True)
    p = 1 - (1 - P) ** (1 / l)
    p_se = P_se * (1 - P) ** (1 / l - 1) / l
    se = np.sqrt(p * (1 - p) / (draws * l) + p_se**2)
    assert 0.01 < p < 0.99
    assert abs(share["0.weight"] - p) < 4 * se


def test_initial_negative_share_of_a_kaiming_factory_agrees_with_the_closed_form():
    d, l, draws = 4, 5, 2000

    def factory():
        m = nn.Sequential(nn.Linear(d, l, bias=False), nn.ReLU(), nn.Linear(l, 1, bias=False))
        nn.init.kaiming_normal_(m[0].weight, nonlinearity="relu")
        nn.init.kaiming_normal_(m[2].weight, nonlinearity="relu")
        return m

    share = initial_negative_share(factory, draws=draws, seed=3)["0.weight"]
    p = 1 - (1 - obstruction_probability(d, l, "kaiming_normal")) ** (1 / l)  # MATH A7, per unit
    assert abs(share - p) < 4 * np.sqrt(p * (1 - p) / (draws * l))


def test_initial_negative_share_is_seeded_and_leaves_the_callers_generator_alone():
    model = _mlp()
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    a = initial_negative_share(model, draws=5, seed=7)
    assert torch.equal(torch.rand(3), expected_next)
    assert a == initial_negative_share(model, draws=5, seed=7)
    assert a != initial_negative_share(model, draws=5, seed=8)
    with pytest.raises(EngineInputError, match="draws"):
        initial_negative_share(model, draws=0)
    with pytest.raises(EngineInputError, match="model_factory_or_model"):
        initial_negative_share(3)


def test_report_is_json_ready_and_numbers_locked_units_from_one():
    layers = layer_invariants(_mlp_with_locked_units())
    report = json.loads(json.dumps(invariants_report(layers)))
    assert [r["name"] for r in report["layers"]] == ["0.weight", "2.weight"]
    last = report["layers"][1]
    assert last["locked"] == [int(k) + 1 for k in layers[1].locked] and last["units"] == 8
    assert last["c"] == pytest.approx(list(layers[1].c), rel=1e-15)
    assert report["units"] == 16 and report["locked_units"] == len(layers[1].locked)
    assert report["laws"] == {"rescaling": 2, "scale": 0, "none": 0}
    assert set(last) == {"name", "law", "reason", "units", "negative_share", "locked", "c", "outgoing"}


# --- exported graphs (torch.export archives read by engine.io.pt2_program) ------------------------


def _exported(model, x, path):
    """``model`` through ``torch.export`` with a dynamic batch, saved and read back as the app reads a .pt2."""
    from engine.io.pt2_program import read_exported_module

    ep = torch.export.export(model.eval(), (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(ep, path)
    return read_exported_module(path).module


_EXPORTED_CASES = {
    "deep ReLU MLP with biases": (_mlp_with_locked_units, lambda: torch.zeros(2, 5, dtype=torch.float64)),
    "plain ReLU CNN": (_cnn_sequential, _example),
    "functional CNN with a view": (_cnn_functional, _example),
}


@pytest.mark.parametrize("case", list(_EXPORTED_CASES))
def test_an_exported_graph_gives_the_modules_invariants_names_laws_and_locked_units(tmp_path, case):
    build, example = _EXPORTED_CASES[case]
    model = build()
    graph = _exported(model, example(), tmp_path / "m.pt2")
    assert not any(node.op == "call_module" for node in graph.graph.nodes)  # ATen calls on get_attr weights
    expected = _mlp_expected(model) if case.startswith("deep") else _cnn_expected(model)
    ours, theirs = layer_invariants(graph), layer_invariants(model)
    names = [name for name, _ in model.named_parameters() if name.endswith("weight")]
    assert [inv.name for inv in ours] == names[:-1] == [inv.name for inv in theirs]
    assert [inv.outgoing for inv in ours] == [(name,) for name in names[1:]]
    for mine, module, c in zip(ours, theirs, expected, strict=True):
        _close(mine.c, c)  # against the tensors, written out independently
        _close(mine.c, module.c)
        assert mine.law == module.law == "rescaling", mine.reason
        np.testing.assert_array_equal(mine.locked, module.locked)
    if case.startswith("deep"):
        assert ours[1].locked.size >= 3  # the case has locked units to agree on
    # given an example input too, the same
    for mine, module in zip(layer_invariants(graph, example_input=example()), theirs):
        _close(mine.c, module.c)
        assert mine.law == module.law


def test_a_state_dict_of_the_module_is_a_checkpoint_of_its_exported_graph(tmp_path):
    graph = _exported(_cnn_sequential(0), _example(), tmp_path / "m.pt2")
    other, later = _cnn_sequential(1), _cnn_sequential(2)
    for inv, c in zip(layer_invariants(graph, other.state_dict()), _cnn_expected(other)):
        _close(inv.c, c)
    drift = invariant_drift(graph, [other.state_dict(), later.state_dict()])
    assert [name for name, _ in drift] == ["0.weight", "3.weight"]
    for (_name, dc), c0, c1 in zip(drift, _cnn_expected(other), _cnn_expected(later), strict=True):
        assert dc.shape == (2, c0.size)
        _close(dc[1], c1 - c0)
        assert not np.any(dc[0])
    with pytest.raises(EngineInputError, match="another architecture"):
        invariant_drift(graph, [_mlp().state_dict()])


def test_an_exported_batch_norm_reports_the_training_scale_law_and_why(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 1)
    ).double()
    with torch.no_grad():  # running statistics that are not the identity map
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    (inv,) = layer_invariants(_exported(model, _example(), tmp_path / "bn.pt2"))
    assert inv.law == "scale" == layer_invariants(model)[0].law
    assert "running statistics" in inv.reason and "in training" in inv.reason
    # what the reason says of the eval graph: rescaling (w, b) and dividing v changes its function
    x = torch.randn(3, 2, SIDE, SIDE, dtype=torch.float64)
    model.eval()
    with torch.no_grad():
        y0 = model(x)
        model[0].weight[0] *= 2.0
        model[0].bias[0] *= 2.0
        model[5].weight[:, 0] /= 2.0
        assert not torch.allclose(model(x), y0, rtol=1e-6, atol=1e-9)


def test_exported_non_homogeneous_mixing_and_residual_ops_report_none(tmp_path):
    torch.manual_seed(0)
    smooth = nn.Sequential(
        nn.Linear(5, 4), nn.GELU(), nn.Linear(4, 4), nn.ReLU6(), nn.Linear(4, 3), nn.LayerNorm(3), nn.Linear(3, 1)
    ).double()
    x = torch.zeros(2, 5, dtype=torch.float64)
    layers = layer_invariants(_exported(smooth, x, tmp_path / "s.pt2"))
    assert [inv.law for inv in layers] == ["none", "none", "none"]
    assert "gelu" in layers[0].reason and "hardtanh" in layers[1].reason and "layer_norm" in layers[2].reason
    for inv, c in zip(layers, _mlp_expected(nn.Sequential(*[m for m in smooth if not isinstance(m, nn.LayerNorm)]))):
        _close(inv.c, c)  # c whatever the law
    residual = {
        inv.name: inv
        for inv in layer_invariants(_exported(_Residual().double(), torch.zeros(2, 4).double(), tmp_path / "r.pt2"))
    }
    assert residual["a.weight"].law == "rescaling"
    assert residual["inp.weight"].law == residual["b.weight"].law == "none"
    assert "residual sum" in residual["b.weight"].reason
    assert residual["inp.weight"].outgoing == ("a.weight", "out.weight")


def test_an_exported_flatten_from_another_axis_is_not_followed(tmp_path):
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.head = nn.Conv2d(2, 3, 3), nn.Linear(6, 1)

        def forward(self, x):  # (N, 3, 6, 6) → (N, 18, 6): the head reads along the rows, not per channel
            return self.head(torch.flatten(F.relu(self.conv(x)), 1, 2)).sum((1, 2))

    (inv,) = layer_invariants(_exported(Odd().double(), _example(), tmp_path / "odd.pt2"))
    assert inv.law == "none" and "does not follow" in inv.reason


def test_initial_negative_share_of_an_exported_graph_needs_a_factory(tmp_path):
    graph = _exported(_mlp(), torch.zeros(2, 5, dtype=torch.float64), tmp_path / "m.pt2")
    with pytest.raises(EngineInputError, match="reset_parameters"):
        initial_negative_share(graph, draws=2)
    assert set(initial_negative_share(lambda: _mlp(), draws=2)) == {"0.weight", "2.weight"}
