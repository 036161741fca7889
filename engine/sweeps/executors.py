"""Where cells are computed: ``local`` (threads in this process) or ``ray`` (a local or remote cluster).

Both run the same task function on the same tasks — a tuple of cells, each computed on its own
by the plan's module-level ``compute(context, cell)`` — so they give the same numbers to the
last bit. Ray is imported only when chosen. Each executor: ``start(compute, context)``, then
``submit(cells) -> handle``, ``poll(timeout) -> [(handle, [(cell, arrays), ...])]`` of finished
tasks, and ``close()``, which drops or cancels every task not yet back.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.runtime import configure_torch_threads

# The folder that holds the engine package: a local Ray's workers import the cells' code from
# it even when the app runs from a checkout in another folder (it need not be pip-installed).
CODE_ROOT = str(Path(__file__).resolve().parents[2])

EXECUTORS = ("local", "ray")
RAY_MAX_RETRIES = 3  # a lost worker's (or node's) tasks are run again, never silently dropped
CONNECT_TIMEOUT_S = 5.0


_current = threading.local()


class Cancelled(Exception):
    """Raised inside a cell whose sweep was closed; the cell is dropped, never written."""


def stopping() -> bool:
    """True once the task running on this thread is cancelled: cells check it between steps."""
    stop = getattr(_current, "stop", None)
    return stop is not None and stop.is_set()


def run_job(job):
    """Drive a cell's engine job (Monte Carlo batches, a construction), stopping between its yields
    when the sweep is cancelled."""
    try:
        while True:
            try:
                next(job)
            except StopIteration as done:
                return done.value
            if stopping():
                raise Cancelled
    finally:
        job.close()


def one_torch_thread_here() -> None:
    """One intra-op thread for torch on *this* thread. configure_torch_threads acts once per process,
    and OpenMP keeps its thread count per thread: a fresh Python thread runs torch with every core,
    which measured 30-50x slower on a busy 2-core machine (a 3-cell task: 25 s against 0.5 s), and
    a different thread count could change a reduction's last bit between executors."""
    import torch

    configure_torch_threads()
    torch.set_num_threads(1)


def run_task(compute: Callable, context, cells: tuple, stop: threading.Event | None = None) -> list:
    """The one task function of every executor: each cell on its own, in order, one torch thread."""
    one_torch_thread_here()
    _current.stop = stop
    out = []
    try:
        for cell in cells:
            if stopping():
                break
            out.append((cell, compute(context, cell)))
    except Cancelled:
        pass
    finally:
        _current.stop = None
    return out


