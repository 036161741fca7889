"""The window's tabs, in order."""


def all_workspaces():
    from .landscape import LandscapeWorkspace
    from .minima import MinimaWorkspace
    from .topology import TopologyWorkspace

    return [TopologyWorkspace(), MinimaWorkspace(), LandscapeWorkspace()]
