"""``screenshot --preset NAME --out FILE.png``: run a preset in the window and save what it shows;
``--save-session S.lens`` also saves its session, and ``screenshot --session S.lens`` draws a saved
session again (at any size, theme or mode) without recomputing it; ``screenshot --run RUN_DIR`` draws
a training run folder's view (the Training run tab) as it stands."""

from __future__ import annotations

from ..arguments import add_look_options, int_in, size

NAME = "screenshot"
HELP = "run a preset (or redraw a saved session) in the window and save a PNG"


def add_arguments(parser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="a preset to run")
    source.add_argument("--session", metavar="S.lens", help="a saved session to draw again, without recomputing")
    source.add_argument("--run", metavar="RUN_DIR", help="a training run folder (ll.Recorder's) to draw as it stands")
    parser.add_argument("--save-session", metavar="S.lens", help="also save the session of what was shot")
    parser.add_argument("--out", required=True, help="FILE.png")
    parser.add_argument("--size", type=size, default=(1600, 960), help="WxH, default 1600x960")
    parser.add_argument("--steps", type=int_in(1, 10**7), default=None, help="training steps to run before the shot")
    add_look_options(parser)


def run(args) -> int:
    from gui.headless import screenshot

    return screenshot(
        args.preset,
        args.out,
        args.size,
        args.steps,
        args.presentation,
        args.theme,
        args.session,
        args.save_session,
        run_dir=args.run,
    )
