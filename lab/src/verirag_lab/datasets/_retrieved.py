"""Attach retrieved passages to questions and label them against the reference answers.

A passage counts as relevant when it contains a reference answer after SQuAD normalisation
(the "has answer" test of DPR and of the AwF paper's NQ set-up); a question is answerable when
any of its passages is relevant. This is a proxy: a passage may mention the answer string
without supporting it, or support a paraphrase of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from verirag.errors import InputError
from verirag.metrics.qa import substring_match
from verirag.types import Example, ScoredPassage


class SearchesMany(Protocol):
    def search_many(self, queries: Sequence[str], k: int = 5) -> list[list[ScoredPassage]]: ...


def check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k (passages per question) must be a positive integer, got {k!r}")
    return k


def contains_answer(text: str, references: Sequence[str]) -> int:
    """1 if `text` contains a (normalised) reference answer, else 0 (also 0 with no reference)."""
    refs = [r for r in references if r.strip()]
    return int(bool(refs) and substring_match(text, refs) > 0)


def attach_retrieved(examples: list[Example], retriever: SearchesMany, k: int) -> None:
    """Fill passages, relevance and answerable of each example with its top-k passages, in place.

    All questions go through one `search_many` call, which batches the query encoding of dense
    retrievers. Scores land in meta["retrieval_scores"].
    """
    k = check_k(k)
    if not examples:
        return
    if not callable(getattr(retriever, "search_many", None)):
        raise InputError(f"retriever must have a search_many(queries, k) method, got {type(retriever).__name__}")
    results = retriever.search_many([ex.question for ex in examples], k)
    for ex, hits in zip(examples, results):
        ex.passages = [h.passage for h in hits]
        if ex.references:
            ex.relevance = [contains_answer(p.text, ex.references) for p in ex.passages]
            ex.answerable = any(ex.relevance)
        else:  # nothing to match against: relevance unknown
            ex.relevance = [None] * len(ex.passages)
            ex.answerable = None
        ex.meta["retrieval_scores"] = [round(float(h.score), 6) for h in hits]
