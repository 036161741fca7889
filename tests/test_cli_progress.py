"""Progress on the command line: a tqdm bar with rate and ETA on a terminal's stderr, nothing
when stderr is a pipe or a file. The commands run as real processes, stderr on a pseudo-terminal."""

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import numpy as np
import pytest

from engine.core.progress import Progress
from landscape_lens.progress_bar import ProgressBar, progress_bar

ROOT = Path(__file__).resolve().parents[1]
# tqdm's line as landscape_lens.progress_bar formats it: "name:  42%|████   | [00:03<00:04, 12.5%/s, message]"
BAR = re.compile(r"(\d{1,3})%\|[^|\n\r]*\| \[(\d\d:\d\d)<(\d\d:\d\d|\?), ((?:\d+(?:\.\d+)?)|\?)%/s[,\]]")


def run_on_a_terminal(argv, timeout=300) -> tuple[int, str, str]:
    """(status, stdout, what the terminal on stderr showed) of ``main.py argv``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a 120-column terminal
    stdout = tempfile.TemporaryFile()  # not a pipe: nobody reads one while the terminal is read
    process = subprocess.Popen(
        [sys.executable, "main.py", *argv], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=stdout, stderr=slave
    )
    os.close(slave)
    shown, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal has closed it
                break
            shown += chunk
        elif process.poll() is not None:
            break
    else:
        process.kill()
        pytest.fail(f"{argv} did not finish in {timeout} s")
    process.wait()
    os.close(master)
    stdout.seek(0)
    out = stdout.read().decode()
    stdout.close()
    return process.returncode, out, shown.decode(errors="replace")


def run_without_terminal(argv, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def assert_a_bar_with_rate_and_eta(shown: str):
    bars = BAR.findall(shown)
    assert bars, f"no tqdm bar on the terminal: {shown[-500:]!r}"
    percent, elapsed, remaining, rate = bars[-1]
    assert percent == "100" and remaining != "?" and rate != "?", bars[-1]  # finished: a rate and an ETA of 0
    assert "\r[" not in shown and "nan%" not in shown  # not the old hand-printed percentages


def test_reproduce_shows_a_tqdm_bar_on_a_terminal(tmp_path):
    status, out, shown = run_on_a_terminal(["reproduce", "topo-probability", "--quick", "--out", str(tmp_path / "t")])
    assert status == 0, shown[-500:]
    assert "topo-probability:" in shown
    assert_a_bar_with_rate_and_eta(shown)
    assert any(0 < int(p) < 100 for p, *_ in BAR.findall(shown)), "the bar never showed progress in between"
    assert json.loads(out)  # stdout is the metrics JSON alone: the bar went to stderr


def test_reproduce_without_a_terminal_prints_no_bar(tmp_path):
    done = run_without_terminal(["reproduce", "topo-probability", "--quick", "--out", str(tmp_path / "p")])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no bar, no percentages, no carriage returns in a log
    assert json.loads(done.stdout)


@pytest.fixture(scope="module")
def network(tmp_path_factory) -> str:
    from engine.core import mlp
    from engine.io import netfile

    arch = mlp.Arch((2, 20, 20, 1), "tanh", False)
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("net") / "net.npz"
    netfile.save_network(path, arch, mlp.init_params(arch, rng, 1.0), rng.normal(size=(40, 2)), rng.normal(size=40))
    return str(path)


def test_inspect_shows_a_bar_on_a_terminal_and_nothing_in_a_pipe(network):
    status, out, shown = run_on_a_terminal(["inspect", network])
    assert status == 0, shown[-500:]
    assert "inspect net.npz:" in shown
    assert_a_bar_with_rate_and_eta(shown)
    assert json.loads(out)["n_params"] == 460
    done = run_without_terminal(["inspect", network])
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(done.stdout) == json.loads(out)  # the bar changes nothing else


# ------------------------------------------------------------------ the helper, in-process
class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_bar_follows_fractions_never_back_and_keeps_its_place_when_unknown():
    screen = Terminal()
    bar = ProgressBar("job", screen, delay=0)
    bar(Progress(0.25, "first quarter"))
    assert bar._bar.n == pytest.approx(25)
    bar(Progress(float("nan"), "waiting"))  # unknown: the bar stays, the message changes
    assert bar._bar.n == pytest.approx(25) and bar._bar.postfix == "waiting"
    bar(Progress(0.1, "a sub-job restarted its count"))
    assert bar._bar.n == pytest.approx(25)
    bar(Progress(7.0, "beyond the end"))
    assert bar._bar.n == pytest.approx(100)
    bar.count(3, 4)
    assert bar._bar.postfix == "3/4"
    bar.close()
    final = screen.getvalue().rstrip().split("\r")[-1]
    assert final.startswith("job: 100%|") and final.endswith(", 3/4]") and BAR.search(final), final


def test_the_bar_is_silent_off_a_terminal_and_finishes_on_success_only():
    quiet = io.StringIO()
    with progress_bar("job", quiet, delay=0) as bar:
        bar(Progress(0.5, "half"))
    assert bar.disabled and quiet.getvalue() == ""
    screen = Terminal()
    with progress_bar("job", screen, delay=0) as bar:
        bar(Progress(0.5, "half"))
    assert "100%" in screen.getvalue()
    screen = Terminal()
    with pytest.raises(RuntimeError), progress_bar("job", screen, delay=0) as bar:
        bar(Progress(0.5, "half"))
        raise RuntimeError("the job failed")
    assert "100%" not in screen.getvalue() and " 50%" in screen.getvalue()
