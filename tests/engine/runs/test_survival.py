"""A run folder survives its writer: an ordinary training script killed with SIGKILL at random
moments leaves a folder that opens whole, and torn or stray files are read past and reported."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engine.core.errors import EngineInputError
from engine.runs import Recorder, open_run
from engine.runs import format as fmt

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import sys

    import torch
    from torch import nn

    from engine.runs import Recorder

    torch.manual_seed(0)
    torch.set_num_threads(1)
    X = torch.randn(64, 6)
    Y = (X[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(sys.argv[1], model, every=5, sharpness_every=10, sharpness_data=(X, Y), resume=True) as rec:
        print("ready", flush=True)
        for _ in range(100_000):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(X), Y)
            loss.backward()
            opt.step()
            step = rec.step(loss=loss.item(), lr=0.1)
            print("done", step, flush=True)
    """
)


def start(script: Path, folder: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(script), str(folder)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )


def kill_after(proc: subprocess.Popen, lines: int) -> list[int]:
    """Read ``lines`` "done" lines, SIGKILL the script, reap it; the steps it reported done."""
    assert proc.stdout.readline().strip() == "ready"
    done = []
    for _ in range(lines):
        line = proc.stdout.readline()
        assert line.startswith("done"), line
        done.append(int(line.split()[1]))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    return done


def check_whole(folder: Path, reported: list[int]):
    """The folder opens without a problem; its steps are 0, 1, … with every reported one among
    them; every checkpoint and invariants file it lists opens."""
    run = open_run(folder)
    assert run.problems == []
    assert not run.writer_alive and not run.finished
    n = len(run.steps)
    assert run.steps.tolist() == list(range(n)) and n >= reported[-1] + 1
    assert np.all(np.isfinite(run.loss)) and np.all(run.lr == 0.1)
    assert set(run.checkpoint_steps.tolist()) <= set(range(0, n, 5))
    assert set(run.sharpness_steps.tolist()) <= set(range(0, n, 10))
    assert np.all(run.sharpness > 0)
    for step in run.checkpoint_steps:
        state = run.checkpoint(int(step))
        assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
        assert [r.name for r in run.invariants(int(step))] == ["0.weight", "2.weight"]
    return run


