"""Following a run that another process is writing: how soon the window draws each new step, how
busy its GUI thread is, and whether its memory stays flat (issue 56).

A writer process trains the digits CNN of examples/train_digits_cnn.py with ``ll.Recorder``
(a checkpoint every 20 steps, the sharpness every 100), paced at ``--step-ms`` a step, and notes
when each step's ``rec.step`` returned. The window (1600×960, under Xvfb) follows the folder in
its Training run tab. Reported:

- the follow latency: from a step's write to the window's drawing of it, p50 / p95 / max;
- the GUI thread's share of the wall time spent computing (in the engine, torch, scipy, or numpy
  called from gui/), profiled as benchmarks/profile_gui_thread.py does (issue 26's target: ≤ 3 %),
  and its whole processor time (drawing included) as a share of the wall time;
- the window's RSS every ``--rss-every`` seconds: its mean over the first minute and over the
  last, and the slope of a least-squares line through the samples after the first minute;
- with ``--tracemalloc``, the Python allocation sites whose live memory grew most between the
  end of the first minute and the end (slower: for finding a leak, not for the figures above).

    xvfb-run -a -s "-screen 0 1920x1200x24" python benchmarks/bench_follow.py [--seconds 180]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def writer(folder: str, seconds: float, step_ms: float) -> None:
    """The other process: an ordinary training loop with the recorder, each step's write time noted."""
    import torch
    from sklearn.datasets import load_digits
    from torch import nn

    import landscape_lens as ll

    sys.path.insert(0, str(ROOT / "examples"))
    from train_digits_cnn import digits_cnn

    torch.set_num_threads(1)
    digits = load_digits()
    X = torch.tensor(digits.images[:, None] / 16.0, dtype=torch.float32)
    Y = torch.tensor(digits.target)
    torch.manual_seed(0)
    model = digits_cnn()  # the example's own model
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    times = open(Path(folder).parent / "times.jsonl", "w")
    end = time.time() + seconds
    with ll.Recorder(folder, model, every=20, sharpness_every=100, sharpness_data=(X[:256], Y[:256])) as rec:
        step = 0
        while time.time() < end:
            began = time.time()
            batch = torch.randint(0, len(X), (64,), generator=g)
            loss = nn.functional.cross_entropy(model(X[batch]), Y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.step(step, loss=loss.item(), lr=0.05)
            times.write(json.dumps([step, time.time()]) + "\n")
            times.flush()
            step += 1
            time.sleep(max(0.0, step_ms / 1000 - (time.time() - began)))


def rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--rss-every", type=float, default=5.0)
    parser.add_argument("--tracemalloc", action="store_true", help="list the allocation sites that grew")
    parser.add_argument("--writer", nargs=3, metavar=("FOLDER", "SECONDS", "STEP_MS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        writer(args.writer[0], float(args.writer[1]), float(args.writer[2]))
        return 0

    from benchmarks.profile_gui_thread import ComputeProfiler, spin
    from gui.headless import close_window, open_window

    base = Path(tempfile.mkdtemp(prefix="bench-follow-"))
    folder = base / "run"
    app, window = open_window((1600, 960))
    ws = window.workspaces["run"]
    drawn_at: dict[int, float] = {}
    show = ws.show_partial  # where each followed state arrives, and is drawn before it returns

    def timed_show(presented):
        show(presented)
        now = time.time()
        run = getattr(presented, "run", None)  # a RunPresented; a wait's update has none
        for step in [] if run is None else run.steps[len(drawn_at) :]:
            drawn_at.setdefault(int(step), now)

    ws.show_partial = timed_show
    proc = subprocess.Popen([sys.executable, __file__, "--writer", str(folder), str(args.seconds), str(args.step_ms)])
    try:
        while not (folder / "manifest.json").exists():
            spin(50)
        window.open_run(str(folder))
        profiler = ComputeProfiler()
        rss = []
        sys.setprofile(profiler)
        start, cpu0 = time.perf_counter(), time.thread_time()
        next_rss = start
        snapshots = []  # tracemalloc's, at the end of the first minute and at the end
        if args.tracemalloc:
            tracemalloc.start(8)
        try:
            while proc.poll() is None or window.controller.busy:
                spin(50)
                if time.perf_counter() >= next_rss:
                    rss.append((time.perf_counter() - start, rss_mb()))
                    next_rss += args.rss_every
                    if args.tracemalloc and not snapshots and rss[-1][0] >= 60:
                        snapshots.append(tracemalloc.take_snapshot())
                if time.perf_counter() - start > args.seconds + 60:
                    break
        finally:
            sys.setprofile(None)
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu0
        if args.tracemalloc and snapshots:
            grown = tracemalloc.take_snapshot().compare_to(snapshots[0], "traceback")
            for stat in grown[:8]:
                print(f"{stat.size_diff / 1e6:+.2f} MB in {stat.count_diff:+d} blocks at")
                print("    " + "\n    ".join(stat.traceback.format()[-6:]))
            tracemalloc.stop()
    finally:
        proc.kill()
        proc.wait()
        window.controller.cancel_all()
        close_window(window)
    written = dict(json.loads(line) for line in open(base / "times.jsonl"))
    import numpy as np

    lat = np.array([drawn_at[s] - written[s] for s in written if s in drawn_at])
    missing = len(written) - len(lat)
    after = [r for t, r in rss if t >= 60]
    print(f"{os.cpu_count()} CPUs, load (1 min) {os.getloadavg()[0]:.1f}; {len(written)} steps written in {wall:.0f} s")
    print(
        f"follow latency (write → drawn): p50 {1e3 * np.median(lat):.0f} ms, "
        f"p95 {1e3 * np.percentile(lat, 95):.0f} ms, max {1e3 * lat.max():.0f} ms ({missing} steps never drawn)"
    )
    print(
        f"GUI thread computing: {100 * profiler.total / wall:.2f} % "
        f"(longest {1e3 * profiler.longest:.1f} ms in {profiler.where})"
    )
    print(f"GUI thread processor time, drawing included: {100 * cpu / wall:.1f} % of the wall time")
    print("RSS (MB) by second: " + ", ".join(f"{t:.0f}s {r:.0f}" for t, r in rss))
    if after:
        t, r = np.array([x for x in rss if x[0] >= 60]).T
        first = np.mean([r for t_, r in rss if t_ < 60])
        last = np.mean([r_ for t_, r_ in rss if t_ >= rss[-1][0] - 60])
        slope = 60 * np.polyfit(t, r, 1)[0] if len(t) > 1 else float("nan")
        print(
            f"RSS: first minute {first:.0f} MB, last minute {last:.0f} MB; after the first minute "
            f"{min(after):.0f}–{max(after):.0f} MB, slope {slope:+.2f} MB/min"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
