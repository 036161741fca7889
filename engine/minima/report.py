"""Every number about a saved network (``python main.py inspect NET`` and the GUI's Load).

Networks come as the app's ``.npz``, a PyTorch state_dict (``.pt``/``.pth``: activation and data
given separately) or a torch.export archive (``.pt2``: data given separately). The Hessian is
full up to engine.landscape.hessian.FULL_SPECTRUM_MAX_PARAMS parameters, Lanczos + Hutchinson beyond.

``NetworkReport`` is the typed result; ``as_json`` is what the command line prints (enums as
their values), ``as_construction`` lets the Fig. 3 views draw a loaded net like a built one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.mlp import Arch
from engine.core.progress import Job, run_to_completion, subjob, wait_for
from engine.core.runtime import configure_torch_threads
from engine.io.netfile import save_network
from engine.io.readers import read_network
from engine.landscape.hessian import FULL_SPECTRUM_MAX_PARAMS, HessianReport, hessian_report, hessian_report_job
from engine.minima import construction as C
from engine.minima.verdicts import Verdict

NEURONS_FROM = 1  # neurons are counted from 1 within their layer wherever a person reads or types one


def uncovered(neuron: C.NeuronBD, verdict: Verdict, grad_norm: float) -> tuple[str, ...]:
    """Why Theorem 9 does not cover a split of ``neuron`` at a point of ``verdict`` (empty: it does).
    The theorem needs a minimum of the network, a definite B and D = 0 (docs/MATH.md B5)."""
    reasons = []
    if verdict is Verdict.NOT_CRITICAL:
        reasons.append(f"not a critical point (‖∇L‖ = {grad_norm:.2e})")
    elif verdict is Verdict.SADDLE:  # PSD points past a split are never strict; B7 splits them on
        reasons.append("the network is a saddle, not a minimum")
    if not neuron.badge.definite:
        reasons.append(f"B is {neuron.badge.value}")
    if neuron.D_norm > C.D_TOL:
        reasons.append(f"D ≠ 0 (‖D‖ = {neuron.D_norm:.2e})")
    return tuple(reasons)


@dataclass(frozen=True)
class LossVerdict:
    """What paper B's verdicts become under the loss ``kind`` (engine.landscape.losses): each
    hypothesis checked, and the verdicts, which are the summed loss's where every hypothesis holds
    (a positive multiple of the loss has its critical points and Hessian inertia) and
    CONDITIONS_NOT_MET where one fails (no theorem of the paper speaks there)."""

    kind: str
    checks: tuple  # engine.landscape.losses.Check, then "critical point"
    verdict: Verdict
    split_verdict: Verdict | None
    note: str

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "hypotheses": [{"name": c.name, "holds": c.holds, "note": c.note} for c in self.checks],
            "verdict": self.verdict.value,
            "split_verdict": None if self.split_verdict is None else self.split_verdict.value,
            "note": self.note,
        }


def loss_verdict(kind: str, arch: Arch, verdict: Verdict, grad_norm: float, split_verdict=None) -> LossVerdict:
    """``verdict`` (and ``split_verdict``): the summed squared loss's, by the one rule of
    construction.critical_point_kind and verify_split."""
    from engine.landscape.losses import Check, paper_b_hypotheses

    hyp = paper_b_hypotheses(kind, arch)
    critical = Check(
        "critical point",
        verdict is not Verdict.NOT_CRITICAL,
        f"‖∇L‖ = {grad_norm:.2e} of the summed loss (a multiple of it vanishes where it does), "
        f"tolerance {C.GRAD_TOL:g}",
    )
    applies = lambda v: v if hyp.met or v is None else Verdict.CONDITIONS_NOT_MET
    return LossVerdict(kind, hyp.checks + (critical,), applies(verdict), applies(split_verdict), hyp.note)


@dataclass(frozen=True)
class NetworkReport:
    file: str
    arch: Arch
    params: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    loss: float
    grad_norm: float
    eigs: np.ndarray  # Hessian spectrum, sorted ("lanczos": the k lowest and k highest only)
    hessian: C.HessianSummary
    method: str  # "full" or "lanczos" (engine.landscape.hessian)
    trace: float
    trace_stderr: float  # 0 for "full"
    verdict: Verdict  # STRICT_MINIMUM, DEGENERATE_MINIMUM, SADDLE or NOT_CRITICAL
    neurons: tuple  # NeuronBD of every hidden neuron
    admitting: tuple  # (layer, neuron) with definite B and D = 0 (Theorem 9 applies)
    extras: tuple  # names of the extra arrays in the file

    @property
    def gamma_possible(self) -> bool:
        return bool(self.admitting) and self.verdict in (Verdict.STRICT_MINIMUM, Verdict.DEGENERATE_MINIMUM)

    def as_construction(self) -> C.Construction:
        """A construction without split history: the small and the final net are this one."""
        step = C.Step("loaded", self.arch.widths, self.loss, self.grad_norm, self.hessian, self.verdict)
        return C.Construction(
            self.arch,
            self.params,
            self.X,
            self.Y,
            self.arch,
            self.params,
            self.neurons,
            self.neurons,
            (),
            (step,),
            (),
            None,
        )

    def as_json(self) -> dict:
        h = self.hessian
        return {
            "file": self.file,
            "widths": list(self.arch.widths),
            "activation": self.arch.activation,
            "bias": self.arch.bias,
            "n_params": self.arch.n_params,
            "n_samples": len(self.X),
            "loss": self.loss,
            "grad_norm": self.grad_norm,
            "critical_point": self.verdict.value,
            "hessian": {
                "method": self.method,
                "min": h.min,
                "max": h.max,
                "n_zero": h.n_zero,
                "n_negative": h.n_negative,
                "zero_tol": h.tol,
                "trace": self.trace,
                "trace_stderr": self.trace_stderr,
                "counted_over": "all eigenvalues"
                if self.method == "full"
                else f"the {len(self.eigs) // 2} lowest and highest eigenvalues (Lanczos)",
            },
            "neurons": [
                {
                    "layer": n.layer,
                    "neuron": n.neuron + NEURONS_FROM,
                    "B_eigs": n.B_eigs.tolist(),
                    "B": n.badge,
                    "D_norm": n.D_norm,
                    "admits_gamma": (n.layer, n.neuron) in self.admitting,
                    "outside_theorem_9": list(uncovered(n, self.verdict, self.grad_norm)),
                }
                for n in self.neurons
            ],
            "gamma_construction": {
                "possible": self.gamma_possible,
                "neurons": [[layer, neuron + NEURONS_FROM] for layer, neuron in self.admitting],
                "note": "needs a (near-)strict minimum and a neuron with definite B and D = 0 (Theorem 9); "
                "any neuron can still be split (--split), outside the theorem",
            },
            "extras": list(self.extras),
        }


def _hessian_summary(r: HessianReport) -> tuple[np.ndarray, C.HessianSummary]:
    """Eigenvalues the report has (all for "full", the extremes for "lanczos") and their summary."""
    eigs = r.spectrum if r.spectrum is not None else np.concatenate([r.lowest, r.highest])
    return eigs, C.HessianSummary.of(eigs)


def inspect_job(net, file: str = "") -> Job[NetworkReport]:
    """One Hessian report (full or Lanczos) and one B/D pass of a read network."""
    configure_torch_threads()
    arch, theta, X, Y = net.arch, net.params, net.X, net.Y
    value, g = yield from wait_for(lambda stop: mlp.loss_and_grad(arch, theta, X, Y), "loss and gradient")
    if arch.n_params <= FULL_SPECTRUM_MAX_PARAMS:  # one uninterruptible eigensolve: on a helper thread
        r = yield from wait_for(lambda stop: hessian_report(arch, theta, X, Y), "Hessian")
    else:  # Lanczos and Hutchinson yield between products, so Cancel lands within one
        r = yield from subjob(hessian_report_job(arch, theta, X, Y), 0.0, 0.9, "Hessian: ")
    eigs, h = _hessian_summary(r)
    grad_norm = float(np.linalg.norm(g))
    verdict = C.critical_point_kind(h, grad_norm)
    neurons = tuple((yield from wait_for(lambda stop: C.neuron_bd(arch, theta, X, Y), "B and D per neuron")))
    # Theorem 9: a definite B and D = 0 give a line of minima for λ in I (at a strict minimum)
    admitting = tuple((n.layer, n.neuron) for n in neurons if n.admits_split)
    return NetworkReport(
        file,
        arch,
        theta,
        X,
        Y,
        float(value),
        grad_norm,
        eigs,
        h,
        r.method,
        r.trace,
        r.trace_stderr,
        verdict,
        neurons,
        admitting,
        tuple(sorted(net.extras)),
    )


def inspect_network(net, file: str = "", on_progress=None) -> NetworkReport:
    """``on_progress``: called with every Progress of the job (engine.core.progress.run_to_completion)."""
    return run_to_completion(inspect_job(net, file), on_progress)


def inspect_network_file(path, activation: str | None = None, data=None, on_progress=None) -> dict:
    return inspect_network(read_network(path, activation, data), str(path), on_progress).as_json()


def inspect_and_split(
    path,
    activation=None,
    data=None,
    split: tuple | None = None,
    lam: float | None = None,
    out=None,
    on_progress=None,
    loss: str = "sum",
) -> dict:
    """``main.py inspect``: read, optionally split one neuron (γ, verified with the full Hessian)
    and write the result with its construction history; the report is of the network written.
    ``split``: (layer, neuron) with the neuron counted from 1, as everywhere a person names one.
    ``loss``: the loss whose verdicts are reported beside the summed loss's (``loss_verdict``).
    ``on_progress`` gets the Progress of the inspection (both inspections, in halves, with a split)."""
    from engine.landscape.losses import paper_b_hypotheses
    from engine.minima.workbench import add_split, construction_of, history_of

    paper_b_hypotheses(loss)  # an unknown loss fails before any file is read
    if (split is None) != (lam is None) or (split is not None and out is None):
        raise EngineInputError("--split LAYER,NEURON needs --lambda L and --out F.npz (and they need --split)")
    if split is not None and split[1] < NEURONS_FROM:
        raise EngineInputError(f"--split {split[0]},{split[1]}: neurons are counted from {NEURONS_FROM}")
    net = read_network(path, activation, data)
    if split is None:
        report = inspect_network(net, str(path), on_progress)
        return dict(
            report.as_json(), under_loss=loss_verdict(loss, report.arch, report.verdict, report.grad_norm).as_json()
        )
    report = run_to_completion(subjob(inspect_job(net, str(path)), 0.0, 0.5, "loaded net: "), on_progress)
    step = C.Step("loaded", net.arch.widths, report.loss, report.grad_norm, report.hessian, report.verdict)
    layer, neuron = split[0], split[1] - NEURONS_FROM
    c = add_split(construction_of(net, step, report.neurons), layer, neuron, lam)
    save_network(out, c.arch, c.params, c.X, c.Y, history=history_of(c))
    written = run_to_completion(subjob(inspect_job(read_network(out), str(out)), 0.5, 1.0, "split net: "), on_progress)
    v = c.verification
    result = written.as_json()
    result["split"] = {
        "layer": layer,
        "neuron": split[1],
        "copy": c.splits[-1].new + NEURONS_FROM,
        "lambda": lam,
        "verdict": v.verdict.value,
        "interval": str(v.interval),
        "unmet": list(v.unmet),
        "B_eigs": v.B_eigs.tolist(),
    }
    result["under_loss"] = loss_verdict(loss, written.arch, written.verdict, written.grad_norm, v.verdict).as_json()
    return result
