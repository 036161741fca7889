"""Bad arguments to ``landscape_lens``'s public functions, one at a time, the others valid.

``Setup`` holds valid arguments: a small classifier with its data, an MLP with paper B's smooth
activation and its data, files and folders. A case is ``(name, call)``; ``call(setup)`` makes one
API call with exactly one argument bad, which must raise ``APIInputError`` (for the engine's own
``Recorder``, ``open_run`` and ``load``: an ``EngineInputError``), one line, before any long work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

NAN, INF = float("nan"), float("inf")


@dataclass
class Setup:
    model: object  # nn.Sequential(Linear(4, 3), Tanh, Linear(3, 2)), float32
    X: object  # (12, 4) float32
    Y: object  # (12,) int64 labels 0 or 1
    mlp: object  # nn.Sequential(Linear(2, 3), Tanh, Linear(3, 1)), float64, for inspect
    XY: tuple  # its data: (6, 2), (6, 1) float64
    folder: Path  # holds "empty/" (a folder), "text.txt", "garbage.pt2", "garbage.npz", "state.pt", "pickle.npz"

    @property
    def data(self):
        return (self.X, self.Y)

    def state(self):
        return {k: v.clone() for k, v in self.model.state_dict().items()}


def make_setup(folder: Path) -> Setup:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    X, Y = torch.randn(12, 4), torch.randint(0, 2, (12,))
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).double()
    XY = (torch.randn(6, 2, dtype=torch.float64), torch.randn(6, 1, dtype=torch.float64))
    (folder / "empty").mkdir(exist_ok=True)
    (folder / "text.txt").write_text("not a model\n")
    (folder / "garbage.pt2").write_bytes(b"PK\x03\x04 not really a zip")
    (folder / "garbage.npz").write_bytes(b"not a zip")
    torch.save(model.state_dict(), folder / "state.pt")
    objects = np.empty(2, dtype=object)
    objects[:] = [1, "x"]
    np.savez(folder / "pickle.npz", X=objects, Y=np.zeros(2))
    np.savez(folder / "other.npz", A=np.zeros(3))
    return Setup(model, X, Y, mlp, XY, folder)


def _each(function: str, argument: str, values, call) -> list:
    return [(f"{function}-{argument}-{i}-{value!r:.30}", _bound(call, value)) for i, value in enumerate(values)]


def _bound(call, value):
    return lambda s: call(s, value(s) if callable(value) and getattr(value, "lazy", False) else value)


def lazy(f):
    """A value made from the setup (a tensor of the wrong shape, a file path)."""
    f.lazy = True
    return f


def _torch():
    import torch

    return torch


# ------------------------------------------------------------------ the shared arguments
def bad_models():
    torch = _torch()
    return [
        None,
        42,
        "nothing.pt2",
        {"a": 1},
        torch.zeros(3),
        torch.nn.Linear,
        lazy(lambda s: s.folder / "empty"),
        lazy(lambda s: s.folder / "text.txt"),
        lazy(lambda s: s.folder / "garbage.pt2"),
        lazy(lambda s: s.folder / "garbage.npz"),
        lazy(lambda s: s.folder / "state.pt"),  # a state_dict without factory=
        lazy(lambda s: str(s.folder / "pickle.npz")),
        lazy(lambda s: s.folder / "other.npz"),
        lazy(lambda s: lambda x: x),
        lazy(lambda s: torch.nn.Sequential()),  # no parameters
        lazy(lambda s: torch.nn.Linear(5, 2)),  # another input width
    ]


def bad_data():
    torch = _torch()
    return [
        None,
        42,
        "missing.npz",
        lazy(lambda s: (s.X,)),
        lazy(lambda s: (s.X, s.Y, s.Y)),
        lazy(lambda s: (s.X[:5], s.Y)),
        lazy(lambda s: (np.array([["a"] * 4] * 12), s.Y)),
        lazy(lambda s: (s.X.to(torch.complex64), s.Y)),
        lazy(lambda s: (s.X[:0], s.Y[:0])),
        lazy(lambda s: (s.X[:, :3], s.Y)),
        lazy(lambda s: (s.X, s.Y + 5)),
        lazy(lambda s: (s.X, -1 - s.Y)),
        lazy(lambda s: (s.X, s.Y[:, None].expand(12, 3))),
        lazy(lambda s: {"X": s.X, "Y": s.Y}),
        lazy(lambda s: {1, 2}),
        lazy(lambda s: iter([])),
        lazy(lambda s: [(s.X, s.Y), (s.X[:, :3], s.Y)]),
        lazy(lambda s: (np.empty((12, 4), dtype=object), s.Y)),
        lazy(lambda s: (s.X.numpy().astype("m8[s]"), s.Y)),
        lazy(lambda s: s.folder / "pickle.npz"),
        lazy(lambda s: s.folder / "other.npz"),
        lazy(lambda s: s.folder / "text.txt"),
        lazy(lambda s: s.folder / "empty"),
        lazy(lambda s: torch.utils.data.TensorDataset(s.X[:0], s.Y[:0])),
        lazy(lambda s: (s.X, s.Y.float())),  # float targets for a (12, 2) output: no shape to match
    ]


def bad_losses():
    return [
        "l2",
        "",
        None,
        3,
        "SUM",
        lazy(lambda s: lambda m, b: m(b[0])),  # not a scalar
        lazy(lambda s: lambda m, b: 1 / 0),
        lazy(lambda s: lambda m, b: "loss"),
        lazy(lambda s: lambda m: 0.0),  # the wrong arity
        lazy(lambda s: lambda m, b: m(b[0]).sum() * NAN),
    ]


COMMON = {
    "dtype": ["float16", "int", None, 3, "float128", "complex128", "bfloat16"],
    "device": ["gpu", "cuda:99", "tpu", None, 3, "", "meta", "cpu:x"],
    "batch_size": [0, -1, 1.5, "4", NAN, 10**30],
    "factory": [lazy(lambda s: lambda: s.model)],  # with a module: builds nothing
}


def _common(function: str, call) -> list:
    """The model, data, loss, dtype, device, batch size and factory of a function taking them;
    ``call(s, **bad)``."""
    out = _each(function, "model", bad_models(), lambda s, v: call(s, model=v))
    out += _each(function, "data", bad_data(), lambda s, v: call(s, data=v))
    out += _each(function, "loss", bad_losses(), lambda s, v: call(s, loss=v))
    for argument, values in COMMON.items():
        out += _each(function, argument, values, lambda s, v, a=argument: call(s, **{a: v}))
    return out


# ------------------------------------------------------------------ each function
def plane_cases() -> list:
    import landscape_lens as ll

    def plane(s, **options):
        model = options.pop("model", s.model)
        data = options.pop("data", s.data)
        return ll.plane(model, data, **(dict(points=3, progress=False) | options))

    out = _common("plane", plane)
    bad = {
        "points": [0, 1, -5, 2.5, "51", None, True, 10**9, NAN],
        "extent": [-1.0, 0.0, NAN, INF, "1", None, -INF],
        "directions": [
            "sideways",
            None,
            3,
            lazy(lambda s: (np.zeros(3),)),
            lazy(lambda s: (np.zeros(3), np.zeros(3))),
            lazy(lambda s: (np.full(23, NAN), np.ones(23))),
            ("a", "b"),
            lazy(lambda s: (np.ones(23), np.ones(23), np.ones(23))),
            lazy(lambda s: (np.ones((23, 1)), np.ones(23))),
            lazy(lambda s: (np.ones(23) * 1j, np.ones(23))),
        ],
        "ignore": ["all", None, 3, "BIASES", ""],
        "seed": [-1, 2**64, 1.5, "0", NAN, True],
    }
    for argument, values in bad.items():
        out += _each("plane", argument, values, lambda s, v, a=argument: plane(s, **{a: v}))
    return out


def hessian_cases() -> list:
    import landscape_lens as ll

    def hessian(s, **options):
        model = options.pop("model", s.model)
        data = options.pop("data", s.data)
        return ll.hessian(model, data, **(dict(top_k=1, probes=2, progress=False) | options))

    out = _common("hessian", hessian)
    bad = {
        "top_k": [0, -1, 1.5, "3", 10**6, None],
        "bottom_k": [-1, 10**6, 1.5, "0", None],
        "probes": [0, -1, 2.5, "1", None, 10**12],
        "steps": [0, -1, 1.5, "80", None],
        "density_probes": [-1, 1.5, "10", None],
        "tol": [-1.0, NAN, INF, "0", None],
        "full": ["yes", 2, "no"],
        "seed": [-1, 2**64, "0", 1.5],
    }
    for argument, values in bad.items():
        extra = {"density": True} if argument == "density_probes" else {}
        out += _each("hessian", argument, values, lambda s, v, a=argument, e=extra: hessian(s, **{a: v}, **e))
    return out


def interpolation_cases() -> list:
    import landscape_lens as ll

    torch = _torch()

    def interpolation(s, **options):
        model = options.pop("model", s.model)
        model_b = options.pop("model_b", s.state())
        data = options.pop("data", s.data)
        return ll.interpolation(model, model_b, data, **(dict(points=3, progress=False) | options))

    out = _common("interpolation", interpolation)
    bad = {
        "model_b": [
            None,
            3,
            "missing.pt",
            lazy(lambda s: torch.nn.Linear(4, 2)),
            lazy(lambda s: {k: v[..., :1] for k, v in s.model.state_dict().items()}),
            lazy(lambda s: {k: "x" for k in s.model.state_dict()}),
            lazy(lambda s: dict(list(s.model.state_dict().items())[:2])),
            lazy(lambda s: {k: v.to(torch.complex64) for k, v in s.model.state_dict().items()}),
            lazy(lambda s: s.folder / "text.txt"),
            lazy(lambda s: s.folder / "garbage.pt2"),
            lazy(lambda s: s.folder / "empty"),
            lazy(lambda s: {k: v.numpy().astype(str) for k, v in s.model.state_dict().items()}),
        ],
        "points": [0, 1, -1, 1.5, "3", 10**9, None],
        "lo": [NAN, INF, "0", None, 2.0],
        "hi": [NAN, -INF, "1", None, -1.0, -0.5],
    }
    for argument, values in bad.items():
        out += _each("interpolation", argument, values, lambda s, v, a=argument: interpolation(s, **{a: v}))
    return out


def trajectory_cases() -> list:
    import landscape_lens as ll

    torch = _torch()

    def states(s, n=3):
        return [{k: v + 0.1 * i for k, v in s.model.state_dict().items()} for i in range(n)]

    def trajectory(s, **options):
        checkpoints = options.pop("checkpoints", states(s))
        model = options.pop("model", s.model)
        data = options.pop("data", s.data)
        return ll.trajectory_plane(checkpoints, model, data, **(dict(points=3, progress=False) | options))

    out = _common("trajectory_plane", trajectory)
    bad = {
        "checkpoints": [
            None,
            3,
            [],
            "missing-folder",
            lazy(lambda s: states(s, 1)),
            lazy(lambda s: states(s, 2)),
            lazy(lambda s: [*states(s, 2), torch.nn.Linear(4, 2).state_dict()]),
            lazy(lambda s: [*states(s, 2), "x"]),
            lazy(lambda s: [*states(s, 2), None]),
            lazy(lambda s: s.folder / "empty"),
            lazy(lambda s: str(s.folder / "text.txt")),
            lazy(lambda s: states(s, 1) * 3),  # three equal states: no plane to span
            lazy(lambda s: (st for st in states(s))),
        ],
        "points": [0, 1, "3", 2.5, None],
        "extent": [-1.0, 0.0, NAN, "1", INF],
    }
    for argument, values in bad.items():
        out += _each("trajectory_plane", argument, values, lambda s, v, a=argument: trajectory(s, **{a: v}))
    return out


def lens_cases() -> list:
    """invariants, invariant_drift, initial_negative_share, inspect, persistence."""
    import landscape_lens as ll

    torch = _torch()
    models = [None, 42, "missing.pt2", {"a": 1}, lazy(lambda s: s.folder / "text.txt")]
    models += [lazy(lambda s: s.folder / "garbage.pt2"), lazy(lambda s: s.folder / "garbage.npz")]
    out = _each("invariants", "model", models, lambda s, v: ll.invariants(v))
    out += _each("invariant_drift", "model", models, lambda s, v: ll.invariant_drift(v, [s.state()] * 2))
    drift_checkpoints = [None, 3, "missing-folder", lazy(lambda s: [torch.nn.Linear(4, 2).state_dict()])]
    drift_checkpoints += [lazy(lambda s: [s.state(), "x"]), lazy(lambda s: s.folder / "empty")]
    out += _each("invariant_drift", "checkpoints", drift_checkpoints, lambda s, v: ll.invariant_drift(s.model, v))
    factories = [None, 3, "x", lazy(lambda s: lambda: 3), lazy(lambda s: lambda: None)]
    out += _each("initial_negative_share", "model", factories, lambda s, v: ll.initial_negative_share(v))
    out += _each(
        "initial_negative_share",
        "draws",
        [0, -1, 1.5, "2", None],
        lambda s, v: ll.initial_negative_share(s.model, draws=v),
    )
    out += _each(
        "initial_negative_share", "seed", [-1, "0", 1.5, 2**64], lambda s, v: ll.initial_negative_share(s.model, seed=v)
    )
    inspect_models = [
        None,
        3,
        "missing.npz",
        lazy(lambda s: torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))),
        lazy(lambda s: torch.nn.Linear(2, 1)),
        lazy(lambda s: s.model),  # two outputs, float32: still an MLP, but its data is the other's
        lazy(lambda s: torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1, bias=False))),
        lazy(lambda s: s.folder / "text.txt"),
    ]
    out += _each("inspect", "model", inspect_models, lambda s, v: ll.inspect(v, s.XY, progress=False))
    inspect_data = [None, 3, "missing.npz", lazy(lambda s: (s.XY[0][:, :1], s.XY[1])), lazy(lambda s: (s.XY[0],))]
    inspect_data += [lazy(lambda s: (s.XY[0], s.XY[1][:2])), lazy(lambda s: (s.XY[0] * NAN, s.XY[1]))]
    out += _each("inspect", "data", inspect_data, lambda s, v: ll.inspect(s.mlp, v, progress=False))
    out += _each("inspect", "loss", ["l2", None, 3, ""], lambda s, v: ll.inspect(s.mlp, s.XY, loss=v, progress=False))
    grids = [None, "abc", np.zeros(3), np.zeros((2, 2, 2)), np.zeros((0, 0)), np.full((3, 3), NAN)]
    grids += [np.array([[1, "a"]], dtype=object), np.ones((3, 3)) * 1j, [[1, 2], [3]], 5.0]
    out += _each("persistence", "grid", grids, lambda s, v: ll.persistence(v))
    return out


def engine_cases() -> list:
    """``load``, ``open_run`` and ``Recorder``: EngineInputError, one line."""
    import landscape_lens as ll

    torch = _torch()
    paths = [None, 3, "missing.npz", "", lazy(lambda s: s.folder / "garbage.npz")]
    paths += [lazy(lambda s: s.folder / "empty"), lazy(lambda s: s.folder / "other.npz")]
    paths += [lazy(lambda s: s.folder / "pickle.npz"), lazy(lambda s: s.folder / "text.txt")]
    out = _each("load", "path", paths, lambda s, v: ll.load(v))
    runs = [None, 3, "missing-folder", lazy(lambda s: s.folder / "text.txt"), lazy(lambda s: s.folder / "empty")]
    runs += [b"bytes", lazy(lambda s: str(s.folder / "empty") + "\0")]
    out += _each("open_run", "run_dir", runs, lambda s, v: ll.open_run(v))

    def recorder(s, **options):
        run_dir = options.pop("run_dir", s.folder / "recorder-run")
        model = options.pop("model", s.model)
        if "sharpness_every" in options and options.get("sharpness_data") is None:
            options["sharpness_data"] = s.data
        return ll.Recorder(run_dir, model, **options)

    bad = {
        "run_dir": [lazy(lambda s: s.folder / "text.txt"), lazy(lambda s: s.folder / "text.txt" / "x")],
        "model": [None, 3, {"w": torch.zeros(2)}, "model.pt"],
        "every": [0, -1, 1.5, "2", None, True],
        "sharpness_every": [0, -1, "1", 1.5],
        "sharpness_data": [3, "x", lazy(lambda s: (s.X,)), lazy(lambda s: (s.X, s.Y, s.Y))],
        "loss": ["l2", 3, ""],
        "max_checkpoints": [1, 0, "5", 1.5, -3],
    }
    for argument, values in bad.items():
        extra = {"sharpness_every": 2} if argument == "sharpness_data" else {}
        if argument == "loss":
            extra = {"sharpness_every": 2}
        out += _each("Recorder", argument, values, lambda s, v, a=argument, e=extra: recorder(s, **(e | {a: v})))
    return out


def all_cases() -> list:
    cases = [*plane_cases(), *hessian_cases(), *interpolation_cases(), *trajectory_cases(), *lens_cases()]
    cases += engine_cases()
    names = [name for name, _ in cases]
    assert len(set(names)) == len(names), "case names must be distinct"
    return cases


ENGINE_FUNCTIONS = ("load", "open_run", "Recorder")  # the engine's own: EngineInputError
