"""Files the tests write or read back: hostile archives and a sweep's outputs as bytes."""

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np


class Payload:
    """Unpickled, it creates the file ``marker``: proof that a pickle ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def pickled_pt2(good: Path, evil: Path, marker) -> Path:
    """``good`` (a torch.export archive) rewritten with its first weight stored as a pickle of a
    ``Payload``: a reader that unpickles it creates ``marker``."""
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(evil, "w") as dst:
        for item in src.infolist():
            content = src.read(item)
            if item.filename.endswith("model_weights_config.json"):
                config = json.loads(content)
                config["config"]["0.weight"]["use_pickle"] = True
                content = json.dumps(config).encode()
            elif item.filename.endswith("weights/weight_0"):
                content = pickle.dumps(Payload(marker))
            dst.writestr(item, content)
    return evil


def output_bytes(out_dir: Path) -> dict:
    """A sweep's outputs: the JSON files' bytes and every .npz array's bytes (a zip stamps its
    write time, so not the file's)."""
    out = {}
    for p in sorted(Path(out_dir).iterdir()):
        if p.suffix == ".json":
            out[p.name] = p.read_bytes()
        elif p.suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                out.update({f"{p.name}:{k}": (z[k].dtype.str, z[k].shape, z[k].tobytes()) for k in z.files})
    return out


def assert_landscape_refuses(cases: dict, tmp_path, capsys) -> None:
    """Each of ``cases`` ({name: (argv, message)}) run as ``main.py landscape ARGV --out DIR``
    exits 2 with one stderr line holding ``message``, and writes nothing."""
    from landscape_lens import cli

    for case, (argv, message) in cases.items():
        out = tmp_path / "out"
        status = cli.main(["landscape", *argv, "--out", str(out)], prog="main.py")
        err = capsys.readouterr().err
        assert status == 2, (case, err)
        assert len(err.strip().splitlines()) == 1 and message in err, (case, err)
        assert not out.exists(), case
