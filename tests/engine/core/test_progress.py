"""The job protocol's helpers: subjob's mapping and wait_for's yielding around blocking calls."""

import threading

import pytest

from engine.core.progress import Progress, run_to_completion, subjob, wait_for


def _job():
    yield Progress(0.5, "half", partial=1)
    yield Progress(1.0, "done", partial=None)
    return "result"


def test_subjob_maps_fraction_message_and_partial():
    seen = []
    out = run_to_completion(subjob(_job(), 0.2, 0.6, "inner: ", partial=lambda p: p * 10), seen.append)
    assert out == "result"
    assert [u.fraction for u in seen] == pytest.approx([0.4, 0.6])
    assert [u.message for u in seen] == ["inner: half", "inner: done"]
    assert [u.partial for u in seen] == [10, None]  # None stays None


def test_wait_for_yields_while_the_call_blocks_and_returns_its_value():
    release = threading.Event()
    job = wait_for(lambda stop: (release.wait(5), 42)[1], "blocking", every_s=0.01)
    first = next(job)  # the call is still blocked, so the job yields instead of blocking
    assert first.message == "blocking"
    release.set()
    assert run_to_completion(job) == 42


def test_wait_for_reraises_and_signals_stop_on_close():
    def failing(stop):
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        run_to_completion(wait_for(failing, "x", every_s=0.01))

    stopped = threading.Event()

    def loop(stop):
        while not stop.wait(0.005):
            pass
        stopped.set()

    job = wait_for(loop, "looping", every_s=0.01)
    next(job)
    job.close()  # what a cancel does
    assert stopped.wait(2)
