"""The sweep runner (engine.sweeps): cells against independent per-run computations, local against
Ray to the last bit, and a sweep stopped part-way then resumed against an uninterrupted one.

Each sweep on Ray starts a local Ray of this machine's cores in a driver process of its own
(engine.sweeps.ray_driver), so no test's Ray touches this process; tests that need Ray take the
``ray_installed`` fixture.
"""

import dataclasses
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine.core import datasets
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.sweeps import fig4, fig5, jobs
from engine.sweeps.executors import Cancelled, stopping
from engine.sweeps.grid import MAX_CELLS, int_range
from engine.sweeps.runner import MAX_TASK_S, MIN_TASK_S, SweepPartial, SweepPlan, pack, sweep_job, task_seconds
from engine.sweeps.store import CellStore
from engine.topology.probability import obstruction_probability
from engine.topology.width_sweep import SweepSettings, held_out_bce, sweep_init, train_cell, train_run_bce
from tests.files import output_bytes

FIG4 = dict(ls=(2, 3), n_inits=3, steps=40, sign_policy="independent")
FIG5 = fig5.Fig5Settings(ds=(1, 4), ls=(1, 3), schemes=("kaiming_normal", "pytorch"), samples=3000, seed=5)


@pytest.fixture
def ray_installed():
    if importlib.util.find_spec("ray") is None:  # not importorskip: Ray stays out of this process
        pytest.skip("Ray is not installed")


def _same_cells(a, b) -> None:
    assert list(a) == list(b)
    for cell in a:
        assert a[cell].keys() == b[cell].keys()
        for k in a[cell]:
            assert a[cell][k].dtype == b[cell][k].dtype and a[cell][k].tobytes() == b[cell][k].tobytes(), (cell, k)


def test_fig4_cells_equal_the_unbatched_per_run_training(tmp_path):
    plan = fig4.plan(**FIG4)
    partials = []
    run = run_to_completion(
        sweep_job(plan, tmp_path), lambda u: isinstance(u.partial, SweepPartial) and partials.append(u.partial)
    )
    split = datasets.breast_cancer(seed=0)
    assert run.computed == len(plan.cells) == 3 + 4 and run.reused == 0
    for (l, lp), cell in run.cells.items():
        assert cell["W1"].shape == (3, l, 30) and cell["test_bce"].shape == (3,)
        for i in range(3):
            p = sweep_init(30, l, lp, i, 0, sign_policy="independent")
            q = train_run_bce(split.X_train, split.Y_train, p, 0.1, 40)
            assert cell["test_bce"][i] == pytest.approx(held_out_bce(q), abs=1e-12)
            np.testing.assert_allclose(cell["W1"][i], q.W1, rtol=0, atol=1e-12)
    # Partials grow to the whole grid, each a fresh dict of plain arrays.
    assert [p.done for p in partials] == sorted(p.done for p in partials) and partials[-1].done == 7
    assert partials[0].cells is not partials[-1].cells and set(partials[-1].cells) == set(plan.cells)
    res = fig4.assemble(run)
    for a, l in enumerate(res.ls):
        for lp in range(l + 1):
            assert res.mean[a, lp] == np.mean(res.test_bce[(res.runs[:, 0] == l) & (res.runs[:, 1] == lp)])


def test_fig5_cells_against_the_closed_forms(tmp_path):
    run = run_to_completion(sweep_job(fig5.plan(FIG5), tmp_path))
    g = fig5.grids(FIG5, run.cells)
    for a, d in enumerate(FIG5.ds):
        for b, l in enumerate(FIG5.ls):
            exact = obstruction_probability(d, l, "kaiming_normal")
            assert g["closed_kaiming_normal"][a, b] == exact
            assert abs(g["mc_kaiming_normal"][a, b] - exact) < 5 * g["se_kaiming_normal"][a, b]
    assert np.isnan(g["closed_pytorch"]).all() and np.isfinite(g["mc_pytorch"]).all()
    # d = 1, PyTorch's default init: 1 − (1 − 1/(2√l))^l exactly (MATH A8).
    exact = 1 - (1 - 1 / (2 * np.sqrt(np.array(FIG5.ls)))) ** np.array(FIG5.ls)
    assert np.all(np.abs(g["mc_pytorch"][0] - exact) < 5 * g["se_pytorch"][0])
    assert len({float(c["estimate"]) for c in run.cells.values()}) > 4  # a stream per cell, not one shared


