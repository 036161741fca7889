"""Where a 3D view's render spends its time, and reading its picture back two ways.

Run under Xvfb: ``xvfb-run -a -s "-screen 0 1920x1200x24" python3 benchmarks/bench_gl_readback.py``.
A QuadricView showing Q(c) and a path renders at ``--size``. Each repeat splits a render as the
render queue does (``gui/rendering/offscreen_gl.py``): the draw on the calling thread (``begin_render``),
the wait until Mesa's rasteriser threads have finished (``Drawing.ready``, polled) and the readback
(``end_render``); a render read back at once waited for the rasteriser on the GUI thread.
Then the framebuffer is read again both ways, in alternating order: ``glReadPixels`` returning
PyOpenGL's bytes (the app's readback before) and ``glReadPixels`` into a fresh numpy array (now).
It checks that both read the same picture and reports medians and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gui.app import create_app  # noqa: E402
from gui.present.quadric_meshes import neuron_surface  # noqa: E402
from gui.views.quadric_view import QuadricView  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="800x600", help="the view's size, WxH")
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    w, h = (int(x) for x in args.size.split("x"))

    from OpenGL import GL

    create_app()
    view = QuadricView()
    view.resize(w, h)
    view.show()
    view.set_frame(2.0, ("w₁", "w₂", "v"))
    view.show_surfaces(0.3, neuron_surface(0.3, 2.0, 0, None, None), None, False)
    t = np.linspace(0.0, 1.0, 400)
    line = np.column_stack([np.cos(8 * t), np.sin(8 * t), 2 * t - 1])
    view.set_trajectory(line, t, line[:1], line[-1:], line[200:201])

    def theirs():
        return np.frombuffer(GL.glReadPixels(0, 0, w, h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE), np.uint8).reshape(h, w, 4)

    def ours():
        pixels = np.empty((h, w, 4), np.uint8)
        GL.glReadPixels(0, 0, w, h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, pixels)
        return pixels

    times: dict[str, list[float]] = {"PyOpenGL's bytes": [], "into a numpy array": []}
    reads = dict(zip(times, (theirs, ours)))
    phases: dict[str, list[float]] = {"draw (calling thread)": [], "rasteriser (other threads)": [], "read": []}
    pictures = {}
    for k in range(args.repeats):
        start = time.perf_counter()
        drawing = view.begin_render()
        drawn = time.perf_counter()
        while not drawing.ready():
            time.sleep(0.0002)
        ready = time.perf_counter()
        view.end_render()
        done = time.perf_counter()
        for name, t in zip(phases, (drawn - start, ready - drawn, done - ready)):
            phases[name].append(t)
        view.makeCurrent()
        drawing.framebuffer.bind()
        for name in list(times) if k % 2 == 0 else list(reversed(times)):
            start = time.perf_counter()
            pictures[name] = reads[name]()
            times[name].append(time.perf_counter() - start)
        drawing.framebuffer.release()
        view.doneCurrent()
    a, b = pictures.values()
    if not np.array_equal(a, b) or a.std() == 0:
        print("the two readbacks differ, or read a blank picture", file=sys.stderr)
        return 1

    print(f"{w}×{h}, {args.repeats} repeats, medians")
    for name, t in phases.items():
        print(f"  render, {name:26s} {1e3 * float(np.median(t)):7.3f} ms")
    medians = {name: 1e3 * float(np.median(t)) for name, t in times.items()}
    for name, ms in medians.items():
        print(f"  readback, {name:24s} {ms:7.3f} ms")
    old, new = medians.values()
    print(f"  readback ratio                     {old / new:7.1f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
