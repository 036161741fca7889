"""An ``nn.Sequential`` of Linear layers and one activation, saved by ``torch.export.save`` (.pt2).

Never ``torch.export.load``: in torch 2.13 it reads weights and constants with
``torch.load(weights_only=False)`` and ``pickle.loads``, so a crafted archive runs code. The
archive is a zip of JSON and raw bytes, and only those are read here:

- ``<model>/models/<name>.json``: the graph. Its nodes must be ``aten.linear`` and one
  supported activation op alternating, each taking the previous node's output;
- ``<model>/data/weights/model_weights_config.json``: each parameter's file, dtype and shape;
  the bytes are read with ``np.frombuffer``. Weights stored as pickles are refused, unread.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.io.netfile import NetFile
from engine.io.pt2_archive import ARCHIVE_DAMAGE, read_archive, read_payload
from engine.io.torch_state import network_from_layers

FLOAT_DTYPES = (7, 8)  # torch._export.serde.schema.ScalarType codes of float32 and float64
ACTIVATION_OPS = {"torch.ops.aten.sigmoid.default": "sigmoid", "torch.ops.aten.tanh.default": "tanh"}
LINEAR_OP = "torch.ops.aten.linear.default"


def load_exported_network(path, data_path) -> NetFile:
    """The exported MLP in ``path`` with the data in ``data_path`` (torchio.load_data); the
    activation comes from the graph itself."""
    path = Path(path)
    if not path.is_file():
        raise EngineInputError(f"{path}: no such file")
    try:
        with zipfile.ZipFile(path) as z:
            graph, weights = _read_archive(path, z)
            parameters = {name: _weight(path, z, name, meta) for name, meta in weights.items()}
        layers, activation = _layers_from_graph(path, graph, parameters)
    except EngineInputError:
        raise
    except (*ARCHIVE_DAMAGE, KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        # a malformed archive or JSON of another layout: name the file, not a traceback
        raise EngineInputError(f"{path}: not a readable torch.export archive ({type(e).__name__}: {e})") from None
    return network_from_layers(path, layers, activation, data_path)


def _read_archive(path, z: zipfile.ZipFile) -> tuple[dict, dict]:
    """The graph and the weights' configs (name → meta) of the one exported program in ``z``."""
    archive = read_archive(path, z)
    return archive.program["graph_module"], archive.weights


def _weight(path, z: zipfile.ZipFile, name: str, meta: dict) -> np.ndarray:
    """A Linear layer's weight or bias in float64, from its raw bytes."""
    if not meta.get("use_pickle", True) and meta["tensor_meta"]["dtype"] not in FLOAT_DTYPES:
        raise EngineInputError(
            f"{path}: parameter {name!r} has dtype code {meta['tensor_meta']['dtype']}; expected float32 or float64"
        )
    return read_payload(path, z, name, meta).astype(np.float64)


def chain(path, graph: dict, parameters: dict) -> tuple[list, str]:
    """The graph's nodes from its one input on, each taking the previous one's output: for a
    Linear ("linear", (name, W, b or None)), for any other op (its target, the node). Refuses other
    inputs (buffers, constants) and any branching. Also returns the last node's output name."""
    spec_of, inputs = {}, []
    for spec in graph["signature"]["input_specs"]:
        if "parameter" in spec:
            spec_of[spec["parameter"]["arg"]["name"]] = spec["parameter"]["parameter_name"]
        elif "user_input" in spec:
            inputs.append(spec["user_input"]["arg"]["as_tensor"]["name"])
        else:
            raise EngineInputError(
                f"{path}: the graph has a {next(iter(spec))} input; only parameters and one input are read"
            )
    if len(inputs) != 1:
        raise EngineInputError(f"{path}: the graph takes {len(inputs)} inputs; this network takes one")
    previous, nodes = inputs[0], []
    for node in graph["graph"]["nodes"]:
        target = node["target"]
        args = [a["arg"].get("as_tensor", {}).get("name") for a in node["inputs"]]
        if args[:1] != [previous]:
            raise EngineInputError(
                f"{path}: node {target} does not take the previous layer's output; "
                "only a plain chain of Linear and activation layers is read"
            )
        if target == LINEAR_OP:
            bias = parameters[spec_of[args[2]]] if len(args) > 2 and args[2] is not None else None
            nodes.append(("linear", (spec_of[args[1]].rsplit(".", 1)[0], parameters[spec_of[args[1]]], bias)))
        else:
            nodes.append((target, node))
        previous = node["outputs"][0]["as_tensor"]["name"]
    return nodes, previous


def unsupported_op(target: str) -> str:
    """An aten target's short name: torch.ops.aten.gelu.default → gelu."""
    return target.rsplit(".", 2)[-2] if target.count(".") >= 2 else target


def _layers_from_graph(path, graph: dict, parameters: dict) -> tuple[list, str]:
    """[(name, W, b or None)] and the activation, from the graph's nodes in order."""
    nodes, previous = chain(path, graph, parameters)
    layers, activations, last = [], set(), None
    for target, item in nodes:
        if target == "linear":
            if last == "linear":
                raise EngineInputError(f"{path}: two Linear layers without an activation between them")
            layers.append(item)
            last = "linear"
        elif target in ACTIVATION_OPS and last == "linear":
            activations.add(ACTIVATION_OPS[target])
            last = "activation"
        else:
            raise EngineInputError(
                f"{path}: unsupported layer or activation {unsupported_op(target)!r}; "
                f"use Linear with {' or '.join(sorted(set(ACTIVATION_OPS.values())))}"
            )
    outputs = [o["user_output"]["arg"]["as_tensor"]["name"] for o in graph["signature"]["output_specs"]]
    if last != "linear" or outputs != [previous]:
        raise EngineInputError(f"{path}: the network must end with a Linear layer (the output is linear)")
    if len(activations) != 1 and len(layers) > 1:
        raise EngineInputError(f"{path}: the hidden layers use {sorted(activations)}; one activation is needed")
    return layers, (activations.pop() if activations else "sigmoid")