class LocalExecutor:
    """``workers`` threads in this process, each with one torch thread (torch and numpy release the
    GIL in their kernels). ``close`` stops them within a step of a cell (``stopping``) and joins
    them: a thread left inside torch at interpreter exit aborts the process. A cell cut short is
    dropped; only whole cells are ever written."""

    name = "local"

    def __init__(self, workers: int | None = None):
        # One by default: the GD loop's small torch calls hold the GIL, and on a quiet 2-core
        # machine two threads took 3.57 s for bench_sweep's grid against one's 2.80 s.
        self.workers = int(workers or 1)
        self._todo: queue.Queue = queue.Queue()
        self._done: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._count = 0

    def start(self, compute: Callable, context) -> None:
        configure_torch_threads()

        def loop():
            while not self._stop.is_set():
                try:
                    handle, cells = self._todo.get(timeout=0.1)
                except queue.Empty:
                    continue
                try:
                    result = run_task(compute, context, cells, self._stop)
                except BaseException as error:  # re-raised by poll, in the job's thread
                    result = error
                if not self._stop.is_set():
                    self._done.put((handle, result))

        for i in range(self.workers):
            t = threading.Thread(target=loop, name=f"sweep-local-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def submit(self, cells: tuple) -> int:
        self._count += 1
        self._todo.put((self._count, cells))
        return self._count

    def poll(self, timeout: float) -> list:
        out = []
        try:
            out.append(self._done.get(timeout=timeout))
            while True:
                out.append(self._done.get_nowait())
        except queue.Empty:
            pass
        for _, result in out:
            if isinstance(result, BaseException):
                raise result
        return out

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()


def _ray_task(compute, context, cells):
    return run_task(compute, context, cells)


def _check_reachable(address: str) -> None:
    """One TCP connect to HOST:PORT, so an unreachable cluster is one line after seconds, not a
    30 s client time-out or a hang in the GCS client."""
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise EngineInputError(f"--address {address!r} must be auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise EngineInputError(f"cannot reach the Ray cluster at {address}: {error.strerror or error}") from None


@dataclass
class RayStartup:
    """What joining or starting Ray cost, reported apart from the cells (benchmarks/bench_sweep.py)."""

    seconds: float
    started_here: bool


class RayExecutor:
    """Ray tasks of several cells each. Without ``address``, starts a local Ray with ``workers`` CPUs
    (default: this machine's cores) and shuts it down on close; with ``auto`` or ``[ray://]HOST:PORT``
    joins that cluster, whose CPUs are the workers. A Ray already initialised in this process (a test's,
    the GUI's) is used as it is and left running."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None):
        try:
            import ray
        except ImportError:
            raise EngineInputError('--executor ray needs Ray: pip install ".[ray]"') from None
        self._ray = ray
        self._owned = False
        t0 = time.perf_counter()
        if address and address != "auto":
            _check_reachable(address)
        if not ray.is_initialized():
            kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
            if not address:
                kwargs["num_cpus"] = int(workers or os.cpu_count() or 1)
                path = os.pathsep.join(p for p in (CODE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
            try:
                ray.init(address=address or None, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as error:
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise EngineInputError(f"cannot join the Ray cluster at {address}: {first[:160]}") from None
            self._owned = True
        self.startup = RayStartup(time.perf_counter() - t0, self._owned)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = min(int(workers), cpus) if workers and address else cpus
        self._remote = ray.remote(num_cpus=1, max_retries=RAY_MAX_RETRIES)(_ray_task)
        self._pending: dict = {}

    def start(self, compute: Callable, context) -> None:
        self._compute, self._context = compute, self._ray.put(context)

    def submit(self, cells: tuple):
        ref = self._remote.remote(self._compute, self._context, cells)
        self._pending[ref] = cells
        return ref

    def poll(self, timeout: float) -> list:
        if not self._pending:
            time.sleep(timeout)
            return []
        ready, _ = self._ray.wait(list(self._pending), num_returns=len(self._pending), timeout=timeout)
        out = []
        for ref in ready:
            cells = self._pending.pop(ref)
            try:
                out.append((ref, self._ray.get(ref)))
            except self._ray.exceptions.RayError as error:  # retries spent, or the cell's code raised
                raise EngineInputError(f"cells {cells[0]}… failed on Ray: {ray_cause(error)}") from None
        return out

    def close(self) -> None:
        for ref in list(self._pending):
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # already finished or its worker gone: nothing left to cancel
                pass
        self._pending.clear()
        if self._owned:
            self._ray.shutdown()


def ray_cause(error: Exception) -> str:
    """One line for a failed Ray task: the innermost exception's (Ray's text repeats the remote
    traceback), with what to do when a worker could not import this app."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip() and not set(line.strip()) <= {"^"}]
    cause = lines[-1] if lines else type(error).__name__
    if "No module named" in cause:
        cause += ' (every Ray node needs this app installed: pip install -e ".[ray]")'
    return cause[:300]


def make_executor(name: str = "local", address: str | None = None, workers: int | None = None):
    if name not in EXECUTORS:
        raise EngineInputError(f"executor {name!r} unknown; choose one of {EXECUTORS}")
    if workers is not None and int(workers) < 1:
        raise EngineInputError(f"workers = {workers} must be at least 1")
    if name == "local":
        if address:
            raise EngineInputError("--address needs --executor ray")
        return LocalExecutor(workers)
    return RayExecutor(address, workers)