def test_local_and_ray_give_identical_fig4_and_fig5_results(tmp_path, ray_installed):
    kinds = (("fig4", lambda: fig4.plan(**FIG4), jobs.fig4_job), ("fig5", lambda: fig5.plan(FIG5), None))
    for name, make, job in kinds:
        out = {}
        for executor, per_task in (("local", None), ("ray", None), ("ray", 3)):
            d = tmp_path / f"{name}-{executor}-{per_task}"
            options = dict(executor=executor, cells_per_task=per_task)
            if job is not None:
                run_to_completion(job(make(), d, figure=False, **options))
            else:
                run_to_completion(jobs.fig5_job(make(), d, **options))
            out[(executor, per_task)] = output_bytes(d)
        assert "metrics.json" in out[("local", None)]
        assert out[("ray", None)] == out[("local", None)] == out[("ray", 3)], name


def _first_cells_only(context, cell):
    """The Fig. 4 cell, for the cells in ``context``'s first set; any other never finishes: it
    runs until its sweep is closed (a local stop, or Ray cancelling its task)."""
    inner, allowed = context
    if tuple(cell) in allowed:
        return fig4.compute_cell(inner, cell)
    while not stopping():
        time.sleep(1e-3)  # the sweep's close must stop this cell: it can end no other way
    raise Cancelled


def _closed_within(job, seconds: float) -> bool:
    """Close ``job`` on a thread of its own; False if the close was still waiting after ``seconds``
    (a hang guard far past any machine's speed, not a time the test measures)."""
    closer = threading.Thread(target=job.close, name="test-close", daemon=True)
    closer.start()
    closer.join(seconds)
    return not closer.is_alive()


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_a_stopped_sweep_resumed_equals_an_uninterrupted_one(tmp_path, executor, request):
    if executor == "ray":
        request.getfixturevalue("ray_installed")
    plan = fig4.plan(ls=(2, 3, 4, 5, 6), n_inits=2, steps=300)  # 25 cells of ~50 ms
    whole = run_to_completion(sweep_job(plan, tmp_path / "whole"))
    # Three cells come back, the rest never do until the close stops them: the job is closed with
    # cells in flight on every machine, and the close must stop them (local) or cancel them (Ray).
    first = plan.cells[:3]
    gated = dataclasses.replace(plan, compute=_first_cells_only, context=(plan.context, first))
    part = tmp_path / "part"
    job = jobs.fig4_job(gated, part, figure=False, executor=executor, cells_per_task=1)
    for update in job:
        if isinstance(update.partial, SweepPartial) and update.partial.done == len(first):
            break
    assert _closed_within(job, 120), "closing the sweep did not stop the cells in flight"
    store = CellStore(part)
    kept = store.finished()
    assert kept == {plan.name(c) for c in first}  # the finished cells, and no cell cut short
    stamps = {n: os.stat(store.cells_dir / f"{n}.npz").st_mtime_ns for n in kept}
    resumed = run_to_completion(sweep_job(plan, part, executor=executor, mode="resume"))
    assert resumed.reused == len(kept) and resumed.computed == len(plan.cells) - len(kept)
    assert {n: os.stat(store.cells_dir / f"{n}.npz").st_mtime_ns for n in kept} == stamps  # not recomputed
    _same_cells(resumed.cells, whole.cells)
    assert fig4.metrics(resumed, fig4.assemble(resumed)) == fig4.metrics(whole, fig4.assemble(whole))
    # Resuming a finished sweep computes nothing.
    assert run_to_completion(sweep_job(plan, part, mode="resume")).computed == 0


