"""Paper A on a loaded network (engine.topology.obstruction, engine.io.two_layer_file), checked
against computations written here: c in plain numpy from the state_dict's tensors, the Poincaré
polynomial as a Künneth product of per-neuron factors, the forward pass against torch's, the
sign-kept fit against an enumeration of active sets, and conservation under the exact flow."""

import itertools
import json

import numpy as np
import pytest
import torch
from torch import nn

import resources
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.io.two_layer_file import TwoLayer, load_two_layer, save_two_layer
from engine.topology import obstruction as ob
from engine.topology.training import TrainConfig
from tests.files import Payload, pickled_pt2


def build(d, l, e, bias1, bias2, activation="relu", slope=0.01, seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    act = nn.ReLU() if activation == "relu" else nn.LeakyReLU(slope)
    return nn.Sequential(nn.Linear(d, l, bias=bias1), act, nn.Linear(l, e, bias=bias2)).to(dtype)


def kunneth(d, e, c, bias):
    """P(x) as a product over neurons (MATH A4): (1 + x^(d−1 or d)) for c > 0, (1 + x^(e−1)) for
    c < 0, 1 for c = 0, multiplied out with numpy's polynomial product (lowest power first)."""
    p = np.array([1])
    for ck in c:
        if ck == 0:
            continue
        n = (d if bias else d - 1) if ck > 0 else e - 1
        factor = np.zeros(n + 1, dtype=np.int64)
        factor[0] += 1
        factor[n] += 1
        p = np.convolve(p, factor)
    return [int(x) for x in p]


def numpy_c(state: dict) -> np.ndarray:
    """c_k from the tensors themselves: rows of the first weight (and its bias), columns of the second."""
    keys = sorted(k for k in state if k.endswith(".weight"))
    W1, W2 = (state[k].double().numpy() for k in keys)
    c = (W1**2).sum(axis=1) - (W2**2).sum(axis=0)
    b1 = keys[0].replace("weight", "bias")
    return c + state[b1].double().numpy() ** 2 if b1 in state else c


def weights_c(W1, W2, b1=None) -> np.ndarray:
    """c_k from weights W1 (…, l, d), W2 (…, e, l), b1 (…, l): row k of W1 (and b1_k) in, column k of W2 out."""
    c = (W1**2).sum(axis=-1) - (W2**2).sum(axis=-2)
    return c if b1 is None else c + b1**2


CASES = [
    (d, l, e, b1, b2)
    for d, l, e in ((1, 3, 1), (2, 4, 1), (3, 5, 2), (5, 2, 3), (2, 6, 1))
    for b1, b2 in ((False, False), (True, True), (True, False), (False, True))
]


@pytest.mark.parametrize("d,l,e,bias1,bias2", CASES)
def test_state_dicts_of_random_networks_give_the_independent_numbers(tmp_path, d, l, e, bias1, bias2):
    seed = d * 100 + l * 10 + e + 2 * bias1 + bias2
    model = build(d, l, e, bias1, bias2, seed=seed)
    with torch.no_grad():  # rescale output columns to ‖W2[:, k]‖² = (0.5 or 2) × the input side: both signs of c
        A = (model[0].weight ** 2).sum(1) + (model[0].bias ** 2 if bias1 else 0)
        C = (model[2].weight ** 2).sum(0)
        factor = torch.tensor([0.5 if k % 2 else 2.0 for k in range(l)])
        model[2].weight.mul_(torch.sqrt(factor * A / C))
    path = tmp_path / "net.pt"
    torch.save(model.state_dict(), path)
    rep = run_to_completion(ob.load_two_layer_job(path)).report
    c = numpy_c(model.state_dict())
    assert np.allclose(rep["c"], c, rtol=0, atol=1e-12)
    assert (rep["l_plus"], rep["l_minus"], rep["l_zero"]) == (int((c > 0).sum()), int((c < 0).sum()), 0)
    assert rep["poincare"] == kunneth(d, e, c, bias1)
    assert rep["beta0"] == kunneth(d, e, c, bias1)[0]
    W1, W2 = model[0].weight.detach().double().numpy(), model[2].weight.detach().double().numpy()
    want_locked = [k + 1 for k in range(l) if e == 1 and c[k] < 0]
    assert rep["locked"] == want_locked
    assert rep["locked_inputs"] == [k + 1 for k in range(l) if d == 1 and not bias1 and c[k] > 0]
    label = [int(np.sign(W2[0, k])) if k + 1 in want_locked else 0 for k in range(l)]
    if d == 1 and not bias1:
        label = [int(np.sign(W1[k, 0])) if c[k] > 0 else s for k, s in enumerate(label)]
    assert rep["component"] == label
    assert rep["effective_components"] == (1 + len(want_locked) if e == 1 and d > 1 else None)
    assert (rep["d"], rep["l"], rep["e"], rep["hidden_bias"], rep["output_bias"]) == (d, l, e, bias1, bias2)
    assert any(c < 0) and any(c > 0)  # the construction really mixes both kinds


@pytest.mark.parametrize("activation,slope", [("relu", None), ("leaky_relu", 0.2), ("leaky_relu", None)])
@pytest.mark.parametrize("fmt", ["pt", "pt2", "npz"])
def test_the_loaded_forward_pass_is_torchs(tmp_path, activation, slope, fmt):
    model = build(3, 5, 2, True, True, activation, 0.01 if slope is None else slope, seed=7, dtype=torch.float64)
    X = torch.randn(50, 3, dtype=torch.float64)
    if fmt == "pt":
        torch.save(model.state_dict(), tmp_path / "m.pt")
        net = load_two_layer(tmp_path / "m.pt", activation, slope)
    elif fmt == "pt2":
        torch.export.save(torch.export.export(model, (X,)), tmp_path / "m.pt2")
        net = load_two_layer(tmp_path / "m.pt2")  # activation and γ from the graph
    else:
        sd = {k: v.numpy() for k, v in model.state_dict().items()}
        gamma = 0.01 if slope is None else slope
        tl = TwoLayer(sd["0.weight"], sd["2.weight"], sd["0.bias"], sd["2.bias"], activation, gamma)
        save_two_layer(tmp_path / "m.npz", tl)
        net = load_two_layer(tmp_path / "m.npz")
    assert net.activation == activation and net.gamma == (0.0 if activation == "relu" else (slope or 0.01))
    with torch.no_grad():
        want = model(X).numpy()
    assert np.allclose(net.forward(X.numpy()), want, rtol=0, atol=1e-12)


def test_npz_carries_its_data_and_data_file_overrides_it(tmp_path):
    rng = np.random.default_rng(0)
    tl = TwoLayer(rng.normal(size=(3, 2)), rng.normal(size=(1, 3)), None, None, "relu", 0.0)
    X, Y = rng.uniform(size=(20, 2)), rng.normal(size=(20, 1))
    save_two_layer(tmp_path / "n.npz", tl, X, Y)
    rep = run_to_completion(ob.load_two_layer_job(tmp_path / "n.npz")).report
    assert rep["samples"] == 20
    assert rep["loss"] == pytest.approx(float(np.mean((tl.forward(X) - Y) ** 2)), rel=1e-14)
    np.savetxt(tmp_path / "d.csv", np.column_stack([X[:5], Y[:5]]), delimiter=",")
    assert run_to_completion(ob.load_two_layer_job(tmp_path / "n.npz", data=tmp_path / "d.csv")).report["samples"] == 5


def bounded_lstsq_by_enumeration(A, y, locked, signs):
    """min ‖A a − y‖² subject to s_k a_k ≥ 0 for k in locked: try every set of locked coordinates
    held at 0, solve the rest unconstrained, keep the feasible solutions (the KKT points are among them)."""
    best = np.inf
    for r in range(len(locked) + 1):
        for zero in itertools.combinations(locked, r):
            keep = [j for j in range(A.shape[1]) if j not in zero]
            a = np.zeros(A.shape[1])
            if keep:
                a[keep] = np.linalg.lstsq(A[:, keep], y, rcond=None)[0]
            if all(signs[k] * a[k] >= -1e-12 for k in locked):
                best = min(best, float(np.mean((A @ a - y) ** 2)))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_sign_kept_fit_matches_an_enumeration_of_active_sets(seed):
    rng = np.random.default_rng(seed)
    d, l, bias = 2 + seed % 2, 5, seed % 3 == 0
    W1 = rng.normal(size=(l, d))
    W2 = rng.choice([-1.0, 1.0], size=(1, l)) * np.array([[5.0, 0.2, 5.0, 0.2, 5.0]])
    b1, b2 = (rng.normal(size=l), rng.normal(size=1)) if bias else (None, None)
    X = rng.normal(size=(60, d))
    Y = np.sin(X @ rng.normal(size=(d, 1))) - 1.0
    net = TwoLayer(W1, W2, b1, b2, "relu", 0.0)
    fit = ob.sign_kept_fit(net, X, Y)
    lock = [k - 1 for k in ob.locked(W1, W2, b1)]
    assert lock, "the draw should have a locked neuron"
    Z = np.maximum(X @ W1.T + (0 if b1 is None else b1), 0)
    A = Z if b2 is None else np.column_stack([Z, np.ones(len(Z))])
    kept = bounded_lstsq_by_enumeration(A, Y[:, 0], lock, np.sign(W2[0]))
    free = float(np.mean((A @ np.linalg.lstsq(A, Y[:, 0], rcond=None)[0] - Y[:, 0]) ** 2))
    assert fit["kept_loss"] == pytest.approx(kept, rel=1e-8, abs=1e-14)
    assert fit["free_loss"] == pytest.approx(free, rel=1e-8, abs=1e-14)
    assert fit["better_fit_needs_flip"] == (kept - free > 1e-7 * float(np.mean(Y**2)) + 1e-12)


def test_fig3_obstructed_needs_a_flip_and_the_kept_fit_is_mean_y_squared():
    """Both neurons locked with v > 0 and input weights > 0 on [0, 1]²: f ≥ 0 while y = −(x₁ + x₂) ≤ 0,
    so the best sign-kept fit is f = 0, whose loss is mean(y²) exactly (MATH A8)."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(500, 2))
    Y = -X.sum(axis=1, keepdims=True)
    W1, W2 = np.array([[0.2, 0.1], [0.1, 0.25]]), np.array([[0.6, 0.5]])  # c = (−0.31, −0.1875)
    net = TwoLayer(W1, W2, None, None, "relu", 0.0, X, Y)
    rep = ob.report(net)
    assert rep["locked"] == [1, 2] and rep["component"] == [1, 1]
    assert rep["fit"]["kept_loss"] == pytest.approx(float(np.mean(Y**2)), rel=1e-12)
    assert rep["fit"]["free_loss"] < 1e-20 and rep["better_fit_needs_flip"] is True
    assert rep["fit"]["held_at_zero"] == [1, 2]
    net_free = TwoLayer(W1, -W2, None, None, "relu", 0.0, X, Y)  # the same sets, negative sheets
    assert ob.report(net_free)["better_fit_needs_flip"] is False


def test_e2_has_no_locked_output_and_no_fit():
    rng = np.random.default_rng(1)
    W1, W2 = rng.normal(size=(3, 2)) * 0.1, rng.normal(size=(2, 3)) * 3  # every c < 0
    X, Y = rng.normal(size=(10, 2)), rng.normal(size=(10, 2))
    rep = ob.report(TwoLayer(W1, W2, None, None, "relu", 0.0, X, Y))
    assert rep["l_minus"] == 3 and rep["locked"] == [] and rep["fit"] is None
    assert rep["beta0"] == 1 and rep["poincare"] == kunneth(2, 2, rep["c"], False)


def small_net_file(tmp_path, bias=True, seed=0):
    """A 2—3—1 leaky ReLU net alive on all of its data in [0, 1]²: no data point sits on a kink, where
    the exact flow's vector field jumps and the adaptive solver crawls (a property of ReLU flows)."""
    rng = np.random.default_rng(seed)
    W1 = rng.uniform(0.2, 1.0, size=(3, 2))
    W2 = np.array([[0.5, 2.5, -1.0]])
    b = (rng.uniform(0.1, 0.3, size=3), rng.normal(size=1)) if bias else (None, None)
    X = rng.uniform(size=(64, 2))
    Y = 0.5 - X[:, :1] - 2 * X[:, 1:]
    return save_two_layer(tmp_path / "s.npz", TwoLayer(W1, W2, *b, "leaky_relu", 0.1), X, Y)


EXAMPLE = (resources.path("networks", "your-network.pt"), resources.path("data", "your-network.csv"))


@pytest.mark.parametrize("which", ["biases", "example"])
def test_flow_conserves_c_to_solver_tolerance_and_gd_drifts(tmp_path, which):
    path, data = (small_net_file(tmp_path, bias=True), None) if which == "biases" else EXAMPLE
    flow_config = TrainConfig(optimizer="flow", lr=0.01, steps=300)  # rtol 1e-8, atol 1e-10
    flow = run_to_completion(ob.obstruction_job(path, data=data, config=flow_config))
    # c = ‖w_in‖² − ‖w_out‖² recomputed here from the weights of every recorded row of the same run.
    traj = run_to_completion(ob.continue_training_job(path, None, None, data, flow_config)).trajectory
    c = weights_c(traj.W1, traj.W2, traj.b1)  # (rows, l)
    np.testing.assert_allclose(c[0], flow["c"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c[-1], flow["c_end"], rtol=1e-12, atol=1e-12)
    scale = np.maximum(1, np.abs(c[0]))
    drift = float((np.abs(c - c[0]) / scale).max())
    # The two differ by rounding alone: a few ulps of the squared norms that make up c.
    squares = (traj.W1**2).sum(-1) + (traj.W2**2).sum(-2) + (0 if traj.b1 is None else traj.b1**2)
    assert flow["max_abs_dc"] == pytest.approx(drift, rel=0, abs=8 * np.finfo(float).eps * (squares / scale).max())
    assert drift < 1e-7  # conserved to the solver's tolerance (rtol 1e-8, atol 1e-10)
    assert flow["loss_end"] < flow["loss_start"] and flow["stayed_in_component"] is True
    gd = run_to_completion(ob.obstruction_job(path, data=data, config=TrainConfig(optimizer="gd", lr=0.05, steps=300)))
    assert gd["max_abs_dc"] > 1000 * flow["max_abs_dc"]  # O(h²) per step (MATH A2)


def test_the_shipped_example_stays_in_its_component():
    """The your-network preset's run, headless: neuron 2 stays locked on v > 0, the others flip and fit."""
    preset = json.loads(resources.path("presets", "your-network.json").read_text())
    assert preset["parameters"]["network"]["file"] == "networks/your-network.pt"
    o = preset["parameters"]["optimizer"]
    path, data = EXAMPLE
    out = run_to_completion(ob.obstruction_job(path, data=data, config=TrainConfig(lr=o["lr"], steps=o["steps"])))
    assert out["locked"] == [2] and out["component"] == [0, 1, 0, 0]
    assert out["stayed_in_component"] is True and out["component_end"] == [0, 1, 0, 0]
    assert out["loss_end"] < 1e-6 * out["loss_start"]
    assert {k for _, k in out["sign_flips"]} == {1, 3, 4} and out["barrier_jumps"] == []
    assert out["better_fit_needs_flip"] is False and max(out["c_end"][:1] + out["c_end"][2:]) > 0
    assert out["c_end"][1] < 0


# ------------------------------------------------------------------ bad networks


def bad_networks(tmp_path) -> dict:
    """name -> (path, kwargs, message pattern): every way a network file is refused."""
    out = {}
    deep = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    torch.save(deep.state_dict(), tmp_path / "deep.pt")
    out["two hidden layers"] = (tmp_path / "deep.pt", {}, "2 hidden layer")
    X = torch.randn(4, 2)
    torch.export.save(torch.export.export(deep, (X,)), tmp_path / "deep.pt2")
    out["two hidden layers (.pt2)"] = (tmp_path / "deep.pt2", {}, "2 hidden layer")
    sig = nn.Sequential(nn.Linear(2, 3), nn.Sigmoid(), nn.Linear(3, 1))
    torch.export.save(torch.export.export(sig, (X,)), tmp_path / "sig.pt2")
    out["sigmoid (.pt2)"] = (tmp_path / "sig.pt2", {}, "'sigmoid' is not positively homogeneous")
    torch.save(sig.state_dict(), tmp_path / "sig.pt")
    out["tanh asked for"] = (tmp_path / "sig.pt", {"activation": "tanh"}, "'tanh' is not positively homogeneous")
    tl = TwoLayer(np.ones((3, 2)), np.ones((1, 3)), None, None, "relu", 0.0)
    np.savez(tmp_path / "sig.npz", W1=tl.W1, W2=tl.W2, activation=np.array("sigmoid"))
    out["sigmoid (.npz)"] = (tmp_path / "sig.npz", {}, "'sigmoid' is not positively homogeneous")
    torch.save({"0.weight": torch.ones(3, 2), "2.weight": torch.ones(1, 4)}, tmp_path / "chain.pt")
    out["shapes that do not chain"] = (tmp_path / "chain.pt", {}, "do not chain")
    np.savez(tmp_path / "chain.npz", W1=np.ones((3, 2)), W2=np.ones((1, 4)), activation=np.array("relu"))
    out["shapes that do not chain (.npz)"] = (tmp_path / "chain.npz", {}, "do not chain")
    torch.save({"0.weight": torch.tensor([[1.0, float("nan")]]), "2.weight": torch.ones(1, 1)}, tmp_path / "nan.pt")
    out["NaN weight"] = (tmp_path / "nan.pt", {}, "NaN or inf")
    np.savez(tmp_path / "inf.npz", W1=np.array([[np.inf, 1.0]]), W2=np.ones((1, 1)), activation=np.array("relu"))
    out["inf weight (.npz)"] = (tmp_path / "inf.npz", {}, "NaN or inf")
    torch.save(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)).state_dict(), tmp_path / "ok.pt")
    np.savetxt(tmp_path / "wide.csv", np.ones((5, 4)), delimiter=",")
    out["data of the wrong width"] = (tmp_path / "ok.pt", {"data": tmp_path / "wide.csv"}, "takes d = 2 inputs")
    torch.save(dict(sig.state_dict(), extra=Payload(tmp_path / "ran")), tmp_path / "evil.pt")
    out["pickle payload"] = (tmp_path / "evil.pt", {}, "refused")
    good = tmp_path / "ok.pt2"
    torch.export.save(torch.export.export(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)), (X,)), good)
    pickled_pt2(good, tmp_path / "evil.pt2", tmp_path / "ran")
    out["pickle payload (.pt2)"] = (tmp_path / "evil.pt2", {}, "stored as a pickle")
    return out


