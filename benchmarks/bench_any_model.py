"""The toolkit on any PyTorch model, against the peers, in one run, on a ResNet-20-shaped network.

Workload: ResNet-20 as He et al. shaped it for CIFAR (3 stages × 3 basic blocks, 16/32/64
channels, batch norm, parameter-free shortcuts: 269,722 parameters), random weights with batch
norm running statistics from three train-mode batches, then eval mode; 256 CIFAR-shaped inputs
(3 × 32 × 32, standard normal) with random labels of 10 classes; cross-entropy (mean). float32
for every row, ours included (``ModuleLoss(dtype="float32")``), one torch thread (--threads).

Rows: process CPU seconds (every thread of this process; the figure compared, since on a shared
machine the wall clock also measures the other jobs) and wall seconds, one run each:
  floor     121 eval-mode forward passes over the 256 inputs, no grad: what any 11 × 11 plane costs;
            again with the inputs channels-last, the layout ModuleLoss gives an image batch
  plane     an 11 × 11 filter-normalised plane, start-up included (ModuleLoss built, directions drawn):
            ours (engine.landscape.operations.plane_job), loss-landscapes 3.0.6's
            random_plane (normalization="filter"), loss-landscape-3d 0.1.3's random directions
            (filter-normalised) and LossLandscapeCalculator.calculate
  hvp       one Hessian-vector product: ours on the kept graph (engine.landscape.module_hessian.
            module_hvp: ∇L formed once with create_graph, one backward a product) and with the
            forward redone (ModuleLoss.hvp, forward-over-reverse), curvlinops 3.0.1's
            HessianLinearOperator (torch.func jvp of jacrev), and PyHessian's (one backward on its
            retained graph of the one batch)
  reference the top eigenvalue to ~1e-7, independent of the engine: ARPACK (tol 1e-7) on
            PyHessian's product; every error below is relative to it
  top eig   the largest eigenvalue to 1e-3 relative, each from its own graph set-up: ours
            (module_hessian.top_eigenpairs_job for the eigenvalue alone, as --hessian runs it:
            Lanczos stopped when the Kato-Temple error estimate min(r, r²/gap) is within 1e-3 of
            the value) against PyHessian's power iteration, run once to tol 1e-4
            and recorded product by product, so that one run shows its default stop (tol 1e-3 on
            successive estimates), its first iterate within 1e-3 of the reference (the least any
            stopping rule of its could spend for that accuracy) and its tol 1e-4 stop
  trace     Hutchinson with the same number of Rademacher probes (--probes), each with its graph:
            ours (engine.landscape.hessian.hutchinson_samples_job on module_hvp, no deflation)
            against PyHessian's trace (tol −∞, so it runs every probe)
  where     the aten operators that take one product's CPU time on our kept graph

With --plane51, instead, issue #55's rows (a 51 × 51 filter plane through the API against
loss-landscapes, in one run):
  compile   torch.compile of the folded module (engine.landscape.fast_forward.compiled) on a cold
            inductor cache, then again on a warm one: wall, and CPU with the C++ compiler's
  1 point   the loss over all the inputs, as the API evaluates a grid point (ModuleLoss,
            channels-last), in chunks of 64 with its module evaluated three or four ways: eager
            (batch norm as its affine map, engine.landscape.eval_batch_norm), folded
            (fast_forward.folded, no post-ops), folded with the ReLUs and residual sums as oneDNN
            post-ops (fast_forward.folded), compiled (with --compile); then ModuleLoss as it is
            (folded and fused, its values module_loss.VALUE_CHUNKS chunks, 256 samples, at once);
            and loss-landscapes' own point (its Loss metric on its wrapped model), interleaved
            --point-repeats times, the median; with the break-even number of points past which
            compiling pays
  plane     ll.plane(points=n, directions="filter", dtype="float32") as the API is, and with its
            values in chunks of 64 (VALUE_CHUNKS = 1, as before), against loss-landscapes'
            random_plane (normalization "filter"), interleaved --repeats times; n = --plane-points,
            extrapolated to 51 × 51 per point
  whole     (--whole, instead of the above) one whole 51 × 51 plane each way, ll.plane and
            random_plane, each in its own process on --threads threads, the two at once (one a
            core) or with --sequential one after the other: each process's CPU seconds
  MLP       (--mlp) bench_toolkit's 118k-parameter MLP 51 × 51 plane through the API against the
            command line's engine call (engine.landscape.operations.plane_job on an MLPLoss), float64

Run: python benchmarks/bench_any_model.py [--probes 10] [--power-iters 100] [--threads N] [--samples 256]
     [--hessian-only] [--repeats N]
     python benchmarks/bench_any_model.py --plane51 [--plane-points 9] [--point-repeats 5] [--repeats 2]
     [--compile] [--mlp] [--threads N]
     python benchmarks/bench_any_model.py --plane51 --whole [--sequential] [--threads N]
"""

