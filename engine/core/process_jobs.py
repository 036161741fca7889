"""Jobs run in a worker process, step for step as if they ran on the calling thread.

Why: paper A's training is Python between small torch calls, and a thread running it holds the
GIL most of the time. The window's thread takes the GIL back at every call from Qt into Python
while it paints (each item's ``paint``, ``boundingRect``…), and it waited at each one: beside a
Python-bound thread a repaint took about twice its processor time in wall time (issue #26;
benchmarks/README.md). Run in a process of its own, the job shares no GIL with the
window; the window's job thread only waits on a pipe and unpickles the updates.

``in_worker_process(factory, *args)`` is a job (a generator yielding ``Progress``) that runs
``factory(*args)`` in a worker and re-yields its updates. It advances in lockstep, one ``next``
per request, so pause, step and cancel act between the job's yields exactly as on a thread, and
closing it closes the job in the worker. A job's exception is raised again here, with the
worker's traceback as its cause. Workers are kept in a small pool and started ahead of need
(``prestart``): a fresh one must import torch first, which is slow.

Identity survives the pipe where the window relies on an object being the same from one update
to the next (a run's ``Context``, its meshes' arrays): an immutable object the worker sends again
(a frozen dataclass, a read-only array) arrives as the object it arrived as the first time, and
is sent as a key alone. As on a thread, a job must not change an update's objects after yielding
it. The arguments are sent as plain pickles: the job gets copies.
"""

from __future__ import annotations

import atexit
import dataclasses
import io
import itertools
import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
import weakref
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe
from pathlib import Path

import numpy as np

from engine.core.progress import Job, Progress

IDLE_WORKERS = 1  # kept started between jobs: one job runs at a time in each window
_ATOMIC = (type(None), bool, int, float, complex, str, bytes)


class WorkerDied(RuntimeError):
    """The worker process ended in the middle of a job (killed, or crashed in native code)."""


class RemoteTraceback(Exception):
    """The worker's traceback, attached as the cause of the exception raised again here."""

    def __str__(self) -> str:
        return self.args[0]


def in_worker_process(factory: Callable[..., Job], *args, **kwargs) -> Job:
    """Job: ``factory(*args, **kwargs)`` run in a worker process, its updates and result
    re-yielded here. ``factory`` must be importable by name (a module-level function), and the
    arguments picklable. Nothing starts until the first ``next``."""
    worker = _POOL.acquire()
    link = _MainSide()
    clean = False  # the worker is between jobs again and may serve the next
    try:
        if not worker.ready():
            yield Progress(0.0, "starting a worker process")
            worker.wait_ready()
        reply = worker.call(link, ("start", (factory, args, kwargs)))
        while True:
            kind, value = reply
            if kind == "return":
                clean = True
                return value
            if kind == "raise":
                clean = True
                raise value[0] from RemoteTraceback(value[1])
            try:
                yield value
            except GeneratorExit:
                worker.call(link, ("close", None))
                clean = True
                raise
            reply = worker.call(link, ("next", None))
    finally:
        _POOL.release(worker, reusable=clean)


def prestart(*modules: str) -> None:
    """Have a worker started, and ``modules`` imported in it, before the first job needs one."""
    _POOL.prestart(modules)


def shutdown_workers() -> None:
    """End every idle worker (a busy one ends when its job does and its window closes the pipe)."""
    _POOL.close_idle()


# ------------------------------------------------------------------ identity across the pipe
def _immutable(obj) -> bool:
    """Objects a job may send again unchanged: frozen dataclasses and read-only arrays."""
    if isinstance(obj, np.ndarray):
        return not obj.flags.writeable
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type) and obj.__dataclass_params__.frozen


class _Pickler(pickle.Pickler):
    def __init__(self, file, persistent_id):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._persistent_id = persistent_id

    def persistent_id(self, obj):
        return None if isinstance(obj, _ATOMIC) else self._persistent_id(obj)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, persistent_load):
        super().__init__(file)
        self._persistent_load = persistent_load

    def persistent_load(self, pid):
        if self._persistent_load is None:
            raise pickle.UnpicklingError("a persistent id in a message that has none")
        return self._persistent_load(pid)


def _plain(_obj) -> None:
    return None


def _dumps(obj, persistent_id=_plain) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, persistent_id).dump(obj)
    return buffer.getvalue()


def _loads(data: bytes, persistent_load=None):
    return _Unpickler(io.BytesIO(data), persistent_load).load()


class _MainSide:
    """One job's table in the window's process: the worker's immutable objects, by the worker's
    key, for as long as the worker holds them."""

    def __init__(self):
        self.kept: dict[int, object] = {}

    def persistent_load(self, pid):
        key, obj, first = pid
        if first:
            self.kept[key] = obj
        elif key not in self.kept:  # a bug in this module, not in the job: said plainly
            raise RuntimeError(f"the worker referred to object {key}, which it never sent")
        return self.kept[key]

    def forget(self, keys) -> None:
        for key in keys:
            self.kept.pop(key, None)


