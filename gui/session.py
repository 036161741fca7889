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
import math
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from PySide6.QtCore import QSettings

from engine.core.errors import EngineInputError
from engine.core.npz import member_read
from engine.io.session_arrays import check_workspace_results

from .parameter_values import apply_all, values_of_state
from .presets import one_line

FORMAT, VERSION = "landscape-lens-session", 1
SUFFIX = ".lens"
MAX_RECENT = 8


MAX_MANIFEST_BYTES = 50_000_000
MAX_ARRAY_BYTES = 2_000_000_000  # one array's declared size; a header may claim terabytes


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError("must be a finite number")
    return x


Finite = Annotated[float, AfterValidator(_finite)]


class Camera(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    distance: Annotated[Finite, Field(gt=0, le=1e6)]
    elevation: Annotated[Finite, Field(ge=-90, le=90)]
    azimuth: Finite
    fov: Annotated[Finite, Field(gt=0, lt=180)]
    center: Annotated[list[Finite], Field(min_length=3, max_length=3)]


class WorkspaceState(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    parameters: dict[str, Any]
    cameras: Annotated[list[Camera], Field(max_length=64)]
    results: dict[str, Any]


Text = Annotated[str, Field(max_length=10_000)]


class Frame(BaseModel):
    """What the window shows around the tabs: the slide's title and line, the status bar."""

    model_config = ConfigDict(extra="forbid", strict=True)
    title: Text = ""
    subtitle: Text = ""
    status: Text = ""
    progress: Annotated[int, Field(ge=0, le=1000)] = 0


class SessionState(BaseModel):
    """The manifest's content: checked whole before anything in the window changes."""

    model_config = ConfigDict(extra="forbid", strict=True)
    current: str
    workspaces: dict[str, WorkspaceState]
    frame: Frame | None = None  # absent in sessions written before it was saved


def checked_state(state) -> SessionState:
    if not isinstance(state, dict):
        raise EngineInputError("the session's content is not an object")
    try:
        return SessionState(**state)
    except ValidationError as error:
        raise EngineInputError(one_line(error)) from None


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


def _array_places(content) -> dict[str, str]:
    """Where each array a manifest's content refers to sits in the saved state ("arrays/3.npy" ->
    "workspaces/topology/results/trajectory/c"), for messages; malformed parts are skipped (the
    content is checked when it is decoded)."""
    places, todo = {}, [(content, "")]
    while todo:
        value, at = todo.pop()
        if isinstance(value, list):
            todo += [(v, f"{at}[{i}]") for i, v in enumerate(value)]
        elif isinstance(value, dict) and isinstance(value.get("__array__"), str):
            places.setdefault(value["__array__"], at.lstrip("/"))
        elif isinstance(value, dict) and isinstance(value.get("__dict__"), list):
            pairs = [p for p in value["__dict__"] if isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)]
            todo += [(v, f"{at}/{k}") for k, v in pairs]
    return places


def _read_array(z: zipfile.ZipFile, name: str, where: str = "session", place: str = "") -> np.ndarray:
    """One array, its header checked before its data is read (a header may claim 8 TB). A damaged
    member is refused naming ``where`` (the file) and the array (with its ``place`` in the state)."""
    what = f"array {name}" + (f" ({place})" if place else "")
    with member_read(where, what), z.open(name) as raw:
        buffer = io.BytesIO(raw.read(MAX_ARRAY_BYTES + 1))
    if buffer.getbuffer().nbytes > MAX_ARRAY_BYTES:
        raise EngineInputError(f"array {name} is larger than {MAX_ARRAY_BYTES} bytes")
    read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(
        np.lib.format.read_magic(buffer)
    )
    if read_header is None:
        raise EngineInputError(f"array {name} is in an .npy format version this app does not read")
    shape, _, dtype = read_header(buffer)
    if dtype.hasobject or dtype.kind not in "biufcUS":
        raise EngineInputError(f"array {name} has dtype {dtype}, which is not plain numbers or text")
    if math.prod(shape) * dtype.itemsize > MAX_ARRAY_BYTES:
        raise EngineInputError(f"array {name} declares shape {shape}: larger than {MAX_ARRAY_BYTES} bytes")
    buffer.seek(0)
    return np.load(buffer, allow_pickle=False)


def read_session(path) -> dict:
    """Read and check a session file; raise EngineInputError saying what is wrong."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            if z.getinfo("manifest.json").file_size > MAX_MANIFEST_BYTES:
                raise EngineInputError(f"{path.name}'s manifest is larger than {MAX_MANIFEST_BYTES} bytes")
            where = f"session {path.name}"
            with member_read(where, "its manifest.json"):
                manifest = z.read("manifest.json")
            body = json.loads(manifest)
            if not (isinstance(body, dict) and body.get("format") == FORMAT):
                raise EngineInputError(f"{path.name} is not a Landscape Lens session")
            if body.get("version") != VERSION:
                raise EngineInputError(
                    f"{path.name} is session format version {body.get('version')}; this app reads version {VERSION}"
                )
            places = _array_places(body.get("content"))
            arrays = {
                name: _read_array(z, name, where, places.get(name, ""))
                for name in z.namelist()
                if name.startswith("arrays/")
            }
            return _decode(body["content"], arrays)
    except EngineInputError:
        raise
    except RecursionError:
        raise EngineInputError(f"cannot open session {path.name}: its manifest is nested too deeply") from None
    except FileNotFoundError:
        raise EngineInputError(f"session file {path} does not exist") from None
    except (
        zipfile.BadZipFile,
        KeyError,
        EOFError,
        ValueError,
        TypeError,
        OSError,
        zipfile.LargeZipFile,
        NotImplementedError,  # a central directory asking for a zip version or flag zipfile lacks
    ) as error:
        raise EngineInputError(
            f"cannot open session {path.name}: the file is damaged, "
            f"truncated or not a session ({type(error).__name__}: {error})"
        ) from None


# ------------------------------------------------------------ window <-> plain data
def capture_state(window) -> dict:
    slide = window.slide_title
    return {
        "current": window.workspace.key,
        "frame": {
            "title": slide.title.text() if slide.isVisibleTo(window) else "",
            "subtitle": slide.subtitle.text() if slide.isVisibleTo(window) else "",
            "status": window.status_label.text(),
            "progress": max(window.progress_bar.value(), 0),  # -1 after QProgressBar.reset(): no progress shown
        },
        "workspaces": {
            key: {
                "parameters": ws.parameters.saveState(filter="user"),
                "cameras": ws.session_cameras(),
                "results": ws.session_state(),
            }
            for key, ws in window.workspaces.items()
        },
    }


def apply_state(window, state: dict, live: bool = True) -> None:
    """Draw ``state`` in ``window``; ``live``: and make what it restored live again to go on
    with (Workspace.go_live), not only to be drawn."""
    checked = checked_state(state)
    for key, saved in checked.workspaces.items():  # every array's dtype, shape and length first
        if key not in window.workspaces:
            raise EngineInputError(f"the session has a workspace {key!r} this app does not know")
        check_workspace_results(key, saved.results)
    if checked.current in window.workspaces:  # first: views drawn while hidden lay out at another size
        window.show_workspace(checked.current)
    # the slide as saved (its line already says what differed from its preset), or none
    window.show_slide(*((checked.frame.title, checked.frame.subtitle) if checked.frame else ("", "")))
    for key, saved in checked.workspaces.items():
        ws = window.workspaces[key]
        apply_all(ws.parameters, values_of_state(saved.parameters, f"{key}/parameters"))
        ws.reset()
        if saved.results:
            ws.restore_session_state(saved.results)
        ws.restore_cameras([camera.model_dump() for camera in saved.cameras])
    if checked.frame is not None:
        window.status_label.setText(checked.frame.status)
        window.progress_bar.setValue(checked.frame.progress)
    if live:
        for key in checked.workspaces:
            window.workspaces[key].go_live()


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
    window.replay_dock.refresh()  # the restored run is a timeline to scrub, shown at its end
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
