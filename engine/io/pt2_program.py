"""Any network saved by ``torch.export.save`` (.pt2), as an ``nn.Module``, with nothing in the file run.

``torch.export.load`` is never called: it unpickles an archive's sample inputs, and any weight or
constant marked ``use_pickle``, with ``weights_only=False``. Here the archive's JSON program and
its raw tensor bytes are read (``engine.io.pt2_archive``) and handed to torch's own deserializer
(``ExportedProgramDeserializer``, as ``torch.export.pt2_archive._package`` calls it) as plain
tensors, with no sample inputs, so no pickle is ever loaded.

The JSON is checked first, because strings in it become Python source: ``ep.module()`` generates
its ``forward`` from the graph (a parameter named ``a"),exec("…`` is spliced into that code) and
``exec``s an archive's ``guards_code``. So before torch sees the program:

- every value and argument name is an identifier; every parameter, buffer, constant and
  submodule name is dot-separated parts of printable ASCII without quotes or backslashes.
  FX writes a part that is not an identifier into a double-quoted string,
  ``getattr(self.trunk_output, "block1-0")`` (torchvision's RegNet names its blocks so), and such
  a part cannot end that string; ``guards_code`` and the nodes' metadata (stack traces, module
  paths) are dropped (the shape checks that matter are the graph's own input constraints, which
  ``ep.module()`` keeps);
- every op is an ATen operator or plain arithmetic on sizes, with no subgraphs or custom objects;
- every tensor and device argument is on the CPU;
- every symbolic size is arithmetic on size symbols (torch parses it with ``sympy.sympify``,
  which evals the string);
- no op runs in training mode (batch norm with batch statistics, dropout) or writes to a
  parameter or buffer: the module is evaluated as ``model.eval()`` would run it.

Two rewrites of the graph, once torch has built it, let it be evaluated in another float dtype
and differentiated to second order (``_rewrite``):

- an export writes the float dtype it was traced in into the graph wherever the model named one:
  the zero initial state ``nn.LSTM`` and ``nn.GRU`` create (``aten.zeros(..., dtype=float32)``), a
  cast ``x.float()``. Evaluated with float64 parameters (``ModuleLoss``), that state met a float64
  weight and the LSTM failed ("mat1 and mat2 must have the same dtype"). Every floating dtype
  argument is therefore replaced by the dtype of the module's first floating parameter, read at
  each call, and every floating tensor constant is cast to it: the graph computes in whatever
  dtype its parameters are given, as the eager module would;
- ``aten._scaled_dot_product_flash_attention_for_cpu``, the fused CPU attention kernel, has no
  second derivative: a graph that calls it by name calls ``aten._scaled_dot_product_attention_math``
  instead, the same attention in differentiable ops (its first output is the same; the second,
  which an eval-mode graph does not use, differs, so a graph that reads it is left as it is).
"""

from __future__ import annotations

import functools
import operator
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.io.pt2_archive import ARCHIVE_DAMAGE, Archive, read_archive, read_payload

