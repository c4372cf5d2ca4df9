"""Spans of a kind (date, year, number, name) in text: what swaps and local edits replace.

A swap replaces an answer by a span "of the same kind" (AlignScore's recipe), so the result reads
as a plausible answer and only its truth changes. Kinds are found by patterns, no tagger:
- date: "14 December 1972", "December 14, 1972", "December 1972"
- year: 1000-2099 standing alone
- number: digits (with , or .) or a number word ("seven")
- name: a run of capitalised words ("Wilhelm Conrad Röntgen"), "of"/"de"/... allowed inside;
  a lone capitalised function word ("The", "In") is not a name.
`answer_kind` classifies a whole answer the same way, with "yesno" and "other" besides.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from verirag.metrics.qa import get_tokens, normalize_answer

KINDS = ("date", "year", "number", "name")
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    "fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
    "eighty|ninety|hundred|thousand|million|billion"
)
_PATTERNS = {
    "date": re.compile(
        rf"\b(?:\d{{1,2}} (?:{_MONTHS})\.? \d{{4}}|(?:{_MONTHS})\.? \d{{1,2}}, \d{{4}}|"
        rf"(?:{_MONTHS}) \d{{4}})\b"
    ),
    "year": re.compile(r"(?<![\d.,])\b(?:1\d{3}|20\d{2})\b(?![\d.,]\d)"),
    "number": re.compile(
        rf"(?<![\w.,])(?:\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?)(?![\w]|[.,]\d)|"
        rf"\b(?:{_NUMBER_WORDS})\b",
        re.IGNORECASE,
    ),
    "name": re.compile(
        r"\b[A-Z][\w'’\-]*[a-zà-ÿ][\w'’\-]*(?:\s+(?:(?:of(?:\s+the)?|de|da|del|von|van|"
        r"der|la|le|du)\s+)?[A-Z][\w'’\-]*)*"
    ),
}
_SMALL_NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
# Capitalised words that start sentences without naming anything.
_NOT_NAMES = frozenset(
    [
        "the",
        "a",
        "an",
        "in",
        "on",
        "at",
        "of",
        "for",
        "to",
        "from",
        "by",
        "with",
        "as",
        "it",
        "its",
        "he",
        "she",
        "they",
        "we",
        "you",
        "i",
        "his",
        "her",
        "their",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "yes",
        "no",
        "not",
        "however",
        "also",
        "but",
        "and",
        "or",
        "so",
        "if",
        "then",
        "than",
        "after",
        "before",
        "during",
        "while",
        "since",
        "although",
        "though",
        "because",
        "according",
        "answer",
        "question",
        "document",
        "documents",
        "based",
        "context",
        "passage",
        "both",
    ]
)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    text: str


def find_spans(text: str, kinds: tuple[str, ...] = KINDS) -> list[Span]:
    """Non-overlapping spans of `kinds` in `text`, earlier kinds of KINDS winning overlaps
    (a date's year is part of the date, not a year of its own)."""
    taken: list[Span] = []
    for kind in KINDS:
        for m in _PATTERNS[kind].finditer(text):
            s, e, t = m.start(), m.end(), m.group(0)
            if kind == "name":
                s, e, t = _trim_name(text, s, e)
                if s is None:
                    continue
            if kind == "number" and _PATTERNS["year"].fullmatch(t):
                continue
            if any(s < o.end and o.start < e for o in taken):
                continue
            taken.append(Span(s, e, kind, t))
    return sorted((sp for sp in taken if sp.kind in kinds), key=lambda sp: sp.start)


def _trim_name(text: str, s: int, e: int) -> tuple[int | None, int, str]:
    """A name match without leading function words ("The Beatles" keeps "The" only inside)."""
    words = text[s:e].split()
    while words and words[0].lower() in _NOT_NAMES:
        s = text.index(words[1], s + len(words[0])) if len(words) > 1 else e
        words = words[1:]
    if not words:
        return None, e, ""
    for suffix in ("'s", "’s", "'", "’"):  # a possessive is not part of the name
        if text[s:e].endswith(suffix):
            e -= len(suffix)
            break
    return s, e, text[s:e]


def answer_kind(answer: str) -> str:
    """The kind of a whole answer: yesno, one of KINDS when a single span covers it, else other."""
    a = answer.strip().rstrip(".")
    if a.lower() in ("yes", "no"):
        return "yesno"
    for sp in find_spans(a):
        if sp.start == 0 and sp.end == len(a):
            return sp.kind
    return "other"


def too_close(original: str, replacement: str, kind: str) -> bool:
    """Whether `replacement` could still say what `original` says: equal or one within the other
    after answer normalisation ("1972" is in "December 1972"), or, for names and other phrases,
    sharing a word ("Bob Scott" may be another name of "Bobby Scott"'s co-writer)."""
    a, b = normalize_answer(original), normalize_answer(replacement)
    if not a or not b or a == b or a in b or b in a:
        return True
    if kind in ("date", "year", "number", "yesno"):
        return False
    return bool((set(get_tokens(original)) & set(get_tokens(replacement))) - _NOT_NAMES)


def perturb(span: Span, rng: random.Random) -> str | None:
    """A different value of the same kind made up from `span` (a year or number moved, a date's
    year moved); None for names, which are only replaced by names found elsewhere."""
    if span.kind == "year":
        return str(int(span.text) + rng.choice([-1, 1]) * rng.randint(1, 15))
    if span.kind == "date":
        year = re.search(r"\d{4}$", span.text)
        return span.text[: year.start()] + str(int(year.group(0)) + rng.choice([-1, 1]) * rng.randint(1, 9))
    if span.kind == "number" and span.text.lower() in _SMALL_NUMBERS:
        value = _SMALL_NUMBERS.index(span.text.lower())
        word = _SMALL_NUMBERS[rng.choice([v for v in range(1, len(_SMALL_NUMBERS)) if v != value])]
        return word.capitalize() if span.text[:1].isupper() else word
    if span.kind == "number" and re.fullmatch(r"[\d,]+", span.text):
        value = int(span.text.replace(",", ""))
        new = value + rng.choice([-1, 1]) * max(1, rng.randint(1, max(1, value // 3)))
        new = new if new > 0 else value + rng.randint(1, 5)
        return f"{new:,}" if "," in span.text else str(new)
    return None
