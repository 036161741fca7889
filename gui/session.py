"""Sessions: parameters, cameras and computed results in one file, so a talk reopens a slow
computation instantly.

The file is a zip: ``manifest.json`` (format name, version, parameters, cameras, and the
results with every numpy array replaced by a reference) plus one ``.npy`` per array, read
back with ``allow_pickle=False`` so a session file can never run code. Writes go to a
temporary file in the same folder and ``os.replace`` it, so a crash never leaves half a
session behind. Loading reads and checks everything before touching the window, and puts
the previous state back if a workspace rejects the results.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSettings

from engine.errors import EngineInputError

FORMAT, VERSION = "landscape-lens-session", 1
SUFFIX = ".lens"
MAX_RECENT = 8


# ------------------------------------------------------------ plain data <-> zip
def _encode(value, arrays: dict, where: str):
    """JSON-able copy of ``value``; arrays go to ``arrays`` and leave a reference behind."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise EngineInputError(f"cannot save {where}: object arrays are not plain data")
        name = f"arrays/{len(arrays)}.npy"
        arrays[name] = value
        return {"__array__": name}
    if isinstance(value, dict):
        return {"__dict__": [[str(k), _encode(v, arrays, f"{where}/{k}")] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise EngineInputError(f"cannot save {where}: {type(value).__name__} is not plain data")


def _decode(value, arrays: dict):
    if isinstance(value, dict):
        if "__array__" in value:
            if value["__array__"] not in arrays:
                raise EngineInputError(f"the file lacks array {value['__array__']}")
            return arrays[value["__array__"]]
        return {k: _decode(v, arrays) for k, v in value["__dict__"]}
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    return value


def write_session(path, manifest: dict) -> None:
    """Write ``manifest`` (plain data incl. arrays) atomically to ``path``."""
    path = Path(path)
    arrays: dict = {}
    body = {"format": FORMAT, "version": VERSION, "content": _encode(manifest, arrays, "session")}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(body, allow_nan=True))
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
                z.writestr(name, buffer.getvalue())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_session(path) -> dict:
    """Read and check a session file; raise EngineInputError saying what is wrong."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            body = json.loads(z.read("manifest.json"))
            if not (isinstance(body, dict) and body.get("format") == FORMAT):
                raise EngineInputError(f"{path.name} is not a Landscape Lens session")
            if body.get("version") != VERSION:
                raise EngineInputError(f"{path.name} is session format version "
                                       f"{body.get('version')}; this app reads version {VERSION}")
            arrays = {name: np.load(io.BytesIO(z.read(name)), allow_pickle=False)
                      for name in z.namelist() if name.startswith("arrays/")}
            return _decode(body["content"], arrays)
    except EngineInputError:
        raise
    except FileNotFoundError:
        raise EngineInputError(f"session file {path} does not exist") from None
    except (zipfile.BadZipFile, KeyError, EOFError, ValueError, TypeError, OSError,
            zipfile.LargeZipFile) as error:
        raise EngineInputError(f"cannot open session {path.name}: the file is damaged, "
                               f"truncated or not a session ({type(error).__name__}: {error})") from None


# ------------------------------------------------------------ window <-> plain data
def _camera(view) -> dict:
    o = view.opts
    return {"distance": float(o["distance"]), "elevation": float(o["elevation"]),
            "azimuth": float(o["azimuth"]), "fov": float(o["fov"]),
            "center": [float(o["center"].x()), float(o["center"].y()), float(o["center"].z())]}


def _set_camera(view, camera: dict):
    view.opts["center"] = pg.Vector(*camera["center"])
    view.opts["fov"] = camera["fov"]
    view.setCameraPosition(distance=camera["distance"], elevation=camera["elevation"],
                           azimuth=camera["azimuth"])


def capture_state(window) -> dict:
    return {"current": window.workspace.key, "workspaces": {
        key: {"parameters": ws.parameters.saveState(filter="user"),
              "cameras": [_camera(v) for v in ws.gl_views()],
              "results": ws.session_state()}
        for key, ws in window.workspaces.items()}}


def apply_state(window, state: dict) -> None:
    for key, saved in state["workspaces"].items():
        if key not in window.workspaces:
            raise EngineInputError(f"the session has a workspace {key!r} this app does not know")
        ws = window.workspaces[key]
        ws.parameters.restoreState(saved["parameters"], addChildren=False, removeChildren=False)
        ws.reset()
        if saved["results"]:
            ws.restore_session_state(saved["results"])
        for view, camera in zip(ws.gl_views(), saved["cameras"]):  # last: views may reframe
            _set_camera(view, camera)
    if state["current"] in window.workspaces:
        window.show_workspace(state["current"])


def save_session(window, path) -> None:
    write_session(path, capture_state(window))
    remember(path)


def load_session(window, path) -> bool:
    """Open ``path`` into ``window``; on any problem show it and keep the current session."""
    try:
        state = read_session(path)
        if not isinstance(state, dict) or not isinstance(state.get("workspaces"), dict):
            raise EngineInputError(f"{Path(path).name} has no workspaces")
    except EngineInputError as error:
        window.message_bar.show_error(str(error))
        return False
    window.stop_jobs()
    before = capture_state(window)
    try:
        apply_state(window, state)
    except (EngineInputError, KeyError, TypeError, ValueError, IndexError) as error:
        apply_state(window, before)  # roll back: the window shows what it showed before
        window.message_bar.show_error(f"cannot open session {Path(path).name}: {error}")
        return False
    remember(path)
    window.message_bar.show_info(f"Opened session {Path(path).name}")
    return True


# ------------------------------------------------------------------ recent files
def recent_files() -> list[str]:
    value = QSettings().value("session/recent", [])
    files = [value] if isinstance(value, str) else list(value or [])
    return [f for f in files if Path(f).exists()]


def remember(path) -> None:
    path = str(Path(path).resolve())
    files = [path] + [f for f in recent_files() if f != path]
    QSettings().setValue("session/recent", files[:MAX_RECENT])
