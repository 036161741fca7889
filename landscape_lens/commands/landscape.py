"""``landscape NET --out DIR``: loss planes, an optimizer's path on its PCA plane, the line to a
second network and the Hessian's spectral density, written as documented .npz files.

Modes (any together; with none, a 51 × 51 random plane): ``--plane N`` a random plane (``--train``
turns it into the PCA plane of the trajectories), ``--interpolate NET2``, ``--density``. The
network is written beside the files as network.npz, in the flat order of their vectors. Prints a
JSON summary (also summary.json). See docs/EXPORTS.md, "Landscape toolkit".

Any other PyTorch model (a .pt2 archive that is not a chain of Linear layers, or a state_dict
with ``--model package.module:factory``) goes through the module toolkit
(engine.landscape.module_*): ``--plane``, ``--trajectory CKPT …`` (its PCA plane instead of
``--train``) and ``--interpolate MODEL2`` over the data in chunks of ``--batch-size``, on every
core. See docs/EXPORTS.md, "Any PyTorch model".
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..arguments import MAX_SEED, float_in, int_in, model_and_checkpoints

NAME = "landscape"
HELP = "loss planes, PCA trajectory plane, interpolation and Hessian density of a network, as .npz"

OPTIMIZERS = ("gd", "adam", "sgd")


def optimizer_list(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",")]
    bad = [n for n in names if n not in OPTIMIZERS]
    if bad or len(set(names)) != len(names) or not names:
        raise argparse.ArgumentTypeError(f"expected distinct names from {', '.join(OPTIMIZERS)}, not {text[:60]!r}")
    return names


def add_arguments(parser) -> None:
    parser.add_argument("network", help="a .npz written by the app, a state_dict .pt/.pth or a .pt2 archive")
    parser.add_argument("--out", required=True, help="directory for the .npz files (created if missing)")
    parser.add_argument("--activation", help="the state_dict's activation (sigmoid, tanh, relu)")
    parser.add_argument("--data", help="data for a PyTorch network: .npz with X, Y or .csv (last column y)")
    parser.add_argument(
        "--loss",
        choices=("sum", "mean", "cross-entropy"),
        help="default: sum; for a module, cross-entropy when Y holds integer labels",
    )
    parser.add_argument(
        "--directions",
        default="filter",
        choices=("random", "filter", "layer", "hessian", "hessian-extremes"),
        help="default: filter; hessian: the top two eigenvectors; hessian-extremes: the bottom and the top (a module)",
    )
    parser.add_argument(
        "--ignore",
        default="none",
        choices=("none", "biases", "biasbn"),
        help="biases, biasbn: zero every 1-D parameter (biases, batch norm) in the directions",
    )
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0)
    parser.add_argument("--plane", type=int_in(2, 1001), metavar="N", help="N × N grid (default 51)")
    parser.add_argument("--extent", type=float_in(1e-12, 1e6), metavar="T", help="α, β ∈ [−T, T] (default 1)")
    parser.add_argument("--train", type=int_in(2, 100_000), metavar="STEPS", help="train and draw the PCA plane")
    parser.add_argument("--optimizer", default="gd", choices=OPTIMIZERS)
    parser.add_argument("--lr", type=float_in(1e-300, 1e6), help="step size (default: per optimizer)")
    parser.add_argument("--compare", type=optimizer_list, metavar="OPT,OPT", help="several optimizers on one plane")
    parser.add_argument("--interpolate", metavar="NET2", help="the line from NET to NET2 (same architecture)")
    parser.add_argument("--points", type=int_in(2, 100_000), default=201, metavar="M")
    parser.add_argument("--density", action="store_true", help="Hessian spectral density (stochastic Lanczos)")
    parser.add_argument(
        "--hessian",
        action="store_true",
        help="a module's top eigenpairs, Hutchinson trace and (up to 3000 parameters) full Hessian: hessian.npz",
    )
    parser.add_argument("--top-k", type=int_in(1, 100), default=3, metavar="K", help="--hessian's eigenpairs (3)")
    parser.add_argument(
        "--bottom-k", type=int_in(0, 100), default=0, metavar="K", help="--hessian's most negative eigenpairs (0)"
    )
    parser.add_argument(
        "--full-hessian",
        action="store_true",
        help="form the whole Hessian (one product a parameter); by default only where it costs no more than the rest",
    )
    parser.add_argument(
        "--probes", type=int_in(1, 1000), help="probes: --density's (default 10), --hessian's trace's (default 100)"
    )
    parser.add_argument("--steps", type=int_in(1, 1000), default=80, help="Lanczos steps per probe")
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--no-vts", action="store_true", help="skip plane.vts")
    model_and_checkpoints(
        parser,
        "--trajectory",
        "state_dicts saved in training, oldest first, or one run folder written by ll.Recorder: their PCA plane",
    )
    parser.add_argument("--batch-size", type=int_in(1, 1 << 20), metavar="B", help="samples per chunk (a module)")
    parser.add_argument(
        "--executor", choices=("local", "ray"), help="a module's plane as a sweep: its rows as cells on this executor"
    )
    parser.add_argument("--address", help="with --executor ray: auto or ray://HOST:PORT of a running cluster")
    parser.add_argument("--resume", action="store_true", help="with --executor: compute only the rows not in --out")


def run(args) -> int:
    from engine.core.exports import json_default

    summary = landscape(args)
    print(json.dumps(summary, indent=2, default=json_default))
    return 0


def landscape(args) -> dict:
    from engine.core.errors import EngineInputError
    from engine.core.exports import json_default
    from engine.core.progress import run_to_completion
    from engine.landscape import density, exports, interpolation, operations, trajectory_pca
    from engine.landscape.losses import paper_b_hypotheses
    from engine.landscape.networks import read_network, write_network
    from engine.landscape.plane import MLPLoss

    if args.compare and args.train is None:
        raise EngineInputError("--compare needs --train STEPS")
    net = read_network_argument(args)
    if not hasattr(net, "arch"):  # a module: engine.io.module_network.ModuleNetwork
        return module_landscape(args, net)
    arch, kind = net.arch, args.loss or "sum"
    ignore = "biases" if args.ignore == "biasbn" else args.ignore
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    hyp = paper_b_hypotheses(kind, arch)
    summary = {
        "network": str(args.network),
        "widths": list(arch.widths),
        "activation": arch.activation,
        "bias": arch.bias,
        "n_params": arch.n_params,
        "n_samples": len(net.X),
        "loss_kind": kind,
        "paper_b_hypotheses_met": hyp.met,
        "paper_b_note": hyp.note,
        "files": [str(write_network(out / "network.npz", net))],
    }
    common = dict(kind=kind, dtype=args.dtype, device=args.device)
    n = args.plane or 51
    wants_plane = args.plane is not None or args.train is not None or not (args.interpolate or args.density)
    if wants_plane and args.train is not None:
        optimizers = args.compare or [args.optimizer]
        r = run_to_completion(
            trajectory_pca.pca_plane_job(
                arch, net.params, net.X, net.Y, args.train, optimizers, args.lr, n=n, extent=args.extent,
                seed=args.seed, **common,
            )
        )  # fmt: skip
        summary["files"] += [str(p) for p in exports.write_pca_plane(out, r, not args.no_vts)]
        summary["pca"] = {
            "explained": r.explained,
            "optimizers": [run.optimizer for run in r.runs],
            "lr": [run.lr for run in r.runs],
            "loss_start": float(r.runs[0].loss[0]),
            "loss_end": [float(run.loss[-1]) for run in r.runs],
        }
        summary["plane"] = _plane_summary(r.plane)
    elif wants_plane:
        loss = MLPLoss(arch, net.params, net.X, net.Y, kind, args.dtype, args.device)
        p = run_to_completion(operations.plane_job(loss, n, args.extent or 1.0, args.directions, ignore, args.seed))
        summary["files"] += [str(path) for path in exports.write_plane(out, p, arch, not args.no_vts)]
        summary["plane"] = _plane_summary(p)
    if args.interpolate:
        other = read_network(args.interpolate, args.activation, args.data)
        if other.arch != arch:
            raise EngineInputError(f"{args.interpolate}: architecture {other.arch.widths} differs from {arch.widths}")
        r = run_to_completion(
            interpolation.interpolation_job(arch, net.params, other.params, net.X, net.Y, args.points, **common)
        )
        summary["files"].append(str(exports.write_interpolation(out, r)))
        summary["interpolation"] = {"loss_a": r.loss_a, "loss_b": r.loss_b, "barrier": r.barrier}
    if args.density:
        probes = _density_probes(args)
        r = run_to_completion(
            density.density_job(
                arch, net.params, net.X, net.Y, probes, args.steps, args.seed, kind, None, args.dtype, args.device
            )
        )
        summary["files"].append(str(exports.write_density(out, r)))
        lo, hi = r.extremes
        summary["density"] = {"trace": r.trace, "sum_squares": r.sum_squares, "lowest": lo, "highest": hi}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=json_default))
    return summary


def _density_probes(args) -> int:
    return args.probes or 10


def _plane_summary(p) -> dict:
    return {
        "n": len(p.alpha),
        "L_star": p.L_star,
        "loss_min": float(p.loss.min()),
        "loss_max": float(p.loss.max()),
        "directions": p.normalization,
    }


def _module_flags(args) -> list[str]:
    """The flags only the module toolkit reads."""
    flags = [flag for attr, flag in (("model", "--model"), ("trajectory", "--trajectory")) if getattr(args, attr)]
    flags += ["--batch-size"] if args.batch_size is not None else []
    flags += ["--hessian"] if args.hessian else []
    flags += ["--executor"] if args.executor else []
    return flags + (["--directions hessian"] if args.directions == "hessian" else [])


def read_network_argument(args):
    """The network of ``args``: paper B's flat MLP when its readers take the file and no module
    flag is given (every MLP behaviour as before, ``engine.landscape.toolkit.read_any_network``);
    otherwise the file as any nn.Module (engine.io.module_network)."""
    from engine.core.errors import EngineInputError
    from engine.io.module_network import read_module_network
    from engine.landscape.toolkit import read_any_network

    flags, exported = _module_flags(args), Path(args.network).suffix.lower() == ".pt2"
    if flags and not (exported or args.model):
        raise EngineInputError(
            f"{flags[0]} needs a model read as a module: a .pt2 archive, or a state_dict with "
            "--model package.module:factory"
        )
    if (flags or exported) and not args.data:
        raise EngineInputError(f"{args.network}: a PyTorch model needs --data D.npz (X batch first, Y) or a .csv")
    if flags:
        return read_module_network(args.network, args.data, args.model)
    return read_any_network(args.network, args.activation, args.data)  # the window's choice, as File ▸ Load network


def module_landscape(args, net) -> dict:
    """The module toolkit: every input read and checked first, then the modes run."""
    from engine.core.errors import EngineInputError
    from engine.core.exports import json_default
    from engine.core.lazy import torch
    from engine.core.runtime import configure_torch_threads
    from engine.io.module_network import read_checkpoint
    from engine.landscape import exports, operations
    from engine.landscape.module_hessian import check_options as check_hessian_options
    from engine.landscape.module_loss import ModuleLoss
    from engine.landscape.plane import MAX_MODULE_GRID, check_grid
    from engine.landscape.toolkit import loss_kind, read_end_state
    from engine.landscape.trajectory_pca import check_count as check_checkpoint_count
    from landscape_lens.progress_bar import progress_bar

    configure_torch_threads(os.cpu_count() or 1)  # the command line uses every core
    for flag, given in (("--train", args.train), ("--compare", args.compare), ("--activation", args.activation)):
        if given:
            raise EngineInputError(f"{flag} is for paper B's MLPs; a module's own training is read with --trajectory")
    if args.density and not args.hessian:
        raise EngineInputError("--density of a module comes with its Hessian measures: add --hessian")
    if args.resume and not args.executor:
        raise EngineInputError("--resume continues a plane computed with --executor; give --executor too")
    if args.executor and (args.trajectory or args.device != "cpu"):
        raise EngineInputError("--executor computes a plane's rows on the CPU; not with --trajectory or --device")
    kind = loss_kind(args.loss or "auto", net)
    loss = ModuleLoss(net, kind, args.batch_size, args.dtype, args.device)
    ignore = "biasbn" if args.ignore == "biases" else args.ignore
    n = args.plane or 51
    check_grid(n, args.extent or 1.0, MAX_MODULE_GRID)
    hessian_probes, density_probes = args.probes or 100, _density_probes(args) if args.density else 0
    if args.hessian:
        check_hessian_options(loss, args.top_k, hessian_probes, density_probes, args.steps, bottom_k=args.bottom_k)
    names, states = _trajectory(args.trajectory or (), net)
    if names:
        check_checkpoint_count(len(names), loss.n_params)
    states = states or [read_checkpoint(path, net) for path in names]
    other = read_end_state(args.interpolate, net) if args.interpolate else None

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "network": str(args.network),
        "source": net.source,
        "n_params": loss.n_params,
        "n_tensors": len(loss.names),
        "n_samples": loss.n_samples,
        "n_outputs": loss.n_outputs,
        "loss_kind": kind,
        "batch_size": loss.batch_size,
        "fixed_batch": net.fixed_batch,
        "threads": torch.get_num_threads(),
        "files": [],
    }
    vts = not args.no_vts
    run = lambda job, what: _run(job, f"landscape {Path(args.network).name}: {what}", progress_bar)
    wants_plane = args.plane is not None or not (args.interpolate or states or args.hessian)
    if states:
        r = run(operations.trajectory_job(loss, states, n, args.extent), "checkpoints' PCA plane")
        summary["files"] += [str(p) for p in exports.write_checkpoint_plane(out, r, loss, names, vts)]
        summary["pca"] = {"explained": r.explained, "checkpoints": len(states), "loss_end": float(r.runs[0].loss[-1])}
        summary["plane"] = _plane_summary(r.plane)
    elif wants_plane:
        grid = _sweep_grid(args, kind, out) if args.executor else None
        job = operations.plane_job(loss, n, args.extent or 1.0, args.directions, ignore, args.seed, grid=grid)
        p = run(job, "plane")
        summary["files"] += [str(path) for path in exports.write_plane(out, p, loss, vts)]
        summary["plane"] = _plane_summary(p)
    if other is not None:
        r = run(operations.interpolation_job(loss, other, args.points), "line")
        summary["files"].append(str(exports.write_interpolation(out, r, **exports.layout(loss))))
        summary["interpolation"] = {"loss_a": r.loss_a, "loss_b": r.loss_b, "barrier": r.barrier}
        if r.accuracy is not None:
            summary["interpolation"].update(
                accuracy_a=r.accuracy_a, accuracy_b=r.accuracy_b, accuracy_barrier=r.accuracy_barrier
            )
    if args.hessian:
        full = True if args.full_hessian else None
        options = dict(top_k=args.top_k, bottom_k=args.bottom_k, probes=hessian_probes, seed=args.seed, full=full)
        h = run(operations.hessian_job(loss, **options, density_probes=density_probes, steps=args.steps), "Hessian")
        summary["files"].append(str(exports.write_hessian(out, h, loss)))
        if h.density is not None:
            summary["files"].append(str(exports.write_density(out, h.density)))
        summary["hessian"] = {
            "eigenvalues": h.eigenvalues,
            "residuals": h.residuals,
            "bottom_eigenvalues": h.bottom_eigenvalues,
            "bottom_residuals": h.bottom_residuals,
            "trace": h.trace,
            "trace_se": h.trace_se,
            "probes": len(h.trace_samples),
            "formed": h.hessian is not None,
            "n_hvp": h.n_hvp,
        }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=json_default))
    return summary


def _trajectory(paths, net) -> tuple[list[str], list]:
    """(the checkpoints' names, their states when read here): files are named by their paths and
    read later; one run folder (ll.Recorder's) gives its checkpoints, "RUN:step N", each checked
    against the model's keys and shapes."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        from engine.io.module_network import check_state_dict
        from engine.runs import open_run

        run = open_run(paths[0])
        steps = [int(step) for step in run.checkpoint_steps]
        names = [f"{paths[0]}:step {step}" for step in steps]
        return names, [check_state_dict(name, run.checkpoint(step), net.module) for name, step in zip(names, steps)]
    return [str(path) for path in paths], []


def _sweep_grid(args, kind: str, out: Path):
    """The plane's grid as a sweep of rows (engine.sweeps.module_plane) on ``--executor``."""
    from engine.sweeps import module_plane as sweep

    def grid(theta, d1, d2, alpha, beta):
        paths = [str(Path(p).resolve()) for p in (args.network, args.data)]  # workers may start elsewhere
        source = sweep.PlaneSource(*paths, args.model, kind, args.batch_size, args.dtype, theta, d1, d2, alpha, beta)
        mode = "resume" if args.resume else "new"
        return sweep.grid_job(source, out, args.executor, args.address, None, mode)

    return grid


def _run(job, description: str, progress_bar):
    from engine.core.progress import run_to_completion

    with progress_bar(description) as on_progress:  # a bar on a terminal's stderr, else nothing
        return run_to_completion(job, on_progress)
