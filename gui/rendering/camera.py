"""A 3D view's camera as plain data: what sessions save, clips key-frame and linked views share.

One form everywhere: ``distance``, ``elevation``, ``azimuth`` (degrees, as pyqtgraph's
``opts``), ``fov`` (horizontal, degrees) and ``center`` as three floats, so it goes to JSON as it
is and back into any view.
"""

from __future__ import annotations

import pyqtgraph as pg


def camera_of(view) -> dict:
    o = view.opts
    return {
        "distance": float(o["distance"]),
        "elevation": float(o["elevation"]),
        "azimuth": float(o["azimuth"]),
        "fov": float(o["fov"]),
        "center": [float(o["center"].x()), float(o["center"].y()), float(o["center"].z())],
    }


def set_camera(view, camera: dict) -> None:
    """Place the camera; keys left out (a clip's key frame has no fov) keep the view's own."""
    if "center" in camera:
        view.opts["center"] = pg.Vector(*camera["center"])
    if "fov" in camera:
        view.opts["fov"] = float(camera["fov"])
    # Through setCameraPosition: a view that refits itself on resize stops once a camera is placed.
    view.setCameraPosition(**{k: float(camera[k]) for k in ("distance", "elevation", "azimuth") if k in camera})
