"""Bad ``torch.export`` archives (.pt2), each made from a real exported archive's bytes.

A case is ``(name, make)``: ``make(raw, marker)`` returns the bad archive's bytes from the good
archive's ``raw`` bytes; a pickle it plants creates ``marker`` if anything unpickles it.
"""

from __future__ import annotations

import io
import json
import pickle
import warnings
import zipfile

from tests.files import Payload

WEIGHTS = "data/weights/model_weights_config.json"
CONSTANTS = "data/constants/model_constants_config.json"
PROGRAM = "models/model.json"
SAMPLE = "data/sample_inputs/model.pt"


# ------------------------------------------------------------------ zip plumbing
def members(raw: bytes) -> tuple[str, dict[str, bytes]]:
    """(top folder, {name after the top folder: bytes}) of an archive, in its order."""
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        top = z.namelist()[0].split("/")[0]
        return top, {n.split("/", 1)[1]: z.read(n) for n in z.namelist()}


def zipped(top: str, entries) -> bytes:
    """An archive of ``entries`` ([(name, bytes)], duplicates kept), stored uncompressed as torch writes it."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name, which is the point
        with zipfile.ZipFile(buffer, "w") as z:
            for name, content in entries:
                z.writestr(f"{top}/{name}", content)
    return buffer.getvalue()


def edited(edit):
    """A ``make`` that applies ``edit(members, marker)`` to the archive's members."""

    def make(raw, marker):
        top, m = members(raw)
        edit(m, marker)
        return zipped(top, m.items())

    return make


def edited_json(member: str, edit):
    """A ``make`` that applies ``edit(content, marker)`` to one JSON member (parsed)."""

    def change(m, marker):
        content = json.loads(m[member])
        edit(content, marker)
        m[member] = json.dumps(content).encode()

    return edited(change)


def regions(raw: bytes) -> dict[str, list[int]]:
    """Every byte of the zip by what it is: local headers, member data, central directory, end record."""
    out = {"header": [], "data": [], "directory": [], "end": []}
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        infos, directory = z.infolist(), z.start_dir
    for info in infos:
        at = info.header_offset
        names = int.from_bytes(raw[at + 26 : at + 28], "little")
        extra = int.from_bytes(raw[at + 28 : at + 30], "little")
        data = at + 30 + names + extra
        out["header"] += range(at, data)
        out["data"] += range(data, data + info.compress_size)
    end = raw.rfind(b"PK\x05\x06")
    out["directory"] = list(range(directory, end))
    out["end"] = list(range(end, len(raw)))
    return out


def spread(n: int, count: int) -> list[int]:
    """``count`` indices spread evenly over range(n), the first and last included."""
    if n <= count:
        return list(range(n))
    return sorted({round(i * (n - 1) / (count - 1)) for i in range(count)})


# ------------------------------------------------------------------ the generators
FLIPS = {"header": 50, "data": 70, "directory": 60, "end": 22}


def byte_flips() -> list:
    """One byte flipped (xor 0xFF) at positions spread over each region of the zip."""

    def flip(region, k):
        def make(raw, marker):
            positions = regions(raw)[region]
            chosen = spread(len(positions), FLIPS[region])
            at = positions[chosen[k % len(chosen)]]
            out = bytearray(raw)
            out[at] ^= 0xFF
            return bytes(out)

        return make

    return [(f"flip-{region}-{k}", flip(region, k)) for region, n in FLIPS.items() for k in range(n)]


def truncations(count: int = 70) -> list:
    """The archive cut short at offsets spread over its length (never its full length)."""

    def cut(k):
        def make(raw, marker):
            return raw[: spread(len(raw) - 1, count)[k]]

        return make

    return [(f"truncated-{k}", cut(k)) for k in range(count)]


UNKNOWN_TARGETS = [
    "torch.ops.aten.not_an_op.default",
    "torch.ops.aten.linear.no_such_overload",
    "torch.ops.custom.evil.default",
    "torch.ops.higher_order.cond",
    "builtins.eval",
    "os.system",
    "torch.ops.aten.linear.default; import os",
    "",
    "torch.ops.aten.sigmoid_.default",
    "torch.ops.aten.dropout.default",
    "torch.ops.aten.linear.default\n",
    None,
    42,
]