_getitem = operator.getitem
EXPORT_HOW = 'torch.export.export(model.eval(), (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))'
_ARITHMETIC = "getitem|add|sub|mul|floordiv|truediv|mod|neg|pow|eq|ne|lt|le|gt|ge"
ALLOWED_TARGET = re.compile(
    rf"torch\.ops\.aten\.\w+\.\w+|_operator\.({_ARITHMETIC})|torch\.sym_(float|int|max|min|not|ite|sqrt|sum)"
    r"|math\.(ceil|floor|trunc|sqrt)",
    re.ASCII,
)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a parameter's, buffer's, constant's or submodule's name: parts of printable ASCII other than quotes,
# backslashes and dots, joined by dots ("trunk_output.block1.block1-0.proj.0.weight")
STATE_NAME = re.compile(r"[ !#-&(-\-/-\[\]-~]+(\.[ !#-&(-\-/-\[\]-~]+)*", re.ASCII)
# torch writes a symbolic size as sympy's srepr, Add(Symbol('s77', integer=True), Integer(1)), and
# reads it back with sympy.sympify, which evals the string. So a size may name only these: sympy's
# classes and the assumptions srepr writes, torch.utils._sympy.functions, and size symbols (s77).
SIZE_NAMES = frozenset(
    """Add Mul Pow Integer Rational Float Symbol Max Min Abs Mod floor ceiling sqrt Piecewise ExprCondPair
    Equality Unequality StrictLessThan LessThan StrictGreaterThan GreaterThan Eq Ne Lt Le Gt Ge And Or Not
    True False true false oo zoo nan FloorDiv CeilDiv CleanDiv ModularIndexing PythonMod Where PowByNatural FloatPow
    FloatTrueDiv IntTrueDiv TruncToInt TruncToFloat FloorToInt CeilToInt RoundToInt RoundDecimal ToFloat
    Identity IsNonOverlappingAndDenseIndicator LShift RShift positive negative nonnegative nonpositive integer
    real finite zero nonzero even odd commutative precision""".split()
)
SIZE_TOKEN = re.compile(
    r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d+(\.\d+)?(e[-+]?\d+)?|'[A-Za-z0-9_.+-]*'|\*\*|//|[-+*/%(),<>=!&|~]", re.ASCII
)
SIZE_SYMBOL = re.compile(r"[a-z]+[0-9]+", re.ASCII)  # s77, u0, zuf1: torch's symbol names
STATE_KINDS = {"parameter": "parameter_name", "buffer": "buffer_name", "tensor_constant": "tensor_constant_name"}


@dataclass(frozen=True, eq=False)
class ExportedModule:
    """The exported graph as a module in eval mode, and what its one input must be."""

    module: object  # torch.nn.Module, parameters named as in the exported model
    input_shape: tuple  # sizes past the batch; None where a size is dynamic
    input_dtype: object  # torch.dtype
    fixed_batch: int | None  # the static batch the graph was exported with; None when dynamic


def read_exported_module(path) -> ExportedModule:
    path = Path(path)
    if not path.is_file():
        raise EngineInputError(f"{path}: no such file")
    try:
        with zipfile.ZipFile(path) as z:
            archive = read_archive(path, z)
            user_input = check_program(path, archive)
            meta = archive.program["graph_module"]["graph"]["tensor_values"][user_input]
            _dtype(path, meta["dtype"])  # before torch builds the graph: a complex input makes it warn
            state_dict, constants = _tensors(path, z, archive)
    except EngineInputError:
        raise
    except (*ARCHIVE_DAMAGE, LookupError, TypeError, ValueError, AttributeError, StopIteration) as e:
        raise EngineInputError(f"{path}: not a readable torch.export archive ({type(e).__name__}: {e})") from None
    module = _deserialize(path, archive.program, state_dict, constants)
    sizes = [s.get("as_int") for s in meta["sizes"]]
    if not sizes:
        raise EngineInputError(f"{path}: the model's input is a scalar; it must have a batch dimension first")
    return ExportedModule(module, tuple(sizes[1:]), _dtype(path, meta["dtype"]), sizes[0])


# ------------------------------------------------------------------ the JSON, before torch sees it
def check_program(path, archive: Archive) -> str:
    """EngineInputError naming the first thing in the program that is not a plain CPU network in
    eval mode (see the module's docstring); else the name of the graph's one tensor input."""
    graph_module = archive.program["graph_module"]
    graph, signature = graph_module["graph"], graph_module["signature"]
    state = _check_signature(path, signature, archive)
    user_inputs = [s["user_input"]["arg"] for s in signature["input_specs"] if "user_input" in s]
    if len(user_inputs) != 1 or "as_tensor" not in user_inputs[0]:
        raise EngineInputError(f"{path}: the model takes {len(user_inputs)} inputs; the toolkit feeds it one tensor")
    # a tuple, list or dict of tensors is flattened into several outputs: a loss that reads them
    # is the caller's (read_module_network's first forward says what it can use)
    outputs = [next(iter(o.get("user_output", {}).get("arg", {})), "nothing") for o in signature["output_specs"]]
    if not outputs or set(outputs) != {"as_tensor"}:
        what = ", ".join(o.removeprefix("as_") for o in outputs) or "nothing"
        raise EngineInputError(f"{path}: the model returns {what}; the toolkit reads tensors (one, or several)")
    if graph.get("custom_obj_values"):
        raise EngineInputError(f"{path}: the graph holds custom objects; only tensors are read")
    values = ("tensor_values", "sym_int_values", "sym_float_values", "sym_bool_values")
    for name in [name for kind in values for name in graph.get(kind, {})]:
        _check_name(path, name, IDENTIFIER, "value")
    for entry in graph_module.get("module_call_graph", []):
        _check_name(path, entry["fqn"] or "_", STATE_NAME, "submodule")
        for name in (entry.get("signature") or {}).get("forward_arg_names", []):
            _check_name(path, name, IDENTIFIER, "argument")
    for node in graph["nodes"]:
        _check_node(path, node, state)
    _check_tree(path, {"program": archive.program, "weights": archive.weights, "constants": archive.constants})
    return user_inputs[0]["as_tensor"]["name"]


