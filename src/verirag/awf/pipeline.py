"""The pipeline: retrieve -> generate -> verify -> act.

    p = Pipeline.from_preset("local")
    p.index("docs/")                 # or p.load_index("my-index/")
    r = p.ask("Who wrote ...?")      # AskResult: answer, score, faithful, action, evidence, timings
"""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from verirag.awf.entailment.base import EntailmentModel
from verirag.awf.generators.base import AnswerGenerator
from verirag.awf.policies import ABSTENTION_TEXT, ABSTAINED, ANSWERED, FALLBACK, FALLBACKS, decide
from verirag.awf.predictors.base import FaithfulnessPredictor
from verirag.awf.registry import create
from verirag.errors import InputError
from verirag.llm.factory import load_llm
from verirag.types import AskResult, Evidence, Passage, ScoredPassage


@dataclass(frozen=True)
class PipelineConfig:
    """Everything that defines a pipeline. `judge` is "llm" (the LLM yes/no judge), "same"
    (alias of "llm"), or "hf:MODEL" for an HF NLI model; `judge_model` defaults to `model`."""

    model: str = "qwen2.5-1.5b"
    judge: str = "llm"
    judge_model: str | None = None
    generator: str = "vanilla"
    retrieval: str = "hybrid"
    k: int = 5
    threshold: float = 0.5
    fallback: str = "abstain"
    n_ctx: int = 4096
    max_answer_tokens: int = 64
    chunk_words: int = 200
    overlap_words: int = 20

    def validate(self) -> "PipelineConfig":
        if not 0.0 <= self.threshold <= 1.0:
            raise InputError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.k < 1:
            raise InputError(f"k must be at least 1, got {self.k}")
        if self.fallback not in FALLBACKS:
            raise InputError(f"fallback must be one of {', '.join(FALLBACKS)}, got {self.fallback!r}")
        return self


PRESETS: dict[str, PipelineConfig] = {
    # The quality default: Qwen2.5-1.5B answers and judges; hybrid BM25 + MiniLM retrieval.
    "local": PipelineConfig(),
    "fast": PipelineConfig(model="qwen2.5-0.5b"),
    # The smallest real model: for tests and smoke runs, not for answers worth trusting.
    "tiny": PipelineConfig(model="smollm2-135m", n_ctx=2048),
}


