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
    f.save("trust.json"); ConformalTrustFilter.load("trust.json", retriever="bm25", k=10)
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError

FORMAT = "verirag.conformal_trust_filter/1"


def wrong_source_threshold(rouge: Sequence[np.ndarray], right_source: Sequence[np.ndarray], beta: float) -> float:
    """s_thres (paper eq. 1): the beta-quantile of ROUGE-L(chunk, reference) over the chunks of the
    wrong source, pooled over the calibration questions. beta = 0 means "by source only" (-inf:
    every chunk of the right source is correct)."""
    if not 0.0 <= beta <= 1.0:
        raise InputError(f"beta must be in [0, 1], got {beta}")
    if beta == 0.0:
        return -math.inf
    wrong = np.concatenate([np.asarray(h, float)[~np.asarray(d, bool)] for h, d in zip(rouge, right_source)]
                           or [np.empty(0)])
    if wrong.size == 0:
        raise InputError("no chunk of a wrong source in the calibration data: s_thres needs some (or use beta=0)")
    return float(np.quantile(wrong, beta))


def chunk_ground_truth(rouge: Sequence[np.ndarray], right_source: Sequence[np.ndarray],
                       beta: float) -> tuple[list[np.ndarray], float]:
    """Boolean correctness of every chunk (paper Y_cal): from the right source and ROUGE-L >= s_thres.
    Returns the per-question labels and s_thres."""
    s_thres = wrong_source_threshold(rouge, right_source, beta)
    labels = [np.asarray(d, bool) & (np.asarray(h, float) >= s_thres) for h, d in zip(rouge, right_source)]
    return labels, s_thres


def label_chunks(chunks: Sequence[Sequence[tuple[str, str]]], references: Sequence[str],
                 sources: Sequence[Sequence[str]], beta: float,
                 s_thres: float | None = None) -> tuple[list[np.ndarray], float]:
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
        return {"m1": self.m1, "m1_se": self.m1_se, "m2": self.m2, "m2_se": self.m2_se,
                "n_questions": self.n_questions}


