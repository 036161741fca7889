"""engine.runs: a recorded run read back exactly, and compared with independent computations: the
checkpoints bit for bit, the invariants from the checkpoint's weights by hand, the sharpness from
the Hessian formed by autograd and ARPACK; thinning, the writer lock, resume and refresh."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch
from scipy.sparse.linalg import eigsh
from torch import nn

from engine.core.errors import EngineInputError
from engine.runs import Recorder, Run, open_run
from engine.runs import format as fmt


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2))


def data(n: int = 24, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, generator=g), torch.randint(0, 2, (n,), generator=g)


def train(model, rec, steps: int, X, Y, lr: float = 0.1, keep=None):
    """SGD steps recorded by ``rec``; returns the losses passed to it and, for the steps in
    ``keep``, copies of the state_dict at the moment ``step`` was called."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses, states = [], {}
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(X), Y)
        loss.backward()
        opt.step()
        step = rec.step(loss=loss, lr=lr)
        losses.append(loss.item())
        if keep is not None and step in keep:
            states[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return losses, states


class WithBuffers(nn.Module):
    """Parameters and buffers of several dtypes: batch norm's int64 counter, a float64 and a
    bfloat16 buffer, a bool mask."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.out = nn.Linear(4, 2)
        self.register_buffer("scale64", torch.linspace(0.5, 1.5, 4, dtype=torch.float64))
        self.register_buffer("half_bits", torch.randn(4).to(torch.bfloat16))
        self.register_buffer("mask", torch.tensor([True, False, True, True]))

    def forward(self, x):
        h = self.bn(self.fc(x)) * self.scale64.float() * self.mask
        return self.out(torch.relu(h))


# ── round trips ──────────────────────────────────────────────────────────────────────────────


def test_scalars_and_checkpoints_read_back_exactly(tmp_path):
    torch.manual_seed(1)
    model = WithBuffers()
    X, Y = data()
    with Recorder(tmp_path / "run", model, every=3) as rec:
        losses, states = train(model, rec, 10, X, Y, keep={0, 3, 6, 9})
    run = open_run(tmp_path / "run")
    assert run.steps.tolist() == list(range(10)) and run.steps.dtype == np.int64
    assert np.array_equal(run.loss, np.array(losses))  # exactly: each loss is stored as its double
    assert np.array_equal(run.lr, np.full(10, 0.1))
    assert run.checkpoint_steps.tolist() == [0, 3, 6, 9]
    assert run.finished and not run.writer_alive and run.problems == []
    assert not (tmp_path / "run" / fmt.LOCK).exists()
    for step, expected in states.items():
        got = run.checkpoint(step)
        assert list(got) == list(expected)
        for name, t in expected.items():
            assert got[name].dtype == t.dtype and got[name].shape == t.shape, name
            assert torch.equal(raw(got[name]), raw(t)), name
    assert run.checkpoint(9)["bn.num_batches_tracked"].item() == 10
    fresh = WithBuffers()
    run.load_into(fresh, 6)
    assert all(torch.equal(raw(v), raw(states[6][k])) for k, v in fresh.state_dict().items())


def raw(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().reshape(-1).view(torch.uint8)


def test_the_folder_reads_with_numpy_and_json_alone(tmp_path):
    model = mlp()
    X, Y = data()
    with Recorder(tmp_path / "run", model, every=2) as rec:
        losses, states = train(model, rec, 5, X, Y, keep={4})
    folder = tmp_path / "run"
    manifest = json.loads((folder / "manifest.json").read_text())
    lines = [json.loads(line) for line in (folder / "scalars.jsonl").read_text().splitlines()]
    assert [r["loss"] for r in lines] == losses
    last = manifest["checkpoints"][-1]
    assert last["step"] == 4
    with np.load(folder / last["state"], allow_pickle=False) as z:
        for name, t in states[4].items():
            assert z[name].dtype == np.dtype(manifest["state"][name]["dtype"])
            assert np.array_equal(z[name], t.numpy())
    with np.load(folder / last["invariants"], allow_pickle=False) as z:
        assert {f"{layer}/c" for layer in manifest["layers"]} <= set(z.files)


def test_step_numbers_default_to_one_after_the_last_and_must_increase(tmp_path):
    model = mlp()
    with Recorder(tmp_path / "run", model, every=10) as rec:
        assert rec.step(loss=1.0) == 0
        assert rec.step(loss=torch.tensor(0.5), lr=np.float32(0.01)) == 1
        assert rec.step(step=10, loss=np.array([0.25])) == 10
        assert rec.step() == 11
        with pytest.raises(EngineInputError, match="steps must increase"):
            rec.step(step=11, loss=1.0)
        with pytest.raises(EngineInputError, match="loss"):
            rec.step(loss="high")
    run = open_run(tmp_path / "run")
    assert run.steps.tolist() == [0, 1, 10, 11]
    assert np.array_equal(run.loss, [1.0, 0.5, 0.25, np.nan], equal_nan=True)
    assert run.lr[1] == float(np.float32(0.01)) and np.isnan(run.lr[0])
    assert run.checkpoint_steps.tolist() == [0, 10]


# ── invariants ───────────────────────────────────────────────────────────────────────────────


def hand_invariants(state) -> dict[str, np.ndarray]:
    """c = ‖w‖² + b² − ‖v‖² of each hidden neuron, from the weights of the MLP's state_dict."""
    W = {k: v.double().numpy() for k, v in state.items()}
    return {
        "0.weight": (W["0.weight"] ** 2).sum(1) + W["0.bias"] ** 2 - (W["2.weight"] ** 2).sum(0),
        "2.weight": (W["2.weight"] ** 2).sum(1) + W["2.bias"] ** 2 - (W["4.weight"] ** 2).sum(0),
    }


def test_invariants_match_a_hand_computation_from_each_checkpoint(tmp_path):
    model = mlp(3)
    X, Y = data(seed=3)
    with Recorder(tmp_path / "run", model, every=4) as rec:
        train(model, rec, 13, X, Y, lr=0.5)
    run = open_run(tmp_path / "run")
    assert run.layer_names == ["0.weight", "2.weight"]
    assert run.invariant_steps.tolist() == run.checkpoint_steps.tolist() == [0, 4, 8, 12]
    history = run.invariant_history()
    for t, step in enumerate(run.checkpoint_steps):
        expected = hand_invariants(run.checkpoint(int(step)))
        records = run.invariants(int(step))
        assert [r.name for r in records] == run.layer_names
        for r in records:
            np.testing.assert_allclose(r.c, expected[r.name], rtol=1e-12, atol=0)
            np.testing.assert_array_equal(history[r.name][t], r.c)
            assert r.law == "rescaling" and r.locked.dtype == np.int64
            assert r.negative_share == pytest.approx(float(np.mean(expected[r.name] < 0)))
    # the steps moved the weights, so the recorded c differ between checkpoints
    assert not np.array_equal(history["0.weight"][0], history["0.weight"][-1])
    assert history["0.weight"].shape == (4, 5) and history["2.weight"].shape == (4, 4)


def test_a_model_without_hidden_units_records_no_invariants(tmp_path):
    model = nn.Linear(3, 2)
    X, Y = data()
    with Recorder(tmp_path / "run", model, every=2) as rec:
        train(model, rec, 4, X, Y)
    run = open_run(tmp_path / "run")
    assert run.checkpoint_steps.tolist() == [0, 2]
    assert run.layer_names == [] and run.invariant_steps.tolist() == [] and run.invariant_history() == {}
    assert "hidden units" in run.manifest["no_invariants"]
    with pytest.raises(EngineInputError, match="no invariants"):
        run.invariants(0)


# ── sharpness ────────────────────────────────────────────────────────────────────────────────


def exact_top_eigenvalue(model, state, X, Y, kind: str) -> float:
    """λ_max of the loss's Hessian at ``state``, formed by autograd over the flat parameters in
    float64 and handed to ARPACK."""
    names = [n for n, _ in model.named_parameters()]
    params = {n: state[n].double() for n in names}
    shapes, sizes = [params[n].shape for n in names], [params[n].numel() for n in names]
    m = model.double()
    Xd = torch.as_tensor(X).double()

    def loss(flat):
        parts = dict(zip(names, (p.view(s) for p, s in zip(flat.split(sizes), shapes))))
        f = torch.func.functional_call(m, parts, (Xd,))
        if kind == "cross-entropy":
            return nn.functional.cross_entropy(f, torch.as_tensor(Y))
        return ((f - torch.as_tensor(Y).double()) ** 2).sum() / len(Xd)

    theta = torch.cat([params[n].reshape(-1) for n in names])
    H = torch.autograd.functional.hessian(loss, theta).numpy()
    return float(eigsh(0.5 * (H + H.T), k=1, which="LA", tol=1e-12)[0][0])


@pytest.mark.parametrize("kind", ["cross-entropy", "mean"])
def test_sharpness_matches_the_formed_hessian(tmp_path, kind):
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    X, labels = data(32, seed=4)
    Y = labels if kind == "cross-entropy" else torch.randn(32, 2, generator=torch.Generator().manual_seed(5))
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    with Recorder(tmp_path / "run", model, every=3, sharpness_every=3, sharpness_data=(X, Y.numpy())) as rec:
        for _ in range(7):
            opt.zero_grad()
            f = model(X)
            loss = nn.functional.cross_entropy(f, Y) if kind == "cross-entropy" else ((f - Y) ** 2).sum() / len(X)
            loss.backward()
            opt.step()
            rec.step(loss=loss)
    run = open_run(tmp_path / "run")
    assert run.manifest["sharpness_loss"] == kind  # the default from the labels' dtype
    assert run.sharpness_steps.tolist() == [0, 3, 6]
    for step, value, error in zip(run.sharpness_steps, run.sharpness, run.sharpness_error):
        exact = exact_top_eigenvalue(
            nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)), run.checkpoint(int(step)), X, Y.numpy(), kind
        )
        assert value == pytest.approx(exact, rel=1e-3)
        assert 0 <= error and abs(value - exact) <= error + 1e-12 * abs(exact)  # the residual bounds the error


