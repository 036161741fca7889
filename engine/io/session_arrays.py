"""Saved arrays checked against what they must be before anything uses them (Qt-free, so every
front end and the tests can call it; reading them, header first, is engine.core.npz):

- ``check_arrays``: a dict of named arrays against a declared ``Schema`` (dtype kinds, axes, and
  which axes share a length, e.g. "loss has the same length as step"), raising EngineInputError
  naming the first problem. The schemas below are exactly the arrays a session saves
  (``gui.session`` writes each workspace's ``session_state()``); ``check_workspace_results`` picks
  the schemas for one workspace's saved results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from engine.core.errors import EngineInputError

# ------------------------------------------------------------------------------- array schemas
KIND_NAMES = {"f": "floating-point", "iu": "integer", "b": "boolean", "biuf": "real numeric"}


@dataclass(frozen=True)
class ArraySpec:
    """One named array: its dtype kinds (numpy's ``dtype.kind`` letters, "f" floats, "iu"
    integers) and its axes, one entry each: a name (every axis with that name, in any array of the
    schema, has one length), an int (that exact length) or None (any length)."""

    kinds: str
    axes: tuple
    optional: bool = False


@dataclass(frozen=True)
class Schema:
    what: str  # how messages name the whole, e.g. "saved trajectory"
    arrays: Mapping[str, ArraySpec]
    together: tuple = ()  # groups of names present together or absent together
    at_least: Mapping[str, int] = field(default_factory=dict)  # smallest length of a named axis


def _lookup(values: Mapping, name: str):
    """values["a"]["b"] for "a/b"; a KeyError when any level is missing."""
    node = values
    for part in name.split("/"):
        if not isinstance(node, Mapping):
            raise KeyError(name)
        node = node[part]
    return node


def _present(values: Mapping, name: str) -> bool:
    try:
        return _lookup(values, name) is not None
    except KeyError:
        return False


def check_arrays(values, schema: Schema) -> dict[str, int]:
    """Check ``values`` (a dict of named arrays; "a/b" names look into nested dicts) against
    ``schema``; return the length of every named axis, or raise EngineInputError naming the first
    problem. Entries the schema does not name are not looked at."""
    what = schema.what
    if not isinstance(values, Mapping):
        raise EngineInputError(f"{what}: expected named arrays, got {type(values).__name__}")
    for group in schema.together:
        have = [n for n in group if _present(values, n)]
        if have and len(have) != len(group):
            lacking = [n for n in group if n not in have]
            raise EngineInputError(f"{what}: {', '.join(have)} saved without {', '.join(lacking)}; they come together")
    lengths: dict[str, tuple[int, str, int]] = {}  # axis name -> (length, array, axis index)
    for name, spec in schema.arrays.items():
        if not _present(values, name):
            if spec.optional:
                continue
            raise EngineInputError(f"{what}: missing array {name!r}")
        a = _lookup(values, name)
        if not isinstance(a, np.ndarray):
            raise EngineInputError(f"{what}: {name} is a {type(a).__name__}, not an array")
        if a.dtype.kind not in spec.kinds:
            expected = KIND_NAMES.get(spec.kinds, f"dtype kind {spec.kinds!r}")
            raise EngineInputError(f"{what}: {name} has dtype {a.dtype}; expected {expected} numbers")
        axes = "(" + ", ".join("·" if ax is None else str(ax) for ax in spec.axes) + ")"
        if a.ndim != len(spec.axes):
            raise EngineInputError(f"{what}: {name} has shape {a.shape}; expected {len(spec.axes)}-D {axes}")
        for i, (n, ax) in enumerate(zip(a.shape, spec.axes)):
            if isinstance(ax, int) and n != ax:
                raise EngineInputError(f"{what}: {name} has shape {a.shape}; expected {axes}")
            if not isinstance(ax, str):
                continue
            if ax in lengths and lengths[ax][0] != n:
                m, other, j = lengths[ax]
                same = "length" if a.ndim == 1 and len(schema.arrays[other].axes) == 1 else f"size along {ax}"
                raise EngineInputError(
                    f"{what}: {name} has shape {a.shape} but {other} has shape "
                    f"{_lookup(values, other).shape}; {name} must have the same {same} as {other} "
                    f"({ax}: axis {i} of {name}, axis {j} of {other})"
                )
            lengths.setdefault(ax, (n, name, i))
            if n < schema.at_least.get(ax, 0):
                raise EngineInputError(
                    f"{what}: {name} has shape {a.shape}; needs at least {schema.at_least[ax]} along {ax}"
                )
    return {ax: n for ax, (n, _, _) in lengths.items()}


F, INT = "f", "iu"

# engine.topology.training.Trajectory as gui.workspaces.topology saves it ("trajectory"): None
# fields (b1, b2 without biases, time) are left out, sign_flips is an (F, 2) integer array.
TRAJECTORY = Schema(
    "saved trajectory",
    {
        "step": ArraySpec(INT, ("T",)),
        "W1": ArraySpec(F, ("T", "l", "d")),
        "W2": ArraySpec(F, ("T", "e", "l")),
        "b1": ArraySpec(F, ("T", "l"), optional=True),
        "b2": ArraySpec(F, ("T", "e"), optional=True),
        "loss": ArraySpec(F, ("T",)),
        "c": ArraySpec(F, ("T", "l")),
        "sign_flips": ArraySpec(INT, (None, 2), optional=True),
        "time": ArraySpec(F, ("T",), optional=True),
    },
    together=(("b1", "b2"),),
    at_least={"T": 1, "l": 1, "d": 1, "e": 1},
)

# engine.topology.width_sweep.SweepResult (the Fig. 4 page's "result"; settings and n_diverged
# are not arrays). l_plus runs over 0..max l, so its length is one more than W1's axis L.
SWEEP = Schema(
    "saved Fig. 4 sweep",
    {
        "ls": ArraySpec(INT, ("nL",)),
        "l_plus": ArraySpec(INT, ("P",)),
        "mean": ArraySpec(F, ("nL", "P")),
        "std": ArraySpec(F, ("nL", "P")),
        "runs": ArraySpec(INT, ("R", 3)),
        "test_bce": ArraySpec(F, ("R",)),
        "W1": ArraySpec(F, ("R", "L", "d")),
        "W2": ArraySpec(F, ("R", "L")),
    },
)

# engine.topology.probability.ProbabilityMaps (the Fig. 5 page's "result"), per scheme of
# engine.topology.probability.CLOSED_FORM_SCHEMES; mc rows are (d, l, estimate, standard error).
_SCHEMES = ("xavier_normal", "kaiming_normal")
PROBABILITY_MAPS = Schema(
    "saved Fig. 5 maps",
    {
        "d": ArraySpec(INT, ("nd",)),
        "l": ArraySpec(INT, ("nl",)),
        **{f"closed/{s}": ArraySpec(F, ("nd", "nl")) for s in _SCHEMES},
        **{f"mc/{s}": ArraySpec(F, (None, 4)) for s in _SCHEMES},
    },
)

# The minima workspace's drawn stages (gui.present.minima) that hold arrays; the others
# (steps, construction, probe, descent, infinity_*, descending_path) are lists and numbers.
_SLICES = {
    "t": ArraySpec(F, ("P",)),
    "losses": ArraySpec(F, ("K", "P")),
    "envelope": ArraySpec(F, ("P",)),
}
# The SLQ density both the toolkit tab and, past the full-Hessian limit, the minima tab draw.
DENSITY = Schema(
    "saved spectral density",
    {
        "grid": ArraySpec(F, ("G",)),
        "density": ArraySpec(F, ("G",)),
        "extremes": ArraySpec(F, (2,)),
        "top_eigenvalues": ArraySpec(F, (None,), optional=True),  # a module's
    },
    at_least={"G": 2},
)
MINIMA_STAGES = {
    "spectrum": Schema("saved Hessian spectrum", {"eigs": ArraySpec(F, ("n",))}, at_least={"n": 1}),
    "density": DENSITY,
    "path": Schema(
        "saved degenerate path",
        {"lam": ArraySpec(F, ("P",)), "loss": ArraySpec(F, ("P",)), "hessian_min": ArraySpec(F, ("P",))},
        at_least={"P": 1},
    ),
    "slices_min": Schema("saved slices at the minimum", _SLICES, at_least={"P": 1}),
    "slices_saddle": Schema("saved slices at the saddle", _SLICES, at_least={"P": 1}),
    # the heatmap's rows run along b: loss is (len(b), len(a))
    "plane": Schema(
        "saved loss plane",
        {"a": ArraySpec(F, ("A",)), "b": ArraySpec(F, ("B",)), "loss": ArraySpec(F, ("B", "A"))},
        at_least={"A": 1, "B": 1},
    ),
}
TOPOLOGY_RESULTS = {"training": TRAJECTORY, "fig4": SWEEP, "fig5": PROBABILITY_MAPS}

# The landscape toolkit tab's view state (gui.present.landscape), one page of it: the plane's loss
# is (len(alpha), len(beta)) as the job computed it; paths are (runs, steps, 2), runs may be 0.
TOOLKIT_PAGES = {
    "plane": Schema(
        "saved toolkit plane",
        {
            "alpha": ArraySpec(F, ("A",)),
            "beta": ArraySpec(F, ("B",)),
            "loss": ArraySpec(F, ("A", "B")),
            "paths": ArraySpec(F, (None, None, 2)),
        },
        at_least={"A": 2, "B": 2},
    ),
    "interpolation": Schema(
        "saved interpolation",
        {
            "alpha": ArraySpec(F, ("M",)),
            "loss": ArraySpec(F, ("M",)),
            "accuracy": ArraySpec(F, ("M",), optional=True),  # a classifier's
        },
        at_least={"M": 2},
    ),
    "density": DENSITY,
}


def check_workspace_results(key: str, results) -> None:
    """Check one workspace's saved ``results`` (what its ``session_state()`` returned) against the
    schemas above; EngineInputError names the first problem. Unknown workspaces and stages are
    left to the workspace's own restore, which refuses them."""
    if not isinstance(results, Mapping) or not results:
        return
    if key == "topology":
        schema = TOPOLOGY_RESULTS.get(results.get("mode"))
        if schema is not None:
            check_arrays(results.get("trajectory" if results.get("mode") == "training" else "result"), schema)
    elif key == "minima":
        for stage, schema in MINIMA_STAGES.items():
            if stage in results:
                check_arrays(results[stage], schema)
    elif key == "landscape":
        for page, schema in TOOLKIT_PAGES.items():
            if page in results:
                check_arrays(results[page], schema)
