"""The command line: open the window, or run an experiment, screenshot or recording headless.

Each command lives in ``landscape_lens.commands``; this module builds the parser from them and
turns every failure into one line on stderr with a status: 2 for bad input, 1 for a bug.
"""

from __future__ import annotations

import faulthandler
import importlib
import io
import os
import sys

# Before torch loads: OpenMP keeps its thread count per thread, so every fresh Python thread (a job
# worker, a wait_for helper) otherwise ran torch on every core, many times slower on these tiny
# networks on a busy machine (engine.core.runtime.configure_torch_threads explains the choice).
# The command line and the window only: ``import landscape_lens`` as a library leaves it alone.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from .arguments import Parser, UsageError, add_look_options
from .commands import COMMANDS


def _command_modules() -> dict:
    modules = [importlib.import_module(f".commands.{name}", __package__) for name in COMMANDS]
    return {module.NAME: module for module in modules}


def build_parser(prog: str = "landscape-lens") -> Parser:
    parser = Parser(
        prog=prog,
        description="Landscape Lens: see two results about neural-network loss "
        "landscapes. Without a command, open the window.",
    )
    parser.add_argument("--preset", help="open the window with this preset loaded")
    parser.add_argument("--run", metavar="RUN_DIR", help="open the window following this training run folder")
    add_look_options(parser)
    commands = parser.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND")
    for name, module in _command_modules().items():
        module.add_arguments(commands.add_parser(name, help=module.HELP, description=module.__doc__))
    return parser


def dispatch(args) -> int:
    if args.command:
        return _command_modules()[args.command].run(args)
    from gui.app import run_gui

    return run_gui(args.preset, args.presentation, args.theme, args.run)


def _report_crashes() -> None:
    """A crash in C code (Qt, Mesa, torch) prints every thread's Python stack to stderr, for a bug
    report, instead of ending the process without a word."""
    if not faulthandler.is_enabled() and sys.stderr is not None:
        try:
            faulthandler.enable()
        except (AttributeError, ValueError, io.UnsupportedOperation):  # a stderr with no file behind it
            pass


def main(argv=None, prog: str = "landscape-lens") -> int:
    _report_crashes()
    args = build_parser(prog).parse_args(argv)
    from engine.core.errors import EngineInputError

    try:
        return dispatch(args)
    except (EngineInputError, UsageError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print(f"{prog}: error: out of memory for this request; try smaller sizes", file=sys.stderr)
        return 1
    except Exception as error:  # a bug: one line here, never a traceback, and a non-zero status
        print(f"{prog}: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