def test_sharpness_at_steps_without_a_checkpoint(tmp_path):
    model = mlp()
    X, Y = data()
    with Recorder(tmp_path / "run", model, every=5, sharpness_every=2, sharpness_data=(X, Y)) as rec:
        train(model, rec, 5, X, Y)
    run = open_run(tmp_path / "run")
    assert run.sharpness_steps.tolist() == [0, 2, 4] and run.checkpoint_steps.tolist() == [0]
    assert np.all(run.sharpness > 0) and np.all(np.isfinite(run.sharpness_error))


# ── thinning ─────────────────────────────────────────────────────────────────────────────────


def test_checkpoints_thin_to_a_bounded_log_spaced_set(tmp_path):
    model = mlp()
    X, Y = data()
    with Recorder(tmp_path / "run", model, every=1, max_checkpoints=8) as rec:
        for _ in range(60):
            train(model, rec, 1, X, Y)
            listed = json.loads((tmp_path / "run" / "manifest.json").read_text())["checkpoints"]
            assert len(listed) <= 8
    run = open_run(tmp_path / "run")
    kept = run.checkpoint_steps.tolist()
    assert len(kept) <= 8 and kept[0] == 0 and kept[-1] == 59
    assert run.steps.tolist() == list(range(60)), "the scalars are all kept"
    on_disk = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert on_disk == [f"step_{s:09d}.npz" for s in kept], "the dropped checkpoints' files are deleted"
    assert sorted(p.name for p in (tmp_path / "run" / "invariants").iterdir()) == on_disk
    assert run.manifest["thinned"] == 60 - len(kept)
    for s in kept:
        run.checkpoint(s)


