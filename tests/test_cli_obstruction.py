"""``main.py obstruction``: one JSON object with the independent numbers; bad networks get one line, exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.engine.topology.test_obstruction import bad_networks, kunneth, numpy_c

ROOT = Path(__file__).resolve().parents[1]


def run_main(*argv):
    return subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("d,l,e,bias", [(2, 4, 1, False), (3, 3, 2, True), (1, 5, 1, False)])
def test_obstruction_prints_the_numbers_of_a_random_torch_network(tmp_path, d, l, e, bias):
    torch.manual_seed(d + l + e)
    model = nn.Sequential(nn.Linear(d, l, bias=bias), nn.LeakyReLU(0.1), nn.Linear(l, e, bias=bias))
    with torch.no_grad():
        model[2].weight.mul_(torch.tensor([3.0 if k % 2 else 0.2 for k in range(l)]))
    torch.save(model.state_dict(), tmp_path / "net.pth")
    X = np.random.default_rng(0).normal(size=(30, d))
    with torch.no_grad():
        Y = model(torch.from_numpy(X).float()).double().numpy() + 0.1
    np.savez(tmp_path / "data.npz", X=X, Y=Y)
    result = run_main(
        "obstruction", str(tmp_path / "net.pth"), "--activation", "leaky_relu", "--slope", "0.1",
        "--data", str(tmp_path / "data.npz"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    c = numpy_c(model.state_dict())
    assert np.allclose(out["c"], c, rtol=0, atol=1e-12)
    assert out["poincare"] == kunneth(d, e, c, bias) and out["beta0"] == kunneth(d, e, c, bias)[0]
    assert out["locked"] == [k + 1 for k in range(l) if e == 1 and c[k] < 0]
    assert out["loss"] == pytest.approx(0.01, rel=1e-5)  # f is torch's, off by 0.1 everywhere
    assert (out["fit"] is None) == (e != 1)


def test_obstruction_trains_on_with_the_flow(tmp_path):
    from tests.engine.topology.test_obstruction import small_net_file

    path = small_net_file(tmp_path, bias=True)
    result = run_main("obstruction", str(path), "--train", "200", "--optimizer", "flow", "--lr", "0.01")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["max_abs_dc"] < 1e-7 and out["loss_end"] < out["loss_start"]
    assert len(out["c_end"]) == 3 and out["stayed_in_component"] is True


def test_every_bad_network_gets_one_line_and_exit_2(tmp_path):
    cases = bad_networks(tmp_path)
    # a deeper exported network is no longer refused: it is read as any network (test below)
    deep_pt2, _, _ = cases.pop("two hidden layers (.pt2)")
    for name, (path, kwargs, pattern) in cases.items():
        argv = ["obstruction", str(path)]
        if "activation" in kwargs:
            argv += ["--activation", kwargs["activation"]]
        if "data" in kwargs:
            argv += ["--data", str(kwargs["data"])]
        result = run_main(*argv)
        assert result.returncode == 2, (name, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and pattern in lines[0], (name, result.stderr)
        assert result.stdout == ""
    assert not (tmp_path / "ran").exists()
    result = run_main("obstruction", str(deep_pt2))
    assert result.returncode == 0, result.stderr
    assert [layer["name"] for layer in json.loads(result.stdout)["layers"]] == ["0.weight", "2.weight"]


def test_train_without_data_is_one_line(tmp_path):
    torch.save(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)).state_dict(), tmp_path / "n.pt")
    result = run_main("obstruction", str(tmp_path / "n.pt"), "--train", "10")
    assert result.returncode == 2 and "--train needs data" in result.stderr


# --- any network: .pt2, state_dict + --model, the app's deep .npz -------------------------------------


def call_main(capsys, *argv):
    """(status, stdout, stderr) of ``main.py`` run in this process."""
    from landscape_lens.cli import main

    status = main(["obstruction", *map(str, argv)], prog="main.py")
    out = capsys.readouterr()
    return status, out.out, out.err


def independent_c(model) -> list[np.ndarray]:
    """Per hidden layer of an MLP, or of a conv → … → flatten → Linear chain, c written out from the
    tensors: a unit's incoming weights (and bias) against every next-layer weight on its output."""
    layers = [m for m in model if isinstance(m, (nn.Linear, nn.Conv2d))]
    flatten = next((i for i, m in enumerate(model) if isinstance(m, nn.Flatten)), None)
    S = 1
    if flatten is not None:  # at the flatten, each channel owns S consecutive features
        with torch.no_grad():
            x = model[:flatten](torch.zeros(1, 2, 8, 8, dtype=next(model.parameters()).dtype))
        S = x.shape[2] * x.shape[3]
    out = []
    for a, b in zip(layers[:-1], layers[1:]):
        W, bias, V = (t.detach().double().numpy() for t in (a.weight, a.bias, b.weight))
        c = []
        for k in range(W.shape[0]):
            v = V[:, k * S : (k + 1) * S] if isinstance(a, nn.Conv2d) and isinstance(b, nn.Linear) else V[:, k]
            c.append(np.sum(W[k] ** 2) + bias[k] ** 2 - np.sum(v**2))
        out.append(np.array(c))
    return out


