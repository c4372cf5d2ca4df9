"""The one input contract for the passages an answer is verified against (issue 49, item 7).

Every door reads passages here: Python (`Verifier.verify`, `verify_many`, `verify_and_act`), a
log (`verirag verify LOG`), HTTP (`/v1/verify`, `/v1/verify/batch`) and the integrations. So the
same input gets the same ids, and the same bad input the same error, wherever it comes in:

- a list (or tuple) of passages, each a plain string, a `Passage`, or a mapping with its text
  under one of `TEXT_KEYS` and optionally an `id` and a `title`;
- the caller's id is kept; a passage without one is `p0`, `p1`, ... by its place in the list;
- missing (None), one passage given bare instead of in a list, an empty list, a passage of
  another type, a mapping without text, a passage over `verirag.limits.MAX_PASSAGE_CHARS`, or two
  passages with one id: `InputError`, naming the passage by its place;
- a passage whose text is empty is kept (nothing is dropped unsaid): the verifier reads the
  others, and when no passage has text the verdict is `unverified` (`no_passage_text`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verirag.errors import InputError
from verirag.limits import MAX_PASSAGE_CHARS
from verirag.types import Passage

# where a mapping may hold its text: ours, LangChain's Document, LlamaIndex's and RAGAS' names
TEXT_KEYS = ("text", "page_content", "content", "contents")
KINDS = "strings, {'id', 'text'} mappings or Passages"


def passage_id(i: int) -> str:
    """The id of the i-th passage (from 0) of a list when its caller gave none."""
    return f"p{i}"


def to_passages(contexts: Any, name: str = "contexts") -> list[Passage]:
    """`contexts` as Passages, by the rules above; `name` is what error messages call it."""
    if contexts is None:
        raise InputError(f"no {name}: give the list of passages the answer came from ({KINDS})")
    if isinstance(contexts, (str, bytes, Passage, Mapping)):
        raise InputError(f"{name} is one passage given bare: give a list of passages ({KINDS})")
    if not isinstance(contexts, Sequence):
        raise InputError(f"{name} must be a list of passages ({KINDS}), got {type(contexts).__name__}")
    if not contexts:
        raise InputError("no passages: an answer is verified against the passages it came from")
    out = [_passage(i, c) for i, c in enumerate(contexts)]
    seen: dict[str, int] = {}
    for i, p in enumerate(out):
        if len(p.text) > MAX_PASSAGE_CHARS:  # refused at once, before any model reads it
            raise InputError(
                f"passage {i} has {len(p.text):,} characters: at most {MAX_PASSAGE_CHARS:,} are read "
                "(split a long document into passages first)"
            )
        if p.id in seen:
            raise InputError(f"passages {seen[p.id]} and {i} have the same id {p.id!r}: each passage needs its own")
        seen[p.id] = i
    return out


def _passage(i: int, c: Any) -> Passage:
    if isinstance(c, Passage):
        return c
    if isinstance(c, str):
        return Passage(id=passage_id(i), text=c)
    if isinstance(c, Mapping):
        key = next((k for k in TEXT_KEYS if k in c), None)
        if key is None or not isinstance(c[key], str):
            raise InputError(f"passage {i} has no text: a string under one of {', '.join(TEXT_KEYS)}")
        pid = c.get("id")
        if pid is not None and not isinstance(pid, (str, int)):
            raise InputError(f"passage {i}'s id must be a string, got {type(pid).__name__}")
        title = c.get("title")
        if title is not None and not isinstance(title, str):
            raise InputError(f"passage {i}'s title must be a string, got {type(title).__name__}")
        pid = str(pid).strip() if pid is not None else ""
        return Passage(id=pid or passage_id(i), text=c[key], title=title or "")
    raise InputError(f"passage {i} is a {type(c).__name__}: give {KINDS}")
