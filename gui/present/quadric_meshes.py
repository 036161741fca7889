"""The quadric surfaces of paper A's training views, as plain data: meshes, curves and frames.

``surface_mesh`` meshes Q(c) = {‖w‖² − v² = c} (MATH A3) with smooth normals, cached by c;
``neuron_surface`` and ``start_wireframe`` choose the mesh a neuron's 3D view draws (re-meshed
only when c moved) and the wireframe of Q(c(0)); ``reduced_branches`` the reduced view's curves
r² − v² = c; and ``nice_extent`` and ``fitted_extent`` the frame a view is drawn in. No Qt, no
pyqtgraph.
"""

from __future__ import annotations

import threading

import cachetools
import numpy as np

from engine.topology.quadrics import hyperbola, quadric_sheets

SURFACE_RESOLUTION, GHOST_RESOLUTION = 56, 20
REMESH_TOLERANCE = 2e-3  # × extent²: a live run re-meshes Q(c) only when c moved this much
# The meshes kept for reuse, by their arrays' bytes: one frame's worth for eight neurons, each a
# full-resolution Q(c) of two sheets (441 KB) and its ghost (54 KB), each costly to make again.
# Counted in entries (256), the cache kept every c a live run re-meshed at, up to 113 MB: the
# largest part of what a soak's heap gained (heaptrack).
MESH_CACHE_BYTES = 4 * 2**20


def nice_extent(x: float) -> float:
    """The next 1, 1.5, 2, 3, 5 or 7 × 10ⁿ at or above x: a frame that does not jitter."""
    magnitude = 10 ** np.floor(np.log10(x))
    return float(next(m * magnitude for m in (1, 1.5, 2, 3, 5, 7, 10) if m * magnitude >= x))


def fitted_extent(extent: float, points: np.ndarray) -> float:
    """A projection has no surface to set the scale: frame the trajectory itself, refitting
    only when it outgrows the frame or fills less than half of it (a handful of times a run)."""
    reach = float(np.nanmax(np.abs(points))) if points.size else 0.0
    if reach > 0 and not 0.5 * extent <= 1.1 * reach <= extent:
        return nice_extent(1.1 * reach)
    return extent


def mesh_bytes(mesh: dict) -> int:
    return sum(array.nbytes for sheet in mesh["sheets"] for array in sheet.values())


# cachetools: an LRU bounded by size, which functools' count-bounded one is not. Locked: views
# are presented on worker threads.
@cachetools.cached(cachetools.LRUCache(MESH_CACHE_BYTES, getsizeof=mesh_bytes), lock=threading.Lock())
def surface_mesh(c: float, extent: float, resolution: int, normals: bool = True) -> dict:
    """Q(c)'s sheets as float32 vertices, faces and (``normals``) smooth vertex normals: the sum
    of the adjacent faces' area-weighted normals, normalised, as pyqtgraph would compute them at
    the first paint in a Python loop. Cached: a clip's quantised c, a scrubbed replay and the
    ghost of Q(c(0)) come back to the same c. The arrays are read-only."""
    sheets = []
    for vertices, faces in quadric_sheets(c, extent=extent, resolution=resolution):
        v32 = np.ascontiguousarray(vertices, dtype=np.float32)
        sheet = {"vertices": v32, "faces": faces}
        if normals:
            sheet["normals"] = smooth_normals(v32, faces)
        for array in sheet.values():
            array.flags.writeable = False
        sheets.append(sheet)
    return {"c": float(c), "sheets": sheets}


def smooth_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Per-vertex normals in float32, exactly as gl.MeshData's faceNormals and vertexNormals."""
    normals = np.zeros(vertices.shape, dtype=np.float32)
    if len(faces):
        corners = vertices[faces]
        face_normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        for corner in range(3):
            np.add.at(normals, faces[:, corner], face_normals)
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        normals = np.divide(normals, length, out=np.zeros_like(normals), where=length > 0)
    return normals


def neuron_surface(c: float, extent: float, locked: int, previous: dict | None, quantum: float | None) -> dict:
    """The mesh of Q(c) to draw, with ``locked`` (which sheet is faint) and the c it was made for.
    Live: the previous mesh while c moved less than the tolerance (no re-mesh per frame). Clips
    (``quantum``): c rounded to the quantum × extent², a function of the shown c alone."""
    if quantum:
        q = quantum * extent**2
        c_mesh = round(c / q) * q
    elif (
        previous is not None
        and previous["extent"] == extent
        and previous["locked"] == locked
        and abs(c - previous["c"]) <= REMESH_TOLERANCE * extent**2
    ):
        return previous
    else:
        c_mesh = c
    return {"c": c_mesh, "extent": extent, "locked": locked, "mesh": surface_mesh(c_mesh, extent, SURFACE_RESOLUTION)}


def start_wireframe(c_now: float, c_start: float, extent: float) -> dict | None:
    """Q(c(0)) as a wireframe once c visibly left it."""
    if abs(c_now - c_start) <= 2e-3 * extent**2:
        return None
    return {"c": c_start, "extent": extent, "mesh": surface_mesh(c_start, extent, GHOST_RESOLUTION, normals=False)}


def reduced_branches(layout: dict, c: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The reduced view's curves of r² − v² = c: only v ≥ 0 for ‖v‖, mirrored for a signed w."""
    out = []
    for r, v in hyperbola(c, extent=layout["extent"], n=160):
        if not layout["signed_v"]:
            keep = v >= 0
            r, v = r[keep], v[keep]
        out.append((r, v))
        if layout["signed_w"]:
            out.append((-r, v))
    return out
