"""Live updates stay out of the event loop's way (issue 13): the pacer draws one part per turn
and each part at its own pace, the 3D views render one at a time off screen, read back once
the rasteriser has finished (and a grab is always fresh), live curves hold their axes, captions
and tables refill without relayouts."""

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QHBoxLayout, QWidget

from gui.pacing import Pacer


def test_pacer_draws_one_part_per_turn_newest_first_and_flush_draws_all(qapp, qtbot):
    drawn = []
    pacer = Pacer()

    def draw(name):
        drawn.append(name)
        if name == "a":  # a timer started now fires before the pacer's next turn, not after all parts
            QTimer.singleShot(0, lambda: drawn.append("other event"))

    pacer.submit("a", lambda: draw("a"))
    pacer.submit("b", lambda: draw("stale b"))
    pacer.submit("b", lambda: draw("b"))  # replaces the pending draw of b
    pacer.submit("c", lambda: draw("c"))
    assert drawn == [], "submit must not draw"
    qtbot.waitUntil(lambda: "c" in drawn, timeout=20000)
    assert drawn == ["a", "other event", "b", "c"]

    drawn.clear()
    pacer.submit("x", lambda: draw("x"))
    pacer.submit("y", lambda: draw("y"))
    pacer.flush()
    assert drawn == ["x", "y"] and pacer.pending == ()
    pacer.submit("z", lambda: draw("z"))
    pacer.clear()  # a reset: nothing pending may draw afterwards
    qtbot.wait(50)
    assert drawn == ["x", "y"]


def test_pacer_keeps_each_part_to_its_interval(qapp, qtbot):
    """On the pacer's own clock, stopped just short of the interval and then moved onto it: the
    second draw waits through several of the pacer's turns, and runs at the first turn it is due."""
    now = [0.0]
    drawn = []
    pacer = Pacer({"plot": 0.2}, clock=lambda: now[0])
    turns = []
    pacer._timer.timeout.connect(lambda: turns.append(now[0]))
    pacer.submit("plot", lambda: drawn.append(now[0]))
    qtbot.waitUntil(lambda: drawn == [0.0], timeout=10000)
    now[0] = 0.199
    pacer.submit("plot", lambda: drawn.append(now[0]))
    qtbot.waitUntil(lambda: turns.count(0.199) >= 3 or len(drawn) > 1, timeout=10000)
    assert drawn == [0.0], "drawn again before its interval"
    now[0] = 0.2
    qtbot.waitUntil(lambda: len(drawn) == 2, timeout=10000)
    assert drawn == [0.0, 0.2] and pacer.pending == ()


def test_drain_draws_one_part_per_turn_none_held_to_its_interval(qapp, qtbot):
    """A run's result: every part drawn, oldest first, each in a turn of its own (an event posted
    by one part is handled before the next), although each was drawn within its interval."""
    now = [0.0]
    drawn = []
    pacer = Pacer({"plot": 10.0, "curve": 10.0}, clock=lambda: now[0])
    for name in ("plot", "curve"):
        pacer.submit(name, lambda name=name: drawn.append(name))
    qtbot.waitUntil(lambda: len(drawn) == 2, timeout=10000)  # live: drawn, and now within 10 s of it

    def draw(name):
        drawn.append(name)
        QTimer.singleShot(0, lambda: drawn.append(f"event after {name}"))

    drawn.clear()
    for name in ("plot", "curve", "fit"):
        pacer.submit(name, lambda name=name: draw(name))
    pacer.drain()
    assert drawn == [] and pacer.pending == ("plot", "curve", "fit"), "drain must not draw at once"
    qtbot.waitUntil(lambda: pacer.pending == (), timeout=10000)
    qtbot.wait(20)
    assert drawn == ["plot", "event after plot", "curve", "event after curve", "fit", "event after fit"]
    pacer.submit("plot", lambda: drawn.append("live plot"))  # drained: intervals hold again
    qtbot.wait(100)
    assert "live plot" not in drawn and pacer.pending == ("plot",)
    pacer.clear()


def _two_views(qtbot):
    import pyqtgraph.opengl as gl

    from gui.rendering.offscreen_gl import OffscreenGLView

    box = QWidget()
    layout = QHBoxLayout(box)
    views = [OffscreenGLView() for _ in range(2)]
    for view in views:
        view.addItem(gl.GLGridItem())
        layout.addWidget(view)
    box.resize(400, 200)
    box.show()
    qtbot.waitExposed(box)
    qtbot.waitUntil(lambda: all(v.renders for v in views), timeout=5000)
    return box, views


