"""Window-driven commands without a person at the keyboard: ``main.py screenshot`` and ``record``."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QEventLoop, QTimer

from engine.errors import EngineInputError


def open_window(size: tuple[int, int]):
    from .app import create_app
    from .main_window import MainWindow

    app = create_app()
    window = MainWindow()
    window.resize(*size)
    window.show()
    return app, window


def wait_until_idle(window, timeout_s: float = 600.0) -> bool:
    """Spin the event loop until the window's job has finished; False if the timeout passed first."""
    loop = QEventLoop()
    poll = QTimer(interval=50)
    poll.timeout.connect(lambda: None if window.runner.busy else loop.quit())
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    poll.start()
    loop.exec()
    poll.stop()
    return not window.runner.busy


def run_preset(window, preset: str, steps: Optional[int], timeout_s: float = 600.0) -> None:
    """Load and run ``preset``; raise EngineInputError unless its run succeeded in time."""
    window.load_preset(preset, steps=steps)
    if window.message_bar.text:
        raise EngineInputError(window.message_bar.text)
    if not wait_until_idle(window, timeout_s):
        window.stop_jobs()
        raise EngineInputError(f"preset {preset!r} did not finish within {timeout_s:g} s")
    if window.last_outcome != "succeeded":
        raise EngineInputError(f"preset {preset!r} {window.last_outcome}: {window.message_bar.text or 'no result'}")
    settle()


def settle(ms: int = 300) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def screenshot(preset: str, out: str, size: tuple[int, int], steps: Optional[int],
               presentation: bool = False, theme: Optional[str] = None) -> int:
    out_path = Path(out)
    if out_path.suffix.lower() != ".png":
        raise EngineInputError(f"--out {out} must name a .png file")
    app, window = open_window(size)
    window.set_look(presentation, theme)
    if presentation:  # full screen would take the virtual screen's size, not the one asked for
        window.setFixedSize(*size)
    settle()
    run_preset(window, preset, steps)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    from .capture import grab_widget
    image = grab_widget(window)
    if image.width() != size[0] or image.height() != size[1]:
        image = image.scaled(*size)
    if not image.save(str(out_path)):
        raise EngineInputError(f"could not write {out_path}")
    window.close()
    print(f"wrote {out_path} ({image.width()}x{image.height()})")
    return 0


def record_preset(preset: str, out: str, size, fps: int, seconds: float, orbit: bool,
                  source: str) -> int:
    """``main.py record``: compute the preset, then film its replay (and orbit) to ``out``.

    Computing first and replaying afterwards makes the clip's pace independent of how fast
    this machine trains: the whole run unfolds over ``seconds``, at exactly fps·seconds frames.
    """
    from .capture import Encoder, FrameSource, check_output, clip_poser, render_clip

    if not (math.isfinite(seconds) and 0 < seconds <= 3600):
        raise EngineInputError(f"--seconds {seconds} must lie in (0, 3600]")
    check_output(out)
    frames = max(1, round(seconds * fps))
    app, window = open_window(size if source == "window" else (1600, 960))
    settle()
    run_preset(window, preset, steps=None)
    workspace = window.workspace
    if source == "3d":
        if not workspace.gl_views():
            raise EngineInputError(f"preset {preset!r} has no 3D view; use --source window")
        film = FrameSource(workspace.gl_views()[0], size, gl=True)
    else:
        film = FrameSource(window, size)
    replay = workspace.timeline_length() > 1
    if not replay and not orbit:
        print("note: this workspace has no replay; the clip shows the final state "
              "(add --orbit for motion)", file=sys.stderr)
    encoder = Encoder(out, fps)
    t0 = time.perf_counter()

    def report(done, total):
        print(f"\rrendering {done}/{total}", end="", file=sys.stderr)

    render_clip(film, encoder, frames, clip_poser(workspace, frames, orbit, replay), report)
    rendered = time.perf_counter() - t0
    encoder.close(wait=True)
    print(file=sys.stderr)
    window.close()
    if encoder.error:
        raise EngineInputError(encoder.error)
    total = time.perf_counter() - t0
    print(f"wrote {out} ({frames} frames, {film.size[0]}x{film.size[1]}, {fps} fps; "
          f"rendered in {rendered:.1f} s, done in {total:.1f} s = {frames / total:.1f} frames/s)")
    return 0
