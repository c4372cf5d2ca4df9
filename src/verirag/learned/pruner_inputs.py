"""What the context pruner reads: (question, passage) pairs cut into windows of whole sentences that
fit the encoder, so that every word of a passage of any length is read and none is cut off.

A window is the question (at most `QUESTION_SHARE` of the window; a longer question keeps its
first tokens) and a run of consecutive sentences of one passage, packed greedily while they fit.
A sentence longer than the room beside the question is read in word pieces that each fit (the
sentence's score is then its best piece's). Each sentence of the window is a span of its tokens;
the pruner pools each span into one score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verirag.retrieval.sentences import split_sentences

QUESTION_SHARE = 0.25  # a question may take at most this share of the window


@dataclass(frozen=True)
class Window:
    """One encoder input: `question` and `text` (the sentences joined by one space); `spans[j]` is
    (first, end) character offsets in `text` of the piece of sentence `sentence_of[j]` (an index
    into the passage's sentences)."""

    question: str
    text: str
    spans: tuple[tuple[int, int], ...]
    sentence_of: tuple[int, ...]


def passage_sentences(text: str) -> list[str]:
    """The sentences a passage is pruned by: `split_sentences`, or the whole text where it finds none."""
    sentences = [s for s in split_sentences(text) if s.strip()]
    return sentences or ([text.strip()] if text.strip() else [])


def token_counts(tokenizer, texts: Sequence[str]) -> list[int]:
    if not texts:
        return []
    enc = tokenizer(list(texts), add_special_tokens=False, verbose=False)
    return [len(ids) for ids in enc["input_ids"]]


def fit_question(tokenizer, question: str, window: int) -> str:
    """The question as read: whole when it fits its share of the window, else its first tokens."""
    budget = max(8, int(window * QUESTION_SHARE))
    ids = tokenizer(question, add_special_tokens=False, verbose=False)["input_ids"]
    if len(ids) <= budget:
        return question
    return tokenizer.decode(ids[:budget], skip_special_tokens=True)


def _pieces(tokenizer, sentence: str, room: int) -> list[str]:
    """`sentence` in consecutive word runs of at most `room` tokens each (a single word longer than
    the room is its own piece; the tokenizer's truncation cuts only such a word)."""
    words = sentence.split()
    counts = token_counts(tokenizer, words)
    pieces, run, used = [], [], 0
    for w, c in zip(words, counts):
        if run and used + c + 1 > room:  # +1: the joining space may add a token boundary
            pieces.append(" ".join(run))
            run, used = [], 0
        run.append(w)
        used += c + 1
    if run:
        pieces.append(" ".join(run))
    return pieces


def windows_for(tokenizer, question: str, sentences: Sequence[str], window: int) -> list[Window]:
    """Windows covering every sentence of one passage, in order (see the module's docstring)."""
    q = fit_question(tokenizer, question, window)
    special = tokenizer.num_special_tokens_to_add(pair=True)
    room = window - special - len(tokenizer(q, add_special_tokens=False, verbose=False)["input_ids"]) - 2
    units: list[tuple[str, int]] = []  # (text, sentence index), each fitting the room
    counts = token_counts(tokenizer, sentences)
    for i, (s, c) in enumerate(zip(sentences, counts)):
        if c + 1 <= room:
            units.append((s, i))
        else:
            units.extend((p, i) for p in _pieces(tokenizer, s, room))
    unit_counts = token_counts(tokenizer, [u for u, _ in units])
    out: list[Window] = []
    parts: list[tuple[str, int]] = []
    used = 0
    for (u, i), c in zip(units, unit_counts):
        if parts and used + c + 1 > room:
            out.append(_window(q, parts))
            parts, used = [], 0
        parts.append((u, i))
        used += c + 1
    if parts:
        out.append(_window(q, parts))
    return out


def _window(question: str, parts: list[tuple[str, int]]) -> Window:
    spans, pos = [], 0
    for text, _ in parts:
        spans.append((pos, pos + len(text)))
        pos += len(text) + 1
    return Window(question, " ".join(t for t, _ in parts), tuple(spans), tuple(i for _, i in parts))
