"""engine.io.session_arrays: saved results against their schemas; engine.core.npz: .npy headers in zips.

The valid inputs are what the engine's own results become in a session (the same fields, built
the same way as the workspaces' ``session_state``), so the schemas are checked against real data.
"""

import dataclasses
import io
import zipfile

import numpy as np
import pytest

from engine.core import npz
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.io import session_arrays as sa
from engine.topology.probability import CLOSED_FORM_SCHEMES, MapSettings, probability_maps_job
from engine.topology.training import TrainConfig, Trajectory, train
from engine.topology.two_layer import TwoLayerNet, init_params
from engine.topology.width_sweep import SweepResult


def saved_trajectory(bias=False, optimizer="gd") -> dict:
    """A real run as gui.workspaces.topology.session_state saves it: None fields left out,
    sign_flips as an (F, 2) int64 array."""
    rng = np.random.default_rng(0)
    net = TwoLayerNet(d=2, l=3, e=1, bias=bias)
    X = rng.uniform(-1, 1, size=(20, 2))
    traj = run_to_completion(
        train(net, init_params(net, "kaiming_uniform", rng), X, X[:, :1] - X[:, 1:], TrainConfig(optimizer, steps=5))
    )
    fields = {f.name: getattr(traj, f.name) for f in dataclasses.fields(Trajectory)}
    fields["sign_flips"] = np.asarray(fields["sign_flips"], dtype=np.int64).reshape(-1, 2)
    return {k: v for k, v in fields.items() if v is not None}


@pytest.mark.parametrize("bias", [False, True])
def test_real_trajectories_pass_and_give_their_sizes(bias):
    t = saved_trajectory(bias)
    assert sa.check_arrays(t, sa.TRAJECTORY) == {"T": 6, "l": 3, "d": 2, "e": 1}


def test_flow_trajectories_pass():
    sa.check_arrays(saved_trajectory(optimizer="flow"), sa.TRAJECTORY)


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda t: t.pop("W1"), r"saved trajectory: missing array 'W1'"),
        (lambda t: t.update(W1=t["W1"].astype(np.int64)), r"W1 has dtype int64; expected floating-point numbers"),
        (lambda t: t.update(W1=t["W1"] + 0j), r"W1 has dtype complex128; expected floating-point"),
        (
            lambda t: t.update(loss=t["loss"][:-1]),
            r"loss has shape \(5,\) but step has shape \(6,\); loss must have the same length as step",
        ),
        (lambda t: t.update(step=t["step"].astype(float)), r"step has dtype float64; expected integer"),
        (lambda t: t.update(c=t["c"][:, :2]), r"c has shape \(6, 2\) but W1 has shape \(6, 3, 2\).*same size along l"),
        (lambda t: t.update(W2=t["W2"][:, :, :2]), r"W2 has shape .* but W1 .*same size along l"),
        (lambda t: t.update(W1=t["W1"][0]), r"W1 has shape \(3, 2\); expected 3-D \(T, l, d\)"),
        (lambda t: t.update(W1=t["W1"].tolist()), r"W1 is a list, not an array"),
        (lambda t: t.update(sign_flips=np.zeros((2, 3), np.int64)), r"sign_flips has shape \(2, 3\); expected"),
        (lambda t: t.update(b1=np.zeros((6, 3))), r"b1 saved without b2; they come together"),
        (lambda t: t.update(time=np.zeros(7)), r"time has shape \(7,\) but step has shape \(6,\)"),
        (lambda t: [t.update({k: t[k][:0]}) for k in ("step", "W1", "W2", "loss", "c")], r"at least 1 along T"),
    ],
    ids=[
        "missing W1",
        "integer W1",
        "complex W1",
        "loss shorter than step",
        "float step",
        "c of another width",
        "W2 of another width",
        "2-D W1",
        "list W1",
        "sign_flips not pairs",
        "b1 without b2",
        "time longer than step",
        "empty",
    ],
)
def test_broken_trajectories_name_the_first_problem(change, message):
    t = saved_trajectory()
    change(t)
    with pytest.raises(EngineInputError, match=message) as error:
        sa.check_arrays(t, sa.TRAJECTORY)
    assert "\n" not in str(error.value)


def test_trajectory_schema_names_exactly_the_saved_arrays():
    array_fields = {f.name for f in dataclasses.fields(Trajectory)} - {"diverged_at", "message"}
    assert set(sa.TRAJECTORY.arrays) == array_fields
    optional = {n for n, s in sa.TRAJECTORY.arrays.items() if s.optional}
    assert optional == {"b1", "b2", "time", "sign_flips"}  # None in a run without biases; flips may be absent


def test_sweep_schema_matches_the_result_fields_and_a_sweep_shaped_result():
    assert set(sa.SWEEP.arrays) == {f.name for f in dataclasses.fields(SweepResult)} - {"settings", "n_diverged"}
    R, L, d, ls = 4, 3, 2, np.array([2, 3])
    result = {
        "ls": ls,
        "l_plus": np.arange(L + 1),
        "mean": np.zeros((2, L + 1)),
        "std": np.zeros((2, L + 1)),
        "runs": np.zeros((R, 3), np.int64),
        "test_bce": np.zeros(R),
        "W1": np.zeros((R, L, d)),
        "W2": np.zeros((R, L)),
        "settings": {},
        "n_diverged": 0,
    }
    assert sa.check_arrays(result, sa.SWEEP) == {"nL": 2, "P": 4, "R": 4, "L": 3, "d": 2}
    result["test_bce"] = np.zeros(R + 1)
    with pytest.raises(EngineInputError, match="test_bce has shape .* same length as runs|test_bce .* runs"):
        sa.check_arrays(result, sa.SWEEP)


