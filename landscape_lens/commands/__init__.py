"""One module per command: ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.

A new command is a new module here and one name in ``COMMANDS``; ``cli`` does the rest.
"""

COMMANDS = (
    "reproduce",
    "sweep",
    "invariant_set",
    "inspect",
    "obstruction",
    "screenshot",
    "record",
    "landscape",
    "show",
)
