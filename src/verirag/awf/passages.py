"""How retrieved passages are written into a prompt."""

from __future__ import annotations

from collections.abc import Sequence

from verirag.prompts import PromptTemplate
from verirag.types import Passage


def prompt_passages(prompt: PromptTemplate, passages: Sequence[Passage]) -> str:
    """The passages as a prompt template writes them: its `passage_with_title` / `passage`
    templates (fields `i` and `n`, both counting from 1, `title`, `text`), joined by its
    `separator` (a blank line unless it says otherwise)."""
    parts = []
    for i, p in enumerate(passages, 1):
        title = (p.title or "").strip()
        template = prompt.extra["passage_with_title"] if title else prompt.extra["passage"]
        parts.append(template.format(i=i, n=i, title=title, text=p.text.strip()))
    return prompt.extra.get("separator", "\n\n").join(parts)
