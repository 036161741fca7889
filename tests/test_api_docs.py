"""docs/API.md's examples run as written: every ```python block, in order, in one namespace (as a
reader pasting them into a notebook would), and each block's own asserts hold."""

import re
from pathlib import Path

import pytest

API = Path(__file__).resolve().parents[1] / "docs" / "API.md"
BLOCKS = re.findall(r"```python\n(.*?)```", API.read_text(), re.DOTALL)


def test_api_md_has_examples():
    assert len(BLOCKS) >= 8


def test_every_example_runs_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, block in enumerate(BLOCKS):
        try:
            exec(compile(block, f"docs/API.md block {i + 1}", "exec"), namespace)
        except Exception as error:  # name the block that failed
            pytest.fail(f"docs/API.md block {i + 1} failed: {type(error).__name__}: {error}")
