"""Initializations placed on an invariant set H(c): draw, fix signs, keep neurons alive, rescale.

This composes engine.topology.two_layer (drawing weights) and engine.topology.invariants (rescaling onto Q(c_k)),
so that neither of those imports the other. The GUI's training panel and the ``topo-toy``
experiment both initialize through ``initial_params``, so a preset and its ``reproduce`` start
from the same weights bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.topology.invariants import rescale_to
from engine.topology.two_layer import TwoLayerNet, TwoLayerParams, init_params


def initial_params(
    net: TwoLayerNet,
    scheme: str = "kaiming_normal",
    seed=0,
    a: float | None = None,
    c: Sequence[float] | None = None,
    signs: Sequence[int] | None = None,
    positive_inputs: bool = False,
) -> TwoLayerParams:
    """One initialization (``seed``: an int or a numpy Generator).

    ``signs`` (e = 1): the output weights' signs. ``positive_inputs``: input weights replaced by
    their absolute values, so on data in [0, ∞)ᵈ (the toy target's [0, 1]ᵈ) no neuron starts dead
    — the toy's dead-neuron constraint (MATH A8). ``c``: finally rescale each neuron onto Q(c_k)
    (MATH A6); rescaling is by α > 0, so it keeps every sign and the function.
    """
    p = init_params(net, scheme, seed, a=a, signs=signs)
    if positive_inputs:
        p.W1 = np.abs(p.W1)
    return p if c is None else rescale_to(p, c)
