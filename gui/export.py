"""Export what is on screen: 2-D plots as PNG, SVG or their data as CSV (pyqtgraph's
exporters), and a 3D view as PNG at any resolution (rendered off-window, not a screen grab).
"""

from __future__ import annotations

from pathlib import Path

import pyqtgraph.exporters as exporters
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QInputDialog

from engine.core.errors import EngineInputError

from .capture import STANDARD_SIZES, render_gl
from .ownership import own_parameters

CSV_DIGITS = 340  # past the point: the smallest subnormal double, 5e-324, needs 324 of them
PLOT_FORMATS = {".png": exporters.ImageExporter, ".svg": exporters.SVGExporter, ".csv": exporters.CSVExporter}


def export_plot(plot, path, width: int | None = None) -> Path:
    """Write ``plot`` (a PlotWidget) as PNG, SVG or CSV, chosen by the file's suffix."""
    path = Path(path)
    kind = PLOT_FORMATS.get(path.suffix.lower())
    if kind is None:
        raise EngineInputError(f"{path.name}: export a plot as .png, .svg or .csv")
    exporter = kind(plot.getPlotItem())
    # The exporter's options are parentless QObjects linked in Python only: a holder deleted
    # here, on the GUI thread, takes them along instead of the cycle collector.
    holder = QObject()
    own_parameters(exporter.parameters(), holder)
    if width and kind is exporters.ImageExporter:
        exporter.parameters()["width"] = int(width)  # the height follows the plot's aspect
    if kind is exporters.CSVExporter:
        # pyqtgraph writes digits after the point (10 by default, so a drift of 1e-12 came out as
        # 0.0000000000); this many keep every double's shortest round-trip digits.
        exporter.parameters()["precision"] = CSV_DIGITS
    try:
        exporter.export(str(path))
    except ValueError:
        if kind is not exporters.SVGExporter:
            raise
        _qt_svg(plot, path)  # pyqtgraph 0.14 fails on some paths (e.g. log-scale curves)
    finally:
        holder.deleteLater()
    if not path.exists():
        raise EngineInputError(f"could not write {path}")
    return path


def _qt_svg(plot, path: Path) -> None:
    from PySide6.QtCore import QRectF, QSize
    from PySide6.QtGui import QPainter
    from PySide6.QtSvg import QSvgGenerator

    item = plot.getPlotItem()
    rect = item.sceneBoundingRect()
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(int(rect.width()), int(rect.height())))
    generator.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
    painter = QPainter(generator)
    plot.scene().render(painter, QRectF(0, 0, rect.width(), rect.height()), rect)
    painter.end()


def export_gl(view, path, size: tuple[int, int]) -> Path:
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise EngineInputError(f"{path.name}: export a 3D view as .png")
    import imageio.v3 as iio  # on first export: the window opens without it

    iio.imwrite(path, render_gl(view, size))
    return path


def export_targets(workspace) -> dict:
    """What the Export menu offers for a tab: label -> (kind, widget)."""
    targets = {}
    for i, view in enumerate(workspace.gl_views()):
        targets[f"3D view {i + 1}" if i else "3D view"] = ("3d", view)
    for title, plot in workspace.plot_widgets().items():
        targets[f"Plot: {title}"] = ("plot", plot)
    return targets


def export_interactively(window, label: str) -> None:
    """Ask for a file (and a size for 3D), export, and report in the message bar."""
    kind, widget = export_targets(window.workspace)[label]
    stem = label.split(": ")[-1].replace(" ", "_").lower()
    try:
        if kind == "plot":
            path, _ = QFileDialog.getSaveFileName(
                window, f"Export {label}", f"{stem}.png", "PNG image (*.png);;SVG vector (*.svg);;CSV data (*.csv)"
            )
            if path:
                export_plot(widget, path)
        else:
            own = f"view size ({widget.width()}×{widget.height()})"
            choice, ok = QInputDialog.getItem(
                window, "3D export size", "Resolution", list(STANDARD_SIZES) + [own], 0, False
            )
            if not ok:
                return
            path, _ = QFileDialog.getSaveFileName(window, f"Export {label}", f"{stem}.png", "PNG image (*.png)")
            if path:
                export_gl(widget, path, STANDARD_SIZES.get(choice, (widget.width(), widget.height())))
    except (EngineInputError, OSError) as error:
        window.message_bar.show_error(str(error))
        return
    if path:
        window.message_bar.show_info(f"Exported {label} to {path}")
