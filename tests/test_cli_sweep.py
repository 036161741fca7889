"""``main.py sweep``: Ray against local to the last bit, Ctrl-C then --resume against an
uninterrupted run, the progress bar on a terminal only, and one-line errors (exit 2)."""

import fcntl
import io
import json
import os
import re
import signal
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
import tqdm.std

import main
from engine.core.progress import run_to_completion
from engine.minima.pipeline import Figure3Settings, construction_job
from engine.minima.verdicts import Verdict
from landscape_lens.progress_bar import CellBar

from .files import output_bytes

ROOT = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        status = main.main(list(argv))
    except SystemExit as leave:  # argparse's own exit
        status = leave.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def raylets() -> int:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return sum("raylet" in line and "grep" not in line for line in ps.splitlines())


def test_fig4_quick_on_ray_equals_local_to_the_last_bit(tmp_path, capsys):
    before = raylets()
    ray_run = subprocess.run(
        [sys.executable, "main.py", "sweep", "fig4", "--quick", "--executor", "ray", "--workers", "2"]
        + ["--out", str(tmp_path / "ray")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ray_run.returncode == 0, ray_run.stderr[-2000:]
    status, out, _ = run_cli(capsys, "sweep", "fig4", "--quick", "--out", str(tmp_path / "local"))
    assert status == 0
    assert json.loads(ray_run.stdout) == json.loads(out)
    a, b = output_bytes(tmp_path / "ray"), output_bytes(tmp_path / "local")
    assert {"metrics.json", "sweep.json", "sweep.npz:W1", "sweep.npz:test_bce"} <= set(a)
    assert a == b
    assert len(list((tmp_path / "ray" / "cells").glob("*.npz"))) == sum(l + 1 for l in range(2, 10))
    assert "cell/s" not in ray_run.stderr  # no progress bar when stderr is not a terminal
    assert raylets() <= before  # the Ray it started is gone


def test_ctrl_c_keeps_finished_cells_and_resume_equals_an_uninterrupted_run(tmp_path, capsys):
    grid = ["sweep", "fig4", "--l", "2..5", "--inits", "3", "--steps", "1000"]  # 3 + 4 + 5 + 6 = 18 cells (l, l+ ≤ l)
    part, k = tmp_path / "part", 3
    # The sweep hands back k cells and then none (tests/sweep_gate.py), so it is still running
    # when the signal comes, whatever the machine's speed: the signal waits for an event.
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.sweep_gate", str(k), *grid, "--out", str(part)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == f"{k} cells written\n", proc.stderr.read()
        assert proc.poll() is None  # not finished, and it cannot finish on its own
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # a hang guard only
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    assert f"interrupted: {k} of 18 cells kept" in err and out == ""
    kept = {p.name: p.stat().st_mtime_ns for p in (part / "cells").glob("*.npz")}
    assert len(kept) == k and not list((part / "cells").glob(".*"))  # whole cells only
    assert not (part / "metrics.json").exists()
    status, _, err = run_cli(capsys, *grid, "--out", str(part), "--resume")
    assert status == 0, err
    assert {n: (part / "cells" / n).stat().st_mtime_ns for n in kept} == kept  # only the missing were computed
    assert len(list((part / "cells").glob("*.npz"))) == 18
    status, _, _ = run_cli(capsys, *grid, "--out", str(tmp_path / "whole"))
    assert status == 0 and output_bytes(part) == output_bytes(tmp_path / "whole")


def test_progress_bar_on_a_terminal(tmp_path):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a 120-column terminal
    proc = subprocess.Popen(
        [sys.executable, "main.py", "sweep", "fig5", "--quick", "--out", str(tmp_path / "f5")],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    text = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, text
    assert "fig5 on local (" in text and "75/75" in text and "cell/s" in text  # done/total, rate
    assert "<" in text  # tqdm's elapsed<remaining: the ETA


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def shown_eta(terminal: FakeTerminal) -> str:
    """The remaining time of the last bar tqdm drew: "<MM:SS" or "<?"."""
    return re.findall(r"<(\d\d:\d\d|\?)", terminal.getvalue())[-1]


def test_the_sweep_bars_eta_counts_from_the_first_cells_not_the_start_up(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(tqdm.std, "time", lambda: now[0])  # tqdm's clock, stopped and moved by hand
    terminal = FakeTerminal()
    bar = CellBar("fig4 on ray (2 workers)", 50, 0, file=terminal)
    now[0] = 30.0  # Ray's workers start and import torch: no cell for 30 s
    bar.update(1)
    now[0] = 30.25  # the other worker's first cell: the same burst
    bar.update(2)
    assert shown_eta(terminal) == "?"  # no rate from a burst
    for k in range(1, 5):  # then a cell a second
        now[0] = 30.25 + k
        bar.update(2 + k)
    # 4 cells in 4 s since the burst: 44 cells left, 44 s. Counted from the start it said 4 min 11 s
    # ((50 − 6) / (6 / 34.25)); counted from the first cell alone, 37 s (44 / (5 / 4.25)).
    assert shown_eta(terminal) == "00:44"
    bar.close()


def test_minima_sweep_counts_outcomes(tmp_path, capsys):
    argv = ["sweep", "minima", "--data-seeds", "0..2", "--splits", "1", "--out", str(tmp_path)]
    status, out, err = run_cli(capsys, *argv)
    assert status == 0, err
    m = json.loads(out)
    assert sum(r["count"] for r in m["outcomes"]) == 3 and len(m["cells"]) == 3
    for cell in m["cells"]:
        assert cell["verdict"] in {v.value for v in Verdict} | {"no suitable minimum"}
        if cell["saddle_verdict"] == Verdict.SADDLE.value:
            assert cell["saddle_min_eig"] < 0 and 0 <= cell["predicted_dip_pair"] <= 1
    # Seed 0's cell is the construction built directly, step for step.
    fs = Figure3Settings(seed=0, schedule=((1, 1), (2, 1)), lam=0.99, data_tries=1, slices=None, path=None, plane=None)
    c, _ = run_to_completion(construction_job(fs))
    assert m["cells"][0]["L_star"] == c.steps[-1].loss and m["cells"][0]["verdict"] == c.steps[-1].verdict.value


def one_line(status, err):
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    out = ["--out", str(tmp_path / "x")]
    status, _, err = run_cli(capsys, "sweep", "fig4", "--quick", "--executor", "ray", "--address", "127.0.0.1:1", *out)
    one_line(status, err)
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,0\n3,oops,1\n")
    one = tmp_path / "one.csv"
    one.write_text("".join(f"{i},{2 * i},1\n" for i in range(10)))
    cases = [
        (["fig4", "--dataset", str(bad)], "numeric"),
        (["fig4", "--dataset", str(one)], "one class only"),
        (["fig4", "--l", "5..2"], "empty range"),
        (["fig4", "--l", "2..300"], "outside"),
        (["fig5", "--d", "1..400", "--l", "1..400", "--scheme", "pytorch"], "the limit is 100000"),
        (["fig5", "--scheme", "gaussian"], "unknown"),
        (["fig4", "--dataset", "iris"], "unknown"),
        (["fig4", "--address", "auto"], "needs --executor ray"),
    ]
    for argv, message in cases:
        status, _, err = run_cli(capsys, "sweep", *argv, "--quick", *out)
        one_line(status, err)
        assert message in err, (argv, err)
    status, _, err = run_cli(capsys, "sweep", "fig4", "--l", "2", "--inits", "1", "--steps", "3", *out)
    assert status == 0, err
    status, _, err = run_cli(capsys, "sweep", "fig4", "--l", "2", "--inits", "2", "--steps", "3", "--resume", *out)
    one_line(status, err)
    assert "--resume refused" in err and "n_inits 1 -> 2" in err
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    status, _, err = run_cli(capsys, "sweep", "fig5", "--quick", "--executor", "ray", "--out", str(tmp_path / "y"))
    one_line(status, err)
    assert 'pip install ".[ray]"' in err


@pytest.mark.parametrize("argv", [["fig4"], ["fig6", "--out", "x"]])
def test_usage_errors(capsys, argv):
    status, _, err = run_cli(capsys, "sweep", *argv)
    one_line(status, err)