def _check_signature(path, signature: dict, archive: Archive) -> set[str]:
    """The graph's names of its parameters, buffers and constants, once every kind is known and
    every name is plain."""
    state = set()
    for spec in signature["input_specs"]:
        kind = next(iter(spec))
        if kind == "user_input":
            continue
        if kind not in STATE_KINDS:
            raise EngineInputError(f"{path}: the graph has a {kind} input; only tensors and one input are read")
        _check_name(path, spec[kind][STATE_KINDS[kind]], STATE_NAME, kind.replace("_", " "))
        state.add(spec[kind]["arg"]["name"])
    for name in [*archive.weights, *archive.constants]:
        _check_name(path, name, STATE_NAME, "tensor")
    for spec in signature["output_specs"]:
        if "user_output" not in spec:
            what = next(iter(spec)).replace("_", " ")
            raise EngineInputError(
                f"{path}: the graph has a {what} output (exported in train mode?); export with {EXPORT_HOW}"
            )
    return state


def _check_name(path, name, pattern: re.Pattern, what: str) -> None:
    if not isinstance(name, str) or not pattern.fullmatch(name):
        plain = "a plain Python name" if pattern is IDENTIFIER else "plain ASCII without quotes or backslashes"
        raise EngineInputError(f"{path}: refused: {what} name {name!r} is not {plain}")


def _check_node(path, node: dict, state: set[str]) -> None:
    target, name = node["target"], node.get("name") or node["outputs"][0].get("as_tensor", {}).get("name")
    if not isinstance(target, str) or not ALLOWED_TARGET.fullmatch(target):
        raise EngineInputError(f"{path}: refused: node {name!r} calls {target!r}; only ATen operators are read")
    _check_name(path, name, IDENTIFIER, "node")
    op = target.split(".")[-2]
    for i, entry in enumerate(node["inputs"]):
        arg = entry["arg"]
        if {"as_graph", "as_custom_obj"} & set(arg):
            raise EngineInputError(f"{path}: refused: node {name!r} takes a {next(iter(arg))[3:]}; only tensors")
        _check_name(path, entry["name"], IDENTIFIER, "argument")
        if entry["name"] in ("training", "train") and arg.get("as_bool"):
            raise EngineInputError(
                f"{path}: node {name!r} ({op}) runs in training mode, so its output depends on the batch; "
                f"export the model in eval mode (with running statistics): {EXPORT_HOW}"
            )
        if i == 0 and op.endswith("_") and arg.get("as_tensor", {}).get("name") in state:
            raise EngineInputError(
                f"{path}: node {name!r} ({op}) changes {arg['as_tensor']['name']!r} at every call; "
                f"export the model in eval mode: {EXPORT_HOW}"
            )


