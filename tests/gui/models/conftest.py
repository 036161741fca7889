"""The tab models' tests are headless: no window, no Qt (tests/gui/conftest.py's Qt checks are
not needed here and are switched off for this folder)."""

import pytest


@pytest.fixture(autouse=True)
def no_qt_object_reaches_the_collector():
    """Overrides the GUI tests' Qt-object check: these tests make no Qt object."""
    yield