import argparse
import contextlib
import copy
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine.core.progress import run_to_completion  # noqa: E402
from engine.core.runtime import import_lazy_torch_modules  # noqa: E402
from engine.io.module_network import ModuleNetwork  # noqa: E402
from engine.landscape.hessian import hutchinson_samples_job, mean_and_stderr  # noqa: E402
from engine.landscape.module_hessian import module_hvp, top_eigenpairs_job  # noqa: E402
from engine.landscape.module_loss import ModuleLoss  # noqa: E402
from engine.landscape.operations import plane_job  # noqa: E402

CLASSES, GRID, EXTENT, TOL = 10, 11, 1.0, 1e-3


class BasicBlock(nn.Module):
    """conv-bn-relu-conv-bn plus the shortcut: subsampled and zero-padded where the width doubles
    (He et al.'s option A for CIFAR, which keeps ResNet-20 at 0.27 M parameters)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.stride, self.pad = stride, cout - cin

    def forward(self, x):
        out = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        short = x[:, :, :: self.stride, :: self.stride]
        if self.pad:
            short = nn.functional.pad(short, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        return torch.relu(out + short)


class ResNet20(nn.Module):
    def __init__(self, classes: int = CLASSES):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                blocks.append(BasicBlock(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.blocks(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def workload(n: int):
    torch.manual_seed(0)
    model = ResNet20()
    for m in model.modules():  # a trained net's batch norm: loss-landscapes' filter
        if isinstance(m, nn.BatchNorm2d):  # normalisation divides by zero on a zero bias
            nn.init.normal_(m.weight, 1.0, 0.1)
            nn.init.normal_(m.bias, 0.0, 0.1)
    with torch.no_grad():  # running statistics that are not the defaults
        for _ in range(3):
            model(torch.randn(64, 3, 32, 32))
    X = torch.randn(n, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    Y = torch.randint(0, CLASSES, (n,), generator=torch.Generator().manual_seed(2))
    return model.eval(), X, Y


def timed(work):
    """(process CPU seconds, wall seconds, result). CPU time, every thread of this process, is the
    figure compared: on a machine shared with other jobs the wall clock measures their load too."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return time.process_time() - cpu, time.perf_counter() - wall, out


def ours_loss(model, X, Y) -> ModuleLoss:
    net = ModuleNetwork(model, X.numpy(), Y.numpy(), None, "benchmark")
    return ModuleLoss(net, "cross-entropy", len(X), "float32")  # one chunk, as the peers take the batch


def floor(model, X, layout=torch.contiguous_format):
    X = X.contiguous(memory_format=layout)
    with torch.no_grad():
        for _ in range(GRID * GRID):
            model(X)


def ours_plane(model, X, Y):
    return run_to_completion(plane_job(ours_loss(model, X, Y), GRID, EXTENT, "filter")).loss


def loss_landscapes_plane(model, X, Y, n=GRID):
    import loss_landscapes
    from loss_landscapes.metrics import Loss

    metric = Loss(nn.CrossEntropyLoss(), X, Y)
    return loss_landscapes.random_plane(model, metric, 2 * EXTENT, n, "filter", deepcopy_model=True)


def loss_landscape_3d_plane(model, X, Y):
    from loss_landscape_3d import LossLandscapeCalculator, generate_random_directions

    model = copy.deepcopy(model)
    dir_x, dir_y = generate_random_directions(model, normalize=True)
    coords = np.linspace(-EXTENT, EXTENT, GRID)
    calculator = LossLandscapeCalculator(model, [(X, Y)], nn.CrossEntropyLoss())
    return calculator.calculate(coords, coords, dir_x, dir_y, copy.deepcopy(model.state_dict()))


def flat(tensors) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def pyhessian_of(model, X, Y):
    from pyhessian import hessian as PyHessian

    # PyHessian differentiates with loss.backward(create_graph=True), which adds to the .grad of
    # the parameters: a second instance on the same model would multiply its Hessian by two
    model.zero_grad(set_to_none=True)
    return PyHessian(model, nn.CrossEntropyLoss(), data=(X, Y), cuda=False)


