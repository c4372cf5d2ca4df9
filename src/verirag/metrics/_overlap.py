"""Vectorised bag-of-tokens overlap between many (prediction, reference) pairs.

Every text becomes integer token ids (one shared vocabulary); each multiset of tokens becomes
sorted integer keys owner * V + token; the overlap |pred ∩ ref| (multiset intersection,
Counter(pred) & Counter(ref) in instruct-qa) of every reference with its prediction is then a
`searchsorted` and a `bincount`. Only the tokenisation loop runs in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verirag.metrics._text import Vocab


@dataclass
class Overlap:
    """Counts for n predictions and m references (reference j belongs to prediction owner[j]).

    common[j]   = |tokens(pred[owner[j]]) ∩ tokens(ref[j])| (multiset intersection)
    len_pred[i] = |tokens(pred[i])| (after dropping query tokens, when a query was given)
    len_ref[j]  = |tokens(ref[j])|
    """

    common: np.ndarray
    len_pred: np.ndarray
    len_ref: np.ndarray
    owner: np.ndarray
    starts: np.ndarray  # index of the first reference of each prediction (references are grouped)


def flatten_references(references: Sequence[Sequence[str]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Flatten a list of reference lists; returns (flat, owner, starts). Each list must be non-empty."""
    flat: list[str] = []
    counts = np.empty(len(references), dtype=np.int64)
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            refs = [refs]
        if len(refs) == 0:
            raise ValueError(f"item {i} has no reference answer")
        flat.extend(refs)
        counts[i] = len(refs)
    owner = np.repeat(np.arange(len(references), dtype=np.int64), counts)
    starts = np.zeros(len(references), dtype=np.int64)
    if len(references):
        np.cumsum(counts[:-1], out=starts[1:])
    return flat, owner, starts


def overlap(
    pred_norm: Sequence[str],
    ref_norm: Sequence[str],
    owner: np.ndarray,
    starts: np.ndarray,
    query_norm: Sequence[str] | None = None,
) -> Overlap:
    """Overlap counts of normalised predictions with their normalised references.

    With `query_norm`, prediction tokens that occur anywhere in the query of the same item are
    dropped first (the "++" discount of Chiesurin et al. / instruct-qa).
    """
    n, m = len(pred_norm), len(ref_norm)
    vocab = Vocab()
    p_ids, p_off = vocab.encode_many(pred_norm)
    r_ids, r_off = vocab.encode_many(ref_norm)
    if query_norm is not None:
        q_ids, q_off = vocab.encode_many(query_norm)
    V = max(len(vocab), 1)

    p_item = np.repeat(np.arange(n, dtype=np.int64), np.diff(p_off))
    p_keys = p_item * V + p_ids
    if query_norm is not None:
        q_item = np.repeat(np.arange(n, dtype=np.int64), np.diff(q_off))
        keep = ~np.isin(p_keys, q_item * V + q_ids)
        p_keys = p_keys[keep]
        len_pred = np.bincount(p_item[keep], minlength=n)
    else:
        len_pred = np.diff(p_off)
    pk, pc = np.unique(p_keys, return_counts=True)

    r_ref = np.repeat(np.arange(m, dtype=np.int64), np.diff(r_off))
    rk, rc = np.unique(r_ref * V + r_ids, return_counts=True)
    ref_of = rk // V
    lookup = owner[ref_of] * V + rk % V
    pos = np.searchsorted(pk, lookup)
    pos_c = np.minimum(pos, max(len(pk) - 1, 0))
    found = (pos < len(pk)) & (pk[pos_c] == lookup) if len(pk) else np.zeros(len(lookup), bool)
    shared = np.where(found, np.minimum(rc, pc[pos_c] if len(pc) else 0), 0)
    common = np.bincount(ref_of, weights=shared, minlength=m)
    return Overlap(
        common=common,
        len_pred=np.asarray(len_pred, dtype=np.float64),
        len_ref=np.diff(r_off).astype(np.float64),
        owner=owner,
        starts=starts,
    )


def prf(ov: Overlap, empty_pred_score: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-reference token precision, recall and F1 with the instruct-qa conventions.

    precision = common / |pred|         (0 when |pred| = 0)
    recall    = common / |ref|          (1 when |ref| = 0)
    F1        = 2 P R / (P + R)         (when |pred| = 0 or |ref| = 0: 1 if both are empty, else 0;
                                         0 when common = 0)
    With `empty_pred_score` (the "++" variants), all three equal it when |pred| = 0.
    """
    lp = ov.len_pred[ov.owner]
    lr = ov.len_ref
    c = ov.common
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(lp > 0, c / np.where(lp > 0, lp, 1), 0.0)
        recall = np.where(lr > 0, c / np.where(lr > 0, lr, 1), 1.0)
        denom = precision + recall
        f1 = np.where((c > 0) & (denom > 0), 2 * precision * recall / np.where(denom > 0, denom, 1), 0.0)
    f1 = np.where((lp == 0) | (lr == 0), ((lp == 0) & (lr == 0)).astype(float), f1)
    if empty_pred_score is not None:
        empty = lp == 0
        precision = np.where(empty, empty_pred_score, precision)
        recall = np.where(empty, empty_pred_score, recall)
        f1 = np.where(empty, empty_pred_score, f1)
    return precision, recall, f1


def max_per_item(values: np.ndarray, ov: Overlap) -> np.ndarray:
    """max over each item's references (references of one item are contiguous)."""
    if len(ov.starts) == 0:
        return np.zeros(0)
    return np.maximum.reduceat(values, ov.starts)
