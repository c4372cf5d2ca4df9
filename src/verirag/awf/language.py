"""Is a text English? The language rule of the `unverified` verdict (`verirag.awf.unverified`).

Language ID is py3langid (langid.py's model, shipped in the wheel: nothing is downloaded). On
short answers it guesses wildly (NQ-open's gold answers, bare names and dates, get P(English) <=
0.05 in 73% of cases), so a text is called "not English" only when all of these hold:
- py3langid gives English a probability of at most MAX_P_ENGLISH (0.01), and
- the text has at least MIN_LETTERS (12) letters and at least MIN_LOWER_WORDS (2) words that begin
  in lower case: a name or a title ("Guillermo del Toro", "Sergei Rachmaninoff") says nothing of the
  language it is written in, a clause's function words do;
- or, whatever its length, most of its letters are outside the Latin script (Cyrillic, CJK,
  Arabic, ...) and P(English) is at most MAX_P_ENGLISH.
Otherwise the language is undecided and the answer is judged as usual. Measured by
`benchmarks/bench_langid.py` (docs/concepts/unverified.md): English wrongly called another
language: 0.2% of 3,610 NQ-open answers, 0 of 100 HotpotQA answers, 0 of 24 short English
answers, 0.2% of 1,000 English passage sentences; non-English answers caught: 82% of 68 in 12
languages (the misses are 2-4 word answers such as "En 1962.").
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

MAX_P_ENGLISH = 0.01
MIN_LETTERS = 12
MIN_LOWER_WORDS = 2
READ_CHARS = 5_000  # a long text's language is read from its start: py3langid's cost is linear
LATIN_END = 0x250  # Basic Latin .. Latin Extended-B: the letters of English and its neighbours

_IDENTIFIER = None
_LOCK = threading.Lock()


@dataclass(frozen=True)
class LanguageGuess:
    """py3langid's most likely language of a text, the probability it gives English, and whether
    the rule (module doc) calls the text not English."""

    language: str
    p_english: float
    not_english: bool


def _identifier():
    global _IDENTIFIER
    with _LOCK:  # the service verifies from several threads; the model is loaded once
        if _IDENTIFIER is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _IDENTIFIER


def letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def lower_words(text: str) -> int:
    """Words that begin with a lower-case letter."""
    return sum(w[0].islower() for w in text.split() if w[0].isalpha())


def other_script(text: str) -> bool:
    """Most of the text's letters lie outside the Latin script (no letters: False)."""
    alpha = [ch for ch in text if ch.isalpha()]
    return bool(alpha) and sum(ord(ch) >= LATIN_END for ch in alpha) > len(alpha) / 2


def guess_language(text: str) -> LanguageGuess:
    """The language of `text` by the rule of the module doc (its first READ_CHARS characters)."""
    text = " ".join(text[:READ_CHARS].split())
    if not letters(text):
        return LanguageGuess("und", 1.0, False)  # digits and signs: no language to speak of
    ranked = _identifier().rank(text)
    p_english = float(dict(ranked).get("en", 0.0))
    unlikely = p_english <= MAX_P_ENGLISH
    if other_script(text):
        decided = unlikely
    else:
        decided = unlikely and letters(text) >= MIN_LETTERS and lower_words(text) >= MIN_LOWER_WORDS
    return LanguageGuess(str(ranked[0][0]), p_english, decided)
