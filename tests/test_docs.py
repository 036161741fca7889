"""The documents resolve: every citation of docs/MATH.md in the repository names a section that
exists there, every section names modules that exist, and docs/ARCHITECTURE.md names only real
modules (and the one planned module it describes before it exists).

Files are read as they are at run time, so modules and citations added later are checked too.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MATH = ROOT / "docs" / "MATH.md"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
# docs/ARCHITECTURE.md, "Controller and view-models", describes this module while it is being built.
PLANNED = {"gui/controller.py"}
# A path in backticks starts with one of these (or is a file at the root, such as main.py).
PROJECT_ROOTS = ("engine", "gui", "landscape_lens", "resources", "tests", "benchmarks", "tools", "docs")
SKIP_DIRS = {"build", "dist", "shared", "node_modules", "__pycache__"}

LABEL = r"[A-Z]\d+(?:\.\d+)*"  # A4, B12, B12.3
SPAN = rf"{LABEL}(?:\s*[–-]\s*[A-Z]?\d+(?:\.\d+)*)?"  # a label or a range of them: A2–A6
# "MATH.md B7", "docs/MATH.md A4–A6", "MATH A2–A6", "MATH.md B2–B7, B9", "MATH.md B8, B12.2"
CITATION = re.compile(rf"\bMATH(?:\.md)?\s+(?P<labels>{SPAN}(?:\s*,\s*{SPAN})*)")
PART_CITATION = re.compile(r"\bMATH(?:\.md)?,?\s+part\s+(?P<part>[A-Z])\b", re.IGNORECASE)
SECTION_HEADING = re.compile(rf"^#{{2,6}}\s+(?P<label>{LABEL})\.\s+(?P<title>.+)$", re.MULTILINE)
PART_HEADING = re.compile(r"^##\s+Part\s+(?P<part>[A-Z])\b", re.MULTILINE)
ARCH_SECTION_CITATION = re.compile(r"\bARCHITECTURE\.md,?[ \t]*(?:section[ \t]+)?[\"“](?P<title>[A-Z][^\"”\n]*)[\"”]")
BACKTICKED = re.compile(r"`([^`\s]+)`")


def project_files(suffixes=(".py", ".md")) -> list[Path]:
    """The repository's files as git sees them (tracked or new, ignored ones left out); a plain
    walk, skipping hidden and build folders, where there is no git."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout.decode()
        paths = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        paths = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS and not d.endswith(".egg-info")]
            paths += [Path(folder) / f for f in files]
    return sorted(p for p in paths if p.suffix in suffixes and p.is_file())


def expand(labels: str) -> list[str]:
    """ "B2–B7, B9" -> [B2, …, B7, B9]; a range runs over the last number of its first label."""
    out = []
    for part in re.split(r"\s*,\s*", labels.strip()):
        ends = re.split(r"\s*[–-]\s*", part)
        if len(ends) == 1:
            out.append(ends[0])
            continue
        first, last = ends
        head, _, start = first.rpartition(".") if "." in first else (first[0], "", first[1:])
        stop = last.rpartition(".")[2] if "." in last else last.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        sep = "." if "." in first else ""
        out += [f"{head}{sep}{n}" for n in range(int(start), int(stop) + 1)]
    return out


def citations(text: str) -> list[tuple[int, str]]:
    """(line, label) of every section citation of docs/MATH.md in ``text``; parts as "Part X"."""
    found = []
    for match in CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found += [(line, label) for label in expand(match["labels"])]
    for match in PART_CITATION.finditer(text):
        found.append((text.count("\n", 0, match.start()) + 1, f"Part {match['part'].upper()}"))
    return found


def math_sections(text: str) -> set[str]:
    return {m["label"] for m in SECTION_HEADING.finditer(text)} | {
        f"Part {m['part']}" for m in PART_HEADING.finditer(text)
    }


def unresolved(files, sections: set[str]) -> list[str]:
    bad = []
    for path in files:
        for line, label in citations(path.read_text(encoding="utf-8", errors="replace")):
            if label not in sections:
                bad.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}: {label}")
    return bad


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Every function and class defined anywhere in a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )


def is_project_path(token: str) -> bool:
    path = token.split("::")[0]
    if "/" in path:
        return path.split("/")[0] in PROJECT_ROOTS
    return path.endswith(".py")


def missing_path(token: str) -> str | None:
    """Why a backticked path (``dir/``, ``file.py``, ``file.py::name``, globs allowed) does not
    resolve, or None when it does."""
    path, _, name = token.partition("::")
    if any(c in path for c in "*?["):
        return None if any(ROOT.glob(path)) else f"{token}: nothing matches"
    target = ROOT / path
    if not target.exists():
        return f"{token}: no such file or folder"
    if name and (target.suffix != ".py" or name not in defined_names(target)):
        return f"{token}: {path} defines no {name}"
    return None