def _items(tree):
    """Every (key, value) of every dict in a JSON tree."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield from item.items()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_tree(path, tree) -> None:
    """Every device named anywhere (tensor metadata, device arguments) is the CPU, and every
    symbolic size is plain arithmetic (torch reads it with sympy.sympify, an eval)."""
    for key, value in _items(tree):
        if key in ("device", "as_device") and isinstance(value, dict) and value.get("type") != "cpu":
            device = f"{value.get('type')}:{value.get('index')}" if value.get("index") is not None else ""
            raise EngineInputError(
                f"{path}: the graph puts tensors on {device or value.get('type')!r}; "
                "export it on the CPU (model.cpu() and CPU inputs)"
            )
        if key == "expr_str" and not _is_size_expression(value):
            raise EngineInputError(f"{path}: refused: the size expression {value!r} is not arithmetic on sizes")


def _is_size_expression(text) -> bool:
    """Only numbers, plain quoted words, operators, size symbols (s0, u3) and SIZE_NAMES: no
    attribute, subscript or other name, so nothing but those can be reached or called."""
    if not isinstance(text, str):
        return False
    at = 0
    while at < len(text):
        token = SIZE_TOKEN.match(text, at)
        if token is None:
            return False
        word = token.group()
        if (word[0].isalpha() or word[0] == "_") and word not in SIZE_NAMES and not SIZE_SYMBOL.fullmatch(word):
            return False
        at = token.end()
    return True


# ------------------------------------------------------------------ tensors, and torch's deserializer
def _tensors(path, z: zipfile.ZipFile, archive: Archive) -> tuple[dict, dict]:
    """The state_dict (parameters as nn.Parameter) and the constants, from raw bytes. Names that
    share one file (tied weights) share one tensor, as torch.export.load would give them."""
    by_file: dict[tuple, object] = {}

    def tensor(name: str, meta: dict, kind: str):
        key = (meta["_dir"], meta.get("path_name"), meta.get("is_param", False))
        if key not in by_file:
            value = torch.from_numpy(read_payload(path, z, name, meta, kind))
            if meta.get("is_param", False):
                requires_grad = bool(meta["tensor_meta"]["requires_grad"])
                if requires_grad and not (value.is_floating_point() or value.is_complex()):
                    raise EngineInputError(f"{path}: parameter {name!r} has dtype {value.dtype} and asks for gradients")
                value = torch.nn.Parameter(value, requires_grad=requires_grad)
            by_file[key] = value
        if list(by_file[key].shape) != [int(s["as_int"]) for s in meta["tensor_meta"]["sizes"]]:
            raise EngineInputError(f"{path}: tensor {name!r} is a view into another tensor's storage; not read")
        return by_file[key]

    state_dict = {name: tensor(name, meta, "parameter") for name, meta in archive.weights.items()}
    constants = {name: tensor(name, meta, "constant") for name, meta in archive.constants.items()}
    return state_dict, constants


def _deserialize(path, program: dict, state_dict: dict, constants: dict):
    """ep.module() in eval mode, from the checked program and the tensors read from bytes."""
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass

    try:
        serialized = _dict_to_dataclass(schema.ExportedProgram, _without_text(program))
        ep = ExportedProgramDeserializer().deserialize(serialized, state_dict, constants, None)
        module = ep.module()
    except Exception as e:  # noqa: BLE001 -- torch's deserializer fails with any error type
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise EngineInputError(
            f"{path}: the exported program does not deserialize ({type(e).__name__}: {first})"
        ) from None
    for node in module.graph.nodes:  # what the checked strings resolved to: ops, not other callables
        if node.op == "call_function" and not _allowed_callable(node.target):
            raise EngineInputError(f"{path}: refused: node {node.name!r} calls {node.target!r}")
        if node.op in ("call_module", "call_method"):
            raise EngineInputError(f"{path}: refused: node {node.name!r} is a {node.op}")
    _rewrite(module)
    # ep.module() makes eval() and train() raise; its graph is fixed at export (and was checked to
    # be in eval mode above), so eval() is the plain flag-setting one and callers may use it freely.
    del module.train, module.eval
    return module.eval()


def _rewrite(module) -> None:
    """The graph made to follow its parameters' float dtype, and its fused CPU attention made the
    math op (see the module's docstring); recompiled when anything changed."""
    graph = module.graph
    parameters = {name for name, p in module.named_parameters() if p.is_floating_point()}
    held = {name for name, _ in module.named_parameters()} | {name for name, _ in module.named_buffers()}
    attrs = [node for node in graph.nodes if node.op == "get_attr"]
    reference = next((node.target for node in attrs if node.target in parameters), None)
    changed = _math_attention(graph)
    if reference is not None:
        # ahead of every other attribute read, so that every cast may follow its constant's read
        first = next(node for node in graph.nodes if node.op != "placeholder")
        with graph.inserting_before(first):
            dtype = graph.call_function(getattr, (graph.get_attr(reference), "dtype"))
        changed |= _follow_dtype(module, graph, dtype, [node for node in attrs if node.target not in held])
        if not dtype.users:
            read = dtype.args[0]
            graph.erase_node(dtype)
            graph.erase_node(read)
    if changed:
        graph.lint()
        module.recompile()


def _follow_dtype(module, graph, dtype, constants) -> bool:
    """Every floating dtype argument replaced by the node ``dtype`` (the reference parameter's
    dtype at run time), every floating tensor constant cast to it. Whether anything changed."""
    changed = False
    floating = lambda a: isinstance(a, torch.dtype) and a.is_floating_point
    for node in [n for n in graph.nodes if n.op == "call_function" and n is not dtype]:
        found = []
        follow = lambda a: (found.append(a), dtype)[1] if floating(a) else a
        args, kwargs = torch.fx.node.map_aggregate(node.args, follow), torch.fx.node.map_aggregate(node.kwargs, follow)
        if found:
            node.args, node.kwargs = args, kwargs
            changed = True
    for node in constants:
        value = functools.reduce(getattr, node.target.split("."), module)
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            with graph.inserting_after(node):
                cast = graph.call_function(torch.ops.aten._to_copy.default, (node,), {"dtype": dtype})
            node.replace_all_uses_with(cast, delete_user_cb=lambda user: user is not cast)
            changed = True
    return changed


def _math_attention(graph) -> bool:
    """Each call of the fused CPU attention kernel whose second output (the log-sum-exp) is unused
    made a call of the math op; whether any was."""
    flash, math = (
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
        torch.ops.aten._scaled_dot_product_attention_math.default,
    )
    changed = False
    for node in [n for n in graph.nodes if n.op == "call_function" and n.target is flash]:
        if any(user.target is not _getitem or (user.args[1] != 0 and user.users) for user in node.users):
            continue
        for unused in [user for user in node.users if user.args[1] != 0]:  # an unpacked, unread lse
            graph.erase_node(unused)
        q, k, v, dropout_p, is_causal = (*node.args, *(0.0, False)[len(node.args) - 3 :])[:5]
        mask, scale = node.kwargs.get("attn_mask"), node.kwargs.get("scale")
        node.target = math
        node.args = (q, k, v, mask, node.kwargs.get("dropout_p", dropout_p), node.kwargs.get("is_causal", is_causal))
        node.kwargs = {"scale": scale}
        changed = True
    return changed


def _without_text(program: dict) -> dict:
    """The program without what only describes it: ``guards_code`` (Python source that
    ``ep.module()`` execs) and every node's metadata (stack traces, module paths and source
    functions, which the deserializer parses and resolves). Running the graph needs neither."""
    graph_module = program["graph_module"]
    nodes = [dict(node, metadata={}) for node in graph_module["graph"]["nodes"]]
    graph = dict(graph_module["graph"], nodes=nodes)
    return dict(program, guards_code=[], graph_module=dict(graph_module, graph=graph, metadata={}))


def _allowed_callable(target) -> bool:
    if isinstance(target, torch._ops.OpOverload):
        return target.namespace == "aten"
    name = f"{getattr(target, '__module__', None)}.{getattr(target, '__name__', None)}"  # _operator.getitem
    return bool(ALLOWED_TARGET.fullmatch(name))


def _dtype(path, code: int):
    from torch._export.serde.serialize import deserialize_scalar_type

    try:
        dtype = deserialize_scalar_type(code)
    except (KeyError, ValueError, TypeError):
        raise EngineInputError(
            f"{path}: the model's input has dtype code {code!r}, which is not a torch dtype"
        ) from None
    if dtype.is_complex or dtype == torch.bool:
        raise EngineInputError(f"{path}: the model's input has dtype {dtype}; real numbers or integers are read")
    return dtype