def test_changed_views_render_one_per_turn_and_a_grab_is_fresh(qapp, qtbot):
    box, (first, second) = _two_views(qtbot)
    try:
        order = []
        first.frameSwapped.connect(
            lambda: (order.append("first"), QTimer.singleShot(0, lambda: order.append("other event")))
        )
        second.frameSwapped.connect(lambda: order.append("second"))
        before = (first.renders, second.renders)
        first.setCameraPosition(azimuth=10)  # both change; neither renders on the spot
        second.setCameraPosition(azimuth=20)
        assert (first.renders, second.renders) == before
        qtbot.waitUntil(lambda: "second" in order, timeout=5000)
        assert order == ["first", "other event", "second"]

        from gui.capture import grab_widget

        first.setCameraPosition(azimuth=80)
        stale = first.renders
        picture = grab_widget(box)  # a screenshot or a recorded frame shows the views as they are
        assert first.renders == stale + 1 and not picture.isNull()
        box.hide()
        second.setCameraPosition(azimuth=90)  # hidden: renders when shown again
        qtbot.wait(50)
        hidden = second.renders
        assert second._stale
        box.show()
        qtbot.waitUntil(lambda: second.renders > hidden, timeout=5000)
    finally:
        box.close()


def test_a_picture_is_read_back_a_turn_after_it_is_drawn(qapp, qtbot, monkeypatch):
    """The GUI thread draws a view's picture and goes on: other events run while Mesa's
    rasteriser threads finish it, and only then is it read back. It is a synchronous render's."""
    from gui.rendering import gl_cells

    box, (first, _) = _two_views(qtbot)
    try:
        order = []
        draw, read = gl_cells.GLCells.draw, gl_cells.Drawing.read

        def drawing(cells, view, *args, **kwargs):
            order.append("draw")
            QTimer.singleShot(0, lambda: order.append("other event"))
            return draw(cells, view, *args, **kwargs)

        def reading(picture):
            order.append("read")
            return read(picture)

        monkeypatch.setattr(gl_cells.GLCells, "draw", drawing)
        monkeypatch.setattr(gl_cells.Drawing, "read", reading)
        first.setCameraPosition(azimuth=30)
        qtbot.waitUntil(lambda: "read" in order, timeout=5000)
        assert order == ["draw", "other event", "read"]
        queued = first.grabFramebuffer()
        first.render_now()
        assert order[3:] == ["draw", "read"]  # at once, waiting for the rasteriser
        assert first.grabFramebuffer() == queued
    finally:
        box.close()


def test_live_curves_hold_their_axes_and_finish_fits_them(qapp):
    from gui.present.topology import loss_state
    from gui.views.training_curves import TrainingCurves

    curves = TrainingCurves()
    curves.configure(2, False)
    curves.hold_steps(1000)
    view = curves.loss_plot.getViewBox()
    x_lo, x_hi = view.viewRange()[0]
    assert x_lo < 0 < 1000 < x_hi < 1030, "x spans the whole run from the start"
    step = np.arange(10)
    curves.show_loss(loss_state(step, np.linspace(3.0, 2.0, 10), []), live=True)
    held = view.viewRange()[1]
    assert held[0] <= 2.0 and held[1] >= 3.0
    curves.show_loss(loss_state(step, np.linspace(2.9, 2.1, 10), []), live=True)  # inside: the axis holds still
    assert view.viewRange()[1] == held
    curves.show_loss(loss_state(step, np.linspace(2.9, 2.6, 10), []), live=True)  # narrower: never shrinks
    assert view.viewRange()[1] == held
    curves.show_loss(loss_state(step, np.linspace(9.0, 2.0, 10), []), live=True)  # outside: grows to hold it
    assert view.viewRange()[1][1] >= 9.0
    assert not any(view.autoRangeEnabled())
    curves.finish()
    assert all(view.autoRangeEnabled())
    for plot in (curves.loss_plot, curves.drift_plot):  # parentless: delete them here
        plot.deleteLater()


