"""``obstruction NET``: paper A on your own network, as one JSON object.

A two-layer network (Linear → ReLU | LeakyReLU → Linear) gets the full two-layer report: c_k per
neuron, l₊/l₋/l₀, the Poincaré polynomial, β₀, effective components, the component label and the
locked neurons (docs/MATH.md A2–A5); with --data the loss and whether a better fit needs a locked
neuron to flip; with --train the run on from the loaded weights and how far c moved. It is NET as
the app's two-layer .npz (W1, W2), a PyTorch state_dict (.pt/.pth, read with weights_only=True)
without --model, or a torch.export archive (.pt2) whose graph is exactly linear → activation →
linear. The report adds ``layers``: the hidden layer as any network's report gives it.

Any other network gets every hidden unit's rescaling invariant c = ‖w‖² + b² − ‖v‖², its law and
its locked units (docs/MATH.md A9): ``network``, ``format``, ``layers``, ``units``,
``locked_units``, ``laws``. It is NET as a .pt2 of any architecture (read without running its
pickles), a state_dict with --model package.module:factory (the named code builds the module; the
file must match it exactly), or the app's .npz of a deeper MLP (W1, W2, W3, ...).

Either kind takes --checkpoints: state_dicts of the same model (oldest first, read with
weights_only=True) or one run folder written by engine.runs.Recorder; ``drift`` then gives, per
layer, c(t) − c(0) over them and its largest magnitude. --init-share DRAWS gives the mean share of
units with c < 0 per layer at initialisation: fresh factory() draws for --model, else the layers'
own reset_parameters() (an exported graph has none: give its state_dict with --model instead).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..arguments import float_in, int_in, model_and_checkpoints

NAME = "obstruction"
HELP = "paper A's invariants and locked units of your own network (two-layer: the full obstruction report), as JSON"
OPTIMIZERS = ("gd", "flow", "adam")
MAX_STEPS = 10**6
MAX_RECORDED_ROWS = 2000  # --train records at most about this many rows of the trajectory
MAX_DRAWS = 10_000
TWO_LAYER_ONLY = (("data", "--data"), ("train", "--train"), ("activation", "--activation"), ("slope", "--slope"))


def add_arguments(parser) -> None:
    parser.add_argument(
        "network", help="NET: .npz (this app's), .pt/.pth state_dict (two-layer, or any with --model), or .pt2 archive"
    )
    model_and_checkpoints(
        parser,
        "--checkpoints",
        "state_dicts of the same model, oldest first, or one run folder: the drift of c over them",
    )
    parser.add_argument(
        "--init-share",
        type=int_in(1, MAX_DRAWS),
        metavar="DRAWS",
        help="per layer, the mean share of units with c < 0 over DRAWS initialisations",
    )
    parser.add_argument("--data", help="two-layer: data .npz with X, Y or .csv whose last column is y")
    parser.add_argument(
        "--activation", help="a state_dict's activation: relu (default) or leaky_relu; .npz and .pt2 name their own"
    )
    parser.add_argument("--slope", type=float_in(0.0, 1.0), help="leaky ReLU slope γ (default 0.01)")
    parser.add_argument("--train", type=int_in(1, MAX_STEPS), metavar="STEPS", help="two-layer: train on STEPS steps")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="gd", help="gd (default), flow or adam")
    parser.add_argument("--lr", type=float_in(1e-12, 1e3), default=0.01, help="step size h (flow: horizon STEPS·h)")


def run(args) -> int:
    from engine.core.exports import json_default

    path = Path(args.network)
    two_layer, graph = _is_two_layer(path, args.model)
    if two_layer:
        out = _two_layer_report(args)
        module, factory = _two_layer_module(path, args), None
        out["layers"] = _report(path, module)["layers"]
    else:
        given = [flag for attr, flag in TWO_LAYER_ONLY if getattr(args, attr) is not None]
        if given:
            raise _error(
                f"{path}: {', '.join(given)} apply only to a two-layer network (Linear → ReLU | LeakyReLU → "
                "Linear); this one is read as any network, for its invariants"
            )
        module, fmt, factory = (graph, "pt2", None) if graph is not None else _any_module(path, args.model)
        out = {"network": str(path), "format": fmt, **_report(path, module)}
    if args.checkpoints:
        out |= _drift(module, args.checkpoints)
    if args.init_share:
        out["init_share"] = _init_share(module, factory, args.init_share)
    print(json.dumps(out, indent=2, default=json_default))
    return 0


def _error(message: str):
    from engine.core.errors import EngineInputError

    return EngineInputError(message)


# ------------------------------------------------------------------ which reader
def _is_two_layer(path: Path, model_spec: str | None) -> tuple[bool, object]:
    """Whether NET is read as a two-layer network, by its structure: a state_dict without --model,
    the app's .npz with W1 and W2 only, a .pt2 whose graph is linear → activation → linear. Files
    the two-layer reader refuses for their format stay with it, so its reason is the one printed.
    Second, a .pt2's graph module once read (None for other files)."""
    suffix = path.suffix.lower()
    if model_spec is not None:
        if suffix in (".pt2", ".npz"):
            raise _error(f"{path}: a {suffix} file holds its own network; --model is for a state_dict (.pt/.pth)")
        return False, None
    from engine.io.two_layer_file import holds_deeper_mlp, is_two_layer_graph

    if suffix == ".npz" and path.is_file():
        return not holds_deeper_mlp(path), None
    if suffix == ".pt2" and path.is_file():
        from engine.io.pt2_program import read_exported_module

        graph = read_exported_module(path).module
        return is_two_layer_graph(graph.graph), graph
    return True, None


