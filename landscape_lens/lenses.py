"""The two papers' own lenses on a researcher's networks, under the API's conventions.

- Paper A: ``invariants`` gives every hidden unit's rescaling invariant c = ‖w‖² + b² − ‖v‖², the
  law that holds for it (``rescaling``, ``scale`` under batch norm, or ``none``), and the units
  whose outgoing weight c locks in sign (docs/MATH.md A9); ``invariant_drift`` the change of c
  over checkpoints; ``initial_negative_share`` the share of c < 0 at the model's own
  initialisation, per layer (paper A's Fig. 5 for the user's widths).
- Paper B: ``inspect`` gives the critical-point report of an MLP (the gradient, the Hessian's
  spectrum, the verdict, every neuron's B and D and which splits Theorem 9 covers).
- The topology of a sampled landscape: ``persistence`` of a plane (docs/MATH.md C5).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.core.lazy import torch
from landscape_lens.inputs import (
    APIInputError,
    api_errors,
    check_options,
    checkpoint_states,
    pair,
    real_array,
    run_job,
)


def _module(model):
    """A module to read the structure of: an nn.Module, the app's .npz (its MLP) or a .pt2 graph."""
    if isinstance(model, torch.nn.Module):
        return model
    if isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise APIInputError(f"model: {path}: no such file")
        if path.suffix.lower() == ".pt2":
            from engine.io.pt2_program import read_exported_module

            return read_exported_module(path).module
        if path.suffix.lower() == ".npz":
            from engine.landscape.networks import read_network
            from engine.landscape.operations import sequential_of

            net = read_network(path)
            return sequential_of(net.arch, net.params)
        raise APIInputError(f"model: {path}: expected .pt2 or the app's .npz (or pass the nn.Module)")
    raise APIInputError(f"model: a {type(model).__name__}; expected an nn.Module or a path")


@api_errors
def invariants(model, *, example_input=None) -> list:
    """Every hidden layer's rescaling invariants (paper A on any network; docs/MATH.md A9).

    Parameters
    ----------
    model : nn.Module or path
        Traced once with torch.fx for its structure; its own weights give c.
    example_input : tensor, optional
        One batch of inputs, needed only where a flatten's layout cannot be told from the layers.

    Returns
    -------
    list of engine.topology.unit_invariants.LayerInvariants
        One per hidden layer: ``.name`` (the incoming weight's parameter), ``.c`` (one value a
        unit), ``.law``, ``.reason``, ``.locked`` (unit indices), ``.negative_share``.
    """
    from engine.topology.unit_invariants import layer_invariants

    return layer_invariants(_module(model), example_input=example_input)


@api_errors
def invariant_drift(model, checkpoints, *, example_input=None) -> list[tuple[str, np.ndarray]]:
    """c(t) − c(0) per hidden layer over ``checkpoints`` (state_dicts, modules, files or a run
    folder, oldest first): a list of (layer name, array (checkpoints, units))."""
    from engine.topology.unit_invariants import invariant_drift as drift

    return drift(_module(model), checkpoint_states(checkpoints), example_input=example_input)


@api_errors
def initial_negative_share(model_or_factory, *, draws: int = 20, seed: int = 0) -> dict[str, float]:
    """Per hidden layer, the share of units with c < 0 at initialisation: ``draws`` fresh
    ``factory()`` calls, or copies of the model with every submodule's ``reset_parameters()``."""
    from engine.topology.unit_invariants import initial_negative_share as share

    check_options(draws=draws, seed=seed)
    return share(model_or_factory, draws=draws, seed=seed)


@api_errors
def inspect(model, data=None, *, loss: str = "sum", progress: bool = True):
    """Paper B's critical-point report of an MLP: loss, ‖∇L‖, the Hessian's spectrum and verdict,
    every hidden neuron's B and D, and the neurons whose split Theorem 9 covers.

    Parameters
    ----------
    model : nn.Sequential or path
        Linear layers with one smooth activation (sigmoid or tanh) between them and one output,
        or the app's .npz, a state_dict or a .pt2 of such a chain (as ``main.py inspect`` reads).
    data : (X, Y) or path
        Not needed for the app's .npz.
    loss : str
        The loss whose verdicts are reported beside the summed squared error's (``under_loss``).

    Returns
    -------
    dict
        What ``main.py inspect`` prints (its JSON, neurons counted from 1).
    """
    from engine.landscape.losses import paper_b_hypotheses
    from engine.minima.report import inspect_job, loss_verdict

    paper_b_hypotheses(loss)
    net = _paper_b_network(model, data)
    report = run_job(inspect_job(net, str(model) if isinstance(model, (str, Path)) else ""), "inspect", progress)
    verdict = loss_verdict(loss, report.arch, report.verdict, report.grad_norm)
    return dict(report.as_json(), under_loss=verdict.as_json())


def _paper_b_network(model, data):
    from engine.core import mlp
    from engine.io.readers import read_network

    if isinstance(model, (str, Path)):
        if isinstance(data, (str, Path)) or data is None:
            return read_network(model, None, data)
        raise APIInputError("data: a file's network takes its data as a path (.npz or .csv)")
    if data is None:
        raise APIInputError("data: an nn.Module needs data (X, Y)")
    layers = list(model) if isinstance(model, torch.nn.Sequential) else []
    names = {torch.nn.Sigmoid: "sigmoid", torch.nn.Tanh: "tanh"}
    linears, acts = layers[0::2], {type(a) for a in layers[1::2]}
    if not (layers and len(layers) % 2 and all(type(m) is torch.nn.Linear for m in linears) and len(acts) == 1):
        raise APIInputError("model: paper B's inspector takes an nn.Sequential of Linear layers and one activation")
    if next(iter(acts)) not in names:
        raise APIInputError(f"model: paper B's verdicts need a smooth activation (sigmoid, tanh), not {layers[1]}")
    from engine.io.netfile import NetFile

    Ws = [m.weight.detach().double().cpu().numpy() for m in linears]
    bias = {m.bias is not None for m in linears}
    if len(bias) > 1:
        raise APIInputError("model: a bias on every layer or on none")
    bs = [m.bias.detach().double().cpu().numpy() for m in linears] if bias.pop() else None
    arch = mlp.arch_of(Ws, bs, names[next(iter(acts))])
    X, Y = (real_array(f"data: {name}", a) for name, a in zip("XY", pair("data", data)))
    X, Y = mlp.check_data(arch, X, Y)
    return NetFile(arch, mlp.pack(Ws, bs), X, Y)


@api_errors
def persistence(plane_or_grid):
    """The 0-dimensional sublevel-set persistence of a plane's loss grid (8-neighbour; docs/MATH.md
    C5): ``.birth``, ``.death`` (the global minimum's component dies at +inf), ``.birth_index``,
    ``.death_index``. ``basins(p, threshold)``, ``barriers(p, threshold)`` and
    ``basin_map(grid, threshold)`` in ``engine.landscape.persistence`` read it."""
    from engine.landscape.persistence import persistence as pairs

    grid = getattr(plane_or_grid, "loss", plane_or_grid)
    return pairs(real_array("grid", grid))
