import numpy as np
import pytest

from engine.core.datasets import breast_cancer, load_xy_file, toy_dataset
from engine.core.errors import EngineInputError


def test_toy_dataset():
    X, Y = toy_dataset(8000, seed=3)
    assert X.shape == (8000, 2) and Y.shape == (8000, 1)
    assert X.min() >= 0 and X.max() <= 1
    np.testing.assert_array_equal(Y[:, 0], -(X[:, 0] + X[:, 1]))
    assert np.mean(Y**2) == pytest.approx(7 / 6, abs=0.03)  # E[(x1+x2)²] = 1/6 + 1
    np.testing.assert_array_equal(toy_dataset(10, 1)[0], toy_dataset(10, 1)[0])


@pytest.mark.parametrize("d", [1, 3, 7])
def test_toy_dataset_in_d_dimensions(d):
    X, Y = toy_dataset(20000, seed=4, d=d)
    assert X.shape == (20000, d) and Y.shape == (20000, 1)
    assert X.min() >= 0 and X.max() <= 1
    np.testing.assert_allclose(Y[:, 0], -X.sum(axis=1), rtol=1e-15)
    # E[(Σ x_i)²] = d/12 + d²/4 for iid U(0, 1)
    assert np.mean(Y**2) == pytest.approx(d / 12 + d * d / 4, rel=0.03)
    np.testing.assert_array_equal(toy_dataset(10, 1, d=d)[0], toy_dataset(10, 1, d=d)[0])
    assert not np.array_equal(toy_dataset(10, 1, d=d)[0], toy_dataset(10, 2, d=d)[0])


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"d": 0}, {"d": 2.5}, {"n": True}])
def test_toy_dataset_bad_input(kwargs):
    with pytest.raises(EngineInputError, match="must be an integer >= 1"):
        toy_dataset(**kwargs)


def test_breast_cancer_split():
    s = breast_cancer(seed=0)
    assert s.X_train.shape == (455, 30) and s.X_test.shape == (114, 30)
    np.testing.assert_allclose(s.X_train.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(s.X_train.std(0), 1, atol=1e-12)
    assert abs(s.Y_train.mean() - s.Y_test.mean()) < 0.01  # stratified
    assert set(np.unique(s.Y_train)) == {0.0, 1.0}


def test_load_npz_and_csv(tmp_path):
    X, Y = np.arange(12.0).reshape(6, 2), np.arange(6.0)
    np.savez(tmp_path / "d.npz", X=X, Y=Y)
    X2, Y2 = load_xy_file(tmp_path / "d.npz")
    np.testing.assert_array_equal(X2, X)
    assert Y2.shape == (6, 1)
    np.savetxt(tmp_path / "d.csv", np.column_stack([X, Y]), delimiter=",")
    X3, Y3 = load_xy_file(tmp_path / "d.csv")
    np.testing.assert_array_equal(X3, X)
    np.testing.assert_array_equal(Y3[:, 0], Y)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda p: np.savez(p / "f.npz", X=np.zeros((3, 2))), "lacks"),
        (lambda p: np.savez(p / "f.npz", X=np.zeros((3, 2)), Y=np.zeros(4)), "rows"),
        (lambda p: np.savez(p / "f.npz", X=np.array([[np.nan, 1.0]]), Y=np.zeros(1)), "NaN"),
        (lambda p: np.savez(p / "f.npz", X=np.array([["a", "b"]]), Y=np.zeros(1)), "non-numeric"),
        (lambda p: np.savez(p / "f.npz", X=np.zeros((2, 2, 2)), Y=np.zeros(2)), "shape"),
        (lambda p: (p / "f.csv").write_text("x,y\n1,2\n"), "numeric"),
        (lambda p: (p / "f.csv").write_text("1\n2\n"), "column"),
        (lambda p: (p / "f.txt").write_text("1,2\n"), "extension"),
    ],
)
def test_bad_files(tmp_path, make, match):
    make(tmp_path)
    path = next(tmp_path.iterdir())
    with pytest.raises(EngineInputError, match=match):
        load_xy_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(EngineInputError, match="does not exist"):
        load_xy_file(tmp_path / "nope.npz")
