"""No docstring or comment quotes a timing (issue #58).

Docstrings say what the code does and why; measurements go to benchmarks/README.md and to commit
messages, where they carry their date and machine, instead of ageing silently beside the code.
Every .py file under engine/, gui/ and landscape_lens/ is parsed: docstrings (and any other bare
string statement) with ``ast``, comments with ``tokenize``. A timing is a duration with a unit
(ms, µs, us, ns, or s / seconds / minutes after a number where the sentence goes on as a
measurement: "of", "on", "per", "against", a closing parenthesis ...), a GFLOP/s figure, a "best
of N", or a ratio "N× faster / slower / as long". Design constants stay in code; prose refers to
them by name ("at least every ``YIELD_S``") instead of restating their value.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "gui", "landscape_lens")

# Files let off the check while they are being cleaned: none. An entry must go once its file is
# clean (test_allowed_files_still_quote_timings fails when one is no longer needed).
ALLOWED: set[str] = set()

_NUM = r"(?<![\w.,/^-])~?\d+(?:\.\d+)?"  # 0.93, ~50; not the 8 of 1e-8, v2.1 or x^2
_RANGE = rf"{_NUM}(?:\s*[–-]\s*~?\d+(?:\.\d+)?)?"  # 1.5–5, 30-50
# What follows "2 s" when the s is seconds: a measurement goes on ("2.5 s of CPU", "0.2 s against
# 0.3 s", "0.93 s at 8 directions") or closes ("(~1 s)", "took 18 s."); "10 s.d." does not.
_AFTER_SECONDS = (
    r"(?=\s+(?:of|on|a|an|per|against|for|at|and|in|vs|each|alone|apart|to|with|from|here|there|now)\b"
    r"|\s*[),;:]|\.(?![\w.]))"
)
TIMING = re.compile(
    "|".join(
        (
            rf"{_RANGE}\s?(?:ms|µs|μs|us|ns)\b",  # 50 ms, ~40 µs, 15 ns
            rf"{_RANGE}\s?(?:s|secs?|seconds?|min|minutes?)\b{_AFTER_SECONDS}",  # 2.53 s of CPU, (~1 s)
            rf"{_RANGE}\s?(?:seconds?|minutes?)\b",  # 3 seconds, whatever follows
            r"\b[GMT]FLOP",  # 47 GFLOP/s
            r"\bbest\s+of\s+\d",  # best of 7
            rf"{_RANGE}\s?[×x]\s+(?:faster|slower|longer|quicker|as\s+(?:long|fast|slow)|the\s+(?:CPU|time|wall))\b",
        )
    ),
    re.IGNORECASE,
)


def _string_statements(tree: ast.AST):
    """(first line, text) of every docstring and other bare string statement."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.value.lineno, node.value.value


def _comment_blocks(source: str):
    """(first line, text) of each run of comments on consecutive lines, joined so a timing
    spread over two lines ("0.93 s" / "at 8 directions") reads as one."""
    blocks: list[tuple[int, list[str]]] = []
    last = -2
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        line = tok.start[0]
        text = tok.string.lstrip("#").strip()
        if line == last + 1 and blocks:
            blocks[-1][1].append(text)
        else:
            blocks.append((line, [text]))
        last = line
    for first, lines in blocks:
        yield first, "\n".join(lines)


def timings(source: str) -> list[tuple[int, str]]:
    """(line, matched text) of each timing quoted in ``source``'s docstrings and comments."""
    found = []
    texts = [*_string_statements(ast.parse(source)), *_comment_blocks(source)]
    for first, text in texts:
        for match in TIMING.finditer(text):
            found.append((first + text.count("\n", 0, match.start()), " ".join(match.group().split())))
    return sorted(found)


def python_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def offences(paths, root: Path = ROOT) -> list[str]:
    """Each timing in ``paths`` as "file:line: timing", the file named relative to ``root``."""
    out = []
    for path in paths:
        relative = path.relative_to(root).as_posix()
        for line, text in timings(path.read_text(encoding="utf-8")):
            out.append(f"{relative}:{line}: {text}")
    return out


# --- the checker itself --------------------------------------------------------------------

DOCSTRING_TIMING = '''
def f():
    """Sum the rows.

    A BLAS product: einsum took 18 s at dim 504."""
'''
COMMENT_TIMING = """
x = 1  # yield every ~50 ms
# a multi-threaded OpenBLAS made L-BFGS
# 14x slower on two cores
"""
SPREAD_TIMING = """
# float64 0.93 s
# at 8 directions, 47 GFLOP/s (best of 7)
"""
RATIOS_AND_SECONDS = '''
"""Took 2.53 s of CPU on two threads against 2.48 s on one, 1.7× as long; imports (~1 s)."""
'''
CLEAN = '''
"""Module: eigenvalues to 1e-8, 10 s.d. of the mean, version 2.1, float32s and float64s.

Yields at least every ``YIELD_S``; TASK_OVERHEAD_S weighs a task's overhead. See MATH.md B7."""

YIELD_S = 0.03  # the interval itself lives in code, not in prose
WIDTHS = (2, 3)  # 2 x 3 grid, a 3×3 block, n_s samples, l_s layers, 2 s.d., 1,000 samples
FORMAT = "{}"  # a progress line's text, "about 2 min 5 s left", is not a measurement


class A:
    """A 2-layer net: O(n s) work over 3 s-values; timed in benchmarks/bench_sweep.py."""
'''


@pytest.mark.parametrize(
    "source, expected",
    [
        (DOCSTRING_TIMING, [(5, "18 s")]),
        (COMMENT_TIMING, [(2, "~50 ms"), (4, "14x slower")]),
        (SPREAD_TIMING, [(2, "0.93 s"), (3, "GFLOP"), (3, "best of 7")]),
        (RATIOS_AND_SECONDS, [(2, "1.7× as long"), (2, "2.48 s"), (2, "2.53 s"), (2, "~1 s")]),
        (CLEAN, []),
    ],
)
def test_the_checker_finds_timings_in_docstrings_and_comments(source, expected):
    assert timings(source) == expected


def test_the_checker_reports_file_and_line(tmp_path):
    package = tmp_path / "engine"
    package.mkdir()
    (package / "slow.py").write_text(COMMENT_TIMING + DOCSTRING_TIMING, encoding="utf-8")
    (package / "clean.py").write_text(CLEAN, encoding="utf-8")
    assert offences(sorted(package.glob("*.py")), root=tmp_path) == [
        "engine/slow.py:2: ~50 ms",
        "engine/slow.py:4: 14x slower",
        "engine/slow.py:9: 18 s",
    ]


# --- the tree ------------------------------------------------------------------------------


def test_no_docstring_or_comment_quotes_a_timing():
    checked = [p for p in python_files() if p.relative_to(ROOT).as_posix() not in ALLOWED]
    found = offences(checked)
    assert not found, "timings belong in benchmarks/README.md, not in the code:\n" + "\n".join(found)


def test_allowed_files_still_quote_timings():
    """An allowance outlives its reason once its file is clean or gone: drop it then."""
    stale = [name for name in sorted(ALLOWED) if not (ROOT / name).is_file() or not offences([ROOT / name])]
    assert not stale, f"no longer needed in ALLOWED: {stale}"
