"""Generated bad inputs for the command line, presets and sessions (hypothesis).

Each must give one clear line (exit status 2 on the command line), no traceback, and leave
the state it was applied to unchanged. Runs in-process, without a window: the checks under
test are the same ones the window calls before it changes anything.
"""

import io
import json
import math
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import main
from engine.core.errors import EngineInputError
from gui import presets, session
from gui.panels.topology_parameters import create_parameters
from gui.parameter_values import apply_all, values_of_state

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def run_cli(capsys, argv) -> tuple[int, str]:
    try:
        status = main.main(argv)
    except SystemExit as leave:  # argparse's own exit
        status = leave.code
    err = capsys.readouterr().err
    return status, err


def assert_one_line(status, err):
    assert status == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


bad_int_text = st.one_of(
    st.integers(max_value=0).map(str),
    st.integers(min_value=10_001, max_value=10**30).map(str),
    st.sampled_from(["abc", "1.5", "", "1e400", "nan", "0x10", "--"]),
)
bad_c_text = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1,,2", "a,b", "", "1e999", "0.1;0.2"]),
    st.integers(1001, 20_000).map(lambda n: ",".join(["0.5"] * n)),
)


@SETTINGS
@given(d=bad_int_text)
def test_invariant_set_refuses_bad_dimensions(capsys, d):
    assert_one_line(*run_cli(capsys, ["invariant-set", "--d", d, "--e", "1", "--c", "0.5"]))


@SETTINGS
@given(c=bad_c_text)
def test_invariant_set_refuses_bad_c_lists(capsys, c):
    assert_one_line(*run_cli(capsys, ["invariant-set", "--d", "2", "--e", "1", f"--c={c}"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**32)).map(str),
    fps=st.one_of(st.integers(max_value=0), st.integers(min_value=121)).map(str),
)
def test_seeds_and_frame_rates_out_of_range(capsys, seed, fps):
    assert_one_line(*run_cli(capsys, ["reproduce", "topo-probability", "--quick", "--out", "/tmp/x", "--seed", seed]))
    assert_one_line(*run_cli(capsys, ["record", "--preset", "fig3-free", "--out", "x.mp4", "--fps", fps]))


def test_output_folders_that_cannot_be_made(capsys, tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out in (a_file, "/dev/null", a_file / "sub", tmp_path / ("n" * 300)):
        status, err = run_cli(capsys, ["reproduce", "topo-probability", "--quick", "--out", str(out)])
        assert_one_line(status, err)
    status, err = run_cli(
        capsys, ["record", "--preset", "fig3-free", "--out", "x.mp4", "--fps", "120", "--seconds", "3600"]
    )
    assert_one_line(status, err)
    assert "frames" in err


# ------------------------------------------------------------------------------------ presets
VALID = json.loads((presets.PRESET_DIR / "fig3-free.json").read_text())

bad_leaf = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(float("nan")),
    st.just(1e300),
    st.just(-1e300),
    st.booleans(),
)
leaf_paths = [
    ("network", "d"),
    ("network", "l"),
    ("network", "activation"),
    ("optimizer", "name"),
    ("optimizer", "lr"),
    ("optimizer", "steps"),
    ("init", "seed"),
    ("mode",),
    ("data", "points"),
    ("display", "layout"),
]


