"""module_network: any exported or state_dict model loads as the user's module, in eval mode, with
nothing in the file run; bad models and data are one line each."""

import copy
import functools
import json
import operator

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.errors import EngineInputError
from engine.io import module_network as mn
from engine.io.pt2_program import read_exported_module
from tests.models import (
    CLASSES,
    IMAGE,
    PROGRAM,
    WEIGHTS,
    _edit_json,
    crafted_archives,
    export_cnn,
    images,
    rewrite_pt2,
    trained_cnn,
    write_data,
)

DELETE = object()  # a mutation that drops the value
# The loaded graph runs the same float32 ATen kernels as the module: any difference is a
# summation order, a few float32 roundings of the outputs' size (eps32 ≈ 1.2e-7).
CLOSE = {"rtol": 1e-6, "atol": 1e-6}


@pytest.fixture(scope="module")
def model():
    return trained_cnn()


@pytest.fixture(scope="module")
def archives(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cnn")
    return {
        "dynamic": export_cnn(model, folder / "cnn.pt2"),
        "fixed": export_cnn(model, folder / "cnn_batch4.pt2", fixed_batch=4),
        "data": write_data(folder / "D.npz", n=10),
        "folder": folder,
    }


def assert_same_outputs(module, model, x):
    with torch.no_grad():
        want = model(x)
        torch.testing.assert_close(module(x), want, **CLOSE)
        # the same weights in train mode (batch statistics) differ: the comparison can fail (a copy,
        # since a train-mode forward updates the running statistics)
        assert (copy.deepcopy(model).train()(x) - want).abs().max() > 1e3 * CLOSE["atol"]


def test_exported_cnn_is_the_module_in_eval_mode(model, archives):
    graph = read_exported_module(archives["dynamic"])
    assert graph.fixed_batch is None and graph.input_shape == IMAGE and graph.input_dtype == torch.float32
    assert [n for n, _ in graph.module.named_parameters()] == [n for n, _ in model.named_parameters()]
    for n in (5, 11):  # fresh inputs, batch sizes other than the export's
        assert_same_outputs(graph.module, model, images(n, seed=10 + n))
    buffers = dict(model.named_buffers())
    assert {k: v.tolist() for k, v in graph.module.named_buffers()} == {k: v.tolist() for k, v in buffers.items()}


def test_fixed_batch_archive(model, archives):
    net = mn.read_module_network(archives["fixed"], archives["data"])  # 10 samples: not a multiple of 4
    assert net.fixed_batch == 4 and net.source == "pt2"
    assert_same_outputs(net.module, model, images(4, seed=3))
    with pytest.raises(RuntimeError):  # the graph itself takes only its batch: chunks must be exactly 4
        net.module(images(5))


def test_module_network_from_pt2_and_npz(model, archives):
    net = mn.read_module_network(archives["dynamic"], archives["data"])
    with np.load(archives["data"]) as data:
        assert np.array_equal(net.X, data["X"]) and np.array_equal(net.Y, data["Y"])
    assert net.X.dtype == np.float32 and net.Y.dtype == np.int64 and net.fixed_batch is None
    assert net.param_names == tuple(n for n, _ in model.named_parameters())
    assert_same_outputs(net.module, model, torch.from_numpy(net.X))


def test_float64_data_for_a_float32_model(model, archives, tmp_path):
    X = images(5, seed=6).double().numpy()
    np.savez(tmp_path / "D64.npz", X=X, Y=np.arange(5) % CLASSES)
    net = mn.read_module_network(archives["dynamic"], tmp_path / "D64.npz")
    assert net.X.dtype == np.float64 and np.array_equal(net.X, X)  # kept: the loss chooses its precision


def test_integer_inputs_stay_integers(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(7, 4), torch.nn.Flatten(), torch.nn.Linear(12, 2)).eval()
    tokens = torch.randint(0, 7, (5, 3))
    ep = torch.export.export(model, (tokens,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(ep, tmp_path / "tokens.pt2")
    np.savez(tmp_path / "D.npz", X=tokens.numpy().astype(np.int32), Y=np.zeros(5))
    net = mn.read_module_network(tmp_path / "tokens.pt2", tmp_path / "D.npz")
    assert net.X.dtype == np.int64 and np.array_equal(net.X, tokens.numpy())
    with torch.no_grad():
        torch.testing.assert_close(net.module(torch.from_numpy(net.X)), model(tokens), **CLOSE)


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def test_tied_weights_stay_one_parameter(tmp_path):
    model = Tied().eval()
    ep = torch.export.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(ep, tmp_path / "tied.pt2")
    module = read_exported_module(tmp_path / "tied.pt2").module
    assert [n for n, _ in module.named_parameters()] == [n for n, _ in model.named_parameters()]  # b.weight is a's
    assert module.get_parameter("a.weight") is module.get_parameter("b.weight")
    x = torch.randn(5, 4)
    with torch.no_grad():
        torch.testing.assert_close(module(x), model(x), **CLOSE)


def test_state_dict_with_its_factory(model, archives):
    path = archives["folder"] / "cnn_state.pt"
    torch.save(model.state_dict(), path)
    net = mn.read_module_network(path, archives["data"], "tests.models:residual_cnn")
    assert net.source == "state_dict + tests.models:residual_cnn" and not net.module.training
    assert net.param_names == tuple(n for n, _ in model.named_parameters())
    assert_same_outputs(net.module, model, images(6, seed=4))


def test_checkpoints_match_the_model_key_for_key(model, archives, tmp_path):
    net = mn.read_module_network(archives["dynamic"], archives["data"])
    state = {k: v + 1.0 if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save(state, tmp_path / "ckpt.pt")
    read = mn.read_checkpoint(tmp_path / "ckpt.pt", net)
    assert list(read) == list(state) and all(torch.equal(read[k], state[k]) for k in state)
    cases = {
        "missing": ({k: v for k, v in state.items() if k != "head.bias"}, "the model's 'head.bias' is not in the file"),
        "extra": ({**state, "fc.weight": torch.zeros(2)}, "the file has 'fc.weight', which the model does not have"),
        "shape": ({**state, "head.bias": torch.zeros(4)}, r"'head.bias' has shape \(4,\) in the file, \(3,\) in"),
        "nan": ({**state, "head.bias": torch.full((3,), float("nan"))}, "'head.bias' contains NaN or inf"),
    }
    for name, (bad, message) in cases.items():
        torch.save(bad, tmp_path / f"{name}.pt")
        with pytest.raises(EngineInputError, match=message):
            mn.read_checkpoint(tmp_path / f"{name}.pt", net)


# ------------------------------------------------------------------ safety
REFUSED = {
    "sample_inputs": None,  # never read: the archive loads
    "pickled_weight": "refused: parameter 'head.weight' is stored as a pickle",
    "pickled_constant": "refused: constant 'extra' is stored as a pickle",
    "parameter_name": "refused: parameter name 'head.bias\"\\),exec",
    "size_expression": 'refused: the size expression "open\\(',
    "guards_code": None,  # dropped: the archive loads
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_crafted_archives_run_nothing(model, archives, tmp_path, name):
    marker = tmp_path / "payload_ran"
    evil = crafted_archives(archives["dynamic"], tmp_path, marker)[name]
    if REFUSED[name] is None:
        net = mn.read_module_network(evil, archives["data"])
        assert_same_outputs(net.module, model, images(3))
    else:
        with pytest.raises(EngineInputError, match=REFUSED[name]):
            mn.read_module_network(evil, archives["data"])
    assert not marker.exists()
    # the payload is live: torch.export.load (and the module it returns) runs it
    try:
        torch.export.load(evil).module()(images(4))
    except Exception:  # noqa: BLE001,S110 -- any failure: the point is that it ran first
        pass
    assert marker.exists()


# ------------------------------------------------------------------ bad input, one line each
def edited(archives, tmp_path, edit):
    return rewrite_pt2(archives["dynamic"], tmp_path / "edited.pt2", lambda m: _edit_json(m, PROGRAM, edit))


def first_node(program, target=None):
    nodes = program["graph_module"]["graph"]["nodes"]
    return next(n for n in nodes if target is None or n["target"] == target)


def on_cuda(program):
    program["graph_module"]["graph"]["tensor_values"]["x"]["device"] = {"type": "cuda", "index": 0}


BAD_PROGRAMS = {
    "schema": (lambda p: p["schema_version"].update(major=99), "does not deserialize \\(SerializeError: Serialized"),
    "cuda": (on_cuda, "the graph puts tensors on 'cuda:0'; export it on the CPU"),
    "callable": (lambda p: first_node(p).update(target="torch.load"), "node 'conv2d' calls 'torch.load'; only ATen"),
    "node name": (lambda p: first_node(p).update(name="x; y"), "node name 'x; y' is not a plain Python name"),
}


@pytest.mark.parametrize("name", list(BAD_PROGRAMS))
def test_bad_programs(archives, tmp_path, name):
    edit, message = BAD_PROGRAMS[name]
    with pytest.raises(EngineInputError, match=message):
        read_exported_module(edited(archives, tmp_path, edit))


def test_not_an_archive_and_a_train_mode_export(model, archives, tmp_path):
    (tmp_path / "x.pt2").write_text("nope")
    with pytest.raises(EngineInputError, match="x.pt2: not a readable torch.export archive"):
        read_exported_module(tmp_path / "x.pt2")
    torch.export.save(torch.export.export(trained_cnn().train(), (images(4),)), tmp_path / "train.pt2")
    with pytest.raises(EngineInputError, match=r"changes 'b_stem_1_num_batches_tracked' .*model\.eval\(\)"):
        read_exported_module(tmp_path / "train.pt2")

    def batch_statistics(program):  # eval mode, but batch norm told to use the batch's statistics
        bn = first_node(program, "torch.ops.aten.batch_norm.default")
        next(a for a in bn["inputs"] if a["name"] == "training")["arg"] = {"as_bool": True}

    with pytest.raises(EngineInputError, match=r"runs in training mode, so its output depends on the batch"):
        read_exported_module(edited(archives, tmp_path, batch_statistics))


def test_bad_data(archives, tmp_path):
    X, Y = images(6).numpy(), np.arange(6) % CLASSES
    cases = {
        "shape": (
            {"X": X[:, :, :7], "Y": Y},
            r"X has samples of shape \(3, 7, 8\); the exported model takes \(3, 8, 8\)",
        ),
        "dtype": ({"X": X.astype(np.complex64), "Y": Y}, "X must be real numbers"),
        "text": ({"X": X, "Y": np.array(["a"] * 6)}, "Y must be real numbers"),
        "length": ({"X": X, "Y": Y[:5]}, "X has 6 samples but Y has 5"),
        "nan": ({"X": np.where(X > 1, np.nan, X), "Y": Y}, "X contains NaN or inf"),
        "missing": ({"X": X}, "a data .npz needs arrays 'X'"),
    }
    for name, (arrays, message) in cases.items():
        np.savez(tmp_path / f"{name}.npz", **arrays)
        with pytest.raises(EngineInputError, match=message):
            mn.read_module_network(archives["dynamic"], tmp_path / f"{name}.npz")


def test_check_labels():
    assert mn.check_labels(np.array([0.0, 2.0, 1.0]), 3).dtype == np.int64
    with pytest.raises(EngineInputError, match=r"label Y\[1\] = 3 is not a class of this 3-output classifier"):
        mn.check_labels(np.array([0, 3, 1, 5]), 3)
    with pytest.raises(EngineInputError, match=r"label Y\[0\] = -1"):
        mn.check_labels(np.array([-1, 0]), 3)
    with pytest.raises(EngineInputError, match=r"label Y\[0\] = 0.5"):
        mn.check_labels(np.array([0.5, 1.0]), 3)


@pytest.mark.parametrize(
    "spec,message",
    [
        ("tests.no_such_module:make", "tests.no_such_module does not import \\(ModuleNotFoundError"),
        ("tests.models:CLASSES", "CLASSES in tests.models is not callable \\(type int\\)"),
        ("tests.models:nothing", "nothing in tests.models is not defined"),
        ("tests.models:not_a_module", "not_a_module\\(\\) returned a dict, not a torch.nn.Module"),
        ("tests.models", "expected package.module:factory"),
    ],
)
def test_bad_model_spec(model, archives, tmp_path, spec, message):
    torch.save(model.state_dict(), tmp_path / "state.pt")
    with pytest.raises(EngineInputError, match=message):
        mn.read_module_network(tmp_path / "state.pt", archives["data"], spec)


def test_model_spec_only_for_state_dicts(archives, tmp_path):
    with pytest.raises(EngineInputError, match="a .pt2 archive holds its own graph"):
        mn.read_module_network(archives["dynamic"], archives["data"], "tests.models:residual_cnn")
    with pytest.raises(EngineInputError, match="name the code that builds the model with --model"):
        mn.read_module_network(tmp_path / "state.pt", archives["data"])


def json_paths(tree, path=()):
    """Every path to a value in a JSON tree (dict keys and list indices), the root last."""
    if isinstance(tree, dict | list):
        for key, value in tree.items() if isinstance(tree, dict) else enumerate(tree):
            yield from json_paths(value, (*path, key))
    yield path


MUTATION_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@MUTATION_SETTINGS
@given(
    member=st.sampled_from([PROGRAM, WEIGHTS]),
    pick=st.floats(0, 1, exclude_max=True),
    value=st.sampled_from([DELETE, None, 7, -1, "x", [], {}]),
)
def test_a_damaged_program_is_one_line_or_loads(archives, tmp_path, member, pick, value):
    """Any one value of the JSON changed (or dropped): EngineInputError or a loaded module, never
    another exception (which the command line would print as a traceback)."""

    def damage(members):
        tree = json.loads(members[member])
        path = list(json_paths(tree))[:-1][int(pick * (len(list(json_paths(tree))) - 1))]
        parent = functools.reduce(operator.getitem, path[:-1], tree)
        if value is DELETE:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
        members[member] = json.dumps(tree).encode()

    try:
        read_exported_module(rewrite_pt2(archives["dynamic"], tmp_path / "damaged.pt2", damage))
    except EngineInputError as e:
        assert "\n" not in str(e)
