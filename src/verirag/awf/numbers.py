"""The numbers a text states, and those an answer states that nothing it was given states (issue
47, item 4: an answer that changes a number or a date against its evidence must not pass).

A number is what `text2num.alpha2digit` writes as digits (number words: "seven" -> 7, "twenty-one"
-> 21, "third" -> 3rd), then each run of digits with its decimal part: thousands separators dropped ("1,200" -> 1200), leading zeros
dropped, a suffix ignored ("1980s" -> 1980, "3rd" -> 3). In an answer "one" and "two" stay words
("one of the best" states no number); in what it was given they count ("two others" states 2),
so an answer's "2" finds a passage's "two". Measured on the dev set's changed-number
pairs (docs/results/verifier.md): the trained verifier alone ranks the right answer above the
changed one in 72% of them, with the answer rule `unstated_number` (`verirag.awf.core.AnswerRules`)
in 92%.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
THOUSANDS = re.compile(r",(?=\d{3}(?!\d))")


def _digits(text: str, small_words: bool) -> str:
    from text_to_num import alpha2digit

    try:  # its threshold: number words below it stay words (3, its default: "one", "two")
        return alpha2digit(text, "en", threshold=0 if small_words else 3)
    except Exception:
        return text


def stated_numbers(text: str, *, small_words: bool = False) -> frozenset[str]:
    """The numbers `text` states, normalised (module doc); with `small_words` "one" and "two" too."""
    out = set()
    for m in NUMBER.finditer(_digits(text, small_words)):
        s = THOUSANDS.sub("", m.group()).rstrip(".,")
        if s.isdigit():
            s = str(int(s))
        out.add(s)
    return frozenset(out)


def unstated_numbers(answer: str, sources: Iterable[str]) -> list[str]:
    """The numbers `answer` states that none of `sources` (the passages it was given, their titles,
    the question and its conversation) states, sorted."""
    stated = stated_numbers(answer)
    if not stated:
        return []
    known: set[str] = set()
    for s in sources:
        known |= stated_numbers(s, small_words=True)
    return sorted(stated - known)
