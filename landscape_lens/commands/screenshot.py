"""``screenshot --preset NAME --out FILE.png``: run a preset in the window and save what it shows."""

from __future__ import annotations

from ..arguments import add_look_options, int_in, size

NAME = "screenshot"
HELP = "run a preset in the window and save a PNG"


def add_arguments(parser) -> None:
    parser.add_argument("--preset", required=True)
    parser.add_argument("--out", required=True, help="FILE.png")
    parser.add_argument("--size", type=size, default=(1600, 960), help="WxH, default 1600x960")
    parser.add_argument("--steps", type=int_in(1, 10**7), default=None, help="training steps to run before the shot")
    add_look_options(parser)


def run(args) -> int:
    from gui.headless import screenshot

    return screenshot(args.preset, args.out, args.size, args.steps, args.presentation, args.theme)
