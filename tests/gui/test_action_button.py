"""The run controls' tool buttons keep one connection to their action however often it changes.

Qt 6.11's QToolButton re-runs setDefaultAction at every change of its action, and each run
connects the action's changed() again (gui.widgets.ActionButton says why the window's run
controls do not use it): 12 connections at start, 100 after 11 runs, 144 bytes of C heap each.
"""

from __future__ import annotations

import gc

from PySide6.QtWidgets import QToolButton

from engine.core.runtime import heap_bytes

CHANGES = 2000


def heap_in_use() -> int:
    gc.collect()
    return heap_bytes()["in_use"]


def test_run_controls_keep_one_connection_per_action(window, qtbot):
    actions = [b.defaultAction() for b in window.findChildren(QToolButton) if b.defaultAction() is not None]
    assert window.run_action in actions and window.cancel_action in actions
    before = {a.text(): a.receivers("2changed()") for a in actions}
    start = window.cancel_action.isEnabled()
    for _ in range(20):  # what first changes allocate once (event queues, hash buckets)
        window.cancel_action.setEnabled(not window.cancel_action.isEnabled())
    heap = heap_in_use()
    for _ in range(CHANGES):  # as Run and its end do, ~8 changes per run across the controls
        window.cancel_action.setEnabled(not window.cancel_action.isEnabled())
    grown = heap_in_use() - heap
    window.cancel_action.setEnabled(start)
    after = {a.text(): a.receivers("2changed()") for a in actions}
    assert after == before, f"changed() receivers grew with the action's changes: {before} -> {after}"
    # with Qt's own tool button: ~290 KB (one connection per change); a bound, not a timing
    assert grown < 64 * 1024, f"{CHANGES} changes of an action kept {grown} bytes of C heap"