def unknown_ops(nodes: int = 3) -> list:
    """Each node of the graph calling something that is not its op."""

    def swap(i, target):
        return edited_json(PROGRAM, lambda p, _: p["graph_module"]["graph"]["nodes"][i].update(target=target))

    return [(f"op-node{i}-{t!r}", swap(i, t)) for i in range(nodes) for t in UNKNOWN_TARGETS]


LYING_NAMES = [
    "",
    "a\nb",
    'x"),exec("1',
    "0.weight.extra",
    "missing",
    7,
    None,
    "é",
    "   ",
    "a..b",
    "0\\weight",
    "x" * 5000,
]


def lying_names() -> list:
    """Tensor, parameter, value and node names that lie or that would be Python source."""

    def config_key(name):
        def edit(c, _):
            c["config"] = {(name if k == "0.weight" else k): v for k, v in c["config"].items()}

        return edited_json(WEIGHTS, edit)

    def parameter_name(name):
        def edit(p, _):
            p["graph_module"]["signature"]["input_specs"][0]["parameter"]["parameter_name"] = name

        return edited_json(PROGRAM, edit)

    def both(name):  # the config and the signature agree on the lie
        def edit(m, marker):
            c = json.loads(m[WEIGHTS])
            c["config"] = {(name if k == "0.weight" else k): v for k, v in c["config"].items()}
            m[WEIGHTS] = json.dumps(c).encode()
            p = json.loads(m[PROGRAM])
            p["graph_module"]["signature"]["input_specs"][0]["parameter"]["parameter_name"] = name
            m[PROGRAM] = json.dumps(p).encode()

        return edited(edit)

    def node_name(name):
        return edited_json(PROGRAM, lambda p, _: p["graph_module"]["graph"]["nodes"][1].update(name=name))

    def argument_name(name):
        def edit(p, _):
            p["graph_module"]["graph"]["nodes"][0]["inputs"][1]["name"] = name

        return edited_json(PROGRAM, edit)

    def value_name(name):  # the graph's input renamed in its values only
        def edit(p, _):
            values = p["graph_module"]["graph"]["tensor_values"]
            values[name if isinstance(name, str) else str(name)] = values.pop("input")

        return edited_json(PROGRAM, edit)

    kinds = {
        "config": config_key,
        "parameter": parameter_name,
        "both": both,
        "node": node_name,
        "argument": argument_name,
        "value": value_name,
    }
    return [(f"name-{kind}-{name!r:.20}", make(name)) for kind, make in kinds.items() for name in LYING_NAMES]


DTYPE_CODES = [*range(0, 30), -1, "8", None, 8.0, True, [8]]


def lying_dtypes() -> list:
    """A weight's dtype code, and the graph's input dtype, other than what the bytes hold."""

    def weight(code):
        return edited_json(WEIGHTS, lambda c, _: c["config"]["0.weight"]["tensor_meta"].update(dtype=code))

    def graph_input(code):
        return edited_json(
            PROGRAM, lambda p, _: p["graph_module"]["graph"]["tensor_values"]["input"].update(dtype=code)
        )

    out = [(f"dtype-weight-{code!r}", weight(code)) for code in DTYPE_CODES if code != 8]
    out += [(f"dtype-input-{code!r}", graph_input(code)) for code in (0, 1, 4, 6, 7, 9, 10, 11, 12, 99, -1, "8", None)]
    return out


def _ints(values):
    return [{"as_int": v} for v in values]


SIZES = [[], [4], [3, 4], [4, 3, 1], [12], [-4, -3], [0, 3], [10**6, 10**6], [2**62, 2], ["4", 3], [None, 3], [4.0, 3]]
SIZES += [[4, 2], [2**63, 1], [1, 12]]
STRIDES = [[1, 4], [3, 2], [0, 0], [-3, 1], [3], [], [1, 3], [3, 1, 1], ["3", 1]]
OFFSETS = [1, -1, 10**9, "0", None, 0.5]
LAYOUTS = [0, 1, 2, 8, None, "7"]
PATHS = [
    "weight_1",
    "weight_99",
    "../weight_0",
    "weight_0/../weight_1",
    "",
    "tensor_0",
    5,
    None,
    "../sample_inputs/model.pt",
]
PATHS += ["/etc/passwd", "weight_0\x00", "custom_obj_0"]


