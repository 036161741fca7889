"""Argument types and limits shared by the commands: each bad value is one line, exit 2."""

from __future__ import annotations

import argparse
import math
import re

from engine.core import validation

# Limits a request must stay within, so a typo cannot ask for a terabyte or a day of rendering.
MAX_DIMENSION = 10_000  # d, e of invariant-set
MAX_C_VALUES = 1_000  # hidden neurons given to invariant-set
MAX_FPS = 120
MAX_FRAMES = 60 * 60 * 10  # ten minutes at 60 fps
MAX_SEED = validation.MAX_SEED


class UsageError(Exception):
    """A combination of arguments argparse cannot check by itself."""


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Let "--c -0.1,0.1" read as a value: argparse only recognizes single negative numbers.
        self._negative_number_matcher = re.compile(r"^-[\d.][\d.eE+-]*(,\s*-?[\d.][\d.eE+-]*)*$")

    def error(self, message):  # one line and exit 2, never a traceback or a usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def model_and_checkpoints(parser, flag: str, help: str) -> None:
    """``--model PACKAGE.MODULE:FACTORY`` (the code that builds the module a state_dict is for) and
    ``flag``, a list of state_dicts (checkpoints) of that model: the pair the module commands
    (landscape's --trajectory, obstruction's --checkpoints) take alike."""
    parser.add_argument("--model", metavar="PACKAGE.MODULE:FACTORY", help="builds the module a state_dict is for")
    parser.add_argument(flag, nargs="+", metavar="CKPT", help=help)


def size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1920x1080, not {text!r}") from None
    if not (16 <= width <= 7680 and 16 <= height <= 4320):
        raise argparse.ArgumentTypeError(f"size {text} is outside 16x16 .. 7680x4320")
    return width, height


def _number_in(convert, low, high, what: str, show):
    """A parser of one number that ``convert`` reads, finite and within [low, high]."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, not {text!r}") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"{text.strip()} is outside {show(low)} .. {show(high)}")
        return value

    return parse


def int_in(low: int, high: int, what: str = "an integer"):
    return _number_in(int, low, high, what, str)


def float_in(low: float, high: float, what: str = "a number"):
    return _number_in(float, low, high, what, lambda x: f"{x:g}")


def split_arg(text: str) -> tuple[int, int]:
    try:
        layer, neuron = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected LAYER,NEURON like 1,1 (both counted from 1), not {text[:60]!r}"
        ) from None
    return layer, neuron


def floats(text: str) -> list[float]:
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


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= 3600):
        raise argparse.ArgumentTypeError(f"{text} is outside (0, 3600] seconds")
    return value


def add_look_options(parser) -> None:
    parser.add_argument(
        "--presentation", action="store_true", help="presentation mode: full screen, large type, thick lines"
    )
    parser.add_argument(
        "--theme",
        choices=("light", "dark"),
        default=None,
        help="colour theme (default: the one chosen last in the window)",
    )
