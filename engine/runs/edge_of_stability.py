"""The edge of stability, recorded: full-batch gradient descent on a small ReLU network, written
with ``Recorder`` into a run folder that the Training run tab follows as it grows.

Gradient descent with step η is stable along the loss Hessian's top eigenvector only while its
top eigenvalue (the sharpness) stays below 2/η. Cohen et al. found that full-batch gradient
descent drives the sharpness up to 2/η and keeps it there, while the loss goes on falling, not
monotonically. The network is a ReLU MLP 4—32—32—1 in float64 (seed 0) on 64 points
X ~ N(0, I₄), y = sin(2 X·u) (u ~ N(0, I₄), the same generator), with the loss "mean",
L = Σ ‖f(x) − y‖² / N, and η = 0.1: the sharpness rises from about 4 to 2/η = 20 within a few
hundred steps and stays there.

The same finite step breaks the ReLU units' rescaling invariants c = ‖w‖² + b² − ‖v‖², which
gradient flow conserves: one step of gradient descent changes c by η² (‖∂L/∂w‖² + (∂L/∂b)² −
‖∂L/∂v‖²), second order in η (paper A, MATH.md part A), which the recorded invariants show.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job
from engine.core.validation import integer
from engine.runs.follow import RunView, follow_job
from engine.runs.recorder import Recorder


@dataclass(frozen=True)
class EdgeSettings:
    """The run's settings: learning rate, steps, how often a checkpoint (with the invariants)
    and the sharpness are recorded, the seed of the network and of the data, and the width."""

    lr: float = 0.1
    steps: int = 1500
    every: int = 25
    sharpness_every: int = 25
    seed: int = 0
    samples: int = 64
    width: int = 32

    def checked(self) -> EdgeSettings:
        if not (isinstance(self.lr, int | float) and 0 < self.lr < 10):
            raise EngineInputError(f"learning rate = {self.lr!r}: choose one in (0, 10)")
        integer("steps", self.steps, 1)
        integer("every", self.every, 1)
        integer("sharpness_every", self.sharpness_every, 1)
        integer("samples", self.samples, 2)
        integer("width", self.width, 1)
        return self


def problem(settings: EdgeSettings):
    """(model, X, Y): the network and the data, float64, made from the settings' seed."""
    gen = torch.Generator().manual_seed(settings.seed)
    X = torch.randn(settings.samples, 4, generator=gen, dtype=torch.float64)
    Y = torch.sin(X @ torch.randn(4, 1, generator=gen, dtype=torch.float64) * 2.0)
    torch.manual_seed(settings.seed)
    w = settings.width
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(), nn.Linear(w, 1)).double()
    return model, X, Y


def train(
    run_dir,
    settings: EdgeSettings = EdgeSettings(),
    stop: threading.Event | None = None,
    on_step: Callable[[int], None] | None = None,
) -> Path:
    """Train with full-batch gradient descent, recording every step into ``run_dir`` (a new
    folder). The step recorded at t holds θ_t and L(θ_t), before the update. ``stop``: set to end
    early (the run is closed as finished with the steps done). Returns the folder."""
    settings = settings.checked()
    model, X, Y = problem(settings)
    params = list(model.parameters())
    with Recorder(
        run_dir,
        model,
        every=settings.every,
        sharpness_every=settings.sharpness_every,
        sharpness_data=(X, Y),
        loss="mean",
    ) as rec:
        for step in range(settings.steps + 1):
            if stop is not None and stop.is_set():
                break
            loss = ((model(X) - Y) ** 2).sum() / len(X)  # the Recorder's "mean": its sharpness is this loss's
            grads = torch.autograd.grad(loss, params)
            rec.step(step, loss=loss.item(), lr=settings.lr)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p -= settings.lr * g
            if on_step is not None:
                on_step(step)
    return Path(run_dir)


def edge_of_stability_job(run_dir, settings: EdgeSettings = EdgeSettings(), **follow) -> Job[RunView]:
    """Job: train on a thread of its own (``train``) into ``run_dir`` and follow the run as it
    grows (``engine.runs.follow.follow_job``, whose keywords ``follow`` passes on); returns the
    finished run's view. Closing the job stops the training at its next step."""
    settings = settings.checked()
    stop, box = threading.Event(), {}

    def target():
        try:
            train(run_dir, settings, stop)
        except BaseException as error:  # re-raised in the job below
            box["error"] = error

    thread = threading.Thread(target=target, name="engine-edge-of-stability", daemon=True)
    thread.start()
    try:
        state = yield from follow_job(run_dir, writer_running=thread.is_alive, total_steps=settings.steps, **follow)
    except EngineInputError:
        thread.join()
        if "error" in box:
            raise box["error"] from None
        raise
    finally:
        stop.set()
    thread.join()
    if "error" in box:
        raise box["error"]
    return state
