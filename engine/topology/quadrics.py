"""Meshes and reduced coordinates of the per-neuron hyperquadrics Q(c) (MATH A3).

For d = 2, e = 1 the quadric ``w1² + w2² − v² = c`` is a surface of revolution about the
v axis, so every case is one profile curve ``(r(t), v(t))`` swept around that axis. The
profiles use cosh/sinh, which put the vertices on the surface to rounding error and space
them evenly in arc length near the waist/apex, where the shape changes fastest.
"""

from __future__ import annotations

import math

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.validation import integer, real

Mesh = tuple[np.ndarray, np.ndarray]  # vertices (n, 3) float64, triangle faces (m, 3) int


def _check(c: float, extent: float, resolution: int, name: str = "resolution") -> None:
    real("c", c)
    real("extent", extent, positive=True)
    integer(name, resolution, 3)


def _revolve(r: np.ndarray, v: np.ndarray, n_angle: int) -> Mesh:
    """Sweep the profile (r_i, v_i) around the v axis.

    Rows with r == 0 (an apex or a pole) become a single vertex, so the mesh has no
    zero-area triangles that would give NaN normals in an OpenGL view.
    """
    phi = np.linspace(0.0, 2 * np.pi, n_angle, endpoint=False)
    verts, rows = [], []  # rows[i]: vertex indices of ring i (length 1 for an apex)
    count = 0
    for ri, vi in zip(r, v):
        if ri == 0.0:
            verts.append(np.array([[0.0, 0.0, vi]]))
            rows.append(np.full(n_angle, count))
            count += 1
        else:
            verts.append(np.column_stack([ri * np.cos(phi), ri * np.sin(phi), np.full(n_angle, vi)]))
            rows.append(np.arange(count, count + n_angle))
            count += n_angle
    faces = []
    nxt = np.roll(np.arange(n_angle), -1)  # wrap the seam: no duplicated seam vertices
    for a, b in zip(rows[:-1], rows[1:]):
        a_apex, b_apex = a[0] == a[-1], b[0] == b[-1]
        if not a_apex:
            faces.append(np.column_stack([a, a[nxt], b]))
        if not b_apex:
            faces.append(np.column_stack([a[nxt], b[nxt], b]))
    return np.vstack(verts), np.vstack(faces).astype(np.int64)


def _profiles(c: float, extent: float, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Profile curves (r, v) with r >= 0 of the branches of r² − v² = c.

    c > 0 is bounded by |v| <= extent; c < 0 by r <= extent (its sheets start at
    |v| = sqrt(−c), which may lie beyond extent); c = 0 by |v| = r <= extent.
    """
    if c > 0:
        s = math.sqrt(c)
        t = np.linspace(-math.asinh(extent / s), math.asinh(extent / s), n)
        return [(s * np.cosh(t), s * np.sinh(t))]
    if c < 0:
        s = math.sqrt(-c)
        t = np.linspace(0.0, math.asinh(extent / s), n)
        r = s * np.sinh(t)
        r[0] = 0.0  # sinh(0) is exactly 0 already; keep the pole explicit
        return [(r, s * np.cosh(t)), (r, -s * np.cosh(t))]
    r = np.linspace(0.0, extent, n)
    return [(r, r.copy()), (r, -r)]


def quadric_sheets(c: float, extent: float = 2.0, resolution: int = 64) -> list[Mesh]:
    """Triangle meshes of Q(c) ⊂ R³ (coordinates w1, w2, v) for d = 2, e = 1.

    One sheet for c > 0 (one-sheet hyperboloid), two for c < 0 (the v > 0 and v < 0 sheets,
    which are the two components an output weight cannot leave), and the two nappes of the
    double cone for c = 0 (upper first). ``resolution`` points along the profile and around.
    """
    _check(c, extent, resolution)
    return [_revolve(r, v, int(resolution)) for r, v in _profiles(float(c), float(extent), int(resolution))]


def hyperbola(c: float, extent: float = 2.0, n: int = 200) -> list[tuple[np.ndarray, np.ndarray]]:
    """Branches (r, v) of r² − v² = c, r >= 0: the reduced (‖w‖, v) picture of Q(c), e = 1."""
    _check(c, extent, n, "n")
    return _profiles(float(c), float(extent), int(n))


def reduced_coordinates(W1_traj, W2_traj, b1_traj=None) -> tuple[np.ndarray, np.ndarray]:
    """Exact reduced coordinates of every neuron: r = ‖(w, b)‖ and v (e = 1) or ‖v‖ (e > 1).

    Shapes W1 (T, l, d), W2 (T, e, l), b1 (T, l); a single snapshot (no T axis) is also
    accepted and gives (l,) arrays. r² − v² equals the neuron's c_k exactly (up to rounding).
    """
    W1, W2 = np.asarray(W1_traj, dtype=np.float64), np.asarray(W2_traj, dtype=np.float64)
    if W1.ndim not in (2, 3) or W2.ndim != W1.ndim:
        raise EngineInputError(f"W1 shape {W1.shape} / W2 shape {W2.shape}: expected (T, l, d) and (T, e, l)")
    if W1.shape[:-2] != W2.shape[:-2] or W1.shape[-2] != W2.shape[-1]:
        raise EngineInputError(f"W1 shape {W1.shape} does not match W2 shape {W2.shape}")
    sq = np.sum(W1**2, axis=-1)
    if b1_traj is not None:
        b1 = np.asarray(b1_traj, dtype=np.float64)
        if b1.shape != sq.shape:
            raise EngineInputError(f"b1 shape {b1.shape} does not match W1 shape {W1.shape}")
        sq = sq + b1**2
    r = np.sqrt(sq)
    v = W2[..., 0, :].copy() if W2.shape[-2] == 1 else np.sqrt(np.sum(W2**2, axis=-2))
    return r, v