def mutated(path, value):
    data = json.loads(json.dumps(VALID))
    node = data["parameters"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


# The oracle: what each field accepts, written down here from the panel's documented fields (not
# read from the tree or from apply_all): whole numbers in a range, finite numbers in a range, or one
# of a fixed set of strings. Booleans are never numbers, and no field here is a boolean.
FIELD_SPECS = {
    ("network", "d"): ("int", 1, 64),
    ("network", "l"): ("int", 1, 9),
    ("network", "activation"): ("choice", {"relu", "leaky_relu"}),
    ("optimizer", "name"): ("choice", {"gd", "flow", "sgd", "adam", "momentum"}),
    ("optimizer", "lr"): ("real", 1e-12, 1e3),
    ("optimizer", "steps"): ("int", 1, 10**7),
    ("init", "seed"): ("int", 0, 2**32 - 1),
    ("mode",): ("choice", {"training", "fig4", "fig5"}),
    ("data", "points"): ("int", 1, 10**6),
    ("display", "layout"): ("choice", {"side by side", "one neuron enlarged"}),
}
assert set(FIELD_SPECS) == set(leaf_paths)


def is_valid(path, value) -> bool:
    kind, *spec = FIELD_SPECS[path]
    if isinstance(value, bool):
        return False
    if kind == "int":
        return isinstance(value, int) and spec[0] <= value <= spec[1]
    if kind == "real":
        return isinstance(value, (int, float)) and math.isfinite(value) and spec[0] <= value <= spec[1]
    return isinstance(value, str) and value in spec[0]


def near_the_edges(path):
    """Values on, just inside and just outside each field's limits, and near-miss strings."""
    kind, *spec = FIELD_SPECS[path]
    if kind == "int":
        lo, hi = spec
        return st.one_of(st.sampled_from([lo, hi, lo - 1, hi + 1, lo + 1, hi - 1]), st.integers(lo - 3, hi + 3))
    if kind == "real":
        lo, hi = spec
        edges = [lo, hi, lo / 2, hi * 2, 1, 0, -lo, math.nextafter(hi, math.inf), math.nextafter(lo, 0)]
        return st.one_of(st.sampled_from(edges), st.floats(lo / 10, hi * 10), st.integers(-5, 5))
    choices = sorted(spec[0])
    return st.one_of(
        st.sampled_from(choices), st.sampled_from(choices).map(str.upper), st.sampled_from(choices).map(" {}".format)
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), path=st.sampled_from(leaf_paths))
def test_presets_are_refused_exactly_when_a_value_is_invalid(tmp_path, data, path):
    """Each value is refused exactly when the oracle above says it is invalid, with the field's
    path in the one-line message and the panel unchanged; accepted ones are set as given."""
    value = data.draw(st.one_of(bad_leaf, near_the_edges(path)), label="value")
    tree = create_parameters()
    before = tree.saveState()
    file = tmp_path / "preset.json"
    file.write_text(json.dumps(mutated(path, value), allow_nan=True))
    try:
        apply_all(tree, presets.load_preset(file).values)
    except EngineInputError as error:
        assert not is_valid(path, value), f"a valid {'/'.join(path)} = {value!r} was refused: {error}"
        assert "/".join(path) in str(error) and "\n" not in str(error)
        assert tree.saveState() == before
    else:
        assert is_valid(path, value), f"an invalid {'/'.join(path)} = {value!r} was accepted"
        assert tree.child(*path).value() == value


@pytest.mark.parametrize("seed,ok", [(0, True), (2**32 - 1, True), (-1, False), (2**32, False)])
def test_seed_edges_in_a_preset(seed, ok):
    tree = create_parameters()
    if ok:
        apply_all(tree, {"init": {"seed": seed}})
        assert tree.child("init", "seed").value() == seed
    else:
        with pytest.raises(EngineInputError, match="init/seed"):
            apply_all(tree, {"init": {"seed": seed}})


def test_seed_and_frame_rate_edges_on_the_command_line():
    """The largest and smallest valid seed and frame rate parse; one beyond each does not."""
    from landscape_lens.arguments import MAX_FPS
    from landscape_lens.cli import build_parser

    parser = build_parser()
    for seed in (0, 2**32 - 1):
        args = parser.parse_args(["reproduce", "topo-probability", "--out", "x", "--seed", str(seed)])
        assert args.seed == seed
    for fps in (1, MAX_FPS):
        assert parser.parse_args(["record", "--preset", "fig3-free", "--out", "x.mp4", "--fps", str(fps)]).fps == fps
    assert MAX_FPS >= 60  # a real maximum, not a cap that makes 60 fps video impossible
    for argv in (["reproduce", "x", "--seed", "-1"], ["reproduce", "x", "--seed", str(2**32)]):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
    for fps in (0, MAX_FPS + 1):
        with pytest.raises(SystemExit):
            parser.parse_args(["record", "--preset", "fig3-free", "--out", "x.mp4", "--fps", str(fps)])


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe not utf-8",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"title": "x", "workspace": ["topology"], "parameters": {}}',
        b'{"title": "x", "workspace": "topology", "parameters": "all"}',
        b"[]",
        b"{}",
        b"null",
        b'{"title": "", "workspace": "topology", "parameters": {}}',
        b'{"title": "x", "workspace": "topology", "parameters": {}, "extra": 1}',
    ],
)
def test_malformed_preset_files(tmp_path, content):
    file = tmp_path / "bad.json"
    file.write_bytes(content)
    with pytest.raises(EngineInputError) as error:
        presets.load_preset(file)
    assert "\n" not in str(error.value)


