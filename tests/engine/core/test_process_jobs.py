"""Jobs in a worker process behave as on the calling thread: the same updates and result, one
step per request, the job's exceptions, closing, identity kept for immutable objects sent again,
and a worker that dies said so (engine.core.process_jobs)."""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.core.process_jobs import WorkerDied, in_worker_process
from engine.core.progress import Progress, run_to_completion


@dataclasses.dataclass(frozen=True)
class Layout:
    grid: np.ndarray


def counting(n: int, seed: int):
    """Random arrays from a seeded generator, a frozen layout and a read-only array sent with
    every update, and a writeable array made anew each time."""
    rng = np.random.default_rng(seed)
    layout = Layout(np.linspace(0, 1, 5))
    fixed = np.arange(4.0)
    fixed.flags.writeable = False
    for i in range(n):
        yield Progress((i + 1) / n, f"step {i}", {"layout": layout, "fixed": fixed, "draw": rng.normal(size=3)})
    return rng.normal(size=2)


def echoing(arg: dict):
    yield Progress(0.5, "", {"arg": arg, "inner": arg["inner"]})
    return arg["inner"]


def logging_steps(log: str):
    """Writes what happened to ``log``: each resume after a yield, and the close."""
    try:
        for i in range(3):
            yield Progress(i / 3, "", os.getpid())
            Path(log).open("a").write(f"resumed {i}\n")
    finally:
        Path(log).open("a").write("closed\n")


def refusing(text: str):
    yield Progress(0.0, "")
    raise EngineInputError(text)


def dying():
    yield Progress(0.0, "", os.getpid())
    os.kill(os.getpid(), signal.SIGKILL)
    yield Progress(1.0, "")


def unsendable():
    yield Progress(0.0, "", lambda: None)


def pid_of_worker():
    yield Progress(0.0, "", os.getpid())
    return os.getpid()


def started(job):
    """The job's first update from the job itself (a fresh worker first says it is starting)."""
    update = next(job)
    while update.message == "starting a worker process":
        update = next(job)
    return update


def test_updates_and_result_are_those_of_the_thread():
    here: list[Progress] = []
    there: list[Progress] = []
    expected = run_to_completion(counting(6, seed=3), here.append)
    result = run_to_completion(in_worker_process(counting, 6, seed=3), there.append)
    there = [u for u in there if u.message != "starting a worker process"]
    assert [(u.fraction, u.message) for u in there] == [(u.fraction, u.message) for u in here]
    for mine, theirs in zip(here, there, strict=True):
        np.testing.assert_array_equal(theirs.partial["draw"], mine.partial["draw"])
        np.testing.assert_array_equal(theirs.partial["layout"].grid, mine.partial["layout"].grid)
    np.testing.assert_array_equal(result, expected)


def test_immutable_objects_keep_their_identity_and_writeable_arrays_do_not():
    updates = [u.partial for u in _updates(in_worker_process(counting, 4, seed=0))]
    assert len(updates) == 4
    assert all(u["layout"] is updates[0]["layout"] for u in updates), "a frozen dataclass sent again arrived anew"
    assert all(u["fixed"] is updates[0]["fixed"] for u in updates), "a read-only array sent again arrived anew"
    assert len({id(u["draw"]) for u in updates}) == 4  # each its own


def test_arguments_arrive_as_copies():
    arg = {"inner": [1, 2, 3], "x": np.zeros(2)}
    update = started(in_worker_process(echoing, arg))
    assert update.partial["arg"] is not arg and update.partial["arg"]["inner"] == arg["inner"]
    np.testing.assert_array_equal(update.partial["arg"]["x"], arg["x"])


def test_one_step_per_request_and_close_closes_the_job_in_the_worker(tmp_path):
    log = tmp_path / "log.txt"
    job = in_worker_process(logging_steps, str(log))
    first = started(job)
    assert first.partial != os.getpid()  # it ran elsewhere
    job.close()
    # The worker did not run on past the yield before it was asked to: only the close happened.
    assert log.read_text().splitlines() == ["closed"]
    # The worker is free again and serves the next job.
    assert started(in_worker_process(pid_of_worker)).partial == first.partial


def test_the_jobs_exception_is_raised_here_with_the_workers_traceback():
    job = in_worker_process(refusing, "the network has no second layer")
    started(job)
    with pytest.raises(EngineInputError, match="the network has no second layer") as raised:
        next(job)
    assert "refusing" in str(raised.value.__cause__)  # the frame in the worker


def test_an_update_that_cannot_be_sent_ends_the_job_with_a_message():
    job = in_worker_process(unsendable)
    with pytest.raises(RuntimeError, match="the job's update could not be sent"):
        started(job)


def test_a_worker_that_dies_is_reported_and_replaced():
    job = in_worker_process(dying)
    dead = started(job).partial
    with pytest.raises(WorkerDied, match=f"exit code -{signal.SIGKILL}"):
        next(job)
    fresh = run_to_completion(in_worker_process(pid_of_worker))
    assert fresh != dead


def _updates(job):
    return [u for u in _all(job) if u.message != "starting a worker process"]


def _all(job):
    out: list[Progress] = []
    run_to_completion(job, out.append)
    return out