# ------------------------------------------------------------------ the two-layer network
def _two_layer_report(args) -> dict:
    """Today's two-layer report (and training run), exactly as ``obstruction_job`` gives it."""
    from engine.core.progress import run_to_completion
    from engine.topology.obstruction import obstruction_job
    from engine.topology.training import TrainConfig

    config = None
    if args.train:
        stride = max(1, args.train // MAX_RECORDED_ROWS)
        config = TrainConfig(optimizer=args.optimizer, lr=args.lr, steps=args.train, stride=stride)
    job = obstruction_job(args.network, args.activation, args.slope, args.data, config)
    return run_to_completion(job)


def _two_layer_module(path: Path, args):
    """The two-layer network as an nn.Module of two nn.Linear layers named as the file names them
    (a state_dict's keys, a .pt2's parameters; ``0`` and ``2`` for the app's .npz, as
    ``engine.landscape.operations.sequential_of`` names an MLP), so that checkpoints of it match
    and reset_parameters() exists."""
    from engine.io import torch_state
    from engine.io.two_layer_file import load_two_layer

    net = load_two_layer(path, args.activation, args.slope)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        names = ("0", "2")
    elif suffix == ".pt2":
        from engine.io.pt2_program import read_exported_module

        graph = read_exported_module(path).module.graph
        first, second = (n for n in graph.nodes if n.op == "call_function" and str(n.target).startswith("aten.linear"))
        names = tuple(str(n.args[1].target).removesuffix(".weight") for n in (first, second))
    else:
        names = tuple(name for name, _, _ in torch_state._linear_layers(path, torch_state._read_state_dict(path)))
    return _named_two_layer(names, net)


def _named_two_layer(names: tuple[str, str], net):
    """f(x) = second(σ(first(x))) as an nn.Module with the two nn.Linear layers at ``names`` (dotted
    paths), holding ``net``'s float64 weights, in eval mode."""
    import torch

    class TwoLayerModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.names, self.slope = names, net.gamma

        def forward(self, x):
            hidden = self.get_submodule(self.names[0])(x)
            act = torch.nn.functional.leaky_relu(hidden, self.slope) if self.slope else torch.relu(hidden)
            return self.get_submodule(self.names[1])(act)

    module = TwoLayerModule()
    for name, (W, b) in zip(names, ((net.W1, net.b1), (net.W2, net.b2))):
        layer = torch.nn.Linear(W.shape[1], W.shape[0], bias=b is not None, dtype=torch.float64)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(W))
            if b is not None:
                layer.bias.copy_(torch.from_numpy(b))
        *parents, last = name.split(".")
        owner = module
        for part in parents:
            if not hasattr(owner, part):
                owner.add_module(part, torch.nn.Module())
            owner = getattr(owner, part)
        owner.add_module(last, layer)
    return module.eval()


