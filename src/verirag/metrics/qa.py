"""Answer correctness against reference answers (Adlakha et al., instruct-qa definitions).

Every metric compares a prediction with a list of reference answers and returns the maximum over
the references. Texts are normalised with `normalize_answer` (lowercase, no punctuation, no
articles, single spaces) and tokens are the normalised text split on whitespace.

Scalar functions take one prediction; `*_batch` functions take lists and return numpy arrays.
The token-overlap batch functions count overlaps with numpy over all items at once
(`token_metrics_batch` computes all of them in one pass).

Conventions for empty token lists follow instruct-qa exactly:
- precision = 0 when the prediction has no token;
- recall = 1 when the reference has no token;
- F1 = 1 when both are empty, 0 when exactly one is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from verirag.metrics import _overlap
from verirag.metrics._bertscore import BertScore, BertScorer, default_scorer
from verirag.metrics._text import as_reference_list, get_tokens, normalize_answer, normalize_many

References = str | Sequence[str]

__all__ = [
    "BertScore",
    "BertScorer",
    "bertscore",
    "bertscore_batch",
    "exact_match",
    "exact_match_batch",
    "get_tokens",
    "lcs_length",
    "meteor",
    "meteor_batch",
    "normalize_answer",
    "recall_strict",
    "recall_strict_batch",
    "rouge_l",
    "rouge_l_batch",
    "substring_match",
    "substring_match_batch",
    "token_f1",
    "token_f1_batch",
    "token_metrics_batch",
    "token_precision",
    "token_precision_batch",
    "token_recall",
    "token_recall_batch",
]


# --------------------------------------------------------------------------- single pair
def prf_tokens(pred: list[str], ref: list[str]) -> tuple[float, float, float]:
    """Token-overlap (precision, recall, F1) of two token lists; multiset intersection."""
    common = sum((Counter(pred) & Counter(ref)).values())
    precision = common / len(pred) if pred else 0.0
    recall = common / len(ref) if ref else 1.0
    if not pred or not ref:
        f1 = float(pred == ref)
    elif common == 0:
        f1 = 0.0
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def exact_match(prediction: str, references: References) -> float:
    """EM = max_r 1[tokens(prediction) == tokens(r)] (normalised strings equal)."""
    p = normalize_answer(prediction)
    return float(any(p == normalize_answer(r) for r in as_reference_list(references)))


def token_f1(prediction: str, references: References) -> float:
    """F1 = max_r 2 P_r R_r / (P_r + R_r), with P_r = |p ∩ r| / |p|, R_r = |p ∩ r| / |r|
    (multiset intersection of tokens); 1 if both token lists are empty, 0 if one is."""
    p = get_tokens(prediction)
    return max(prf_tokens(p, get_tokens(r))[2] for r in as_reference_list(references))


def token_precision(prediction: str, references: References) -> float:
    """Precision = max_r |p ∩ r| / |p| (0 for an empty prediction)."""
    p = get_tokens(prediction)
    return max(prf_tokens(p, get_tokens(r))[0] for r in as_reference_list(references))


def token_recall(prediction: str, references: References) -> float:
    """Recall = max_r |p ∩ r| / |r| (1 for an empty reference). Adlakha et al.'s preferred
    correctness metric: it does not penalise verbose answers."""
    p = get_tokens(prediction)
    return max(prf_tokens(p, get_tokens(r))[1] for r in as_reference_list(references))


def recall_strict(prediction: str, references: References) -> float:
    """Recall-strict = max_r 1[|p ∩ r| = |r|]: every token of some reference (with its
    multiplicity) occurs in the prediction, i.e. token recall equals 1 for some reference."""
    p = get_tokens(prediction)
    return float(any(prf_tokens(p, get_tokens(r))[1] == 1.0 for r in as_reference_list(references)))


def substring_match(prediction: str, references: References) -> float:
    """Substring = max_r 1[normalize(r) is a substring of normalize(prediction)].

    instruct-qa's `RecallEM`, the "Recall (S)" of Adlakha et al. (answer contained in the
    response, Liu et al. 2023 / Mallen et al. 2023). A character-level test, as in the source:
    "art" is found in "party"; an empty normalised reference is found in every prediction.
    """
    p = normalize_answer(prediction)
    return float(any(normalize_answer(r) in p for r in as_reference_list(references)))


def lcs_length(a: Sequence, b: Sequence) -> int:
    """Length of the longest common subsequence of two sequences of hashable items.

    Bit-parallel algorithm (Allison & Dix 1986; Hyyrö 2004): with M[c] the bit mask of the
    positions of c in a and V initialised to all ones (|a| bits), for each item y of b
    U = V & M[y]; V = (V + U) | (V - U); then LCS = number of zero bits of V.
    O(|a| |b| / w) word operations; Python integers hold the bit vectors.
    """
    if not a or not b:
        return 0
    masks: dict = {}
    for i, c in enumerate(a):
        masks[c] = masks.get(c, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for y in b:
        m = masks.get(y)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def _rouge_l_tokens(p: list[str], r: list[str]) -> float:
    if not p or not r:
        return 0.0
    lcs = lcs_length(p, r)
    if lcs == 0:
        return 0.0
    prec, rec = lcs / len(p), lcs / len(r)
    return 2 * prec * rec / (prec + rec)


def rouge_l(prediction: str, references: References) -> float:
    """ROUGE-L F-measure = max_r 2 P R / (P + R), P = LCS(p, r) / |p|, R = LCS(p, r) / |r|,
    over normalised tokens (0 when either side is empty; beta = 1 as in `rouge_score`)."""
    p = get_tokens(prediction)
    return max(_rouge_l_tokens(p, get_tokens(r)) for r in as_reference_list(references))


_WORDNET_READY = False


def _meteor_fn():
    global _WORDNET_READY
    try:
        from nltk.corpus import wordnet
        from nltk.translate.meteor_score import meteor_score as nltk_meteor
    except ImportError as e:  # pragma: no cover - environment
        raise ImportError("METEOR needs nltk (pip install nltk)") from e
    if not _WORDNET_READY:
        try:
            wordnet.ensure_loaded()
        except LookupError as e:
            raise LookupError(
                "METEOR needs the WordNet corpus for nltk; run "
                "`bash scripts/install_wordnet.sh` (offline, from Debian's "
                "wordnet-base) or nltk.download('wordnet')"
            ) from e
        _WORDNET_READY = True
    return nltk_meteor


def meteor(
    prediction: str, references: References, *, alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5
) -> float:
    """METEOR (Banerjee & Lavie 2005) as nltk computes it, max over references.

    Unigram matches in three stages (exact, Porter stem, WordNet synonym); with m matches,
    P = m / |p|, R = m / |r|, Fmean = P R / (alpha P + (1 - alpha) R),
    penalty = gamma (chunks / m)^beta, METEOR = Fmean (1 - penalty).
    Tokens are normalised tokens (instruct-qa fed nltk word_tokenize tokens through `evaluate`).
    As in nltk, the synonym stage sees the words left over by the stem stage in stemmed form, so
    it matches "auto" / "car" but not "automobile" / "car" (stem "automobil")."""
    fn = _meteor_fn()
    p = get_tokens(prediction)
    refs = [get_tokens(r) for r in as_reference_list(references)]
    return float(fn(refs, p, alpha=alpha, beta=beta, gamma=gamma))


def bertscore(prediction: str, references: References, scorer: BertScorer | None = None) -> BertScore:
    """BERTScore precision / recall / F1 (each maximised over the references); see
    `verirag.metrics._bertscore` for the formula. `scorer` picks the encoder (default MiniLM)."""
    return (scorer or default_scorer()).score(prediction, references)


# --------------------------------------------------------------------------- batches
def _check_lengths(predictions: Sequence[str], references: Sequence[References]) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists")


def token_metrics_batch(predictions: Sequence[str], references: Sequence[References]) -> dict[str, np.ndarray]:
    """All token metrics of many items in one vectorised pass.

    Returns arrays (one value per item) under the keys exact_match, f1, precision, recall,
    recall_strict, substring_match, equal to the scalar functions of the same names.
    """
    _check_lengths(predictions, references)
    flat, owner, starts = _overlap.flatten_references(references)
    norm = normalize_many(list(predictions) + flat)
    pn, rn = norm[: len(predictions)], norm[len(predictions) :]
    ov = _overlap.overlap(pn, rn, owner, starts)
    precision, recall, f1 = _overlap.prf(ov)
    ids: dict[str, int] = {}
    p_id = np.array([ids.setdefault(s, len(ids)) for s in pn], dtype=np.int64)
    r_id = np.array([ids.setdefault(s, len(ids)) for s in rn], dtype=np.int64)
    em = (p_id[owner] == r_id).astype(float)
    strict = ((ov.len_ref == 0) | (ov.common == ov.len_ref)).astype(float)
    sub = np.fromiter((r in pn[o] for r, o in zip(rn, owner.tolist())), dtype=float, count=len(rn))
    mx = lambda v: _overlap.max_per_item(v, ov)  # noqa: E731
    return {
        "exact_match": mx(em),
        "f1": mx(f1),
        "precision": mx(precision),
        "recall": mx(recall),
        "recall_strict": mx(strict),
        "substring_match": mx(sub),
    }


def exact_match_batch(predictions: Sequence[str], references: Sequence[References]) -> np.ndarray:
    """`exact_match` of each item (vectorised)."""
    return token_metrics_batch(predictions, references)["exact_match"]


def token_f1_batch(predictions: Sequence[str], references: Sequence[References]) -> np.ndarray:
    """`token_f1` of each item (vectorised)."""
    return token_metrics_batch(predictions, references)["f1"]


def token_precision_batch(predictions: Sequence[str], references: Sequence[References]) -> np.ndarray:
    """`token_precision` of each item (vectorised)."""
    return token_metrics_batch(predictions, references)["precision"]


def token_recall_batch(predictions: Sequence[str], references: Sequence[References]) -> np.ndarray:
    """`token_recall` of each item (vectorised)."""
    return token_metrics_batch(predictions, references)["recall"]


def recall_strict_batch(predictions: Sequence[str], references: Sequence[References]) -> np.ndarray:
    """`recall_strict` of each item (vectorised)."""
    return token_metrics_batch(predictions, references)["recall_strict"]


def substring_match_batch(predictions: Sequence[str], references: Sequence[References]) -> np.ndarray:
    """`substring_match` of each item."""
    return token_metrics_batch(predictions, references)["substring_match"]


def rouge_l_batch(predictions: Sequence[str], references: Sequence[References]) -> np.ndarray:
    """`rouge_l` of each item (batched normalisation; bit-parallel LCS per pair)."""
    _check_lengths(predictions, references)
    flat, owner, starts = _overlap.flatten_references(references)
    norm = normalize_many(list(predictions) + flat)
    ptoks = [s.split() for s in norm[: len(predictions)]]
    vals = np.array(
        [_rouge_l_tokens(ptoks[o], r.split()) for r, o in zip(norm[len(predictions) :], owner.tolist())], dtype=float
    )
    return np.maximum.reduceat(vals, starts) if len(starts) else np.zeros(0)


def meteor_batch(predictions: Sequence[str], references: Sequence[References], **kw) -> np.ndarray:
    """`meteor` of each item (nltk, one item at a time)."""
    _check_lengths(predictions, references)
    return np.array([meteor(p, r, **kw) for p, r in zip(predictions, references)], dtype=float)


def bertscore_batch(
    predictions: Sequence[str], references: Sequence[References], scorer: BertScorer | None = None
) -> BertScore:
    """BERTScore of each item; arrays of precision, recall and F1 (encoder batched)."""
    _check_lengths(predictions, references)
    return (scorer or default_scorer()).score_batch(list(predictions), list(references))