def test_an_unknown_key_after_a_valid_one_applies_nothing():
    tree = create_parameters()
    before = tree.saveState()
    with pytest.raises(EngineInputError, match="unknown parameter 'optimizer/adma'"):
        apply_all(tree, {"optimizer": {"lr": 0.5, "adma": 1}})
    assert tree.saveState() == before


def test_a_misspelled_optimizer_is_refused_not_run_as_gd():
    with pytest.raises(EngineInputError, match="adma"):
        apply_all(create_parameters(), {"optimizer": {"name": "adma"}})


# ------------------------------------------------------------------------------------ sessions
def good_manifest():
    tree = create_parameters()
    return {
        "current": "topology",
        "workspaces": {
            "topology": {
                "parameters": tree.saveState(filter="user"),
                "cameras": [
                    {"distance": 7.5, "elevation": 30.0, "azimuth": 45.0, "fov": 60.0, "center": [0.0, 0.0, 0.0]}
                ],
                "results": {},
            }
        },
    }


bad_camera_value = st.one_of(
    st.text(max_size=4),
    st.none(),
    st.just(float("nan")),
    st.just(float("inf")),
    st.just(-1.0),
    st.just([1, 2]),
    st.just(1e300),
)


@settings(max_examples=60, deadline=None)
@given(field=st.sampled_from(["distance", "elevation", "fov", "center"]), value=bad_camera_value)
def test_sessions_with_bad_cameras_are_refused(field, value):
    manifest = good_manifest()
    manifest["workspaces"]["topology"]["cameras"][0][field] = value
    acceptable = field == "elevation" and isinstance(value, float) and math.isfinite(value) and -90 <= value <= 90
    if acceptable:
        session.checked_state(manifest)
        return
    with pytest.raises(EngineInputError) as error:
        session.checked_state(manifest)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update(workspaces=[]),
        lambda m: m.update(current=None),
        lambda m: m["workspaces"]["topology"].update(parameters="all"),
        lambda m: m["workspaces"]["topology"].update(results=[1, 2]),
        lambda m: m["workspaces"]["topology"].update(cameras="far"),
        lambda m: m["workspaces"]["topology"]["parameters"]["children"]["mode"].update(value="zzz"),
        lambda m: m["workspaces"]["topology"]["parameters"]["children"]["network"]["children"]["d"].update(value="abc"),
    ],
)
def test_sessions_with_bad_structure_are_refused(change):
    manifest = good_manifest()
    change(manifest)
    tree = create_parameters()
    before = tree.saveState()
    with pytest.raises(EngineInputError):
        checked = session.checked_state(manifest)
        apply_all(tree, values_of_state(checked.workspaces["topology"].parameters))
    assert tree.saveState() == before


def test_session_files_that_are_deep_huge_or_not_sessions(tmp_path):
    deep = tmp_path / "mlp.lens"
    with zipfile.ZipFile(deep, "w") as z:
        z.writestr(
            "manifest.json",
            '{"format": "landscape-lens-session", "version": 1, "content": ' + "[" * 100_000 + "]" * 100_000 + "}",
        )
    huge = tmp_path / "huge.lens"
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    header["shape"] = (10**12,)  # claims 8 TB
    with zipfile.ZipFile(huge, "w") as z:
        import io

        buffer = io.BytesIO()
        np.lib.format.write_array_header_1_0(buffer, header)
        z.writestr(
            "manifest.json",
            json.dumps({"format": "landscape-lens-session", "version": 1, "content": {"__array__": "arrays/0.npy"}}),
        )
        z.writestr("arrays/0.npy", buffer.getvalue() + b"\0" * 64)
    for path in (deep, huge):
        with pytest.raises(EngineInputError) as error:
            session.read_session(path)
        assert "\n" not in str(error.value)