@contextlib.contextmanager
def counted_pyhessian_products():
    """PyHessian's single-batch Hessian-vector products, each recorded as (process CPU seconds
    and wall seconds when it returned, vᵀHv): its eigenvalues() says neither how many it used nor
    what each iterate was. In the power iteration v is the unit iterate, so vᵀHv is its estimate."""
    import pyhessian  # noqa: F401  (its package binds the name ``hessian`` to the class)

    module = sys.modules["pyhessian.hessian"]
    original, products = module.hessian_vector_product, []

    def recording(gradsH, params, v):
        hv = original(gradsH, params, v)
        products.append((time.process_time(), time.perf_counter(), float(sum(torch.sum(a * b) for a, b in zip(hv, v)))))
        return hv

    module.hessian_vector_product = recording
    try:
        yield products
    finally:
        module.hessian_vector_product = original


def reference_top_eigenvalue(model, X, Y) -> float:
    """The top eigenvalue to ~1e-7, independent of the engine: ARPACK (tol 1e-7) on PyHessian's
    product, float32 like every row (its rounding, ~1e-7 relative, is the floor)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    ph = pyhessian_of(model, X, Y)
    sizes = [p.numel() for p in ph.params]

    def matvec(v):
        pieces = torch.from_numpy(np.asarray(v, np.float32).ravel()).split(sizes)
        vs = [piece.view_as(p) for piece, p in zip(pieces, ph.params)]
        return flat(torch.autograd.grad(ph.gradsH, ph.params, vs, retain_graph=True)).double().numpy()

    P = sum(sizes)
    top = eigsh(LinearOperator((P, P), matvec=matvec, dtype=np.float64), k=1, which="LA", tol=1e-7)[0]
    return float(top[0])


def timed_products(hvp):
    """``hvp`` with the process CPU seconds spent inside it added up in ``.seconds``."""

    def inner(V):
        began = time.process_time()
        out = hvp(V)
        inner.seconds += time.process_time() - began
        return out

    inner.seconds, inner.gradient = 0.0, hvp.gradient  # the gradient: Lanczos's start
    return inner


def ours_top_eigenvalue(loss):
    """The kept graph built, then Lanczos to a 1e-3 error estimate: what module_hessian_job does."""
    began = time.process_time()
    hvp = module_hvp(loss)
    graph = time.process_time() - began
    products = timed_products(hvp)
    vals, _, residuals = run_to_completion(top_eigenpairs_job(products, loss.n_params, 1, TOL, 0, vectors=False))
    return float(vals[0]), float(residuals[0]), hvp.count, graph, products.seconds


def where_one_product_goes(loss, rows: int = 6) -> str:
    """The aten operators that take the CPU in one product on the kept graph, largest first."""
    from torch.profiler import ProfilerActivity, profile

    hvp = module_hvp(loss)
    v = torch.randn(loss.n_params, generator=torch.Generator().manual_seed(4))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        hvp(v)
    ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ops)
    return ", ".join(f"{e.key} {100 * e.self_cpu_time_total / total:.0f} %" for e in ops[:rows])


def eigen_and_trace_rows(model, X, Y, loss, args, row, error) -> dict:
    """The top eigenvalue, ours against PyHessian's power iteration, and the trace at equal
    probes; returns each compared row's CPU seconds."""
    cpu = {}
    *t, (top, residual, count, graph, in_products) = timed(lambda: ours_top_eigenvalue(loss))
    cpu["ours top"] = t[0]
    row(
        "top eigenvalue: ours (Lanczos, estimate 1e-3)",
        t,
        f"{top:.6g}, {count} HVPs, rel. error {error(top):.1e} (measured residual {residual / top:.1e}); "
        f"graph {graph:.1f} s, products {in_products:.1f} s, Lanczos {t[0] - graph - in_products:.1f} s",
    )
    # One power iteration, run to tol 1e-4 and recorded product by product: PyHessian's default
    # stop (tol 1e-3 on successive estimates) lies on the way, as does the first iterate within
    # 1e-3 of the reference (the least any stopping rule of its could spend for that accuracy)
    torch.manual_seed(5)
    with counted_pyhessian_products() as products:
        began = time.process_time(), time.perf_counter()
        *t, (py_vals, _) = timed(lambda: pyhessian_of(model, X, Y).eigenvalues(maxIter=args.power_iters, tol=TOL / 10))
    estimates = [value for _, _, value in products]
    default_stop = next(
        (i for i in range(1, len(estimates)) if abs(estimates[i] - estimates[i - 1]) / abs(estimates[i - 1]) < TOL),
        len(estimates) - 1,
    )
    accurate = next((i for i, value in enumerate(estimates) if error(value) <= TOL), None)
    cpu["py accurate"] = float("nan")
    for key, label, i in (
        ("py 1e-3", "its tol 1e-3 stop", default_stop),
        ("py accurate", "first iterate within 1e-3", accurate),
    ):
        if i is None:
            row(f"top eigenvalue: PyHessian, {label}", t, f"never within 1e-3 in {len(estimates)} HVPs")
            continue
        cpu[key], wall = products[i][0] - began[0], products[i][1] - began[1]
        row(
            f"top eigenvalue: PyHessian, {label}",
            (cpu[key], wall),
            f"{estimates[i]:.6g}, {i + 1} HVPs, rel. error {error(estimates[i]):.1e}; "
            f"ours {cpu[key] / cpu['ours top']:.2f}× faster",
        )
    cpu["py 1e-4"] = t[0]
    row(
        "top eigenvalue: PyHessian, its tol 1e-4 stop",
        t,
        f"{py_vals[0]:.6g}, {len(estimates)} HVPs, rel. error {error(py_vals[0]):.1e}; "
        f"ours {t[0] / cpu['ours top']:.2f}× faster",
    )
    model.zero_grad(set_to_none=True)  # PyHessian's graph, held by the parameters' .grad

    def ours_trace():
        hvp = module_hvp(loss)  # the graph, as PyHessian's trace builds its own
        return run_to_completion(hutchinson_samples_job(hvp, loss.n_params, args.probes, 1))

    *t, samples = timed(ours_trace)
    mean, se = mean_and_stderr(samples)
    cpu["ours trace"] = t[0]
    row(f"trace, {args.probes} probes: ours", t, f"{mean:.6g} ± {se:.2g}")
    *t, py_samples = timed(lambda: pyhessian_of(model, X, Y).trace(maxIter=args.probes, tol=-np.inf))
    cpu["py trace"] = t[0]
    row(
        f"trace, {args.probes} probes: PyHessian",
        t,
        f"{np.mean(py_samples):.6g} ± {np.std(py_samples, ddof=1) / np.sqrt(len(py_samples)):.2g}; "
        f"ours {t[0] / cpu['ours trace']:.2f}× faster",
    )
    return cpu


