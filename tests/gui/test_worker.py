"""The worker bridge: throttling, pause, step, cancel and engine errors, with a real QThread."""
import threading
import time

import pytest

from engine.errors import EngineInputError
from engine.progress import Progress
from gui.worker import MIN_EMIT_INTERVAL_S, JobRunner


def counting_job(n, delay=0.0, seen=None):
    for i in range(n):
        if delay:
            time.sleep(delay)
        if seen is not None:
            seen.append(i)
        yield Progress((i + 1) / n, f"step {i}", partial=i)
    return n


@pytest.fixture
def runner(qapp):
    r = JobRunner()
    yield r
    r.cancel(wait_ms=5000)


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


def test_pause_takes_effect_quickly_and_resume_continues(qtbot, runner):
    seen = []
    runner.start(counting_job(100000, delay=0.002, seen=seen))
    qtbot.waitUntil(lambda: len(seen) > 5, timeout=5000)
    runner.pause()
    qtbot.wait(200)  # pause must hold within 200 ms
    frozen = len(seen)
    qtbot.wait(300)
    assert len(seen) - frozen <= 1
    assert runner.state == "paused"
    runner.resume()
    qtbot.waitUntil(lambda: len(seen) > frozen + 5, timeout=5000)


def test_step_advances_one_yield(qtbot, runner):
    seen = []
    runner.start(counting_job(100, seen=seen), start_paused=True)
    qtbot.wait(100)
    assert seen == []
    runner.step()
    qtbot.waitUntil(lambda: len(seen) == 1, timeout=2000)
    qtbot.wait(150)
    assert seen == [0] and runner.state == "paused"


def test_cancel_stops_within_200ms_and_leaves_no_thread(qtbot, runner):
    seen = []
    runner.start(counting_job(10**7, delay=0.01, seen=seen))
    qtbot.waitUntil(lambda: len(seen) > 3, timeout=5000)
    thread, kept = runner._thread, []
    runner.cancelled.connect(kept.append)
    with qtbot.waitSignals([runner.cancelled, thread.finished], timeout=2000):
        started = time.monotonic()
        runner.cancel()
    assert time.monotonic() - started < 0.2 + 0.3  # 200 ms plus event-loop slack
    assert kept[0].partial >= 3  # what was computed is kept
    qtbot.waitUntil(lambda: not runner.busy, timeout=2000)


def test_engine_error_becomes_a_message(qtbot, runner):
    def bad_job():
        yield Progress(0.0, "starting")
        raise EngineInputError("learning rate -1 must be positive")

    with qtbot.waitSignal(runner.failed, timeout=5000) as failed:
        runner.start(bad_job())
    assert failed.args == ["learning rate -1 must be positive"]
    qtbot.waitUntil(lambda: not runner.busy)


def test_cancel_and_wait_drops_stale_signals(qtbot, runner):
    stale = []
    runner.start(counting_job(10**7, delay=0.001))
    qtbot.wait(50)
    assert runner.cancel(wait_ms=5000)
    runner.cancelled.connect(stale.append)
    runner.succeeded.connect(stale.append)
    qtbot.wait(100)
    assert stale == [] and not runner.busy
