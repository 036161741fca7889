"""Window-driven commands without a person at the keyboard: ``main.py screenshot`` and ``record``."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QTimer

from engine.core.errors import EngineInputError


def open_window(size: tuple[int, int]):
    from .app import create_app, preload_numerics
    from .main_window import MainWindow

    app = create_app()
    preload_numerics().join()  # nothing to look at meanwhile: load now, not during the run
    window = MainWindow()
    window.resize(*size)
    window.show()
    return app, window


def close_window(window) -> None:
    """Close and delete the window now, on this thread: left to interpreter exit, its deletion
    crashed, and a test session would keep every window a command opened."""
    window.close()
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def wait_until_idle(window, timeout_s: float = 600.0) -> bool:
    """Spin the event loop until every job lane is idle; False if the timeout passed first."""
    loop = QEventLoop()
    poll = QTimer(interval=50)
    poll.timeout.connect(lambda: None if window.controller.busy else loop.quit())
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    poll.start()
    loop.exec()
    poll.stop()
    return not window.controller.busy


def run_preset(window, preset: str, steps: int | None, timeout_s: float = 600.0) -> None:
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


def screenshot(
    preset: str | None,
    out: str,
    size: tuple[int, int],
    steps: int | None,
    presentation: bool = False,
    theme: str | None = None,
    session_in: str | None = None,
    session_out: str | None = None,
) -> int:
    """``main.py screenshot``: run ``preset`` (or open the saved ``session_in``, drawn from its
    results without recomputing them) at ``size`` and save the window as ``out``. ``session_out``
    also writes the session of what was shot, exactly as File ▸ Save session does."""
    from . import session

    out_path = Path(out)
    if out_path.suffix.lower() != ".png":
        raise EngineInputError(f"--out {out} must name a .png file")
    if (preset is None) == (session_in is None):
        raise EngineInputError("screenshot needs exactly one of --preset NAME and --session FILE")
    if session_in is not None and not Path(session_in).is_file():
        raise EngineInputError(f"--session {session_in}: no such file")
    app, window = open_window(size)
    try:
        window.set_look(presentation, theme)
        if presentation:  # full screen would take the virtual screen's size, not the one asked for
            window.setFixedSize(*size)
        settle()
        if session_in is not None:
            if not session.load_session(window, session_in):
                raise EngineInputError(window.message_bar.text or f"cannot open session {session_in}")
            window.message_bar.clear()  # "Opened session …" is for a person at the window, not for the slide
            wait_until_idle(window)  # the session's network made live again: no thread left at exit
            settle()
        else:
            run_preset(window, preset, steps)
        if session_out is not None:
            session.write_session(session_out, session.capture_state(window))
        out_path.parent.mkdir(parents=True, exist_ok=True)
        from .capture import grab_widget

        image = grab_widget(window)
        if image.width() != size[0] or image.height() != size[1]:
            image = image.scaled(*size)
        if not image.save(str(out_path)):
            raise EngineInputError(f"could not write {out_path}")
    finally:
        close_window(window)
    print(f"wrote {out_path} ({image.width()}x{image.height()})" + (f" and {session_out}" if session_out else ""))
    return 0


def record_preset(
    preset: str | None,
    out: str,
    size=(1920, 1080),
    fps: int = 30,
    seconds: float = 8.0,
    orbit: bool = False,
    clip: str | None = None,
    steps: int | None = None,
    progress=None,
) -> int:
    """``main.py record``: compute the preset, then render a clip of its finished run to ``out``.

    ``clip`` is a clip JSON file; without one the preset's default story clip is rendered
    (every neuron, the loss, captions) at ``size``, ``fps`` and ``seconds``. Computing first
    makes every frame a function of the clip and the run, not of this machine's speed.
    All input is checked before the (long) run, and nothing is written unless it completes.
    ``progress``: a factory of progress bars (landscape_lens.progress_bar.progress_bar); the
    command line's, which draws nothing unless stderr is a terminal. None: no progress shown.
    """
    from .capture import check_output
    from .clips.model import load_clip
    from .clips.render import ClipRenderer, render_to_file
    from .clips.scene import scene_for, story_for

    if clip is not None:
        the_clip = load_clip(clip)
        if preset is not None and preset != the_clip.preset:
            raise EngineInputError(f"--preset {preset} differs from the clip's preset {the_clip.preset!r}")
    elif preset is None:
        raise EngineInputError("record needs --preset NAME or --clip FILE.json")
    else:
        if not (math.isfinite(seconds) and 0 < seconds <= 3600):
            raise EngineInputError(f"--seconds {seconds} must lie in (0, 3600]")
        the_clip = story_for(preset, size, fps, seconds, orbit)
    check_output(out)
    bars = progress or _no_bars
    app, window = open_window((1600, 960))
    try:
        settle()
        run_preset(window, the_clip.preset, steps=steps)
        with bars("computing the clip's scene") as on_progress:
            scene = scene_for(window.controller.workspaces, the_clip.preset, on_progress=on_progress)
        with bars("rendering") as bar:
            stats = render_to_file(ClipRenderer(the_clip, scene), out, bar.count)
    finally:
        close_window(window)
    w, h = the_clip.size
    print(
        f"wrote {out} ({stats['frames']} frames, {w}x{h}, {the_clip.fps} fps; rendered in "
        f"{stats['rendered']:.1f} s, done in {stats['total']:.1f} s = "
        f"{stats['frames'] / stats['total']:.1f} frames/s)"
    )
    return 0


class _Silent:
    def __call__(self, update) -> None:
        pass

    def count(self, done: int, total: int) -> None:
        pass


@contextlib.contextmanager
def _no_bars(description: str = ""):
    yield _Silent()
