"""The README's code blocks, so that every snippet a user copies is one a test runs."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_block(containing: str) -> str:
    """The README's one ```python block that contains `containing` (a test fails if there is none)."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.DOTALL) if containing in b]
    assert len(blocks) == 1, f"expected one README python block with {containing!r}, found {len(blocks)}"
    return blocks[0]
