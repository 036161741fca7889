"""Paper B's story as a clip: λ of the last split walks the degenerate path out of I.

At the λ the construction chose, inside Theorem 9's interval I, the embedded point is one of a
line of minima: no random direction dips below L*. Moving λ along the path keeps the loss
exactly L* (panel b), and once λ leaves I the same point is a saddle: directions dip (panel c).
The slices at every row are computed before the first frame (``walk_of``: the clip's frames then
depend on the run only), and the scene poses its own three plots, never the window's.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job
from engine.minima.pipeline import Figure3, walk_endpoints, walk_job

from ..present.minima import slices_data, split_label, stages
from ..views.curves_view import CurvesView
from ..views.degenerate_path_view import DegeneratePathView
from ..views.plot_style import set_plot_fonts
from ..views.slice_view import SliceView
from .model import TITLE_CELL, Cell, Clip, KeyFrame, Timing, even_size
from .scene import adopt_off_screen, dispose_widgets

ROWS = 61  # λ values along the walk: one slice computation each
CLIP_POINTS = 41  # t values per slice curve: smooth at 1080p, 2.5× cheaper than the panel's 101
STORY_CAPTION = "{where}\nλ = {lam}   ·   loss {loss} (= L* all along the path)   ·   λ_min(H) ≈ {hmin}   ·   {dips}"


def walk_of(workspace, rows: int = ROWS) -> tuple[np.ndarray, Job]:
    """The λ values of the walk, and the job that slices the landscape at each: seconds of work,
    run in place headless and on a worker in the window, between the engine's walk end points
    (engine.minima.pipeline.walk_endpoints)."""
    fig = workspace.figure
    if not isinstance(fig, Figure3):
        raise EngineInputError("the minima clip films a finished Fig. 3 construction; run a minima preset first")
    lams = np.linspace(*walk_endpoints(fig), rows)
    slices = replace(workspace.slice_settings(), P=CLIP_POINTS)
    return lams, walk_job(fig, lams, fig.path.split, slices, CLIP_POINTS)


class MinimaScene:
    """Rows are the walk's λ values (``walk_of``); ``cuts`` the slices at each."""

    def __init__(self, workspace, lams: np.ndarray, cuts):
        fig = workspace.figure
        self.workspace = workspace
        self.views = []  # no 3D view in this story
        path, split = fig.path, fig.path.split
        self.interval = path.interval
        self.lams, self.cuts = np.asarray(lams, float), list(cuts)
        order = np.argsort(path.lam)
        self.hmin = np.interp(self.lams, path.lam[order], path.hessian_min[order])
        self.loss = float(path.loss[0])
        # The clip's own plots, sized by the compositor: the window's stay as they are.
        self.path_view = DegeneratePathView()
        self.path_view.show_path(
            path.lam,
            path.loss,
            path.hessian_min,
            list(path.interval.parts),
            split_label(fig.construction.splits[split]),
        )
        self.slice_view = SliceView("slices at the moving point")
        self.descent_view = CurvesView("(d) descent direction at the saddle", "t", "loss L")
        descent = stages(fig, {}).get("descent")
        if descent is not None:  # (d): where the saddle leads
            self.descent_view.show_curves(descent["curves"], note=descent["note"], frame=descent["frame"])
        own = {"path": self.path_view, "slices": self.slice_view, "descent": self.descent_view}
        for plot in own.values():
            set_plot_fonts(plot)
            adopt_off_screen(plot, workspace)
        # The inspector's spectrum is the window's own view: the compositor resizes it for the
        # render and puts it back, as it does the topology tab's invariants panel.
        self.widgets = own | {"spectrum": workspace.spectrum}
        self._own = own
        self._frame = self._common_frame()
        self._shown = None

    def _common_frame(self) -> tuple[float, float]:
        """One y range for every row, so the curves move and the axes do not."""
        low = min(min(float(np.min(c.envelope)), c.L_star) for c in self.cuts)
        top = max(float(np.nanpercentile(c.curves, 40)) for c in self.cuts)
        pad = 0.08 * max(top - low, 1e-12)
        return low - pad, top + pad

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

    def apply_cameras(self, cameras) -> None:
        pass

    # ------------------------------------------------------------------ posing
    def show(self, row: int) -> None:
        for plot in self._own.values():
            plot.show()  # off screen; again after a close, for the next render of this scene
        if row == self._shown:
            return
        cut, lam = self.cuts[row], float(self.lams[row])
        self.slice_view.set_title(f"slices at λ = {lam:.3f}")
        self.slice_view.show_slices(**slices_data(cut))
        self.slice_view.setYRange(*self._frame, padding=0)
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
        lam, cut = float(self.lams[row]), self.cuts[row]
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
            "dips": f"{cut.n_below} of {cut.curves.shape[0]} random directions dip below L*",
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
