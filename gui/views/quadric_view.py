"""3D view of one neuron's parameters θ_k = (w₁, w₂, v) on its invariant hyperquadric Q(c_k).

Also serves as a labelled three-coordinate *projection* when the neuron lives in more than
three dimensions; then no surface is drawn, because the shadow of Q(c) is not a surface.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pyqtgraph.opengl as gl
from OpenGL import GL
from PySide6.QtCore import Signal
from PySide6.QtGui import QFont

from engine.topology.quadrics import quadric_sheets

from ..style import neuron_color, theme_colors
from .camera import camera_of, set_camera
from .offscreen_gl import OffscreenGLView

MAX_SHOWN_POINTS = 1500  # per neuron; the stored trajectory keeps every row
# Surfaces are drawn first and do not write depth, so the trajectory lying *on* the surface is
# never hidden by z-fighting or by the translucent sheet in front of it.
# The separate alpha factors keep the framebuffer opaque; otherwise the window compositor
# shows the widget behind through every translucent pixel.
_BLEND = (GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA, GL.GL_ONE, GL.GL_ONE_MINUS_SRC_ALPHA)
_SURFACE_GL = {
    GL.GL_DEPTH_TEST: True,
    GL.GL_BLEND: True,
    GL.GL_CULL_FACE: False,
    "glBlendFuncSeparate": _BLEND,
    "glDepthMask": (False,),
}
_LINE_GL = {
    GL.GL_DEPTH_TEST: True,
    GL.GL_BLEND: True,
    GL.GL_CULL_FACE: False,
    "glBlendFuncSeparate": _BLEND,
    "glDepthMask": (True,),
}
TIME_COLORMAP = pg.colormap.get("viridis")
# viridis ends in a pale yellow that vanishes on a light surface (the path seemed to stop short of
# its end marker) and starts in a near-black purple that vanishes on a dark one: use its middle.
TIME_RANGE = (0.12, 0.82)
FORBIDDEN_ALPHA = 0.07  # the sheet a locked neuron can never reach


def time_colors(fraction: np.ndarray, mode: str = "float"):
    lo, hi = TIME_RANGE
    return TIME_COLORMAP.map(lo + (hi - lo) * np.clip(fraction, 0, 1), mode=mode)


def decimate(n: int, limit: int = MAX_SHOWN_POINTS) -> np.ndarray:
    """Row indices to draw: evenly spaced, always the first and the newest."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(int))


def _rgba(k: int, alpha: float) -> tuple:
    r, g, b, _ = neuron_color(k).getRgbF()
    return (r, g, b, alpha)


_UNIT_SPHERE = gl.MeshData.sphere(rows=8, cols=16, radius=1.0)


def smooth_mesh(vertices: np.ndarray, faces: np.ndarray) -> gl.MeshData:
    """MeshData with its smooth vertex normals already computed, in numpy.

    pyqtgraph computes them at the first paint after every change in a Python loop over the
    vertices, which made moving markers and re-meshed surfaces the bulk of a frame's time.
    Same normals: the sum of the adjacent faces' (area-weighted) normals, normalised.
    """
    mesh = gl.MeshData(vertexes=np.asarray(vertices, dtype=np.float32), faces=faces)
    normals = np.zeros(mesh.vertexes().shape, dtype=np.float32)
    if len(faces):
        face_normals = mesh.faceNormals()
        for corner in range(3):
            np.add.at(normals, faces[:, corner], face_normals)
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        normals = np.divide(normals, length, out=np.zeros_like(normals), where=length > 0)
    mesh._vertexNormals = normals
    return mesh


class SphereMarkers(gl.GLMeshItem):
    """Lit spheres at given points, sized in scene units.

    Point sprites (GLScatterPlotItem in pixel mode) vanish from off-window renders, which is
    what recordings and 3D exports use; meshes render the same everywhere.
    """

    def __init__(self, relative_radius: float, color: tuple):
        super().__init__(meshdata=gl.MeshData(), color=color, shader="shaded", smooth=True, glOptions=_LINE_GL)
        self.relative_radius = relative_radius
        self.extent = 2.0
        self.pos = np.zeros((0, 3), dtype=np.float32)

    def set_positions(self, points):
        self.pos = np.asarray(points, dtype=np.float32).reshape(-1, 3)
        vertices = _UNIT_SPHERE.vertexes() * (self.relative_radius * self.extent)
        faces = _UNIT_SPHERE.faces()
        n = len(self.pos)
        self.setMeshData(
            meshdata=smooth_mesh(
                (vertices[None] + self.pos[:, None]).reshape(-1, 3),
                (faces[None] + len(vertices) * np.arange(n)[:, None, None]).reshape(-1, 3),
            )
        )
        self.setVisible(n > 0)


