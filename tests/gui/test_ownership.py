"""No Qt object is left for Python's cycle collector to delete.

The collector runs at any allocation, on any thread. Qt's QObject::disconnect calls the sender's
disconnectNotify while it holds the signal-slot mutexes, and PySide's override looks the method
up in Python (an allocation): a collection there that deleted a Python-owned QObject ran ~QObject,
which waited for a mutex its own thread held, and the suite hung. So every Qt object of the app
has a Qt owner or is deleted explicitly, on the GUI thread."""

import gc
import weakref

import numpy as np
import pyqtgraph.opengl as gl
from PySide6.QtCore import QCoreApplication, QEvent, QMetaObject
from PySide6.QtWidgets import QVBoxLayout, QWidget
from shiboken6 import isValid

from tests.gui.conftest import qt_objects_left_to_the_collector


def _delete(widget):
    widget.deleteLater()
    for _ in range(3):  # the plots' menus go one turn later (plot_style.own_menus)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _left() -> list[str]:
    return sorted(type(obj).__qualname__ for obj in qt_objects_left_to_the_collector())


def _menus(plot) -> list:
    item = plot.getPlotItem()
    return [item.ctrlMenu, item.stateGroup, item.vb.menu, *item.vb.menu.widgetGroups]


def test_deleted_plots_leave_no_menu_or_item_to_the_collector(qapp):
    """pyqtgraph's parentless context menus (and their WidgetGroups) go with their plot, and so
    do the items a plot removed. Before, they outlived the plot as long as its Python wrappers
    did, and once those were cyclic garbage (a plot's closures refer to it) only the collector
    deleted them: ~20 live Qt objects a plot."""
    from gui.views.curves_view import CurvesView
    from gui.views.degenerate_path_view import DegeneratePathView
    from gui.views.heatmap_plot import HeatmapPlot
    from gui.views.network_diagram import NetworkDiagram
    from gui.views.slice_view import SliceView
    from gui.views.spectrum_view import SpectrumView
    from gui.views.training_curves import TrainingCurves

    assert _left() == [], "garbage from before this test"
    host = QWidget()
    layout = QVBoxLayout(host)
    curves, path, training = CurvesView("c", "t", "L"), DegeneratePathView(), TrainingCurves()
    plots = [curves, path, SliceView("s"), SpectrumView(), NetworkDiagram(), HeatmapPlot("h", "x", "y")]
    plots += [training.loss_plot, training.drift_plot]
    for plot in plots:
        layout.addWidget(plot)
    lam = np.linspace(-1, 2, 20)
    removed = []
    # the second pass removes what the first drew (the path keeps its shaded regions for the
    # intervals a new path has: a path without one removes it)
    for intervals in ([(0.0, 1.0), (1.5, 2.0)], [(0.5, 1.0)]):
        removed += curves._items + path.regions[len(intervals) :] + training.drift_curves + training._events
        curves.show_curves([{"name": "a", "x": [0, 1], "y": [1, 2]}, {"name": "L*", "hline": 1.5}])
        path.show_path(lam, lam**2, lam - 0.5, intervals)
        training.configure(2, False)
        training.show(np.arange(3), np.ones(3), np.zeros((3, 2)), [(1, 0)], [False])
    removed += training._events
    training.show(np.arange(3), np.ones(3), np.zeros((3, 2)), [], [])  # the event line goes
    menus = [obj for plot in plots for obj in _menus(plot)] + [path.eig_box.menu]
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert removed and not any(isValid(item) for item in removed), "a removed item outlived its removal"
    _delete(host)
    assert not any(isValid(obj) for obj in menus), "a plot's menus outlived it"
    for plot in plots:
        plot.cycle = plot  # the plots' wrappers are cyclic garbage now, as a dropped view's are
    del curves, path, training, host, layout, plots, plot, menus, removed
    assert _left() == []


def test_gl_items_go_with_their_view_and_when_removed(qapp):
    """pyqtgraph's GL items are parentless QObjects (a grid and its line plot refer to each
    other in Python only): the view owns them, and removing one deletes it."""
    from gui.rendering.offscreen_gl import OffscreenGLView

    assert _left() == [], "garbage from before this test"
    view = OffscreenGLView()
    kept, removed = gl.GLGridItem(), gl.GLGridItem()
    view.addItem(kept)
    view.addItem(removed)
    view.removeItem(removed)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not isValid(removed) and isValid(kept)
    _delete(view)
    assert not isValid(kept)
    del view, kept, removed
    assert _left() == []