def test_every_bad_network_is_refused_with_a_reason(tmp_path):
    cases = bad_networks(tmp_path)
    for _name, (path, kwargs, pattern) in cases.items():
        with pytest.raises(EngineInputError, match=pattern):
            run_to_completion(ob.load_two_layer_job(path, **kwargs))
    assert not (tmp_path / "ran").exists()  # no payload ran
    assert len(cases) == 12


def test_training_mixed_biases_is_refused_but_reported(tmp_path):
    torch.save(build(2, 3, 1, True, False).state_dict(), tmp_path / "m.pt")
    np.savetxt(tmp_path / "d.csv", np.ones((5, 3)), delimiter=",")
    assert "c" in run_to_completion(ob.load_two_layer_job(tmp_path / "m.pt", data=tmp_path / "d.csv")).report
    with pytest.raises(EngineInputError, match="hidden-layer bias but no output bias"):
        run_to_completion(ob.obstruction_job(tmp_path / "m.pt", data=tmp_path / "d.csv", config=TrainConfig()))


class TwoLinear(nn.Module):
    """An "equivalent two-Linear module": not a Sequential, its own layer names."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(3, 4)
        self.out = nn.Linear(4, 2, bias=False)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


def test_an_equivalent_two_linear_module_loads_as_the_same_network(tmp_path):
    torch.manual_seed(5)
    model = TwoLinear().double()
    torch.save(model.state_dict(), tmp_path / "m.pth")
    net = load_two_layer(tmp_path / "m.pth")
    X = torch.randn(20, 3, dtype=torch.float64)
    with torch.no_grad():
        assert np.allclose(net.forward(X.numpy()), model(X).numpy(), rtol=0, atol=1e-12)
    assert net.b1 is not None and net.b2 is None and (net.d, net.l, net.e) == (3, 4, 2)
