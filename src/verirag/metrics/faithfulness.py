"""Faithfulness of a response to the passages it was given (Adlakha et al., instruct-qa).

Evidence K = the passage texts joined by single spaces; u = the response; H = the question
(and, in a conversation, the earlier turns, joined by spaces). Tokens are normalised tokens
(`verirag.metrics.qa.normalize_answer`), overlaps are multiset intersections:

    K-Precision = |u ∩ K| / |u|        (0 for an empty response)
    K-Recall    = |u ∩ K| / |K|        (1 for empty evidence)
    K-F1        = 2 KP KR / (KP + KR)  (1 if both are empty, 0 if one is)

The "++" variants (Chiesurin et al. 2023; instruct-qa's KPrecisionPlusPlus etc.) first drop
every response token that occurs anywhere in H; when nothing of the response is left (it only
repeats the question), K-Precision++ = K-Recall++ = K-F1++ = 1, the instruct-qa convention: the
response asserts nothing beyond the question, so it contains nothing unsupported.

K-BERTScore is BERTScore with the evidence string as the single reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from verirag.metrics import _overlap
from verirag.metrics._bertscore import BertScore, BertScorer, default_scorer
from verirag.metrics._text import get_tokens, normalize_many
from verirag.metrics.qa import prf_tokens

__all__ = [
    "evidence_text",
    "history_text",
    "k_bertscore",
    "k_bertscore_batch",
    "k_f1",
    "k_f1_pp",
    "k_metrics_batch",
    "k_precision",
    "k_precision_pp",
    "k_recall",
    "k_recall_pp",
]

Passages = str | Sequence[Any]
History = str | Sequence[str] | None


def _passage_text(p: Any) -> str:
    if isinstance(p, str):
        return p
    if isinstance(p, dict):
        return str(p.get("text", ""))
    text = getattr(p, "text", None)
    if text is None and hasattr(p, "passage"):  # ScoredPassage
        text = getattr(p.passage, "text", None)
    if text is None:
        raise TypeError(f"cannot read the text of a passage of type {type(p).__name__}")
    return str(text)


def evidence_text(passages: Passages) -> str:
    """K: the passage texts joined by spaces. Accepts a string, strings, dicts with "text",
    or objects with `.text` (verirag Passage / ScoredPassage)."""
    if isinstance(passages, str):
        return passages
    return " ".join(_passage_text(p) for p in passages)


def history_text(history: History) -> str:
    """H: the question, or the conversation turns joined by spaces."""
    if history is None:
        return ""
    if isinstance(history, str):
        return history
    return " ".join(history)


def _k_scores(response: str, passages: Passages, history: History, plus_plus: bool) -> tuple[float, float, float]:
    u = get_tokens(response)
    k = get_tokens(evidence_text(passages))
    if plus_plus:
        h = set(get_tokens(history_text(history)))
        u = [t for t in u if t not in h]
        if not u:
            return 1.0, 1.0, 1.0
    return prf_tokens(u, k)


def k_precision(response: str, passages: Passages) -> float:
    """K-Precision = |u ∩ K| / |u|: the share of response tokens found in the passages."""
    return _k_scores(response, passages, None, False)[0]


def k_recall(response: str, passages: Passages) -> float:
    """K-Recall = |u ∩ K| / |K|."""
    return _k_scores(response, passages, None, False)[1]


def k_f1(response: str, passages: Passages) -> float:
    """K-F1 = 2 KP KR / (KP + KR)."""
    return _k_scores(response, passages, None, False)[2]


def k_precision_pp(response: str, passages: Passages, history: History) -> float:
    """K-Precision++: K-Precision of the response tokens not in H (1 if none is left)."""
    return _k_scores(response, passages, history, True)[0]


def k_recall_pp(response: str, passages: Passages, history: History) -> float:
    """K-Recall++: K-Recall of the response tokens not in H (1 if none is left)."""
    return _k_scores(response, passages, history, True)[1]


def k_f1_pp(response: str, passages: Passages, history: History) -> float:
    """K-F1++: K-F1 of the response tokens not in H (1 if none is left)."""
    return _k_scores(response, passages, history, True)[2]


def k_metrics_batch(
    responses: Sequence[str], passages: Sequence[Passages], histories: Sequence[History] | None = None
) -> dict[str, np.ndarray]:
    """K-Precision, K-Recall, K-F1 (and the ++ variants when `histories` is given) of many
    items, vectorised. Keys: k_precision, k_recall, k_f1[, k_precision_pp, k_recall_pp, k_f1_pp]."""
    n = len(responses)
    if len(passages) != n or (histories is not None and len(histories) != n):
        raise ValueError("responses, passages and histories differ in length")
    ev = [evidence_text(p) for p in passages]
    parts = list(responses) + ev + ([history_text(h) for h in histories] if histories is not None else [])
    norm = normalize_many(parts)
    un, kn = norm[:n], norm[n : 2 * n]
    owner = np.arange(n, dtype=np.int64)
    ov = _overlap.overlap(un, kn, owner, owner)
    p, r, f = _overlap.prf(ov)
    out = {"k_precision": p, "k_recall": r, "k_f1": f}
    if histories is not None:
        ovpp = _overlap.overlap(un, kn, owner, owner, query_norm=norm[2 * n :])
        p, r, f = _overlap.prf(ovpp, empty_pred_score=1.0)
        out.update({"k_precision_pp": p, "k_recall_pp": r, "k_f1_pp": f})
    return out


def k_bertscore(response: str, passages: Passages, scorer: BertScorer | None = None) -> BertScore:
    """K-BERTScore: BERTScore of the response against the evidence string K."""
    return (scorer or default_scorer()).score(response, evidence_text(passages))


def k_bertscore_batch(
    responses: Sequence[str], passages: Sequence[Passages], scorer: BertScorer | None = None
) -> BertScore:
    """K-BERTScore of each item (arrays)."""
    return (scorer or default_scorer()).score_batch(list(responses), [evidence_text(p) for p in passages])
