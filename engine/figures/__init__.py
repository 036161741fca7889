"""Matplotlib figures that ``main.py reproduce`` writes beside its metrics.

Only the experiments import these modules: they draw from the engine's result dataclasses, and
importing the engine for the GUI never imports matplotlib (tests/engine/test_import_graph.py).
"""