# ── the lock, resume, refresh ────────────────────────────────────────────────────────────────


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_second_writer_is_refused_while_the_first_lives(tmp_path):
    model = mlp()
    with Recorder(tmp_path / "run", model) as rec:
        rec.step(loss=1.0)
        held = json.loads((tmp_path / "run" / fmt.LOCK).read_text())
        assert held["pid"] == os.getpid() and held["host"] and held["started"]
        run = open_run(tmp_path / "run")
        assert run.writer_alive and not run.finished
        for resume in (False, True):
            with pytest.raises(EngineInputError, match="another writer holds this run") as e:
                Recorder(tmp_path / "run", mlp(), resume=resume)
            assert "\n" not in str(e.value)
    assert not run.refresh().writer_alive and run.finished


def test_a_stale_lock_is_taken_over(tmp_path):
    folder = tmp_path / "run"
    with Recorder(folder, mlp()) as rec:
        rec.step(loss=1.0)
    stale = {"pid": dead_pid(), "host": socket.gethostname(), "started": "2026-01-01T00:00:00+0000"}
    (folder / fmt.LOCK).write_text(json.dumps(stale))
    assert not open_run(folder).writer_alive
    with Recorder(folder, mlp(), resume=True) as rec:
        assert json.loads((folder / fmt.LOCK).read_text())["pid"] == os.getpid()
        assert rec.step(loss=2.0) == 1
    assert not (folder / fmt.LOCK).exists()


