"""``inspect NET``: every number about a saved network, and a γ-split of it, as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from ..arguments import split_arg

NAME = "inspect"
HELP = "critical-point report of a saved network, as JSON"


def add_arguments(parser) -> None:
    parser.add_argument(
        "network",
        help="a .npz written by the app (weights, X, Y, activation), a PyTorch "
        "state_dict (.pt/.pth) or a torch.export archive (.pt2)",
    )
    parser.add_argument("--activation", help="the state_dict's activation (sigmoid, tanh, …)")
    parser.add_argument("--data", help="data for a PyTorch network: .npz with X, Y or .csv (last column y)")
    parser.add_argument(
        "--split", type=split_arg, help="LAYER,NEURON: split this hidden neuron (γ); both counted from 1"
    )
    parser.add_argument("--lambda", dest="lam", type=float, help="λ of the split")
    parser.add_argument("--out", help="F.npz: the split network with its construction history")
    parser.add_argument(
        "--loss",
        default="sum",
        help="sum, mean or cross-entropy: which of paper B's hypotheses hold under this loss, and the "
        "verdicts there (default: sum)",
    )


def run(args) -> int:
    from engine.minima.report import inspect_and_split

    from ..progress_bar import progress_bar

    with progress_bar(f"inspect {Path(args.network).name}") as on_progress:  # on a terminal's stderr only
        report = inspect_and_split(
            args.network,
            args.activation,
            args.data,
            args.split,
            args.lam,
            args.out,
            on_progress=on_progress,
            loss=args.loss,
        )
    print(json.dumps(report, indent=2))
    return 0
