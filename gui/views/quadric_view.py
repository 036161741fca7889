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

from ..present.topology import MAX_SHOWN_POINTS, decimate  # noqa: F401  (the rows drawn, chosen in the job)
from ..rendering.camera import camera_of, set_camera
from ..rendering.offscreen_gl import OffscreenGLView
from ..style import neuron_color, theme_colors

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


def _same_mesh(a: dict | None, b: dict | None) -> bool:
    """Two states' surfaces draw the same: a mesh made for the same c and extent (a mesh is a
    function of them, gui.present.quadric_meshes), locked alike. Compared by value, not by
    identity: a run's updates come from a worker process, each with its own dicts."""
    if a is None or b is None:
        return a is b
    key = lambda s: (s["mesh"]["c"], s.get("extent"), s.get("locked"))
    return a is b or key(a) == key(b)


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
        # Meshes come made with the view state (gui.present.topology, meshed by gui.present.quadric_meshes).
        self._surface_state: dict | None = None  # the state's surface drawn now (see _same_mesh)
        self._ghost_state: dict | None = None
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
            c = 0.0 if self._surface_state is None else self._surface_state["c"]
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
        # Another frame: the surfaces go (the next state brings its own, made for this extent).
        self._surface = self._replace(self._surface, None, 0, 0)
        self._ghost = self._replace(self._ghost, None, 0, 0)
        self._surface_state = self._ghost_state = None

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

    def _replace(self, old: list, mesh: dict | None, alpha: float, depth: float, ghost: bool = False) -> list:
        """Items for ``mesh`` (gui.present.quadric_meshes.surface_mesh) in place of ``old``."""
        for item in old:
            self.removeItem(item)
        if mesh is None:
            return []
        items = []
        for sheet, arrays in enumerate(mesh["sheets"]):
            data = gl.MeshData(vertexes=arrays["vertices"], faces=arrays["faces"])
            if ghost:  # a wireframe: reads apart from the translucent surface it is left behind by
                edges = self._ghost_rgba(alpha)
                item = gl.GLMeshItem(
                    meshdata=data, drawFaces=False, drawEdges=True, edgeColor=edges, glOptions=_LINE_GL
                )
            else:
                data._vertexNormals = arrays["normals"]  # made with the mesh: pyqtgraph's loop is slow
                item = gl.GLMeshItem(
                    meshdata=data,
                    smooth=True,
                    shader="shaded",
                    color=_rgba(self.neuron, self._sheet_alpha(mesh["c"], sheet, alpha)),
                    glOptions=_SURFACE_GL,
                )
            item.setDepthValue(depth)
            self.addItem(item)
            items.append(item)
        return items

    def show_surfaces(self, c_now: float | None, surface: dict | None, ghost: dict | None, barrier: bool):
        """Draw the state's Q(c) (``surface``: its mesh, the c it was made for and the sign a locked
        neuron lives on, whose other sheet is drawn faint and which is labelled) and the ghost of
        Q(c(0)), each rebuilt only when the state brings another (see ``_same_mesh``).
        None draws no surface (projection views)."""
        self.locked_sign = 0 if surface is None else surface["locked"]
        self._place_lock_label(c_now)
        if not _same_mesh(surface, self._surface_state):
            self._surface = self._replace(
                self._surface, None if surface is None else surface["mesh"], self._alphas[0], 0
            )
            self._surface_state = surface
        if not _same_mesh(ghost, self._ghost_state):
            self._ghost = self._replace(
                self._ghost, None if ghost is None else ghost["mesh"], self._alphas[1], -1, ghost=True
            )
            self._ghost_state = ghost
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
    def set_trajectory(self, line: np.ndarray, fraction: np.ndarray, start, head, flips) -> None:
        """The state's path: ``line`` (n, 3) the rows drawn, ``fraction`` (n,) in [0, 1] colours
        it; ``start``, ``head`` and ``flips`` (m, 3) the markers."""
        if len(line) == 0:
            self.clear_trajectory()
            return
        self.trajectory.setData(pos=line, color=time_colors(fraction))
        self.start_marker.set_positions(start)
        self.head_marker.set_positions(head)
        self.flip_markers.set_positions(flips)

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