def hessian_rows(model, X, Y, args, row):
    """The Hessian rows: one product each way, the top eigenvalue at equal accuracy, the trace at
    equal probes, and where the time goes."""
    P = sum(p.numel() for p in model.parameters())
    loss = ours_loss(model, X, Y)
    v = torch.randn(P, generator=torch.Generator().manual_seed(3))
    *t_graph, hvp = timed(lambda: module_hvp(loss))
    *t, hv = timed(lambda: hvp(v))
    row("1 HVP: ours, kept graph", t, f"+ {t_graph[0]:.1f} s CPU for the graph (∇L with create_graph)")
    *t, hv_redone = timed(lambda: loss.hvp(None, v))
    row("1 HVP: ours, forward redone", t, f"rel. diff {float((hv_redone - hv).norm() / hv.norm()):.1e}")
    from curvlinops import HessianLinearOperator

    params = [p for p in model.parameters()]
    H_curv = HessianLinearOperator(model, nn.CrossEntropyLoss(), params, [(X, Y)], check_deterministic=False)
    *t, hv_curv = timed(lambda: H_curv @ v)
    row("1 HVP: curvlinops", t, f"rel. diff {float((hv_curv - hv).norm() / hv.norm()):.1e}")
    *t_graph, ph = timed(lambda: pyhessian_of(model, X, Y))
    vs = [piece.view_as(p) for piece, p in zip(v.split([p.numel() for p in ph.params]), ph.params)]
    *t, hv_py = timed(lambda: flat(torch.autograd.grad(ph.gradsH, ph.params, vs, retain_graph=True)))
    diff = float((hv_py - hv).norm() / hv.norm())
    row("1 HVP: PyHessian (retained graph)", t, f"rel. diff {diff:.1e}, + {t_graph[0]:.1f} s CPU for the graph")
    hvp = ph = None  # their graphs freed before the timed rows (PyHessian's is also in .grad)
    model.zero_grad(set_to_none=True)

    *t_ref, ref = timed(lambda: reference_top_eigenvalue(model, X, Y))
    row("reference top eigenvalue (ARPACK tol 1e-7)", t_ref, f"{ref:.7g}, on PyHessian's product")
    model.zero_grad(set_to_none=True)  # PyHessian's graph, held by the parameters' .grad
    error = lambda value: abs(value - ref) / abs(ref)

    times = []  # per repeat: {row: CPU s}, interleaved so that the machine's load falls on both
    for repeat in range(args.repeats):
        tag = f" [{repeat + 1}/{args.repeats}]" if args.repeats > 1 else ""
        times.append(eigen_and_trace_rows(model, X, Y, loss, args, lambda name, *rest: row(name + tag, *rest), error))
        model.zero_grad(set_to_none=True)  # PyHessian's graph, held by the parameters' .grad
    if args.repeats > 1:
        best = {key: min(t[key] for t in times) for key in times[0]}
        print(
            f"  best of {args.repeats}, CPU s: top eigenvalue ours {best['ours top']:.1f}, PyHessian first within "
            f"1e-3 {best['py accurate']:.1f} ({best['py accurate'] / best['ours top']:.2f}×), its tol 1e-4 stop "
            f"{best['py 1e-4']:.1f} ({best['py 1e-4'] / best['ours top']:.2f}×); trace ours {best['ours trace']:.1f}, "
            f"PyHessian {best['py trace']:.1f} ({best['py trace'] / best['ours trace']:.2f}×)"
        )
    print(f"  where one product on the kept graph goes (self CPU): {where_one_product_goes(loss)}")


