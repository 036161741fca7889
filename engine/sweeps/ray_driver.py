"""Ray's driver, in a child process of its own (``executors.RayExecutor`` talks to it over a pipe).

Ray's driver does not leave the process that hosts it as it found it. ``ray.init`` replaces the
SIGSEGV handler (Python's faulthandler with it) and ``ray.shutdown`` resets it to the default,
so any later crash of that process dies without a word; about ten gRPC threads outlive the
shutdown; and a shutdown followed by a new session in a process with other threads can segfault
(ray-project/ray#31145). The window runs sweep after sweep in one long-lived process beside Qt's
and torch's threads, and so do the tests, so the driver lives in a spawned child for the life of
one executor, and dies with it (or with this process: the pipe's end stops it).

The child is ``python -m engine.sweeps.ray_driver FD``, FD its end of a socket pair; not
multiprocessing's spawn, which re-runs the parent's main script (a user's script without a
``__main__`` guard would start itself again). One pickled tuple per message (multiprocessing's
Connection). To the child: ``("init", address, workers)`` once, then
``("start", compute, context)``, ``("submit", handle, cells)`` and ``("close",)``. From it:
``("ready", workers, seconds)`` or ``("failed", line)`` once, then ``("done", handle, results)``
and ``("task_failed", handle, line)``, and ``("closed",)`` once every task still out is cancelled.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time

from engine.sweeps.executors import RAY_MAX_RETRIES, run_task

WAIT_S = 0.02  # how long one ray.wait blocks before the pipe is read again


def ray_cause(error: Exception) -> str:
    """One line for a failed Ray task: the innermost exception's (Ray's text repeats the remote
    traceback), with what to do when a worker could not import this app."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip() and not set(line.strip()) <= {"^"}]
    cause = lines[-1] if lines else type(error).__name__
    if "No module named" in cause:
        cause += ' (every Ray node needs this app installed: pip install -e ".[ray]")'
    return cause[:300]


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:160]


def _read_commands(conn, commands: queue.Queue) -> None:
    """The pipe, drained into ``commands`` on a thread of its own: the parent may send a thousand
    submissions while results are on their way back, and a driver that only read between its
    own sends could block on a full pipe while the parent blocked on the other."""
    try:
        while True:
            message = conn.recv()
            commands.put(message)
            if message[0] == "close":
                return
    except (EOFError, OSError):  # the parent is gone: end as if it had said so
        commands.put(("close",))


def drive(conn) -> None:
    """The child's whole life: join or start Ray, run the tasks it is sent, shut Ray down."""
    _, address, workers = conn.recv()
    # Ctrl-C in a terminal reaches the whole process group; it is the parent's to act on (it
    # closes the sweep, which closes this driver), so a sweep stops once, keeping its cells.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    t0 = time.perf_counter()
    try:
        import ray

        kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if not address:
            kwargs["num_cpus"] = int(workers or os.cpu_count() or 1)
            # The parent put the engine's folder on this process's path; a local Ray's workers too.
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}
        ray.init(address=address or None, **kwargs)
        cpus = int(ray.cluster_resources().get("CPU", 1))
    except Exception as error:  # ConnectionError, RuntimeError, ValueError and Ray's own kinds
        where = f"join the Ray cluster at {address}" if address else "start a local Ray"
        conn.send(("failed", f"cannot {where}: {_first_line(error)}"))
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn.send(("ready", min(int(workers), cpus) if workers and address else cpus, time.perf_counter() - t0))
    commands: queue.Queue = queue.Queue()
    threading.Thread(target=_read_commands, args=(conn, commands), name="pipe-reader", daemon=True).start()
    remote = ray.remote(num_cpus=1, max_retries=RAY_MAX_RETRIES)(run_task)  # shipped by reference
    pending: dict = {}
    compute = context = None
    try:
        while True:
            try:
                while True:
                    message = commands.get_nowait() if pending else commands.get(timeout=WAIT_S)
                    if message[0] == "close":
                        return
                    if message[0] == "start":
                        compute, context = message[1], ray.put(message[2])
                    elif message[0] == "submit":
                        pending[remote.remote(compute, context, message[2])] = message[1]
            except queue.Empty:
                pass
            if not pending:
                continue
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=WAIT_S)
            for ref in ready:
                handle = pending.pop(ref)
                try:
                    conn.send(("done", handle, ray.get(ref)))
                except ray.exceptions.RayError as error:  # retries spent, or the cell's code raised
                    conn.send(("task_failed", handle, ray_cause(error)))
    except (BrokenPipeError, ConnectionResetError):  # the parent is gone
        pass
    finally:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # already finished or its worker gone: nothing left to cancel
                pass
        try:
            conn.send(("closed",))  # the parent's close returns now; the shutdown is ours
        except OSError:
            pass
        ray.shutdown()  # a local Ray ends; a cluster stays up for its other drivers


if __name__ == "__main__":
    from multiprocessing.connection import Connection

    drive(Connection(int(sys.argv[1])))
