"""CalibRAG's inference stages 2-3 (Jang et al., section 3.4) as one post-retrieval step.

Stage 2: score every retrieved document with the forecaster, f(q, d), and rerank by it; the best
document d* is the one the answer is built from, and f(q, d*) is the confidence shown with it.
Stage 3: when f(q, d*) < epsilon, no retrieved document is expected to help, so the LLM rewrites
the query to stress its key content (`calibrag_reformulate`), retrieval runs again with it, and
the new documents are scored the same way. This happens at most once per question.

Two choices the paper leaves open, made here: the second pass scores its documents against the
original question (the forecaster was trained on questions; the rewrite is for the retriever), and
the pass whose best document scores higher is kept (a rewrite that retrieves worse documents does
not replace better ones).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verirag.awf.calibrag import reformulate_query
from verirag.errors import InputError
from verirag.types import ScoredPassage


@dataclass
class Reranked:
    """What the stage did: `kept` (the documents passed on, best first), `confidence` f(q, d*),
    and `info` for the JSON answer."""

    kept: list[ScoredPassage]
    confidence: float
    info: dict[str, Any] = field(default_factory=dict)


class ForecastRerank:
    """`forecaster` is a fitted `verirag.learned.forecaster` kind; `retrieve(query, k)` returns the
    retriever's top k; `llm` rewrites the query. `depth` documents are retrieved and scored,
    `keep` of them (best first) reach the generator (the paper: 1, d*)."""

    def __init__(self, forecaster, retrieve: Callable[[str, int], list[ScoredPassage]], llm, *,
                 epsilon: float = 0.3, depth: int = 20, keep: int = 1):
        if not 0.0 <= epsilon <= 1.0:
            raise InputError(f"epsilon must be in [0, 1], got {epsilon}")
        if depth < 1 or keep < 1:
            raise InputError("the rerank depth and the documents kept must be at least 1")
        self.forecaster, self.retrieve, self.llm = forecaster, retrieve, llm
        self.epsilon, self.depth, self.keep = epsilon, depth, keep

    def score(self, question: str, hits: list[ScoredPassage]) -> list[tuple[ScoredPassage, float]]:
        """(document, f(q, d)) best first; documents without text cannot help and score 0."""
        probs = self.forecaster.score_passages(question, [h.passage for h in hits])
        return sorted(zip(hits, probs), key=lambda hp: (-hp[1], hp[0].rank))

    def run(self, question: str, hits: list[ScoredPassage] | None = None,
            on_stage: Callable[[str], None] | None = None) -> Reranked:
        stage = on_stage or (lambda _s: None)
        hits = self.retrieve(question, self.depth) if hits is None else hits
        stage(f"forecasting {len(hits)} documents")
        ranked = self.score(question, hits)
        best = ranked[0][1] if ranked else 0.0
        info: dict[str, Any] = {"epsilon": self.epsilon, "reformulated": False, "query": None,
                                "first_pass_confidence": best}
        trained_k = self.forecaster.provenance.get("k")
        if isinstance(trained_k, int) and len(hits) > trained_k:
            # measured (README, CalibRAG): documents below the trained depth are where a weak f picks wrongly
            info["warning"] = (f"f scored {len(hits)} documents but was trained on the top {trained_k} of each "
                               f"question: ranks beyond {trained_k} are outside its training data")
        if best < self.epsilon:
            stage("reformulating the query")
            query, error = reformulate_query(self.llm, question)
            info.update(reformulated=True, query=query)
            if error:
                info["reformulate_error"] = error
            elif query.strip().lower() != question.strip().lower():
                stage(f"forecasting {self.depth} documents for the new query")
                second = self.score(question, self.retrieve(query, self.depth))
                if second and second[0][1] > best:
                    ranked, best = second, second[0][1]
                    info["used"] = "reformulated"
            info.setdefault("used", "original")
        info["confidence"] = best
        info["reranked"] = [{"id": h.passage.id, "f": round(p, 6), "retrieval_rank": h.rank,
                             "retrieval_score": float(h.score)} for h, p in ranked]
        kept = [h for h, _ in ranked[:self.keep]]
        info["kept"] = [h.passage.id for h in kept]
        return Reranked(kept, best, info)
