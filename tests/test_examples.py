"""The scripts in examples/ run as a user would run them, in a fresh process, and write what they
say they write."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

import landscape_lens as ll

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *argv], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_digits_landscape(tmp_path):
    out = tmp_path / "out"
    done = run_example("digits_landscape.py", "--out", str(out), "--quick", cwd=tmp_path)
    assert "top eigenvalues" in done.stdout
    plane, hessian, path = (ll.load(out / f"{name}.npz") for name in ("plane", "hessian", "trajectory"))
    assert plane.loss.shape == (5, 5) and np.isfinite(plane.loss).all()
    assert hessian.eigenvalues[0] > 0 and hessian.bottom_eigenvalues.shape == (1,)
    assert path.path.shape[1] == 2 and len(path.path) >= 3
    assert all((out / f"{name}.png").stat().st_size > 10_000 for name in ("plane", "hessian", "trajectory"))


def test_train_digits_cnn_writes_a_run_the_toolkit_reads(tmp_path):
    run_dir = tmp_path / "run"
    done = run_example("train_digits_cnn.py", "--run", str(run_dir), "--steps", "60", cwd=tmp_path)
    assert "60 steps" in done.stdout
    run = ll.open_run(run_dir)
    assert run.finished and list(run.steps) == list(range(60)) and np.isfinite(run.loss).all()
    assert list(run.checkpoint_steps) == [0, 20, 40] and len(run.sharpness) == 1
    assert [layer.name for layer in run.invariants(40)] == ["0.weight", "3.weight"]
    # the command line takes the run folder wherever it takes checkpoints
    from sklearn.datasets import load_digits

    digits = load_digits()
    np.savez(tmp_path / "d.npz", X=digits.images[:100, None].astype(np.float32) / 16, Y=digits.target[:100])
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(16 * 2 * 2, 10),
    )  # fmt: skip
    run.load_into(model, 40)
    pt2 = tmp_path / "cnn.pt2"
    x = torch.zeros(2, 1, 8, 8)
    torch.export.save(torch.export.export(model.eval(), (x,), dynamic_shapes=({0: torch.export.Dim("batch")},)), pt2)
    out = tmp_path / "out"
    argv = [sys.executable, "main.py", "landscape", str(pt2), "--data", str(tmp_path / "d.npz"), "--out", str(out)]
    done = subprocess.run([*argv, "--trajectory", str(run_dir), "--plane", "3"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr
    path = ll.load(out / "plane.npz")
    api = ll.trajectory_plane(run_dir, model, (tmp_path / "d.npz"), points=3, progress=False)
    np.testing.assert_allclose(path.path, api.path, rtol=1e-10, atol=1e-12)
