"""The code blocks of the README and the documentation site (docs/**/*.md), so that every snippet a user
copies is one a test runs. The marker convention (which test runs a block, or why none does) is
docs/contributing-docs.md's; tests/test_docs.py holds every block to it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
RUN_LANGUAGES = ("python", "bash")

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_MARKER = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    marker: str | None  # what follows "snippet:" in the HTML comment just above the block, or None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def doc_files(root: Path = REPO) -> list[Path]:
    """README.md and every page under docs/ (the generated reference pages exist only in the built site)."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def snippets(files: list[Path] | None = None) -> list[Snippet]:
    """Every fenced block of the README and the docs, with its marker."""
    found = []
    for path in doc_files() if files is None else files:
        text = path.read_text("utf-8")
        for m in _FENCE.finditer(text):
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.search(before)
            line = text.count("\n", 0, m.start()) + 1
            found.append(Snippet(path, line, m.group(1), m.group(2), marker.group(1) if marker else None))
    return found


def python_block(containing: str) -> str:
    """The one ```python block of the README and the docs that contains `containing` (the same text in
    both counts once; a test fails if there is none, or two that differ)."""
    blocks = {s.code for s in snippets() if s.language == "python" and containing in s.code}
    assert len(blocks) == 1, f"expected one python block with {containing!r} in README/docs, found {len(blocks)}"
    return blocks.pop()
