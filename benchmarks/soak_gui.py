"""Soak: drive the real window for N minutes through random sequences of what a person does.

    xvfb-run -a -s "-screen 0 1920x1200x24" python3 benchmarks/soak_gui.py --minutes 20

The actions and the checks after each are the stateful test's (tests/gui/actions.py): presets of
all three tabs (the toolkit's plane, PCA and density too), Run, Pause, Step, Cancel, Reset, tab
switches, λ drags, splits and undo, the Fig. 4 sweep (all at once, cell by cell, on a local Ray;
Cancel and Run resume it), File ▸ Load network with good and bad files, File ▸ Export of every
plot and 3D view (PNG, SVG, CSV, read back), sessions, key frames and story clips, theme and
presentation mode. The window runs in a child process, so
a crash is counted (and a fresh child carries on for the time left) instead of ending the soak.

Reported at the end:
- hangs: the event loop blocked longer than --hang-s (2 s). A QTimer beats every 100 ms; a
  watchdog thread that finds the beat late takes the GUI thread's Python stack, and
  faulthandler.dump_traceback_later (re-armed by a QTimer every 0.5 s) dumps every thread's
  stack from C even if the GUI thread holds the GIL;
- crashes: a child that died (a signal, or an exit without its final report);
- exceptions: whatever reached the app's error relay (sys.excepthook, threading.excepthook, Qt
  critical messages), and exceptions an action raised;
- check failures: the invariants of tests/gui/actions.py (Driver.check), by message;
- resident memory (/proc/self/statm every 10 s) and the actions done, minute by minute;
- with --profile-memory OUT.json, what the window holds, every minute (benchmarks/memory_profile.py):
  Python heap against native memory, Qt objects, pyqtgraph and GL items, framebuffers, arrays,
  tensors, objects by type, and tracemalloc's growth by line (by traceback at the end).

Targets: 0 hangs, 0 crashes, 0 exceptions, 0 check failures, RSS growth ≤ 100 MB after the first
2 minutes: what the idle window keeps, with --profile-memory --malloc-trim (``kept_growth``), else
the peak of the 10 s samples (``rss_growth``). Exit status 0 when they are met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANG_S = 2.0
BEAT_MS = 100
SAMPLE_S = 10.0
GROWTH_LIMIT_MB = 100.0
WARMUP_S = 120.0  # RSS growth counts from here (or a quarter of a shorter soak)


def thread_cpu_s(native_id: int) -> float:
    """User + system CPU seconds of one thread of this process (/proc/self/task/N/stat)."""
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def workers_rss_mb() -> float:
    """The resident memory of the window's job workers (engine/core/process_jobs.py): its child
    processes, whose growth the window's own RSS does not show."""
    total = 0.0
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
            total += sum(rss_mb(pid) for pid in children)
        except OSError:  # a thread or a child that ended meanwhile
            pass
    return total