def test_a_lock_from_another_host_is_respected(tmp_path):
    folder = tmp_path / "run"
    with Recorder(folder, mlp()) as rec:
        rec.step(loss=1.0)
    elsewhere = {"pid": dead_pid(), "host": socket.gethostname() + "-elsewhere", "started": "2026-01-01T00:00:00+0000"}
    (folder / fmt.LOCK).write_text(json.dumps(elsewhere))
    assert open_run(folder).writer_alive, "its pid cannot be checked from here"
    with pytest.raises(EngineInputError, match="another writer holds this run"):
        Recorder(folder, mlp(), resume=True)
    assert json.loads((folder / fmt.LOCK).read_text()) == elsewhere


def test_resume_continues_the_run_and_a_plain_recorder_is_refused(tmp_path):
    folder = tmp_path / "run"
    model = mlp()
    X, Y = data()
    with Recorder(folder, model, every=4) as rec:
        first, _ = train(model, rec, 6, X, Y)
    with pytest.raises(EngineInputError, match="holds a run already; pass resume=True"):
        Recorder(folder, model)
    with Recorder(folder, model, every=4, resume=True) as rec:
        assert rec.last_step == 5
        second, _ = train(model, rec, 6, X, Y)
    run = open_run(folder)
    assert run.steps.tolist() == list(range(12))
    assert np.array_equal(run.loss, first + second)
    assert run.checkpoint_steps.tolist() == [0, 4, 8] and run.finished


def test_resume_refuses_another_model(tmp_path):
    folder = tmp_path / "run"
    with Recorder(folder, mlp()) as rec:
        rec.step(loss=1.0)
    other = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 2))
    with pytest.raises(EngineInputError, match="not this run's model") as e:
        Recorder(folder, other, resume=True)
    assert "\n" not in str(e.value)
    assert not (folder / fmt.LOCK).exists(), "a refused writer leaves no lock"


def test_refresh_sees_new_steps_checkpoints_and_the_close(tmp_path):
    folder = tmp_path / "run"
    model = mlp()
    X, Y = data()
    rec = Recorder(folder, model, every=2)
    train(model, rec, 3, X, Y)
    rec.flush()
    run = open_run(folder)
    assert run.steps.tolist() == [0, 1, 2] and run.checkpoint_steps.tolist() == [0, 2]
    assert not run.finished and run.writer_alive
    train(model, rec, 2, X, Y)
    rec.flush()
    assert run.refresh().steps.tolist() == [0, 1, 2, 3, 4]
    assert run.checkpoint_steps.tolist() == [0, 2, 4] and not run.finished
    rec.close()
    run.refresh()
    assert run.finished and not run.writer_alive and run.steps.tolist() == [0, 1, 2, 3, 4]


