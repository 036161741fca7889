"""``reproduce NAME --out DIR``: a paper experiment headless (metrics.json, .npz arrays, PNGs)."""

from __future__ import annotations

import json

from ..arguments import MAX_SEED, UsageError, int_in

NAME = "reproduce"
HELP = "run a paper experiment headless"


def add_arguments(parser) -> None:
    parser.add_argument("name", help="experiment name (see `reproduce --list`)", nargs="?")
    parser.add_argument("--out", help="output folder for metrics.json, .npz and PNG figures")
    parser.add_argument("--quick", action="store_true", help="a reduced version, for tests")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED, "a seed from 0"), default=0)
    parser.add_argument("--list", action="store_true", help="list the experiments")


def run(args) -> int:
    from engine.core.exports import json_default
    from engine.core.progress import run_to_completion
    from engine.experiments import experiments, run_experiment

    from ..progress_bar import progress_bar

    if args.list or not args.name:
        for name, experiment in experiments().items():
            print(f"{name:24s} {experiment.description}")
        return 0
    if not args.out:
        raise UsageError("reproduce needs --out DIR")

    with progress_bar(args.name) as on_progress:  # a tqdm bar on a terminal's stderr, else nothing
        metrics = run_to_completion(run_experiment(args.name, args.out, args.quick, args.seed), on_progress)
    print(json.dumps(metrics, indent=2, default=json_default))  # the same JSON as metrics.json
    return 0