def saved_session(path):
    """A session as File ▸ Save session writes it (deflated members), holding a trajectory's arrays."""
    manifest = good_manifest()
    rng = np.random.default_rng(0)
    T, l = 60, 3
    manifest["workspaces"]["topology"]["results"] = {
        "trajectory": {
            "step": np.arange(T),
            "W1": rng.normal(size=(T, l, 2)),
            "W2": rng.normal(size=(T, 1, l)),
            "loss": np.geomspace(1.0, 1e-3, T),
            "c": rng.normal(size=(T, l)),
        }
    }
    session.write_session(path, manifest)
    return path


def position_classes(path) -> dict[str, list[tuple[int, str]]]:
    """Every byte of a zip by what it is: (position, member) in local headers, in compressed data,
    and in the central directory (its end record included)."""
    classes = {"header": [], "data": [], "directory": []}
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        directory = z.start_dir
    raw = path.read_bytes()
    for info in infos:
        at = info.header_offset
        names, extra = (
            int.from_bytes(raw[at + 26 : at + 28], "little"),
            int.from_bytes(raw[at + 28 : at + 30], "little"),
        )
        data = at + 30 + names + extra
        classes["header"] += [(i, info.filename) for i in range(at, data)]
        classes["data"] += [(i, info.filename) for i in range(data, data + info.compress_size)]
    classes["directory"] = [(i, "") for i in range(directory, len(raw))]
    return classes


