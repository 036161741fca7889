"""Any network saved by ``torch.export.save`` (.pt2), as an ``nn.Module``, with nothing in the file run.

``torch.export.load`` is never called: it unpickles an archive's sample inputs, and any weight or
constant marked ``use_pickle``, with ``weights_only=False``. Here the archive's JSON program and
its raw tensor bytes are read (``engine.io.pt2_archive``) and handed to torch's own deserializer
(``ExportedProgramDeserializer``, as ``torch.export.pt2_archive._package`` calls it) as plain
tensors, with no sample inputs, so no pickle is ever loaded.

The JSON is checked first, because strings in it become Python source: ``ep.module()`` generates
its ``forward`` from the graph (a parameter named ``a"),exec("…`` is spliced into that code) and
``exec``s an archive's ``guards_code``. So before torch sees the program:

- every parameter, buffer and constant name is a dotted identifier, every value and argument
  name an identifier; ``guards_code`` and the nodes' metadata (stack traces, module paths) are
  dropped (the shape checks that matter are the graph's own input constraints, which
  ``ep.module()`` keeps);
- every op is an ATen operator or plain arithmetic on sizes, with no subgraphs or custom objects;
- every tensor and device argument is on the CPU;
- every symbolic size is arithmetic on size symbols (torch parses it with ``sympy.sympify``,
  which evals the string);
- no op runs in training mode (batch norm with batch statistics, dropout) or writes to a
  parameter or buffer: the module is evaluated as ``model.eval()`` would run it.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.io.pt2_archive import Archive, read_archive, read_payload

EXPORT_HOW = 'torch.export.export(model.eval(), (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))'
_ARITHMETIC = "getitem|add|sub|mul|floordiv|truediv|mod|neg|pow|eq|ne|lt|le|gt|ge"
ALLOWED_TARGET = re.compile(
    rf"torch\.ops\.aten\.\w+\.\w+|_operator\.({_ARITHMETIC})|torch\.sym_(float|int|max|min|not|ite|sqrt|sum)"
    r"|math\.(ceil|floor|trunc|sqrt)",
    re.ASCII,
)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DOTTED_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(\.([A-Za-z_][A-Za-z0-9_]*|[0-9]+))*")  # "0.weight"
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
            state_dict, constants = _tensors(path, z, archive)
    except EngineInputError:
        raise
    except (zipfile.BadZipFile, OSError, LookupError, TypeError, ValueError, AttributeError, StopIteration) as e:
        raise EngineInputError(f"{path}: not a readable torch.export archive ({type(e).__name__}: {e})") from None
    module = _deserialize(path, archive.program, state_dict, constants)
    meta = archive.program["graph_module"]["graph"]["tensor_values"][user_input]
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
    outputs = signature["output_specs"]
    if len(outputs) != 1 or "as_tensor" not in outputs[0].get("user_output", {}).get("arg", {}):
        raise EngineInputError(
            f"{path}: the model returns {len(outputs)} outputs ({', '.join(next(iter(o)) for o in outputs)}); "
            "the toolkit reads one tensor"
        )
    if graph.get("custom_obj_values"):
        raise EngineInputError(f"{path}: the graph holds custom objects; only tensors are read")
    values = ("tensor_values", "sym_int_values", "sym_float_values", "sym_bool_values")
    for name in [name for kind in values for name in graph.get(kind, {})]:
        _check_name(path, name, IDENTIFIER, "value")
    for entry in graph_module.get("module_call_graph", []):
        _check_name(path, entry["fqn"] or "_", DOTTED_NAME, "submodule")
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
        _check_name(path, spec[kind][STATE_KINDS[kind]], DOTTED_NAME, kind.replace("_", " "))
        state.add(spec[kind]["arg"]["name"])
    for name in [*archive.weights, *archive.constants]:
        _check_name(path, name, DOTTED_NAME, "tensor")
    for spec in signature["output_specs"]:
        if "user_output" not in spec:
            what = next(iter(spec)).replace("_", " ")
            raise EngineInputError(
                f"{path}: the graph has a {what} output (exported in train mode?); export with {EXPORT_HOW}"
            )
    return state


def _check_name(path, name, pattern: re.Pattern, what: str) -> None:
    if not isinstance(name, str) or not pattern.fullmatch(name):
        raise EngineInputError(f"{path}: refused: {what} name {name!r} is not a plain Python name")


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
                value = torch.nn.Parameter(value, requires_grad=bool(meta["tensor_meta"]["requires_grad"]))
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
    # ep.module() makes eval() and train() raise; its graph is fixed at export (and was checked to
    # be in eval mode above), so eval() is the plain flag-setting one and callers may use it freely.
    del module.train, module.eval
    return module.eval()


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

    dtype = deserialize_scalar_type(code)
    if dtype.is_complex or dtype == torch.bool:
        raise EngineInputError(f"{path}: the model's input has dtype {dtype}; real numbers or integers are read")
    return dtype