def test_a_plots_menus_are_never_the_collectors_between_its_deletion_and_theirs(qapp):
    """A plot's menus are deleted one turn of the event loop after the plot. In between, with
    ``plot.destroyed`` connected straight to their deleteLater, they were still Python's and
    cyclic garbage: a collection there (any allocation, any thread) deleted them. A run of the
    GUI suite saving every collection's garbage (DEBUG_SAVEALL) caught 130 of them in one test
    (tests/gui/test_session.py's second window). Now they are Qt's from the plot's end on."""
    import pyqtgraph as pg

    from gui.rendering.plot_style import own_menus

    assert _left() == [], "garbage from before this test"
    host, plot = QWidget(), own_menus(pg.PlotWidget())
    QVBoxLayout(host).addWidget(plot)
    plot.cycle = plot  # its wrapper outlives it, as a window's plots' do (their closures refer to them)
    menus = [weakref.ref(obj) for obj in _menus(plot)]  # not to hold them here
    del plot
    host.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # the plot goes, not yet its menus
    del host
    live = lambda: [ref() for ref in menus if ref() is not None and isValid(ref())]
    assert live(), "nothing left to hold: the test no longer sees the gap"
    assert _left() == []
    for _ in range(2):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert live() == []


def test_a_closed_windows_parameter_trees_leave_no_wrapper_of_their_root_item(qapp):
    """Each parameter tree's root item (Qt's, not a QObject) is deleted with the window; a
    wrapper of it left in shiboken's map is what a new C++ object at that address came back as
    (ownership.forget_root_item)."""
    from PySide6.QtWidgets import QTreeWidget

    from gui.main_window import MainWindow

    win = MainWindow()
    roots = [QTreeWidget.invisibleRootItem(tree) for tree in win.parameter_trees.values()]
    assert len(roots) == 4 and all(isValid(root) for root in roots)  # one a tab, the training run's too
    win.close()
    _delete(win)
    assert not any(isValid(root) for root in roots)  # without forget_root_item: all four


def _connections() -> int:
    gc.collect()
    return sum(type(obj) is QMetaObject.Connection for obj in gc.get_objects())


def test_a_closed_window_leaves_no_connection_behind(qapp):
    """PySide6 keeps a QMetaObject.Connection for each signal a constructor's keyword connects
    (``QAction(..., triggered=f)``), after its object is gone: a main window made 31 so, and each
    window the soak opened and closed left them (``widgets.connected`` instead)."""
    from gui.main_window import MainWindow

    _delete(MainWindow())  # the first window's imports and caches
    before = _connections()
    win = MainWindow()
    win.close()
    _delete(win)
    del win
    assert _connections() == before


def test_setting_a_field_leaves_no_weak_reference_behind(qapp):
    """pyqtgraph's items reconnected two signals at every value set, and PySide6 keeps a weak
    reference to a non-QObject receiver for each connection made (gui/parameter_items.py): the
    soak's weak references grew ~400 a minute. The widget still shows the value set in code, and
    the parameter takes what is typed into the widget."""
    from pyqtgraph.parametertree import Parameter, ParameterTree

    params = Parameter.create(name="p", type="group", children=[
        {"name": "x", "type": "float", "value": 1.0},
        {"name": "kind", "type": "list", "value": "a", "limits": ["a", "b"]},
    ])  # fmt: skip
    tree = ParameterTree(showHeader=False)
    tree.setParameters(params, showTop=False)
    x, kind = params.child("x"), params.child("kind")
    items = [next(iter(x.items)), next(iter(kind.items))]
    before = [weakref.getweakrefcount(item) for item in items]
    for k in range(50):
        x.setValue(2.0 + k)
        kind.setValue("ab"[k % 2])
    assert [weakref.getweakrefcount(item) for item in items] == before  # +50 each before the fix
    assert items[0].widget.value() == 51.0 and items[1].widget.currentText() == "b"
    items[0].widget.setValue(7.5)  # as typed: the parameter follows
    assert x.value() == 7.5
    tree.clear()
    tree.deleteLater()
