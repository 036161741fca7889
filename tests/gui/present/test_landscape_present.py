"""The toolkit tab's view state of a plane's topology, and of result files read back: the basins
``relabel`` gives at any threshold are engine.landscape.persistence.basin_map's, and each file
the command line writes becomes the ToolkitResult of its mode."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.core.errors import EngineInputError
from engine.landscape import persistence as P
from engine.landscape.plane import PlaneResult
from engine.landscape.toolkit import ToolkitResult
from gui.present.landscape import from_saved, persistence_state, present, relabel


def plane_state(loss: np.ndarray) -> dict:
    a, b = np.linspace(-1, 1, loss.shape[0]), np.linspace(-2, 2, loss.shape[1])
    return {"alpha": a, "beta": b, "loss": loss}


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 9), st.integers(2, 9)), elements=st.integers(0, 6).map(float)),
    st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]),
)
def test_relabelled_components_are_the_basin_map_at_every_threshold(loss, share):
    """Small integer grids: ties and plateaus everywhere, the hard case for both."""
    state = persistence_state(plane_state(loss), share)
    span = float(np.ptp(loss))
    assert state["threshold"] == share * span
    for threshold in sorted({0.0, share * span, 0.5, 1.0, 2.5, np.inf}):
        drawn = relabel(state, threshold)[state["components"]]
        np.testing.assert_array_equal(drawn, P.basin_map(loss, threshold))


def test_persistence_state_holds_the_pairs_and_each_minimum_where_it_is():
    rng = np.random.default_rng(0)
    loss = rng.normal(size=(15, 11))
    state = persistence_state(plane_state(loss))
    p = P.persistence(loss)
    np.testing.assert_array_equal(state["birth"], p.birth)
    np.testing.assert_array_equal(state["death"], p.death)
    a, b = plane_state(loss)["alpha"], plane_state(loss)["beta"]
    for (x, y), value in zip(state["minima"], state["birth"]):
        i, j = np.argmin(np.abs(a - x)), np.argmin(np.abs(b - y))
        assert loss[i, j] == value
    with pytest.raises(EngineInputError):
        relabel(state, -1.0)
    with pytest.raises(EngineInputError):
        relabel(state, float("nan"))


def saved_plane(normalization="filter") -> PlaneResult:
    a = np.linspace(-1, 1, 5)
    loss = np.add.outer(a**2, np.cos(3 * a))
    z = np.zeros(4)
    return PlaneResult(a, a.copy(), loss, z, z + 1, z + 2, float(loss[2, 2]), "sum", normalization)


def test_a_saved_plane_is_presented_with_its_topology():
    result = from_saved(saved_plane())
    assert isinstance(result, ToolkitResult) and result.mode == "plane" and result.network is None
    state = present(result)
    np.testing.assert_array_equal(state["plane"]["loss"], result.plane.loss)
    np.testing.assert_array_equal(
        relabel(state["persistence"], state["persistence"]["threshold"])[state["persistence"]["components"]],
        P.basin_map(result.plane.loss, state["persistence"]["threshold"]),
    )
    assert "extremes" not in state
    extremes = present(from_saved(saved_plane("hessian-extremes")))
    assert extremes["plane"]["labels"][0].startswith("d1, the Hessian's bottom eigenvector")


def test_saved_files_of_each_kind_become_their_mode(tmp_path):
    from landscape_lens.results import Hessian, load

    with pytest.raises(EngineInputError, match="draws no"):
        from_saved(object())
    values = dict.fromkeys(f.name for f in __import__("dataclasses").fields(Hessian))
    values.update(eigenvalues=np.ones(2), density=None, trace=1.0, trace_se=0.0)
    with pytest.raises(EngineInputError, match="no spectral density"):
        from_saved(Hessian(**values))
    assert load  # the reader ``landscape-lens show`` uses (tests/test_cli_show.py runs it on real files)