def test_a_cancelled_fig4_cell_stops_at_its_next_gd_step():
    """train_cell asks ``stop`` once a GD step and returns at the first yes: a cancelled sweep's
    cell does the step in hand and no more (counted, not timed)."""
    split = datasets.breast_cancer(seed=0)
    settings = SweepSettings(ls=(2,), n_inits=2, steps=300)
    asked = []

    def stop_at_the_fifth_question() -> bool:
        asked.append(None)
        return len(asked) == 5

    y, y_test = split.Y_train[:, 0], split.Y_test[:, 0]
    out = train_cell(split.X_train, y, split.X_test, y_test, settings, 2, 1, stop_at_the_fifth_question)
    assert out is None and len(asked) == 5
    assert train_cell(split.X_train, y, split.X_test, y_test, settings, 2, 1, lambda: False) is not None


def test_resume_with_changed_settings_is_refused(tmp_path):
    run_to_completion(sweep_job(fig4.plan(ls=(2,), n_inits=1, steps=5), tmp_path))
    with pytest.raises(EngineInputError, match=r"--resume refused.*steps 5 -> 6"):
        next(sweep_job(fig4.plan(ls=(2,), n_inits=1, steps=6), tmp_path, mode="resume"))
    with pytest.raises(EngineInputError, match="already holds a fig4 sweep"):
        next(sweep_job(fig4.plan(ls=(2,), n_inits=1, steps=5), tmp_path))
    with pytest.raises(EngineInputError, match="it is a fig4 sweep"):
        next(sweep_job(fig5.plan(FIG5), tmp_path, mode="resume"))


def test_a_half_written_cell_is_not_a_cell(tmp_path):
    plan = fig4.plan(ls=(2,), n_inits=1, steps=5)
    run_to_completion(sweep_job(plan, tmp_path))
    store = CellStore(tmp_path)
    (store.cells_dir / "l2-lp0.npz").unlink()
    (store.cells_dir / ".l2-lp0.npz.123.tmp").write_bytes(b"PK\x03")  # a write cut off before its rename
    assert store.finished() == {"l2-lp1", "l2-lp2"}
    assert run_to_completion(sweep_job(plan, tmp_path, mode="resume")).computed == 1


def _crash_once(marker_dir, cell):
    """Kills its Ray worker process the first time it meets cell (1,): a lost worker."""
    marker = os.path.join(marker_dir, "crashed")
    if cell == (1,) and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return {"square": np.float64(cell[0] ** 2)}


def test_a_lost_ray_workers_cells_are_retried(tmp_path, ray_installed):
    plan = SweepPlan("crash", {"n": 4}, ("i",), tuple((i,) for i in range(4)), _crash_once, str(tmp_path))
    run = run_to_completion(sweep_job(plan, tmp_path / "out", executor="ray", cells_per_task=1))
    assert (tmp_path / "crashed").exists()  # the worker did die once
    assert [float(c["square"]) for c in run.cells.values()] == [0.0, 1.0, 4.0, 9.0]


def _fails_at_two(_context, cell):
    if cell == (2,):
        raise ModuleNotFoundError("No module named 'engine'")  # what a node without the app says
    return {"square": np.float64(cell[0] ** 2)}


def test_a_cell_that_raises_on_ray_stops_the_sweep_in_one_line(tmp_path, ray_installed):
    plan = SweepPlan("fail", {"n": 4}, ("i",), tuple((i,) for i in range(4)), _fails_at_two, str(tmp_path))
    with pytest.raises(EngineInputError) as raised:
        run_to_completion(sweep_job(plan, tmp_path / "out", executor="ray", cells_per_task=1))
    message = str(raised.value)
    assert "\n" not in message and "(2,)" in message and message.count("No module named 'engine'") == 1
    assert 'pip install -e ".[ray]"' in message  # what to do about it
    assert plan.name((2,)) not in CellStore(tmp_path / "out").finished()