def deep_mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 1))


def cnn(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(2, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(36, 1),
    )  # fmt: skip


def export(model, x, path):
    torch.export.save(torch.export.export(model.eval(), (x,), dynamic_shapes=({0: torch.export.Dim("batch")},)), path)
    return path


MODELS = {"deep MLP": (deep_mlp, lambda: torch.randn(3, 2)), "CNN": (cnn, lambda: torch.randn(3, 2, 8, 8))}


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("which", list(MODELS))
def test_an_exported_network_prints_every_hidden_units_c(tmp_path, capsys, which):
    build, example = MODELS[which]
    model = build()
    status, out, err = call_main(capsys, export(model, example(), tmp_path / "m.pt2"))
    assert status == 0, err
    report = json.loads(out)
    names = [name for name, _ in model.named_parameters() if name.endswith("weight")]
    assert report["network"] == str(tmp_path / "m.pt2") and report["format"] == "pt2"
    assert [layer["name"] for layer in report["layers"]] == names[:-1]
    for layer, c in zip(report["layers"], independent_c(model), strict=True):
        close(layer["c"], c)
        assert layer["law"] == "rescaling" and layer["units"] == c.size
        single = which == "deep MLP" and layer["outgoing"] == [names[-1]]  # v one number: c < 0 locks
        assert layer["locked"] == ([k + 1 for k in range(c.size) if c[k] < 0] if single else [])
    assert report["units"] == sum(c.size for c in independent_c(model))
    assert report["laws"] == {"rescaling": len(names) - 1, "scale": 0, "none": 0}


def test_the_apps_deep_npz_is_read_as_any_network(tmp_path, capsys):
    rng = np.random.default_rng(3)
    arrays = {f"W{i}": rng.normal(size=s) for i, s in ((1, (4, 2)), (2, (3, 4)), (3, (1, 3)))}
    arrays |= {f"b{i}": rng.normal(size=n) for i, n in ((1, 4), (2, 3), (3, 1))}
    np.savez(tmp_path / "deep.npz", **arrays, activation=np.array("relu"), X=rng.normal(size=(5, 2)), Y=np.ones((5, 1)))
    status, out, err = call_main(capsys, tmp_path / "deep.npz")
    assert status == 0, err
    layers = json.loads(out)["layers"]
    for i, layer in enumerate(layers, start=1):
        W, b, V = arrays[f"W{i}"], arrays[f"b{i}"], arrays[f"W{i + 1}"]
        close(layer["c"], [W[k] @ W[k] + b[k] ** 2 - V[:, k] @ V[:, k] for k in range(W.shape[0])])
    assert len(layers) == 2


@pytest.mark.parametrize("suffix", [".pt", ".pt2", ".npz", ".pth"])
def test_a_two_layer_file_keeps_its_report_and_adds_layers(tmp_path, capsys, suffix):
    from collections import OrderedDict

    from engine.core.progress import run_to_completion
    from engine.io.two_layer_file import TwoLayer, save_two_layer
    from engine.topology.obstruction import obstruction_job

    torch.manual_seed(7)
    first, second = ("hidden", "out") if suffix == ".pth" else ("0", "2")  # .pth: a module's own layer names
    model = nn.Sequential(OrderedDict([(first, nn.Linear(3, 4)), ("act", nn.ReLU()), (second, nn.Linear(4, 1))]))
    with torch.no_grad():
        model[2].weight.mul_(torch.tensor([3.0, 0.2, 3.0, 0.2]))  # two locked neurons
    path = tmp_path / f"two{suffix}"
    if suffix in (".pt", ".pth"):
        torch.save(model.state_dict(), path)
    elif suffix == ".pt2":
        export(model, torch.randn(2, 3), path)
    else:
        W1, b1, W2, b2 = (t.detach().double().numpy() for t in model.parameters())
        save_two_layer(path, TwoLayer(W1, W2, b1, b2, "relu", 0.0))
    later = {k: v + 0.1 * torch.randn_like(v) for k, v in model.state_dict().items()}
    torch.save(model.state_dict(), tmp_path / "a.pt")
    torch.save(later, tmp_path / "b.pt")
    status, out, err = call_main(capsys, path, "--checkpoints", tmp_path / "a.pt", tmp_path / "b.pt")
    assert status == 0, err
    report = json.loads(out)
    layers, drift = report.pop("layers"), report.pop("drift")
    assert report.pop("checkpoints") == [str(tmp_path / "a.pt"), str(tmp_path / "b.pt")]
    assert report == json.loads(json.dumps(run_to_completion(obstruction_job(path))))  # today's report, exactly
    (layer,) = layers
    c = numpy_c(model.state_dict())
    close(layer["c"], c)
    close(report["c"], c)
    assert layer["name"] == f"{first}.weight" and layer["outgoing"] == [f"{second}.weight"]
    assert layer["law"] == "rescaling"
    assert layer["locked"] == report["locked"] == [k + 1 for k in range(4) if c[k] < 0] and len(report["locked"]) == 2
    ((d,),) = [drift]
    assert d["name"] == f"{first}.weight"
    close(d["dc"], [np.zeros(4), numpy_c(later) - c])


MODEL_CODE = """
import torch.nn as nn


def cnn():
    return nn.Sequential(
        nn.Conv2d(2, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(36, 1),
    )


def linear():
    return nn.Linear(3, 1)
"""


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """--model obstruction_cli_models:cnn builds the CNN above; the current folder is tmp_path."""
    (tmp_path / "obstruction_cli_models.py").write_text(MODEL_CODE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "obstruction_cli_models", raising=False)
    yield "obstruction_cli_models"
    sys.modules.pop("obstruction_cli_models", None)


def sgd_checkpoints(tmp_path, model, n=3):
    """n state_dicts of ``model`` along a few gradient steps (the first before any), as files."""
    x, y = torch.randn(8, 2, 8, 8), torch.randn(8, 1)
    opt, paths = torch.optim.SGD(model.parameters(), lr=0.1), []
    for t in range(n):
        paths.append(tmp_path / f"ckpt{t}.pt")
        torch.save(model.state_dict(), paths[-1])
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    return paths


def test_checkpoints_give_the_drift_of_c_for_a_state_dict_with_its_model(tmp_path, capsys, user_code):
    model = cnn(1)
    torch.save(model.state_dict(), tmp_path / "net.pt")
    paths = sgd_checkpoints(tmp_path, model)
    status, out, err = call_main(capsys, tmp_path / "net.pt", "--model", f"{user_code}:cnn", "--checkpoints", *paths)
    assert status == 0, err
    report = json.loads(out)
    assert report["format"] == f"state_dict + {user_code}:cnn" and report["checkpoints"] == [str(p) for p in paths]
    start = cnn(1)
    for layer, c in zip(report["layers"], independent_c(start), strict=True):
        close(layer["c"], c)
    states = []
    for p in paths:
        m = cnn()
        m.load_state_dict(torch.load(p, weights_only=True))
        states.append(independent_c(m))
    assert [d["name"] for d in report["drift"]] == ["0.weight", "3.weight"]
    for i, d in enumerate(report["drift"]):
        expected = np.array([s[i] - states[0][i] for s in states])
        assert np.array(d["dc"]).shape == expected.shape == (3, [3, 4][i])
        close(d["dc"], expected)
        assert d["max_abs_drift"] == pytest.approx(np.max(np.abs(expected)), rel=1e-12) and d["max_abs_drift"] > 0


def test_checkpoints_of_the_module_give_the_drift_of_its_exported_graph(tmp_path, capsys):
    model = deep_mlp(2)
    graph = export(model, torch.randn(2, 2), tmp_path / "m.pt2")
    later = deep_mlp(3)
    torch.save(model.state_dict(), tmp_path / "a.pt")
    torch.save(later.state_dict(), tmp_path / "b.pt")
    status, out, err = call_main(capsys, graph, "--checkpoints", tmp_path / "a.pt", tmp_path / "b.pt")
    assert status == 0, err
    drift = json.loads(out)["drift"]
    for d, c0, c1 in zip(drift, independent_c(model), independent_c(later), strict=True):
        close(d["dc"], [np.zeros_like(c0), c1 - c0])


def test_a_run_folder_gives_the_drift_over_its_checkpoints(tmp_path, capsys, user_code):
    if not (ROOT / "engine" / "runs" / "__init__.py").exists():
        pytest.skip("engine.runs (run folders) is not in this tree yet")
    from engine.runs import Recorder, open_run

    model = cnn(4)
    torch.save(model.state_dict(), tmp_path / "net.pt")
    x, y = torch.randn(8, 2, 8, 8), torch.randn(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(tmp_path / "run", model, every=2) as recorder:
        for _ in range(5):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            recorder.step(loss=loss.item())
    status, out, err = call_main(
        capsys, tmp_path / "net.pt", "--model", f"{user_code}:cnn", "--checkpoints", tmp_path / "run"
    )
    assert status == 0, err
    report = json.loads(out)
    run = open_run(tmp_path / "run")
    steps = [int(s) for s in run.checkpoint_steps]
    assert report["checkpoints"] == steps and len(steps) >= 2
    cs = []
    for s in steps:
        m = cnn()
        m.load_state_dict(run.checkpoint(s))
        cs.append(independent_c(m))
    for i, d in enumerate(report["drift"]):
        close(d["dc"], [c[i] - cs[0][i] for c in cs])


def test_init_share_draws_the_factory_or_resets_the_layers(tmp_path, capsys, user_code):
    torch.save(cnn().state_dict(), tmp_path / "net.pt")
    status, out, err = call_main(capsys, tmp_path / "net.pt", "--model", f"{user_code}:cnn", "--init-share", "4")
    assert status == 0, err
    shares = json.loads(out)["init_share"]
    expected = np.zeros(2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # the command's seed; each draw a fresh factory() as the command makes
        for _ in range(4):
            expected += [np.mean(c < 0) for c in independent_c(_fresh_cnn())]
    assert shares == pytest.approx({"0.weight": expected[0] / 4, "3.weight": expected[1] / 4}, rel=1e-12)
    # a two-layer state_dict: its nn.Linear layers' reset_parameters()
    torch.save(nn.Sequential(nn.Linear(2, 6), nn.ReLU(), nn.Linear(6, 1)).state_dict(), tmp_path / "two.pt")
    status, out, err = call_main(capsys, tmp_path / "two.pt", "--init-share", "3")
    assert status == 0, err
    expected = 0.0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for _ in range(3):
            a, b = nn.Linear(2, 6, dtype=torch.float64), nn.Linear(6, 1, dtype=torch.float64)
            state = {"0.weight": a.weight.detach(), "0.bias": a.bias.detach(), "2.weight": b.weight.detach()}
            expected += np.mean(numpy_c(state) < 0)
    assert json.loads(out)["init_share"] == pytest.approx({"0.weight": expected / 3}, rel=1e-12)


def _fresh_cnn():
    return nn.Sequential(
        nn.Conv2d(2, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(36, 1),
    )  # fmt: skip


def test_bad_any_network_input_is_one_line_and_exit_2(tmp_path, capsys, user_code):
    linear = export(nn.Linear(3, 1), torch.randn(2, 3), tmp_path / "linear.pt2")
    deep = export(deep_mlp(), torch.randn(2, 2), tmp_path / "deep.pt2")
    torch.save(cnn().state_dict(), tmp_path / "cnn.pt")
    torch.save(deep_mlp().state_dict(), tmp_path / "mlp.pt")
    wide = nn.Sequential(nn.Linear(2, 6), nn.ReLU(), nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 1))
    torch.save(wide.state_dict(), tmp_path / "wide.pt")
    (tmp_path / "folder").mkdir()
    (tmp_path / "data.csv").write_text("1,2,3\n")
    cases = {
        "a linear model": ([linear], "no hidden units"),
        "a linear model from --model": ([tmp_path / "cnn.pt", "--model", f"{user_code}:linear"], "not in the file"),
        "checkpoints of another architecture": ([deep, "--checkpoints", tmp_path / "cnn.pt"], "another architecture"),
        "checkpoints of other widths": ([deep, "--checkpoints", tmp_path / "wide.pt"], "another architecture"),
        "a folder that is not a run": ([deep, "--checkpoints", tmp_path / "folder"], "not a run folder"),
        "a run folder among files": ([deep, "--checkpoints", tmp_path / "folder", tmp_path / "mlp.pt"], "alone"),
        "two-layer options": ([deep, "--data", tmp_path / "data.csv"], "apply only to a two-layer network"),
        "--model with a .pt2": ([deep, "--model", f"{user_code}:cnn"], "--model is for a state_dict"),
        "--init-share of a graph": ([deep, "--init-share", "2"], "reset_parameters"),
    }
    for name, (argv, pattern) in cases.items():
        status, out, err = call_main(capsys, *argv)
        lines = err.strip().splitlines()
        assert status == 2 and out == "", (name, err)
        assert len(lines) == 1 and pattern in lines[0], (name, err)
    status, out, err = call_main(capsys, deep, "--checkpoints", tmp_path / "mlp.pt")  # and the good one runs
    assert status == 0, err
