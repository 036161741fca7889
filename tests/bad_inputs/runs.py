"""Bad run folders, each made from a real recorded run (``record``) by one change.

A ``RunCase`` changes a copy of the run's files and says what ``open_run`` must still give back:
the scalar steps, the checkpoints (bit for bit), and a word its ``problems`` must hold (or that it
must refuse the folder). ``lock_cases`` are ``writer.lock`` files a second ``Recorder`` meets.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import socket
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.files import Payload

MANIFEST, SCALARS, SHARPNESS = "manifest.json", "scalars.jsonl", "sharpness.jsonl"
STEPS = 6  # recorded steps: 0 .. 5
EVERY = 2  # a checkpoint at steps 0, 2, 4
CHECKPOINT_STEPS = (0, 2, 4)


def checkpoint(step: int) -> str:
    return f"checkpoints/step_{step:09d}.npz"


def invariants(step: int) -> str:
    return f"invariants/step_{step:09d}.npz"


def run_model():
    """The factory of the recorded run's model (``--model tests.bad_inputs.runs:run_model``)."""
    from torch import nn

    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def record(folder: Path):
    """A small run: an MLP's 6 SGD steps, a checkpoint every 2, the sharpness every 3. Returns
    the model (at its last step) with its data."""
    import torch
    from torch import nn

    from engine.runs import Recorder

    torch.manual_seed(0)
    model = run_model()
    X, Y = torch.randn(8, 3), torch.randint(0, 2, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(folder, model, every=EVERY, sharpness_every=3, sharpness_data=(X, Y)) as rec:
        for _ in range(STEPS):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(X), Y)
            loss.backward()
            opt.step()
            rec.step(loss=loss, lr=0.1)
    return model, X, Y


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of a folder by its relative name."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def restore(folder: Path, files: dict[str, bytes]) -> None:
    """``folder`` made to hold exactly ``files``."""
    if folder.exists():
        shutil.rmtree(folder)
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(content)


@dataclass
class RunCase:
    name: str
    change: object  # change(folder, files) applies the damage to a fresh copy
    steps: int = STEPS  # scalar steps that must come back (the first ``steps``)
    checkpoints: tuple = CHECKPOINT_STEPS  # steps whose checkpoint must come back exact
    problem: str | None = None  # a word ``problems`` must hold
    refuse: bool = False  # open_run must refuse the folder
    extra: dict = field(default_factory=dict)


def _write(name: str, content):
    def change(folder, files):
        path = folder / name
        if content is None:
            path.unlink()
        else:
            path.write_bytes(content if isinstance(content, bytes) else content(files[name]))

    return change


def _manifest(edit):
    def change(folder, files):
        manifest = json.loads(files[MANIFEST])
        edit(manifest)
        (folder / MANIFEST).write_text(json.dumps(manifest))

    return change


def truncated_manifests(size: int) -> list[RunCase]:
    """The manifest cut at every byte: its checkpoints are then taken from the files present."""
    cases = []
    for n in range(size):
        cases.append(RunCase(f"{MANIFEST}-cut-{n}", _write(MANIFEST, lambda b, n=n: b[:n]), problem=MANIFEST))
    cases[-1].problem = None  # all but the last newline: the whole JSON
    return cases


def truncated_lines(name: str, content: bytes) -> list[RunCase]:
    """A JSON-lines file cut at every byte: the complete lines before the cut come back."""
    cases = []
    for n in range(len(content)):
        lines = content[:n].count(b"\n")
        steps = lines if name == SCALARS else STEPS
        cases.append(RunCase(f"{name}-cut-{n}", _write(name, lambda b, n=n: b[:n]), steps=steps))
    return cases


GARBAGE_LINES = [
    b"{",
    b"[]",
    b"null",
    b"1",
    b'"x"',
    b"\xff\xfe{}",
    b"NaN",
    b"{" * 5000,
    b'{"step": 1' + b"0" * 400 + b"}",
    b"\x00\x00\x00",
    b"}{",
    b'{"step": "a"}',
    b'{"step": 1.5, "loss": "x"}',
    b'{"loss": [1, 2]}',
]


def garbage_lines() -> list[RunCase]:
    """A damaged line put among the scalars' or the sharpness's lines: the others still come back."""
    cases = []
    for name in (SCALARS, SHARPNESS):
        for where in (0, 2, -1):
            for i, line in enumerate(GARBAGE_LINES):

                def insert(b, where=where, line=line):
                    lines = b.split(b"\n")[:-1]
                    lines.insert(where if where >= 0 else len(lines), line)
                    return b"\n".join(lines) + b"\n"

                records = line.startswith(b'{"')  # a JSON object: read as a record (steps it lacks are skipped)
                word = None if records else name  # a record without a step (or an int64 one) is skipped
                cases.append(RunCase(f"{name}-garbage-{where}-{i}", _write(name, insert), problem=word))
    return cases


