"""Landscape Lens: the command line and the window's launcher (``landscape-lens``, ``main.py``)."""