def lying_shapes() -> list:
    """A weight's sizes, strides, storage offset, layout or file that its bytes do not bear out."""

    def meta(field, value):
        def edit(c, _):
            tm = c["config"]["0.weight"]["tensor_meta"]
            tm[field] = _ints(value) if field in ("sizes", "strides") else value
            if field == "storage_offset":
                tm[field] = {"as_int": value}

        return edited_json(WEIGHTS, edit)

    def path_name(value):
        return edited_json(WEIGHTS, lambda c, _: c["config"]["0.weight"].update(path_name=value))

    def graph_sizes(value):  # the graph's own record of the weight's shape
        def edit(p, _):
            p["graph_module"]["graph"]["tensor_values"]["p_0_weight"]["sizes"] = _ints(value)

        return edited_json(PROGRAM, edit)

    out = [(f"sizes-{v}", meta("sizes", v)) for v in SIZES]
    out += [(f"strides-{v}", meta("strides", v)) for v in STRIDES]
    out += [(f"offset-{v!r}", meta("storage_offset", v)) for v in OFFSETS]
    out += [(f"layout-{v!r}", meta("layout", v)) for v in LAYOUTS]
    out += [(f"path-{v!r}", path_name(v)) for v in PATHS]
    out += [(f"graph-sizes-{v}", graph_sizes(v)) for v in ([3, 4], [4], [12], [4, 3, 1], [0, 3])]
    out += [(f"sizes-shared-file-{i}", edited_json(WEIGHTS, _tie(i))) for i in (1, 2, 3)]
    return out


def _tie(i):
    """Weight 0's config pointing at weight ``i``'s file (a different tensor's bytes)."""

    def edit(c, _):
        other = [k for k in c["config"]][i]
        c["config"]["0.weight"]["path_name"] = c["config"][other]["path_name"]

    return edit


def _last(config: dict) -> dict:
    """The last tensor's meta in a weights config (a bias, in the models here)."""
    return list(config.values())[-1]


def _payload(marker) -> bytes:
    return pickle.dumps(Payload(marker))


