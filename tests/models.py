"""PyTorch models the tests build and export: a small residual CNN with batch norm.

``ResidualCNN`` has every kind of layer the toolkit must read from a ``torch.export`` archive:
conv → batch norm → relu, a residual add, pooling, flatten and a linear head, in under a thousand
parameters so that tests stay fast. ``trained_cnn`` gives its batch norms running statistics
that are not the defaults (0 and 1), so a reader that drops them, or evaluates in train mode,
gives different outputs.
"""

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .files import Payload

IMAGE = (3, 8, 8)  # channels, height, width of the inputs
CLASSES = 3


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(out)))


class ResidualCNN(nn.Module):
    def __init__(self, channels: int = 6, classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(IMAGE[0], channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU())
        self.block = ResidualBlock(channels)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.block(nn.functional.max_pool2d(self.stem(x), 2))), 1))


def trained_cnn(seed: int = 0) -> ResidualCNN:
    """A ResidualCNN in eval mode whose batch norms have seen a few batches (running statistics
    away from 0 and 1); its weights are its random initialization."""
    torch.manual_seed(seed)
    model = ResidualCNN()
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(2.0 * torch.randn(16, *IMAGE) + 0.5)
    return model.eval()


def images(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(n, *IMAGE, generator=torch.Generator().manual_seed(seed))


def export_cnn(model: nn.Module, path: Path, fixed_batch: int | None = None) -> Path:
    """``model`` in eval mode saved by ``torch.export.save``: with a dynamic batch dimension (as the
    README tells users to export), or with the static batch ``fixed_batch``."""
    example = (images(fixed_batch or 4),)
    dynamic = None if fixed_batch else {"x": {0: torch.export.Dim("batch")}}
    torch.export.save(torch.export.export(model.eval(), example, dynamic_shapes=dynamic), path)
    return Path(path)


def residual_cnn() -> ResidualCNN:
    """The factory for ``--model tests.models:residual_cnn``: a fresh ResidualCNN (a state_dict
    then sets every parameter and running statistic)."""
    return ResidualCNN()


def not_a_module() -> dict:
    """A factory that returns something other than an nn.Module."""
    return {"weight": torch.zeros(2)}


def write_data(path: Path, n: int = 10, seed: int = 2) -> Path:
    """``D.npz`` for the CNN: X (n, *IMAGE) float32 images, Y (n,) int64 labels."""
    X = images(n, seed).numpy()
    Y = np.random.default_rng(seed).integers(0, CLASSES, n)
    np.savez(path, X=X, Y=Y)
    return Path(path)


# ------------------------------------------------------------------ crafted archives
def rewrite_pt2(good: Path, evil: Path, edit) -> Path:
    """``good`` copied to ``evil`` with ``edit(members)`` applied first: ``members`` maps each
    member's name *after* the archive's top folder ("models/model.json",
    "data/weights/weight_0", ...) to its bytes; ``edit`` may change, add or drop entries."""
    with zipfile.ZipFile(good) as src:
        top = src.namelist()[0].split("/")[0]
        members = {n.split("/", 1)[1]: src.read(n) for n in src.namelist()}
    edit(members)
    with zipfile.ZipFile(evil, "w") as dst:
        for name, content in members.items():
            dst.writestr(f"{top}/{name}", content)
    return Path(evil)


WEIGHTS, CONSTANTS = "data/weights/model_weights_config.json", "data/constants/model_constants_config.json"
PROGRAM = "models/model.json"


def _edit_json(members: dict, name: str, edit) -> None:
    content = json.loads(members[name])
    edit(content)
    members[name] = json.dumps(content).encode()


def crafted_archives(good: Path, folder: Path, marker: Path) -> dict[str, Path]:
    """Copies of the exported CNN ``good`` that each run a payload (creating ``marker``) in a reader
    that trusts them, as ``torch.export.load`` does:

    - "sample_inputs": its sample inputs replaced by a pickle (unpickled with weights_only=False);
    - "pickled_weight": "head.weight" marked ``use_pickle`` and replaced by a pickle;
    - "pickled_constant": an added constant, stored as a pickle;
    - "parameter_name": "head.weight" renamed so that the module's generated forward calls ``exec``
      (FX splices the name into Python source); the payload runs when the module is called;
    - "size_expression": the dynamic batch's size, an expression that calls ``open`` (torch
      parses sizes with ``sympy.sympify``, an eval); needs ``good`` exported with a dynamic batch;
    - "guards_code": a shape guard that is Python calling ``open``; ``ep.module()`` ``exec``s it
      (when the program has sample inputs, as torch.export.load gives it).
    """
    payload = pickle.dumps(Payload(marker))

    def sample_inputs(m):
        m["data/sample_inputs/model.pt"] = payload

    def pickled_weight(m):
        _edit_json(m, WEIGHTS, lambda c: c["config"]["head.weight"].update(use_pickle=True))
        m["data/weights/" + json.loads(m[WEIGHTS])["config"]["head.weight"]["path_name"]] = payload

    def pickled_constant(m):
        meta = dict(
            json.loads(m[WEIGHTS])["config"]["head.bias"], path_name="tensor_0", use_pickle=True, is_param=False
        )
        _edit_json(m, CONSTANTS, lambda c: c["config"].update(extra=meta))
        m["data/constants/tensor_0"] = payload

    def parameter_name(m):
        # FX writes getattr(self.head, "<name>"): this name closes the string and the call
        evil = f'bias"),exec("open(\'{marker}\',\'w\')"),getattr(getattr(self,"head"),"bias'
        rename = {"head.weight": f"head.{evil}"}
        _edit_json(m, WEIGHTS, lambda c: c.update(config={rename.get(k, k): v for k, v in c["config"].items()}))

        def signature(program):
            for spec in program["graph_module"]["signature"]["input_specs"]:
                if "parameter" in spec:
                    spec["parameter"]["parameter_name"] = rename.get(
                        spec["parameter"]["parameter_name"], spec["parameter"]["parameter_name"]
                    )

        _edit_json(m, PROGRAM, signature)

    def size_expression(m):
        def dynamic_batch(program):  # torch reads it with sympy.sympify, which evals it
            size = program["graph_module"]["graph"]["tensor_values"]["x"]["sizes"][0]["as_expr"]
            size["expr_str"] = f"open('{marker}', 'w') and {size['expr_str']}"

        _edit_json(m, PROGRAM, dynamic_batch)

    def guards_code(m):
        _edit_json(m, PROGRAM, lambda p: p.update(guards_code=[f"open('{marker}', 'w') is not None"]))

    crafted = (sample_inputs, pickled_weight, pickled_constant, parameter_name, size_expression, guards_code)
    edits = {f.__name__: f for f in crafted}
    return {name: rewrite_pt2(good, folder / f"{name}.pt2", edit) for name, edit in edits.items()}
