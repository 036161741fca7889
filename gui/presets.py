"""Presets are JSON files in resources/presets: a workspace key and nested parameter values."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pyqtgraph.parametertree import Parameter

from engine.errors import EngineInputError

PRESET_DIR = Path(__file__).resolve().parent.parent / "resources" / "presets"


@dataclass(frozen=True)
class Preset:
    name: str        # file stem, used on the command line
    title: str       # shown in the menu
    workspace: str
    values: dict
    autorun: bool = True


def load_preset(path: Path) -> Preset:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise EngineInputError(f"cannot read preset {path}: {error}") from None
    missing = {"title", "workspace", "parameters"} - set(data) if isinstance(data, dict) else {"title"}
    if missing:
        raise EngineInputError(f"preset {path} lacks {', '.join(sorted(missing))}")
    return Preset(Path(path).stem, data["title"], data["workspace"], data["parameters"],
                  bool(data.get("autorun", True)))


def available_presets() -> dict[str, Preset]:
    return {p.stem: load_preset(p) for p in sorted(PRESET_DIR.glob("*.json"))}


def preset_named(name: str) -> Preset:
    presets = available_presets()
    if name not in presets:
        raise EngineInputError(f"unknown preset {name!r}; choose one of: {', '.join(presets)}")
    return presets[name]


def apply_values(group: Parameter, values: dict, path: str = "") -> None:
    """Set nested values on a parameter tree, naming any key the tree does not have."""
    for key, value in values.items():
        here = f"{path}/{key}" if path else key
        try:
            child = group.child(key)
        except KeyError:
            raise EngineInputError(f"preset sets unknown parameter {here!r}") from None
        if isinstance(value, dict):
            apply_values(child, value, here)
        else:
            child.setValue(value)
