"""Every number about a saved network (``python main.py inspect NET.npz`` and the GUI's Load).

``NetworkReport`` is the typed result; ``as_json`` is what the command line prints (enums as
their values), ``as_construction`` lets the Fig. 3 views draw a loaded net like a built one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import construction as C
from . import deep
from .deep import Arch
from .netio import load_network
from .progress import Job, run_to_completion, wait_for
from .runtime import configure_torch_threads
from .verdicts import Verdict


@dataclass(frozen=True)
class NetworkReport:
    file: str
    arch: Arch
    params: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    loss: float
    grad_norm: float
    eigs: np.ndarray                 # Hessian spectrum, sorted
    hessian: C.HessianSummary
    verdict: Verdict                 # STRICT_MINIMUM, DEGENERATE_MINIMUM, SADDLE or NOT_CRITICAL
    neurons: tuple                   # NeuronBD of every hidden neuron
    admitting: tuple                 # (layer, neuron) with definite B and D = 0 (Theorem 9 applies)
    extras: tuple                    # names of the extra arrays in the file

    @property
    def gamma_possible(self) -> bool:
        return bool(self.admitting) and self.verdict in (Verdict.STRICT_MINIMUM, Verdict.DEGENERATE_MINIMUM)

    def as_construction(self) -> C.Construction:
        """A construction without split history: the small and the final net are this one."""
        step = C.Step("loaded", self.arch.widths, self.loss, self.grad_norm, self.hessian, self.verdict)
        return C.Construction(self.arch, self.params, self.X, self.Y, self.arch, self.params, self.neurons,
                              self.neurons, (), (step,), (), None)

    def as_json(self) -> dict:
        h = self.hessian
        return {
            "file": self.file, "widths": list(self.arch.widths), "activation": self.arch.activation,
            "bias": self.arch.bias, "n_params": self.arch.n_params, "n_samples": len(self.X),
            "loss": self.loss, "grad_norm": self.grad_norm, "critical_point": self.verdict.value,
            "hessian": {"min": h.min, "max": h.max, "n_zero": h.n_zero, "n_negative": h.n_negative,
                        "zero_tol": h.tol},
            "neurons": [{"layer": n.layer, "neuron": n.neuron, "B_eigs": n.B_eigs.tolist(), "B": n.badge,
                         "D_norm": n.D_norm, "admits_gamma": (n.layer, n.neuron) in self.admitting}
                        for n in self.neurons],
            "gamma_construction": {
                "possible": self.gamma_possible, "neurons": [list(a) for a in self.admitting],
                "note": "needs a (near-)strict minimum and a neuron with definite B and D = 0 (Theorem 9)",
            },
            "extras": list(self.extras),
        }


def read_network(path):
    """The saved network (cheap: reading only), or EngineInputError naming what is wrong."""
    return load_network(path)


def inspect_network(net, file: str = "") -> NetworkReport:
    """One Hessian and one B/D pass of a read network."""
    configure_torch_threads()
    arch, theta, X, Y = net.arch, net.params, net.X, net.Y
    value, g = deep.loss_and_grad(arch, theta, X, Y)
    eigs, h = C.hessian_spectrum(arch, theta, X, Y)
    grad_norm = float(np.linalg.norm(g))
    verdict = C.critical_point_kind(h) if grad_norm < C.GRAD_TOL else Verdict.NOT_CRITICAL
    neurons = tuple(C.neuron_bd(arch, theta, X, Y))
    # Theorem 9: a definite B and D = 0 give a line of minima for λ in I (at a strict minimum)
    admitting = tuple((n.layer, n.neuron) for n in neurons
                      if n.badge in ("positive definite", "negative definite") and n.D_norm <= C.D_TOL)
    return NetworkReport(file, arch, theta, X, Y, float(value), grad_norm, eigs, h, verdict, neurons, admitting,
                         tuple(sorted(net.extras)))


def inspect_job(net, file: str = "") -> Job[NetworkReport]:
    return (yield from wait_for(lambda stop: inspect_network(net, file), "Hessian of the loaded network"))


def inspect_network_file(path) -> dict:
    return run_to_completion(inspect_job(read_network(path), str(path))).as_json()