# ── bad input: one line each ─────────────────────────────────────────────────────────────────


def one_line(error) -> str:
    assert "\n" not in str(error.value)
    return str(error.value)


def test_bad_arguments_are_refused_before_any_file(tmp_path):
    model = mlp()
    X, Y = data()
    cases = [
        ({"every": 0}, "every"),
        ({"max_checkpoints": 1}, "max_checkpoints"),
        ({"sharpness_every": 5}, "sharpness_data"),
        ({"sharpness_data": (X, Y)}, "sharpness_every"),
        ({"sharpness_every": 5, "sharpness_data": X}, "pair"),
        ({"sharpness_every": 5, "sharpness_data": (X, Y), "loss": "hinge"}, "hinge"),
        ({"sharpness_every": 5, "sharpness_data": (X[:, :2], Y)}, "does not take inputs"),
    ]
    for options, match in cases:
        with pytest.raises(EngineInputError, match=match) as e:
            Recorder(tmp_path / "run", model, **options)
        one_line(e)
        assert not (tmp_path / "run").exists()
    with pytest.raises(EngineInputError, match="torch.nn.Module"):
        Recorder(tmp_path / "run", {"w": torch.zeros(2)})


def test_a_folder_that_is_not_a_run(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(EngineInputError, match="not a run folder and not empty") as e:
        Recorder(tmp_path, mlp())
    one_line(e)
    assert not (tmp_path / fmt.LOCK).exists()
    with pytest.raises(EngineInputError, match="not a run folder") as e:
        open_run(tmp_path)
    one_line(e)
    with pytest.raises(EngineInputError, match="no such run folder"):
        open_run(tmp_path / "absent")


def test_a_checkpoint_that_does_not_fit_the_model(tmp_path):
    model = mlp()
    with Recorder(tmp_path / "run", model) as rec:
        rec.step(loss=1.0)
    run = open_run(tmp_path / "run")
    wide = nn.Sequential(nn.Linear(3, 7), nn.ReLU(), nn.Linear(7, 4), nn.ReLU(), nn.Linear(4, 2))
    with pytest.raises(EngineInputError, match="does not fit the model: '0.weight' is float32 \\(7, 3\\)") as e:
        run.load_into(wide, 0)
    one_line(e)
    with pytest.raises(EngineInputError, match="has no '2.weight'"):
        run.load_into(nn.Sequential(nn.Linear(3, 5)), 0)
    with pytest.raises(EngineInputError, match="no checkpoint at step 1"):
        run.checkpoint(1)
    assert isinstance(run, Run)


def test_the_model_deep_copies_and_keeps_no_hook_after_its_first_call(tmp_path):
    import copy

    model = mlp()
    X, Y = data()
    with Recorder(tmp_path / "run", model) as rec:
        twin = copy.deepcopy(model)  # e.g. an EMA copy made before training: no recorder comes with it
        assert isinstance(twin, nn.Sequential)
        train(model, rec, 2, X, Y)
        assert not model._forward_pre_hooks


def test_the_documented_numpy_reader_reads_what_open_run_reads(tmp_path):
    """docs/EXPORTS.md's "Reading with numpy alone" block, run as written on a recorded folder."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "EXPORTS.md").read_text(encoding="utf-8")
    section = text[text.index("## Training runs (ll.Recorder)") :]
    block = section[section.index("**Reading with numpy alone.**") :]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    model = mlp()
    X, Y = data()
    with Recorder(tmp_path / "run", model, every=2) as rec:
        train(model, rec, 5, X, Y)
        rec.step(loss=None)
    names = {"run": str(tmp_path / "run")}
    exec(code, names)
    run = open_run(tmp_path / "run")
    assert np.array_equal(names["steps"], run.steps)
    assert np.array_equal(names["loss"], run.loss, equal_nan=True)
    assert all(np.array_equal(names["state"][k], v.numpy()) for k, v in run.checkpoint(4).items())
    assert all(np.array_equal(names["c"][r.name], r.c) for r in run.invariants(4))
