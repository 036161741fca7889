"""The words of paper A's training view, made on the worker thread with its state
(gui/present/topology.py): neuron subscripts, the quadrics' captions (shape, drift, lock chip,
sign changes) and the note on why c moved. No Qt.
"""

from __future__ import annotations

import numpy as np

from engine.topology.training import TrainConfig

from . import NEURON_COLORS

DRIFT_WORTH_A_NOTE = 0.05  # relative change of some c_k
CONSERVED_TOL = 1e-9  # below this a drift is rounding, not a change
SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def sub(k: int) -> str:
    return str(k).translate(SUBSCRIPT)


def drift_note(c_start: np.ndarray, c_now: np.ndarray, config: TrainConfig) -> str:
    """Why c_k moved, when it moved visibly: only the exact flow conserves it."""
    relative = np.abs(c_now - c_start) / np.maximum(np.abs(c_start), 1e-12)
    k = int(np.argmax(relative))
    if relative[k] < DRIFT_WORTH_A_NOTE:
        return ""
    return drift_words(f"c{sub(k + 1)} moved {100 * relative[k]:.0f} %", config)


def drift_words(moved: str, config: TrainConfig) -> str:
    """``moved`` ("c₁ moved 6 %") and why, for the run's optimizer."""
    if config.weight_decay > 0:
        return f"{moved}: weight decay breaks the conservation law."
    if config.optimizer in ("gd", "sgd"):
        return (
            f"{moved}: each {config.optimizer.upper()} step of size h = {config.lr:g} changes c by "
            "O(h²); the exact flow conserves it."
        )
    if config.optimizer == "flow":
        return f"{moved}: the solver's tolerance is too loose to conserve c."
    name = {"adam": "Adam's per-coordinate"}.get(config.optimizer, config.optimizer)
    return f"{moved}: {name} steps are not gradient steps, so c is not conserved."


# ------------------------------------------------------------------ captions
def shape_name(c: float) -> str:
    return "one sheet" if c > 0 else ("two sheets" if c < 0 else "cone")


def drift_text(c_now: float, c_start: float) -> str:
    """' (start …)' after a real drift; a drift below rounding reads as conservation."""
    delta = abs(c_now - c_start)
    if delta == 0:
        return ""
    if delta < CONSERVED_TOL:
        return " · conserved (|Δc| &lt; 1e-9)"
    return f" (start {c_start:+.4g})"


def lock_text(k: int, sign: int) -> str:
    """The caption's lock chip: a locked neuron's output sign, fixed for ever (MATH A5)."""
    if not sign:
        return ""
    above = "&gt;" if sign > 0 else "&lt;"
    return (
        f" &nbsp;<span style='background-color:{NEURON_COLORS[k % len(NEURON_COLORS)]}; color:white; font-weight:700;'>"
        f"&nbsp;LOCKED v{sub(k + 1)} {above} 0&nbsp;</span>"
    )


def sign_change_words(k: int, step: int, jumped: bool, joiner: str = ": ") -> str:
    """The words for neuron k's output weight changing sign at ``step``, in every caption that
    tells it (a view's, a clip's): a flip, or a jump over the barrier and what that means
    (after ``joiner``)."""
    if jumped:
        return f"◆ v{sub(k + 1)} jumped the barrier at step {step}{joiner}a finite step, impossible for gradient flow"
    return f"● v{sub(k + 1)} flipped sign at step {step}"


def event_text(k: int, events: list[tuple[int, int, bool]]) -> str:
    """Caption words for the latest sign change, matching the marker's colour."""
    if not events:
        return ""
    _, step, jumped = events[-1]
    more = f" (+{len(events) - 1} more)" if len(events) > 1 else ""
    colour = "#9e38c7" if jumped else "#b38600"
    return f"<br><span style='color:{colour}'>{sign_change_words(k, step, jumped, ' — ')}</span>{more}"