@pytest.mark.parametrize("where", ["header", "data", "directory"])
def test_a_session_with_a_byte_flipped_anywhere_is_refused_in_one_line(tmp_path, where):
    """One byte flipped in a saved session, at positions all through its local headers, its
    deflated members or its central directory: the file opens as saved (a field zipfile does not check)
    or is refused in one line, and a flip inside a member's compressed data names the file and
    the member (an array with its place in the state), never escaping as zlib.error."""
    good = saved_session(tmp_path / "talk.lens")
    original, raw = session.read_session(good), good.read_bytes()
    arrays = ("step", "W1", "W2", "loss", "c")
    places = session._array_places(json.loads(zipfile.ZipFile(good).read("manifest.json"))["content"])
    positions = position_classes(good)[where]
    assert len(positions) > 100
    positions = positions[:: max(1, len(positions) // 600)]  # a few hundred of each class is plenty
    bad, refused = tmp_path / "flipped.lens", 0
    for position, member in positions:
        flipped = bytearray(raw)
        flipped[position] ^= 0xFF
        bad.write_bytes(flipped)
        try:
            opened = session.read_session(bad)
        except EngineInputError as error:
            refused += 1
            message = str(error)
            assert "\n" not in message, (position, message)
            if where == "data":  # the member's own bytes: named with the file
                named = f"array {member} ({places[member]})" if member.startswith("arrays/") else member
                assert "session flipped.lens" in message and named in message, (position, message)
            continue
        saved = opened["workspaces"]["topology"]["results"]["trajectory"]
        want = original["workspaces"]["topology"]["results"]["trajectory"]
        assert all(np.array_equal(saved[k], want[k]) for k in arrays), position
    assert refused > len(positions) // 3  # a local header holds fields zipfile never reads (version, time)


def test_a_damaged_session_is_one_line_on_the_command_line(capsys, tmp_path):
    """screenshot --session reads the file before any window opens: a flip inside an array's
    deflated bytes is one line naming the file and the array, with no traceback above it."""
    good = saved_session(tmp_path / "talk.lens")
    member = [(p, m) for p, m in position_classes(good)["data"] if m == "arrays/4.npy"]
    raw = bytearray(good.read_bytes())
    raw[member[len(member) // 2][0]] ^= 0xFF
    bad = tmp_path / "damaged.lens"
    bad.write_bytes(raw)
    status, err = run_cli(capsys, ["screenshot", "--session", str(bad), "--out", str(tmp_path / "x.png")])
    assert_one_line(status, err)
    assert "damaged.lens" in err and "array arrays/4.npy (workspaces/topology/results/trajectory/c)" in err, err


# ------------------------------------------------------------------------------- panel fields
@pytest.mark.parametrize(
    "values",
    [
        {"optimizer": {"lr": 1e300}},
        {"optimizer": {"lr": -0.1}},
        {"init": {"seed": -1}},
        {"init": {"seed": 2**64}},
        {"init": {"a": 1e300}},
        {"fig4": {"c0": 0.0}},
        {"optimizer": {"weight_decay": -1.0}},
    ],
)
def test_topology_panel_values_out_of_range_change_nothing(values):
    tree = create_parameters()
    before = tree.saveState()
    with pytest.raises(EngineInputError, match="range"):
        apply_all(tree, values)
    assert tree.saveState() == before


@pytest.mark.parametrize("c", ["1e300", "-1e300", "nan", "0.1, inf"])
def test_target_c_beyond_any_scene_is_refused(c):
    from gui.present.training_setup import training_setup

    tree = create_parameters()
    apply_all(tree, {"init": {"c": c}, "data": {"points": 50}})
    with pytest.raises(EngineInputError, match="target c_k"):
        training_setup(tree)


@pytest.mark.parametrize(
    "values",
    [
        {"construction": {"lam": 1e300}},
        {"construction": {"saddle_lam": -1e300}},
        {"experiment": {"seed": -1}},
        {"slices": {"seed": 2**64}},
    ],
)
def test_minima_panel_values_out_of_range_change_nothing(values):
    from pyqtgraph.parametertree import Parameter

    from gui.workspaces.minima import PARAMETERS

    tree = Parameter.create(name="minima", type="group", children=PARAMETERS)
    before = tree.saveState()
    with pytest.raises(EngineInputError, match="range"):
        apply_all(tree, values)
    assert tree.saveState() == before


@pytest.mark.parametrize("widths", ["2, -1, 1", "2", "2, 0, 1", "2-1-1", "a, b"])
def test_widths_are_never_silently_rewritten(widths):
    from gui.present.minima import parse_widths

    with pytest.raises(EngineInputError, match="small network"):
        parse_widths(widths)
    assert parse_widths("2—1—1—1") == parse_widths("2, 1, 1, 1") == (2, 1, 1, 1)


@pytest.mark.parametrize("schedule", ["1:-5", "0:3", "1:2:3", "x:1"])
def test_bad_split_schedules_are_refused(schedule):
    from gui.present.minima import parse_schedule

    with pytest.raises(EngineInputError, match="splits"):
        parse_schedule(schedule)


# ------------------------------------------------------------------------------- network files
def test_network_files_that_are_not_real_finite_networks(tmp_path):
    from engine.core import mlp
    from engine.io import netfile as netio

    arch = mlp.Arch((2, 3, 1), "sigmoid", False)
    rng = np.random.default_rng(0)
    theta, X, Y = mlp.init_params(arch, rng, 1.0), rng.normal(size=(8, 2)), rng.normal(size=(8, 1))
    lone = tmp_path / "lone.npz"
    with open(lone, "wb") as f:
        np.save(f, np.zeros(3))  # a plain .npy under a .npz name
    huge = netio.save_network(tmp_path / "huge.npz", arch, np.full_like(theta, 1e308), X, Y)
    Ws, _ = mlp.unpack(arch, theta)
    complex_ = tmp_path / "complex.npz"
    np.savez(complex_, X=X, Y=Y, activation=np.array("sigmoid"), W1=Ws[0] + 1j, W2=Ws[1])
    for path, words in ((lone, "single .npy array"), (huge, "limit"), (complex_, "real numbers")):
        with pytest.raises(EngineInputError, match=words) as error:
            netio.load_network(path)
        assert "\n" not in str(error.value)


def _npy(array=None, *, shape=None, dtype=None) -> bytes:
    """One .npy member written by hand: a real array, or a header that declares ``shape`` of
    ``dtype`` over 64 bytes of data (what a malicious file looks like)."""
    buffer = io.BytesIO()
    if array is not None:
        np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
        return buffer.getvalue()
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_2_0(buffer, header)  # the 2.0 header reader is checked too
    return buffer.getvalue() + b"\0" * 64


def _network_npz(path, **members):
    rng = np.random.default_rng(1)
    valid = {
        "X": _npy(rng.normal(size=(6, 2))),
        "Y": _npy(rng.normal(size=(6, 1))),
        "activation": _npy(np.array("tanh")),
        "W1": _npy(rng.normal(size=(2, 2))),
        "W2": _npy(rng.normal(size=(1, 2))),
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, data in {**valid, **members}.items():
            z.writestr(f"{name}.npy", data)
    return str(path)


@pytest.mark.parametrize(
    "members,words",
    [
        ({"W1": _npy(np.zeros((2, 2), dtype="m8[ms]"))}, "W1 has dtype timedelta64[ms]"),
        ({"W1": _npy(shape=(1_000_000, 1_000_000), dtype="<f8")}, "limit is 2e+09 bytes per array"),
        ({"X": _npy(shape=(2**40, 2), dtype="<f8")}, "X declares shape (1099511627776, 2)"),
        ({"W1": _npy(np.ones((2, 2), dtype=np.complex128))}, "W1 has dtype complex128; expected real numbers"),
        ({"Y": _npy(np.ones((6, 1), dtype=np.complex64))}, "Y has dtype complex64; expected real numbers"),
    ],
    ids=["timedelta", "8 TB W1", "2**40 rows of X", "complex W1", "complex Y"],
)
def test_inspect_refuses_crafted_npz_in_one_line(capsys, tmp_path, members, words):
    status, err = run_cli(capsys, ["inspect", _network_npz(tmp_path / "bad.npz", **members)])
    assert_one_line(status, err)
    assert words in err and "internal error" not in err and "out of memory" not in err


def test_inspect_of_a_state_dict_refuses_complex_data(capsys, tmp_path):
    import torch

    net = tmp_path / "net.pt"
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).state_dict(), net)
    for name, X in (("complex", np.ones((5, 2)) * 1j), ("timedelta", np.ones((5, 2), dtype="m8[s]"))):
        data = tmp_path / f"{name}.npz"
        with zipfile.ZipFile(data, "w") as z:
            z.writestr("X.npy", _npy(X))
            z.writestr("Y.npy", _npy(np.ones(5)))
        status, err = run_cli(capsys, ["inspect", str(net), "--activation", "tanh", "--data", str(data)])
        assert_one_line(status, err)
        assert name in err


@pytest.mark.parametrize(
    "sizes,words", [([10**6, 10**6], "limit is 2e+09 bytes per array"), ([4, 2], "has 96 bytes; shape (4, 2) needs 64")]
)
def test_inspect_of_a_pt2_whose_config_lies_about_a_weight(capsys, tmp_path, sizes, words):
    """The weights config declares a shape the raw bytes do not hold: refused before reading them."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    good = tmp_path / "good.pt2"
    torch.export.save(torch.export.export(model, (torch.zeros(2, 3, dtype=torch.float64),)), good)
    data = tmp_path / "data.npz"
    np.savez(data, X=np.zeros((5, 3)), Y=np.zeros(5))
    bad = tmp_path / "bad.pt2"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename.endswith("model_weights_config.json"):
                config = json.loads(content)
                meta = config["config"]["0.weight"]["tensor_meta"]
                meta["sizes"] = [{"as_int": n} for n in sizes]
                meta["strides"] = [{"as_int": sizes[1]}, {"as_int": 1}]
                content = json.dumps(config).encode()
            dst.writestr(info, content)
    assert run_cli(capsys, ["inspect", str(good), "--data", str(data)])[0] == 0
    status, err = run_cli(capsys, ["inspect", str(bad), "--data", str(data)])
    assert_one_line(status, err)
    assert words in err and "'0.weight'" in err
