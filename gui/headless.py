"""Window-driven commands without a person at the keyboard: ``main.py screenshot`` and ``record``."""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QTimer

from engine.core.errors import EngineInputError


def open_window(size: tuple[int, int], preload: bool = True, keys=None):
    """The window, shown at ``size``. ``preload``: torch and scipy first (nothing to look at
    meanwhile: load now, not during the run); a saved session is drawn without them. ``keys``:
    the only workspaces to build (all by default)."""
    from .app import create_app, preload_now
    from .main_window import MainWindow

    app = create_app()
    if preload:
        preload_now()
    window = MainWindow(keys)
    window.resize(*size)
    window.show()
    return app, window


def close_window(window) -> None:
    """Close and delete the window now, on this thread: left to interpreter exit, its deletion
    crashed, and a test session would keep every window a command opened."""
    window.close()
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def compose(key: str, size: tuple[int, int] = (1600, 960)):
    """The controller with the one workspace ``key``, and no window: what a clip films. The
    workspace is shown off screen at ``size`` (about its place in the window), so its widgets
    are laid out as there: a widget never shown gets no resize events, and the compositor's
    renders of the window's own panels would keep their first layout."""
    from PySide6.QtCore import Qt

    from .app import create_app, preload_now
    from .controller import AppController
    from .ownership import own_parameters
    from .presentation import remembered_theme
    from .style import apply_theme, stylesheet
    from .workspaces import workspace_named

    app = create_app()
    theme = remembered_theme()  # the window's theme at start-up
    apply_theme(app, theme)
    preload_now()
    controller = AppController()
    workspace = workspace_named(key)
    own_parameters(workspace.parameters, workspace)  # as the window's parameter dock does (gui/ownership.py)
    controller.register(workspace)
    workspace.setStyleSheet(stylesheet(theme))  # a window's sheet, for the window it stands in for
    workspace.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
    workspace.resize(*size)
    workspace.show()
    return app, controller


def dispose(controller) -> None:
    """End every worker the controller knows, then delete its workspaces and it, now."""
    controller.shutdown()
    for workspace in controller.workspaces.values():
        workspace.close()
        workspace.deleteLater()
    controller.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def wait_until_idle(host, timeout_s: float = 600.0) -> bool:
    """Spin the event loop until the controller (``host``'s, of a window) is idle: every lane and
    worker; False if the timeout passed first."""
    controller = getattr(host, "controller", host)
    loop = QEventLoop()
    poll = QTimer(interval=50)
    idle = []  # the poll saw it idle: what is asked once the loop has quit (a view's density
    # counted for its settled layout) is for the caller's next wait, not a timeout

    def check():
        if not controller.busy:
            idle.append(True)
            loop.quit()

    poll.timeout.connect(check)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    poll.start()
    loop.exec()
    poll.stop()
    return bool(idle)


def run_preset(host, preset: str, steps: int | None, timeout_s: float = 600.0) -> None:
    """Load and run ``preset`` on ``host``: the controller, or a window (whose load_preset also
    titles the slide and the status bar); raise EngineInputError unless its run succeeded in time."""
    window = host if hasattr(host, "message_bar") else None
    controller = host if window is None else window.controller
    errors: list[str] = []
    collect = lambda kind, text: errors.append(text) if kind == "error" else None  # noqa: E731
    controller.message.connect(collect)
    try:
        if window is None:
            controller.load_preset(preset, steps=steps)
        else:
            window.load_preset(preset, steps=steps)
            if window.message_bar.text:
                raise EngineInputError(window.message_bar.text)
        if not wait_until_idle(controller, timeout_s):
            controller.cancel_all()
            raise EngineInputError(f"preset {preset!r} did not finish within {timeout_s:g} s")
        if controller.last_outcome != "succeeded":
            why = controller.last_error or (errors[-1] if errors else "no result")
            raise EngineInputError(f"preset {preset!r} {controller.last_outcome}: {why}")
    finally:
        controller.message.disconnect(collect)
    settle()


def settle(ms: int = 300) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def wait_until_settled(window, timeout_s: float = 600.0) -> None:
    """Wait until the window asks for nothing more: idle, and still idle once its layout has
    settled (a finished job's drawing, or the settled layout, can ask for more: a slice view's
    density for its final size)."""
    deadline = time.monotonic() + timeout_s
    while wait_until_idle(window, max(deadline - time.monotonic(), 0.05)):
        settle()
        if not window.controller.busy or time.monotonic() >= deadline:
            return