def manifest_lies() -> list[RunCase]:
    """Manifests of other versions and formats, and manifests whose checkpoints, state or layers lie."""
    cases = []
    for version in (2, 10**100, "1", None, 1.5, [], {}):
        cases.append(
            RunCase(f"version-{version!r}", _manifest(lambda m, v=version: m.update(version=v)), problem="version")
        )
    for version in (0, -1):  # older versions than this app's: read as they are
        cases.append(RunCase(f"version-{version!r}", _manifest(lambda m, v=version: m.update(version=v))))
    for fmt in ("other", None, 1, ""):
        cases.append(RunCase(f"format-{fmt!r}", _manifest(lambda m, f=fmt: m.update(format=f)), problem=MANIFEST))
    cases.append(RunCase("format-missing", _manifest(lambda m: m.pop("format")), problem=MANIFEST))
    for key in ("checkpoints", "state", "layers"):
        for value in (None, 1, "x", {"a": 1}, [1], [None]):
            case = RunCase(f"{key}-{value!r}", _manifest(lambda m, k=key, v=value: m.update({k: v})), problem=MANIFEST)
            if key == "layers" and value == [1]:
                case.problem = MANIFEST
            cases.append(case)

    def entry(i, **changes):
        def edit(m):
            m["checkpoints"][i].update(changes)
            for k in [k for k, v in changes.items() if v is ...]:
                del m["checkpoints"][i][k]

        return _manifest(edit)

    for field_, values in {
        "step": ["0", 1.5, None, ..., -1, 10**30, True],
        "state": [None, 3, ..., "", "checkpoints", "../outside.npz", "/etc/passwd", SCALARS, invariants(2)],
        "invariants": [3, "checkpoints/missing.npz", checkpoint(2), SCALARS, "/dev/zero", ""],
    }.items():
        for value in values:
            cases.append(RunCase(f"entry-{field_}-{value!r}", entry(1, **{field_: value}), checkpoints=(0,)))
    cases.append(RunCase("entries-reversed", _manifest(lambda m: m["checkpoints"].reverse())))
    cases.append(RunCase("entries-twice", _manifest(lambda m: m["checkpoints"].extend(m["checkpoints"]))))
    cases.append(RunCase("entry-dropped", _manifest(lambda m: m["checkpoints"].pop(1)), checkpoints=(0, 4)))
    listed = dict(step=3, state=checkpoint(3), invariants=invariants(3))
    cases.append(RunCase("entry-missing-file", entry(1, **listed), checkpoints=(0,), problem=checkpoint(3)))

    def schema(edit):
        return _manifest(lambda m: edit(m["state"]))

    for name, edit in {
        "dtype-float64": lambda s: s["0.weight"].update(dtype="float64"),
        "dtype-bfloat16": lambda s: s["0.weight"].update(dtype="bfloat16"),
        "dtype-float8": lambda s: s["0.bias"].update(dtype="float8_e4m3fn"),
        "dtype-nonsense": lambda s: s["0.weight"].update(dtype="complex1024"),
        "shape": lambda s: s["0.weight"].update(shape=[3, 4]),
        "shape-missing": lambda s: s["0.weight"].pop("shape"),
        "extra-tensor": lambda s: s.update(extra={"dtype": "float32", "shape": [1]}),
        "missing-tensor": lambda s: s.pop("2.bias"),
        "renamed": lambda s: s.update({"0.w": s.pop("0.weight")}),
        "empty": lambda s: s.clear(),
    }.items():
        cases.append(RunCase(f"state-{name}", schema(edit), checkpoints=()))
    for name, layers in {"unknown": ["nope"], "two": ["0.weight", "2.weight"], "none": []}.items():
        cases.append(RunCase(f"layers-{name}", _manifest(lambda m, v=layers: m.update(layers=v))))
    cases.append(RunCase("manifest-a-folder", _folder_for(MANIFEST), problem=MANIFEST))
    cases.append(RunCase("manifest-missing", _write(MANIFEST, None)))
    cases.append(RunCase("manifest-pickle", _write(MANIFEST, lambda b: b""), problem=MANIFEST))
    return cases


def _folder_for(name):
    def change(folder, files):
        (folder / name).unlink()
        (folder / name).mkdir()

    return change


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _object_npz(marker) -> bytes:
    """An .npz whose one array is an object array holding a Payload (a pickle in the .npy)."""
    buffer = io.BytesIO()
    array = np.empty(1, dtype=object)
    array[0] = Payload(marker)
    with zipfile.ZipFile(buffer, "w") as z:
        member = io.BytesIO()
        np.lib.format.write_array(member, array, allow_pickle=True)
        z.writestr("0.weight.npy", member.getvalue())
    return buffer.getvalue()


def _huge_npz() -> bytes:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("0.weight.npy", header.getvalue() + b"\0" * 64)
    return buffer.getvalue()


