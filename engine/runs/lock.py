"""``writer.lock``: one writer per run folder, and a dead writer's lock taken over.

The lock is a small JSON file {"pid", "host", "started"} created complete: it is written to a
temporary name and hard-linked onto ``writer.lock``, which fails when the name exists, so two
writers never both succeed and no reader ever sees a half-written lock. A lock whose pid is not
alive on this host is stale (its writer was killed) and is taken over; one written on another host
cannot be checked from here and is respected.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.runs.format import LOCK, TEMP_MARK


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (a zombie counts until it is reaped)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


def read_lock(folder: Path) -> dict | None:
    """The lock's record, None when there is none, {} when it cannot be read."""
    try:
        record = json.loads((Path(folder) / LOCK).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def holder_alive(record: dict | None) -> bool:
    """Whether the writer a lock record names may still be writing: its pid is alive here, or it
    ran on another host (which cannot be checked)."""
    if not record:
        return False
    if record.get("host") != socket.gethostname():
        return True
    pid = record.get("pid")
    return isinstance(pid, int) and pid_alive(pid)


def acquire(folder: Path) -> dict:
    """Take ``folder``'s lock for this process, taking over a stale one; EngineInputError (one
    line) when a live writer holds it. Returns the record written."""
    folder = Path(folder)
    record = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    temp = folder / f".{LOCK}{TEMP_MARK}{os.getpid()}-lock"
    try:
        for _ in range(3):
            temp.write_text(json.dumps(record) + "\n")
            try:
                os.link(temp, folder / LOCK)
                return record
            except FileNotFoundError:
                continue  # the temporary name was cleared meanwhile (a writer's start-up): again
            except FileExistsError:
                held = read_lock(folder)
                if held is None:
                    continue  # released meanwhile
                if holder_alive(held):
                    raise EngineInputError(
                        f"{folder}: another writer holds this run (pid {held.get('pid')} on {held.get('host')}, "
                        f"since {held.get('started')}; {LOCK})"
                    ) from None
                _remove_stale(folder, held)
        raise EngineInputError(f"{folder}: could not take {LOCK}; another writer keeps taking it")
    finally:
        temp.unlink(missing_ok=True)


def _remove_stale(folder: Path, held: dict) -> None:
    """Remove the lock if it is still the stale one read (another writer may have replaced it)."""
    if read_lock(folder) == held:
        (folder / LOCK).unlink(missing_ok=True)


def release(folder: Path, record: dict) -> None:
    """Remove the lock if it is still this writer's."""
    if read_lock(folder) == record:
        (Path(folder) / LOCK).unlink(missing_ok=True)
