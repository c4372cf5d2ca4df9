"""Calibrate a conformal trust filter for a retriever from questions with reference answers and
the source each reference comes from (`verirag calibrate-retrieval`).

A question's reference sources are its `meta["source"]` (a JSONL's `source` field), else the titles
of its passages labelled relevant (NQ-pool: the gold passage; HotpotQA: the gold paragraphs). A
retrieved chunk comes from the right source when its title (or, failing that, its source) is one of
them. Questions without a known source or reference are skipped and counted, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.splits import split_by_group
from verirag.learned.trust_filter import ConformalTrustFilter, label_chunks
from verirag.types import Example, Passage
from verirag_lab.train.guard import TrainingGuard


def reference_sources(ex: Example) -> list[str]:
    src = ex.meta.get("source") if isinstance(ex.meta, dict) else None
    if src:
        return [src] if isinstance(src, str) else [str(s) for s in src]
    if ex.relevance:
        return sorted({p.title for p, r in zip(ex.passages, ex.relevance) if r == 1 and p.title})
    return []


def chunk_source(p: Passage) -> str:
    return p.title or p.source


@dataclass
class TrustCalibration:
    filter: ConformalTrustFilter
    s_thres: float
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> questions
    warning: str | None = None
    scores: list[list[float]] = field(default_factory=list)  # per question, what it was fitted on
    labels: list[np.ndarray] = field(default_factory=list)

    def refit(self, alpha: float) -> ConformalTrustFilter:
        """The same calibration data at another error rate (Figure 4's sweep)."""
        f = self.filter
        return ConformalTrustFilter(alpha=alpha, beta=f.beta, fingerprints=f.fingerprints).fit(
            self.scores, self.labels, k=f.k_
        )

    def summary(self) -> dict[str, Any]:
        f = self.filter
        return {
            "alpha": f.alpha,
            "beta": f.beta,
            "retriever": f.fingerprints.get("retriever"),
            "k": f.k_,
            "q_hat": f.q_hat_,
            "threshold": f.threshold_,
            "n_questions": f.n_questions_,
            "n_correct_chunks": f.n_correct_,
            "s_thres": self.s_thres,
            **{f"calibration_{k}": v for k, v in f.calibration_.to_dict().items()},
            "skipped": dict(self.skipped),
            "warning": self.warning,
        }


@dataclass
class HeldOut:
    """The filter on questions it was not fitted on: m1 / m2, and the share of correct chunks it
    trusted (the guarantee says >= 1 - alpha) with its 95% Clopper-Pearson interval."""

    coverage: float
    low: float
    high: float
    n_correct: int
    m1: float
    m1_se: float
    m2: float
    m2_se: float
    n_questions: int

    def holds(self, alpha: float) -> bool:
        return self.high >= 1.0 - alpha


def split_holdout(examples: Sequence[Example], share: float, seed: int = 0) -> tuple[list[Example], list[Example]]:
    """(calibration, held out): about `share` of the example groups held out, each group whole
    (HotpotQA's twin examples stay together)."""
    if not 0.0 <= share < 1.0:
        raise InputError(f"the held-out share must be in [0, 1), got {share}")
    keep, out = split_by_group([ex.group or ex.id for ex in examples], share, seed)
    return ([ex for ex, k in zip(examples, keep) if k], [ex for ex, o in zip(examples, out) if o])


def _prepare(examples: Sequence[Example], index, k: int):
    skipped: dict[str, int] = {}
    questions, refs, sources = [], [], []
    for ex in examples:
        srcs = reference_sources(ex)
        if not srcs:
            skipped["no reference source"] = skipped.get("no reference source", 0) + 1
            continue
        if not ex.references:
            skipped["no reference answer"] = skipped.get("no reference answer", 0) + 1
            continue
        questions.append(ex.question_with_history())
        refs.append(ex.references[0])
        sources.append(srcs)
    hits = index.search_many(questions, k=k) if questions else []
    chunks = [[(h.passage.text, chunk_source(h.passage)) for h in hs] for hs in hits]
    return skipped, hits, chunks, refs, sources


def held_out_check(cal: TrustCalibration, examples: Sequence[Example], index) -> HeldOut:
    """Evaluate a fitted filter on other questions, labelling their chunks with the calibration's
    s_thres (not one re-estimated on them)."""
    from scipy.stats import beta as beta_dist

    f = cal.filter
    _, hits, chunks, refs, sources = _prepare(examples, index, f.k_)
    if not hits:
        raise InputError("no held-out question with a reference and its source")
    labels, _ = label_chunks(chunks, refs, sources, f.beta, s_thres=cal.s_thres)
    correct_trusted = n_correct = 0
    for hs, y in zip(hits, labels):
        mask = f.trusted([x.score for x in hs]) if hs else np.zeros(0, bool)
        n_correct += int(y.sum())
        correct_trusted += int((mask & y).sum())
    cov = f.coverage([[x.score for x in hs] for hs in hits], k=f.k_)
    x, n = correct_trusted, n_correct
    low = float(beta_dist.ppf(0.025, x, n - x + 1)) if x > 0 else 0.0
    high = float(beta_dist.ppf(0.975, x + 1, n - x)) if x < n else 1.0
    return HeldOut(x / n if n else float("nan"), low, high, n, cov.m1, cov.m1_se, cov.m2, cov.m2_se, cov.n_questions)


def calibrate_retrieval(
    examples: Sequence[Example], index, *, k: int = 10, alpha: float = 0.1, beta: float = 0.0
) -> TrustCalibration:
    """Retrieve the top `k` for each question from `index`, label the chunks (paper eq. 1) and fit."""
    if k < 1:
        raise InputError(f"k must be at least 1, got {k}")
    guard = TrainingGuard.for_training()  # evaluation data is never calibrated on
    examples = guard.keep(examples, lambda e: e.question, lambda e: [p.text for p in e.passages])
    skipped, hits, chunks, refs, sources = _prepare(examples, index, k)
    skipped.update({f"refused as evaluation data ({why})": n for why, n in guard.refused.items()})
    if not hits:
        raise InputError(
            f"no question with both a reference answer and its source: nothing to calibrate on (skipped: {skipped})"
        )
    labels, s_thres = label_chunks(chunks, refs, sources, beta)
    f = ConformalTrustFilter(
        alpha=alpha, beta=beta, fingerprints={"retriever": index.kind, "corpus": index.fingerprint}
    )
    scores = [[h.score for h in hs] for hs in hits]
    f.fit(scores, labels, k=k)
    return TrustCalibration(f, s_thres, skipped, f.diagnose(), scores, list(labels))


@dataclass
class RetrievalCalibration:
    """What `calibrate_retrieval_from_data` did: the fit, the index kind, the held-out check."""

    calibration: TrustCalibration
    retriever: str
    n_held_out: int
    held_out: HeldOut | None = None


def calibrate_retrieval_from_data(
    data: str,
    out_file: str | Path,
    *,
    index: str | Path | None = None,
    retrieval: str = "bm25",
    alpha: float = 0.1,
    beta: float = 0.0,
    k: int = 10,
    n: int | None = None,
    seed: int = 0,
    holdout: float = 0.0,
    on_stage: Callable[[str], None] | None = None,
) -> RetrievalCalibration:
    """What `verirag calibrate-retrieval` runs: load the questions (`load_questions`), the index
    (or pool their passages into one), keep `holdout` of the question groups out, fit the trust
    filter on the rest, save it to `out_file`, and check its guarantee on the held-out questions."""
    from verirag.retrieval.index import index_or_pooled
    from verirag_lab.train.data import load_questions

    stage = on_stage or (lambda _text: None)
    examples = load_questions(data, n, seed)
    stage("indexing the pooled passages" if index is None else "loading the index")
    idx = index_or_pooled(examples, index, kind=retrieval, source=str(data))  # held-out questions' too
    examples, held = split_holdout(examples, holdout, seed)
    stage(f"retrieving the top {k} for {len(examples)} questions")
    cal = calibrate_retrieval(examples, idx, k=k, alpha=alpha, beta=beta)
    cal.filter.save(out_file)
    result = RetrievalCalibration(cal, idx.kind, len(held))
    if held:
        stage(f"checking the guarantee on {len(held)} held-out questions")
        result.held_out = held_out_check(cal, held, idx)
    return result
