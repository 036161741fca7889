"""A live Fig. 3 run is drawn at a pace (gui/workspaces/minima.py, ``LIVE_INTERVAL``): its partial
results, presented at every new point of a stage with the degenerate path and the steps table
redrawn whole, are drawn at most once an interval, the newest replacing any still waiting (each
holds all that came before it); the result is drawn at once and nothing older after it."""

import numpy as np

from gui.presets import apply_values

from .test_minima_workspace import QUICK


def test_live_partials_are_paced_and_the_result_draws_at_once(window, qtbot):
    window.load_preset("nonattr-shallow", run=False)
    ws = window.workspaces["minima"]
    apply_values(ws.parameters, QUICK)
    # The job's every partial, in order (a runner may drop some for newer ones; here none is).
    job, partials = ws.make_job(), []
    while True:
        try:
            update = next(job)
        except StopIteration as stop:
            result = stop.value
            break
        if update.partial is not None:
            partials.append(update.partial)
    with_path = []  # the partials that bring a new path, each a longer one
    for p in partials:
        path = p.state["stages"].get("path")
        if path is not None and (not with_path or with_path[-1].state["stages"]["path"] is not path):
            with_path.append(p)
    assert len(with_path) >= 3, "the path must grow in partials"

    now, drawn = [0.0], []  # the pacer's own clock, moved by hand: no wall clock here
    ws.pacer._clock = lambda: now[0]
    show_path = ws.path_view.show_path
    ws.path_view.show_path = lambda lam, *rest: (drawn.append(np.array(lam)), show_path(lam, *rest))
    latest = lambda p: p.state["stages"]["path"]["lam"]

    for p in with_path[:-1]:  # all at once: only the newest is drawn, in the pacer's next turn
        ws.show_partial(p)
    assert drawn == []
    qtbot.waitUntil(lambda: ws.pacer.pending == (), timeout=10000)
    assert len(drawn) == 1
    np.testing.assert_array_equal(drawn[0], latest(with_path[-2]))

    ws.show_partial(with_path[-1])  # within the interval: it waits
    qtbot.wait(50)
    assert len(drawn) == 1 and ws.pacer.pending == ("partial",)
    now[0] = 0.99 * ws.pacer.intervals["partial"]
    qtbot.wait(50)
    assert len(drawn) == 1, "drawn before its interval was up"
    now[0] = ws.pacer.intervals["partial"]
    qtbot.waitUntil(lambda: len(drawn) == 2, timeout=10000)
    np.testing.assert_array_equal(drawn[1], latest(with_path[-1]))

    ws.show_partial(with_path[0])  # an old partial still waiting as the result comes
    ws.show_result(result)
    assert ws.pacer.pending == (), "a partial waiting must not draw over the result"
    np.testing.assert_array_equal(ws.path_view.loss_curve.xData, result.result.path.lam)