def damaged_checkpoints(marker) -> list[RunCase]:
    """Each checkpoint or invariants file missing, or replaced by something else: a pickle, an object
    array, an empty or text file, a cut or flipped archive, other tensors, a folder."""
    cases = []
    for i, step in enumerate(CHECKPOINT_STEPS):
        before = CHECKPOINT_STEPS[:i]
        others = tuple(s for s in CHECKPOINT_STEPS if s != step)
        name = checkpoint(step)
        cases.append(RunCase(f"missing-{name}", _write(name, None), checkpoints=before, problem=name))
        cases.append(
            RunCase(
                f"missing-{invariants(step)}",
                _write(invariants(step), None),
                checkpoints=before,
                problem=invariants(step),
            )
        )
        cases.append(RunCase(f"folder-{name}", _folder_for(name), checkpoints=before, problem=name))
        replacements = {
            "pickle": pickle.dumps(Payload(marker)),
            "object-array": _object_npz(marker),
            "empty": b"",
            "text": b"not an archive\n",
            "huge-header": _huge_npz(),
            "other-tensors": _npz(a=np.zeros(3, np.float32)),
            "float64": None,  # filled below from the real file
            "missing-tensor": None,
            "extra-tensor": None,
        }
        for what, content in replacements.items():
            if content is None:
                content = _edited_checkpoint(what)
            cases.append(RunCase(f"{what}-{name}", _write(name, content), checkpoints=others))
        for k in range(12):
            cases.append(
                RunCase(f"cut-{k}-{name}", _write(name, lambda b, k=k: b[: k * len(b) // 12]), checkpoints=others)
            )
        for k in range(12):

            def flip(b, k=k):
                out = bytearray(b)
                out[k * (len(b) - 1) // 11] ^= 0xFF
                return bytes(out)

            cases.append(RunCase(f"flip-{k}-{name}", _write(name, flip), checkpoints=others))
        for what in ("pickle", "text", "cut"):
            content = {"pickle": pickle.dumps(Payload(marker)), "text": b"x", "cut": lambda b: b[: len(b) // 2]}[what]
            cases.append(RunCase(f"{what}-{invariants(step)}", _write(invariants(step), content)))
    return cases


def _edited_checkpoint(what):
    def edit(b):
        with np.load(io.BytesIO(b)) as z:
            arrays = {k: z[k] for k in z.files}
        if what == "float64":
            arrays["0.weight"] = arrays["0.weight"].astype(np.float64)
        elif what == "missing-tensor":
            arrays.pop("2.bias")
        else:
            arrays["extra"] = np.zeros(2, np.float32)
        return _npz(**arrays)

    return edit


def not_runs(marker) -> list[tuple[str, object]]:
    """Paths that are not run folders: (name, make(tmp) -> path)."""

    def folder_with(files):
        def make(tmp):
            restore(tmp, files)
            return tmp

        return make

    def a_file(tmp):
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "file").write_text("x")
        return tmp / "file"

    return [
        ("missing", lambda tmp: tmp / "nothing"),
        ("a-file", a_file),
        ("empty-folder", folder_with({})),
        ("other-files", folder_with({"notes.txt": b"x", "data.npz": _npz(X=np.zeros(2))})),
        ("only-checkpoints", folder_with({checkpoint(0): _npz(a=np.zeros(2))})),
        ("preset-as-manifest", folder_with({MANIFEST: b'{"title": "x", "workspace": "topology"}'})),
        ("pickle-as-manifest", folder_with({MANIFEST: pickle.dumps(Payload(marker))})),
        ("garbage-scalars-only", folder_with({SCALARS: b"\xff\n{\n"})),
        ("nul-in-name", lambda tmp: str(tmp / "a\x00b")),
        ("not-a-path", lambda tmp: 42),
        ("none", lambda tmp: None),
    ]


def lock_cases() -> list[tuple[str, object, bool]]:
    """(name, lock file bytes, whether a live writer holds it): live writers on this host and
    another, stale locks of dead or impossible pids, and lock files that are not locks."""
    host = socket.gethostname()

    def lock(**record):
        return json.dumps({"host": host, "started": "2026-01-01T00:00:00", **record}).encode()

    return [
        ("live-self", lock(pid=os.getpid()), True),
        ("live-parent", lock(pid=os.getppid()), True),
        ("live-init", lock(pid=1), True),
        ("other-host", json.dumps({"pid": 12345, "host": host + "-elsewhere", "started": "x"}).encode(), True),
        ("dead-pid", lock(pid=2**22 + 12345), False),
        ("pid-zero", lock(pid=0), False),
        ("pid-negative", lock(pid=-5), False),
        ("pid-text", lock(pid="123"), False),
        ("pid-missing", json.dumps({"host": host}).encode(), False),
        ("empty", b"", False),
        ("garbage", b"\xff\xfe\x00", False),
        ("a-list", b"[1, 2]", False),
        ("cut", lock(pid=os.getpid())[:10], False),
    ]
