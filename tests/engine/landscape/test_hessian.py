"""hessian: HVPs against the formed Hessian, Lanczos against the full spectrum, Hutchinson's error bar."""

import threading
import time

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import Progress
from engine.landscape import hessian


@pytest.fixture(scope="module")
def net():
    rng = np.random.default_rng(3)
    arch = mlp.Arch((3, 7, 5, 1), "tanh", True)  # 70 parameters: small enough to form H
    theta = mlp.init_params(arch, rng, 1.5)
    X, Y = rng.normal(size=(12, 3)), rng.normal(size=12)
    H = mlp.hessian(arch, theta, X, Y)
    return arch, theta, X, Y, H, np.linalg.eigh(H)


def test_hvp_equals_formed_hessian_times_vector(net):
    arch, theta, X, Y, H, _ = net
    hvp = hessian.hvp_function(arch, theta, X, Y)
    V = np.random.default_rng(0).normal(size=(3, arch.n_params))
    scale = np.abs(H).max() * np.abs(V).max()
    assert np.abs(hvp(torch.from_numpy(V[0])).numpy() - H @ V[0]).max() < 1e-10 * scale
    assert np.abs(hvp(torch.from_numpy(V)).numpy() - V @ H).max() < 1e-10 * scale  # batched (vmap)


def test_lanczos_extremes_match_full_spectrum(net):
    arch, theta, X, Y, H, (eigs, vecs) = net
    assert eigs[0] < -1e-3 and eigs[-1] > 1  # a genuinely indefinite point, not a trivial check
    k = 4
    lz = hessian.hessian_report(arch, theta, X, Y, k=k, vectors=True, max_full=0, probes=200)
    full = hessian.hessian_report(arch, theta, X, Y, k=k, vectors=True)
    assert (lz.method, full.method) == ("lanczos", "full")
    scale = np.abs(eigs).max()
    assert np.abs(lz.lowest - eigs[:k]).max() < 1e-8 * scale
    assert np.abs(lz.highest - eigs[-k:]).max() < 1e-8 * scale
    np.testing.assert_array_equal(full.lowest, eigs[:k])
    assert full.trace == pytest.approx(np.trace(H), rel=1e-12) and full.trace_stderr == 0
    for values, got, want in (
        (lz.lowest, lz.lowest_vectors, vecs[:, :k]),
        (lz.highest, lz.highest_vectors, vecs[:, -k:]),
    ):
        assert np.abs(H @ got - got * values).max() < 1e-8 * scale  # eigenpairs of the formed H
        # and the same ones as eigh's, up to sign: the eigenvalues of this H are simple
        assert np.abs(np.abs(np.sum(got * want, axis=0)) - 1).max() < 1e-6


@pytest.mark.parametrize("lift_top", [False, True])
def test_hutchinson_trace_within_four_standard_errors(net, lift_top):
    arch, theta, X, Y, H, (eigs, vecs) = net
    hvp = hessian.hvp_function(arch, theta, X, Y)
    known = (eigs[-10:], vecs[:, -10:]) if lift_top else None
    job = hessian.hutchinson_trace_job(hvp, arch.n_params, probes=400, seed=1, known=known)
    updates = []
    while True:
        try:
            updates.append(next(job))
        except StopIteration as stop:
            trace, stderr = stop.value
            break
    assert all(isinstance(u, Progress) for u in updates) and updates[-1].fraction == 1
    # the error bar is honest: the exact per-probe variance is 2 Σ_{i≠j} H_ij² (of PHP when lifted)
    M = (
        H
        if known is None
        else (np.eye(len(H)) - vecs[:, -10:] @ vecs[:, -10:].T) @ H @ (np.eye(len(H)) - vecs[:, -10:] @ vecs[:, -10:].T)
    )
    exact_se = np.sqrt(2 * ((M**2).sum() - (np.diag(M) ** 2).sum()) / 400)
    assert 0.8 < stderr / exact_se < 1.2
    assert abs(trace - np.trace(H)) < 4 * stderr


def test_report_job_can_be_cancelled_during_lanczos(net, monkeypatch):
    """Closing the job mid-Lanczos stops its helper thread within one product. Each Hessian-vector
    product is slowed to 20 ms, so an uncancelled run (hundreds of products) would go on for
    seconds: the thread is joined and the products are counted, not assumed."""
    arch, theta, X, Y, *_ = net
    products = []
    real = hessian.hvp_function

    def slow_hvp_function(*args, **kwargs):
        hvp = real(*args, **kwargs)

        def slow(v):
            products.append(threading.current_thread())
            time.sleep(0.02)
            return hvp(v)

        return slow

    monkeypatch.setattr(hessian, "hvp_function", slow_hvp_function)
    job = hessian.hessian_report_job(arch, theta, X, Y, max_full=0)
    assert isinstance(next(job), Progress)
    while len(products) < 5:  # Lanczos is under way on the helper thread
        update = next(job)
    assert "Lanczos" in update.message
    worker = products[-1]
    assert worker is not threading.current_thread() and worker.is_alive()
    job.close()  # sets wait_for's stop Event; the next matvec raises and ARPACK is abandoned
    at_close = len(products)
    worker.join(timeout=60)  # a hang guard, not a time measured: the count below says how soon
    assert not worker.is_alive(), "the Lanczos thread kept running after the job was closed"
    assert len(products) <= at_close + 1  # at most the product that was in flight; the thread is gone


def test_bad_k():
    arch = mlp.Arch((2, 1))
    with pytest.raises(EngineInputError, match="k = 0"):
        hessian.hessian_report(arch, np.zeros(2), np.zeros((3, 2)), np.zeros(3), k=0)
