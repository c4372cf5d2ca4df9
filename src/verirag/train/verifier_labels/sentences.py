"""Answer sentences as character spans: the unit of `VerifierExample.sentence_labels`.

`sentence_labels[i]` of a labelled answer is the label of `split_sentences(answer)[i]`, so the
trainer must split with this function (or check it gets the same number of sentences). A rule
splitter, no model or data: a sentence ends at . ! or ? followed by a space and a capital, digit
or quote, unless the full stop ends a known abbreviation or an initial ("J. K. Rowling"); a line
break always ends one.
"""
from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e u.s u.k u.n no nos inc ltd co corp mt ft gen col lt "
    "sgt capt rev hon jan feb mar apr jun jul aug sep sept oct nov dec fig approx ca c est dept univ "
    "ave blvd rd sq".split())
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")


def _ends_abbreviation(text: str, end: int) -> bool:
    """Whether the full stop just before `end` closes an abbreviation or a one-letter initial."""
    m = _LAST_WORD.search(text[max(0, end - 12):end])
    if m is None:
        return False
    word = m.group(1).lower()
    return len(word.rstrip(".")) == 1 or word in ABBREVIATIONS


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text`, whitespace trimmed, in order;
    [] for a blank text."""
    spans: list[tuple[int, int]] = []
    for line in re.finditer(r"[^\n]+", text):
        start = line.start()
        for m in _BOUNDARY.finditer(line.group(0)):
            end = line.start() + m.end()
            if m.group(0).startswith(".") and len(m.group(0).rstrip("\"'”’)]")) == 1 \
                    and _ends_abbreviation(text, line.start() + m.start() + 1):
                continue
            spans.append((start, end))
            start = end
        spans.append((start, line.end()))
    trimmed = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            trimmed.append((s, e))
    return trimmed


def sentences(text: str) -> list[str]:
    """The sentences of `text` (see `split_sentences`)."""
    return [text[s:e] for s, e in split_sentences(text)]
