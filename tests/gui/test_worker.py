"""The worker bridge: throttling, pause, step, cancel, supersede and engine errors, with a real QThread.

Assertions are about events (what was computed, what arrived), never about wall-clock time:
jobs here block on events the test controls, so a slow machine cannot make them pass or fail.
"""

import threading

import pytest

from engine.core.errors import EngineInputError
from engine.core.progress import Progress
from gui.worker import JobRunner


def counting_job(n, seen=None, gate=None, entered=None, tag=None):
    """Yields n updates; with ``gate`` (a threading.Event) each yield waits until the test opens it,
    after setting ``entered`` (so the test knows the job is inside a step)."""
    for i in range(n):
        if entered is not None:
            entered.set()
        if gate is not None:
            gate.wait()
        if seen is not None:
            seen.append(i)
        yield Progress((i + 1) / n, f"step {i}", partial=i if tag is None else (tag, i))
    return n


@pytest.fixture
def runner(qapp):
    r = JobRunner()
    yield r
    r.discard()
    assert r.wait(5000)


def test_result_arrives_and_updates_are_throttled(qtbot, runner):
    updates = []
    runner.progressed.connect(updates.append)
    with qtbot.waitSignal(runner.succeeded, timeout=20000) as done:
        runner.start(counting_job(20000))
    assert done.args == [20000]
    qtbot.waitUntil(lambda: not runner.busy)
    # 20000 yields in well under a second would be 20000 redraws without the throttle.
    assert 1 <= len(updates) < 20000 / 10
    assert updates[-1].partial == 19999  # the newest partial is never dropped


def sweep_like_job():
    """Cells arrive once (a partial), then plain progress follows, as the sweep runner yields."""
    yield Progress(0.0, "0/2 cells")
    yield Progress(0.5, "1/2 cells", partial="cell 1")  # microseconds after the first: held back
    for _ in range(200):
        yield Progress(0.5, "1/2 cells")
    return "done"


def test_a_partial_held_back_is_not_dropped_by_the_updates_after_it(qtbot, runner):
    updates = []
    runner.progressed.connect(updates.append)
    with qtbot.waitSignal(runner.succeeded, timeout=20000):
        runner.start(sweep_like_job())
    assert "cell 1" in [u.partial for u in updates]  # the map shows the cell the count counts


def test_pause_holds_and_delivers_the_latest_update(qtbot, runner):
    seen, updates = [], []
    runner.progressed.connect(updates.append)
    runner.start(counting_job(10**7, seen=seen))
    qtbot.waitUntil(lambda: len(seen) > 50, timeout=5000)
    runner.pause()
    # The job stops at its next yield: the count stops growing...
    qtbot.waitUntil(lambda: runner.state == "paused", timeout=20000)
    frozen = len(seen)
    # a bool: pytest-qt raises on any other value, and on a loaded machine no update may have been
    # drawn yet when the job is paused (the list was still [] on a fresh clone beside CI)
    qtbot.waitUntil(lambda: bool(updates) and updates[-1].partial == len(seen) - 1, timeout=20000)
    assert len(seen) - frozen <= 1
    # ...and the paused view shows the newest state, not the last one the throttle let by.
    assert updates[-1].partial == seen[-1]
    runner.resume()
    qtbot.waitUntil(lambda: len(seen) > frozen + 5, timeout=5000)


def test_step_advances_one_yield(qtbot, runner):
    seen, updates = [], []
    runner.progressed.connect(updates.append)
    runner.start(counting_job(100, seen=seen), start_paused=True)
    assert seen == []
    runner.step()
    qtbot.waitUntil(lambda: len(updates) == 1, timeout=20000)
    assert seen == [0] and updates[0].partial == 0 and runner.state == "paused"
    runner.step()
    qtbot.waitUntil(lambda: len(updates) == 2, timeout=20000)
    assert seen == [0, 1]


def test_submit_with_step_starts_paused_after_one_yield(qtbot, runner):
    seen, updates = [], []
    runner.progressed.connect(updates.append)
    runner.submit(counting_job(100, seen=seen), step=True)
    qtbot.waitUntil(lambda: len(updates) == 1, timeout=20000)
    assert seen == [0] and runner.state == "paused"


def test_cancel_keeps_the_partial_and_leaves_no_thread(qtbot, runner):
    seen, gate = [], threading.Event()
    gate.set()
    runner.start(counting_job(10**7, seen=seen, gate=gate))
    qtbot.waitUntil(lambda: len(seen) > 3, timeout=5000)
    kept = []
    runner.cancelled.connect(kept.append)
    with qtbot.waitSignal(runner.cancelled, timeout=20000):  # a bound, not a timing
        runner.cancel()
    assert kept[0].partial >= 3  # what was computed is kept
    # Not busy only once the thread's own `finished` was handled: no thread is left running.
    qtbot.waitUntil(lambda: not runner.busy, timeout=20000)


def test_engine_error_becomes_a_message(qtbot, runner):
    def bad_job():
        yield Progress(0.0, "starting")
        raise EngineInputError("learning rate -1 must be positive")

    with qtbot.waitSignal(runner.failed, timeout=5000) as failed:
        runner.start(bad_job())
    assert failed.args == ["learning rate -1 must be positive"]
    qtbot.waitUntil(lambda: not runner.busy)