def test_a_run_s_end_can_fit_one_plot_and_leave_the_other_held(qapp):
    """The run's last turns fit the loss plot and the drift plot one at a time."""
    from gui.present.topology import drift_state, loss_state
    from gui.views.training_curves import TrainingCurves

    curves = TrainingCurves()
    curves.configure(2, False)
    curves.hold_steps(100)
    step = np.arange(10)
    curves.show_loss(loss_state(step, np.linspace(3.0, 2.0, 10), []), live=True)
    curves.show_drift(drift_state(step, np.linspace(0, 1e-3, 20).reshape(10, 2)), live=True)
    loss_view, drift_view = curves.loss_plot.getViewBox(), curves.drift_plot.getViewBox()
    assert not any(loss_view.autoRangeEnabled()) and not any(drift_view.autoRangeEnabled())
    curves.finish(curves.loss_plot)
    assert all(loss_view.autoRangeEnabled()) and not any(drift_view.autoRangeEnabled())
    curves.finish(curves.drift_plot)
    assert all(drift_view.autoRangeEnabled())
    for plot in (curves.loss_plot, curves.drift_plot):  # parentless: delete them here
        plot.deleteLater()


def test_the_invariants_panel_holds_its_room_and_lays_the_room_out_once_a_width(qapp, qtbot):
    """While a run holds room for its longest text, the panel is as tall as that text, and live
    updates that change the shown text's shape do not lay the held text out again."""
    from gui.panels.invariants_panel import InvariantsPanel

    panel = InvariantsPanel()
    panel.resize(300, 600)
    panel.show()
    qtbot.waitExposed(panel)
    try:
        room = "<b>Invariants</b><br>" + "<br>".join(f"line {i}: c = +0.00000, step 0000" for i in range(8))
        set_texts = []
        real_set_text = panel.label.setText
        panel.label.setText = lambda text: (set_texts.append(text), real_set_text(text))[1]
        panel.hold_room(room)
        held = panel.maximumHeight()
        for step in (5, 60, 700):  # each a new shape: digits of another count, a longer line
            panel._set_text(f"<b>Invariants</b><br>step {step}" + "<br>x" * (step % 3))
            assert panel.maximumHeight() == held, "the panel's height changed mid-run"
        assert set_texts.count(room) == 1, f"the held text was laid out {set_texts.count(room)} times"
        panel.fit_text()
        assert panel.maximumHeight() < held, "the run is over: as tall as its own text again"
    finally:
        panel.close()
        panel.deleteLater()


def test_a_drift_curve_is_dashed_while_it_copies_another_and_keeps_its_pen_otherwise(qapp, monkeypatch):
    """A copy of an earlier neuron's drift is dashed, and solid again once they part. A live
    update that changes no copy sets no pen: a new pen makes pyqtgraph draw the curve afresh."""
    import pyqtgraph as pg
    from PySide6.QtCore import Qt

    from gui.present.topology import drift_state
    from gui.views.training_curves import TrainingCurves

    curves = TrainingCurves()
    curves.configure(2, False)
    styles = lambda: [c.opts["pen"].style() for c in curves.drift_curves]  # noqa: E731
    step, parted = np.arange(5.0), np.linspace(0.1, 0.5, 5)
    same = np.stack([parted, parted], 1)
    curves.show_drift(drift_state(step, same), live=True)
    assert styles() == [Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine]
    pens = []
    monkeypatch.setattr(pg.PlotDataItem, "setPen", lambda item, *a, **k: pens.append(item))
    curves.show_drift(drift_state(step, 2 * same), live=True)  # still copies: no pen set
    assert pens == []
    monkeypatch.undo()
    curves.show_drift(drift_state(step, np.stack([parted, parted**2], 1)), live=True)
    assert styles() == [Qt.PenStyle.SolidLine, Qt.PenStyle.SolidLine]
    for plot in (curves.loss_plot, curves.drift_plot):  # parentless: delete them here
        plot.deleteLater()


def test_the_loss_turning_logarithmic_mid_run_keeps_the_step_axis_held(qapp):
    """pyqtgraph's log switch re-enables auto-range; the run's step axis must stay held (left
    to auto-range it followed the data and was redrawn at every later update)."""
    from gui.present.topology import loss_state
    from gui.views.training_curves import TrainingCurves

    curves = TrainingCurves()
    curves.configure(2, False)
    curves.hold_steps(1000)
    view = curves.loss_plot.getViewBox()
    step = np.arange(10)
    curves.show_loss(loss_state(step, np.linspace(3.0, 2.0, 10), []), live=True)
    held_x = view.viewRange()[0]
    curves.show_loss(loss_state(step, np.geomspace(3.0, 0.01, 10), []), live=True)  # spans > a decade: log
    assert curves.loss_plot.getPlotItem().ctrl.logYCheck.isChecked()
    assert view.viewRange()[0] == held_x and not view.autoRangeEnabled()[0]
    curves.finish()
    for plot in (curves.loss_plot, curves.drift_plot):  # parentless: delete them here
        plot.deleteLater()


