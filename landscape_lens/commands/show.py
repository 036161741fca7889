"""``show FILE.npz``: open the window on the toolkit tab with a saved result drawn (a plane.npz, a
PCA plane.npz, an interp.npz, or a hessian.npz holding a spectral density), as ``main.py
landscape`` or the API's ``.save`` wrote it. Nothing is computed again but the plane's
persistence and basin map; ``--out FILE.png`` saves the window instead of opening it."""

from __future__ import annotations

from pathlib import Path

from ..arguments import add_look_options, size

NAME = "show"
HELP = "open the window with a saved plane.npz, interp.npz or hessian.npz drawn in the toolkit tab"


def add_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE.npz", help="a result file written by `landscape` or the API's .save")
    parser.add_argument("--out", metavar="FILE.png", help="save the window as a PNG and exit, instead of opening it")
    parser.add_argument("--size", type=size, default=(1600, 960), help="WxH, default 1600x960")
    add_look_options(parser)


def saved_view(path):
    """(ToolkitResult, view state) of the result file at ``path``: read by
    ``landscape_lens.results.load``, presented as the toolkit tab draws a job's result."""
    from gui.present.landscape import from_saved, present

    from ..results import load

    result = from_saved(load(path))
    return result, present(result)


def open_shown(window, result, state) -> None:
    """Draw a read result in ``window``'s toolkit tab and show that tab."""
    workspace = window.workspaces["landscape"]
    workspace.show_saved(result, state)
    window.show_workspace("landscape")
    window.status_label.setText(result.message)


def run(args) -> int:
    from engine.core.errors import EngineInputError

    if args.out is not None and Path(args.out).suffix.lower() != ".png":
        raise EngineInputError(f"--out {args.out} must name a .png file")
    result, state = saved_view(args.file)  # read and presented before any window opens
    from gui.headless import close_window, open_window, settle, wait_until_settled

    # a shot builds the toolkit tab alone (as a session's shot builds its own tab)
    app, window = open_window(args.size, preload=False, keys=None if args.out is None else {"landscape"})
    window.set_look(args.presentation, args.theme)
    if args.presentation and args.out is not None:  # full screen would take the virtual screen's size
        window.setFixedSize(*args.size)
    open_shown(window, result, state)
    if args.out is None:
        return app.exec()
    try:
        settle()
        wait_until_settled(window)
        from gui.capture import grab_widget

        image = grab_widget(window)
        if not image.save(str(args.out)):
            raise EngineInputError(f"could not write {args.out}")
    finally:
        close_window(window)
    print(f"wrote {args.out} ({image.width()}x{image.height()})")
    return 0
