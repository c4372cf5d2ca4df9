"""Conformal trust filter on retrieval (Geissler et al., "Towards Dependable RAG Using Factual
Confidence Prediction", section 3.2).

The retriever is read as a one-class classifier whose score says "this chunk comes from the right
source". Calibration (`fit`) takes, for each calibration question, the raw scores of its top-K
chunks and which of them are correct (`chunk_ground_truth`), min-max normalises all scores with the
calibration extremes (n1_, n2_), and takes q_hat_ = the ceil((n+1)(1-alpha))-th smallest
non-conformity 1 - s over the n correct chunks (paper eq. 2; n counts correct chunks, not questions).
A new chunk is trusted when its normalised score s >= 1 - q_hat_ (eq. 4); under exchangeability a
correct chunk is trusted with probability in [1 - alpha, 1 - alpha + 1/(n+1)] (eq. 3).

Per question, m1 = (|C| > 0) and m2 = |C| / K (eq. 5-6). Over a set, mean m1 falling short of
1 - alpha by more than its standard error means the guarantee does not carry over to this
retriever and data (section 4.2: exchangeability fails, e.g. when the correct chunk is rarely in the
top K), and `diagnose` says so.

    f = ConformalTrustFilter(alpha=0.1).fit(scores, correct)     # lists of per-question arrays
    mask = f.trusted(new_scores)                                 # boolean, one per chunk
    f.save("trust.json"); ConformalTrustFilter.load("trust.json", expect={"retriever": "bm25", "k": 10})

Saved as one JSON file (`verirag.learned.base`). Loading it for another retriever refuses (the
min-max normalisation is of that retriever's scores); another corpus or K warns: the filter still
works, but its coverage guarantee does not carry over.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.base import LearnedPart
from verirag.metrics.stats import conformal_quantile


def wrong_source_threshold(rouge: Sequence[np.ndarray], right_source: Sequence[np.ndarray], beta: float) -> float:
    """s_thres (paper eq. 1): the beta-quantile of ROUGE-L(chunk, reference) over the chunks of the
    wrong source, pooled over the calibration questions. beta = 0 means "by source only" (-inf:
    every chunk of the right source is correct)."""
    if not 0.0 <= beta <= 1.0:
        raise InputError(f"beta must be in [0, 1], got {beta}")
    if beta == 0.0:
        return -math.inf
    wrong = np.concatenate(
        [np.asarray(h, float)[~np.asarray(d, bool)] for h, d in zip(rouge, right_source)] or [np.empty(0)]
    )
    if wrong.size == 0:
        raise InputError("no chunk of a wrong source in the calibration data: s_thres needs some (or use beta=0)")
    return float(np.quantile(wrong, beta))


def chunk_ground_truth(
    rouge: Sequence[np.ndarray], right_source: Sequence[np.ndarray], beta: float
) -> tuple[list[np.ndarray], float]:
    """Boolean correctness of every chunk (paper Y_cal): from the right source and ROUGE-L >= s_thres.
    Returns the per-question labels and s_thres."""
    s_thres = wrong_source_threshold(rouge, right_source, beta)
    labels = [np.asarray(d, bool) & (np.asarray(h, float) >= s_thres) for h, d in zip(rouge, right_source)]
    return labels, s_thres


def label_chunks(
    chunks: Sequence[Sequence[tuple[str, str]]],
    references: Sequence[str],
    sources: Sequence[Sequence[str]],
    beta: float,
    s_thres: float | None = None,
) -> tuple[list[np.ndarray], float]:
    """`correct` for `ConformalTrustFilter.fit` from text: per question, its retrieved chunks as
    (text, source) pairs, its reference answer, and the source(s) the reference comes from (NQ: the
    gold passage's title; HotpotQA: the gold paragraphs' titles; a JSONL's `source` field).
    h = ROUGE-L F(chunk, reference) (`verirag.metrics.qa.rouge_l`, as rouge-score). Returns the labels
    and s_thres: estimated from these chunks, or `s_thres` as given (held-out questions are
    labelled with their calibration's threshold)."""
    from verirag.metrics.qa import rouge_l_batch

    if not (len(chunks) == len(references) == len(sources)):
        raise InputError(f"{len(chunks)} chunk lists, {len(references)} references, {len(sources)} source lists")
    rouge, right = [], []
    for cs, ref, srcs in zip(chunks, references, sources):
        texts = [t for t, _ in cs]
        rouge.append(rouge_l_batch(texts, [ref] * len(texts)) if texts else np.empty(0))
        right.append(np.array([src in set(srcs) for _, src in cs], bool))
    if s_thres is None:
        return chunk_ground_truth(rouge, right, beta)
    return [d & (h >= s_thres) for h, d in zip(rouge, right)], s_thres


@dataclass
class Coverage:
    """m1 (a question kept at least one chunk) and m2 (the share of its K chunks kept), as means
    over questions with their standard errors."""

    m1: float
    m1_se: float
    m2: float
    m2_se: float
    n_questions: int

    def to_dict(self) -> dict[str, float]:
        return {"m1": self.m1, "m1_se": self.m1_se, "m2": self.m2, "m2_se": self.m2_se, "n_questions": self.n_questions}


class ConformalTrustFilter(LearnedPart):
    """Construct, `fit(scores, correct)`, then `trusted(scores)`. Fitted state:

    - `n1_`, `n2_`: the smallest and largest raw calibration score (the min-max normalisation);
    - `q_hat_`: the conformal quantile of 1 - s over correct calibration chunks (inf when
      ceil((n+1)(1-alpha)) > n: too few correct chunks for this alpha, every chunk is trusted);
    - `n_correct_`: n, the number of correct calibration chunks; `n_questions_`; `k_`: chunks per question;
    - `calibration_`: m1 / m2 on the calibration questions themselves.
    `fingerprints`: "retriever" (the index kind), "corpus" (the index fingerprint), "k".
    """

    format_name = "trust_filter"
    title = "trust filter"
    fitted_attribute = "q_hat_"
    fit_command = "verirag calibrate-retrieval DATA --out FILE"
    refuse_on = ("retriever",)
    warn_on = ("corpus", "k")

    def __init__(self, alpha: float = 0.1, beta: float = 0.0, *, fingerprints: dict[str, Any] | None = None):
        super().__init__(fingerprints)
        if not 0.0 < alpha < 1.0:
            raise InputError(f"alpha must be in (0, 1), got {alpha}")
        if not 0.0 <= beta <= 1.0:
            raise InputError(f"beta must be in [0, 1], got {beta}")
        self.alpha, self.beta = float(alpha), float(beta)

    # ---- fitting --------------------------------------------------------------------------------
    def fit(
        self, scores: Sequence[Sequence[float]], correct: Sequence[Sequence[bool]], k: int | None = None
    ) -> ConformalTrustFilter:
        """`k`: the chunks retrieved per question (default: the most any question has)."""
        if len(scores) != len(correct):
            raise InputError(f"{len(scores)} score arrays but {len(correct)} label arrays")
        if not scores:
            raise InputError("no calibration questions")
        s = [np.asarray(x, float) for x in scores]
        y = [np.asarray(c, bool) for c in correct]
        for i, (a, b) in enumerate(zip(s, y)):
            if a.shape != b.shape or a.ndim != 1:
                raise InputError(f"question {i}: {a.shape} scores but {b.shape} labels")
            if not np.all(np.isfinite(a)):
                raise InputError(f"question {i}: a retrieval score is not finite")
        flat = np.concatenate(s)
        if flat.size == 0:
            raise InputError("the calibration questions retrieved no chunks")
        self.n1_, self.n2_ = float(flat.min()), float(flat.max())
        nonconformity = 1.0 - self.normalize(np.concatenate([a[b] for a, b in zip(s, y)]))
        if nonconformity.size == 0:
            raise InputError(
                "no correct chunk in the calibration data: the retriever never found the right "
                "source in its top K, so there is nothing to calibrate on"
            )
        self.q_hat_ = conformal_quantile(nonconformity, self.alpha)
        self.n_correct_, self.n_questions_ = int(nonconformity.size), len(s)
        self.k_ = int(k or max(a.size for a in s))
        self.fingerprints["k"] = self.k_
        self.calibration_ = self.coverage(s)
        return self

    # ---- inference ------------------------------------------------------------------------------
    def normalize(self, scores) -> np.ndarray:
        """Min-max normalisation with the calibration extremes (values outside them go beyond [0, 1])."""
        span = self.n2_ - self.n1_
        a = np.asarray(scores, float)
        return np.ones_like(a) if span == 0 else (a - self.n1_) / span

    @property
    def threshold_(self) -> float:
        """The normalised score a chunk needs: 1 - q_hat_."""
        self.check_fitted()
        return 1.0 - self.q_hat_

    def trusted(self, scores) -> np.ndarray:
        """The boolean mask of trusted chunks among one question's raw scores."""
        self.check_fitted()
        return self.normalize(scores) >= self.threshold_

    def coverage(self, scores: Sequence[Sequence[float]], k: int | None = None) -> Coverage:
        """m1 and m2 over questions (each question's raw scores); K defaults to each question's own count."""
        self.check_fitted()
        kept = [int(self.trusted(a).sum()) for a in scores]
        m1 = np.array([c > 0 for c in kept], float)
        m2 = np.array([c / (k or max(1, len(a))) for c, a in zip(kept, scores)], float)
        n = len(kept)

        def se(v):
            return float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan

        return Coverage(float(m1.mean()) if n else math.nan, se(m1), float(m2.mean()) if n else math.nan, se(m2), n)

    def diagnose(self, coverage: Coverage | None = None) -> str | None:
        """The suitability diagnostic (paper section 4.2): a message when mean m1 falls short of
        1 - alpha by more than its standard error, else None."""
        c = coverage or self.calibration_
        gap = c.m1 - (1.0 - self.alpha)
        if gap < 0 and -gap > (c.m1_se if not math.isnan(c.m1_se) else 0.0):
            return (
                f"mean m1 = {c.m1:.3f} (SE {c.m1_se:.3f}) falls short of 1 - alpha = {1 - self.alpha:.3f}: "
                f"on {c.n_questions} questions this retriever often keeps no chunk, so the coverage "
                "guarantee does not carry over (exchangeability fails: the right source is often "
                "missing from the top K)"
            )
        return None

    # ---- saved form -------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {**super().state(), "calibration_": asdict(self.calibration_)}

    def restore(self, state: dict[str, Any], path: Path) -> None:
        super().restore(state, path)
        self.q_hat_ = math.inf if self.q_hat_ is None else float(self.q_hat_)  # inf is written as null
        self.calibration_ = Coverage(**{k: math.nan if v is None else v for k, v in self.calibration_.items()})

    @classmethod
    def upgrade(cls, d: dict[str, Any], path: Path) -> dict[str, Any]:
        """A filter of the first format ("verirag.conformal_trust_filter/1")."""
        if d.get("format") != "verirag.conformal_trust_filter/1":
            return super().upgrade(d, path)
        return {
            "settings": {"alpha": d["alpha"], "beta": d["beta"]},
            "fingerprints": {"retriever": d.get("retriever"), "corpus": d.get("corpus"), "k": d["k"]},
            "state": {
                "k_": d["k"],
                "n1_": d["n1"],
                "n2_": d["n2"],
                "q_hat_": d["q_hat"],
                "n_correct_": d["n_correct"],
                "n_questions_": d["n_questions"],
                "calibration_": d["calibration"],
            },
        }