# ---------------------------------------------------------------------------- watchdog
class Watchdog:
    """Counts event-loop blocks longer than ``hang_s``, each with the GUI thread's stack."""

    def __init__(self, hang_s: float, dump_file, t0: float):
        from PySide6.QtCore import QTimer

        self.hang_s, self.dump_file, self.t0 = hang_s, dump_file, t0
        self.hangs: list[dict] = []
        self.gui_thread = threading.get_ident()
        self.gui_native = threading.get_native_id()
        self.cpu_at_beat = (thread_cpu_s(self.gui_native), sum(os.times()[:2]))
        self.last_beat = time.monotonic()
        self.paused = False  # while a window is built or closed: start-up is not interaction
        self._stop = threading.Event()
        self._beat = QTimer(interval=BEAT_MS)
        self._beat.timeout.connect(self._on_beat)
        self._rearm = QTimer(interval=500)
        self._rearm.timeout.connect(self._arm)
        self._thread = threading.Thread(target=self._watch, name="soak-watchdog", daemon=True)

    def start(self):
        self._beat.start()
        self._rearm.start()
        self._arm()
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._beat.stop()
        self._rearm.stop()
        faulthandler.cancel_dump_traceback_later()
        self._thread.join(2)

    def pause(self, on: bool):
        self.paused = on
        self.last_beat = time.monotonic()
        if on:
            faulthandler.cancel_dump_traceback_later()
        else:
            self._arm()

    def _arm(self):
        if not self.paused:
            faulthandler.dump_traceback_later(self.hang_s, repeat=False, file=self.dump_file)

    def _on_beat(self):
        self.last_beat = time.monotonic()
        self.cpu_at_beat = (thread_cpu_s(self.gui_native), sum(os.times()[:2]))

    def _watch(self):
        current = None  # the hang in progress
        while not self._stop.wait(0.05):
            late = time.monotonic() - self.last_beat
            if current is None and late > self.hang_s and not self.paused:
                frame = sys._current_frames().get(self.gui_thread)
                stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)"
                current = {"at_s": round(self.last_beat - self.t0, 1), "stack": stack}
                current["_cpu"] = self.cpu_at_beat
                self.hangs.append(current)
            elif current is not None and late < self.hang_s:
                current["seconds"] = round(self.last_beat - self.t0 - current["at_s"], 2)
                # How much of the block the GUI thread (and the process) computed: far less than
                # the block's length means the machine was busy with other work, not this window.
                gui, process = current.pop("_cpu")
                current["gui_thread_cpu_s"] = round(thread_cpu_s(self.gui_native) - gui, 2)
                current["process_cpu_s"] = round(sum(os.times()[:2]) - process, 2)
                current["load_average"] = os.getloadavg()
                current = None


