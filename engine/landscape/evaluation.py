"""How the toolkit evaluates a module's forward: batch norm as its affine map, attention in its math form.

``ModuleLoss`` takes first, second and mixed derivatives of any module's forward: gradients,
reverse-over-reverse Hessian-vector products on a kept graph, and forward-over-reverse ones
(``torch.func.jvp`` of ``torch.func.grad``). Two of PyTorch's fused kernels stand in the way:

- **Attention.** ``scaled_dot_product_attention`` (what ``nn.MultiheadAttention``,
  ``nn.TransformerEncoderLayer`` and exported graphs' ``aten.scaled_dot_product_attention`` call)
  runs on the CPU as ``_scaled_dot_product_flash_attention_for_cpu``, which has a backward but no
  derivative of that backward and no forward-mode derivative: every Hessian-vector product of a
  transformer failed with "derivative for ..._backward is not implemented". With only the math
  backend enabled (``torch.nn.attention.sdpa_kernel(SDPBackend.MATH)``) the same call is
  ``softmax(QKᵀ/√d + mask) V`` written out in ordinary differentiable ops; the values agree to
  rounding. An exported graph that calls the fused CPU kernel by name is rewritten to the math
  op when it is read (``engine.io.pt2_program``).
- **Hard sigmoid.** ``hardsigmoid`` (MobileNetV3's squeeze-and-excitation gate) has a backward,
  ``hardsigmoid_backward``, with no derivative in either mode, so MobileNetV3's Hessian failed
  the same way. ``engine.landscape.hard_sigmoid`` evaluates it as ``clamp(x + 3, 0, 6) / 6``,
  the same function in ordinary ops. Among the activations, norms, poolings and resamplings of
  ``torch.nn.functional`` it was the only such kernel; beyond them ``cdist`` (both modes) and
  ``grid_sample`` (forward mode) have none, and a product through them ends with one line naming
  the operator (``second_derivative_failure``).
- **Batch norm** in eval mode, as ``engine.landscape.eval_batch_norm`` explains.

``sdpa_kernel`` sets process-wide flags and puts back what it found on exit, so two threads
entering and leaving it out of order could leave the math backend on for good.
``math_attention`` counts its users instead: the first to enter selects the math backend, the
last to leave restores the backends the first one found. While it is active, attention anywhere
in the process runs in the math form (the same values, computed without the fused kernel).
"""

from __future__ import annotations

import contextlib
import re
import threading

from engine.core.errors import EngineInputError

_lock = threading.Lock()
_users = 0
_restore = None  # the backends found by the first user, put back by the last


@contextlib.contextmanager
def math_attention():
    """Scaled dot-product attention in its math form (differentiable to any order, in both modes)
    while active; reentrant and safe to enter from several threads at once."""
    global _users, _restore
    from torch.nn.attention import SDPBackend, _cur_sdpa_kernel_backends, _sdpa_kernel

    with _lock:
        if _users == 0:
            _restore = _cur_sdpa_kernel_backends()
            _sdpa_kernel([SDPBackend.MATH])
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _sdpa_kernel(_restore)
                _restore = None


def forward_context(module):
    """A factory of the context in which ``module``'s forward is evaluated: attention in its math
    form, eval-mode batch norm as its affine map where the module has batch norm, and the hard
    sigmoid in its math form where it has one. Made once per module (finding them walks the
    module), entered at every forward. A mode is entered only where it is needed: while one is
    active every torch call of the forward passes through Python."""
    from engine.landscape.eval_batch_norm import EvalBatchNorm, has_batch_norm
    from engine.landscape.hard_sigmoid import MathHardsigmoid, has_hardsigmoid

    wanted = ((EvalBatchNorm, has_batch_norm), (MathHardsigmoid, has_hardsigmoid))
    modes = [mode for mode, needed in wanted if needed(module)]
    if not modes:
        return math_attention

    @contextlib.contextmanager
    def evaluation():
        with contextlib.ExitStack() as stack:
            stack.enter_context(math_attention())
            for mode in modes:
                stack.enter_context(mode())
            yield

    return evaluation


# what torch says when an operator has no derivative of the order asked for (no double backward,
# or no forward-mode rule for a forward-over-reverse product)
_NO_SECOND_DERIVATIVE = re.compile(
    r"derivative for '?(?:aten::)?(?P<a>[\w.]+)'? is not implemented"
    r"|forward AD with (?:aten::)?(?P<b>[\w.]+) that does not support"
)


def second_derivative_failure(error: BaseException) -> str | None:
    """One line naming the operator without a second derivative, when ``error`` is torch's
    saying so during a Hessian-vector product; None for any other error."""
    found = _NO_SECOND_DERIVATIVE.search(str(error))
    if found is None:
        return None
    op = found["a"] or found["b"]
    return (
        f"the model calls {op}, for which PyTorch has no second derivative: Hessian measures need one "
        "(planes, interpolations and gradients do not)"
    )


@contextlib.contextmanager
def second_derivatives():
    """Hessian-vector products made inside: torch's error for an operator without a second
    derivative becomes an ``EngineInputError`` naming it (``second_derivative_failure``)."""
    try:
        yield
    except RuntimeError as error:
        line = second_derivative_failure(error)
        if line is None:
            raise
        raise EngineInputError(line) from error


# torch's words when two tensors of one op differ in dtype ("mat1 and mat2 must have the same dtype,
# but got Float and Double"; "Input type (double) and bias type (float) should be the same";
# "expected scalar type Double but found Float"; layer norm's "mixed dtype (CPU): expect parameter
# to have scalar type of Float")
_DTYPE_WORDS = re.compile(
    r"same dtype|scalar type|mixed dtype|dtype mismatch|Input type \(\w+\) and \w+ type \(\w+\)"
    r"|(Float|Double|Half|BFloat16|Long|Int)Tensor|(Float|Double|Half|BFloat16) and (Float|Double|Half|BFloat16)"
)
_INDEX_WORDS = re.compile(r"index out of range|out of bounds|index \S+ is out of", re.IGNORECASE)


def forward_failure(error: BaseException, x_shape: tuple, dtype) -> str:
    """One line on why the model's first forward failed, naming the likely cause: tensors of two
    dtypes meeting (the model makes tensors of a fixed float dtype, while its parameters are
    evaluated in ``dtype``), inputs that index past a table (token ids past an embedding's
    vocabulary), or else inputs the model does not take (a shape)."""
    text = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
    if _DTYPE_WORDS.search(text):
        name = str(dtype).removeprefix("torch.")
        return (
            f"the model fails with its parameters in {name}: a tensor of another dtype meets them "
            f"(does the model create tensors of a fixed dtype, or cast with .float()?): {text}"
        )
    if _INDEX_WORDS.search(text):
        return f"inputs X of shape {tuple(x_shape)} hold values the model cannot index (ids past a vocabulary?): {text}"
    return f"the model does not take inputs X of shape {tuple(x_shape)} (batch first): {text}"