class ConformalTrustFilter:
    """Construct, `fit(scores, correct)`, then `trusted(scores)`. Fitted state:

    - `n1_`, `n2_`: the smallest and largest raw calibration score (the min-max normalisation);
    - `q_hat_`: the conformal quantile of 1 - s over correct calibration chunks (inf when
      ceil((n+1)(1-alpha)) > n: too few correct chunks for this alpha, every chunk is trusted);
    - `n_correct_`: n, the number of correct calibration chunks; `n_questions_`; `k_`: chunks per question;
    - `calibration_`: m1 / m2 on the calibration questions themselves.
    """

    def __init__(self, alpha: float = 0.1, beta: float = 0.0, *, retriever: str = "", corpus: str = ""):
        if not 0.0 < alpha < 1.0:
            raise InputError(f"alpha must be in (0, 1), got {alpha}")
        if not 0.0 <= beta <= 1.0:
            raise InputError(f"beta must be in [0, 1], got {beta}")
        self.alpha, self.beta = float(alpha), float(beta)
        self.retriever, self.corpus = retriever, corpus

    # ---- fitting --------------------------------------------------------------------------------
    def fit(self, scores: Sequence[Sequence[float]], correct: Sequence[Sequence[bool]]) -> "ConformalTrustFilter":
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
        n = int(nonconformity.size)
        if n == 0:
            raise InputError("no correct chunk in the calibration data: the retriever never found the right "
                             "source in its top K, so there is nothing to calibrate on")
        rank = math.ceil((n + 1) * (1.0 - self.alpha))   # the rank-th smallest, 1-based
        self.q_hat_ = math.inf if rank > n else float(np.sort(nonconformity)[rank - 1])
        self.n_correct_, self.n_questions_ = n, len(s)
        self.k_ = int(max(a.size for a in s))
        self.calibration_ = self.coverage(s)
        return self

    @property
    def fitted(self) -> bool:
        return hasattr(self, "q_hat_")

    def _check(self) -> None:
        if not self.fitted:
            raise RuntimeError("ConformalTrustFilter is not fitted: call fit(scores, correct) first")

    # ---- inference ------------------------------------------------------------------------------
    def normalize(self, scores) -> np.ndarray:
        """Min-max normalisation with the calibration extremes (values outside them go beyond [0, 1])."""
        span = self.n2_ - self.n1_
        a = np.asarray(scores, float)
        return np.ones_like(a) if span == 0 else (a - self.n1_) / span

    @property
    def threshold_(self) -> float:
        """The normalised score a chunk needs: 1 - q_hat_."""
        self._check()
        return 1.0 - self.q_hat_

    def trusted(self, scores) -> np.ndarray:
        """The boolean mask of trusted chunks among one question's raw scores."""
        self._check()
        return self.normalize(scores) >= self.threshold_

    def coverage(self, scores: Sequence[Sequence[float]], k: int | None = None) -> Coverage:
        """m1 and m2 over questions (each question's raw scores); K defaults to each question's own count."""
        self._check()
        kept = [int(self.trusted(a).sum()) for a in scores]
        m1 = np.array([c > 0 for c in kept], float)
        m2 = np.array([c / (k or max(1, len(a))) for c, a in zip(kept, scores)], float)
        n = len(kept)
        se = (lambda v: float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan)
        return Coverage(float(m1.mean()) if n else math.nan, se(m1), float(m2.mean()) if n else math.nan, se(m2), n)

    def diagnose(self, coverage: Coverage | None = None) -> str | None:
        """The suitability diagnostic (paper section 4.2): a message when mean m1 falls short of
        1 - alpha by more than its standard error, else None."""
        c = coverage or self.calibration_
        gap = c.m1 - (1.0 - self.alpha)
        if gap < 0 and -gap > (c.m1_se if not math.isnan(c.m1_se) else 0.0):
            return (f"mean m1 = {c.m1:.3f} (SE {c.m1_se:.3f}) falls short of 1 - alpha = {1 - self.alpha:.3f}: "
                    f"on {c.n_questions} questions this retriever often keeps no chunk, so the coverage "
                    "guarantee does not carry over (exchangeability fails: the right source is often "
                    "missing from the top K)")
        return None

    # ---- persistence (JSON, never pickle) --------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        self._check()
        return {"format": FORMAT, "alpha": self.alpha, "beta": self.beta, "retriever": self.retriever,
                "corpus": self.corpus, "k": self.k_, "n1": self.n1_, "n2": self.n2_,
                "q_hat": None if math.isinf(self.q_hat_) else self.q_hat_, "n_correct": self.n_correct_,
                "n_questions": self.n_questions_, "calibration": self.calibration_.to_dict()}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ConformalTrustFilter":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError(f"not a conformal trust filter (expected format {FORMAT!r})")
        try:
            f = cls(alpha=float(d["alpha"]), beta=float(d["beta"]), retriever=str(d.get("retriever", "")),
                    corpus=str(d.get("corpus", "")))
            f.k_, f.n1_, f.n2_ = int(d["k"]), float(d["n1"]), float(d["n2"])
            f.q_hat_ = math.inf if d["q_hat"] is None else float(d["q_hat"])
            f.n_correct_, f.n_questions_ = int(d["n_correct"]), int(d["n_questions"])
            f.calibration_ = Coverage(**{k: float(v) if k != "n_questions" else int(v)
                                         for k, v in d["calibration"].items()})
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"a malformed conformal trust filter: {type(e).__name__}: {e}") from None
        return f

    @classmethod
    def load(cls, path: str | Path, *, retriever: str | None = None, corpus: str | None = None,
             k: int | None = None) -> "ConformalTrustFilter":
        """Load a saved filter; warn when it was calibrated for another retriever, corpus or K."""
        try:
            d = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"cannot read the trust filter {path}: {e}") from None
        f = cls.from_dict(d)
        for what, want, have in (("retriever", f.retriever, retriever), ("corpus", f.corpus, corpus),
                                 ("K", f.k_, k)):
            if have is not None and want and have != want:
                warnings.warn(f"the trust filter {path} was calibrated for {what} {want!r}, not {have!r}: "
                              "its guarantee does not carry over", stacklevel=2)
        return f
