"""Paper B's story as a clip: λ of the last split walks the degenerate path out of I.

At the λ the construction chose, inside Theorem 9's interval I, the embedded point is one of a
line of minima: no random direction dips below L*. Moving λ along the path keeps the loss
exactly L* (panel b), and once λ leaves I the same point is a saddle: directions dip (panel c).
The slices at every row are computed before the first frame (``walk_of``: the clip's frames then
depend on the run only), and the scene poses its own three plots, never the window's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job
from engine.minima.pipeline import Figure3, walk_endpoints, walk_job

from ..present.minima import slices_data, split_label
from ..rendering.plot_style import set_plot_fonts
from ..views.curves_view import CurvesView
from ..views.degenerate_path_view import DegeneratePathView
from ..views.slice_view import SliceView
from ..views.spectral_density_view import SpectralDensityView
from ..views.spectrum_view import SpectrumView
from .model import TITLE_CELL, Cell, Clip, KeyFrame, Timing, even_size
from .off_screen import adopt_off_screen, dispose_widgets

ROWS = 61  # λ values along the walk: one slice computation each
CLIP_POINTS = 41  # t values per slice curve: smooth at 1080p, 2.5× cheaper than the panel's 101
STORY_CAPTION = "{where}\nλ = {lam}   ·   loss {loss} (= L* all along the path)   ·   λ_min(H) ≈ {hmin}   ·   {dips}"


@dataclass(frozen=True)
class Walk:
    """The walk, presented in its job (off the GUI thread): λ at each row, the slices there as
    the slice view draws them, one y range for every row (so the curves move and the axes do
    not) and λ_min(H) along the path, interpolated at each row."""

    lams: np.ndarray
    rows: tuple  # slices_data of each row
    frame: tuple[float, float]
    hmin: np.ndarray


def walk_of(workspace, rows: int = ROWS) -> Job[Walk]:
    """The job that slices the landscape at each λ of the walk and presents the slices: seconds
    of work, run in place headless and on a worker in the window, between the engine's walk end
    points (engine.minima.pipeline.walk_endpoints). EngineInputError before any work."""
    fig = workspace.figure
    if not isinstance(fig, Figure3):
        raise EngineInputError("the minima clip films a finished Fig. 3 construction; run a minima preset first")
    lams = np.linspace(*walk_endpoints(fig), rows)
    slices = replace(workspace.slice_settings(), P=CLIP_POINTS)
    return _presented_walk(fig, lams, walk_job(fig, lams, fig.path.split, slices, CLIP_POINTS))


def _presented_walk(fig: Figure3, lams: np.ndarray, job: Job[tuple]) -> Job[Walk]:
    cuts = yield from job
    low = min(min(float(np.min(c.envelope)), c.L_star) for c in cuts)
    top = max(float(np.nanpercentile(c.curves, 40)) for c in cuts)
    pad = 0.08 * max(top - low, 1e-12)
    path = fig.path
    order = np.argsort(path.lam)
    hmin = np.interp(lams, path.lam[order], path.hessian_min[order])
    frame = (low - pad, top + pad)
    # Each row framed in the common range: the view counts its curves for the box it is given
    # (set after, the range cut the density off at each row's own top until a recount came).
    rows = tuple({**data, "frame": [*data["frame"][:2], *frame]} for data in map(slices_data, cuts))
    return Walk(lams, rows, frame, hmin)


class MinimaScene:
    """Rows are the walk's λ values (``walk_of``). It draws only view data: the walk's, and the
    tab's drawn path, descent and curvature panels, each in a plot of its own."""

    def __init__(self, workspace, walk: Walk):
        fig = workspace.figure
        self.workspace = workspace
        self.views = []  # no 3D view in this story
        path = fig.path
        self.interval = path.interval
        self.walk, self.lams, self.hmin = walk, walk.lams, walk.hmin
        self.loss = float(path.loss[0])
        # The clip's own plots, sized by the compositor: the window's stay as they are.
        self.path_view = DegeneratePathView()
        self.path_view.show_path(
            path.lam,
            path.loss,
            path.hessian_min,
            list(path.interval.parts),
            split_label(fig.construction.splits[path.split]),
        )
        self.slice_view = SliceView("slices at the moving point")
        self.descent_view = CurvesView("(d) descent direction at the saddle", "t", "loss L")
        descent = workspace.shown.get("descent")
        if descent is not None:  # (d): where the saddle leads, as the tab draws it
            self.descent_view.show_curves(descent["curves"], note=descent["note"], frame=descent["frame"])
        # The inspector's curvature panel as the tab shows it: the spectrum at the slider's λ or,
        # past the full-Hessian limit, the spectral density.
        kind, data = workspace.curvature() or ("spectrum", None)
        self.curvature = SpectrumView() if kind == "spectrum" else SpectralDensityView()
        if data is not None:
            self.curvature.show_stage(data)
        own = {
            "path": self.path_view,
            "slices": self.slice_view,
            "descent": self.descent_view,
            "spectrum": self.curvature,
        }
        for plot in own.values():
            set_plot_fonts(plot)
            adopt_off_screen(plot, workspace)
        self.widgets = self._own = own
        self._shown = None

    # ------------------------------------------------------------------ the Timeline's view
    @property
    def steps(self) -> np.ndarray:
        return np.arange(len(self.lams))

    def event_steps(self) -> list[int]:
        """The row where λ leaves I: the clip slows down there."""
        inside = [self.interval.contains(float(lam)) for lam in self.lams]
        return [i for i in range(1, len(inside)) if inside[i] != inside[i - 1]]

    def row_of(self, lam: float) -> int:
        """The walk's row nearest ``lam`` (the window's λ slider, for a key frame)."""
        return int(np.argmin(np.abs(self.lams - lam)))

    def default_cameras(self) -> list[dict]:
        return []

    def camera_of(self, view) -> dict:
        return {}

    def user_cameras(self) -> list[dict]:
        return []

    def apply_cameras(self, cameras) -> None:
        pass

    # ------------------------------------------------------------------ posing
    def show(self, row: int) -> None:
        for plot in self._own.values():
            plot.show()  # off screen; again after a close, for the next render of this scene
        if row == self._shown:
            return
        lam = float(self.lams[row])
        self.slice_view.set_title(f"slices at λ = {lam:.3f}")
        self.slice_view.show_slices(**self.walk.rows[row])
        self.path_view.set_current(lam)
        self._shown = row

    def forget(self) -> None:
        self._shown = None

    def close(self) -> None:
        """Nothing of the window's was changed; the clip's own plots are hidden until the scene
        poses again (a scene renders again after a close: the dock's next preview or render)."""
        for plot in self._own.values():
            plot.hide()

    def dispose(self) -> None:
        """Delete the clip's own plots now (on the GUI thread), when the scene is dropped;
        otherwise they go with the workspace, their Qt parent."""
        dispose_widgets(self._own.values())
        self._own = {}

    # ------------------------------------------------------------------ words
    def facts(self, row: int) -> dict:
        lam, cut = float(self.lams[row]), self.walk.rows[row]
        inside = self.interval.contains(lam)
        where = (
            f"inside I = {self.interval}: one of a line of minima at the same loss"
            if inside
            else f"outside I = {self.interval}: the same loss, now a saddle"
        )
        return {
            "lam": f"{lam:.3f}",
            "where": where,
            "loss": f"{self.loss:.6g}",
            "hmin": f"{self.hmin[row]:.2e}",
            "dips": f"{cut['n_below']} of {cut['losses'].shape[0]} random directions dip below L*",
        }

    def headers(self, row: int) -> list:
        return []


