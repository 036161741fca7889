"""Story clips of fig3-free at 1080p and 4K, and what live recording costs a training run.

Reports frames/s of the whole render (until the file is complete) and the per-frame time of
each stage: pose (re-slicing the run into the views), GL (3D views off-window), plot (2-D
widgets), compose (layout, text, pixel copy), encode wait (GUI thread blocked on a full
encoder queue) and encode (thread: ffmpeg's pipe, in parallel with rendering).
Run under a display (xvfb-run -a python benchmarks/bench_clip.py); the numbers are as noisy
as the machine is shared.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gui import headless  # noqa: E402
from gui.capture import Encoder, FrameSource, LiveRecorder  # noqa: E402
from gui.clips.model import story_clip  # noqa: E402
from gui.clips.render import ClipRenderer, render_to_file  # noqa: E402
from gui.clips.scene import scene_for  # noqa: E402

STAGES = ("pose", "gl", "plot", "compose", "encode wait", "encode (thread)")


def bench_clip(window, size, seconds, out):
    renderer = ClipRenderer(
        story_clip("fig3-free", size, 30, seconds), scene_for(window.controller.workspaces, "fig3-free")
    )
    renderer.times.clear()  # the warm-up frame is not part of the clip
    stats = render_to_file(renderer, out)
    n = stats["frames"]
    split = "  ".join(f"{k} {1000 * stats.get(k, 0) / n:6.1f}" for k in STAGES)
    print(f"{size[0]}x{size[1]}  {n:3d} frames  {n / stats['total']:5.2f} frames/s   ms/frame: {split}", flush=True)


def timed_run(window, steps, record: bool, out) -> tuple[float, str]:
    """Wall time of a training run, optionally filmed live (whole window, 30 fps)."""
    window.load_preset("fig3-free", run=False)
    recorder = None
    if record:
        recorder = LiveRecorder(FrameSource(window), Encoder(out, 30), 30)
        window.controller.progressed.connect(recorder.mark_changed)
        recorder.start()
    t = time.perf_counter()
    window.run(steps=steps)
    headless.wait_until_idle(window)
    elapsed = time.perf_counter() - t
    note = ""
    if recorder:
        recorder.stop()
        recorder.encoder.close(wait=True)
        note = (
            f" ({recorder.distinct} distinct frames, {recorder.frames} written, {recorder.grab_seconds:.1f} s grabbing)"
        )
    return elapsed, note


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0, help="1080p clip length (4K: half)")
    parser.add_argument("--steps", type=int, default=1500, help="training steps for the live test")
    parser.add_argument("--live-only", action="store_true", help="skip the clip renders")
    args = parser.parse_args()
    app, window = headless.open_window((1600, 960))
    headless.settle()
    headless.run_preset(window, "fig3-free", steps=None)
    if not args.live_only:
        bench_clip(window, (1920, 1080), args.seconds, "/tmp/bench_clip_1080.mp4")
        bench_clip(window, (3840, 2160), args.seconds / 2, "/tmp/bench_clip_4k.mp4")
    timed_run(window, args.steps, False, None)  # warm-up: the first run pays for first draws
    plain, filmed, notes = [], [], []
    for i in range(2):  # alternated: the machine's load drifts
        plain.append(timed_run(window, args.steps, False, None)[0])
        seconds, note = timed_run(window, args.steps, True, f"/tmp/bench_live_{i}.mp4")
        filmed.append(seconds)
        notes.append(note)
    print(
        f"training {args.steps} steps: plain {' / '.join(f'{t:.1f}' for t in plain)} s, "
        f"recording live {' / '.join(f'{t:.1f}' for t in filmed)} s{notes[-1]}: "
        f"{100 * (sum(filmed) / sum(plain) - 1):+.0f}%"
    )
    window.close()


if __name__ == "__main__":
    main()
