"""Two minutes of the soak (benchmarks/soak_gui.py) in CI: random sequences of the state
machine's actions on the real window, under the watchdog. No event-loop block over 2 s, no
crash, no exception. Memory is the 20-minute soak's measure, not this test's: in two minutes
the first use of each feature (clip encoder, walk slices, sessions) dominates the growth, which
ranged 130–360 MB between runs of the same seed.

The soak runs its window in a child process on the display pytest-xvfb started (DISPLAY is
inherited), so a crash fails this test instead of ending the session.
"""

import importlib.util
from pathlib import Path

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak_gui.py"
MINUTES = 2.0


def load_soak():
    spec = importlib.util.spec_from_file_location("soak_gui", SOAK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_minutes_of_random_actions_neither_hang_nor_raise(tmp_path):
    soak = load_soak()
    report = soak.soak(minutes=MINUTES, seed=23, out_dir=tmp_path, quiet=True)
    text = soak.summary(report)
    print(text)  # pytest shows it when the test fails
    assert report["actions"] > 50, text
    assert report["crashes"] == [], text
    assert report["hangs"] == [], text
    assert report["exceptions"] == [], text
