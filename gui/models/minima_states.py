"""The minima tab's stage states: one frozen dataclass per stage its views draw.

``gui.present.minima`` makes each stage's view data on the worker as plain data (numpy arrays,
lists, numbers, strings), which is also what a session saves; the tab's model types it on intake
(``typed``) and a session gets the same plain data back (``StageState.to_dict``), so sessions
saved before the states were typed open unchanged. A field the data did not have stays ``ABSENT``
and is no key of the state: a state reads like the dict it came from (``state["lam"]``,
``state.get("note", "")``), so a missing key fails the same way, and keys the data had beyond
the declared fields (an older or newer session's) are kept in ``extra`` and given back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, ClassVar

from engine.core.errors import EngineInputError


class _Absent:
    """A field the stage's data did not have (not None: None is a value, e.g. a descent's frame)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True, eq=False)
class StageState(Mapping):
    """A stage's view data, typed; read as a mapping of the fields it has (and ``extra``)."""

    stage: ClassVar[str] = ""
    extra: Mapping = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping) -> StageState:
        names = cls._names()
        known = {k: v for k, v in data.items() if k in names}
        return cls(extra={k: v for k, v in data.items() if k not in names}, **known)

    @classmethod
    def _names(cls) -> tuple:
        return tuple(f.name for f in fields(cls) if f.name != "extra")

    def to_dict(self) -> dict:
        """The plain data it was made from: what a session saves."""
        return dict(self.items())

    def __getitem__(self, key):
        if key != "extra" and key in self._names():
            value = getattr(self, key)
            if value is not ABSENT:
                return value
        elif key in self.extra:
            return self.extra[key]
        raise KeyError(key)

    def __iter__(self):
        yield from (n for n in self._names() if getattr(self, n) is not ABSENT)
        yield from self.extra

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _state(name: str, stage: str, names: str, doc: str, base: type[StageState] = StageState) -> type[StageState]:
    """A stage's state class: a frozen dataclass over ``base`` whose fields are ``names``
    (space-separated), each ``ABSENT`` until the stage's data has it."""
    fields_ = [(n, Any, field(default=ABSENT)) for n in names.split()]
    namespace = {"stage": stage, "__doc__": doc, "__module__": __name__}
    return make_dataclass(name, fields_, bases=(base,), namespace=namespace, frozen=True, eq=False)


Steps = _state("Steps", "steps", "rows note", "The steps table: a row per construction step, and the note under it.")
Construction = _state(
    "Construction",
    "construction",
    "neurons widths weights splits split_labels split_lams admissible split_rows verdict losses",
    "The construction: its neurons, the network diagram's weights, the splits the λ slider moves.",
)
Spectrum = _state(
    "Spectrum", "spectrum", "eigs tol caption", "The Hessian's eigenvalues, at the built network or at the slider's λ."
)
Density = _state(
    "Density",
    "density",
    "grid density extremes trace sum_squares probes steps note",
    "The spectral density, in the spectrum's place past the full-Hessian limit.",
)
Slices = _state(
    "Slices",
    "",
    "t losses envelope lstar gap n_below family predicted directions frame title descent",
    "K random slices through a point, their envelope and L*.",
)
SlicesMin = _state(
    "SlicesMin",
    "slices_min",
    "",
    "Panel (a): slices at the embedded minimum (or at the network, named by what it is).",
    Slices,
)
SlicesSaddle = _state(
    "SlicesSaddle",
    "slices_saddle",
    "",
    "Panel (c): slices at the saddle, or a λ drag's coarse preview of them.",
    Slices,
)
Path = _state(
    "Path",
    "path",
    "lam loss hessian_min verdicts intervals label split",
    "Panel (b): the loss and λ_min(H) along the split's degenerate path.",
)
Probe = _state(
    "Probe",
    "probe",
    "lam loss hessian_min verdict unmet",
    "The λ box: the point at one λ of the split, its loss, λ_min(H) and verdict.",
)
Curves = _state("Curves", "", "curves note frame", "Named curves and horizontal lines on one plot, a note under them.")
Descent = _state("Descent", "descent", "", "Panel (d): the descent line at the saddle.", Curves)
Plane = _state("Plane", "plane", "a b loss center labels", "The 2-D slice's heatmap (rows along b) and surface.")
InfinityBias = _state(
    "InfinityBias", "infinity_bias", "", "Minima at infinity: the loss against the shared last-layer bias.", Curves
)
InfinityGD = _state("InfinityGD", "infinity_gd", "", "Minima at infinity: gradient descent from a large bias.", Curves)
DescendingPath = _state(
    "DescendingPath", "descending_path", "", "The non-increasing path against the straight segment.", Curves
)

STAGE_TYPES: dict[str, type[StageState]] = {
    cls.stage: cls
    for cls in (
        Steps,
        Construction,
        Spectrum,
        Density,
        SlicesMin,
        Path,
        Probe,
        SlicesSaddle,
        Descent,
        Plane,
        InfinityBias,
        InfinityGD,
        DescendingPath,
    )
}


def typed(stage: str, data) -> StageState:
    """``data`` (a stage's plain view data, or a state already) as its stage's state."""
    if isinstance(data, StageState):
        return data
    if stage not in STAGE_TYPES:
        raise EngineInputError(f"unknown minima stage {stage!r}")
    if not isinstance(data, Mapping):
        raise EngineInputError(f"minima stage {stage!r} is {type(data).__name__}, not view data")
    return STAGE_TYPES[stage].from_dict(data)