def screenshot(
    preset: str | None,
    out: str,
    size: tuple[int, int],
    steps: int | None,
    presentation: bool = False,
    theme: str | None = None,
    session_in: str | None = None,
    session_out: str | None = None,
    run_dir: str | None = None,
) -> int:
    """``main.py screenshot``: run ``preset`` (or open the saved ``session_in``, drawn from its
    results without recomputing them, or draw the training run in ``run_dir`` as it stands) at
    ``size`` and save the window as ``out``. ``session_out`` also writes the session of what was
    shot, exactly as File ▸ Save session does."""
    from . import session

    out_path = Path(out)
    if out_path.suffix.lower() != ".png":
        raise EngineInputError(f"--out {out} must name a .png file")
    if sum(x is not None for x in (preset, session_in, run_dir)) != 1:
        raise EngineInputError("screenshot needs exactly one of --preset NAME, --session FILE and --run RUN_DIR")
    if run_dir is not None:
        from engine.runs import open_run

        open_run(run_dir)  # not a run folder: one line, before the window opens
    if session_in is not None and not Path(session_in).is_file():
        raise EngineInputError(f"--session {session_in}: no such file")
    saved = shown = None
    if session_in is not None:  # drawn, not computed: no torch, and only the tab it shows is built
        saved = session.read_session(session_in)
        shown = None if session_out is not None else shown_tab(saved)  # re-saved: every tab
    app, window = open_window(size, preload=session_in is None, keys=None if shown is None else {shown})
    try:
        window.set_look(presentation, theme)
        if presentation:  # full screen would take the virtual screen's size, not the one asked for
            window.setFixedSize(*size)
        settle()
        if session_in is not None:
            draw_session(window, saved, Path(session_in).name, shown)
        elif run_dir is not None:
            draw_run(window, run_dir)
        else:
            run_preset(window, preset, steps)
        wait_until_settled(window)  # the shot shows what the settled layout asked for
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


def draw_run(window, run_dir: str, timeout_s: float = 600.0) -> None:
    """Draw the training run in ``run_dir`` in the window's Training run tab, as it stands."""
    window.open_run(run_dir, once=True)
    if not wait_until_idle(window, timeout_s):
        window.controller.cancel_all()
        raise EngineInputError(f"--run {run_dir}: not drawn within {timeout_s:g} s")
    if window.controller.last_outcome != "succeeded":
        why = window.controller.last_error or window.message_bar.text or "not drawn"
        raise EngineInputError(f"--run {run_dir}: {why}")


def shown_tab(state) -> str | None:
    """The workspace a read session shows, if it names one it holds (else None)."""
    if not isinstance(state, dict) or not isinstance(state.get("workspaces"), dict):
        return None
    current = state.get("current")
    return current if isinstance(current, str) and current in state["workspaces"] else None


def draw_session(window, state: dict, name: str, only: str | None = None) -> None:
    """Draw the read session ``state`` (named ``name``) in ``window``, as File ▸ Open session
    does; ``only``: just that workspace's part (the window built no other)."""
    from . import session

    if only is not None:
        state = {**state, "workspaces": {only: state["workspaces"][only]}}
    try:
        if not isinstance(state, dict) or not isinstance(state.get("workspaces"), dict):
            raise EngineInputError("it has no workspaces")
        session.apply_state(window, state, live=False)  # a shot: drawn, nothing made live or run again
    except (EngineInputError, KeyError, TypeError, ValueError, IndexError) as error:
        raise EngineInputError(f"cannot open session {name}: {error}") from None
    window.replay_dock.refresh()  # the restored run is a timeline to scrub, shown at its end


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
    """``main.py record``: compute the preset, then render a clip of its finished run to ``out``,
    with the controller and the preset's workspace alone: the window is never built.

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
    from .presets import preset_named

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
    app, controller = compose(preset_named(the_clip.preset).workspace)
    try:
        settle()
        run_preset(controller, the_clip.preset, steps=steps)
        with bars("computing the clip's scene") as on_progress:
            scene = scene_for(controller.workspaces, the_clip.preset, on_progress=on_progress)
        with bars("rendering") as bar:
            stats = render_to_file(ClipRenderer(the_clip, scene), out, bar.count, adopt=controller.adopt)
    finally:
        dispose(controller)
    w, h = the_clip.size
    print(
        f"wrote {out} ({stats['frames']} frames, {w}x{h}, {the_clip.fps} fps; rendered in "
        f"{stats['rendered']:.1f} s, done in {stats['total']:.1f} s = "
        f"{stats['frames'] / stats['total']:.1f} frames/s)"
    )
    return 0


def record_run(
    run_dir: str,
    out: str,
    size=(1920, 1080),
    fps: int = 30,
    seconds: float = 8.0,
    theme: str | None = None,
    progress=None,
) -> int:
    """``main.py record --run``: film the PCA path of the run in ``run_dir`` as it grew, beside its
    loss and sharpness (gui/clips/run_clip.py), to ``out``; no window is built. The run is read
    and its plane computed before Qt starts, so a folder that is not a run, or a run with nothing
    to film, is one line at once. ``theme``: "light" or "dark" (default: the window's last)."""
    from engine.core.progress import run_to_completion
    from engine.runs.path_growth import grown_run_job

    from .app import create_app
    from .capture import check_output, even_size
    from .clips.run_clip import render_run
    from .presentation import remembered_theme
    from .style import apply_theme

    if not (math.isfinite(seconds) and 0 < seconds <= 3600):
        raise EngineInputError(f"--seconds {seconds} must lie in (0, 3600]")
    check_output(out)
    bars = progress or _no_bars
    with bars("reading the run") as on_progress:
        view = run_to_completion(grown_run_job(run_dir), on_progress)
    app = create_app()
    apply_theme(app, theme or remembered_theme())
    size = even_size(size)
    with bars("rendering") as bar:
        stats = render_run(view, out, size, fps, seconds, bar.count)
    print(
        f"wrote {out} ({stats['frames']} frames, {size[0]}x{size[1]}, {fps} fps; "
        f"{len(view.pca.steps)} checkpoints, steps {int(view.steps[0])}–{int(view.steps[-1])}; "
        f"done in {stats['total']:.1f} s)"
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
