"""A plane's heatmap keeps a map near square wherever it is shown: paper B's 2-D slice in the minima
tab's column and the toolkit's plane page, at 1600 × 960, in both modes. Side by side with its
surface in the minima column, the map was 145 × 530 px."""

import math

import pytest
from PySide6.QtWidgets import QBoxLayout, QStackedWidget, QTabWidget

from gui.views.plane_view import side_by_side


def bring_forward(view) -> None:
    """Make every tab page that holds ``view`` the current one."""
    page = view
    while page.parentWidget() is not None:
        stack = page.parentWidget()
        if isinstance(stack, QStackedWidget) and isinstance(stack.parentWidget(), QTabWidget):
            stack.parentWidget().setCurrentWidget(page)
        page = stack


def map_size(view) -> tuple[float, float]:
    """The heatmap's data area in pixels (its view box)."""
    box = view.heatmap.getViewBox().sceneBoundingRect()
    return box.width(), box.height()


def laid_out(view) -> bool:
    """The view box has taken the heatmap widget's new size: inside it, less its frame (axes, colour
    bar and title: at most 250 px either way, in presentation type too)."""
    width, height = map_size(view)
    heat = view.heatmap.size()
    return heat.width() - 250 <= width <= heat.width() and heat.height() - 250 <= height <= heat.height()


def off_square(view, qtbot, direction=None) -> float:
    """|log(width / height)| of the heatmap's map, laid out in ``direction`` if given."""
    if direction is not None:
        view.arrangement.setDirection(direction)
        view.arrangement.activate()  # the widgets' geometry now; the plot's own layout follows in events
    qtbot.waitUntil(lambda: laid_out(view), timeout=5000)
    width, height = map_size(view)
    return abs(math.log(width / height))


@pytest.mark.parametrize("presentation", [False, True])
@pytest.mark.parametrize("tab", ["minima", "landscape"])
def test_the_plane_map_is_the_squarer_of_the_two_arrangements(window, qtbot, tab, presentation):
    window.set_look(presentation=presentation, theme="light")
    if presentation:
        window.setFixedSize(1600, 960)
    window.show_workspace(tab)
    view = window.workspaces[tab].plane
    bring_forward(view)
    qtbot.waitUntil(lambda: view.isVisible() and laid_out(view), timeout=5000)
    chosen, direction = off_square(view, qtbot), view.arrangement.direction()
    other = (
        QBoxLayout.Direction.TopToBottom
        if direction == QBoxLayout.Direction.LeftToRight
        else QBoxLayout.Direction.LeftToRight
    )
    assert chosen <= off_square(view, qtbot, other) + 0.05, (tab, direction)
    if tab == "minima" and not presentation:  # the column that drew a 145 × 530 map: now wider than tall
        assert off_square(view, qtbot, direction) < math.log(2)
        assert view.surface_view.geometry().top() >= view.heatmap.geometry().bottom()
    window.set_look(presentation=False, theme="light")


def test_side_by_side_picks_the_squarer_map():
    assert not side_by_side(570, 590)  # a column: one above the other
    assert side_by_side(1200, 500)  # a wide page: side by side
    assert side_by_side(0, 0)  # not laid out yet: no division by zero, the default arrangement
