"""What each tab draws, as plain data made off the GUI thread: no Qt, no pyqtgraph.

A presenter turns an engine result into a view state (numbers, strings and numpy arrays in a
dict), inside the job that produced the result; the workspace only routes the state's fields to
its views, and a session saves the same state, so opening it draws without recomputing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import resources
from engine.core.errors import EngineInputError

# One colour per hidden neuron (Okabe–Ito), in every view, caption and chip of paper A's tab.
NEURON_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000", "#999999"]


@dataclass(frozen=True, eq=False)
class Presented:
    """A job's result beside its view state, both made on the worker thread."""

    result: Any
    state: dict

    @property
    def message(self) -> str:  # the status bar's last word, as the result alone gave it
        return getattr(self.result, "message", "")


def dips_below(lowest: float, level: float) -> bool:
    """Whether a curve whose lowest value is ``lowest`` dips below ``level`` by more than
    float64 rounding. Inside I the descent line moves the loss by ~1e-14: framed as a dip, a
    plot showed that noise with 15-digit tick labels. A real dip (at the Fig. 3 saddle ~1e-4 of
    L*) is far above 1e-9 of the level."""
    return level - lowest > 1e-9 * max(1.0, abs(level))


def resolve(name: str, what: str) -> Path:
    """A path as typed, or one shipped in resources/ (presets name those relative to it)."""
    name = name.strip()
    if not name:
        raise EngineInputError(f"{what}: no file path is given")
    path = Path(name).expanduser()
    if not path.is_absolute() and not path.exists():
        path = resources.path(name)
    if not path.is_file():
        raise EngineInputError(f"{what}: {name!r} does not exist")
    return path
