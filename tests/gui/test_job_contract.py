"""The window's one job contract, provoked with jobs that are slow to yield.

Each test starts a job that blocks inside a step until the test opens its gate -- the case a
2-second timed cancel used to get wrong -- then does what a person would (Reset, switch
preset, Run again) and checks that the old job never draws again and that no two jobs run.
"""

import threading

import pytest

from engine.core.errors import EngineInputError
from engine.core.progress import Progress
from gui import headless

from .conftest import wait_until_idle


class SlowJob:
    """A job that yields ``(name, i)`` partials and blocks before each until ``gate`` opens."""

    def __init__(self, steps=3, name="slow"):
        self.gate, self.entered, self.steps, self.finished = threading.Event(), threading.Event(), steps, False
        self.name = name

    def __call__(self, steps=None):
        return self._run()

    def _run(self):
        for i in range(self.steps):
            self.entered.set()
            self.gate.wait(30)
            yield Progress((i + 1) / self.steps, f"{self.name} {i}", (self.name, i))
        self.finished = True
        return (self.name, "done")


@pytest.fixture
def drawn(window, monkeypatch):
    """Everything the topology workspace is asked to draw, in order."""
    workspace = window.workspaces["topology"]
    seen = []
    monkeypatch.setattr(workspace, "show_partial", lambda p: seen.append(p))
    monkeypatch.setattr(workspace, "show_result", lambda r: seen.append(r))
    return seen


def start_slow(window, monkeypatch, slow):
    window.show_workspace("topology")
    monkeypatch.setattr(window.workspaces["topology"], "make_job", slow)
    window.run()
    assert slow.entered.wait(10), "the slow job never started"


def test_reset_is_never_drawn_over_by_a_slow_job(window, qtbot, monkeypatch, drawn):
    slow = SlowJob()
    start_slow(window, monkeypatch, slow)
    window.reset()  # the job is inside a step that outlasts any timed wait
    assert not window.cancel_action.isEnabled() or window.runner.busy
    slow.gate.set()  # ...and only now reaches its yield
    wait_until_idle(qtbot, window, 10000)
    assert drawn == [] and not slow.finished


def test_switching_preset_drops_the_old_job_and_starts_the_new_after_it(window, qtbot, monkeypatch, drawn):
    slow = SlowJob()
    start_slow(window, monkeypatch, slow)
    preset_run = SlowJob(steps=1, name="preset")
    preset_run.gate.set()
    monkeypatch.setattr(window.workspaces["topology"], "make_job", preset_run)
    window.load_preset("fig3-free")  # cancels the slow job and queues the preset's run
    old_thread = window.runner._thread
    assert window.runner.busy and old_thread.isRunning()
    assert not preset_run.entered.is_set()  # queued behind the old job, not beside it
    slow.gate.set()
    wait_until_idle(qtbot, window, 30000)
    assert ("slow", 0) not in drawn  # nothing of the superseded job was drawn
    assert preset_run.finished and drawn[-1] == ("preset", "done") and window.last_outcome == "succeeded"


def test_cancel_keeps_what_was_computed(window, qtbot, monkeypatch, drawn):
    slow = SlowJob()
    start_slow(window, monkeypatch, slow)
    window.cancel()
    slow.gate.set()
    wait_until_idle(qtbot, window, 10000)
    assert window.last_outcome == "cancelled" and drawn == [("slow", 0)]


def test_run_after_a_slow_cancel_starts_only_when_the_old_job_ended(window, qtbot, monkeypatch, drawn):
    slow = SlowJob()
    start_slow(window, monkeypatch, slow)
    window.cancel()
    second = SlowJob(steps=1, name="second")
    second.gate.set()
    monkeypatch.setattr(window.workspaces["topology"], "make_job", second)
    window.run()  # a fresh run, queued behind the job still inside its step
    assert not second.entered.is_set()
    slow.gate.set()
    wait_until_idle(qtbot, window, 10000)
    assert second.finished and drawn[-1] == ("second", "done") and ("slow", 0) not in drawn


def test_step_from_idle_starts_paused_after_one_yield(window, qtbot, monkeypatch, drawn):
    slow = SlowJob(steps=5)
    slow.gate.set()
    window.show_workspace("topology")
    monkeypatch.setattr(window.workspaces["topology"], "make_job", slow)
    window.step()
    qtbot.waitUntil(lambda: drawn == [("slow", 0)], timeout=5000)
    assert window.runner.state == "paused" and window.run_action.text() == "Resume"


def test_run_preset_reports_a_failed_or_timed_out_run(window, monkeypatch):
    def failing(steps=None):
        yield Progress(0.0, "starting")
        raise EngineInputError("diverged at step 3")

    monkeypatch.setattr(window.workspaces["topology"], "make_job", failing)
    with pytest.raises(EngineInputError, match="failed: diverged at step 3"):
        headless.run_preset(window, "fig3-free", steps=5)

    slow = SlowJob()
    monkeypatch.setattr(window.workspaces["topology"], "make_job", slow)
    with pytest.raises(EngineInputError, match="did not finish"):
        headless.run_preset(window, "fig3-free", steps=5, timeout_s=0.5)
    slow.gate.set()


def test_the_heap_goes_back_once_every_job_is_idle_and_not_while_one_runs(window, qtbot, monkeypatch, drawn):
    # The soak's RSS growth was glibc's free heap kept after jobs (engine.core.runtime).
    released = []
    monkeypatch.setattr("engine.core.runtime.release_free_heap", lambda: released.append(True))
    controller = window.controller
    slow = SlowJob(steps=1)
    start_slow(window, monkeypatch, slow)
    controller._release_heap()  # as if the timer fired now: a job runs, so nothing happens
    assert released == []
    with qtbot.waitSignal(controller.heap_released, timeout=20000):
        slow.gate.set()  # the job ends; every lane idle, the timer fires
    qtbot.waitUntil(lambda: released == [True], timeout=5000)  # on a thread of its own