CRASH_AFTER_A_RAY_SWEEP = """
import ctypes, faulthandler, os, sys, threading
from engine.core.progress import run_to_completion
from engine.sweeps import fig5
from engine.sweeps.runner import sweep_job

faulthandler.enable()
plan = fig5.plan(fig5.Fig5Settings(ds=(1,), ls=(1, 2), schemes=("pytorch",), samples=100, seed=0))
run = run_to_completion(sweep_job(plan, sys.argv[1], executor="ray", workers=1))
print(run.computed, "ray" in sys.modules, flush=True)
for t in threading.enumerate():
    if t.name == "ray-driver-exit":
        t.join()
names = {open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")}
print(sorted(n for n in names if "grpc" in n or "event_engine" in n or "gcs" in n), flush=True)
ctypes.string_at(0)  # a segfault: its Python stack must still be printed
"""


def test_a_crash_after_a_ray_sweep_still_prints_its_stack(tmp_path, ray_installed):
    """Ray's driver resets SIGSEGV to the default on shutdown (faulthandler's handler gone: CI's
    crashes died without a word) and leaves gRPC threads behind; it runs in a process of its own."""
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", CRASH_AFTER_A_RAY_SWEEP, str(tmp_path / "out")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines()
    assert lines[:2] == ["2 False", "[]"], done.stdout + done.stderr[-2000:]  # no Ray, no gRPC threads here
    assert done.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in done.stderr and "<string>" in done.stderr, done.stderr[-2000:]


def test_packing_amortises_and_balances():
    plan = fig4.plan(**fig4.QUICK)
    tasks = pack(plan, list(plan.cells), workers=2)
    assert [c for t in tasks for c in t] == list(plan.cells)  # every cell once, in order
    assert len(tasks) >= 8 and max(map(len, tasks)) > 1
    # t minimises W/n (1 + o/t) + t/2, checked against a scan; clamped to [MIN, MAX].
    ts = np.linspace(0.001, 1.0, 100_000)
    W, n, o = 30.0, 2, 0.002
    assert task_seconds(W, n, o) == pytest.approx(ts[np.argmin(W / n * (1 + o / ts) + ts / 2)], abs=1e-4)
    assert task_seconds(1e-6, 4) == MIN_TASK_S and task_seconds(1e9, 1) == MAX_TASK_S


def test_bad_grids_and_data(tmp_path, monkeypatch):
    with pytest.raises(EngineInputError, match="empty range"):
        int_range("5..2", "--l", 1, 30)
    with pytest.raises(EngineInputError, match="outside"):
        int_range("2..31", "--l", 1, 30)
    with pytest.raises(EngineInputError, match=f"limit is {MAX_CELLS}"):
        fig5.plan(fig5.Fig5Settings(ds=tuple(range(1, 400)), ls=tuple(range(1, 400)), schemes=("pytorch",)))
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,0\n3,x,1\n")
    with pytest.raises(EngineInputError, match="numeric"):
        fig4.load_dataset(str(bad))
    one = tmp_path / "one.csv"
    one.write_text("".join(f"{i},{i * i},1\n" for i in range(10)))
    with pytest.raises(EngineInputError, match="one class only"):
        fig4.load_dataset(str(one))
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(EngineInputError, match=r'pip install "\.\[ray\]"'):
        run_to_completion(sweep_job(fig4.plan(ls=(2,), n_inits=1, steps=5), tmp_path / "r", executor="ray"))


def test_other_data_sets_and_csv_files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    (tmp_path / "xy.csv").write_text("\n".join(",".join(map(str, [*x, 7.0 if x[0] > 0 else -2.0])) for x in X))
    for name in ("wine", "digits-binary", str(tmp_path / "xy.csv")):
        split = fig4.load_dataset(name)
        assert set(np.unique(split.Y_train)) == {0.0, 1.0} and np.allclose(split.X_train.mean(0), 0, atol=1e-12)
    split = fig4.load_dataset(str(tmp_path / "xy.csv"))
    assert split.X_train.shape == (32, 3)
    assert split.Y_train.sum() + split.Y_test.sum() == np.sum(X[:, 0] > 0)  # 7, the larger label, is class 1
