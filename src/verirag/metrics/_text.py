"""Answer normalisation and tokenisation shared by the token-overlap metrics.

The normaliser is the one of SQuAD v1.1 and of instruct-qa (`Metric._normalize_text`):
lowercase, delete ASCII punctuation, replace the articles "a", "an", "the" (as whole words)
by a space, collapse whitespace. Tokens are the normalised text split on whitespace.

Batch helpers normalise many strings in one pass of C-level string operations (the strings are
joined with a NUL separator, which none of the steps touches) and map tokens to integer ids, so
that the metrics in `qa` and `faithfulness` can count overlaps with numpy.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_SEP = "\x00"


def normalize_answer(text: str) -> str:
    """Normalise an answer as SQuAD / instruct-qa do.

    normalize(s) = collapse_ws(remove_articles(remove_punct(lower(s))))

    >>> normalize_answer("The  Eiffel-Tower, in Paris!")
    'eiffeltower in paris'
    """
    if not text:
        return ""
    text = text.lower().translate(_PUNCT_TABLE)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def get_tokens(text: str) -> list[str]:
    """tokens(s) = normalize(s).split(); the empty string has no tokens."""
    if not text:
        return []
    return normalize_answer(text).split()


def normalize_many(texts: Sequence[str]) -> list[str]:
    """`normalize_answer` of every string, computed in one pass over their concatenation.

    Equivalent to `[normalize_answer(t) for t in texts]`: the NUL separator is neither
    punctuation nor whitespace nor a word character, so lowercasing, punctuation removal and
    the article regex (whose word boundaries fall at the separator exactly as at a string's
    ends) act on each piece as they would alone.
    """
    texts = [t or "" for t in texts]
    if not texts:
        return []
    if any(_SEP in t for t in texts):  # cannot use the separator: fall back to one by one
        return [normalize_answer(t) for t in texts]
    joined = _SEP.join(texts).lower().translate(_PUNCT_TABLE)
    joined = _ARTICLES.sub(" ", joined)
    # collapse whitespace runs into one space (NUL is not whitespace, so it survives), then drop
    # the spaces next to the separators: each piece is then " ".join(piece.split())
    joined = " ".join(joined.split()).replace(" " + _SEP, _SEP).replace(_SEP + " ", _SEP)
    return joined.split(_SEP)


class Vocab:
    """Maps token strings to consecutive integer ids (grown on demand)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def encode_many(self, normalized: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of already-normalised strings, concatenated, and their offsets.

        Returns (ids, offsets) with the tokens of string k in ids[offsets[k]:offsets[k+1]].
        Normalised strings have single spaces, so a string has count(" ") + 1 tokens (0 if empty).
        """
        lengths = np.fromiter((s.count(" ") + 1 if s else 0 for s in normalized), dtype=np.int64, count=len(normalized))
        tokens = " ".join(normalized).split()
        ids_of = self.ids
        for tok in dict.fromkeys(tokens):
            if tok not in ids_of:
                ids_of[tok] = len(ids_of)
        ids = np.fromiter(map(ids_of.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] != len(ids):  # not normalised (e.g. double spaces): tokenise one by one
            lengths = np.array([len(s.split()) for s in normalized], dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
        return ids, offsets


def as_reference_list(references: str | Sequence[str]) -> list[str]:
    """A single reference string or a non-empty sequence of them, as a list."""
    if isinstance(references, str):
        return [references]
    refs = list(references)
    if not refs:
        raise ValueError("at least one reference answer is needed")
    for r in refs:
        if not isinstance(r, str):
            raise TypeError(f"references must be strings, got {type(r).__name__}")
    return refs
