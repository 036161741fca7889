"""``python -m tests.sweep_gate K ARGS...``: ``main.py ARGS...`` (a local sweep) whose cells stop
coming back after the K-th, so a test can interrupt it at a known point, however fast the machine.

The local executor's ``poll`` hands back K cells in all, then nothing: the sweep keeps polling, as
a real one between cells does, and cannot finish before the test's signal. Once the K-th cell is
on disk the process prints ``K cells written`` on stdout. Everything else is the real command: its
store, its executor (the workers still compute; their cells are never collected), its Ctrl-C.
"""

import sys
import threading

from engine.sweeps import executors
from engine.sweeps.store import CellStore


def gate(k: int) -> None:
    handed = written = 0
    closed = threading.Event()  # never set: a closed gate's poll waits out its whole timeout
    write, poll = CellStore.write, executors.LocalExecutor.poll

    def poll_at_most_k(executor, timeout):
        nonlocal handed
        if handed >= k:
            closed.wait(timeout)
            return []
        finished = poll(executor, timeout)[: k - handed]  # local tasks are one cell each
        handed += len(finished)
        return finished

    def write_then_count(store, name, arrays):
        nonlocal written
        write(store, name, arrays)
        written += 1
        if written == k:
            print(f"{k} cells written", flush=True)

    executors.LocalExecutor.poll = poll_at_most_k
    CellStore.write = write_then_count


if __name__ == "__main__":
    import signal

    import main

    # A shell starts a background job with SIGINT ignored, and a child inherits that (Python then
    # installs no handler): the test's signal would be lost. A terminal's Ctrl-C finds Python's.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    gate(int(sys.argv[1]))
    sys.exit(main.main(sys.argv[2:]))
