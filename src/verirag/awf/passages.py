"""How retrieved passages are written into a prompt."""
from __future__ import annotations

from collections.abc import Sequence

from verirag.types import Passage


def format_passages(passages: Sequence[Passage], *, with_title: str = "{title}\n{text}",
                    without_title: str = "{text}", separator: str = "\n\n") -> str:
    """Each passage through its template (titled or not), joined by `separator`."""
    parts = []
    for p in passages:
        template = with_title if p.title.strip() else without_title
        parts.append(template.format(title=p.title.strip(), text=p.text.strip()))
    return separator.join(parts)
