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


# ------------------------------------------------------------------ architectures (issue #55)
# Small models of the kinds users export: attention, recurrent layers, token inputs, layer norm,
# and parameter names that are not Python identifiers. Each has at most ~2000 parameters, so a
# test can form its Hessian.


class TinyViT(nn.Module):
    """A vision transformer: 4×4 patches of an IMAGE embedded by a convolution, a class token and
    position embeddings, one pre-norm ``nn.TransformerEncoderLayer`` (batch first, GELU), a head on
    the class token."""

    def __init__(self, dim: int = 8, heads: int = 2, classes: int = CLASSES):
        super().__init__()
        self.patch = nn.Conv2d(IMAGE[0], dim, 4, stride=4)
        patches = (IMAGE[1] // 4) * (IMAGE[2] // 4)
        self.cls = nn.Parameter(0.1 * torch.randn(1, 1, dim))
        self.pos = nn.Parameter(0.1 * torch.randn(1, patches + 1, dim))
        self.encoder = nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=16, dropout=0.1, activation="gelu", batch_first=True, norm_first=True
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        tokens = self.patch(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], 1) + self.pos
        return self.head(self.norm(self.encoder(tokens))[:, 0])


TOKENS, VOCABULARY = 6, 11  # sequence length and vocabulary of the token models


class TokenTransformer(nn.Module):
    """Token ids (N, TOKENS) → classes: an ``nn.Embedding``, learned positions, a two-layer
    ``nn.TransformerEncoder`` (post-norm, ReLU), mean over the sequence, a head."""

    def __init__(self, dim: int = 8, heads: int = 2, classes: int = CLASSES):
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, dim)
        self.pos = nn.Parameter(0.1 * torch.randn(1, TOKENS, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=12, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids) + self.pos).mean(1))


SEQUENCE = (5, 4)  # steps, features of the recurrent models' inputs


class RecurrentClassifier(nn.Module):
    """(N, steps, features) → classes: an ``nn.LSTM`` or ``nn.GRU`` (batch first, two layers), its
    last layer's final hidden state through a Linear head."""

    def __init__(self, cell: str = "lstm", hidden: int = 6, classes: int = CLASSES):
        super().__init__()
        self.rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell](SEQUENCE[1], hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        _, state = self.rnn(x)
        hidden = state[0] if isinstance(state, tuple) else state
        return self.head(hidden[-1])


class NormMLP(nn.Module):
    """Flat features → classes: Linear, LayerNorm, GELU, Dropout, twice, and a head."""

    def __init__(self, inputs: int = 10, width: int = 16, classes: int = CLASSES):
        super().__init__()
        layers = []
        for n in (inputs, width):
            layers += [nn.Linear(n, width), nn.LayerNorm(width), nn.GELU(), nn.Dropout(0.2)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


class HyphenatedStage(nn.Module):
    """torchvision's RegNet names its blocks "block1-0": submodules registered under names that
    are not Python identifiers (add_module takes any string without a dot)."""

    def __init__(self, channels: int, blocks: int):
        super().__init__()
        for i in range(blocks):
            block = nn.Sequential(
                nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU()
            )
            self.add_module(f"block1-{i}", block)

    def forward(self, x):
        for block in self.children():
            x = x + block(x)
        return x


class HyphenatedNet(nn.Module):
    """A RegNet-shaped CNN whose parameters are named like "trunk_output.block1.block1-0.0.weight"."""

    def __init__(self, channels: int = 4, classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(IMAGE[0], channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU())
        self.trunk_output = nn.Sequential()
        self.trunk_output.add_module("block1", HyphenatedStage(channels, 2))
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        return self.fc(self.trunk_output(self.stem(x)).mean((2, 3)))


class GatedCNN(nn.Module):
    """MobileNetV3's pieces: Conv, BatchNorm and Hardswish, then a squeeze-and-excitation gate
    through ``nn.Hardsigmoid``, whose backward torch cannot differentiate again."""

    def __init__(self, channels: int = 6, squeezed: int = 3, classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(IMAGE[0], channels, 3, padding=1), nn.BatchNorm2d(channels), nn.Hardswish())
        self.squeeze, self.excite = nn.Conv2d(channels, squeezed, 1), nn.Conv2d(squeezed, channels, 1)
        self.gate = nn.Hardsigmoid()
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        h = self.stem(x)
        scale = self.gate(self.excite(torch.relu(self.squeeze(h.mean((2, 3), keepdim=True)))))
        return self.fc((h * scale).mean((2, 3)))


def settled(model: nn.Module, x: torch.Tensor, seed: int = 0) -> nn.Module:
    """``model`` in eval mode after a few train-mode forwards on perturbed ``x`` (for float inputs),
    so that its batch norms' running statistics are not the defaults."""
    if x.is_floating_point() and any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        generator = torch.Generator().manual_seed(seed)
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(1.5 * x + 0.3 * torch.randn(x.shape, generator=generator))
    return model.eval()


def architecture(name: str, seed: int = 0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """(model in eval mode, inputs X of 10 samples, integer labels Y) for one of ARCHITECTURES."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed + 1)
    n = 10
    if name == "vit":
        model, X = TinyViT(), torch.randn(n, *IMAGE, generator=generator)
    elif name == "token_transformer":
        model, X = TokenTransformer(), torch.randint(0, VOCABULARY, (n, TOKENS), generator=generator)
    elif name in ("lstm", "gru"):
        model, X = RecurrentClassifier(name), torch.randn(n, *SEQUENCE, generator=generator)
    elif name == "norm_mlp":
        model, X = NormMLP(), torch.randn(n, 10, generator=generator)
    elif name == "hyphenated":
        model, X = HyphenatedNet(), torch.randn(n, *IMAGE, generator=generator)
    elif name == "gated_cnn":
        model, X = GatedCNN(), torch.randn(n, *IMAGE, generator=generator)
    else:
        raise ValueError(name)
    Y = torch.randint(0, CLASSES, (n,), generator=generator)
    return settled(model, X, seed), X, Y


ARCHITECTURES = ("vit", "token_transformer", "lstm", "gru", "norm_mlp", "hyphenated", "gated_cnn")


def export_model(model: nn.Module, x: torch.Tensor, path: Path) -> Path:
    """``model`` in eval mode saved by ``torch.export.save``, exported on ``x`` with a dynamic batch."""
    dynamic = ({0: torch.export.Dim("batch")},)
    torch.export.save(torch.export.export(model.eval(), (x,), dynamic_shapes=dynamic), path)
    return Path(path)
