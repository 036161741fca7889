"""``python main.py inspect NET.npz``: every number about a saved network, as plain JSON data."""
from __future__ import annotations

import numpy as np

from . import construction as C
from . import deep
from .netio import load_network
from .runtime import configure_torch_threads


def inspect_network_file(path) -> dict:
    configure_torch_threads()
    net = load_network(path)
    arch, theta, X, Y = net.arch, net.params, net.X, net.Y
    value, g = deep.loss_and_grad(arch, theta, X, Y)
    h = C.hessian_spectrum(arch, theta, X, Y)[1]
    critical = float(np.linalg.norm(g)) < C.GRAD_TOL
    neurons = [{"layer": n.layer, "neuron": n.neuron, "B_eigs": n.B_eigs.tolist(), "B": n.badge,
                "D_norm": n.D_norm,
                # Theorem 9: a definite B and D = 0 give a line of minima for λ in I (at a strict minimum)
                "admits_gamma": n.badge in ("positive definite", "negative definite") and n.D_norm <= C.D_TOL}
               for n in C.neuron_bd(arch, theta, X, Y)]
    admitting = [(n["layer"], n["neuron"]) for n in neurons if n["admits_gamma"]]
    kind = C.critical_point_kind(h) if critical else "not a critical point"
    return {
        "file": str(path), "widths": list(arch.widths), "activation": arch.activation, "bias": arch.bias,
        "n_params": arch.n_params, "n_samples": len(X),
        "loss": value, "grad_norm": float(np.linalg.norm(g)), "critical_point": kind,
        "hessian": {"min": h.min, "max": h.max, "n_zero": h.n_zero, "n_negative": h.n_negative,
                    "zero_tol": h.tol},
        "neurons": neurons,
        "gamma_construction": {
            "possible": bool(admitting) and kind in ("strict minimum", "degenerate minimum candidate"),
            "neurons": [list(a) for a in admitting],
            "note": "needs a (near-)strict minimum and a neuron with definite B and D = 0 (Theorem 9)",
        },
        "extras": sorted(net.extras),
    }
