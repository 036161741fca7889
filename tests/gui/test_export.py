"""File ▸ Export from a real window: each file, opened again, holds what the view drew (the curves'
points in the SVG and the CSV, the plot's size and ink in the PNG, the 3D view's own picture)."""

import csv
import xml.etree.ElementTree as ET

import imageio.v3 as iio
import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QFileDialog, QInputDialog

from gui import export

from .conftest import assert_not_blank, wait_until_idle
from .drawn import plotted

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def trained(window, qtbot):
    window.load_preset("fig3-free", steps=40)
    wait_until_idle(qtbot, window)
    return window


def export_from_menu(window, monkeypatch, label: str, path, size_choice: int = -1) -> None:
    """What File ▸ Export ▸ label does, with the dialogs answered: save to ``path`` (and for a 3D
    view the size at ``size_choice`` in the list offered, by default the view's own)."""
    assert label in export.export_targets(window.workspace), list(export.export_targets(window.workspace))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(path), ""))
    monkeypatch.setattr(QInputDialog, "getItem", lambda parent, title, text, items, *args: (items[size_choice], True))
    export.export_interactively(window, label)
    assert window.message_bar.text == f"Exported {label} to {path}", window.message_bar.text


def svg_paths(path) -> list[np.ndarray]:
    """Each <path>'s vertices: pyqtgraph writes a curve's points in data coordinates, M x,y L x,y …"""
    out = []
    for element in ET.parse(path).getroot().iter(f"{SVG}path"):
        d = element.get("d", "").replace("M", " ").replace("L", " ").split()
        if len(d) > 2 and all("," in p for p in d):
            out.append(np.array([[float(v) for v in p.split(",")] for p in d]))
    return out


def test_a_plot_exports_as_png_svg_and_csv_holding_its_curves(trained, monkeypatch, tmp_path):
    window = trained
    plot = window.workspace.plot_widgets()["invariant drift"]
    curves = [np.column_stack(item.getData()) for item in plotted(plot) if item.xData is not None]
    assert len(curves) == 2  # one drift curve per neuron

    export_from_menu(window, monkeypatch, "Plot: invariant drift", tmp_path / "drift.svg")
    paths = svg_paths(tmp_path / "drift.svg")
    for points in curves:  # SVG keeps six significant digits
        scale = np.abs(points).max(axis=0)
        matches = [p for p in paths if p.shape == points.shape and np.allclose(p, points, rtol=1e-5, atol=1e-5 * scale)]
        assert matches, f"no path holds the curve of {len(points)} points"

    export_from_menu(window, monkeypatch, "Plot: invariant drift", tmp_path / "drift.csv")
    with open(tmp_path / "drift.csv") as f:
        rows = list(csv.reader(f))
    table = np.array(rows[1:], dtype=float)
    for k, points in enumerate(curves):  # every digit: a drift of 1e-12 must not export as 0
        np.testing.assert_array_equal(table[:, 2 * k : 2 * k + 2], points)

    export_from_menu(window, monkeypatch, "Plot: invariant drift", tmp_path / "drift.png")
    image = QImage(str(tmp_path / "drift.png"))
    rect = plot.getPlotItem().sceneBoundingRect()
    assert (image.width(), image.height()) == (round(rect.width()), round(rect.height()))
    pixels = image.convertToFormat(QImage.Format.Format_RGBA8888)
    rgba = np.frombuffer(pixels.constBits(), np.uint8).reshape(image.height(), image.width(), 4)
    assert_not_blank(rgba, min_std=2.0)
    for item in plotted(plot):  # each curve's own ink is in the picture
        pen = item.opts["pen"]
        ink = np.array(pen.color().getRgb()[:3]) if hasattr(pen, "color") else None
        if ink is not None and item.xData is not None:
            near = np.abs(rgba[..., :3].astype(int) - ink).max(axis=2) < 30
            assert near.sum() > 50, f"the curve's colour {ink} is missing"


def test_a_3d_view_exports_its_own_picture(trained, monkeypatch, tmp_path):
    window = trained
    view = window.workspace.gl_views()[0]
    # What the view shows now: the message bar the export opens then takes some of its height.
    grab = view.grabFramebuffer().convertToFormat(QImage.Format.Format_RGB888)
    shown = np.frombuffer(grab.constBits(), np.uint8).reshape(grab.height(), grab.bytesPerLine())
    shown = shown[:, : 3 * grab.width()].reshape(grab.height(), grab.width(), 3).astype(float)
    export_from_menu(window, monkeypatch, "3D view", tmp_path / "view.png")  # at the view's own size
    exported = iio.imread(tmp_path / "view.png")[..., :3].astype(float)
    assert_not_blank(np.asarray(exported))
    assert exported.shape == shown.shape
    # The same scene and framing; only the export's multisampling smooths the edges.
    difference = np.abs(shown - exported).max(axis=2)
    assert np.mean(difference > 48) < 0.01, f"{100 * np.mean(difference > 48):.1f} % of pixels differ"
    # A named size renders that many pixels.
    export_from_menu(window, monkeypatch, "3D view", tmp_path / "view_hd.png", size_choice=0)
    w, h = list(export.STANDARD_SIZES.values())[0]
    assert iio.imread(tmp_path / "view_hd.png").shape[:2] == (h, w)


def test_a_bad_suffix_is_one_line_in_the_message_bar(trained, monkeypatch, tmp_path):
    window = trained
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(tmp_path / "drift.pdf"), ""))
    export.export_interactively(window, "Plot: invariant drift")
    assert window.message_bar.text == "drift.pdf: export a plot as .png, .svg or .csv"
    assert not (tmp_path / "drift.pdf").exists()