# ── issue #55: a 51 × 51 plane through the API against loss-landscapes, and where a point goes ──

PLANE, CHUNK = 51, 64  # the plane's side and the API's default chunk (ModuleLoss.DEFAULT_BATCH_SIZE)


def evaluating(loss, call, mode=True):
    """``loss`` (a ModuleLoss) evaluating ``call(state, x)`` in place of its module, ``_forward``
    as ModuleLoss writes it, whatever ModuleLoss itself evaluates; ``mode``: under EvalBatchNorm."""
    from engine.landscape.eval_batch_norm import EvalBatchNorm

    context = EvalBatchNorm if mode else contextlib.nullcontext

    def forward(flat, x, buffers=None):
        state = {**loss.unflatten(flat), **(loss.buffers if buffers is None else buffers)}
        with loss._lock, context():
            return call(state, x)

    loss._forward = forward
    return loss


def functional(module):
    return lambda state, x: torch.func.functional_call(module, state, (x,))


def peer_point(model, X, Y):
    """One point as loss-landscapes evaluates it: its Loss metric on its wrapped model (autograd
    on, all the inputs in one batch, contiguous)."""
    from loss_landscapes.metrics import Loss
    from loss_landscapes.model_interface.model_wrapper import wrap_model

    metric, wrapper = Loss(nn.CrossEntropyLoss(), X, Y), wrap_model(model)
    return lambda: metric(wrapper)


def compile_seconds(work):
    """(wall s, CPU s of this process and of its waited-for children: the C++ compiler, result)."""
    t0, wall = os.times(), time.perf_counter()
    out = work()
    t1 = os.times()
    cpu = (t1.user + t1.system + t1.children_user + t1.children_system) - (
        t0.user + t0.system + t0.children_user + t0.children_system
    )
    return time.perf_counter() - wall, cpu, out


