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
from dataclasses import dataclass, field, fields
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


@dataclass(frozen=True, eq=False)
class Steps(StageState):
    """The steps table: a row per construction step, and the note under it."""

    stage: ClassVar[str] = "steps"
    rows: list = ABSENT
    note: str = ABSENT


@dataclass(frozen=True, eq=False)
class Construction(StageState):
    """The construction: its neurons, the network diagram's weights, the splits the λ slider moves."""

    stage: ClassVar[str] = "construction"
    neurons: list = ABSENT
    widths: list = ABSENT
    weights: Any = ABSENT
    splits: list = ABSENT
    split_labels: list = ABSENT
    split_lams: Any = ABSENT
    admissible: list = ABSENT
    split_rows: list = ABSENT
    verdict: str = ABSENT
    losses: dict = ABSENT


@dataclass(frozen=True, eq=False)
class Spectrum(StageState):
    """The Hessian's eigenvalues, at the built network or at the slider's λ."""

    stage: ClassVar[str] = "spectrum"
    eigs: Any = ABSENT
    tol: float = ABSENT
    caption: str = ABSENT


@dataclass(frozen=True, eq=False)
class Density(StageState):
    """The spectral density, in the spectrum's place past the full-Hessian limit."""

    stage: ClassVar[str] = "density"
    grid: Any = ABSENT
    density: Any = ABSENT
    extremes: Any = ABSENT
    trace: float = ABSENT
    sum_squares: float = ABSENT
    probes: int = ABSENT
    steps: int = ABSENT
    note: str = ABSENT


@dataclass(frozen=True, eq=False)
class Slices(StageState):
    """K random slices through a point, their envelope and L*."""

    t: Any = ABSENT
    losses: Any = ABSENT
    envelope: Any = ABSENT
    lstar: float = ABSENT
    gap: float = ABSENT
    n_below: int = ABSENT
    family: str = ABSENT
    predicted: Any = ABSENT
    directions: str = ABSENT
    frame: list = ABSENT
    title: str = ABSENT
    descent: Any = ABSENT


@dataclass(frozen=True, eq=False)
class SlicesMin(Slices):
    """Panel (a): slices at the embedded minimum (or at the network, named by what it is)."""

    stage: ClassVar[str] = "slices_min"


@dataclass(frozen=True, eq=False)
class SlicesSaddle(Slices):
    """Panel (c): slices at the saddle, or a λ drag's coarse preview of them."""

    stage: ClassVar[str] = "slices_saddle"


@dataclass(frozen=True, eq=False)
class Path(StageState):
    """Panel (b): the loss and λ_min(H) along the split's degenerate path."""

    stage: ClassVar[str] = "path"
    lam: Any = ABSENT
    loss: Any = ABSENT
    hessian_min: Any = ABSENT
    verdicts: list = ABSENT
    intervals: list = ABSENT
    label: str = ABSENT
    split: int = ABSENT


@dataclass(frozen=True, eq=False)
class Probe(StageState):
    """The λ box: the point at one λ of the split, its loss, λ_min(H) and verdict."""

    stage: ClassVar[str] = "probe"
    lam: float = ABSENT
    loss: float = ABSENT
    hessian_min: float = ABSENT
    verdict: str = ABSENT
    unmet: list = ABSENT


@dataclass(frozen=True, eq=False)
class Curves(StageState):
    """Named curves and horizontal lines on one plot, a note under them."""

    curves: list = ABSENT
    note: str = ABSENT
    frame: Any = ABSENT


@dataclass(frozen=True, eq=False)
class Descent(Curves):
    """Panel (d): the descent line at the saddle."""

    stage: ClassVar[str] = "descent"


@dataclass(frozen=True, eq=False)
class Plane(StageState):
    """The 2-D slice's heatmap (rows along b) and surface."""

    stage: ClassVar[str] = "plane"
    a: Any = ABSENT
    b: Any = ABSENT
    loss: Any = ABSENT
    center: Any = ABSENT
    labels: Any = ABSENT


@dataclass(frozen=True, eq=False)
class InfinityBias(Curves):
    """Minima at infinity: the loss against the shared last-layer bias."""

    stage: ClassVar[str] = "infinity_bias"


@dataclass(frozen=True, eq=False)
class InfinityGD(Curves):
    """Minima at infinity: gradient descent from a large bias."""

    stage: ClassVar[str] = "infinity_gd"


@dataclass(frozen=True, eq=False)
class DescendingPath(Curves):
    """The non-increasing path against the straight segment."""

    stage: ClassVar[str] = "descending_path"


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
