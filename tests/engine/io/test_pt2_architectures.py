"""pt2_program reads the architectures users export (issue #55): attention, LSTM and GRU, token
inputs, layer norm, parameter names that are not Python identifiers, a fused attention kernel
called by name, float constants and several outputs; each read graph gives the eager model's
outputs, in float32 as exported and in float64 once its parameters are."""

import numpy as np
import pytest
import torch
from torch import nn

from engine.core.errors import EngineInputError
from engine.io import pt2_program
from engine.io.module_network import read_module_network
from engine.io.pt2_program import read_exported_module
from tests.models import ARCHITECTURES, PROGRAM, _edit_json, export_model, rewrite_pt2

FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
MATH = torch.ops.aten._scaled_dot_product_attention_math.default


def float64_state(module) -> dict:
    return {k: v.double() if v.is_floating_point() else v for k, v in module.state_dict().items()}


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_read_graph_is_the_model(exported_architectures, name):
    model, X, _, path, data = exported_architectures[name]
    net = read_module_network(path, data)
    assert net.param_names == tuple(n for n, _ in model.named_parameters())
    assert net.X.dtype == (np.int64 if name == "token_transformer" else np.float32)
    with torch.no_grad():
        torch.testing.assert_close(net.module(X), model(X), rtol=1e-5, atol=1e-6)
        # another batch size than the export's: the batch stayed dynamic
        torch.testing.assert_close(net.module(X[:7]), model(X[:7]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_read_graph_follows_its_parameters_dtype(exported_architectures, name):
    """Given float64 parameters the read graph computes in float64 (the LSTM's and GRU's zero
    initial state was float32 in the graph) and agrees with the eager model made float64."""
    model, X, _, path, _ = exported_architectures[name]
    module = read_exported_module(path).module
    x = X if name == "token_transformer" else X.double()
    reference = model.double()
    try:
        with torch.no_grad():
            want = reference(x)
            got = torch.func.functional_call(module, float64_state(reference), (x,))
    finally:
        model.float()
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-13)
    # no float dtype is left written into the graph
    floats = [
        node
        for node in module.graph.nodes
        for a in torch.fx.node.map_aggregate((node.args, node.kwargs), lambda a: a)
        if isinstance(a, torch.dtype) and a.is_floating_point
    ]
    assert not floats


def test_hyphenated_names_are_read(exported_architectures):
    """torchvision's RegNet names blocks "block1-0": such a parameter is read under its own name."""
    model, X, _, path, data = exported_architectures["hyphenated"]
    names = read_module_network(path, data).param_names
    assert "trunk_output.block1.block1-0.0.weight" in names
    assert names == tuple(n for n, _ in model.named_parameters())


@pytest.mark.parametrize(
    "name, plain",
    [
        ("trunk_output.block1.block1-0.proj.0.weight", True),
        ("layer 1.conv(3x3).weight", True),
        ("0.weight", True),
        ('head.bias"),exec("x', False),
        ("head.b\\x22ias", False),
        ("head..weight", False),
        ("head.", False),
        ("", False),
        ("head.w\neight", False),
        ("h\u00e9ad.weight", False),
    ],
)
def test_state_names(name, plain):
    """A parameter's name may be any printable ASCII without quotes or backslashes, parts joined by
    single dots: FX writes a part into a double-quoted string, which no such part can end."""
    if plain:
        pt2_program._check_name("m.pt2", name, pt2_program.STATE_NAME, "parameter")
    else:
        with pytest.raises(EngineInputError, match="refused: parameter name .* is not plain ASCII"):
            pt2_program._check_name("m.pt2", name, pt2_program.STATE_NAME, "parameter")


def test_quoted_parameter_name_still_refused(exported_architectures, tmp_path):
    """A hyphenated name renamed to hold a quote is refused before torch sees the program."""
    _, _, _, path, data = exported_architectures["hyphenated"]

    def rename(program):
        for spec in program["graph_module"]["signature"]["input_specs"]:
            if "parameter" in spec and spec["parameter"]["parameter_name"] == "fc.bias":
                spec["parameter"]["parameter_name"] = 'fc.bi"as'

    evil = rewrite_pt2(path, tmp_path / "evil.pt2", lambda m: _edit_json(m, PROGRAM, rename))
    with pytest.raises(EngineInputError, match="refused: parameter name 'fc.bi\"as' is not plain ASCII"):
        read_module_network(evil, data)


# ------------------------------------------------------------------ graphs written by hand
class FlashAttention(nn.Module):
    """Self-attention that calls the fused CPU kernel by name, as graphs exported by older torch
    versions did; ``read_lse`` also uses its second output, the log-sum-exp."""

    def __init__(self, read_lse: bool = False, dim: int = 4, heads: int = 2):
        super().__init__()
        self.heads, self.read_lse = heads, read_lse
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        n, steps, dim = x.shape
        q, k, v = self.qkv(x).view(n, steps, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        out, lse = FLASH(q, k, v)
        y = out.transpose(1, 2).reshape(n, steps, dim).mean(1)
        return self.head(y) + (lse.mean((1, 2))[:, None] if self.read_lse else 0.0)


def reference_attention(p: dict, x, heads: int, read_lse: bool):
    """FlashAttention with parameters ``p`` and attention written out: softmax(QKᵀ/√d) V."""
    n, steps, dim = x.shape
    qkv = nn.functional.linear(x, p["qkv.weight"], p["qkv.bias"])
    q, k, v = qkv.view(n, steps, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
    scores = q @ k.transpose(-1, -2) / (dim // heads) ** 0.5
    out = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(n, steps, dim).mean(1)
    y = nn.functional.linear(out, p["head.weight"], p["head.bias"])
    return y + (torch.logsumexp(scores, -1).mean((1, 2))[:, None] if read_lse else 0.0)


@pytest.mark.parametrize("read_lse", [False, True])
def test_fused_attention_called_by_name(tmp_path, read_lse):
    """The fused kernel is rewritten to the math op, which has second derivatives, unless the graph
    reads its log-sum-exp (which the math op does not return); either way the outputs are the model's."""
    torch.manual_seed(0)
    model = FlashAttention(read_lse).eval()
    x = torch.randn(5, 3, 4, dtype=torch.float64)
    module = read_exported_module(export_model(model, x[:4].float(), tmp_path / "flash.pt2")).module
    targets = {node.target for node in module.graph.nodes}
    assert (FLASH in targets, MATH in targets) == ((True, False) if read_lse else (False, True))
    state = float64_state(model)
    with torch.no_grad():
        got = torch.func.functional_call(module, state, (x,))
    torch.testing.assert_close(got, reference_attention(state, x, model.heads, read_lse), rtol=1e-12, atol=1e-13)
    if read_lse:
        return
    # a Hessian-vector product through the read graph, forward over reverse, against reverse over
    # reverse through the written-out attention
    names, shapes = list(state), [p.shape for p in state.values()]
    flat = torch.cat([p.reshape(-1) for p in state.values()])
    unflat = lambda f: {n: t.view(s) for n, t, s in zip(names, f.split([s.numel() for s in shapes]), shapes)}
    graph_loss = lambda f: torch.func.functional_call(module, unflat(f), (x,)).square().sum()
    written_loss = lambda f: reference_attention(unflat(f), x, model.heads, False).square().sum()
    v = torch.randn(flat.shape, dtype=torch.float64)
    hv = torch.func.jvp(torch.func.grad(graph_loss), (flat,), (v,))[1]
    want = torch.autograd.functional.hvp(written_loss, flat, v)[1]
    torch.testing.assert_close(hv, want, rtol=1e-10, atol=1e-12)


class MixedByConstant(nn.Module):
    """A Linear, then a fixed float32 tensor that is neither a parameter nor a buffer (an export
    lifts it as a constant), then a head."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 4)
        self.mix = torch.randn(4, 4, generator=torch.Generator().manual_seed(3))
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.tanh(self.linear(x)) @ self.mix)


def test_float_constant_follows_the_parameters(tmp_path):
    torch.manual_seed(0)
    model = MixedByConstant().eval()
    x = torch.randn(6, 3, dtype=torch.float64)
    module = read_exported_module(export_model(model, x[:4].float(), tmp_path / "mix.pt2")).module
    state = float64_state(model)
    with torch.no_grad():
        got = torch.func.functional_call(module, state, (x,))
        want = nn.functional.linear(
            torch.tanh(nn.functional.linear(x, state["linear.weight"], state["linear.bias"])) @ model.mix.double(),
            state["head.weight"],
            state["head.bias"],
        )
        assert got.dtype == torch.float64
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-13)
        # as exported, in float32, it is the model
        torch.testing.assert_close(module(x[:3].float()), model(x[:3].float()), rtol=1e-6, atol=1e-6)


class TwoOutputs(nn.Module):
    """Returns logits and features, as a tuple or a dict."""

    def __init__(self, as_dict: bool):
        super().__init__()
        self.as_dict = as_dict
        self.body = nn.Linear(3, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        features = torch.relu(self.body(x))
        logits = self.head(features)
        return {"logits": logits, "features": features} if self.as_dict else (logits, features)


@pytest.mark.parametrize("as_dict", [False, True])
def test_several_outputs_are_read(tmp_path, as_dict):
    """A graph returning a tuple or dict of tensors is read, and returns what the model does; a
    loss over them is the caller's (read_module_network's first forward decides what it takes)."""
    torch.manual_seed(0)
    model = TwoOutputs(as_dict).eval()
    x = torch.randn(5, 3)
    module = read_exported_module(export_model(model, x[:4], tmp_path / "two.pt2")).module
    with torch.no_grad():
        got, want = module(x), model(x)
    assert type(got) is type(want)
    for a, b in zip(got.values() if as_dict else got, want.values() if as_dict else want):
        torch.testing.assert_close(a, b)
