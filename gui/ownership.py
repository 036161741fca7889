"""Qt owners for the QObjects pyqtgraph leaves parentless, so the cycle collector deletes none.

pyqtgraph makes QObjects without a Qt parent that only Python owns, through reference cycles:
parameters, the event filters (EventProxy) and signal throttles (SignalProxy, with their
QTimer) of a ParameterTree's items, plots' context menus (rendering/plot_style.own_menus). Once
their window was gone, Python's cycle collector deleted them, at whatever allocation of whatever
thread it ran: inside Qt's QObject::disconnect, which calls disconnectNotify holding the
signal-slot mutexes (PySide looks the override up in Python, an allocation), ~QObject of such an
object waited for a mutex its own thread held, and the GUI hung. With a Qt parent they are
deleted with it, on the GUI thread, at a time Qt chooses.
"""

from __future__ import annotations

from pyqtgraph.parametertree import Parameter
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QTreeWidget, QWidget
from shiboken6 import invalidate, isValid, ownedByPython


def delete_after(widget: QWidget, objects) -> None:
    """Delete ``objects`` (parentless QObjects only Python owns) once ``widget`` is destroyed.

    Not ``widget.destroyed.connect(obj.deleteLater)``: that connects Qt to Qt, so PySide never
    sees the call, and the objects stay Python's until the event loop's next turn deletes
    them. Their plot's wrappers are cyclic garbage by then, so in that gap a collection (at any
    allocation, on any thread) could delete them instead. Held by this connection, and then
    deleted through PySide's deleteLater, which hands them to Qt at once, they never are."""
    objects = list(objects)
    if objects:
        widget.destroyed.connect(lambda *_: [obj.deleteLater() for obj in objects if isValid(obj)])


def _stray(value) -> bool:
    """A live, parentless, Python-owned QObject that is not a widget (a widget's Qt parent must
    be a widget: see rendering/plot_style.own_menus for pyqtgraph's menus)."""
    return (
        isinstance(value, QObject)
        and not isinstance(value, QWidget)
        and isValid(value)
        and QObject.parent(value) is None  # QObject's: Parameter.parent() is its parameter parent
        and ownedByPython(value)
    )


def adopt_strays(obj, owner: QObject, depth: int = 2) -> None:
    """Give ``owner`` the parentless QObjects ``obj`` refers to in its attributes (and theirs,
    ``depth`` levels down: a SignalProxy's QTimer)."""
    for value in list(vars(obj).values()):
        if isinstance(value, Parameter):
            continue  # the workspace's (own_parameters)
        if _stray(value):
            value.setParent(owner)
        if depth > 1 and isinstance(value, QObject) and isValid(value) and hasattr(value, "__dict__"):
            adopt_strays(value, value if _owned_by(value, owner) else owner, depth - 1)


def _owned_by(value: QObject, owner: QObject) -> bool:
    parent = QObject.parent(value)
    while parent is not None:
        if parent is owner:
            return True
        parent = QObject.parent(parent)
    return False


def forget_root_item(tree: QTreeWidget) -> None:
    """Invalidate the wrapper of ``tree``'s invisible root item when the tree is destroyed.

    pyqtgraph's TreeWidget (a ParameterTree's base) keeps that wrapper for the tree's life. The
    root item is Qt's, not a QObject, so PySide never learns of its deletion with the tree: the
    wrapper stayed in shiboken's address map until the cycle collector freed the tree's Python
    side, and a new C++ object at the same address came back to Python as that wrapper. In a
    loop of tree deletions, 21 of 4,000 ``QMenu.addMenu`` calls returned a QTreeWidgetItem, and
    a ParameterTree's own ``header()`` did; the GUI tests once failed on ``'QTreeWidgetItem'
    object has no attribute 'addAction'`` building a plot, and a wrapper of the wrong C++ type
    used as its own is how such a process segfaults."""
    root = QTreeWidget.invisibleRootItem(tree)
    tree.destroyed.connect(lambda *_: invalidate(root))


def own_parameter_tree(tree):
    """The tree owns its items' EventProxy and SignalProxy objects (and their timers), and its
    root item's wrapper dies with it (``forget_root_item``): call after ``tree.setParameters``.
    Not the parameters: ``own_parameters`` gives them their owner."""
    forget_root_item(tree)
    for item in tree.listAllItems():
        adopt_strays(item, tree)
        widget = getattr(item, "widget", None)
        if isinstance(widget, QWidget) and isValid(widget):
            adopt_strays(widget, widget)  # a SpinBox's SignalProxy
    return tree


def own_parameters(root, owner: QObject) -> None:
    """``owner`` (the workspace) owns every parameter of the tree under ``root``: pyqtgraph links
    parameters to their children in Python only."""
    stack = [root]
    while stack:
        param = stack.pop()
        if _stray(param):
            param.setParent(owner)
        stack.extend(param.children())
