"""The slice kernel's batched path (engine.landscape.slices.slice_kernel: per-point weights, the
output layer as one tall product, per-thread buffers, numpy's BLAS) against the loss written out
in numpy point by point, within the loss's own rounding bound in each dtype."""

import threading
import time

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.core.progress import run_to_completion
from engine.landscape import slices as landscape
from tests.references import numpy_loss

NETWORKS = {
    "2-21-21-1 sigmoid": mlp.Arch((2, 21, 21, 1)),  # the benchmark's shape: one per-point product, no biases
    "3-6-5-4-1 tanh, biases": mlp.Arch((3, 6, 5, 4, 1), "tanh", True),  # two per-point products, bias rows
    "2-5-1 sigmoid, biases": mlp.Arch((2, 5, 1), "sigmoid", True),  # layer 1 straight into the output layer
}


def rounding(arch, points, X, Y, dtype) -> np.ndarray:
    """How far each point's loss in ``dtype`` (and the float64 reference) may lie from the exact one."""
    return np.array([landscape.loss_rounding(arch, p, X, Y, dtype) + landscape.loss_rounding(arch, p, X, Y, "float64")
                     for p in points])  # fmt: skip


@pytest.mark.parametrize("name", NETWORKS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_slices_and_plane_rows_equal_numpy_point_by_point(name, dtype):
    arch = NETWORKS[name]
    rng = np.random.default_rng(7)
    theta = rng.normal(size=arch.n_params)
    X, Y = rng.normal(size=(9, arch.widths[0])), rng.normal(size=9)
    d = rng.normal(size=(5, arch.n_params)) / np.sqrt(arch.n_params)
    t = np.linspace(-1.5, 1.5, 7)
    as_t = lambda a: torch.as_tensor(np.asarray(a), dtype=landscape.DTYPES[dtype])
    # one base point and a direction per row (slices), then a base point per row and one direction (a plane)
    for base, dirs in ((theta[None], d), (theta + 0.3 * d, d[0])):
        got = landscape.slice_losses(arch, as_t(base), as_t(dirs), as_t(t), as_t(X), as_t(Y)).double().numpy()
        points = np.broadcast_to(base, d.shape)[:, None] + t[:, None] * np.broadcast_to(dirs, d.shape)[:, None]
        points = points.reshape(-1, arch.n_params)
        ref = np.array([numpy_loss(arch, p, X, Y) for p in points]).reshape(got.shape)
        bound = rounding(arch, points, X, Y, dtype).reshape(got.shape)
        assert (np.abs(got - ref) <= bound).all(), np.abs(got - ref).max() / bound.min()
        assert bound.max() < (1e-3 if dtype == "float32" else 1e-12) * ref.max()  # the bound is not vacuous


def test_chunks_threads_and_a_short_last_chunk_give_the_same_curves():
    """Buffers are kept per thread and sliced for a short last chunk: 7 directions in chunks of
    3, 3 and 1, on one and on two threads, must give the one-chunk curves exactly."""
    arch = NETWORKS["3-6-5-4-1 tanh, biases"]
    rng = np.random.default_rng(3)
    theta, X, Y = rng.normal(size=arch.n_params), rng.normal(size=(6, 3)), rng.normal(size=6)
    run = lambda chunk, threads: (
        run_to_completion(landscape.slices_job(arch, theta, X, Y, K=7, P=11, chunk=chunk, threads=threads)).curves
    )
    whole = run(77, 1)
    for threads in (1, 2):
        assert np.array_equal(run(33, threads), whole)


def test_two_threads_report_every_chunk_and_raise_a_workers_error():
    """evaluate_job on two threads: the parts come back in order whatever thread made them, the
    last report is the whole, and an error raised by a chunk on a worker is raised by the job."""
    compute = lambda i0, i1: np.arange(i0, i1, dtype=float)
    updates = []
    got = run_to_completion(landscape.evaluate_job(103, compute, 10, threads=2), updates.append)
    assert np.array_equal(got, np.arange(103.0))
    assert updates[-1].fraction == 1.0

    def failing(i0, i1):
        if i0 == 30:
            raise ValueError("chunk 30 failed")
        return compute(i0, i1)

    with pytest.raises(ValueError, match="chunk 30 failed"):
        run_to_completion(landscape.evaluate_job(103, failing, 10, threads=2))


def test_a_cancelled_job_lets_running_chunks_end_and_starts_no_other(monkeypatch):
    """Closing the job (a cancel) sets the workers' stop; the two chunks they are computing end,
    no third starts, and no worker thread outlives the close."""
    stops, gate, calls = [], threading.Event(), []

    class Recorded(threading.Event):
        def __init__(self):
            super().__init__()
            stops.append(self)

    monkeypatch.setattr(landscape.threading, "Event", Recorded)

    def compute(i0, i1):
        calls.append(i0)
        assert gate.wait(20), "the test never opened the gate"
        return np.zeros(i1 - i0)

    job = landscape.evaluate_job(1000, compute, 10, threads=2)
    next(job)  # both workers are inside a chunk, held by the gate
    closer = threading.Thread(target=job.close)
    closer.start()
    assert wait_until(lambda: stops[0].is_set())
    gate.set()
    closer.join(20)
    assert not closer.is_alive()
    assert sorted(calls) == [0, 10]
    assert not [t for t in threading.enumerate() if t.name.startswith("engine-chunks")]


def wait_until(condition, timeout_s: float = 20.0) -> bool:
    """True once ``condition()`` holds; False after ``timeout_s`` (a hang guard, not a timing)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True
