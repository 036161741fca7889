"""Landscape Lens: open the window, or run an experiment, screenshot or recording headless."""
from __future__ import annotations

import argparse
import json
import math
import re
import sys


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Let "--c -0.1,0.1" read as a value: argparse only recognizes single negative numbers.
        self._negative_number_matcher = re.compile(r"^-[\d.][\d.eE+-]*(,\s*-?[\d.][\d.eE+-]*)*$")

    def error(self, message):  # one line and exit 2, never a traceback or a usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1920x1080, not {text!r}") from None
    if not (16 <= width <= 7680 and 16 <= height <= 4320):
        raise argparse.ArgumentTypeError(f"size {text} is outside 16x16 .. 7680x4320")
    return width, height


# Limits a request must stay within, so a typo cannot ask for a terabyte or a day of rendering.
MAX_DIMENSION = 10_000        # d, e of invariant-set
MAX_C_VALUES = 1_000          # hidden neurons given to invariant-set
MAX_FPS = 120
MAX_FRAMES = 60 * 60 * 10     # ten minutes at 60 fps
MAX_SEED = 2**32 - 1


def _int_in(low: int, high: int, what: str = "an integer"):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, not {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low} .. {high}")
        return value
    return parse


def _split_arg(text: str) -> tuple[int, int]:
    try:
        layer, neuron = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LAYER,NEURON like 1,0, not {text[:60]!r}") from None
    return layer, neuron


def _floats(text: str) -> list[float]:
    parts = text.split(",")
    if len(parts) > MAX_C_VALUES:
        raise argparse.ArgumentTypeError(f"{len(parts)} values given; at most {MAX_C_VALUES}")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, not {text[:60]!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError("every value must be a finite number")
    return values


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= 3600):
        raise argparse.ArgumentTypeError(f"{text} is outside (0, 3600] seconds")
    return value


