"""The window's tabs, in order."""


def workspace_classes() -> list[type]:
    from .landscape import LandscapeWorkspace
    from .minima import MinimaWorkspace
    from .run import RunWorkspace
    from .topology import TopologyWorkspace

    return [TopologyWorkspace, MinimaWorkspace, LandscapeWorkspace, RunWorkspace]


def all_workspaces(keys=None):
    """Every tab's workspace, or only those named in ``keys``."""
    return [cls() for cls in workspace_classes() if keys is None or cls.key in keys]


def workspace_named(key: str):
    """The one workspace ``key`` on its own, without the window (what ``record`` films)."""
    from engine.core.errors import EngineInputError

    found = {cls.key: cls for cls in workspace_classes()}
    if key not in found:
        raise EngineInputError(f"unknown workspace {key!r}; choose one of: {', '.join(found)}")
    return found[key]()