def headings_with_bodies(text: str):
    """(label, heading line, body up to the next heading) of each labelled section."""
    matches = list(SECTION_HEADING.finditer(text))
    for m, nxt in zip(matches, matches[1:] + [None]):
        end = nxt.start() if nxt else len(text)
        yield m["label"], m.group(0), text[m.end() : end]


# ---------------------------------------------------------------- the checker itself


def test_citations_are_parsed_in_every_form_the_code_uses():
    text = (
        "(MATH.md B2–B7, B9)\n(MATH A3, A5) and (docs/MATH.md B8, B12.2)\n"
        "MATH A8, d = 1; MATH.md B12: the loss; (docs/MATH.md, part B); MATH.md B12.5; x\n"
        "(MATH.md A4-A6). MATH.md B12.1–B12.3"
    )
    assert [label for _, label in citations(text)] == (
        ["B2", "B3", "B4", "B5", "B6", "B7", "B9", "A3", "A5", "B8", "B12.2", "A8", "B12", "B12.5"]
        + ["A4", "A5", "A6", "B12.1", "B12.2", "B12.3", "Part B"]
    )
    assert citations("MATH.md is the file; the MATHS A4 are not a citation") == []
    cited = ARCH_SECTION_CITATION.findall('every frame (docs/ARCHITECTURE.md, "Clips as pure functions").')
    assert cited == ["Clips as pure functions"]


def test_the_checker_fails_on_a_label_that_does_not_exist(tmp_path):
    """The citation test can fail: a file citing a section the document lacks is reported, with
    its line, and its valid neighbours are not."""
    sections = math_sections(MATH.read_text(encoding="utf-8"))
    cited = tmp_path / "cites.py"
    missing = "B" + "99"  # spelled apart, so this file itself cites nothing missing
    cited.write_text(f'"""A module."""\n\n# see MATH.md A2–A4 and docs/MATH.md {missing}\n', encoding="utf-8")
    assert unresolved([cited], sections) == [f"{cited}:3: {missing}"]
    assert unresolved([cited], sections | {missing}) == []


# ---------------------------------------------------------------- docs/MATH.md


def test_every_math_citation_in_the_repository_resolves():
    sections = math_sections(MATH.read_text(encoding="utf-8"))
    assert {"A1", "A8", "B1", "B11", "Part A", "Part B"} <= sections
    files = project_files()
    assert ROOT / "engine" / "topology" / "invariants.py" in files  # the listing really sees the code
    assert unresolved(files, sections) == []


def test_every_math_section_names_a_module_that_exists():
    text = MATH.read_text(encoding="utf-8")
    sections = list(headings_with_bodies(text))
    assert len(sections) >= 19
    bad = []
    for label, heading, _ in sections:
        named = [t for t in BACKTICKED.findall(heading) if is_project_path(t) and t.split("::")[0].endswith(".py")]
        if not named or any(missing_path(t) for t in named):
            bad.append(f"{label}: {heading!r} names no existing module")
    assert bad == []


def test_every_module_and_test_named_in_math_exists():
    text = MATH.read_text(encoding="utf-8")
    named = {t for t in BACKTICKED.findall(text) if is_project_path(t)}
    assert any(t.startswith("tests/") for t in named)
    assert sorted(filter(None, map(missing_path, named))) == []


# ---------------------------------------------------------------- docs/ARCHITECTURE.md


def test_architecture_names_only_modules_that_exist_or_are_planned():
    named = {t for t in BACKTICKED.findall(ARCHITECTURE.read_text(encoding="utf-8")) if is_project_path(t)}
    assert "engine/core/progress.py" in named and PLANNED <= named
    bad = [why for t in sorted(named - PLANNED) if (why := missing_path(t))]
    assert bad == []


def test_architecture_sections_cited_in_the_code_exist():
    headings = {
        m.group(1).strip().strip('"“”').lower()
        for m in re.finditer(r"^#{1,6}\s+(.+)$", ARCHITECTURE.read_text(encoding="utf-8"), re.MULTILINE)
    }
    cited = [
        (path.relative_to(ROOT), m["title"])
        for path in project_files()
        for m in ARCH_SECTION_CITATION.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert [(p, t) for p, t in cited if t.strip().lower() not in headings] == []


@pytest.mark.parametrize("document", ["docs/MATH.md", "docs/ARCHITECTURE.md", "docs/EXPORTS.md"])
def test_the_readme_lists_the_documents(document):
    assert (ROOT / document).is_file()
    assert f"]({document})" in (ROOT / "README.md").read_text(encoding="utf-8")