# ---------------------------------------------------------------------------- the child
def child(
    minutes: float, seed: int, report_path: Path, hang_s: float, profile: dict | None = None, ray: bool = True
) -> int:
    """Drive one window for ``minutes``; write the report (JSON) every sample and at the end.
    ``profile``: MemoryProfile's arguments, to sample what the window holds every minute;
    ``ray``: whether the Fig. 4 sweep may run on a local Ray."""
    sys.path.insert(0, str(ROOT))
    faulthandler.enable()  # a crash prints every thread's stack to stderr
    memory = None
    if profile is not None:
        from benchmarks.memory_profile import MemoryProfile

        memory = MemoryProfile(**profile)  # before the app: tracemalloc sees every allocation
    from gui.app import create_app

    app = create_app()
    from tests.gui import actions as A

    t0 = time.monotonic()
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    dump = open(report_path.with_suffix(".stacks.txt"), "w")
    report = {
        "seed": seed,
        "minutes": minutes,
        "samples": [],
        "worker_samples": [],  # [s, MB]: the job workers' resident memory beside each sample
        "hangs": [],
        "exceptions": [],
        "check_failures": {},
        "actions": 0,
        "heap_releases": 0,  # the controller's idle release of the C heap's free pages
        # each full (generation 2) run of the cycle collector: [ms, objects it freed, its thread,
        # the action it ran in]
        "full_collections": [],
        "action_counts": {},
        "qt_warnings": {},
        "window_open_s": None,
        "done": False,
        "memory": [],
    }
    exceptions = report["exceptions"]
    began = {}

    def time_full_collections(phase: str, info: dict) -> None:  # it holds the GIL while it runs
        if info["generation"] == 2 and not began.get("profiling"):  # the profile's own gc.collect()
            if phase == "start":
                began["at"] = time.perf_counter()
            elif "at" in began:
                ms = round(1e3 * (time.perf_counter() - began.pop("at")), 1)
                thread = threading.current_thread().name
                report["full_collections"].append([ms, info["collected"], thread, began.get("action")])

    gc.callbacks.append(time_full_collections)
    counts = collections.Counter()
    warnings = collections.Counter()
    dog = Watchdog(hang_s, dump, t0)

    def write():
        report["hangs"] = dog.hangs
        report["action_counts"] = dict(counts)
        report["qt_warnings"] = dict(warnings.most_common(20))
        tmp_path = report_path.with_suffix(".tmp")
        tmp_path.write_text(json.dumps(report, indent=1, default=str))
        tmp_path.replace(report_path)

    def sample():
        report["samples"].append([round(time.monotonic() - t0, 1), round(rss_mb(), 1), report["actions"]])
        report["worker_samples"].append([round(time.monotonic() - t0, 1), round(workers_rss_mb(), 1)])
        write()

    due = {"profile": False}

    def profile_memory(last: bool = False):
        """Between actions, once no job runs: the collector's list of every object, held while a
        worker built a tuple, made that worker fail (benchmarks/memory_profile.py says how)."""
        due["profile"] = False
        dog.pause(True)  # a profile takes seconds: not the window's block

        def quiet():
            return not window.computing and not driver.clip_busy

        if not A.wait_until(quiet, 20_000):  # a paused run never ends by itself: Cancel, as a person would
            driver.cancel()
            if driver.clip_busy:
                driver.cancel_clip()
        if not A.wait_until(quiet, 120_000):
            report["memory"].append({"t_s": round(time.monotonic() - t0, 1), "skipped": "jobs still ran after 120 s"})
            dog.pause(False)
            return
        at = time.monotonic() - t0
        warm = at >= min(WARMUP_S, 15 * minutes)
        began["profiling"] = True
        try:
            report["memory"].append(memory.sample(at, window, after_warmup=warm, by_traceback=last))
        finally:
            began["profiling"] = False
        dog.pause(False)
        write()

    dog.pause(True)
    started = time.monotonic()
    window = A.open_window()
    # What the window imports on a thread once it has painted (torch's lazy modules, scipy), here
    # waited for as the tests' app fixture does: start-up, not interaction. Left to the first jobs,
    # a worker importing torch._dynamo held the GIL while the GUI thread painted (blocks of 2-15 s
    # on a loaded machine in the first minute).
    from gui.app import preload_now

    preload_now()
    report["window_open_s"] = round(time.monotonic() - started, 2)
    driver = A.Driver(window, tmp, pause_watchdog=dog.pause)  # a second window's start is start-up too
    window.controller.heap_released.connect(lambda: report.update(heap_releases=report["heap_releases"] + 1))
    tracebacks = []  # the relay says one line; keep the whole traceback for the report
    previous_hook = driver.relay.previous_hook

    def keep_traceback(exc_type, exc, tb):
        tracebacks.append("".join(traceback.format_exception(exc_type, exc, tb)))
        previous_hook(exc_type, exc, tb)

    driver.relay.previous_hook = keep_traceback
    # Qt's warnings, counted (the relay's handler still prints and relays critical ones).
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler

    previous = qInstallMessageHandler(None)

    def on_qt_message(kind, context, message):
        if kind == QtMsgType.QtWarningMsg:
            warnings[message[:120]] += 1
        if previous is not None:
            previous(kind, context, message)

    qInstallMessageHandler(on_qt_message)
    dog.start()
    dog.pause(False)
    sample()
    from PySide6.QtCore import QTimer

    sampler = QTimer(interval=round(1000 * SAMPLE_S))  # fires during the actions' waits too
    sampler.timeout.connect(sample)
    sampler.start()
    if memory is not None:
        profiler = QTimer(interval=60_000)
        profiler.timeout.connect(lambda: due.update(profile=True))
        profiler.start()
        profile_memory()
    seen_errors = 0
    table = A.ACTIONS if ray else A.actions_without_ray()
    deadline = t0 + 60 * minutes
    while time.monotonic() < deadline:
        name = rng.choices(list(table), weights=[weight for weight, _ in table.values()])[0]
        args = table[name][1](rng)
        at = round(time.monotonic() - t0, 1)
        began["action"] = name
        try:
            getattr(driver, name)(*args)
        except Exception as error:  # an action's own exception is the app's (or the soak's) bug
            exceptions.append({"at_s": at, "action": driver.log[-1:], "error": traceback.format_exc()})
            print(f"[{at:7.1f} s] exception in {name}{tuple(args)}: {error!r}", file=sys.stderr, flush=True)
        counts[name] += 1
        report["actions"] += 1
        # What reached the error relay since the last action.
        for text in driver.errors[seen_errors:]:
            detail = "\n".join([text] + tracebacks)
            exceptions.append({"at_s": at, "action": driver.log[-3:], "error": detail})
            print(f"[{at:7.1f} s] error relay after {driver.log[-1:]}: {text}", file=sys.stderr, flush=True)
        seen_errors = len(driver.errors)
        tracebacks.clear()
        try:
            for check in driver.invariants():
                check()
        except AssertionError as error:
            # numpy's asserts start with an empty line: the first line that says something
            key = next((line for line in str(error).splitlines() if line.strip()), repr(error))[:200]
            entry = report["check_failures"].setdefault(
                key, {"count": 0, "first_at_s": at, "actions": driver.log[-12:]}
            )
            entry["count"] += 1
            if entry["count"] == 1:
                entry["message"] = str(error)[:2000]  # the key's first line, and what follows it
                print(f"[{at:7.1f} s] check failed: {key}", file=sys.stderr, flush=True)
            window.message_bar.clear()  # one unexpected message is counted once
        if due["profile"]:
            profile_memory()
    sampler.stop()
    if memory is not None:
        profiler.stop()
        profile_memory(last=True)
    dog.pause(True)
    stopped = A.close_window(window)
    driver.detach()
    dog.stop()
    for text in driver.errors[seen_errors:]:
        exceptions.append({"at_s": round(time.monotonic() - t0, 1), "action": ["close_window()"], "error": text})
    if not stopped:
        exceptions.append(
            {"at_s": round(time.monotonic() - t0, 1), "action": ["close_window()"], "error": "jobs still ran"}
        )
    sample()
    report["done"] = True
    write()
    dump.close()
    app.processEvents()
    return 0


