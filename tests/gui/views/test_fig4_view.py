"""The Fig. 4 view's caption (count and ETA) and its line plot's frame while cells arrive."""

import numpy as np

from engine.topology.width_sweep import SweepProgress
from gui.views.fig4_view import Fig4View, SweepClock


class FakeTime:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_the_eta_counts_from_the_first_cells_not_the_start_up():
    now = FakeTime()
    clock = SweepClock(now)
    assert clock.text(0, 24) == "starting…"
    now.t += 40.0  # Ray starts its workers: no cell yet
    assert clock.text(2, 24) == "2 / 24 runs · estimating the time left…"
    now.t += 10.0  # 4 more cells in 10 s: 18 left at 2.5 s each
    assert clock.text(6, 24) == "6 / 24 runs · ETA 45 s"
    now.t += 5.0
    assert clock.text(24, 24) == "24 runs in 55 s"
    clock.restart()  # a resumed sweep: its first report counts the stored cells
    now.t += 3.0
    assert clock.text(20, 24).endswith("estimating the time left…")
    now.t += 2.0
    assert clock.text(22, 24) == "22 / 24 runs · ETA 2 s"


def test_cells_that_arrive_together_are_no_rate():
    now = FakeTime()
    clock = SweepClock(now)
    clock.text(0, 50)
    now.t += 6.0  # two workers finish their first cells 30 ms apart
    assert clock.text(2, 50).endswith("estimating the time left…")
    now.t += 0.03
    assert clock.text(4, 50).endswith("estimating the time left…")  # not "ETA 1 s"
    now.t += 2.0
    assert clock.text(4, 50).endswith("estimating the time left…")
    now.t += 8.0  # the next pair, 10 s after the first: 4 runs per 10 s, 44 left
    assert clock.text(6, 50) == "6 / 50 runs · ETA 220 s"  # one of the pair so far
    now.t += 0.03
    assert clock.text(8, 50) == "8 / 50 runs · ETA 105 s"
    # Cells arriving steadily every 0.1 s are no burst past its first half second.
    now, total = FakeTime(), 100
    clock = SweepClock(now)
    for done in range(2, 20, 2):
        now.t += 0.1
        text = clock.text(done, total)
    assert text == "18 / 100 runs · ETA 4 s", text  # the burst ends at 0.6 s: 6 runs in 0.3 s, 82 left


def partial(cells: dict[tuple[int, int], float], done: int, total: int = 24) -> SweepProgress:
    ls, l_plus = np.array([2, 3, 4]), np.arange(5)
    mean = np.full((3, 5), np.nan)
    for (i, j), value in cells.items():
        mean[i, j] = value
    return SweepProgress(ls=ls, l_plus=l_plus, mean=mean, std=np.zeros_like(mean), done=done, total=total)


def test_one_finished_cell_is_framed_readably(qtbot):
    view = Fig4View()
    qtbot.addWidget(view)
    view.show_partial(partial({(0, 0): 0.30}, done=2))
    (x0, x1), (y0, y1) = view.lines.viewRange()
    assert (x0, x1) == (-0.04, 1.04)  # l₊ / l is a fraction
    assert y0 < 0.30 < y1 and y1 - y0 >= 0.06 - 1e-12  # not pyqtgraph's ±0.001 around one point
    view.show_partial(partial({(0, 0): 0.30, (0, 1): 0.50, (1, 2): 0.10}, done=6))
    (_, _), (y0, y1) = view.lines.viewRange()
    assert y0 < 0.10 and y1 > 0.50 and y1 - y0 < 0.6  # the losses, with a margin
    assert view.caption.text().startswith("Fig. 4 sweep: 6 / 24 runs")