def _torch_save_payload(marker) -> bytes:
    """A torch.save file (a zip holding data.pkl) whose pickle runs the payload."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("archive/data.pkl", _payload(marker))
        z.writestr("archive/version", b"3\n")
    return buffer.getvalue()


def pickled_entries(weights: int = 4) -> list:
    """A pickle (that creates ``marker`` when run) in every slot the archive has: its sample inputs,
    each weight (flagged ``use_pickle``, and unflagged), a constant, a custom object, every JSON
    member, the small metadata files, and a member named as torch's own pickles are."""
    out = []
    for payload_kind, payload in (("pickle", _payload), ("torch.save", _torch_save_payload)):

        def sample(m, marker, payload=payload):
            m[SAMPLE] = payload(marker)

        out.append((f"{payload_kind}-sample-inputs", edited(sample)))
        for i in range(weights):

            def flagged(m, marker, i=i, payload=payload):
                c = json.loads(m[WEIGHTS])
                name = list(c["config"])[i]
                c["config"][name]["use_pickle"] = True
                m[WEIGHTS] = json.dumps(c).encode()
                m["data/weights/" + c["config"][name]["path_name"]] = payload(marker)

            def unflagged(m, marker, i=i, payload=payload):
                c = json.loads(m[WEIGHTS])
                m["data/weights/" + c["config"][list(c["config"])[i]]["path_name"]] = payload(marker)

            def no_flag(m, marker, i=i, payload=payload):  # the flag missing: torch's default is a pickle
                c = json.loads(m[WEIGHTS])
                name = list(c["config"])[i]
                del c["config"][name]["use_pickle"]
                m[WEIGHTS] = json.dumps(c).encode()
                m["data/weights/" + c["config"][name]["path_name"]] = payload(marker)

            out += [(f"{payload_kind}-weight{i}-flagged", edited(flagged))]
            out += [(f"{payload_kind}-weight{i}-unflagged", edited(unflagged))]
            out += [(f"{payload_kind}-weight{i}-no-flag", edited(no_flag))]

        for use_pickle in (True, False):

            def constant(m, marker, payload=payload, use_pickle=use_pickle):
                meta = dict(_last(json.loads(m[WEIGHTS])["config"]), path_name="tensor_0", use_pickle=use_pickle)
                meta["is_param"] = False
                c = json.loads(m[CONSTANTS])
                c["config"]["extra"] = meta
                m[CONSTANTS] = json.dumps(c).encode()
                m["data/constants/tensor_0"] = payload(marker)

            out.append((f"{payload_kind}-constant-use_pickle={use_pickle}", edited(constant)))

        def custom_object(m, marker, payload=payload):
            meta = dict(_last(json.loads(m[WEIGHTS])["config"]), path_name="custom_obj_0", use_pickle=False)
            c = json.loads(m[CONSTANTS])
            c["config"]["obj"] = meta
            m[CONSTANTS] = json.dumps(c).encode()
            m["data/constants/custom_obj_0"] = payload(marker)
            p = json.loads(m[PROGRAM])
            p["graph_module"]["graph"]["custom_obj_values"] = {"obj": {"name": "obj"}}
            m[PROGRAM] = json.dumps(p).encode()

        def custom_input(m, marker, payload=payload):
            p = json.loads(m[PROGRAM])
            specs = p["graph_module"]["signature"]["input_specs"]
            specs.insert(0, {"custom_obj": {"arg": {"name": "obj"}, "custom_obj_name": "obj"}})
            m[PROGRAM] = json.dumps(p).encode()
            m["data/constants/custom_obj_0"] = payload(marker)

        out += [(f"{payload_kind}-custom-object", edited(custom_object))]
        out += [(f"{payload_kind}-custom-object-input", edited(custom_input))]
        for member in (PROGRAM, WEIGHTS, CONSTANTS, "byteorder", "archive_version", "archive_format"):

            def replace(m, marker, member=member, payload=payload):
                m[member] = payload(marker)

            out.append((f"{payload_kind}-as-{member}", edited(replace)))
        for extra in ("data.pkl", "data/weights/data.pkl", "models/model.pt", "data/constants/constant_0.pt"):

            def add(m, marker, extra=extra, payload=payload):
                m[extra] = payload(marker)

            out.append((f"{payload_kind}-extra-{extra}", edited(add)))
    return out


def duplicated_and_missing() -> list:
    """Each member left out; each member twice (the same bytes, or the second copy another's);
    a second program; the top folder split in two."""
    names = [PROGRAM, WEIGHTS, CONSTANTS, SAMPLE, "archive_format", "archive_version", "byteorder"]
    names += [".data/version", ".data/serialization_id"] + [f"data/weights/weight_{i}" for i in range(4)]

    def drop(name):
        return edited(lambda m, _: m.pop(name))

    def twice(name, other):
        def make(raw, marker):
            top, m = members(raw)
            second = m[name] if other is None else (_payload(marker) if other == "pickle" else other)
            return zipped(top, [*m.items(), (name, second)])

        return make

    out = [(f"missing-{n}", drop(n)) for n in names]
    out += [(f"twice-{n}", twice(n, None)) for n in names]
    out += [(f"twice-pickle-{n}", twice(n, "pickle")) for n in names]
    out += [(f"twice-empty-{n}", twice(n, b"")) for n in names]

    def second_program(m, _):
        m["models/other.json"] = m[PROGRAM]

    def second_config(m, _):
        m["data/weights/other_weights_config.json"] = m[WEIGHTS]

    def two_tops(raw, marker):
        return _two_tops(*members(raw))

    out += [("second-program", edited(second_program)), ("second-config", edited(second_config))]
    out += [("two-top-folders", two_tops), ("big-endian", edited(lambda m, _: m.update(byteorder=b"big")))]
    return out


