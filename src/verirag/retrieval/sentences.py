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
ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al approx ca no nos vol pp p inc ltd co corp
gen col lt sgt capt cmdr adm gov sen rep rev hon fr u.s u.k u.n u.s.a d.c a.m p.m b.c a.d
jan feb mar apr jun jul aug sep sept oct nov dec est fig ed eds dept univ assn bros
""".split())

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


def _split_line(line: str) -> list[str]:
    pieces, start = [], 0
    for m in _BOUNDARY.finditer(line):
        if m.group(1).startswith(".") and len(m.group(1).rstrip("\"'”’)]")) == 1 \
                and _ends_with_abbreviation(line[start:m.start()]):
            continue
        pieces.append(line[start:m.end(1)])
        start = m.end()
    pieces.append(line[start:])
    return [p.strip() for p in pieces if p.strip()]


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` in order (see the module docstring); [] for a text without words."""
    out: list[str] = []
    for line in (text or "").splitlines():
        for piece in _split_line(line):
            if out and not _HAS_CONTENT.search(piece):
                out[-1] = f"{out[-1]} {piece}"
            else:
                out.append(piece)
    if out and not _HAS_CONTENT.search(out[0]):   # a text that is only punctuation has no sentence
        return [] if len(out) == 1 else [f"{out[0]} {out[1]}", *out[2:]]
    return out
