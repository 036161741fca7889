"""One reader for a saved MLP of any format the app takes; the file's suffix picks it.

``.npz`` (engine.io.netfile) carries the network and its data; a PyTorch state_dict
(engine.io.torch_state) needs its activation and data file, a ``torch.export`` archive
(engine.io.pt2) its data file. Paper B's inspector and the landscape toolkit both read through here.
"""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import EngineInputError
from engine.io.netfile import NetFile, load_network

NPZ, STATE_DICT, EXPORTED = (".npz",), (".pt", ".pth"), (".pt2",)


def read_network(path, activation: str | None = None, data=None) -> NetFile:
    """The saved network (cheap: reading only), or EngineInputError naming what is wrong.
    ``.npz`` carries everything; a state_dict needs ``activation`` and ``data``; a .pt2 ``data``."""
    suffix = Path(path).suffix.lower()
    if suffix in STATE_DICT + EXPORTED and data is None:
        raise EngineInputError(f"{path}: a PyTorch network needs its data file (--data data.npz|data.csv)")
    if suffix in STATE_DICT:
        if activation is None:
            raise EngineInputError(
                f"{path}: a state_dict does not record its activation; give one (--activation sigmoid)"
            )
        from engine.io.torch_state import load_state_dict_network

        return load_state_dict_network(path, activation, data)
    if suffix in EXPORTED:
        from engine.io.pt2 import load_exported_network

        return load_exported_network(path, data)
    if suffix not in NPZ:
        raise EngineInputError(
            f"{path}: unknown network format {suffix or '(no suffix)'!r}; "
            "use .npz, a state_dict .pt/.pth or a torch.export .pt2"
        )
    return load_network(path)
