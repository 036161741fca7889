"""Every uncaught exception reaches the window's message bar, whichever thread raised it.

Python calls ``sys.excepthook`` for an exception escaping a Qt slot, a timer callback or the
event loop, and ``threading.excepthook`` for one escaping a Python thread. Both go through a
signal of a QObject living in the GUI thread, so the message is shown there safely; the
traceback still goes to the terminal for whoever debugs it. Qt's own critical messages take
the same way.
"""

from __future__ import annotations

import sys
import threading

from PySide6.QtCore import QObject, QtMsgType, Signal, qInstallMessageHandler


class ErrorRelay(QObject):
    raised = Signal(str)  # one line for the message bar

    def __init__(self):
        super().__init__()
        self.previous_hook = sys.__excepthook__  # prints the traceback; a test harness may chain in

    def report(self, exc_type, exc, tb) -> None:
        self.previous_hook(exc_type, exc, tb)
        self.raised.emit(f"Internal error: {exc_type.__name__}: {exc} (details in the terminal)")


_relay: ErrorRelay | None = None


def error_relay() -> ErrorRelay:
    """The process's one relay, (re)hooked into Python and Qt: each new window calls this, in
    case something (a test harness, a debugger) replaced the hooks since."""
    global _relay
    if _relay is None:
        _relay = ErrorRelay()
    if sys.excepthook != _relay.report:
        _relay.previous_hook = sys.excepthook
    sys.excepthook = _relay.report
    threading.excepthook = lambda args: _relay.report(args.exc_type, args.exc_value, args.exc_traceback)
    qInstallMessageHandler(_qt_message)
    return _relay


def _qt_message(kind, context, message: str) -> None:
    print(message, file=sys.stderr)
    if kind in (QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg) and _relay is not None:
        _relay.raised.emit(f"Qt: {message}")
