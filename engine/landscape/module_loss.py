"""The loss of any PyTorch module over its data, as a function of one flat parameter vector θ.

The landscape toolkit's operations (planes, lines, PCA paths, Hessians) all need the same three
things of a model: L(θ), ∇L(θ) and H(θ)v, where θ is the flat concatenation of the module's
``named_parameters()`` in their order (what ``torch.nn.utils.parameters_to_vector`` gives, and
what plane.npz's ``param_names`` lists). ``ModuleLoss`` provides them for any ``nn.Module``:

- **Functional.** The module is never modified: every evaluation is
  ``torch.func.functional_call(module, {params from θ, buffers}, x)``, with θ's views as the
  parameters and the buffers (batch norm's running statistics) held fixed, so batch norm stays
  in eval mode and nothing is written back; it is evaluated as the affine map it then is, whose
  derivatives cost less than its kernel's (``engine.landscape.eval_batch_norm``). Parameters and
  buffers are copied once into ``dtype`` (float64 by default, so the surfaces' small
  differences are not rounding).
- **Chunked.** The data are evaluated ``batch_size`` samples at a time and the chunks' sums
  added, so memory is one chunk's activations whatever N is. A value alone (``loss``, a plane's
  point) keeps no activations for a backward, only the few a forward still reads, so it takes
  ``VALUE_CHUNKS`` chunks at once: fewer, larger operator calls, each split over the threads
  once. An archive exported with a fixed batch (``net.fixed_batch``) is fed exactly that many
  samples every time: the last chunk is padded with zeros and its padded outputs are dropped
  before the loss (eval mode makes samples independent, so padding changes nothing else).
- **Losses** as engine.landscape.losses: "sum" Σ_α ‖f(x_α) − y_α‖², "mean" that over N,
  "cross-entropy" (1/N) Σ_α [log Σ_c e^{f_c} − f_{y_α}] for integer labels (mlp.loss_of_outputs).
  Outputs are (N,) / (N, 1) for one output, (N, e) otherwise; targets as ``mlp.as_targets``.
  Or a **callable** ``loss_fn(model, batch) -> scalar tensor``, the batch's mean loss, for models
  whose outputs are tuples or dicts and for losses outside the (inputs, targets) pattern: the
  batches are those given (``net.batches``: a data loader's, each as it came, whatever its size)
  or the chunks of (X, Y) as ``(x, y)`` pairs, and L = Σ_b n_b ℓ_b / N, the samples' mean over
  batches of n_b samples (the first tensor's length). ``model`` is the module with θ's tensors
  in place (``torch.func.functional_call`` of a wrapper whose child is the module), so the
  callable may use any of its submodules and methods.
- **Exact Hessian-vector products**, forward-over-reverse (``torch.func.jvp`` of
  ``torch.func.grad``) summed over the chunks: one forward-mode pass through the backward, and
  no graph kept between calls. Several vectors at once
  go through ``torch.func.vmap`` in groups of at most ``HVP_GROUP``, and of ``HVP_SAMPLES``
  vectors × samples, so memory stays a few chunks' worth.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.validation import integer
from engine.landscape.compute import DTYPES, check_device
from engine.landscape.evaluation import forward_context, forward_failure

# Samples per chunk when none is asked for. On a CIFAR-shaped ResNet-20 in float64 a gradient
# raised the peak memory by 8 MB a sample and each vector of an HVP by 12 MB more a sample:
# 64 samples keep a gradient near 0.5 GB.
DEFAULT_BATCH_SIZE = 64
MAX_BATCH_SIZE = 1 << 20
# Vectors × samples in one vmapped HVP (≈ 3 GB on that ResNet in float64); at most HVP_GROUP
# vectors. Vmapped, a group of vectors beat the same vectors one by one, on the 873-parameter
# test CNN and on the ResNet alike (benchmarks/README.md).
HVP_SAMPLES = 256
HVP_GROUP = 8
# Chunks evaluated together where nothing is differentiated (loss values: a plane's points). A
# forward under no_grad frees each activation once the next layer has read it, so its memory is a
# few layers' activations, not all of them as a gradient's is: four chunks of the default 64
# (256 samples) still cost less memory than one chunk's gradient. On benchmarks/bench_any_model.py's
# ResNet-20 the larger chunk took less CPU a point (benchmarks/README.md, issue #55).
VALUE_CHUNKS = 4


class ModuleLoss:
    """L(θ) of ``net.module`` on (``net.X``, ``net.Y``) for flat parameter vectors θ.

    ``net``: an ``engine.io.module_network.ModuleNetwork`` (or anything with ``module``, ``X``,
    ``Y`` and ``fixed_batch``). ``kind``: "sum", "mean" or "cross-entropy". ``batch_size``:
    samples per chunk (default ``DEFAULT_BATCH_SIZE``; for a fixed-batch archive it must be that
    batch, the default). Flat vectors may be numpy arrays or tensors; ``None`` means θ itself.

    Attributes: ``names``, ``shapes`` (the parameters, in ``named_parameters()`` order),
    ``n_params``, ``theta`` (the flat θ, a tensor of ``dtype`` on ``device``), ``buffers``,
    ``value_batch`` (samples a chunk for loss values alone, ``VALUE_CHUNKS`` chunks),
    ``n_samples``, ``n_outputs``, ``classifier`` (cross-entropy: accuracy is defined),
    ``evaluated`` (the module as evaluated: the user's, or with ``fold`` its graph with eval-mode
    batch norm folded into the convolutions, engine.landscape.fast_forward). The input is checked whole
    here, including one forward pass on the first chunk.
    """

    def __init__(
        self, net, kind="sum", batch_size: int | None = None, dtype: str = "float64", device="cpu", fold: bool = True
    ):
        self.custom = callable(kind)
        self.kind = "custom" if self.custom else mlp.check_loss(kind)
        self.loss_fn = kind if self.custom else None
        if dtype not in DTYPES:
            raise EngineInputError(f"unknown dtype {dtype!r}; choose float64 or float32")
        self.dtype, self.device = DTYPES[dtype], check_device(device)
        self.module, self.fixed_batch = net.module, net.fixed_batch
        # attention in its math form (differentiable twice), eval-mode batch norm as its affine map
        self._evaluation = forward_context(self.module)
        # functional_call swaps the module's tensors for the call's: two threads must not overlap
        self._lock = threading.Lock()
        self.evaluated = self.module  # what _forward evaluates: the module, or its folded graph (below)
        self.batch_size = self._check_batch_size(batch_size, net.fixed_batch)
        self.value_batch = self.batch_size * VALUE_CHUNKS  # samples a chunk where nothing is differentiated
        named = list(self.module.named_parameters())
        if not named:
            raise EngineInputError("the model has no parameters to draw a landscape over")
        self.names = tuple(name for name, _ in named)
        self.shapes = tuple(tuple(p.shape) for _, p in named)
        self.sizes = tuple(int(np.prod(s, dtype=np.int64)) for s in self.shapes)
        self.n_params = sum(self.sizes)
        self.theta = torch.cat([self._as_tensor(p.detach()).reshape(-1) for _, p in named])
        self.buffers = {name: self._as_tensor(b) for name, b in self.module.named_buffers()}
        batches = getattr(net, "batches", None)
        self.classifier = self.kind == "cross-entropy"
        if self.custom:
            self._init_custom(net, batches)
            return
        X, Y = (net.X, net.Y) if batches is None else stacked_batches(batches)
        self.X = self._inputs(X)
        self.n_samples = len(self.X)
        self.n_outputs = self._output_width()
        # eval-mode batch norm folded into its convolution (and a ReLU or residual sum after it into
        # the kernel where nothing is differentiated): the same function of the same parameters,
        # checked on the first chunk, or the module itself (engine.landscape.fast_forward). Folding
        # traces the module with torch.fx, which swaps nn.Module.__call__ for the whole process
        # while it runs: never from a thread beside a training loop (fold=False), and only where
        # there is batch norm to fold.
        from engine.landscape.eval_batch_norm import has_batch_norm  # defines a torch class: not at import

        if fold and has_batch_norm(self.module):
            from engine.landscape.fast_forward import folded

            first = next(self._chunks(self.X))[0]
            self.evaluated = folded(self.module, first, {**self.unflatten(self.theta), **self.buffers})
        targets = mlp.as_targets(_numpy(Y), self.n_outputs, self.kind)
        if len(targets) != self.n_samples:
            raise EngineInputError(f"X has {self.n_samples} samples but Y has {len(targets)}")
        if self.kind == "cross-entropy":
            self.Y = torch.as_tensor(targets.astype(np.int64), device=self.device)
        else:
            self.Y = torch.as_tensor(targets.reshape(self.n_samples, -1), dtype=self.dtype, device=self.device)
        # the per-chunk sums add up to N·L for "mean" and "cross-entropy", to L for "sum"
        self.scale = 1.0 if self.kind == "sum" else 1.0 / self.n_samples

    def _init_custom(self, net, batches) -> None:
        """The callable's batches, converted to ``dtype`` on ``device``, and one call checked."""
        if batches is None:
            X, Y = self._inputs(net.X), torch.as_tensor(_numpy(net.Y), device=self.device)
            if len(Y) != len(X):
                raise EngineInputError(f"X has {len(X)} samples but Y has {len(Y)}")
            Y = Y if Y.dtype in (torch.int64, torch.int32, torch.bool) else Y.to(self.dtype)
            batches = list(zip(X.split(self.batch_size), Y.split(self.batch_size)))
        self._batches = [self._converted(batch) for batch in batches]
        if not self._batches:
            raise EngineInputError("data: the data loader yielded no batches")
        self._sizes = [batch_length(batch) for batch in self._batches]
        if self.fixed_batch is not None and any(n != self.fixed_batch for n in self._sizes):
            raise EngineInputError(
                f"loss: this archive was exported with a fixed batch of {self.fixed_batch}; a loss callable takes "
                f"the batches as they are, so give batches of exactly {self.fixed_batch} samples"
            )
        self.n_samples = sum(self._sizes)
        self.n_outputs = None
        self.scale = 1.0 / self.n_samples
        self._wrapper = _loss_of_batch(self.module, self.loss_fn)
        value = self._custom_call(self.theta, self._batches[0], None, check=True)
        if not torch.isfinite(value):
            raise EngineInputError(f"loss: the loss callable returned {float(value)} on the first batch")

    def _converted(self, batch):
        """``batch`` with every array or tensor on ``device``: floating ones in ``dtype``, the rest kept."""
        if isinstance(batch, (torch.Tensor, np.ndarray)):
            t = torch.as_tensor(batch)
            return t.to(self.device, self.dtype if t.is_floating_point() else t.dtype)
        if isinstance(batch, Mapping):
            return {k: self._converted(v) for k, v in batch.items()}
        if isinstance(batch, (tuple, list)):
            return type(batch)(self._converted(v) for v in batch) if type(batch) in (tuple, list) else batch
        return batch

    # ── checks ────────────────────────────────────────────────────────────────────────────────

    @staticmethod
    def _check_batch_size(batch_size, fixed_batch) -> int:
        if fixed_batch is not None:
            if batch_size is not None and batch_size != fixed_batch:
                raise EngineInputError(
                    f"--batch-size {batch_size}: this archive was exported with a fixed batch of {fixed_batch}; "
                    f"leave --batch-size out, or export with a dynamic batch dimension"
                )
            return int(fixed_batch)
        if batch_size is None:
            return DEFAULT_BATCH_SIZE
        return integer("--batch-size", batch_size, 1, MAX_BATCH_SIZE)

    def _as_tensor(self, t) -> torch.Tensor:
        """A copy on ``device``; floating tensors in ``dtype``, integer ones (counters, labels) kept."""
        t = torch.as_tensor(t)
        return t.to(self.device, self.dtype if t.is_floating_point() else t.dtype, copy=True)

    def _inputs(self, X) -> torch.Tensor:
        X = _numpy(X)
        if X.ndim < 1 or len(X) < 1:
            raise EngineInputError(f"inputs X have shape {X.shape}; expected at least one sample, batch first")
        if X.dtype.kind not in "biuf":
            raise EngineInputError(f"inputs X have dtype {X.dtype}; expected real numbers")
        if X.dtype.kind == "f" and not np.isfinite(X).all():
            raise EngineInputError("inputs X contain NaN or inf")
        # integer inputs (token ids, indices) stay integers; everything else is computed in dtype
        return torch.as_tensor(X, device=self.device).to(torch.int64 if X.dtype.kind in "biu" else self.dtype)

    def _output_width(self) -> int:
        f, rows = self._first_outputs()
        if not isinstance(f, torch.Tensor) or f.ndim not in (1, 2) or len(f) != rows:
            shape = tuple(f.shape) if isinstance(f, torch.Tensor) else type(f).__name__
            raise EngineInputError(f"the model's output is {shape}; expected (batch,) or (batch, outputs)")
        return 1 if f.ndim == 1 else f.shape[1]

    def _first_outputs(self) -> tuple[object, int]:
        """(The model's outputs on the first chunk, its rows), which also settle the inputs' memory
        layout. An image batch (N, C, H, W) is tried channels-last first, the layout in which
        oneDNN's convolutions work on the CPU: on benchmarks/bench_any_model.py's ResNet-20 both a
        forward and a Hessian-vector product were faster that way. The values are the
        same; a model that cannot take that layout (a ``view`` of its input) gets it contiguous."""
        layouts = (torch.channels_last, torch.contiguous_format) if self.X.ndim == 4 else (torch.contiguous_format,)
        for i, layout in enumerate(layouts):
            X = self.X.contiguous(memory_format=layout)
            x, _ = next(self._chunks(X))
            try:
                with torch.no_grad():
                    f = self._forward(self.theta, x)
            except Exception as error:  # the user's graph: any failure is one line about the data
                if i + 1 < len(layouts):
                    continue
                raise EngineInputError(forward_failure(error, self.X.shape, self.dtype)) from None
            self.X = X
            return f, len(x)

    # ── flat vectors ──────────────────────────────────────────────────────────────────────────

    def flat(self, v=None) -> torch.Tensor:
        """``v`` (numpy or tensor, (n_params,)) as a tensor of ``dtype`` on ``device``; θ for None."""
        if v is None:
            return self.theta
        t = torch.as_tensor(v).to(self.device, self.dtype)
        if t.shape != (self.n_params,):
            raise EngineInputError(f"a parameter vector has shape {tuple(t.shape)}; expected ({self.n_params},)")
        return t

    def unflatten(self, flat) -> dict[str, torch.Tensor]:
        """{name: view of ``flat`` in that parameter's shape}, in ``names`` order."""
        parts = self.flat(flat).split(self.sizes)
        return {name: part.view(shape) for name, part, shape in zip(self.names, parts, self.shapes)}

    def flatten(self, state: Mapping[str, object]) -> torch.Tensor:
        """The flat vector of a state_dict's parameters (its buffers are ignored), in ``names`` order."""
        missing = [name for name in self.names if name not in state]
        if missing:
            raise EngineInputError(f"the state has no parameter {missing[0]!r} of the model")
        parts = []
        for name, shape in zip(self.names, self.shapes):
            t = torch.as_tensor(state[name])
            if tuple(t.shape) != shape:
                raise EngineInputError(f"parameter {name!r} has shape {tuple(t.shape)}; the model's is {shape}")
            parts.append(t.reshape(-1).to(self.device, self.dtype))
        return torch.cat(parts)

    def state_buffers(self, state: Mapping[str, object]) -> dict[str, torch.Tensor]:
        """The model's buffers found in a state_dict (batch norm's running statistics), converted."""
        return {name: self._as_tensor(state[name]) for name in self.buffers if name in state}

    # ── evaluation ────────────────────────────────────────────────────────────────────────────

    def _chunks(self, X: torch.Tensor, size: int | None = None) -> Iterator[tuple[torch.Tensor, int]]:
        """(chunk, valid rows): ``size`` (default ``batch_size``) rows at a time; for a fixed
        batch always ``batch_size``, the last chunk zero-padded to it."""
        B = self.batch_size if size is None or self.fixed_batch is not None else size
        for i in range(0, len(X), B):
            x = X[i : i + B]
            valid = len(x)
            if self.fixed_batch is not None and valid < B:
                x = torch.cat([x, x.new_zeros((B - valid, *x.shape[1:]))])
            yield x, valid

    def _forward(self, flat: torch.Tensor, x: torch.Tensor, buffers=None) -> torch.Tensor:
        state = {**self.unflatten(flat), **(self.buffers if buffers is None else buffers)}
        with self._lock, self._evaluation():
            return torch.func.functional_call(self.evaluated, state, (x,))

    def merged_buffers(self, buffers) -> dict | None:
        """The module's buffers with ``buffers`` ({name: tensor}) replacing some; None for none."""
        if not buffers:
            return None
        unknown = sorted(set(buffers) - set(self.buffers))
        if unknown:
            raise EngineInputError(f"the model has no buffer {unknown[0]!r}")
        return {**self.buffers, **{k: self._as_tensor(v) for k, v in buffers.items()}}

    def _chunk_sum(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The chunk's summed loss: Σ ‖f − y‖² for squared losses, Σ of the cross-entropies."""
        if self.kind == "cross-entropy":
            return mlp.loss_of_outputs(f.T, y, "cross-entropy") * len(y)
        return (f.reshape(len(y), -1) - y).square().sum()

    def _pieces(self, size: int | None = None) -> Iterator[tuple[object, object, int]]:
        """(inputs, their targets, valid rows) per chunk of ``size`` samples (``_chunks``); for a
        loss callable (the batch, None, its samples), the batches as given."""
        if self.custom:
            yield from ((batch, None, n) for batch, n in zip(self._batches, self._sizes))
            return
        start = 0
        for x, valid in self._chunks(self.X, size):
            yield x, self.Y[start : start + valid], valid
            start += valid

    def loss_and_accuracy(self, flat=None, buffers=None) -> tuple[float, float | None]:
        """(L(θ), the share of samples whose largest output is their label, or None unless a
        classifier). ``buffers``: {name: tensor} replacing some of the module's buffers."""
        flat, merged = self.flat(flat), self.merged_buffers(buffers)
        total, correct = 0.0, 0
        with torch.no_grad():
            if self.custom:
                for batch, _, n in self._pieces():
                    total += float(self._custom_call(flat, batch, merged).double()) * n
                return total * self.scale, None
            for x, y, valid in self._pieces(self.value_batch):
                f = self._forward(flat, x, merged)[:valid]
                total += float(self._chunk_sum(f, y).double())
                if self.classifier:
                    correct += int((f.argmax(1) == y).sum())
        return total * self.scale, (correct / self.n_samples if self.classifier else None)

    def loss(self, flat=None, buffers=None) -> float:
        """L(θ) in float64 (the chunk sums are added in float64 whatever ``dtype``)."""
        return self.loss_and_accuracy(flat, buffers)[0]

    def _objective(self, x, y, valid: int):
        """θ ↦ this chunk's share of L, for torch.func."""
        if self.custom:
            return lambda flat: self._custom_call(flat, x) * (valid * self.scale)
        return lambda flat: self._chunk_sum(self._forward(flat, x)[:valid], y) * self.scale

    def _custom_call(self, flat: torch.Tensor, batch, buffers=None, check: bool = False) -> torch.Tensor:
        """The loss callable's value on ``batch`` with θ = ``flat`` in place; with ``check``, any
        failure or a value that is not a scalar tensor is one line naming the loss."""
        own = self.buffers if buffers is None else buffers
        state = {f"model.{k}": v for k, v in {**self.unflatten(flat), **own}.items()}
        with self._lock, self._evaluation():
            if not check:
                return torch.func.functional_call(self._wrapper, state, (batch,))
            try:
                value = torch.func.functional_call(self._wrapper, state, (batch,))
            except Exception as error:  # the user's code: any failure is one line about the loss
                text = _first_line(error)
                raise EngineInputError(f"loss: the loss callable failed on the first batch: {text}") from None
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            what = f"shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else f"a {type(value).__name__}"
            raise EngineInputError(f"loss: the loss callable returned {what}; it must return a scalar tensor")
        return value.reshape(())

    def chunk_objectives(self) -> list:
        """θ ↦ each chunk's share of L, one function per chunk: they add up to L, for torch.func
        or for autograd (engine.landscape.module_hessian keeps their gradients' graphs)."""
        return [self._objective(x, y, valid) for x, y, valid in self._pieces()]

    def gradient(self, flat=None) -> torch.Tensor:
        """∇L(θ), shape (n_params,), summed over the chunks."""
        flat = self.flat(flat)
        g = torch.zeros_like(flat)
        for share in self.chunk_objectives():
            g += torch.func.grad(share)(flat)
        return g

    def hvp(self, flat, V) -> torch.Tensor:
        """H(θ) V, exactly, for V of shape (n_params,) or (n_params, k); same shape back."""
        flat = self.flat(flat)
        V = torch.as_tensor(V).to(self.device, self.dtype)
        if V.ndim not in (1, 2) or V.shape[0] != self.n_params:
            raise EngineInputError(f"HVP vectors have shape {tuple(V.shape)}; expected ({self.n_params},) or (n, k)")
        rows = V.reshape(self.n_params, -1).T  # (k, n): one vector a row
        out = torch.zeros_like(rows)
        group = max(1, min(HVP_GROUP, HVP_SAMPLES // min(self.batch_size, self.n_samples)))
        for x, y, valid in self._pieces():
            grad = torch.func.grad(self._objective(x, y, valid))
            one = lambda v, grad=grad: torch.func.jvp(grad, (flat,), (v,))[1]
            for i in range(0, len(rows), group):
                some = rows[i : i + group]
                out[i : i + len(some)] += one(some[0])[None] if len(some) == 1 else torch.func.vmap(one)(some)
        return out.T.reshape(V.shape)


def _loss_of_batch(model, loss_fn):
    """``loss_fn(model, batch)`` as a module whose only child is the model, so that
    ``functional_call`` puts θ in the model's place under the names "model.<parameter>". (Made
    here, not at import: torch is imported lazily.)"""

    class LossOfBatch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, batch):
            return loss_fn(self.model, batch)

    return LossOfBatch()


def batch_length(batch) -> int:
    """Samples in a batch: the length of its first tensor or array, depth first."""
    if isinstance(batch, (torch.Tensor, np.ndarray)):
        if batch.ndim == 0:
            raise EngineInputError("data: a batch's first tensor is a scalar; batches are batch first")
        return int(batch.shape[0])
    items = batch.values() if isinstance(batch, Mapping) else batch if isinstance(batch, (tuple, list)) else ()
    for item in items:
        with contextlib.suppress(EngineInputError):
            return batch_length(item)
    raise EngineInputError(f"data: a batch of type {type(batch).__name__} holds no tensor to count its samples by")


def stacked_batches(batches) -> tuple[object, object]:
    """(X, Y): the (inputs, targets) pairs of a data loader joined along the batch, whatever
    each batch's size. A named loss needs exactly such pairs."""
    xs, ys = [], []
    for i, batch in enumerate(batches):
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise EngineInputError(
                f"data: batch {i} is a {type(batch).__name__}, not an (inputs, targets) pair; for other batches "
                "pass loss=callable(model, batch)"
            )
        xs.append(_numpy(batch[0]))
        ys.append(_numpy(batch[1]))
    if not xs:
        raise EngineInputError("data: the data loader yielded no batches")
    shapes = {x.shape[1:] for x in xs}
    if len(shapes) > 1:
        raise EngineInputError(f"data: the batches' inputs have different sample shapes {sorted(shapes)}")
    return np.concatenate(xs), np.concatenate(ys)


def _numpy(a) -> np.ndarray:
    """An array or tensor (on any device) as a numpy array."""
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:200]}" if text else type(error).__name__
