"""The topology tab on a network that is not two-layer: each hidden layer's units' rescaling
invariant c, its law and its locked units (engine.topology.unit_invariants, MATH A9). No Qt.

The tab's network file is read in the job: a file of paper A's shape (linear → activation → linear,
the app's .npz with W1 and W2 only, any state_dict) goes to the two-layer reader as before, so its
quadrics, its training and its refusals are unchanged; a deeper .pt2 (any architecture) or the
app's .npz of a deep MLP is read as any network, as ``main.py obstruction`` reads it, and becomes a
``LayersShown``: one row per hidden layer for gui.views.layer_invariants_view. The tab trains
two-layer networks only, so such a network is shown at the file's weights, not trained (Run reads
it again), and the caption says so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress
from engine.io.two_layer_file import holds_deeper_mlp, is_two_layer_graph
from engine.topology.obstruction import load_two_layer_job

from .topology import continued_training_job, network_job

BAND = (10, 90)  # percentiles of a layer's c drawn as its band


@dataclass(frozen=True, eq=False)
class LayersShown:
    """A network file read as any network: ``rows``, one dict per hidden layer (``layer_rows``),
    and the caption under the view."""

    path: str
    rows: list[dict]
    caption: str

    @property
    def message(self) -> str:
        locked = sum(len(r["locked"]) for r in self.rows)
        return f"read {Path(self.path).name}: {len(self.rows)} hidden layer(s), {locked} locked unit(s)"


def any_network(path) -> object | None:
    """The module of a network file that is not two-layer (a .pt2 of another graph, a deep MLP
    .npz), or None: the two-layer reader takes the file (and refuses it with its own reason)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz" and path.is_file() and holds_deeper_mlp(path):
        from engine.landscape.networks import read_network
        from engine.landscape.operations import sequential_of

        net = read_network(path)  # an nn.Sequential named 0, 2, 4, ... as the API reads the file
        return sequential_of(net.arch, net.params)
    if suffix == ".pt2" and path.is_file():
        from engine.io.pt2_program import read_exported_module

        graph = read_exported_module(path).module
        return None if is_two_layer_graph(graph.graph) else graph
    return None


def layer_rows(layers) -> list[dict]:
    """One plain row per LayerInvariants: its c, law, reason, locked units and c's spread (the
    extremes and the BAND percentiles), with the line naming it."""
    rows = []
    for layer in layers:
        c = np.asarray(layer.c, np.float64)
        low, high = np.percentile(c, BAND)
        locked = [int(k) for k in layer.locked]
        label = f"{layer.name}: {layer.law}, {len(c)} units, c < 0: {layer.negative_share:.0%}, {len(locked)} locked"
        rows.append(
            {"name": layer.name, "c": c, "law": layer.law, "reason": layer.reason, "locked": locked,
             "negative_share": float(layer.negative_share), "min": float(c.min()), "max": float(c.max()),
             "band": (float(low), float(high)), "label": label}
        )  # fmt: skip
    return rows


def layers_shown(path, module) -> LayersShown:
    """``module``'s invariants at its own weights as the view's rows; EngineInputError names the file."""
    from engine.topology.unit_invariants import layer_invariants

    try:
        layers = layer_invariants(module)
    except EngineInputError as error:
        raise EngineInputError(f"{path}: {error}") from None
    if not layers:
        raise EngineInputError(f"{path}: no hidden units (a linear model): there is no c to show")
    n = f"{len(layers)} hidden layer{'s' if len(layers) != 1 else ''}"
    caption = (
        f"<b>{html.escape(Path(path).name)}</b>: {n}, shown at the file's weights (no run: this tab trains "
        "two-layer networks only). Each dot is a unit's c = ‖w‖² + b² − ‖v‖², the bar its layer's range, "
        f"the box its {BAND[0]}–{BAND[1]} % band; ✕ marks a locked unit (c &lt; 0, a single outgoing weight, "
        "whose sign gradient flow keeps)."
    )
    rows = layer_rows(layers)
    laws = "".join(f"<br><b>{html.escape(r['name'])}</b> ({r['law']}): {html.escape(r['reason'])}" for r in rows)
    return LayersShown(str(path), rows, caption + laws)


def _or_two_layer(path, two_layer: Job) -> Job:
    """Job: the file read as any network when it is not two-layer, else ``two_layer`` run as it was."""
    yield Progress(0.0, f"reading {path}")
    module = any_network(path)
    if module is None:
        return (yield from two_layer)
    return layers_shown(path, module)


def network_file_job(path, activation, slope, data, config, data_source, max_l) -> Job:
    """File ▸ Load network: a two-layer file read (network_job), or a deeper one's LayersShown."""
    two_layer = load_two_layer_job(path, activation, slope, data, data_source, max_l)
    return _or_two_layer(path, network_job(two_layer, config))


def continued_or_layers_job(path, activation, slope, data, config, data_source, max_l) -> Job:
    """Run from a network file, in a worker process: a two-layer file read and trained on
    (continued_training_job), or a deeper one's LayersShown (it is not trained)."""
    return _or_two_layer(path, continued_training_job(path, activation, slope, data, config, data_source, max_l))
