"""The pipeline's post-retrieval stages, each a small object with one job and a typed result.

    retrieve -> TrustFilterStage -> ForecastRerankStage -> the user's stages -> the stage kinds'
    (`verirag.awf.stage_kinds`) -> generate + verify (the AwF method) -> act

A stage takes (question, hits) and returns a StageResult: the hits it passes on, what the JSON
answer reports of it, and whether it asks for a re-query; its report goes under the answer's
`stages[name]` (`verirag.awf.user_stages.report`), or, with a `report` of its own, into its own
field of the answer core's PassagesRecord (`verirag.awf.core`), so a new stage is one class. A stage never calls back into the
pipeline: `run_stages` (the pipeline's loop) reformulates the question and runs retrieval and the
stages once more when a stage asks for it.

- TrustFilterStage: the conformal trust filter of Geissler et al., "Towards Dependable RAG Using
  Factual Confidence Prediction", section 3.2: keeps the chunks whose retrieval score the
  calibration trusts; when it keeps none, `on_untrusted` says what the pipeline does (abstain,
  answer with no context, or keep the top chunk).
- ForecastRerankStage: CalibRAG's inference stages 2-3 (Jang et al., section 3.4): f(q, d) scores
  every retrieved document, the best `keep` go on, and below `epsilon` it asks for a re-query. The
  second pass scores its documents against the original question (the forecaster was trained on
  questions; the rewrite is for the retriever), and the pass whose best document scores higher is
  kept (a rewrite that retrieves worse documents does not replace better ones).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verirag.errors import InputError
from verirag.types import ScoredPassage

Say = Callable[[str], None]

# What the pipeline does when the trust filter keeps no chunk (PipelineConfig.on_untrusted).
UNTRUSTED_ACTIONS = ("abstain", "no-context", "keep-top")


@dataclass
class StageResult:
    """`kept`: the hits passed on, best first; `info`: what the JSON answer reports;
    `requery`: the stage asks for one reformulated retrieval; `confidence`: how good this pass
    is (the better of two passes is kept); `whole`: the hits as the stage got them, when it cut
    their text, for a corrective second answer to read instead."""

    kept: list[ScoredPassage]
    info: dict[str, Any] = field(default_factory=dict)
    requery: bool = False
    confidence: float | None = None
    whole: list[ScoredPassage] | None = None


class TrustFilterStage:
    name = "trust"

    def __init__(self, trust_filter, on_untrusted: str = "abstain"):
        if on_untrusted not in UNTRUSTED_ACTIONS:
            raise InputError(f"on_untrusted must be one of {', '.join(UNTRUSTED_ACTIONS)}, got {on_untrusted!r}")
        self.filter, self.on_untrusted = trust_filter, on_untrusted

    def run(self, question: str, hits: list[ScoredPassage], say: Say) -> StageResult:
        f = self.filter
        mask = f.trusted([h.score for h in hits]) if hits else []
        kept = [h for h, m in zip(hits, mask) if m]
        info = {
            "threshold": f.threshold_,
            "alpha": f.alpha,
            "trusted": [h.passage.id for h in kept],
            "m1": bool(kept),
            "m2": len(kept) / len(hits) if hits else 0.0,
            "empty_action": None,
        }
        if not kept:
            info["empty_action"] = self.on_untrusted
            kept = hits[:1] if self.on_untrusted == "keep-top" else []
        return StageResult(kept, info)

    def report(self, result: StageResult, got: Retrieved, usage, record) -> None:
        """The JSON answer's `trust`; no chunk kept (and none kept on purpose) means untrusted."""
        record.trust = result.info
        record.untrusted = not got.hits


