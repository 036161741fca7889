"""The window's tabs, in order."""


def all_workspaces():
    from .topology import TopologyWorkspace
    return [TopologyWorkspace()]