def test_a_finished_run_s_axis_is_as_wide_as_the_same_plot_drawn_afresh(qapp):
    """A live run's drift axis drew longer labels on the way (0.0002, 0.0004, …) than its final
    range's (0.002, …); finished, it must take the room its labels need, as the same final plot
    drawn at once does (a reopened session): pyqtgraph narrows an axis only by more than 10 px."""
    from gui.present.topology import drift_state
    from gui.views.training_curves import TrainingCurves

    step = np.arange(50)
    ramp = lambda top: np.stack([np.linspace(0, top, 50), np.zeros(50)], 1)  # noqa: E731

    made = []

    def axis_width(states, live: bool) -> int:
        curves = TrainingCurves()
        made.append(curves)
        curves.configure(2, False)
        curves.drift_plot.resize(420, 220)
        curves.drift_plot.show()
        if live:
            curves.hold_steps(50)
        for state in states:
            curves.show_drift(state, live=live)
            curves.drift_plot.grab()  # drawn: the axis measures its labels
            qapp.processEvents()  # the width they asked for is laid out
        curves.finish()
        for _ in range(2):
            curves.drift_plot.grab()
            qapp.processEvents()
        curves.drift_plot.hide()
        return curves.drift_plot.getAxis("left").width()

    final = drift_state(step, ramp(0.009))
    after_a_run = axis_width([drift_state(step, ramp(0.0009)), final], live=True)
    assert after_a_run == axis_width([final], live=False)
    for curves in made:  # parentless: delete them here
        for plot in (curves.loss_plot, curves.drift_plot):
            plot.deleteLater()


def test_a_neuron_caption_keeps_its_height_while_its_digits_change(qapp, qtbot):
    from gui.views.neuron_quadrics import _NeuronCell

    cell = _NeuronCell(0)
    cell.resize(220, 300)
    cell.show()
    qtbot.waitExposed(cell)
    try:
        long = "<b>neuron 1</b> &nbsp; c₁ = -0.09391 (start -0.1) &nbsp;·&nbsp; two sheets, and a flip"
        cell.set_caption(long)
        tall = cell.caption.minimumHeight()
        cell.set_caption("<b>neuron 1</b> &nbsp; c₁ = -0.1")
        assert cell.caption.minimumHeight() == tall > 0, "the caption shrank back: the view would resize"
        cell.resize(600, 300)  # another width wraps differently: fitted afresh
        qtbot.waitUntil(lambda: cell.caption.minimumHeight() < tall, timeout=20000)
    finally:
        cell.close()


def test_refilling_the_steps_table_keeps_the_row_and_announces_nothing(qapp):
    from gui.panels.inspector import InspectorPanel

    panel = InspectorPanel()
    rows = [
        {
            "widths": (2, 1, 1),
            "verdict": "strict minimum",
            "loss": 0.1,
            "grad_norm": 1e-9,
            "min": 0.5,
            "max": 2.0,
            "n_zero": 0,
            "n_negative": 0,
            "description": f"step {i}",
        }
        for i in range(5)
    ]
    panel.show_steps(rows)
    panel.steps.setCurrentCell(2, 0)
    announced = []
    panel.steps.itemSelectionChanged.connect(lambda: announced.append(1))
    panel.show_steps(rows[:4])
    assert panel.steps.rowCount() == 4 and panel.steps.currentRow() == 2 and announced == []


def test_a_view_resized_again_and_again_keeps_one_framebuffer(qapp, qtbot):
    """Each size a layout gives a 3D view needs its own framebuffer; those of the sizes it left
    are deleted (kept, they made the soak's window grow by ~30 MB a minute)."""
    box, views = _two_views(qtbot)
    try:
        sizes = set()
        for width, height in [(500, 260), (640, 300), (420, 240), (700, 330)]:
            before = [v.renders for v in views]
            box.resize(width, height)
            qtbot.waitUntil(lambda: all(v.renders > n for v, n in zip(views, before)), timeout=5000)
            for view in views:
                size = (view.deviceWidth(), view.deviceHeight())
                sizes.add(size)
                assert [key[1:] for key in view._cells._fbos] == [size]
                assert view._picture[2] == size
        assert len(sizes) == 4  # each resize gave the views a size of their own: kept, four framebuffers
    finally:
        box.close()