def _two_tops(top, m):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for i, (name, content) in enumerate(m.items()):
            z.writestr(f"{top}{i % 2}/{name}", content)
    return buffer.getvalue()


GARBAGE_JSON = [b"", b"{", b"null", b"[]", b"42", b'"x"', b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, b"NaN"]
GARBAGE_JSON += [b'{"config": []}', b'{"config": {"0.weight": 1}}', b'{"graph_module": null}']


def garbage_json() -> list:
    """Each JSON member replaced by something that is not what it should be."""

    def replace(member, content):
        return edited(lambda m, _: m.update({member: content}))

    return [
        (f"json-{member.rsplit('/', 1)[-1]}-{i}", replace(member, content))
        for member in (PROGRAM, WEIGHTS, CONSTANTS)
        for i, content in enumerate(GARBAGE_JSON)
    ]


def not_archives() -> list:
    """Files that are not archives at all, under the .pt2 name."""
    import numpy as np

    def npz(raw, marker):
        buffer = io.BytesIO()
        np.savez(buffer, X=np.zeros(3))
        return buffer.getvalue()

    return [
        ("empty-file", lambda raw, marker: b""),
        ("text", lambda raw, marker: b"not a zip at all\n"),
        ("empty-zip", lambda raw, marker: zipped("x", [])),
        ("npz", npz),
        ("raw-pickle", lambda raw, marker: _payload(marker)),
        ("torch-save", lambda raw, marker: _torch_save_payload(marker)),
        ("zip-of-zip", lambda raw, marker: zipped("outer", [("inner.pt2", raw)])),
        ("doubled", lambda raw, marker: raw + raw),
        ("junk-prefix", lambda raw, marker: b"\0" * 100 + raw),
    ]


def all_cases() -> list:
    cases = [
        *byte_flips(),
        *truncations(),
        *unknown_ops(),
        *lying_names(),
        *lying_dtypes(),
        *lying_shapes(),
        *pickled_entries(),
        *duplicated_and_missing(),
        *garbage_json(),
        *not_archives(),
    ]
    names = [name for name, _ in cases]
    assert len(set(names)) == len(names), "case names must be distinct"
    return cases


def state_dict_files() -> list:
    """Bad ``.pt`` state_dict files: raw pickles of every protocol (of plain data, and of a payload),
    torch.save archives holding a payload, legacy (non-zip) torch.save files, and files cut short.
    ``make(good, marker)`` takes a good ``torch.save``'d state_dict's bytes."""
    import torch

    def legacy(obj):
        buffer = io.BytesIO()
        torch.save(obj, buffer, _use_new_zipfile_serialization=False)
        return buffer.getvalue()

    out = []
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        out.append((f"pt-pickle-{protocol}", lambda good, marker, p=protocol: pickle.dumps({"w": [1.0]}, protocol=p)))
        out.append((f"pt-payload-{protocol}", lambda good, marker, p=protocol: pickle.dumps(Payload(marker), p)))
    out += [
        ("pt-torch-save-payload", lambda good, marker: _torch_save_payload(marker)),
        ("pt-legacy-tensors", lambda good, marker: legacy({"0.weight": torch.zeros(2, 2)})),
        ("pt-legacy-payload", lambda good, marker: legacy(Payload(marker))),
        ("pt-empty", lambda good, marker: b""),
        ("pt-text", lambda good, marker: b"0.weight: [1, 2]\n"),
        ("pt-not-a-dict", lambda good, marker: _saved(torch.zeros(3))),
        ("pt-dict-of-text", lambda good, marker: _saved({"0.weight": "x"})),
        ("pt-nested", lambda good, marker: _saved({"state": {"0.weight": torch.zeros(2)}})),
    ]
    out += [(f"pt-cut-{k}", lambda good, marker, k=k: good[: k * len(good) // 10]) for k in range(10)]
    return out


def _saved(obj) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def mlp():
    """The factory of the exported MLP's module, for its state_dict files."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