def test_probability_maps_from_the_engine_pass_and_broken_ones_do_not():
    assert sa._SCHEMES == CLOSED_FORM_SCHEMES
    maps = run_to_completion(probability_maps_job(MapSettings(d_max=3, l_max=4, mc_samples=20, mc_stride=2)))
    saved = {"d": maps.d, "l": maps.l, "closed": dict(maps.closed), "mc": dict(maps.mc)}  # fig5 result_state
    assert sa.check_arrays(saved, sa.PROBABILITY_MAPS) == {"nd": 3, "nl": 4}
    saved["closed"]["kaiming_normal"] = maps.closed["kaiming_normal"][:, :3]
    with pytest.raises(EngineInputError, match=r"closed/kaiming_normal has shape \(3, 3\) but .*nl"):
        sa.check_arrays(saved, sa.PROBABILITY_MAPS)
    saved["closed"]["kaiming_normal"] = maps.closed["kaiming_normal"]
    del saved["mc"]
    with pytest.raises(EngineInputError, match="missing array 'mc/xavier_normal'"):
        sa.check_arrays(saved, sa.PROBABILITY_MAPS)


def test_minima_stages():
    ok = {
        "path": {"lam": np.linspace(0, 1, 5), "loss": np.zeros(5), "hessian_min": np.zeros(5), "verdicts": ["x"] * 5},
        "plane": {"a": np.zeros(3), "b": np.zeros(4), "loss": np.zeros((4, 3))},
        "slices_min": {"t": np.zeros(7), "losses": np.zeros((2, 7), np.float32), "envelope": np.zeros(7)},
        "spectrum": {"eigs": np.zeros(9), "tol": 1e-8},
        "steps": {"rows": []},
    }
    sa.check_workspace_results("minima", ok)
    ok["plane"]["loss"] = np.zeros((3, 4))  # transposed: rows must run along b
    with pytest.raises(EngineInputError, match="saved loss plane: loss has shape"):
        sa.check_workspace_results("minima", ok)
    ok["plane"]["loss"] = np.zeros((4, 3))
    ok["path"]["loss"] = np.zeros(4)
    with pytest.raises(EngineInputError, match="saved degenerate path: loss .* same length as lam"):
        sa.check_workspace_results("minima", ok)


def test_workspace_results_dispatch_on_the_topology_mode():
    t = saved_trajectory()
    sa.check_workspace_results("topology", {"mode": "training", "trajectory": t, "parameters": {}})
    sa.check_workspace_results("topology", {})  # nothing computed yet
    t["W1"] = t["W1"].astype(np.int32)
    with pytest.raises(EngineInputError, match="W1 has dtype int32"):
        sa.check_workspace_results("topology", {"mode": "training", "trajectory": t})
    with pytest.raises(EngineInputError, match="expected named arrays, got NoneType"):
        sa.check_workspace_results("topology", {"mode": "fig4"})


def _npy_header(shape, dtype, version=(1, 0)) -> io.BytesIO:
    buffer = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": shape}
    {(1, 0): np.lib.format.write_array_header_1_0, (2, 0): np.lib.format.write_array_header_2_0}[version](
        buffer, header
    )
    buffer.seek(0)
    return buffer


def test_npy_headers_are_checked_without_reading_data():
    assert npz.check_npy_header(_npy_header((3, 4), "<f8"), "a")[0] == (3, 4)
    assert npz.check_npy_header(_npy_header((3,), "<U7", (2, 0)), "a")[2] == np.dtype("<U7")
    with pytest.raises(EngineInputError, match=r"f.npz: W declares shape \(1000000, 1000000\) of float64"):
        npz.check_npy_header(_npy_header((10**6, 10**6), "<f8"), "W", "f.npz")
    with pytest.raises(EngineInputError, match="timedelta64"):
        npz.check_npy_header(_npy_header((3,), "<m8[s]"), "W")
    with pytest.raises(EngineInputError, match="not an .npy array"):
        npz.check_npy_header(io.BytesIO(b"PK\x03\x04 zip"), "W")
    bad_version = io.BytesIO(b"\x93NUMPY\x09\x00" + b"\0" * 16)
    with pytest.raises(EngineInputError, match="format version 9.0"):
        npz.check_npy_header(bad_version, "W")


def test_read_npz_reads_only_the_keys_asked_for(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, X=np.ones((2, 2)), Y=np.zeros(2))
    with zipfile.ZipFile(path, "a") as z:  # an 8 TB member nobody asked for
        z.writestr("huge.npy", _npy_header((10**6, 10**6), "<f8").getvalue())
    arrays = npz.read_npz(path, keys=("X", "Y"))
    assert set(arrays) == {"X", "Y"} and np.array_equal(arrays["X"], np.ones((2, 2)))
    assert npz.npz_names(path) == ["X", "Y", "huge"]
    with pytest.raises(EngineInputError, match="huge declares shape"):
        npz.read_npz(path)
