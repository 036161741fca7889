"""Every classification model in torchvision's zoo, and torch.nn's transformer encoder, LSTM and
GRU, exported and read by the toolkit (issue #55).

Not a benchmark of speed: a check that each architecture a user may export is accepted and
evaluated right. For every model of ``torchvision.models.list_models(module=torchvision.models)``
(weights=None, num_classes=10, random initialisation; batch norms given running statistics by
two train-mode batches first), and, with ``--nn`` or by default, three models built of torch.nn's
layers (``tests.models``' token transformer over a two-layer ``nn.TransformerEncoder``, and its
``nn.LSTM`` and ``nn.GRU`` classifiers, at a width of 64):

1. ``torch.export.export(model.eval(), (x,), dynamic_shapes=({0: Dim("batch")},))`` on a batch of
   2 random inputs (images 3 × S × S with S = 32, or the smallest side the model takes), saved
   with ``torch.export.save``; where a dynamic batch cannot be exported the row says so and the
   static batch is checked;
2. read back through ``engine.io.module_network.read_module_network`` with 2 random labels;
3. ``ModuleLoss(net, "cross-entropy")`` at θ and at θ + a random direction (1e-3 ‖θ‖) against
   the eager model made float64, its state loaded by ``load_state_dict``, the loss computed in
   plain torch: the larger relative difference of the two points, which must be within 1e-10;
4. for the smaller models (``--hessian-below`` parameters) the top Hessian eigenvalue by
   ``module_hessian(top_k=1, probes=2, max_full=0)`` (the toolkit's Lanczos on its
   forward-over-reverse products through the read graph) against scipy's ``eigsh`` (ARPACK,
   largest algebraic) on the eager float64 model's autograd Hessian-vector products (reverse
   over reverse; central differences of its gradients where torch has no second derivative:
   ``_Eager.top_eigenvalue``), run until its residual ‖Hv − λv‖ is within 1e-4 |λ| (for a
   symmetric matrix that bounds the reference's own error): the relative difference must be
   within 1e-3.

Each model runs in its own process (memory is returned, a crash is one row), under a data-size
limit (``RLIMIT_DATA``, ``--memory-gib``) so that one model cannot exhaust a shared machine; a
model whose need, estimated as its parameters times the largest peak memory per parameter
measured so far in the run among models over 10 million parameters (rows carry their peak; before
any, ``--bytes-per-param``), exceeds that limit is skipped with the estimate. Models run smallest
first. torchvision is not a dependency of the project: run it from an environment that has it,
with the project on the path:

    PYTHONPATH=/path/to/landscape-lens nice python benchmarks/zoo_check.py [--models resnet18 nn.LSTM]
        [--max-params 700e6] [--hessian-below 3e6] [--memory-gib 12] [--bytes-per-param 40]
        [--timeout 900] [--out rows.jsonl] [--markdown table.md]

``--rows a.jsonl b.jsonl --markdown table.md`` runs nothing and writes the table of earlier runs'
rows (several runs may share the work), every model without a row marked as not run.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import multiprocessing
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

SIZE = 32  # image side when the model takes any
# models whose input must be larger: Inception's stem, AlexNet's three strided poolings, and
# MaxViT, whose every stage's grid must divide into its 7 × 7 windows (the last stage sees S / 32:
# S = 224 is the smallest it takes)
SIDES = {"inception_v3": 75, "alexnet": 64, "maxvit_t": 224, "vit_h_14": 28}
BUILD_ARGUMENTS = {
    "vit_b_16": {"image_size": 32},
    "vit_b_32": {"image_size": 32},
    "vit_l_16": {"image_size": 32},
    "vit_l_32": {"image_size": 32},
    "vit_h_14": {"image_size": 28},
    "inception_v3": {"aux_logits": False, "init_weights": True},
    "googlenet": {"aux_logits": False, "init_weights": True},
}
NN_MODELS = ("nn.TransformerEncoder", "nn.LSTM", "nn.GRU")
CLASSES, BATCH, NN_WIDTH = 10, 2, 64  # a batch of 2: the smallest a dynamic batch is exported on
LOSS_RTOL, EIGEN_RTOL, ARPACK_TOL, FD_STEP = 1e-10, 1e-3, 1e-4, 1e-5


def build(name: str):
    """(model, one input batch of BATCH) of a zoo name or one of NN_MODELS."""
    import torch

    generator = torch.Generator().manual_seed(1)
    if name in NN_MODELS:
        from tests.models import SEQUENCE, TOKENS, VOCABULARY, RecurrentClassifier, TokenTransformer

        if name == "nn.TransformerEncoder":
            ids = torch.randint(0, VOCABULARY, (BATCH, TOKENS), generator=generator)
            return TokenTransformer(dim=NN_WIDTH, heads=4, classes=CLASSES), ids
        cell = name.removeprefix("nn.").lower()
        return RecurrentClassifier(cell, hidden=NN_WIDTH, classes=CLASSES), torch.randn(
            BATCH, *SEQUENCE, generator=generator
        )
    import torchvision

    side = SIDES.get(name, SIZE)
    model = torchvision.models.get_model(name, weights=None, num_classes=CLASSES, **BUILD_ARGUMENTS.get(name, {}))
    return model, torch.randn(BATCH, 3, side, side, generator=generator)


def count_parameters(name: str) -> int:
    """The model's parameters, counted on the meta device (no memory, no initialisation); where the
    constructor reads tensor values (RegNet's widths), the count torchvision's weights give for
    1,000 classes, less the head's difference (the head is Linear(width, classes))."""
    import torch

    if name in NN_MODELS:
        return sum(p.numel() for p in build(name)[0].parameters())
    try:
        with torch.device("meta"):
            return sum(p.numel() for p in build(name)[0].parameters())
    except Exception:  # noqa: BLE001 -- any constructor that needs real tensors
        import torchvision

        weights = torchvision.models.get_model_weights(name)
        return int(next(iter(weights)).meta["num_params"])


def check_model(name: str, hessian_below: float) -> dict:
    """The row of one model: {model, params, side, export, loss_rel, eig_rel, ok, error, seconds,
    peak_gib}."""
    import numpy as np
    import torch

    from engine.io.module_network import read_module_network
    from engine.landscape.module_hessian import module_hessian
    from engine.landscape.module_loss import ModuleLoss

    began = time.perf_counter()
    torch.manual_seed(0)
    row = {"model": name, "params": None, "input": "", "export": "", "loss_rel": None, "eig_rel": None}
    row |= {"ok": False, "error": ""}
    step = "build"
    try:
        model, x = build(name)
        row["input"] = "×".join(map(str, x.shape[1:]))
        y = torch.randint(0, CLASSES, (len(x),), generator=torch.Generator().manual_seed(4))
        row["params"] = sum(p.numel() for p in model.parameters())
        if x.is_floating_point():  # running statistics other than 0 and 1
            model.train()
            with torch.no_grad():
                for _ in range(2):
                    model(1.5 * torch.randn(x.shape, generator=torch.Generator().manual_seed(5)) + 0.2)
        model.eval()
        with tempfile.TemporaryDirectory() as folder:
            step = "export"
            path, data = Path(folder) / "model.pt2", Path(folder) / "data.npz"
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
        del model
        # formed in place, one vector of the model's size rather than two (ViT-H/14 has 630 M parameters)
        moved = torch.randn(loss.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
        moved.mul_(1e-3 * loss.theta.norm() / moved.norm()).add_(loss.theta)
        rel = 0.0
        for flat in (loss.theta, moved):
            want = eager.loss(flat)
            rel = max(rel, abs(loss.loss(flat) - want) / abs(want))
        row["loss_rel"] = rel
        ok = rel <= LOSS_RTOL
        if row["params"] < hessian_below:
            step = "hessian"
            began_hessian = time.perf_counter()
            got = float(module_hessian(loss, top_k=1, probes=2, max_full=0).eigenvalues[0])
            row["toolkit_s"] = round(time.perf_counter() - began_hessian, 1)
            want, row["arpack_products"], how = eager.top_eigenvalue(loss.theta)
            row["eig_rel"] = abs(got - want) / abs(want)
            row["error"] = f"λ_max {want:.6g} (ARPACK on {how}), {got:.6g} (toolkit)"
            ok = ok and row["eig_rel"] <= EIGEN_RTOL
        row["ok"] = ok
    except MemoryError:
        row["error"] = f"{step}: out of memory under the --memory-gib limit"
    except Exception as error:  # noqa: BLE001 -- a failure at any step is the row's finding
        row["error"] = f"{step}: {_first_line(error)}"
        if "--trace" in sys.argv:
            traceback.print_exc()
    row["seconds"] = round(time.perf_counter() - began, 1)
    row["peak_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    return row


class _Eager:
    """The eager model in float64, in plain torch, at any flat θ in ``names`` order. ``model``
    itself is made float64 (not a copy: a copy would hold a float32 and a float64 model at once)."""

    def __init__(self, model, names, x, y):
        import torch

        self.torch = torch
        self.model = model.double().eval()
        if tuple(n for n, _ in self.model.named_parameters()) != tuple(names):
            raise AssertionError("the read module's parameters are not the model's, in its order")
        self.params = list(self.model.parameters())
        self.state = self.model.state_dict()
        self.x, self.y = (x.double() if x.is_floating_point() else x), y

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

    def gradient(self, flat):
        """∇L at ``flat``, by plain first-order autograd on the eager model."""
        self.load(flat)
        grads = self.torch.autograd.grad(self.objective(), self.params)
        return self.torch.cat([t.reshape(-1) for t in grads])

    def top_eigenvalue(self, flat) -> tuple[float, int, str]:
        """(the Hessian's largest eigenvalue, the products it took, how they were made) by
        ARPACK's Lanczos (scipy's ``eigsh``, which="LA") on the eager float64 model's exact
        Hessian-vector products, reverse over reverse by autograd (``exact_product``): another
        graph (the eager module, not the read program) and another mode than the toolkit's.

        Where a kernel has no second derivative in torch (MobileNetV3's ``hardsigmoid_backward``),
        on central differences of the gradients instead, (∇L(θ + εv) − ∇L(θ − εv)) / 2ε with
        ‖v‖ = 1 and ε = FD_STEP, whose error is ε²/6 ‖∂³L‖ plus rounding ε_mach ‖∇L‖ / ε where L is
        smooth within ε. A ReLU network's L is not smooth everywhere: once a ReLU or a max-pool
        switches within ε along a Krylov vector the difference is a jump over ε. SqueezeNet 1.0
        gave 4312 by differences against 213.5 by exact products (which agreed with the
        toolkit's to 1.6e-15 on a random vector), so differences are only the fallback."""
        import numpy as np
        import scipy.sparse.linalg

        torch = self.torch
        theta = flat.detach().clone()
        products = [0]
        how = ["autograd"]

        def hvp(v):
            products[0] += 1
            v = torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64).reshape(-1))
            norm = float(v.norm())
            if norm == 0.0:
                return np.zeros(v.shape)
            if how[0] == "autograd":
                try:
                    return self.exact_product(theta, v).numpy()
                except RuntimeError as error:
                    if "derivative" not in str(error):
                        raise
                    how[0] = "differences"
            u = v / norm
            difference = self.gradient(theta + FD_STEP * u) - self.gradient(theta - FD_STEP * u)
            return (difference * (norm / (2 * FD_STEP))).numpy()

        n = theta.numel()
        operator = scipy.sparse.linalg.LinearOperator((n, n), matvec=hvp, dtype=np.float64)
        start = np.random.default_rng(3).standard_normal(n)
        value = scipy.sparse.linalg.eigsh(
            operator, k=1, which="LA", tol=ARPACK_TOL, v0=start, return_eigenvectors=False
        )
        return float(value[0]), products[0], how[0]

    def exact_product(self, flat, v):
        """H v at ``flat``: the gradient with its graph, then the gradient of ∇L · v."""
        torch = self.torch
        self.load(flat)
        grads = torch.autograd.grad(self.objective(), self.params, create_graph=True)
        pieces = v.split([p.numel() for p in self.params])
        directional = sum((g * piece.view(g.shape)).sum() for g, piece in zip(grads, pieces))
        return torch.cat([t.reshape(-1) for t in torch.autograd.grad(directional, self.params)])


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"


def _run(name, hessian_below, memory_bytes, queue):
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_DATA, (memory_bytes, memory_bytes))
    queue.put(check_model(name, hessian_below))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="*",
        help="these models only, in this order (default: the whole zoo and --nn's, smallest first)",
    )
    parser.add_argument("--nn", action="store_true", help="torch.nn's transformer encoder, LSTM and GRU only")
    parser.add_argument("--max-params", type=float, default=math.inf, help="skip larger models")
    parser.add_argument("--hessian-below", type=float, default=3e6, help="top eigenvalue for models this small")
    parser.add_argument("--memory-gib", type=float, default=12.0, help="data-size limit of each model's process")
    parser.add_argument(
        "--bytes-per-param", type=float, default=40.0, help="peak memory a parameter, until the run measures more"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per model")
    parser.add_argument("--out", type=Path, help="also append the rows here, one JSON object a line")
    parser.add_argument("--markdown", type=Path, help="write the table here as Markdown")
    parser.add_argument("--trace", action="store_true", help="print each failure's traceback")
    parser.add_argument(
        "--rows", nargs="+", type=Path, help="run nothing: the table of these --out files (a later row of a model wins)"
    )
    args = parser.parse_args()
    import torchvision

    if args.models:
        names = args.models
    elif args.nn:
        names = list(NN_MODELS)
    else:
        names = [*torchvision.models.list_models(module=torchvision.models), *NN_MODELS]
    sizes = {name: count_parameters(name) for name in names}
    names = names if args.models else sorted(names, key=sizes.get)
    if args.rows:
        table = merged(args.rows, names, sizes)
        (args.markdown.write_text(table) if args.markdown else print(table, end=""))
        return
    memory = args.memory_gib * 2**30
    print(f"{'model':<22} {'params':>11}  {'ok':<4} {'loss rel':>9} {'eig rel':>9}  export / error", flush=True)
    context = multiprocessing.get_context("spawn")
    rows, per_param, measured = [], args.bytes_per_param, "given by --bytes-per-param"
    for name in names:
        base = {"model": name, "params": sizes[name], "ok": None}
        need = sizes[name] * per_param
        if sizes[name] > args.max_params:
            row = {**base, "error": f"skipped: over --max-params {args.max_params:.3g}"}
        elif need > memory:
            row = {
                **base,
                "error": f"skipped: needs about {need / 2**30:.0f} GiB ({per_param:.0f} bytes a parameter, "
                f"{measured}) over the {args.memory_gib:g} GiB limit",
            }
        else:
            row = _in_process(context, name, args, memory)
            if row.get("peak_gib") and row["params"] and row["params"] > 1e7:
                if row["peak_gib"] * 2**30 / row["params"] > per_param:
                    per_param, measured = row["peak_gib"] * 2**30 / row["params"], f"{name}'s peak"
        rows.append(row)
        _print(row)
        if args.out:
            with args.out.open("a") as f:
                f.write(json.dumps(row) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(rows))


def _in_process(context, name: str, args, memory: float) -> dict:
    """check_model(name) in a process of its own, or the row that says how it ended."""
    queue = context.Queue()
    process = context.Process(target=_run, args=(name, args.hessian_below, int(memory), queue))
    began = time.perf_counter()
    process.start()
    process.join(args.timeout)
    row = {"model": name, "params": count_parameters(name), "ok": False, "seconds": round(time.perf_counter() - began)}
    if process.is_alive():
        process.kill()
        process.join()
        return {**row, "error": f"over the {args.timeout:g} s timeout"}
    if process.exitcode != 0 or queue.empty():
        return {**row, "error": f"process ended with exit status {process.exitcode}"}
    return queue.get()


def _print(row: dict) -> None:
    fmt = lambda v: "" if v is None else f"{v:.1e}"
    ok = {True: "ok", False: "FAIL", None: "skip"}[row["ok"]]
    text = "; ".join(t for t in (row.get("export", ""), row.get("error", "")) if t)
    print(
        f"{row['model']:<22} {row['params'] or 0:>11,}  {ok:<4} {fmt(row.get('loss_rel')):>9} "
        f"{fmt(row.get('eig_rel')):>9}  {text}",
        flush=True,
    )


def merged(files: list[Path], names: list[str], sizes: dict) -> str:
    """The Markdown table of ``names`` from the rows in ``files`` (a later row of a model replaces an
    earlier one), a model with no row marked as not run, and the counts under it."""
    found = {}
    for file in files:
        for line in file.read_text().splitlines():
            row = json.loads(line)
            found[row["model"]] = row
    rows = [found.get(n, {"model": n, "params": sizes[n], "ok": None, "error": "not run"}) for n in names]
    ok = sum(r["ok"] is True for r in rows)
    failed = [r["model"] for r in rows if r["ok"] is False]
    eig = sum(r.get("eig_rel") is not None for r in rows)
    counts = (
        f"\n{len(rows)} models: {ok + len(failed)} checked, {ok} ok, {len(failed)} failed"
        f"{' (' + ', '.join(failed) + ')' if failed else ''}, {len(rows) - ok - len(failed)} skipped or not run; "
        f"{eig} with the top eigenvalue checked.\n"
    )
    return markdown(rows) + counts


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    fmt = lambda v: "" if v is None else f"{v:.1e}"
    lines = [
        "| model | params | input | ok | loss rel | eig rel | export / notes | s | peak GiB |",
        "|---|---:|---|---|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        ok = {True: "ok", False: "**FAIL**", None: "skip"}[r["ok"]]
        text = "; ".join(t for t in (r.get("export", ""), r.get("error", "")) if t).replace("|", "\\|")
        lines.append(
            f"| {r['model']} | {r['params'] or 0:,} | {r.get('input', '')} | {ok} | {fmt(r.get('loss_rel'))} | "
            f"{fmt(r.get('eig_rel'))} | {text} | {r.get('seconds', '')} | {r.get('peak_gib', '')} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
