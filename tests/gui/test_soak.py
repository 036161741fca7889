"""Two minutes of the soak (benchmarks/soak_gui.py) in CI: random sequences of the state
machine's actions on the real window, under the watchdog. No event-loop block over 2 s, no
crash, no exception, no failed invariant (tests/gui/actions.py's checks after every action).

Memory: in two minutes the first use of each feature (torch, the clip encoder, walk slices,
sessions) dominates RSS, so RSS growth is the 20-minute soak's measure and here only bounds a
gross leak. What grew for good before (issue 27) is counted exactly instead, from the soak's own
memory profile: each 3D view holds the framebuffers of one size, its current one (kept for every
size a layout gave it, they grew RSS by ~30 MB a minute).

The soak runs its window in a child process on the display pytest-xvfb started (DISPLAY is
inherited), so a crash fails this test instead of ending the session.
"""

import importlib.util
import random
from pathlib import Path

from gui.presets import available_presets

from .actions import ACTIONS, PRESETS

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak_gui.py"
MINUTES = 2.0
# RSS growth after the first 30 s. Runs of this seed grew 130–360 MB in two minutes, all of it
# features used for the first time (torch's import alone is ~400 MB of the first minute); twice
# the largest is what no first use explains.
GROSS_GROWTH_MB = 720.0


def load_soak():
    spec = importlib.util.spec_from_file_location("soak_gui", SOAK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_minutes_of_random_actions_neither_hang_nor_raise_nor_grow(tmp_path):
    soak = load_soak()
    profile = {"frames": 0}  # counts only: tracemalloc would slow the actions several times over
    # ray=False: a local Ray's start-up would starve the GUI thread of this 2-core CI machine for
    # seconds; the 20-minute soak sweeps on Ray too.
    report = soak.soak(minutes=MINUTES, seed=23, out_dir=tmp_path, quiet=True, profile=profile, ray=False)
    text = soak.summary(report)
    print(text)  # pytest shows it when the test fails
    assert report["actions"] > 50, text
    assert report["crashes"] == [], text
    assert report["hangs"] == [], text
    assert report["exceptions"] == [], text
    assert report["check_failures"] == {}, text  # any invariant failure fails the soak
    profiled = [sample for sample in report["memory"] if "graphics" in sample]  # not skipped as busy
    assert profiled, text
    for sample in profiled:
        graphics = sample["graphics"]
        # each 3D view's framebuffers are of one size (a clip's compositor renders several
        # views through one GLCells, so there may be more framebuffers than GLCells)
        assert graphics["framebuffer_sizes_per_view"] <= 1, (sample["t_s"], graphics)
    assert report["growth_mb"] <= GROSS_GROWTH_MB, text


def test_the_soak_and_the_state_machine_open_every_preset():
    # What the random sequences never open goes unwatched (issue 27 found 7 of 16 presets).
    shipped = set(available_presets())
    by_sweep = {"fig4-breast-cancer"}  # Driver.load_sweep opens it, with an executor and a folder
    assert set(PRESETS) | by_sweep == shipped
    rng = random.Random(0)  # the soak's draws
    drawn = {ACTIONS["load_preset"][1](rng)[0] for _ in range(1000)}
    assert drawn == set(PRESETS)


def test_kept_growth_counts_from_the_first_quiet_point_after_the_warm_up():
    soak = load_soak()
    trimmed = "rss_after_malloc_trim_mb"
    memory = [
        {"t_s": 60.0, trimmed: 500.0},  # warm-up: first uses
        {"t_s": 130.0, trimmed: 900.0},
        {"t_s": 200.0, trimmed: 950.0},
        {"t_s": 260.0, "skipped": "jobs still ran after 120 s"},
        {"t_s": 320.0, trimmed: 930.0},
    ]
    assert soak.kept_growth(memory, 20.0) == 50.0
    assert soak.kept_growth(memory[:2], 20.0) is None  # nothing after the first quiet point
    assert soak.target_growth({"growth_mb": 120.0, "kept_growth_mb": None}) == 120.0
    assert soak.target_growth({"growth_mb": 120.0, "kept_growth_mb": 50.0}) == 50.0
