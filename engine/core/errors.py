"""Errors the engine raises for bad input, so every front end can show one clear line."""


class EngineInputError(ValueError):
    """A user-supplied value (panel field, CLI argument, loaded file) is invalid.

    The message must name the offending value and say why it is wrong; front ends show it
    verbatim (the CLI prints it and exits 2, the GUI shows it in a message bar).
    """
