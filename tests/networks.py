"""Small networks the tests build themselves."""

import numpy as np

from engine.core import mlp
from engine.io import netfile as netio
from engine.minima import construction as C
from engine.minima.pipeline import teacher_data


def strict_minimum_net() -> netio.NetFile:
    """A 2—3—1 sigmoid net trained (L-BFGS + Newton) to a strict minimum of 12 samples of a 2—5—1
    teacher: the student cannot fit them, so the minimum has loss > 0 and admissible neurons."""
    X, Y = teacher_data((2, 5, 1), 12, 0)
    arch = mlp.Arch((2, 3, 1), "sigmoid", False)
    theta, _, _ = C.train_to_critical(arch, X, Y, mlp.init_params(arch, np.random.default_rng(0), 2.0))
    return netio.NetFile(arch, theta, X, np.asarray(Y).reshape(-1, 1))