def _add_look_options(parser) -> None:
    parser.add_argument("--presentation", action="store_true",
                        help="presentation mode: full screen, large type, thick lines")
    parser.add_argument("--theme", choices=("light", "dark"), default=None,
                        help="colour theme (default: the one chosen last in the window)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="main.py", description=__doc__)
    parser.add_argument("--preset", help="open the window with this preset loaded")
    _add_look_options(parser)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    reproduce = commands.add_parser("reproduce", help="run a paper experiment headless")
    reproduce.add_argument("name", help="experiment name (see `reproduce --list`)", nargs="?")
    reproduce.add_argument("--out", help="output folder for metrics.json, .npz and PNG figures")
    reproduce.add_argument("--quick", action="store_true", help="a reduced version, for tests")
    reproduce.add_argument("--seed", type=_int_in(0, MAX_SEED, "a seed from 0"), default=0)
    reproduce.add_argument("--list", action="store_true", help="list the experiments")

    invariant = commands.add_parser("invariant-set", help="topology of the invariant set H(c), as JSON")
    invariant.add_argument("--d", type=_int_in(1, MAX_DIMENSION), required=True, help="input dimension")
    invariant.add_argument("--e", type=_int_in(1, MAX_DIMENSION), required=True, help="output dimension")
    invariant.add_argument("--c", type=_floats, required=True, help="c_1,...,c_l")
    invariant.add_argument("--bias", action="store_true", help="first layer has biases")

    inspect = commands.add_parser("inspect", help="critical-point report of a saved network, as JSON")
    inspect.add_argument("network", help="a .npz written by the app (weights, X, Y, activation), a PyTorch "
                                         "state_dict (.pt/.pth) or a torch.export archive (.pt2)")
    inspect.add_argument("--activation", help="the state_dict's activation (sigmoid, tanh, …)")
    inspect.add_argument("--data", help="data for a PyTorch network: .npz with X, Y or .csv (last column y)")
    inspect.add_argument("--split", type=_split_arg, help="LAYER,NEURON: split this hidden neuron (γ)")
    inspect.add_argument("--lambda", dest="lam", type=float, help="λ of the split")
    inspect.add_argument("--out", help="F.npz: the split network with its construction history")

    screenshot = commands.add_parser("screenshot", help="run a preset in the window and save a PNG")
    screenshot.add_argument("--preset", required=True)
    screenshot.add_argument("--out", required=True, help="FILE.png")
    screenshot.add_argument("--size", type=_size, default=(1600, 960), help="WxH, default 1600x960")
    screenshot.add_argument("--steps", type=_int_in(1, 10**7), default=None,
                            help="training steps to run before the shot")
    _add_look_options(screenshot)

    record = commands.add_parser("record", help="render a clip of a preset's run to MP4, GIF or PNGs")
    record.add_argument("--preset", help="without --clip: render this preset's story clip")
    record.add_argument("--clip", help="a clip JSON file (layout, key frames, timing)")
    record.add_argument("--out", required=True, help="FILE.mp4, FILE.gif or a folder for PNGs")
    record.add_argument("--size", type=_size, default=(1920, 1080), help="story clip size")
    record.add_argument("--fps", type=_int_in(1, MAX_FPS), default=30, help="story clip frame rate")
    record.add_argument("--seconds", type=_seconds, default=8.0, help="story clip length")
    record.add_argument("--orbit", action="store_true", help="story clip: turn the camera 360°")
    record.add_argument("--steps", type=_int_in(1, 10**7), default=None, help="override training steps")
    return parser


class _UsageError(Exception):
    """A combination of arguments argparse cannot check by itself."""


def _reproduce(args) -> int:
    from engine.experiments import experiments, run_experiment
    from engine.exports import json_default
    from engine.progress import run_to_completion

    if args.list or not args.name:
        for name, experiment in experiments().items():
            print(f"{name:24s} {experiment.description}")
        return 0
    if not args.out:
        raise _UsageError("reproduce needs --out DIR")

    def report(update):
        print(f"\r[{update.fraction:6.1%}] {update.message[:70]:70s}", end="", file=sys.stderr)

    metrics = run_to_completion(run_experiment(args.name, args.out, args.quick, args.seed), report)
    print(file=sys.stderr)
    print(json.dumps(metrics, indent=2, default=json_default))  # the same JSON as metrics.json
    return 0


def dispatch(args) -> int:
    if args.command == "record" and args.fps * args.seconds > MAX_FRAMES:
        raise _UsageError(f"--fps {args.fps} × --seconds {args.seconds:g} is {args.fps * args.seconds:.0f} frames; "
                          f"the limit is {MAX_FRAMES}")
    if args.command == "reproduce":
        return _reproduce(args)
    if args.command == "invariant-set":
        from engine.invariants import invariant_set_summary
        print(json.dumps(invariant_set_summary(args.d, args.e, args.c, args.bias)))
        return 0
    if args.command == "inspect":
        from engine.inspect import inspect_and_split
        print(json.dumps(inspect_and_split(args.network, args.activation, args.data, args.split, args.lam,
                                           args.out), indent=2))
        return 0
    if args.command == "screenshot":
        from gui.headless import screenshot
        return screenshot(args.preset, args.out, args.size, args.steps, args.presentation, args.theme)
    if args.command == "record":
        from gui.headless import record_preset
        return record_preset(args.preset, args.out, args.size, args.fps, args.seconds,
                             args.orbit, args.clip, args.steps)
    from gui.app import run_gui
    return run_gui(args.preset, args.presentation, args.theme)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from engine.errors import EngineInputError
    try:
        return dispatch(args)
    except (EngineInputError, _UsageError) as error:
        print(f"main.py: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print("main.py: error: out of memory for this request; try smaller sizes", file=sys.stderr)
        return 1
    except Exception as error:  # a bug: one line here, never a traceback, and a non-zero status
        print(f"main.py: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