# ------------------------------------------------------------------ any network
def _any_module(path: Path, model_spec: str | None):
    """(module, format, factory or None) for a .pt2, a state_dict with --model or a deep MLP .npz."""
    suffix = path.suffix.lower()
    if not path.is_file():
        raise _error(f"{path}: no such network file")
    if suffix == ".pt2":
        from engine.io.pt2_program import read_exported_module

        return read_exported_module(path).module, "pt2", None
    if suffix == ".npz":
        from engine.landscape.networks import read_network
        from engine.landscape.operations import sequential_of

        net = read_network(path)
        return sequential_of(net.arch, net.params), "npz", None
    if suffix not in (".pt", ".pth"):
        raise _error(f"{path}: with --model, NET is a state_dict (.pt/.pth)")
    from engine.io import torch_state
    from engine.io.module_network import build_module, check_state_dict

    module = build_module(model_spec)
    module.load_state_dict(check_state_dict(path, torch_state._read_state_dict(path), module))
    return module.eval(), f"state_dict + {model_spec}", lambda: build_module(model_spec)


def _report(path: Path, module) -> dict:
    """``invariants_report`` of the module's own weights; an error names the file."""
    from engine.core.errors import EngineInputError
    from engine.topology.unit_invariants import invariants_report, layer_invariants

    try:
        return invariants_report(layer_invariants(module))
    except EngineInputError as e:
        raise _error(f"{path}: {e}") from None


# ------------------------------------------------------------------ over checkpoints and initialisations
def _drift(module, checkpoints: list[str]) -> dict:
    """``checkpoints`` (the labels read) and ``drift``: per layer, c(t) − c(0) (T, units) and its
    largest magnitude, for state_dict files or one run folder, each checked to be of ``module``."""
    import numpy as np

    from engine.topology.unit_invariants import invariant_drift

    paths = [Path(p) for p in checkpoints]
    out: dict = {}
    if any(p.is_dir() for p in paths):
        if len(paths) != 1:
            raise _error("--checkpoints: a run folder is given alone, not among state_dict files")
        from engine.runs import open_run

        run = open_run(paths[0])
        steps = [int(s) for s in run.checkpoint_steps]
        if not steps:
            raise _error(f"--checkpoints {paths[0]}: the run has no checkpoints yet")
        states = [_checked(f"{paths[0]} step {s}", run.checkpoint(s), module) for s in steps]
        out |= {"run": str(paths[0]), "checkpoints": steps}
    else:
        from engine.io import torch_state

        states = [_checked(str(p), torch_state._read_state_dict(p), module) for p in paths]
        out["checkpoints"] = [str(p) for p in paths]
    rows = []
    for name, dc in invariant_drift(module, states):
        rows.append({"name": name, "dc": dc.tolist(), "max_abs_drift": float(np.max(np.abs(dc)))})
    return out | {"drift": rows}


def _checked(where: str, state: dict, module) -> dict:
    """``state`` once its names and shapes are exactly the module's; one line naming ``where`` otherwise."""
    import torch

    expected = module.state_dict()
    for key in expected:
        if key not in state:
            raise _error(f"--checkpoints {where}: a checkpoint of another architecture: it lacks the model's {key!r}")
    for key, value in state.items():
        if key not in expected:
            raise _error(f"--checkpoints {where}: a checkpoint of another architecture: the model has no {key!r}")
        if not isinstance(value, torch.Tensor):
            raise _error(f"--checkpoints {where}: {key!r} is a {type(value).__name__}, not a tensor")
        if tuple(value.shape) != tuple(expected[key].shape):
            raise _error(
                f"--checkpoints {where}: a checkpoint of another architecture: {key!r} has shape "
                f"{tuple(value.shape)}, the model's {tuple(expected[key].shape)}"
            )
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise _error(f"--checkpoints {where}: {key!r} contains NaN or inf")
    return state


def _init_share(module, factory, draws: int) -> dict[str, float]:
    """Per layer, the mean share of units with c < 0 over ``draws`` initialisations (seed 0)."""
    from engine.core.errors import EngineInputError
    from engine.topology.unit_invariants import initial_negative_share

    try:
        return initial_negative_share(module if factory is None else factory, draws=draws, seed=0)
    except EngineInputError as e:
        hint = "" if factory is not None else " (here: the state_dict with --model package.module:factory)"
        raise _error(f"--init-share: {e}{hint}") from None
