"""Generated bad inputs for the command line, presets and sessions (hypothesis).

Each must give one clear line (exit status 2 on the command line), no traceback, and leave
the state it was applied to unchanged. Runs in-process, without a window: the checks under
test are the same ones the window calls before it changes anything.
"""

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


def is_acceptable(path, value, tree):
    """Whether the value would be a valid setting (hypothesis may draw a valid one by chance)."""
    try:
        apply_all(create_parameters(), mutated(path, value)["parameters"])
        return True
    except EngineInputError:
        return False


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(leaf_paths), value=bad_leaf)
def test_presets_with_bad_values_change_nothing(tmp_path, path, value):
    tree = create_parameters()
    before = tree.saveState()
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(mutated(path, value), allow_nan=True))
    try:
        preset = presets.load_preset(file)
        apply_all(tree, preset.values)
    except EngineInputError as error:
        assert "\n" not in str(error)
        assert tree.saveState() == before
    else:  # hypothesis drew something valid (e.g. "relu" is not drawn, but True for bias is)
        assert is_acceptable(path, value, tree)


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
    deep = tmp_path / "deep.lens"
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
    from gui.panels.topology_parameters import training_setup

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
    from gui.workspaces.minima_draw import parse_widths

    with pytest.raises(EngineInputError, match="small network"):
        parse_widths(widths)
    assert parse_widths("2—1—1—1") == parse_widths("2, 1, 1, 1") == (2, 1, 1, 1)


@pytest.mark.parametrize("schedule", ["1:-5", "0:3", "1:2:3", "x:1"])
def test_bad_split_schedules_are_refused(schedule):
    from gui.workspaces.minima_draw import parse_schedule

    with pytest.raises(EngineInputError, match="splits"):
        parse_schedule(schedule)


# ------------------------------------------------------------------------------- network files
def test_network_files_that_are_not_real_finite_networks(tmp_path):
    from engine.io import netfile as netio
    from engine.minima import deep

    arch = deep.Arch((2, 3, 1), "sigmoid", False)
    rng = np.random.default_rng(0)
    theta, X, Y = deep.init_params(arch, rng, 1.0), rng.normal(size=(8, 2)), rng.normal(size=(8, 1))
    lone = tmp_path / "lone.npz"
    with open(lone, "wb") as f:
        np.save(f, np.zeros(3))  # a plain .npy under a .npz name
    huge = netio.save_network(tmp_path / "huge.npz", arch, np.full_like(theta, 1e308), X, Y)
    Ws, _ = deep.unpack(arch, theta)
    complex_ = tmp_path / "complex.npz"
    np.savez(complex_, X=X, Y=Y, activation=np.array("sigmoid"), W1=Ws[0] + 1j, W2=Ws[1])
    for path, words in ((lone, "single .npy array"), (huge, "limit"), (complex_, "real numbers")):
        with pytest.raises(EngineInputError, match=words) as error:
            netio.load_network(path)
        assert "\n" not in str(error.value)