class ForecastRerankStage:
    name = "forecast"

    def __init__(self, forecaster, *, epsilon: float = 0.3, keep: int = 1):
        """`forecaster`: a fitted forecaster of `verirag.learned.forecaster`."""
        if not 0.0 <= epsilon <= 1.0:
            raise InputError(f"epsilon must be in [0, 1], got {epsilon}")
        if keep < 1:
            raise InputError("the documents kept must be at least 1")
        self.forecaster, self.epsilon, self.keep = forecaster, epsilon, keep

    def score(self, question: str, hits: Sequence[ScoredPassage]) -> list[tuple[ScoredPassage, float]]:
        """(document, f(q, d)) best first; documents without text cannot help and score 0."""
        probs = self.forecaster.score_passages(question, [h.passage for h in hits])
        return sorted(zip(hits, probs), key=lambda hp: (-hp[1], hp[0].rank))

    def run(self, question: str, hits: list[ScoredPassage], say: Say) -> StageResult:
        say(f"forecasting {len(hits)} documents")
        ranked = self.score(question, hits)
        best = ranked[0][1] if ranked else 0.0
        kept = [h for h, _ in ranked[: self.keep]]
        info: dict[str, Any] = {
            "epsilon": self.epsilon,
            "confidence": best,
            "kept": [h.passage.id for h in kept],
            "reranked": [
                {"id": h.passage.id, "f": round(p, 6), "retrieval_rank": h.rank, "retrieval_score": float(h.score)}
                for h, p in ranked
            ],
        }
        trained_k = self.forecaster.provenance.get("k")
        if isinstance(trained_k, int) and len(hits) > trained_k:
            # measured (README, CalibRAG): documents below the trained depth are where a weak f picks wrongly
            info["warning"] = (
                f"f scored {len(hits)} documents but was trained on the top {trained_k} of each "
                f"question: ranks beyond {trained_k} are outside its training data"
            )
        return StageResult(kept, info, requery=best < self.epsilon, confidence=best)

    def report(self, result: StageResult, got: Retrieved, usage, record) -> None:
        """The JSON answer's `forecast`: the reranked documents, and the re-query when one ran
        (its query, which pass was used, what the reformulation cost)."""
        requery = got.requery or {}
        forecast = {
            **result.info,
            "reformulated": got.requery is not None,
            "query": requery.get("query"),
            "usage": usage.to_dict(),
        }
        if got.requery is not None:
            forecast.update(used=requery["used"], first_pass_confidence=requery["first_pass_confidence"])
            if "error" in requery:
                forecast["reformulate_error"] = requery["error"]
        record.forecast = forecast


@dataclass
class Retrieved:
    """What retrieval and the post-retrieval stages gave: the hits the method reads, each stage's
    result (by stage name), and the re-query, when one ran (`requery`: query, used, error)."""

    hits: list[ScoredPassage]
    results: dict[str, StageResult]
    requery: dict[str, Any] | None = None

    @property
    def confidence(self) -> float:
        values = [r.confidence for r in self.results.values() if r.confidence is not None]
        return min(values) if values else 0.0


def run_stages(
    question: str,
    retrieve: Callable[[str], list[ScoredPassage]],
    stages: Sequence,
    say: Say,
    reformulate: Callable[[str], tuple[str, str | None]] | None = None,
) -> Retrieved:
    """Retrieve for `question`, run `stages` in order; when a stage asks for a re-query, rewrite
    the question once (`reformulate`: question -> (query, error)), retrieve and run the stages
    again, and keep the pass with the higher confidence."""
    first = _one_pass(question, question, retrieve, stages, say)
    if reformulate is None or not any(r.requery for r in first.results.values()):
        return first
    say("reformulating the query")
    query, error = reformulate(question)
    requery: dict[str, Any] = {"query": query, "used": "original", "first_pass_confidence": first.confidence}
    chosen = first
    if error:
        requery["error"] = error
    elif query.strip().lower() != question.strip().lower():
        second = _one_pass(question, query, retrieve, stages, say)
        if second.confidence > first.confidence:
            chosen, requery["used"] = second, "reformulated"
    chosen.requery = requery
    return chosen


def _one_pass(question: str, query: str, retrieve, stages, say: Say) -> Retrieved:
    hits = retrieve(query)
    results = {}
    for stage in stages:
        if not hits:  # nothing left to filter or rerank (e.g. no chunk trusted): the act stage decides
            break
        r = stage.run(question, hits, say)
        results[stage.name], hits = r, r.kept
    return Retrieved(hits, results)