def test_submit_waits_for_the_old_job_and_drops_its_signals(qtbot, runner):
    """A job slow to yield is superseded: the new one starts only after it has finished, and
    nothing the old one still sends (its partial, its 'cancelled') arrives."""
    gate, entered, old_seen, new_seen, arrived = threading.Event(), threading.Event(), [], [], []
    runner.progressed.connect(lambda u: arrived.append(("progress", u.partial)))
    runner.cancelled.connect(lambda u: arrived.append(("cancelled", None)))
    runner.succeeded.connect(lambda r: arrived.append(("done", r)))
    runner.start(counting_job(10, seen=old_seen, gate=gate, entered=entered, tag="old"))
    assert entered.wait(5)  # blocked inside its first step
    runner.submit(counting_job(3, seen=new_seen, tag="new"))
    qtbot.wait(100)
    assert new_seen == [] and runner.busy  # no second job runs beside the first
    gate.set()  # the old job reaches its yield and is cancelled there
    qtbot.waitUntil(lambda: ("done", 3) in arrived, timeout=5000)
    assert old_seen == [0]
    assert ("cancelled", None) not in arrived
    assert new_seen == [0, 1, 2]
    shown = [p for kind, p in arrived if kind == "progress"]
    assert shown and all(p[0] == "new" for p in shown) and shown[-1] == ("new", 2)


def test_a_newer_submit_replaces_one_still_waiting(qtbot, runner):
    gate, entered, started = threading.Event(), threading.Event(), []
    runner.start(counting_job(5, gate=gate, entered=entered))
    assert entered.wait(5)
    runner.submit(counting_job(1, seen=started))  # waits behind the blocked job...
    runner.submit(counting_job(2))  # ...and is replaced before it ever runs
    gate.set()
    with qtbot.waitSignal(runner.succeeded, timeout=5000) as done:
        pass
    assert done.args == [2] and started == []


def test_cancel_drops_a_job_still_waiting_and_says_so(qtbot, runner):
    """Cancel pressed while a newer job waits for the superseded one to wind down stops the
    newer one: it never runs, and its 'cancelled' arrives (what settles a toolkit load)."""
    gate, entered, started, ended, states = threading.Event(), threading.Event(), [], [], []
    runner.start(counting_job(5, gate=gate, entered=entered, tag="old"))
    assert entered.wait(5)
    runner.submit(counting_job(2, seen=started))
    runner.state_changed.connect(states.append)
    runner.cancelled.connect(lambda last: ended.append(("cancelled", last, runner.active)))
    runner.succeeded.connect(lambda r: ended.append(("succeeded", r, runner.active)))
    runner.cancel()
    assert ended == [("cancelled", None, False)] and states == ["idle"]
    gate.set()
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    qtbot.wait(50)
    assert started == [] and ended == [("cancelled", None, False)]


def test_discard_drops_everything(qtbot, runner):
    gate, entered, stale = threading.Event(), threading.Event(), []
    runner.start(counting_job(10, gate=gate, entered=entered))
    assert entered.wait(5)
    runner.progressed.connect(stale.append)
    runner.cancelled.connect(stale.append)
    runner.discard()
    gate.set()
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert stale == []


@pytest.mark.parametrize("ending", ["succeeded", "failed", "cancelled"])
def test_a_job_that_has_said_how_it_ended_no_longer_counts_as_active(qtbot, runner, ending):
    """Its thread may finish a turn of the loop later: a slot asking "does a job follow?" on its
    last signal must hear no (the toolkit tab kept a failed load's fields when it heard yes)."""

    def job():
        yield Progress(0.0, "starting")
        if ending == "failed":
            raise EngineInputError("no such layer")
        if ending == "cancelled":
            for _ in range(10**7):
                yield Progress(0.5, "working")
        return 1

    asked, states = [], []
    signal = getattr(runner, ending)
    signal.connect(lambda *_: asked.append((runner.active, runner.state, list(states))))
    runner.state_changed.connect(states.append)
    runner.start(job())
    if ending == "cancelled":
        runner.cancel()
    with qtbot.waitSignal(signal, timeout=20000):
        pass
    assert asked[0][:2] == (False, "idle") and len(asked) == 1
    assert asked[0][2][-1] == "idle"  # and the controls heard it before the ending's slots ran
    qtbot.waitUntil(lambda: not runner.busy, timeout=20000)


def test_wait_lets_an_ended_thread_go_before_its_end_is_delivered(qtbot, runner):
    """Shutdown waits, then the window is deleted at once: a runner that kept the ended thread
    until its queued ``finished`` left it to the cycle collector (the state machine found 5)."""
    ended = []
    runner.succeeded.connect(ended.append)
    runner.submit(counting_job(3))
    assert runner.wait(10000)
    assert not runner.busy and runner.state == "idle"  # here, before any event is processed
    qtbot.wait(50)  # its queued signals come from a thread let go: dropped, and nothing raises
    assert ended == [] and not runner.busy