def test_a_training_script_killed_at_random_moments_leaves_a_whole_folder(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    rng = np.random.default_rng(56)
    for kill in range(10):
        folder = tmp_path / f"run{kill}"
        reported = kill_after(start(script, folder), int(rng.integers(1, 60)))
        assert reported == list(range(len(reported)))
        check_whole(folder, reported)
    # a killed run continues: its dead writer's lock is taken over, the steps go on where it stopped
    folder = tmp_path / "run9"
    before = open_run(folder)
    reported = kill_after(start(script, folder), 12)
    assert reported[0] == len(before.steps), "resume=True continues after the last recorded step"
    after = check_whole(folder, reported)
    assert np.array_equal(after.loss[: len(before.steps)], before.loss)


def recorded(folder: Path, steps: int = 12) -> Path:
    """A finished run of ``steps`` steps with checkpoints every 3 (0, 3, 6, 9)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    X, Y = torch.randn(16, 3), torch.randint(0, 2, (16,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(folder, model, every=3) as rec:
        for _ in range(steps):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(X), Y)
            loss.backward()
            opt.step()
            rec.step(loss=loss)
    return folder


def test_a_truncated_manifest_is_reported_and_the_files_present_open(tmp_path):
    folder = recorded(tmp_path / "run")
    whole = open_run(folder)
    text = (folder / fmt.MANIFEST).read_bytes()
    (folder / fmt.MANIFEST).write_bytes(text[: len(text) // 2])
    run = open_run(folder)
    assert len(run.problems) == 1 and "manifest.json" in run.problems[0] and "damaged" in run.problems[0]
    assert "\n" not in run.problems[0]
    assert np.array_equal(run.steps, whole.steps) and np.array_equal(run.loss, whole.loss)
    assert run.checkpoint_steps.tolist() == [0, 3, 6, 9]
    for step in (0, 9):
        assert all(torch.equal(a, b) for a, b in zip(run.checkpoint(step).values(), whole.checkpoint(step).values()))
    np.testing.assert_array_equal(run.invariant_history()["0.weight"], whole.invariant_history()["0.weight"])
    with pytest.raises(EngineInputError, match="damaged"):
        Recorder(folder, nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)), resume=True)


def test_a_missing_checkpoint_file_keeps_the_ones_before_it(tmp_path):
    folder = recorded(tmp_path / "run")
    (folder / fmt.checkpoint_name(6)).unlink()
    run = open_run(folder)
    assert run.checkpoint_steps.tolist() == [0, 3]
    assert len(run.problems) == 1 and "step_000000006.npz" in run.problems[0] and "step 6 on" in run.problems[0]
    assert run.steps.tolist() == list(range(12)), "the scalars are all there"
    run.checkpoint(3)
    with pytest.raises(EngineInputError, match="no checkpoint at step 9"):
        run.checkpoint(9)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with Recorder(folder, model, every=3, resume=True) as rec:  # a writer drops the lost checkpoint
        rec.step(loss=0.5)
    run = open_run(folder)
    assert run.checkpoint_steps.tolist() == [0, 3, 9, 12] and run.problems == []


def test_stray_temporary_files_are_ignored_and_cleared_on_resume(tmp_path):
    folder = recorded(tmp_path / "run")
    strays = [
        folder / f".{fmt.MANIFEST}{fmt.TEMP_MARK}999-0",
        folder / fmt.CHECKPOINTS / f".step_000000012.npz{fmt.TEMP_MARK}999-1",
        folder / fmt.CHECKPOINTS / "step_000000012.npz",  # landed, but never listed
    ]
    for p in strays:
        p.write_bytes(b"PK\x03\x04 half an archive")
    run = open_run(folder)
    assert run.problems == [] and run.checkpoint_steps.tolist() == [0, 3, 6, 9]
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with Recorder(folder, model, every=3, resume=True) as rec:
        assert not any(p.exists() for p in strays)
        assert rec.step(loss=0.5) == 12
    assert open_run(folder).checkpoint_steps.tolist() == [0, 3, 6, 9, 12]


def test_a_torn_last_line_is_skipped_and_resume_writes_past_it(tmp_path):
    folder = recorded(tmp_path / "run")
    with open(folder / fmt.SCALARS, "ab") as f:
        f.write(b'{"step": 12, "loss": 0.12')
    run = open_run(folder)
    assert run.steps.tolist() == list(range(12)) and run.problems == []
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with Recorder(folder, model, every=3, resume=True) as rec:
        assert rec.step(loss=0.5) == 12
    run = open_run(folder)
    assert run.steps.tolist() == list(range(13)) and run.loss[-1] == 0.5 and run.problems == []


def test_a_damaged_line_is_reported_and_the_rest_read(tmp_path):
    folder = recorded(tmp_path / "run")
    lines = (folder / fmt.SCALARS).read_bytes().split(b"\n")
    lines[4] = b"\xff\xfe not json"
    (folder / fmt.SCALARS).write_bytes(b"\n".join(lines))
    run = open_run(folder)
    assert run.steps.tolist() == [0, 1, 2, 3, *range(5, 12)]
    assert len(run.problems) == 1 and "scalars.jsonl" in run.problems[0]
    assert json.loads((folder / fmt.MANIFEST).read_text())["finished"] is True


def test_thinned_files_are_deleted_only_after_the_manifest_lands(tmp_path, monkeypatch):
    """A manifest write that fails while thinning leaves the old manifest, every file it lists,
    and the error raised in the loop at its next call."""
    folder = tmp_path / "run"
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    rec = Recorder(folder, model, every=1, max_checkpoints=3)
    for _ in range(3):
        rec.step(loss=1.0)
    rec.flush()
    real = fmt.write_json

    def fails(path, obj):
        if len(obj["checkpoints"]) == 3 and obj["checkpoints"][-1]["step"] == 3:
            raise OSError("no space left on device")
        real(path, obj)

    monkeypatch.setattr(fmt, "write_json", fails)
    rec.step(loss=1.0)  # step 3: four checkpoints thin to three, and the manifest write fails
    with pytest.raises(OSError, match="no space left"):
        rec.flush()
    monkeypatch.setattr(fmt, "write_json", real)
    run = open_run(folder)
    assert run.checkpoint_steps.tolist() == [0, 1, 2] and run.problems == []
    for step in (0, 1, 2):
        run.checkpoint(step)
    rec.close()
