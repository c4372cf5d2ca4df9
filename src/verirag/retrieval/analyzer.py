"""Text -> index terms for BM25: lower-case, split into words, drop stopwords, stem.

One stateless function of the text, so documents and queries are processed identically and
an index can be reloaded and queried by a fresh process. The stopword list is bm25s's English
list (from NLTK); stemming is PyStemmer's English Snowball stemmer.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

# Runs of letters/digits; unlike scikit-learn's default this keeps one-character tokens, so
# "World War 2" keeps its "2".
_WORD = re.compile(r"\w+")


class EnglishAnalyzer:
    """Callable: `analyzer(text) -> list[str]` of stemmed, stopword-free, lower-case terms."""

    name = "english-snowball-v1"  # saved with an index; change it when the output changes

    def __init__(self) -> None:
        self._stopwords = frozenset(STOPWORDS_EN)
        stemmer = Stemmer.Stemmer("english")
        lock = threading.Lock()

        def stem_word(word: str) -> str:
            # PyStemmer documents its stemmers as single-thread objects; the lock is taken only
            # on cache misses, so it costs little.
            with lock:
                return stemmer.stemWord(word)

        # Stemming dominates tokenisation time and natural text repeats words heavily, so a
        # per-word cache pays; it is bounded so that a long-running server cannot grow it forever.
        self._stem = lru_cache(maxsize=1 << 20)(stem_word)

    def __call__(self, text: str) -> list[str]:
        stop = self._stopwords
        stem = self._stem
        return [stem(w) for w in _WORD.findall(text.lower()) if w not in stop]

    def many(self, texts: list[str]) -> list[list[str]]:
        return [self(t) for t in texts]
