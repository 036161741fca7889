"""Training runs: ``Recorder`` in the researcher's own loop writes a run folder that survives the
process writing it; ``open_run`` reads one (docs/EXPORTS.md, "Training runs")."""

from engine.runs.reader import Run, open_run
from engine.runs.recorder import Recorder

__all__ = ["Recorder", "Run", "open_run"]