def where_a_point_goes(loss, rows: int = 7) -> str:
    """The aten operators that take the CPU in one grid point's loss, largest first."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss.loss()
    ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ops)
    return ", ".join(f"{e.key} {100 * e.self_cpu_time_total / total:.0f} %" for e in ops[:rows])


def chunked(loss, samples: int = CHUNK):
    """``loss`` (a ModuleLoss) evaluating its values ``samples`` at a time instead of its
    ``value_batch`` (``VALUE_CHUNKS`` chunks): the chunks of 64 the API took before."""
    loss.value_batch = samples
    return loss


def point_rows(model, X, Y, args, row) -> dict:
    """One grid point (the loss over every input, channels-last, as the API evaluates it) each
    way, interleaved --point-repeats times: the median CPU seconds of each. The rows before the
    last ours evaluate chunks of CHUNK; the last is ``ModuleLoss`` as it is (folded and fused, its
    values ``VALUE_CHUNKS`` chunks at once)."""
    from engine.landscape.fast_forward import batch_norm_left, folded

    net = ModuleNetwork(model, X.numpy(), Y.numpy(), None, "benchmark")
    make = lambda: chunked(ModuleLoss(net, "cross-entropy", CHUNK, "float32"))
    plain, fused = folded(model, activations=False), folded(model)
    ways = {
        "eager (batch norm as its affine map)": evaluating(make(), functional(model)),
        "folded": evaluating(make(), functional(plain), batch_norm_left(plain)),
        "folded + fused ReLU and residual": evaluating(make(), functional(fused), batch_norm_left(fused)),
        "ModuleLoss as it is (values 256 at once)": ModuleLoss(net, "cross-entropy", None, "float32"),
    }
    compile_note = ""
    if args.compile:
        import tempfile

        from engine.landscape.fast_forward import compiled

        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")  # a cold compile
        loss = evaluating(make(), compiled(model), batch_norm_left(plain))
        wall, cpu, _ = compile_seconds(loss.loss)  # the first point compiles (all chunks are CHUNK long)
        row("compile: folded module, cold cache", (cpu, wall), "inductor, first point included")
        torch._dynamo.reset()
        warm = evaluating(make(), compiled(model), batch_norm_left(plain))
        wall2, cpu2, _ = compile_seconds(warm.loss)
        row("compile: again, warm cache", (cpu2, wall2), "after torch._dynamo.reset(), the FX graph cache kept")
        ways["compiled (folded, inductor)"] = warm
        compile_note = (cpu, cpu2)
    ways["loss-landscapes (its metric)"] = None
    peer = peer_point(model, X, Y)
    values, times, walls = {}, {name: [] for name in ways}, {name: [] for name in ways}
    for _ in range(args.point_repeats):
        for name, loss in ways.items():
            work = peer if loss is None else loss.loss
            cpu, wall, values[name] = timed(work)
            times[name].append(cpu)
            walls[name].append(wall)
    median = {name: float(np.median(t)) for name, t in times.items()}
    peer_s = median["loss-landscapes (its metric)"]
    reference = values["eager (batch norm as its affine map)"]
    for name, seconds in median.items():
        note = f"{seconds:.3f} s CPU; × peer {peer_s / seconds:.2f}; 51² = {seconds * PLANE**2 / 60:.1f} min; "
        note += f"loss {values[name]:.6f}"
        if name != "eager (batch norm as its affine map)":
            note += f" (rel. diff {abs(values[name] - reference) / abs(reference):.0e})"
        row(f"1 point, median of {args.point_repeats}: {name}", (seconds, float(np.median(walls[name]))), note)
    for name in ("eager (batch norm as its affine map)", "ModuleLoss as it is (values 256 at once)"):
        print(f"  where a point goes, {name} (self CPU): {where_a_point_goes(ways[name])}")
    if compile_note:
        saving = median["folded + fused ReLU and residual"] - median["compiled (folded, inductor)"]
        for label, cpu in zip(("cold", "warm"), compile_note):
            even = f"{cpu / saving:.0f} points" if saving > 0 else "never (not faster)"
            print(
                f"  compile pays ({label} cache) against folded + fused after {even}: "
                f"{cpu:.0f} s / {saving * 1e3:.0f} ms"
            )
    return median


def api_plane_rows(model, X, Y, args, row) -> None:
    """The n × n filter plane through the API as it is, and with its values in chunks of CHUNK
    (as before ``VALUE_CHUNKS``), against loss-landscapes' random_plane, interleaved --repeats
    times, n = --plane-points: the best of each, and for n < 51 the 51 × 51 time extrapolated per
    point (fixed costs counted 51²/n² times over, in every row alike)."""
    import landscape_lens as ll

    n = args.plane_points
    options = dict(points=n, directions="filter", loss="cross-entropy", dtype="float32", progress=False)
    api = lambda: ll.plane(model, (X, Y), **options)
    ways = {
        "API as it is": api,
        "API, values in chunks of 64": lambda: with_value_chunks(1, api),
        "loss-landscapes random_plane": lambda: loss_landscapes_plane(model, X, Y, n),
    }
    times = {name: [] for name in ways}
    for _ in range(args.repeats):
        for name, work in ways.items():
            cpu, wall, _ = timed(work)
            times[name].append((cpu, wall))
    best = {name: tuple(min(t[i] for t in ts) for i in (0, 1)) for name, ts in times.items()}
    peer, scale = best["loss-landscapes random_plane"], PLANE**2 / n**2
    for name, (cpu, wall) in best.items():
        every = ", ".join(f"{c:.1f}" for c, _ in times[name])
        whole = f"; 51×51 ≈ {cpu * scale / 60:.1f} min CPU, {wall * scale / 60:.1f} min wall" if n < PLANE else ""
        row(f"plane {n}×{n} filter, best of {args.repeats}: {name}", (cpu, wall),
            f"× peer CPU {peer[0] / cpu:.2f}, wall {peer[1] / wall:.2f} (CPU s each: {every}){whole}")  # fmt: skip


def with_value_chunks(chunks: int, work):
    """``work()`` with every ModuleLoss made in it evaluating its values ``chunks`` chunks at a
    time (module_loss.VALUE_CHUNKS)."""
    from engine.landscape import module_loss

    original = module_loss.VALUE_CHUNKS
    module_loss.VALUE_CHUNKS = chunks
    try:
        return work()
    finally:
        module_loss.VALUE_CHUNKS = original


def mlp_rows(args, row) -> None:
    """bench_toolkit's 118k-parameter MLP plane (51 × 51, cross-entropy, float64) through the API
    against the command line's engine call (engine.landscape.operations.plane_job on an MLPLoss, its default
    threads), interleaved --repeats times: the API takes the same MLP kernel."""
    import tempfile

    import bench_toolkit as T

    import landscape_lens as ll
    from engine.landscape import plane

    with tempfile.TemporaryDirectory() as tmp:
        net = T.generated_network(Path(tmp))
    model = T.peer_model(net.arch, torch.float64)
    torch.nn.utils.vector_to_parameters(torch.as_tensor(net.params), model.parameters())
    X, Y = torch.as_tensor(net.X), torch.as_tensor(net.Y).reshape(-1).long()
    api = lambda: ll.plane(model, (X, Y), points=PLANE, loss="cross-entropy", dtype="float64", progress=False).loss
    cli = lambda: (
        run_to_completion(
            plane_job(
                plane.MLPLoss(net.arch, net.params, net.X, net.Y, "cross-entropy"), PLANE, 1.0, "filter", "none", 0
            )
        ).loss
    )
    times, out = {"API": [], "command line (plane_job)": []}, {}
    for _ in range(args.repeats):
        for name, work in zip(times, (api, cli)):
            cpu, wall, out[name] = timed(work)
            times[name].append((cpu, wall))
    diff = float(np.abs(out["API"] - out["command line (plane_job)"]).max())
    cli_best = min(times["command line (plane_job)"], key=lambda t: t[1])
    for name, t in times.items():
        cpu, wall = min(t, key=lambda t: t[1])
        row(f"MLP 118k plane 51×51, best of {args.repeats}: {name}", (cpu, wall),
            f"wall × command line {wall / cli_best[1]:.2f}; max |Δ| {diff:.1e}")  # fmt: skip


def whole_plane(way: str, samples: int, threads: int, n: int = PLANE) -> dict:
    """One whole 51 × 51 filter plane, ``way`` "API" (ll.plane, float32, as the API is) or
    "loss-landscapes" (random_plane), in this process on ``threads`` threads (``n``: the side, for
    a smoke run): its process CPU seconds, wall seconds, and the loss at the grid's centre, a
    check that both evaluated the one network (θ itself for the API; half a step off θ along
    both directions for loss-landscapes, whose grid starts at θ − (n/2) steps)."""
    torch.set_num_threads(threads)
    import_lazy_torch_modules()
    model, X, Y = workload(samples)
    if way == "API":
        import landscape_lens as ll

        options = dict(points=n, directions="filter", loss="cross-entropy", dtype="float32", progress=False)
        work = lambda: np.asarray(ll.plane(model, (X, Y), **options).loss)
    else:
        work = lambda: np.asarray(loss_landscapes_plane(model, X, Y, n))
    cpu, wall, grid = timed(work)
    return dict(cpu=cpu, wall=wall, centre=float(grid[n // 2, n // 2]), shape=grid.shape, threads=threads)


def whole_plane_rows(args, row) -> None:
    """One whole 51 × 51 plane each way in one invocation: the API's and loss-landscapes', each
    in its own process on --threads threads, the two run at once (one on each core of a 2-core
    machine, so the machine's other load falls on both), or one after the other with
    --sequential; the CPU seconds of each process compared."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ways = ("API", "loss-landscapes")
    context = multiprocessing.get_context("spawn")
    out = {}
    if args.sequential:
        for way in ways:
            with ProcessPoolExecutor(1, mp_context=context) as pool:
                out[way] = pool.submit(whole_plane, way, args.samples, args.threads).result()
    else:
        with ProcessPoolExecutor(len(ways), mp_context=context) as pool:
            futures = {way: pool.submit(whole_plane, way, args.samples, args.threads) for way in ways}
            out = {way: future.result() for way, future in futures.items()}
    peer = out["loss-landscapes"]
    how = "one after the other" if args.sequential else "at once, one process each"
    for way in ways:
        r = out[way]
        row(f"plane 51×51 filter, whole, {how}: {way}", (r["cpu"], r["wall"]),
            f"× peer CPU {peer['cpu'] / r['cpu']:.2f}, wall {peer['wall'] / r['wall']:.2f}; "
            f"loss at the centre {r['centre']:.6f}; {r['threads']} thread(s)")  # fmt: skip


def plane51_rows(model, X, Y, args, row) -> None:
    if args.whole:
        whole_plane_rows(args, row)
        return
    point_rows(model, X, Y, args, row)
    api_plane_rows(model, X, Y, args, row)
    if args.mlp:
        mlp_rows(args, row)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--probes", type=int, default=10, help="Hutchinson probes, ours and PyHessian's")
    parser.add_argument("--power-iters", type=int, default=100, help="PyHessian's maxIter (its default)")
    # one thread: on this shared 2-core machine two threads made a forward 7-9× slower (spinning)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--samples", type=int, default=256, help="fewer for a quick smoke run")
    parser.add_argument("--hessian-only", action="store_true", help="skip the floor and the planes")
    parser.add_argument("--repeats", type=int, default=1, help="the top eigenvalue and trace rows, interleaved")
    parser.add_argument("--plane51", action="store_true", help="only issue #55's rows: a point each way, the plane")
    parser.add_argument("--plane-points", type=int, default=9, help="--plane51: the API's and the peer's plane side")
    parser.add_argument("--point-repeats", type=int, default=5, help="--plane51: interleaved single points")
    parser.add_argument("--compile", action="store_true", help="--plane51: also torch.compile's row and its cost")
    parser.add_argument("--mlp", action="store_true", help="--plane51: also the MLP plane, API against command line")
    parser.add_argument("--whole", action="store_true", help="--plane51: only one whole 51×51 plane each way")
    parser.add_argument("--sequential", action="store_true", help="--whole: the two planes one after the other")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import_lazy_torch_modules()  # torch.func's first-call imports, as the app pays them at start-up
    model, X, Y = workload(args.samples)
    P = sum(p.numel() for p in model.parameters())
    print(f"ResNet-20: {P:,} parameters, {len(X)} inputs 3×32×32, {CLASSES} classes, float32, {args.threads} threads")
    print(f"load average (1, 5, 15 min) at the start: {os.getloadavg()}")
    rows = []

    def row(name, seconds, note=""):
        cpu, wall = seconds
        rows.append((name, cpu, wall, note))
        print(f"  {name:<46} {cpu:9.1f} s CPU {wall:9.1f} s wall  {note}", flush=True)

    if args.plane51:
        plane51_rows(model, X, Y, args, row)
    elif not args.hessian_only:
        *t_floor, _ = timed(lambda: floor(model, X))
        row("floor: 121 eval forwards", t_floor)
        *t, _ = timed(lambda: floor(model, X, torch.channels_last))
        row("floor: 121 eval forwards, channels-last", t, f"{t[0] / t_floor[0]:.2f}× floor (CPU): ModuleLoss's layout")
        *t, ours_grid = timed(lambda: ours_plane(model, X, Y))
        row("plane 11×11: ours", t, f"{t[0] / t_floor[0]:.2f}× floor (CPU)")
        *t, _ = timed(lambda: loss_landscapes_plane(model, X, Y))
        row("plane 11×11: loss-landscapes", t, f"{t[0] / t_floor[0]:.2f}× floor (CPU)")
        *t, _ = timed(lambda: loss_landscape_3d_plane(model, X, Y))
        row("plane 11×11: loss-landscape-3d", t, f"{t[0] / t_floor[0]:.2f}× floor (CPU)")
    if not args.plane51:
        hessian_rows(model, X, Y, args, row)
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")

    print("\n| row | CPU s | wall s | note |\n|---|---|---|---|")
    for name, cpu, wall, note in rows:
        print(f"| {name} | {cpu:.1f} | {wall:.1f} | {note} |")


if __name__ == "__main__":
    main()
