"""The scripts in examples/ run as a user would run them, in a fresh process, and write what they
say they write."""

import subprocess
import sys
from pathlib import Path

import numpy as np

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
