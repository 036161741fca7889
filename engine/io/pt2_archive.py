"""The parts of a ``torch.export.save`` archive (.pt2) that hold no pickle: JSON and raw tensor bytes.

An archive is a zip. Only these members are ever read:

- ``<archive>/models/<model>.json``: the serialized ExportedProgram (graph, signature, shapes);
- ``<archive>/data/weights/<model>_weights_config.json`` and
  ``<archive>/data/constants/<model>_constants_config.json``: each tensor's file, dtype, shape and
  strides, with a ``use_pickle`` flag;
- the raw bytes those configs name, read with ``np.frombuffer``.

Everything else is left unread: ``data/sample_inputs/<model>.pt`` is always a pickle, and a
weight or constant stored as a pickle (``use_pickle``, or a custom or opaque object) is refused
before its bytes are read.
"""

from __future__ import annotations

import json
import math
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.npz import MAX_ARCHIVE_BYTES, MAX_ARRAY_BYTES

# torch._export.serde.schema.ScalarType codes of the dtypes numpy reads exactly, little-endian
SCALAR_DTYPES = {1: "u1", 2: "i1", 3: "<i2", 4: "<i4", 5: "<i8", 6: "<f2", 7: "<f4", 8: "<f8", 12: "?"}
STRIDED_LAYOUT = 7  # torch._export.serde.schema.Layout.Strided
# What reading a damaged archive raises besides bad JSON: a bad zip or CRC, a field zipfile does not
# implement (a flipped version or compression method), a corrupt or short stream, JSON nested past
# Python's recursion limit.
ARCHIVE_DAMAGE = (zipfile.BadZipFile, OSError, NotImplementedError, zlib.error, EOFError, RecursionError)


@dataclass(frozen=True)
class Archive:
    """One exported program's JSON, and its tensors' configs: name → payload meta, each meta
    with ``_dir``, the archive folder its ``path_name`` is in."""

    program: dict
    weights: dict[str, dict]
    constants: dict[str, dict]


def read_archive(path, z: zipfile.ZipFile) -> Archive:
    """The one exported program in ``z``, little-endian, with its weights' and constants' configs."""
    names = z.namelist()
    models = [n for n in names if n.split("/")[1:2] == ["models"] and n.endswith(".json")]
    configs = [n for n in names if n.endswith("/data/weights/model_weights_config.json")]
    if len(models) != 1 or len(configs) != 1:
        raise EngineInputError(f"{path}: expected one exported model in the archive, found {len(models)}")
    total = sum(info.file_size for info in z.infolist())
    if total > MAX_ARCHIVE_BYTES:  # declared sizes, read from the zip's directory: nothing unpacked yet
        raise EngineInputError(
            f"{path}: the archive unpacks to {total:.3g} bytes; the limit is {MAX_ARCHIVE_BYTES:.3g}"
        )
    byteorder = [n for n in names if n.endswith("/byteorder")]
    if byteorder and z.read(byteorder[0]).strip() != b"little":
        raise EngineInputError(f"{path}: weights are big-endian; only little-endian archives are read")
    constants = [n for n in names if n.endswith("/data/constants/model_constants_config.json")]
    return Archive(
        json.loads(z.read(models[0])),
        _config(z, configs[0]),
        _config(z, constants[0]) if constants else {},
    )


def _config(z: zipfile.ZipFile, member: str) -> dict[str, dict]:
    folder = member.rsplit("/", 1)[0]
    return {name: dict(meta, _dir=folder) for name, meta in json.loads(z.read(member))["config"].items()}


def read_payload(path, z: zipfile.ZipFile, name: str, meta: dict, kind: str = "parameter") -> np.ndarray:
    """The tensor ``name`` (a ``kind``: parameter, buffer, constant) from its raw bytes, in its own
    dtype and shape (a writable copy). Refused unread: a pickle, a non-tensor constant, a dtype
    numpy cannot hold, a layout other than strided and contiguous, a size past MAX_ARRAY_BYTES
    or other than its bytes'."""
    if meta.get("use_pickle", True) or not str(meta.get("path_name", "")).startswith(("weight_", "tensor_")):
        raise EngineInputError(
            f"{path}: refused: {kind} {name!r} is stored as a pickle; only raw tensor bytes are read from .pt2 archives"
        )
    tm = meta["tensor_meta"]
    if tm["dtype"] not in SCALAR_DTYPES:
        raise EngineInputError(f"{path}: tensor {name!r} has dtype code {tm['dtype']}, which is not read")
    shape = tuple(int(s["as_int"]) for s in tm["sizes"])
    strides = tuple(int(s["as_int"]) for s in tm["strides"])
    contiguous = tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))
    if tm.get("layout", STRIDED_LAYOUT) != STRIDED_LAYOUT or int(tm["storage_offset"]["as_int"]) != 0:
        raise EngineInputError(f"{path}: tensor {name!r} is not stored contiguously")
    if strides != contiguous and math.prod(shape) > 1:
        raise EngineInputError(f"{path}: tensor {name!r} is not stored contiguously")
    member, dtype = f"{meta['_dir']}/{meta['path_name']}", np.dtype(SCALAR_DTYPES[tm["dtype"]])
    count = math.prod(shape)
    if min(shape, default=0) < 0 or count * dtype.itemsize > MAX_ARRAY_BYTES:
        raise EngineInputError(
            f"{path}: tensor {name!r} declares shape {shape}; the limit is {MAX_ARRAY_BYTES:.3g} bytes per array"
        )
    if z.getinfo(member).file_size != count * dtype.itemsize:  # checked before the bytes are read
        raise EngineInputError(
            f"{path}: tensor {name!r} has {z.getinfo(member).file_size} bytes; shape {shape} needs "
            f"{count * dtype.itemsize}"
        )
    return np.frombuffer(z.read(member), dtype=dtype, count=count).reshape(shape).copy()
