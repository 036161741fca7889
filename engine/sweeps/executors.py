"""Where cells are computed: ``local`` (threads in this process) or ``ray`` (a local or remote cluster).

Both run the same task function on the same tasks — a tuple of cells, each computed on its own
by the plan's module-level ``compute(context, cell)`` — so they give the same numbers to the
last bit. Ray is imported only when chosen, and only in a child process (engine.sweeps.ray_driver
says why). Each executor: ``start(compute, context)``, then
``submit(cells) -> handle``, ``poll(timeout) -> [(handle, [(cell, arrays), ...])]`` of finished
tasks, and ``close()``, which drops or cancels every task not yet back.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.runtime import configure_torch_threads

# The folder that holds the engine package: a local Ray's workers import the cells' code from
# it even when the app runs from a checkout in another folder (it need not be pip-installed).
CODE_ROOT = str(Path(__file__).resolve().parents[2])

EXECUTORS = ("local", "ray")
RAY_MAX_RETRIES = 3  # a lost worker's (or node's) tasks are run again, never silently dropped
CONNECT_TIMEOUT_S = 5.0
START_TIMEOUT_S = 120.0  # generous: ray.init of a local Ray takes seconds; a cluster's first contact, longer
CLOSE_TIMEOUT_S = 30.0


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
    which measured many times slower on a busy 2-core machine (benchmarks/README.md), and
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
        # machine two threads took longer over bench_sweep's grid than one.
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


def _check_reachable(address: str) -> None:
    """One TCP connect to HOST:PORT (``CONNECT_TIMEOUT_S``), so an unreachable cluster is one line
    soon, not the Ray client's much longer time-out or a hang in the GCS client."""
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
    """Ray tasks of several cells each, submitted by a driver in a child process (engine.sweeps.
    ray_driver says why not this one). Without ``address``, the child starts a local Ray with
    ``workers`` CPUs (default: this machine's cores), gone again on close; with ``auto`` or
    ``[ray://]HOST:PORT`` it joins that cluster, whose CPUs are the workers."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None):
        if importlib.util.find_spec("ray") is None:
            raise EngineInputError('--executor ray needs Ray: pip install ".[ray]"')
        if address and address != "auto":
            _check_reachable(address)
        t0 = time.perf_counter()
        path = os.pathsep.join(p for p in (CODE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
        mine, theirs = socket.socketpair()
        self._child = subprocess.Popen(
            [sys.executable, "-m", "engine.sweeps.ray_driver", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdout=subprocess.DEVNULL,  # never into a command's JSON; its errors come on the pipe
            env={**os.environ, "PYTHONPATH": path},
        )
        theirs.close()
        self._conn = Connection(mine.detach())  # the child sees its end close if this process dies
        self._conn.send(("init", address, workers))
        try:
            reply = self._receive(START_TIMEOUT_S, "starting")
        except EngineInputError:
            self._conn.close()
            raise
        if reply is None or reply[0] == "failed":
            self.close()
            raise EngineInputError(reply[1] if reply else f"Ray did not start within {START_TIMEOUT_S:.0f} s")
        self.workers = int(reply[1])
        self.startup = RayStartup(time.perf_counter() - t0, not address)
        self._pending: dict[int, tuple] = {}  # handle -> its cells, until they come back
        self._submitted = 0

    def _receive(self, timeout: float, doing: str):
        """The child's next message within ``timeout`` s, or None; one line if the child died."""
        deadline = time.monotonic() + timeout
        while not self._conn.poll(min(0.1, timeout)):
            if self._child.poll() is not None:
                raise EngineInputError(f"Ray's driver process ended while {doing} (exit code {self._child.returncode})")
            if time.monotonic() >= deadline:
                return None
        try:
            return self._conn.recv()
        except EOFError:
            raise EngineInputError(f"Ray's driver process ended while {doing}") from None

    def start(self, compute: Callable, context) -> None:
        self._conn.send(("start", compute, context))

    def submit(self, cells: tuple) -> int:
        self._submitted += 1
        handle = self._submitted
        self._pending[handle] = cells
        self._conn.send(("submit", handle, cells))
        return handle

    def poll(self, timeout: float) -> list:
        out = []
        message = self._receive(timeout, "running the sweep")
        while message is not None:
            kind, handle, payload = message
            cells = self._pending.pop(handle)
            if kind == "task_failed":  # retries spent, or the cell's code raised
                raise EngineInputError(f"cells {cells[0]}… failed on Ray: {payload}")
            out.append((handle, payload))
            message = self._conn.recv() if self._conn.poll(0) else None
        return out

    def close(self) -> None:
        """Have the driver cancel every task still out, and return once it has; Ray's shutdown,
        which is slow, finishes behind, on a thread that the interpreter waits for at exit."""
        try:
            self._conn.send(("close",))
            deadline = time.monotonic() + CLOSE_TIMEOUT_S
            while time.monotonic() < deadline and self._conn.poll(deadline - time.monotonic()):
                if self._conn.recv()[0] == "closed":
                    break
        except (OSError, EOFError):  # the driver is gone already
            pass
        self._conn.close()
        threading.Thread(target=_reap, args=(self._child,), name="ray-driver-exit").start()


def _reap(child: subprocess.Popen) -> None:
    try:
        child.wait(CLOSE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


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
