"""Every classification model in torchvision's zoo, exported and read by the toolkit (issue #55).

Not a benchmark of speed: a check that each architecture a user may export is accepted and
evaluated right. For every model of ``torchvision.models.list_models(module=torchvision.models)``
(weights=None, num_classes=10, random initialisation; batch norms given running statistics by
two train-mode batches first):

1. ``torch.export.export(model.eval(), (x,), dynamic_shapes=({0: Dim("batch")},))`` on a batch of
   4 random 3 × S × S images (S = 64, or what the model needs), saved with ``torch.export.save``;
   where a dynamic batch cannot be exported the row says so and the static batch is checked;
2. read back through ``engine.io.module_network.read_module_network`` with 4 random labels;
3. ``ModuleLoss(net, "cross-entropy")`` at θ and at θ + a random direction (1e-3 ‖θ‖) against
   the eager model made float64, its state loaded by ``load_state_dict``, the loss computed in
   plain torch: the larger relative difference of the two points, which must be within 1e-10;
4. for the smallest models (``--hessian-below`` parameters) the top Hessian eigenvalue by
   ``module_hessian(top_k=1, probes=2, max_full=0)`` against power iteration on the eager float64
   model's own Hessian-vector products (double backward with attention in its math form), run
   until its residual ‖Hv − λv‖ bounds the eigenvalue's error within 1e-4 relative; the row
   gives the relative difference, which must be within 1e-3.

Each model runs in its own process (memory is returned, a crash is one row). torchvision is not a
dependency of the project: run it from an environment that has it, with the project on the path:

    PYTHONPATH=/path/to/landscape-lens nice python benchmarks/zoo_check.py [--models resnet18 vit_b_16]
        [--max-params 60e6] [--hessian-below 3e6] [--timeout 900] [--out table.tsv]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import multiprocessing
import sys
import tempfile
import traceback
from pathlib import Path

SIZE = 64  # image side when the model takes any
# models whose input must be larger, or whose constructor fixes the image size
SIDES = {"inception_v3": 80, "maxvit_t": 224, "vit_h_14": 56}
BUILD_ARGUMENTS = {
    "vit_b_16": {"image_size": 64},
    "vit_b_32": {"image_size": 64},
    "vit_l_16": {"image_size": 64},
    "vit_l_32": {"image_size": 64},
    "vit_h_14": {"image_size": 56},
    "inception_v3": {"aux_logits": False, "init_weights": True},
    "googlenet": {"aux_logits": False, "init_weights": True},
}
LOSS_RTOL, EIGEN_RTOL, POWER_RTOL = 1e-10, 1e-3, 1e-4


def build(name: str):
    import torchvision

    return torchvision.models.get_model(name, weights=None, num_classes=10, **BUILD_ARGUMENTS.get(name, {}))


def count_parameters(name: str) -> int | None:
    """The model's parameters, counted on the meta device (no memory, no initialisation); None
    where the constructor reads tensor values (RegNet's widths): its worker counts them."""
    import torch

    try:
        with torch.device("meta"):
            return sum(p.numel() for p in build(name).parameters())
    except Exception:  # noqa: BLE001 -- any constructor that needs real tensors
        return None


def check_model(name: str, hessian_below: float, folder: str, max_params: float = math.inf) -> dict:
    """The row of one model: {model, params, export, loss_rel, eig_rel, ok, error}."""
    import numpy as np
    import torch

    from engine.io.module_network import read_module_network
    from engine.landscape.evaluation import math_attention
    from engine.landscape.module_hessian import module_hessian
    from engine.landscape.module_loss import ModuleLoss

    torch.manual_seed(0)
    row = {"model": name, "params": None, "export": "", "loss_rel": None, "eig_rel": None, "ok": False, "error": ""}
    side = SIDES.get(name, SIZE)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, side, side, generator=generator)
    y = torch.randint(0, 10, (4,), generator=generator)
    step = "build"
    try:
        model = build(name)
        row["params"] = sum(p.numel() for p in model.parameters())
        if row["params"] > max_params:
            return {**row, "ok": None, "error": "skipped: over --max-params"}
        model.train()
        with torch.no_grad():  # running statistics other than 0 and 1
            for _ in range(2):
                model(1.5 * torch.randn(4, 3, side, side, generator=generator) + 0.2)
        model.eval()
        step = "export"
        path, data = Path(folder) / f"{name}.pt2", Path(folder) / f"{name}.npz"
        try:
            program = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
            row["export"] = "dynamic batch"
        except Exception as error:  # noqa: BLE001 -- any failure of torch.export is one row
            program = torch.export.export(model, (x,))
            row["export"] = f"static batch (dynamic failed: {_first_line(error)[:80]})"
        torch.export.save(program, path)
        del program
        np.savez(data, X=x.numpy(), Y=y.numpy())
        step = "read"
        net = read_module_network(path, data)
        step = "loss"
        loss = ModuleLoss(net, "cross-entropy")
        eager = _Eager(model, loss.names, x, y)
        direction = torch.randn(loss.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
        moved = loss.theta + 1e-3 * loss.theta.norm() * direction / direction.norm()
        rel = 0.0
        for flat in (loss.theta, moved):
            want = eager.loss(flat)
            rel = max(rel, abs(loss.loss(flat) - want) / abs(want))
        row["loss_rel"] = rel
        ok = rel <= LOSS_RTOL
        if row["params"] < hessian_below:
            step = "hessian"
            got = float(module_hessian(loss, top_k=1, probes=2, max_full=0).eigenvalues[0])
            with math_attention():
                want, residual = eager.power_iteration(loss.theta)
            row["eig_rel"] = abs(got - want) / abs(want)
            row["error"] = f"power iteration λ={want:.6g} (residual {residual:.1e}), ours {got:.6g}"
            ok = ok and row["eig_rel"] <= EIGEN_RTOL
        row["ok"] = ok
    except Exception as error:  # noqa: BLE001 -- a failure at any step is the row's finding
        row["error"] = f"{step}: {_first_line(error)}"
        if "--trace" in sys.argv:
            traceback.print_exc()
    return row


class _Eager:
    """The eager model in float64, in plain torch, at any flat θ in ``names`` order."""

    def __init__(self, model, names, x, y):
        import torch

        self.torch = torch
        self.model = copy.deepcopy(model).double().eval()
        if tuple(n for n, _ in self.model.named_parameters()) != tuple(names):
            raise AssertionError("the read module's parameters are not the model's, in its order")
        self.params = list(self.model.parameters())
        self.state = self.model.state_dict()
        self.x, self.y = x.double(), y

    def load(self, flat) -> None:
        parts, at = {}, 0
        for name, p in self.model.named_parameters():
            parts[name] = flat[at : at + p.numel()].view(p.shape)
            at += p.numel()
        state = copy.copy(self.state)  # an OrderedDict with its _metadata (MNASNet reads its version there)
        state.update(parts)
        self.model.load_state_dict(state)

    def objective(self):
        return self.torch.nn.functional.cross_entropy(self.model(self.x), self.y)

    def loss(self, flat) -> float:
        self.load(flat)
        with self.torch.no_grad():
            return float(self.objective())

    def power_iteration(self, flat, max_steps: int = 500) -> tuple[float, float]:
        """(λ, ‖Hv − λv‖) of the Hessian's eigenvalue of largest magnitude, by power iteration on
        double-backward products; stops once the residual is within POWER_RTOL of |λ|."""
        torch = self.torch
        self.load(flat)
        grads = torch.autograd.grad(self.objective(), self.params, create_graph=True)
        g = torch.cat([t.reshape(-1) for t in grads])
        v = torch.randn(g.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
        v /= v.norm()
        lam, residual = 0.0, math.inf
        for _ in range(max_steps):
            hv = torch.autograd.grad(g, self.params, v, retain_graph=True)
            hv = torch.cat([t.reshape(-1) for t in hv])
            lam = float(v @ hv)
            residual = float((hv - lam * v).norm())
            if residual <= POWER_RTOL * abs(lam):
                break
            v = hv / hv.norm()
        return lam, residual


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"


def _run(name, hessian_below, folder, max_params, queue):
    queue.put(check_model(name, hessian_below, folder, max_params))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="these models only (default: the whole zoo)")
    parser.add_argument("--max-params", type=float, default=60e6, help="skip larger models")
    parser.add_argument("--hessian-below", type=float, default=3e6, help="top eigenvalue for models this small")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per model")
    parser.add_argument("--out", type=Path, help="also write the rows here, one JSON object a line")
    parser.add_argument("--trace", action="store_true", help="print each failure's traceback")
    args = parser.parse_args()
    import torchvision

    names = args.models or torchvision.models.list_models(module=torchvision.models)
    sizes = {name: count_parameters(name) for name in names}
    names = sorted(names, key=lambda name: math.inf if sizes[name] is None else sizes[name])
    print(f"{'model':<22} {'params':>11}  {'ok':<4} {'loss rel':>9} {'eig rel':>9}  export / error", flush=True)
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            if sizes[name] is not None and sizes[name] > args.max_params:
                row = {"model": name, "params": sizes[name], "ok": None, "error": "skipped: over --max-params"}
            else:
                queue = context.Queue()
                process = context.Process(target=_run, args=(name, args.hessian_below, folder, args.max_params, queue))
                process.start()
                process.join(args.timeout)
                if process.is_alive():
                    process.kill()
                    process.join()
                    row = {"model": name, "params": sizes[name], "ok": False, "error": f"over {args.timeout:g} s"}
                elif process.exitcode != 0 or queue.empty():
                    row = {"model": name, "params": sizes[name], "ok": False, "error": f"exit {process.exitcode}"}
                else:
                    row = queue.get()
                for member in Path(folder).glob(f"{name}.*"):
                    member.unlink()
            _print(row)
            if args.out:
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")


def _print(row: dict) -> None:
    fmt = lambda v: "" if v is None else f"{v:.1e}"
    ok = {True: "ok", False: "FAIL", None: "skip"}[row["ok"]]
    text = "; ".join(t for t in (row.get("export", ""), row.get("error", "")) if t)
    print(
        f"{row['model']:<22} {row['params'] or 0:>11,}  {ok:<4} {fmt(row.get('loss_rel')):>9} "
        f"{fmt(row.get('eig_rel')):>9}  {text}",
        flush=True,
    )


if __name__ == "__main__":
    main()
