"""Split long passages into overlapping word windows.

Retrievers and readers work best on passages of roughly equal, modest length (the papers
verirag implements use ~100-200 word passages). Windows overlap so that a sentence cut at a
window boundary still appears whole in one of the two neighbouring chunks.

Words are maximal runs of non-whitespace; each chunk is the slice of the original text from
its first to its last word, so line breaks inside a chunk are preserved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import InputError
from ..types import Passage

_WORD = re.compile(r"\S+")


def validate_chunking(max_words: int, overlap_words: int) -> None:
    """Raise `InputError` unless 0 <= overlap_words < max_words."""
    if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 1:
        raise InputError(f"chunk size must be a positive number of words, got {max_words!r}")
    if isinstance(overlap_words, bool) or not isinstance(overlap_words, int) or overlap_words < 0:
        raise InputError(f"chunk overlap must be a non-negative number of words, got {overlap_words!r}")
    if overlap_words >= max_words:
        raise InputError(
            f"chunk overlap ({overlap_words} words) must be smaller than the chunk "
            f"size ({max_words} words), otherwise chunking never advances"
        )


def chunk_words(text: str, max_words: int = 200, overlap_words: int = 20) -> list[str]:
    """Split `text` into windows of at most `max_words` words.

    Consecutive windows share exactly `overlap_words` words; the last window may be shorter.
    A text of at most `max_words` words is returned as one chunk (stripped); a text with no
    words gives an empty list.
    """
    validate_chunking(max_words, overlap_words)
    spans = [m.span() for m in _WORD.finditer(text)]
    if not spans:
        return []
    if len(spans) <= max_words:
        return [text.strip()]
    step = max_words - overlap_words
    chunks: list[str] = []
    start = 0
    while True:
        end = min(start + max_words, len(spans))
        chunks.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            return chunks
        start += step


def chunk_passages(passages: Iterable[Passage], max_words: int = 200, overlap_words: int = 20) -> list[Passage]:
    """Chunk every passage; keep title and source; record the parent in `meta`.

    A passage that fits in one chunk keeps its id; a split passage gives ids ``"{id}#{i}"``
    (i from 0). Each chunk's meta holds the parent's meta plus ``parent_id``, ``chunk_index``
    and ``n_chunks``. Passages whose text has no words are dropped: they cannot be retrieved.
    """
    validate_chunking(max_words, overlap_words)
    out: list[Passage] = []
    for p in passages:
        pieces = chunk_words(p.text, max_words, overlap_words)
        for i, piece in enumerate(pieces):
            pid = p.id if len(pieces) == 1 else f"{p.id}#{i}"
            meta = {**p.meta, "parent_id": p.id, "chunk_index": i, "n_chunks": len(pieces)}
            out.append(Passage(id=pid, text=piece, title=p.title, source=p.source, meta=meta))
    return out