# ---------------------------------------------------------------------------- the parent
def soak(
    minutes: float = 20.0,
    seed: int = 0,
    hang_s: float = HANG_S,
    out_dir: Path | None = None,
    quiet=False,
    profile: dict | None = None,
    ray: bool = True,
):
    """Run children for ``minutes`` in all (a fresh one after a crash); return the merged report.
    ``profile``: MemoryProfile's arguments (benchmarks/memory_profile.py), to sample each minute
    what the window holds."""
    out_dir = Path(out_dir or tempfile.mkdtemp(prefix="soak-report-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    merged = {"hangs": [], "crashes": [], "exceptions": [], "check_failures": {}, "samples": [], "actions": 0}
    merged["worker_samples"], merged["minutes"] = [], minutes
    merged["heap_releases"] = 0
    merged["full_collections"] = []
    merged["memory"] = []
    merged.update(action_counts=collections.Counter(), qt_warnings=collections.Counter(), window_open_s=[])
    run = 0
    while True:
        left = minutes - (time.monotonic() - t0) / 60
        if left < 0.2 and run:
            break
        report_path = out_dir / f"child-{run}.json"
        offset = time.monotonic() - t0
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--minutes", f"{left:.3f}"]
        cmd += ["--seed", str(seed + run), "--report", str(report_path), "--hang-s", str(hang_s)]
        cmd += [] if ray else ["--no-ray"]
        if profile is not None:
            cmd += ["--profile-json", json.dumps(profile)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        if not quiet:
            lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
            print("\n".join(lines[-50:]), flush=True)
        report = json.loads(report_path.read_text()) if report_path.exists() else {}
        if proc.returncode != 0 or not report.get("done"):
            merged["crashes"].append(
                {"at_s": round(time.monotonic() - t0, 1), "returncode": proc.returncode, "tail": proc.stdout[-6000:]}
            )
        stacks = report_path.with_suffix(".stacks.txt")
        for hang in report.get("hangs", []):
            hang["at_s"] = round(hang["at_s"] + offset, 1)
            hang["faulthandler"] = stacks.read_text()[-8000:] if stacks.exists() else ""
            merged["hangs"].append(hang)
        for e in report.get("exceptions", []):
            e["at_s"] = round(e["at_s"] + offset, 1)
            merged["exceptions"].append(e)
        for key, entry in report.get("check_failures", {}).items():
            into = merged["check_failures"].setdefault(key, dict(entry, count=0))
            into["count"] += entry["count"]
        done = merged["actions"]  # the earlier children's: the column counts from the soak's start
        merged["samples"] += [[round(t + offset, 1), mb, done + n] for t, mb, n in report.get("samples", [])]
        merged["worker_samples"] += [[round(t + offset, 1), mb] for t, mb in report.get("worker_samples", [])]
        for entry in report.get("memory", []):
            merged["memory"].append(dict(entry, t_s=round(entry["t_s"] + offset, 1), child=run))
        merged["actions"] += report.get("actions", 0)
        merged["heap_releases"] += report.get("heap_releases", 0)
        merged["full_collections"] += report.get("full_collections", [])
        merged["action_counts"].update(report.get("action_counts", {}))
        merged["qt_warnings"].update(report.get("qt_warnings", {}))
        merged["window_open_s"].append(report.get("window_open_s"))
        run += 1
        if proc.returncode == 0 and report.get("done"):
            break
    merged["wall_s"] = round(time.monotonic() - t0, 1)
    merged["growth_mb"] = rss_growth(merged["samples"], minutes)
    merged["kept_growth_mb"] = kept_growth(merged["memory"], minutes)
    return merged


def rss_growth(samples: list, minutes: float) -> float:
    """The most RSS rose above its value at the end of the warm-up (2 min, or a quarter of a
    shorter soak)."""
    warmup = min(WARMUP_S, 60 * minutes / 4)
    after = [mb for t, mb, _ in samples if t >= warmup]
    before = [mb for t, mb, _ in samples if t <= warmup]
    if not after or not before:
        return 0.0
    return round(max(after) - before[-1], 1)


def kept_growth(memory: list, minutes: float) -> float | None:
    """What the idle window keeps: RSS at each memory sample's quiet point (no job, the collector
    run, glibc's free pages given back: the window gives them back itself once its jobs have been
    idle 0.5 s), most above that at the first quiet point after the warm-up. Unlike
    ``rss_growth`` it leaves out what a job in flight holds (heap in use swings by ±30 MB with
    the preset on show) and free pages not yet given back. None without such samples
    (--profile-memory with --malloc-trim)."""
    warmup = min(WARMUP_S, 60 * minutes / 4)
    after = [s["rss_after_malloc_trim_mb"] for s in memory if s["t_s"] >= warmup and "rss_after_malloc_trim_mb" in s]
    return round(max(after[1:]) - after[0], 1) if len(after) >= 2 else None


def target_growth(report: dict) -> float:
    """The growth the target bounds: what the idle window keeps where it was measured."""
    kept = report.get("kept_growth_mb")
    return report["growth_mb"] if kept is None else kept


def table(report: dict) -> str:
    """Minute by minute: RSS and the actions done at the end of the minute, and the hangs,
    exceptions and check failures in it."""
    lines = ["minute   RSS (MB)   actions   hangs   exceptions"]
    samples = report["samples"]
    if not samples:
        return lines[0]
    last_minute = int(samples[-1][0] // 60)
    for m in range(last_minute + 1):
        _t, mb, actions = [s for s in samples if s[0] <= 60 * (m + 1)][-1]
        hangs = sum(1 for h in report["hangs"] if 60 * m <= h["at_s"] < 60 * (m + 1))
        errors = sum(1 for e in report["exceptions"] if 60 * m <= e["at_s"] < 60 * (m + 1))
        lines.append(f"{m + 1:6d}   {mb:8.1f}   {actions:7d}   {hangs:5d}   {errors:10d}")
    return "\n".join(lines)


# The actions that open a second window and close it: its ~17,000 Python wrappers, in cycles,
# are freed by the collector (with their Qt objects), and while it is open every full collection
# walks them (none of it frozen, as the app's start-up is). A window the app itself never opens.
SECOND_WINDOW = {"reopen_in_fresh_window", "close_mid_run"}


def _full_collections(runs: list) -> str:
    if not runs:
        return "full collections of the cycle collector: none"

    def longest(part):
        ms, freed, thread, *action = max(part)
        where = (action[0] or "start-up") if action else "?"  # None: before the first action
        return f"longest {ms:.0f} ms (freed {freed} objects, on {thread}, in {where})"

    one_window = [r for r in runs if r[3:] and r[3] not in SECOND_WINDOW]
    return (
        f"full collections of the cycle collector: {len(runs)}, {sum(r[0] for r in runs):.0f} ms in all, "
        f"{longest(runs)}; {len(one_window)} outside the second windows' actions, "
        + (longest(one_window) if one_window else "none")
    )


def _workers(samples: list, minutes: float) -> str:
    """The job workers' resident memory: at the end of the warm-up, at the end and at most."""
    warmup = min(WARMUP_S, minutes * 15)
    after = [mb for t, mb in samples if t >= warmup]
    if not after:
        return "job workers: no samples after the warm-up"
    return (
        f"job workers' RSS after the warm-up: {after[0]:.1f} MB, at the end {after[-1]:.1f} MB, "
        f"at most {max(after):.1f} MB"
    )


def summary(report: dict) -> str:
    out = [
        f"soak: {report['wall_s'] / 60:.1f} min, {report['actions']} actions, window opened in "
        f"{', '.join(f'{s} s' for s in report['window_open_s'] if s is not None)}",
        f"hangs (> {HANG_S:g} s): {len(report['hangs'])}   crashes: {len(report['crashes'])}   "
        f"exceptions: {len(report['exceptions'])}   RSS growth after warm-up: {report['growth_mb']} MB at its "
        f"peak, {report.get('kept_growth_mb')} MB kept by the idle window   heap released "
        f"{report.get('heap_releases', 0)}×",
        _workers(report.get("worker_samples", []), report["minutes"]),
        _full_collections(report.get("full_collections", [])),
        "",
        table(report),
        "",
        "actions: " + ", ".join(f"{k} {v}" for k, v in sorted(report["action_counts"].items())),
    ]
    for hang in report["hangs"]:
        gui, process = hang.get("gui_thread_cpu_s", "?"), hang.get("process_cpu_s", "?")
        cpu = f"GUI thread computed {gui} s of it, the process {process} s"
        load = hang.get("load_average", "?")
        out += [f"\nHANG at {hang['at_s']} s for {hang.get('seconds', '?')} s ({cpu}; load {load}); GUI thread:"]
        out += [hang["stack"]]
        if hang.get("faulthandler"):
            out += ["faulthandler (every thread):", hang["faulthandler"]]
    for crash in report["crashes"]:
        out += [f"\nCRASH at {crash['at_s']} s, exit status {crash['returncode']}:", crash["tail"]]
    for e in report["exceptions"]:
        out += [f"\nEXCEPTION at {e['at_s']} s after {e['action']}:", e["error"]]
    for key, entry in report["check_failures"].items():
        out += [f"\nCHECK FAILED {entry['count']}× (first at {entry['first_at_s']} s): {entry.get('message', key)}"]
        out += ["  after: " + " · ".join(entry["actions"])]
    if report["qt_warnings"]:
        out += ["\nQt warnings:"] + [f"  {n}× {text}" for text, n in report["qt_warnings"].most_common(10)]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-s", type=float, default=HANG_S)
    parser.add_argument("--json", help="also write the merged report here")
    parser.add_argument(
        "--profile-memory",
        metavar="OUT.json",
        help="sample every minute what the window holds (benchmarks/memory_profile.py) and write the samples here",
    )
    parser.add_argument(
        "--tracemalloc-frames", type=int, default=10, help="traceback depth of --profile-memory, 0: no tracemalloc"
    )
    parser.add_argument(
        "--malloc-trim", action="store_true", help="--profile-memory: malloc_trim(0) before each sample"
    )
    parser.add_argument("--no-ray", action="store_true", help="sweep all at once or cell by cell, never on Ray")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    parser.add_argument("--profile-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        profile = json.loads(args.profile_json) if args.profile_json else None
        return child(args.minutes, args.seed, Path(args.report), args.hang_s, profile, ray=not args.no_ray)
    profile = None
    if args.profile_memory:
        profile = {"frames": args.tracemalloc_frames, "malloc_trim": args.malloc_trim}
    report = soak(args.minutes, args.seed, args.hang_s, profile=profile, ray=not args.no_ray)
    print(summary(report), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    if args.profile_memory:
        sys.path.insert(0, str(ROOT))
        from benchmarks.memory_profile import table as memory_table

        Path(args.profile_memory).write_text(json.dumps(report["memory"], indent=1, default=str))
        print("\nmemory, minute by minute:\n" + memory_table(report["memory"]), flush=True)
    ok = not report["hangs"] and not report["crashes"] and not report["exceptions"] and not report["check_failures"]
    return 0 if ok and target_growth(report) <= GROWTH_LIMIT_MB else 1


if __name__ == "__main__":
    sys.exit(main())