class QuadricView(OffscreenGLView):
    camera_moved = Signal(object)  # self, after the user turned or zoomed the camera

    def __init__(self, neuron: int = 0, parent=None):
        super().__init__(parent)
        self.neuron = neuron
        self.extent = 2.0
        self.setBackgroundColor(pg.mkColor(theme_colors()["gl"]))
        self.opts["fov"] = 40
        # Re-mesh only when c moved this much (× extent²): a live run then rebuilds no mesh
        # per frame. Clips set a mesh quantum instead (see set_quadric).
        self.remesh_tolerance = 2e-3
        self.mesh_quantum: float | None = None
        self._meshed_c: float | None = None
        self._ghost_c: float | None = None
        self.locked_sign = 0  # ±1 when the neuron is locked on the sheet of that output sign
        self._surface: list[gl.GLMeshItem] = []
        self._ghost: list[gl.GLMeshItem] = []
        self._frame: list = []
        self._ink = pg.mkColor(theme_colors()["fg"])  # axes, grid and labels; see set_ink
        self._alphas = self._surface_alphas()
        self.barrier = gl.GLMeshItem(
            meshdata=gl.MeshData(), color=(0.3, 0.3, 0.3, 0.07), shader=None, glOptions=_SURFACE_GL
        )
        self.barrier_edge = gl.GLLinePlotItem(
            color=(0.35, 0.35, 0.35, 0.6), width=1.5, mode="line_strip", glOptions=_LINE_GL
        )
        self.trajectory = gl.GLLinePlotItem(width=3, antialias=True, mode="line_strip", glOptions=_LINE_GL)
        # Radii as fractions of the frame's extent, so markers look the same at any zoom of data.
        self.start_marker = SphereMarkers(0.028, (0.15, 0.15, 0.15, 1))
        self.head_marker = SphereMarkers(0.042, (0.85, 0.1, 0.1, 1))
        self.flip_markers = SphereMarkers(0.05, (1.0, 0.75, 0.0, 1))
        for item in (self.barrier, self.barrier_edge):
            item.setDepthValue(-5)
            item.setVisible(False)
            self.addItem(item)
        for item in (self.trajectory, self.flip_markers, self.start_marker, self.head_marker):
            item.setDepthValue(10)
            self.addItem(item)
        lock_font = QFont()
        lock_font.setPointSize(13)
        lock_font.setBold(True)
        self.lock_label = gl.GLTextItem(pos=(0, 0, 0), text="", font=lock_font)
        self.lock_label.setDepthValue(12)
        self.lock_label.setVisible(False)
        self.addItem(self.lock_label)
        self.set_frame(2.0, ("w₁", "w₂", "v"))

    # ---------------------------------------------------------------- scene frame
    def _ink_rgba(self, alpha: int) -> tuple:
        return (self._ink.red(), self._ink.green(), self._ink.blue(), alpha)

    def _surface_alphas(self) -> tuple[float, float]:
        """(surface, ghost) opacity: a dark background needs denser surfaces to show them, and
        the ghost of Q(c(0)) must stay visible next to the surface it left."""
        dark = self._ink.lightnessF() > 0.5
        return (0.5, 0.45) if dark else (0.34, 0.4)

    def set_ink(self, color) -> None:
        """Recolour axes, grid and labels for the theme (dark ink vanishes on a dark view)."""
        self._ink = pg.mkColor(color)
        self._alphas = self._surface_alphas()
        for sheet, item in enumerate(self._surface):
            c = 0.0 if self._meshed_c is None else self._meshed_c
            item.setColor(_rgba(self.neuron, self._sheet_alpha(c, sheet, self._alphas[0])))
        self.lock_label.setData(color=self._ink_rgba(255))
        for item in self._ghost:
            item.opts["edgeColor"] = self._ghost_rgba(self._alphas[1])
            item.meshDataChanged()
        for item in self._frame:
            if isinstance(item, gl.GLTextItem):
                item.setData(color=self._ink_rgba(255))
            elif isinstance(item, gl.GLGridItem):
                item.setColor(self._ink_rgba(35))
            else:
                item.setData(color=pg.mkColor(self._ink_rgba(180)))

    def set_frame(self, extent: float, labels: tuple[str, str, str]):
        """Axes through the origin, a floor grid and axis names, sized to ``extent``."""
        for item in self._frame:
            self.removeItem(item)
        self.extent = float(extent)
        E = self.extent
        for markers in (self.start_marker, self.head_marker, self.flip_markers):
            markers.extent = E
        grid = gl.GLGridItem(color=self._ink_rgba(35), glOptions=_LINE_GL)
        grid.setSize(2 * E, 2 * E)
        grid.setSpacing(E / 4, E / 4)
        grid.translate(0, 0, -E)
        self._frame = [grid]
        font = QFont()
        font.setPointSize(getattr(self, "_label_pt", 13))
        for axis, name in enumerate(labels):
            end = np.zeros((2, 3))
            end[0, axis], end[1, axis] = -E, E
            self._frame.append(
                gl.GLLinePlotItem(pos=end, color=pg.mkColor(self._ink_rgba(180)), width=1.2, glOptions=_LINE_GL)
            )
            tip = end[1] * 1.08
            self._frame.append(gl.GLTextItem(pos=tip, text=name, color=self._ink_rgba(255), font=font))
        for item in self._frame:
            item.setDepthValue(5)
            self.addItem(item)
        corners = np.array([[-E, -E, 0], [E, -E, 0], [E, E, 0], [-E, E, 0]], dtype=float)
        self.barrier.setMeshData(vertexes=corners, faces=np.array([[0, 1, 2], [0, 2, 3]]))
        self.barrier_edge.setData(pos=np.vstack([corners, corners[:1]]))
        self._user_camera = False
        self.apply_camera(self.default_camera())
        self._meshed_c = self._ghost_c = None

    # ---------------------------------------------------------------- surfaces
    def _ghost_rgba(self, alpha: float) -> tuple:
        """The ghost of Q(c(0)) in a neutral ink, so it reads apart from the coloured surface."""
        grey = 0.85 if self._ink.lightnessF() > 0.5 else 0.2
        return (grey, grey, grey, alpha)

    def _sheet_alpha(self, c: float, sheet: int, alpha: float) -> float:
        """A locked neuron's other sheet (c < 0: sheet 0 is v > 0, sheet 1 is v < 0) is the one it
        can never reach: drawn faint, so the sheet it lives on stands out."""
        if self.locked_sign == 0 or c >= 0:
            return alpha
        allowed = 0 if self.locked_sign > 0 else 1
        return alpha if sheet == allowed else FORBIDDEN_ALPHA

    def _replace(self, old: list, c: float | None, alpha: float, depth: float, ghost: bool = False) -> list:
        for item in old:
            self.removeItem(item)
        if c is None:
            return []
        items = []
        for sheet, (vertices, faces) in enumerate(
            quadric_sheets(c, extent=self.extent, resolution=20 if ghost else 56)
        ):
            if ghost:  # a wireframe: reads apart from the translucent surface it is left behind by
                item = gl.GLMeshItem(
                    meshdata=gl.MeshData(vertexes=vertices, faces=faces),
                    drawFaces=False,
                    drawEdges=True,
                    edgeColor=self._ghost_rgba(alpha),
                    glOptions=_LINE_GL,
                )
            else:
                item = gl.GLMeshItem(
                    meshdata=smooth_mesh(vertices, faces),
                    smooth=True,
                    shader="shaded",
                    color=_rgba(self.neuron, self._sheet_alpha(c, sheet, alpha)),
                    glOptions=_SURFACE_GL,
                )
            item.setDepthValue(depth)
            self.addItem(item)
            items.append(item)
        return items

    def set_quadric(
        self, c_now: float | None, c_start: float | None = None, barrier: bool = False, locked_sign: int = 0
    ):
        """Draw Q(c_now); a faint ghost of Q(c_start) once the two visibly differ.

        ``locked_sign`` ±1: the neuron is locked (e = 1, c < 0) on the sheet of that output sign,
        which is labelled and drawn full, its other sheet faint. ``None`` draws no surface
        (projection views). Re-meshing is skipped unless c moved by
        more than 0.2 % of the scene, so a live run does not rebuild meshes every frame.
        """
        tol = 2e-3 * self.extent**2
        locked_sign = int(np.sign(locked_sign)) if c_now is not None and c_now < 0 else 0
        if locked_sign != self.locked_sign:
            self.locked_sign = locked_sign
            self._meshed_c = None  # re-mesh: the sheets' opacities changed
        self._place_lock_label(c_now)
        if self.mesh_quantum:
            # Clips: the mesh of c rounded to the quantum (× extent²), a function of the shown c
            # alone, so a frame does not depend on the frames before it, yet c moving by less
            # than a quantum (sub-pixel at 4K) re-uses the mesh.
            quantum = self.mesh_quantum * self.extent**2
            c_mesh = None if c_now is None else round(c_now / quantum) * quantum
            if c_mesh is None or c_mesh != self._meshed_c:
                self._surface = self._replace(self._surface, c_mesh, self._alphas[0], 0)
                self._meshed_c = c_mesh
        else:
            skip = self.remesh_tolerance * self.extent**2
            if c_now is None or self._meshed_c is None or abs(c_now - self._meshed_c) > skip:
                self._surface = self._replace(self._surface, c_now, self._alphas[0], 0)
                self._meshed_c = c_now
        drifted = c_now is not None and c_start is not None and abs(c_now - c_start) > tol
        ghost = c_start if drifted else None
        if ghost != self._ghost_c:
            self._ghost = self._replace(self._ghost, ghost, self._alphas[1], -1, ghost=True)
            self._ghost_c = ghost
        self.barrier.setVisible(barrier)
        self.barrier_edge.setVisible(barrier)

    def _place_lock_label(self, c_now: float | None):
        """'locked: v > 0' beside the vertex of the sheet a locked neuron lives on."""
        if not self.locked_sign or c_now is None:
            self.lock_label.setVisible(False)
            return
        E = self.extent
        height = min(math.sqrt(-c_now) + 0.3 * E, 0.9 * E)
        above = ">" if self.locked_sign > 0 else "<"
        self.lock_label.setData(
            pos=(0.08 * E, 0.08 * E, self.locked_sign * height), text=f"locked: v {above} 0", color=self._ink_rgba(255)
        )
        self.lock_label.setVisible(True)

    # ---------------------------------------------------------------- trajectory
    def set_trajectory(self, points: np.ndarray, time_fraction: np.ndarray, flips: np.ndarray | None = None):
        """points (T, 3); time_fraction (T,) in [0, 1] colours the line; flips (m, 3) marks events."""
        points = np.asarray(points, dtype=np.float32)
        if len(points) == 0:
            self.clear_trajectory()
            return
        rows = decimate(len(points))
        colors = time_colors(time_fraction[rows])
        self.trajectory.setData(pos=points[rows], color=colors)
        self.start_marker.set_positions(points[:1])
        self.head_marker.set_positions(points[-1:])
        self.flip_markers.set_positions(np.zeros((0, 3)) if flips is None else flips)

    def clear_trajectory(self):
        empty = np.zeros((0, 3), dtype=np.float32)
        self.trajectory.setData(pos=empty)
        for markers in (self.start_marker, self.head_marker, self.flip_markers):
            markers.set_positions(empty)

    def shown_points(self) -> int:
        pos = self.trajectory.pos
        return 0 if pos is None else len(pos)

    def set_line_width(self, width: float):
        self.trajectory.setData(width=width)

    def set_label_size(self, pt: int):
        """Axis names in points: larger in presentation mode."""
        self._label_pt = pt
        font = QFont()
        font.setPointSize(pt)
        for item in self._frame:
            if isinstance(item, gl.GLTextItem):
                item.setData(font=font)
        font.setBold(True)
        self.lock_label.setData(font=font)

    # ---------------------------------------------------------------- linked cameras
    def camera_state(self) -> dict:
        return camera_of(self)

    def default_camera(self) -> dict:
        """The framing set_frame gives: the scene's bounding box [−E, E]³ (and its axis names)
        filling the view, seen from slightly above. pyqtgraph's fov is horizontal, so a tall or
        a wide view needs its own distance; from above, perspective puts the box's centre below
        the view's, hence the slightly lowered look-at point."""
        E = self.extent
        half_tan = math.tan(math.radians(self.opts["fov"] / 2))
        aspect = max(self.height(), 1) / max(self.width(), 1)
        distance = max(1.5 * E / half_tan, 1.7 * E / (half_tan * aspect))
        return {"distance": distance, "elevation": 18.0, "azimuth": 40.0, "center": [0.0, 0.0, -0.25 * E]}

    def apply_camera(self, state: dict):
        """Place the camera without marking it the user's (a default framing, a linked view)."""
        user = getattr(self, "_user_camera", False)
        set_camera(self, state)
        self._user_camera = user

    def setCameraPosition(self, *args, **kwargs):
        """A camera placed from outside (a session, a script, the linked views) stays where it was
        put: from then on a resize no longer refits the scene."""
        super().setCameraPosition(*args, **kwargs)
        self._user_camera = True

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        if not getattr(self, "_user_camera", False):  # keep framing the scene until someone turns the camera
            self.apply_camera(self.default_camera())

    def mouseMoveEvent(self, ev):
        super().mouseMoveEvent(ev)
        self._user_camera = True
        self.camera_moved.emit(self)

    def wheelEvent(self, ev):
        super().wheelEvent(ev)
        self._user_camera = True
        self.camera_moved.emit(self)
