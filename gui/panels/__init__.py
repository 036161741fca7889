"""The tabs' parameter panels and the inspector; ``choice`` and ``group`` write the two shapes of
parameter every panel's tree repeats."""

from __future__ import annotations


def choice(name: str, title: str, limits: dict, value, **extra) -> dict:
    """A list parameter: ``limits`` maps each shown title to its value."""
    return {"name": name, "title": title, "type": "list", "value": value, "limits": limits, **extra}


def group(name: str, title: str, children: list) -> dict:
    """A group of parameters under ``title``."""
    return {"name": name, "title": title, "type": "group", "children": children}