class _WorkerSide:
    """One job's table in the worker: its immutable objects already sent, each with its key and
    a weak reference. An object goes once, inside its own persistent id (``_inside`` stops the
    pickler's recursion into it), and after that as its key alone; the keys of those that died
    go with the next reply, so the window lets go of its copies too."""

    def __init__(self):
        self._sent: dict[int, tuple[int, object]] = {}  # id(obj) -> (key, weak reference)
        self._keys = itertools.count()
        self._inside: int | None = None
        self.dead: list[int] = []

    def persistent_id(self, obj):
        if id(obj) == self._inside:  # the object inside its own persistent id: pickled whole
            self._inside = None
            return None
        if not _immutable(obj):
            return None
        sent = self._sent.get(id(obj))
        if sent is not None:
            return (sent[0], None, False)
        key, ident = next(self._keys), id(obj)
        try:
            ref = weakref.ref(obj, lambda _: self._died(ident, key))
        except TypeError:  # no weak references (a slotted dataclass): kept for the job
            ref = obj
        self._sent[ident] = (key, ref)
        self._inside = ident
        return (key, obj, True)

    def _died(self, ident: int, key: int) -> None:
        self._sent.pop(ident, None)
        self.dead.append(key)


# ------------------------------------------------------------------ the worker processes
class _Worker:
    """One worker process and the pipe to it (used by one job at a time)."""

    def __init__(self, modules=()):
        ours, theirs = Pipe()
        root = str(Path(__file__).resolve().parents[2])  # the directory holding engine/ (and gui/)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        code = f"from engine.core.process_jobs import serve; serve({theirs.fileno()}, {list(modules)!r})"
        self.process = subprocess.Popen([sys.executable, "-c", code], pass_fds=(theirs.fileno(),), env=env)
        theirs.close()
        self.conn: Connection = ours
        self._ready = False

    def ready(self) -> bool:
        """Whether the worker has imported what it was started with (it says so once)."""
        if not self._ready and self.conn.poll():
            self.wait_ready()
        return self._ready

    def wait_ready(self) -> None:
        if not self._ready:
            try:
                self.conn.recv_bytes()
            except (EOFError, OSError):
                raise WorkerDied(f"the worker process did not start (exit code {self.process.wait()})") from None
            self._ready = True

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, link: _MainSide, message: tuple):
        """Send ``message`` and wait for the reply (the GIL is let go while waiting)."""
        try:
            self.conn.send_bytes(_dumps(message))
            dead, reply = _loads(self.conn.recv_bytes(), link.persistent_load)
        except (EOFError, OSError):
            raise WorkerDied(f"the job's worker process ended (exit code {self.process.wait()})") from None
        link.forget(dead)
        return reply

    def close(self) -> None:
        """End the worker: at the closed pipe once it listens; one still importing is killed
        (it has nothing to lose, and an exiting command would wait for its imports)."""
        listening = self._ready or self.conn.poll()
        self.conn.close()
        if not listening:
            self.process.kill()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Pool:
    def __init__(self):
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def acquire(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                worker.close()
        return _Worker()

    def release(self, worker: _Worker, reusable: bool) -> None:
        with self._lock:
            if reusable and worker.alive and len(self._idle) < IDLE_WORKERS:
                self._idle.append(worker)
                return
        worker.close()

    def prestart(self, modules) -> None:
        with self._lock:
            if not any(worker.alive for worker in self._idle):
                self._idle.append(_Worker(modules))

    def close_idle(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


_POOL = _Pool()
atexit.register(shutdown_workers)


def serve(fd: int, modules: list[str]) -> None:
    """The worker's loop: jobs one at a time, one step per request, until the pipe closes."""
    import importlib

    from engine.core.runtime import configure_torch_threads, use_one_malloc_arena

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the window's to handle
    use_one_malloc_arena()  # as the window does (gui.app), so that released memory goes back
    configure_torch_threads()
    conn = Connection(fd)
    for module in modules:
        importlib.import_module(module)
    try:
        conn.send_bytes(b"ready")
        _serve_jobs(conn)
    except (EOFError, OSError):  # the window closed the pipe, or its process ended
        return


def _serve_jobs(conn: Connection) -> None:
    from engine.core.runtime import release_free_heap

    job, link = None, _WorkerSide()
    while True:
        data = conn.recv_bytes()
        try:
            kind, start = _loads(data)  # start: (factory, args, kwargs) for "start", else None
            if kind == "start":
                factory, args, kwargs = start
                job = factory(*args, **kwargs)
            if kind == "close":
                job.close()
                reply = ("return", None)
            else:
                reply = ("yield", next(job))
        except StopIteration as done:
            reply = ("return", done.value)
        except Exception as error:
            reply = ("raise", (_picklable(error), traceback.format_exc()))
        dead, link.dead = link.dead, []
        try:
            message = _dumps((dead, reply), link.persistent_id)
        except Exception as error:  # an update that is not plain data: the job ends here
            if job is not None:
                job.close()
            reply = ("raise", (RuntimeError(f"the job's update could not be sent: {error}"), traceback.format_exc()))
            message = _dumps((dead, reply))
        conn.send_bytes(message)
        if reply[0] != "yield":  # the job is over: the next one starts with empty tables
            job, link = None, _WorkerSide()
            release_free_heap()  # what the job freed goes back to the system while the worker waits


def _picklable(error: Exception) -> Exception:
    """``error`` itself if it survives pickling, else a RuntimeError that says what it was."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
