"""The construction as a record that travels and grows by hand: History ↔ Construction, one split
at a time, undo.

A construction is a base network plus γ-splits (docs/MATH.md B2); nothing else moves its weights, so
replaying the splits from the base rebuilds every intermediate network exactly. That is what lets
an exported ``.npz`` (netio.History) restore the λ slider and panels (b)–(d), and what makes
"undo the last split" a replay of all splits but the last.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.mlp import Arch
from engine.core.progress import Job, wait_for
from engine.io.netfile import History, NetFile
from engine.minima import construction as C


def history_of(c: C.Construction) -> History:
    """What Export writes: the base (small) network and every split as (layer, neuron, λ, copy)."""
    return History(
        c.small_arch.widths,
        np.asarray(c.small_params, float),
        tuple((s.layer, s.origin, float(s.lam), s.new) for s in c.splits),
    )


def _replay(base: Arch, theta, splits) -> list[tuple[Arch, np.ndarray]]:
    """The network after each split (embed appends the copy last in its layer)."""
    nets, arch = [], base
    for s in splits:
        if s.new != arch.widths[s.layer]:
            raise EngineInputError(
                f"split of neuron {s.origin + 1} in layer {s.layer} puts its copy at index {s.new}; "
                f"only copies appended last (index {arch.widths[s.layer]}) can be replayed"
            )
        arch, theta = C.embed(arch, theta, s.layer, s.origin, s.lam)
        nets.append((arch, theta))
    return nets


def _split_step(arch: Arch, theta, X, Y, split: C.Split) -> tuple[C.Step, C.Verification]:
    """One Hessian: the Theorem 9 verification of ``split`` and its row of the steps table."""
    eigs = C.hessian_spectrum(arch, theta, X, Y)[0]
    v = C.verify_split(arch, theta, X, Y, split, eigs)
    step = C.step_of(
        f"split neuron {split.origin + 1} of layer {split.layer} (λ={split.lam:g})", arch, theta, X, Y, v.verdict, eigs
    )
    return step, v


def construction_of(net: NetFile, base_step: C.Step, neurons: tuple) -> C.Construction:
    """A loaded network as a construction. With a history, the splits are restored and every
    intermediate network is re-verified (one Hessian each); the file's weights stay the final ones.
    ``base_step``/``neurons``: the loaded network's own inspection (used when there is no history)."""
    X, Y = mlp.check_data(net.arch, net.X, net.Y)  # Y as 1-D targets, like a built construction's
    if net.history is None or not net.history.splits:
        base_arch = (
            net.arch if net.history is None else Arch(net.history.base_widths, net.arch.activation, net.arch.bias)
        )
        return C.Construction(
            net.arch, net.params, X, Y, base_arch, net.params, neurons, neurons, (), (base_step,), (), None
        )
    h = net.history
    base = Arch(h.base_widths, net.arch.activation, net.arch.bias)
    splits = tuple(C.Split(layer, neuron, copy, lam) for layer, neuron, lam, copy in h.splits)
    nets = _replay(base, h.base_params, splits)
    nets[-1] = (net.arch, np.asarray(net.params, float))
    steps, verification = [C.step_of(f"base {'—'.join(map(str, base.widths))}", base, h.base_params, X, Y)], None
    for (arch, theta), s in zip(nets, splits):
        step, verification = _split_step(arch, theta, X, Y, s)
        steps.append(step)
    return C.Construction(
        net.arch,
        net.params,
        X,
        Y,
        base,
        np.asarray(h.base_params, float),
        tuple(C.neuron_bd(base, h.base_params, X, Y)),
        tuple(C.neuron_bd(net.arch, net.params, X, Y)),
        (),
        tuple(steps),
        splits,
        verification,
    )


def add_split(c: C.Construction, layer: int, neuron: int, lam: float) -> C.Construction:
    """γ^r_λ on neuron ``neuron`` of hidden layer ``layer`` of the current network, verified with
    the full Hessian; the split and its step are appended to the construction."""
    if not np.isfinite(lam):
        raise EngineInputError(f"λ = {lam!r} is not a finite number")
    arch, theta = C.embed(c.arch, c.params, layer, neuron, lam)
    split = C.Split(layer, neuron, arch.widths[layer] - 1, float(lam))
    step, v = _split_step(arch, theta, c.X, c.Y, split)
    return replace(
        c,
        arch=arch,
        params=theta,
        neurons=tuple(C.neuron_bd(arch, theta, c.X, c.Y)),
        steps=c.steps + (step,),
        splits=c.splits + (split,),
        verification=v,
    )


def split_job(c: C.Construction, layer: int, neuron: int, lam: float) -> Job[C.Construction]:
    C.embed(c.arch, c.params, layer, neuron, 0.5)  # a bad layer or neuron fails at once, not on the helper thread
    return (
        yield from wait_for(
            lambda stop: add_split(c, layer, neuron, lam), f"splitting neuron {neuron + 1} of layer {layer}"
        )
    )


def undo_split(c: C.Construction) -> C.Construction:
    """The construction without its last split (rebuilt from the base; one B/D pass, no Hessian)."""
    if not c.splits:
        raise EngineInputError("there is no split to undo")
    splits = c.splits[:-1]
    nets = _replay(c.small_arch, c.small_params, splits)
    arch, theta = nets[-1] if nets else (c.small_arch, np.asarray(c.small_params, float))
    verification = None
    if splits:
        verification = C.verify_split(arch, theta, c.X, c.Y, splits[-1])
    return replace(
        c,
        arch=arch,
        params=theta,
        neurons=tuple(C.neuron_bd(arch, theta, c.X, c.Y)),
        steps=c.steps[:-1],
        splits=splits,
        verification=verification,
    )


def admissible_neurons(c: C.Construction) -> tuple:
    """(layer, neuron) of the current network where Theorem 9 applies: B definite and D = 0."""
    return tuple((n.layer, n.neuron) for n in c.neurons if n.admits_split)