def minima_story_clip(preset: str, size=(1920, 1080), fps: int = 30, seconds: float = 8.0) -> Clip:
    """Panel (b)'s marker travels along λ while (c) re-slices at each λ; when λ reaches the
    saddle, (d) appears: the descent direction the slices hint at. A hold at both ends."""
    from ..presets import preset_named

    found = preset_named(preset)
    kind = found.values.get("experiment", {}).get("kind", "deep")
    if kind not in ("deep", "shallow"):  # checked before the run, which may take minutes
        raise EngineInputError(
            f"preset {preset!r} shows no degenerate path to walk; the minima "
            "clip films the Fig. 3 presets (nonattr-fig3, nonattr-shallow, …)"
        )
    layout = (
        TITLE_CELL,
        Cell("path", (0.0, 0.07, 0.32, 0.79)),
        Cell("slices", (0.34, 0.07, 0.36, 0.79)),
        Cell("descent", (0.72, 0.07, 0.28, 0.79)),
        Cell("caption", (0.0, 0.86, 1.0, 0.14)),
    )
    walking = ("title", "path", "slices", "caption")  # (d) only once λ has arrived
    hold = min(1.5, seconds / 5)
    keys = (
        KeyFrame(0.0, 0, None, walking, STORY_CAPTION),
        KeyFrame(hold, 0, None, walking, STORY_CAPTION),
        KeyFrame(seconds - hold, "end", None, None, STORY_CAPTION),
        KeyFrame(float(seconds), "end", None, None, STORY_CAPTION),
    )
    return Clip(preset, even_size(size), fps, found.title, layout, keys, Timing("smoothstep", 3.0, 1))
