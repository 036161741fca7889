"""Qt-free model of the app: the two papers' mathematics, training loops and experiments.

Nothing in this package may import Qt; ``tests/engine/test_qt_free.py`` enforces it.
"""