class Pipeline:
    def __init__(self, config: PipelineConfig, *, index=None):
        self.config = config.validate()
        self._index = index
        self._generator: AnswerGenerator | None = None
        self._fallback_generator: AnswerGenerator | None = None
        self._predictor: FaithfulnessPredictor | None = None

    @classmethod
    def from_preset(cls, name: str = "local", **overrides) -> "Pipeline":
        if name not in PRESETS:
            raise InputError(f"unknown pipeline preset {name!r}; known: {', '.join(PRESETS)}")
        overrides = {k: v for k, v in overrides.items() if v is not None}
        return cls(replace(PRESETS[name], **overrides))

    # ---- index ----------------------------------------------------------------------------
    def index(self, corpus: str | Path | Sequence[Passage], *, save_to: str | Path | None = None):
        """Build the retrieval index from a folder/file path or from passages; optionally save it."""
        from verirag.retrieval import Index, load_corpus
        if isinstance(corpus, (str, Path)):
            loaded = load_corpus(corpus)
            passages, self.skipped = loaded.passages, loaded.skipped
        else:
            passages, self.skipped = list(corpus), []
        if not passages:
            raise InputError("the corpus is empty: there is nothing to retrieve from")
        self._index = Index.build(passages, kind=self.config.retrieval, chunk_words=self.config.chunk_words,
                                  overlap_words=self.config.overlap_words)
        if save_to is not None:
            self._index.save(save_to)
        return self._index

    def load_index(self, path: str | Path):
        from verirag.retrieval import Index
        self._index = Index.load(path)
        return self._index

    # ---- components (loaded lazily, once) -------------------------------------------------
    @property
    def llm(self):
        return load_llm(self.config.model, n_ctx=self.config.n_ctx)

    @property
    def generator(self) -> AnswerGenerator:
        if self._generator is None:
            self._generator = create("generator", self.config.generator, self.llm,
                                     max_tokens=self.config.max_answer_tokens)
        return self._generator

    @property
    def fallback_generator(self) -> AnswerGenerator:
        if self._fallback_generator is None:
            self._fallback_generator = create("generator", "no_context", self.llm,
                                              max_tokens=self.config.max_answer_tokens)
        return self._fallback_generator

    @property
    def predictor(self) -> FaithfulnessPredictor:
        if self._predictor is None:
            self._predictor = create("predictor", "nli", self._entailment())
        return self._predictor

    def _entailment(self) -> EntailmentModel:
        judge = self.config.judge
        if judge in ("llm", "same"):
            llm = load_llm(self.config.judge_model or self.config.model, n_ctx=self.config.n_ctx)
            return create("entailment", "llm", llm)
        if judge.startswith("hf:"):
            return create("entailment", "hf_nli", judge[3:])
        raise InputError(f"unknown judge {judge!r}: use 'llm' or 'hf:MODEL_ID_OR_PATH'")

    # ---- asking ---------------------------------------------------------------------------
    def retrieve(self, question: str, k: int | None = None) -> list[ScoredPassage]:
        if self._index is None:
            raise InputError("no index: call index(corpus) or load_index(path) first")
        return self._index.search(question, k=k or self.config.k)

    def ask(self, question: str, *, k: int | None = None, threshold: float | None = None,
            fallback: str | None = None) -> AskResult:
        question = (question or "").strip()
        if not question:
            raise InputError("the question is empty")
        threshold = self.config.threshold if threshold is None else threshold
        fallback = fallback or self.config.fallback
        replace(self.config, threshold=threshold, fallback=fallback).validate()
        timings: dict[str, float] = {}
        t0 = time.perf_counter()

        hits = self.retrieve(question, k)
        timings["retrieve"] = time.perf_counter() - t0
        passages = [h.passage for h in hits]

        t = time.perf_counter()
        answer = self.generator.answer(question, passages)
        timings["generate"] = time.perf_counter() - t

        t = time.perf_counter()
        if answer.error:
            verification = None
            score, error = math.nan, answer.error
        else:
            verification = self.predictor.verify(question, answer.text, passages)
            score, error = verification.score, verification.error
        timings["verify"] = time.perf_counter() - t

        action = decide(score, threshold, fallback)
        final = answer.text
        if action == ABSTAINED:
            final = ABSTENTION_TEXT
        elif action == FALLBACK:
            t = time.perf_counter()
            fb = self.fallback_generator.answer(question)
            timings["fallback"] = time.perf_counter() - t
            final = fb.text
            if fb.error:
                action, final = ABSTAINED, ABSTENTION_TEXT
                error = "; ".join(e for e in (error, f"fallback failed: {fb.error}") if e)
        timings["total"] = time.perf_counter() - t0

        per = verification.per_passage if verification else [None] * len(hits)
        evidence = [Evidence(id=h.passage.id, text=h.passage.text, title=h.passage.title,
                             source=h.passage.source, retrieval_score=float(h.score), support_score=s)
                    for h, s in zip(hits, per)]
        best = verification.best if verification else None
        return AskResult(
            question=question, answer=final, score=0.0 if math.isnan(score) else float(score),
            faithful=action == ANSWERED, threshold=threshold, action=action, evidence=evidence,
            supporting_passage=evidence[best] if best is not None else None,
            retrieved_answer=answer.text, model=self.llm.model_id,
            judge=self.predictor.name if not answer.error else self.config.judge,
            timings={k: round(v, 4) for k, v in timings.items()}, error=error)

    def describe(self) -> dict:
        return asdict(self.config)
