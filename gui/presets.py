"""Presets are JSON files in resources/presets: a workspace key and nested parameter values.

A preset is read through one schema (pydantic) and its values are checked against the
workspace's parameter tree before any is applied (gui.parameter_values), so a bad preset is
refused with one line naming what is wrong and the panel stays as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pyqtgraph.parametertree import Parameter

import resources
from engine.core.errors import EngineInputError

from .parameter_values import apply_all

PRESET_DIR = resources.path("presets")
MAX_PRESET_BYTES = 1_000_000


class Preset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = ""  # file stem, used on the command line
    title: str = Field(min_length=1, max_length=200)  # shown in the menu and on the slide
    workspace: str = Field(min_length=1, max_length=100)
    parameters: dict[str, Any]
    description: str = Field(default="", max_length=400)  # one line: what to look at
    autorun: bool = True

    @property
    def values(self) -> dict:
        return self.parameters


def one_line(error: ValidationError) -> str:
    """pydantic's first complaint as "field: message"."""
    first = error.errors()[0]
    where = "/".join(str(p) for p in first["loc"]) or "file"
    return f"{where}: {first['msg']}"


def read_json(path: Path, what: str, limit: int = MAX_PRESET_BYTES):
    """JSON from ``path``, with every way it can fail as one EngineInputError."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise EngineInputError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if len(raw) > limit:
        raise EngineInputError(f"{what} {path} is {len(raw)} bytes; the limit is {limit}")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise EngineInputError(f"{what} {path} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise EngineInputError(f"{what} {path} is not valid JSON: {error}") from None
    except RecursionError:
        raise EngineInputError(f"{what} {path} is nested too deeply") from None


def load_preset(path: Path) -> Preset:
    data = read_json(path, "preset")
    if not isinstance(data, dict):
        raise EngineInputError(f"preset {path} must be a JSON object with title, workspace and parameters")
    try:
        return Preset(name=Path(path).stem, **data)
    except ValidationError as error:
        raise EngineInputError(f"preset {Path(path).name}: {one_line(error)}") from None
    except RecursionError:
        raise EngineInputError(f"preset {path} is nested too deeply") from None


def available_presets() -> dict[str, Preset]:
    return {p.stem: load_preset(p) for p in sorted(PRESET_DIR.glob("*.json"))}


def preset_named(name: str) -> Preset:
    path = PRESET_DIR / f"{name}.json"
    if "/" in name or not path.is_file():
        names = sorted(p.stem for p in PRESET_DIR.glob("*.json"))
        raise EngineInputError(f"unknown preset {name!r}; choose one of: {', '.join(names)}")
    return load_preset(path)


def apply_values(group: Parameter, values: dict) -> None:
    """Set a preset's nested values on a parameter tree: all of them, or none."""
    apply_all(group, values)
