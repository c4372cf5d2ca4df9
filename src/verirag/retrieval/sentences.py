"""Split a text into sentences, without a trained model (nltk's punkt data is not installed offline).

The rules cover what LLM answers and encyclopaedic passages hold:
- a sentence ends at ".", "!" or "?" (possibly repeated, possibly followed by closing quotes or
  brackets) followed by whitespace and a capital letter, a digit, or an opening quote or bracket;
- not after a common abbreviation ("Dr.", "e.g.", "U.S.", "Jan.") or a single initial ("J. K.");
- a line break always ends a sentence (list items are separate claims);
- a decimal point ("3.5") never ends one (no whitespace follows it).

Each sentence is a stripped slice of the input; a piece with no letter or digit (a stray "-" or
"...") joins the sentence before it, so every word of the text is in exactly one sentence.
"""

from __future__ import annotations

import re

# Lower-cased, without the final dot; multi-dot ones ("e.g", "u.s") are matched with their inner dots.
ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "ft",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "cf",
        "al",
        "approx",
        "ca",
        "no",
        "nos",
        "vol",
        "pp",
        "p",
        "inc",
        "ltd",
        "co",
        "corp",
        "gen",
        "col",
        "lt",
        "sgt",
        "capt",
        "cmdr",
        "adm",
        "gov",
        "sen",
        "rep",
        "rev",
        "hon",
        "fr",
        "u.s",
        "u.k",
        "u.n",
        "u.s.a",
        "d.c",
        "a.m",
        "p.m",
        "b.c",
        "a.d",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "est",
        "fig",
        "ed",
        "eds",
        "dept",
        "univ",
        "assn",
        "bros",
    ]
)

_BOUNDARY = re.compile(r"""([.!?]+["'”’)\]]*)\s+(?=["'“‘(\[]?[A-Z0-9])""")
_WORD_BEFORE = re.compile(r"(\S+)$")
_HAS_CONTENT = re.compile(r"\w")


def _ends_with_abbreviation(text: str) -> bool:
    """Whether `text` (up to a dot) ends with an abbreviation or a single initial."""
    m = _WORD_BEFORE.search(text)
    if not m:
        return False
    word = m.group(1).lstrip("\"'“‘([").lower()
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


# the line breaks str.splitlines() knows
_LINE = re.compile(r"[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")


def _line_pieces(line: str) -> list[tuple[int, int]]:
    pieces, start = [], 0
    for m in _BOUNDARY.finditer(line):
        if (
            m.group(1).startswith(".")
            and len(m.group(1).rstrip("\"'”’)]")) == 1
            and _ends_with_abbreviation(line[start : m.start()])
        ):
            continue
        pieces.append((start, m.end(1)))
        start = m.end()
    pieces.append((start, len(line)))
    return pieces


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text`, white space trimmed, in order (see
    the module docstring); [] for a text without words. The labels of a labelled answer's
    sentences (`VerifierExample.sentence_labels`) follow these spans."""
    spans: list[tuple[int, int]] = []
    for line in _LINE.finditer(text or ""):
        for s, e in _line_pieces(line.group(0)):
            s, e = s + line.start(), e + line.start()
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            if e <= s:
                continue
            if spans and not _HAS_CONTENT.search(text[s:e]):
                spans[-1] = (spans[-1][0], e)
            else:
                spans.append((s, e))
    if spans and not _HAS_CONTENT.search(text[spans[0][0] : spans[0][1]]):  # only punctuation: no sentence
        return [] if len(spans) == 1 else [(spans[0][0], spans[1][1]), *spans[2:]]
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` in order, as strings (`sentence_spans`)."""
    return [text[s:e] for s, e in sentence_spans(text)]
