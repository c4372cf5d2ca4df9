"""The pipeline: retrieve -> generate -> verify -> act.

    p = Pipeline.from_preset("local")
    p.index("docs/")                 # or p.load_index("my-index/")
    r = p.ask("Who wrote ...?")      # AskResult: answer, score, faithful, action, evidence, timings
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from verirag.awf.compose import ComposedMethod, build_method
from verirag.awf.entailment.base import EntailmentModel
from verirag.awf.methods.base import AwFMethod
from verirag.awf.policies import ABSTAINED, ABSTENTION_TEXT, ANSWERED, FALLBACK, FALLBACKS, make_policy
from verirag.awf.registry import create
from verirag.awf.spec import MethodSpec, accepted_options
from verirag.awf.trace import Trace
from verirag.errors import BackendError, InputError, VeriragError
from verirag.learned.threshold import ANSWER, ThresholdController, as_controller
from verirag.llm.factory import load_llm
from verirag.llm.metered import MeteredLLM
from verirag.metrics.abstention import is_abstention
from verirag.llm.usage import metering
from verirag.types import AskResult, Evidence, Passage, ScoredPassage, VerifyResult


def stage_name(key: str, n_passages: int) -> str:
    """What a user is told while a trace quantity is computed (its key's head names it)."""
    kind, _, name = key.split("|", 1)[0].partition(":")
    if kind == "generator":
        if name == "no_context":
            return "answering without the passages"
        return f"reading {n_passages} passages and answering ({name})"
    if kind in ("predictor", "entailment"):
        return f"verifying ({name})"
    return f"answering and verifying ({name or kind})"


# What the pipeline does when the conformal trust filter keeps no chunk (PipelineConfig.on_untrusted).
UNTRUSTED_ACTIONS = ("abstain", "no-context", "keep-top")

# The default verifier is the in-context self-check: with the default model it ranks answers as
# well as post-answering NLI or the LLM judge (PR-AUC on 120 NQ questions, configs/verifier-choice.yaml)
# at a quarter of the judge's time and 1/34 of NLI's, because it reads only its own question after
# the answer (README, "Which verifier"). A user who names an entailment judge (--judge) gets the
# method that uses one.
DEFAULT_METHOD = "vanilla+self_check"
JUDGED_METHOD = "vanilla+nli"


@dataclass(frozen=True)
class PipelineConfig:
    """Everything that defines a pipeline.

    `method` is any AwF method name (`verirag.awf.compose.method_names()`): "vanilla+self_check"
    (the default), "vanilla+nli", "instructrag+pre_answering", "intrinsic", ... `judge` is the entailment model of
    predictors that use one (nli): None (default) or "llm" for the LLM yes/no judge ("same" is an
    alias), or "hf:MODEL" for an HF NLI model; set for a method without an entailment model, it is
    an InputError. `judge_model` (default `model`) runs the LLM judges. `fallback` acts below the
    threshold: abstain, no-rag, or escalate (to `escalate_model`)."""

    model: str = "qwen2.5-1.5b"
    method: str = DEFAULT_METHOD
    judge: str | None = None
    judge_model: str | None = None
    escalate_model: str | None = None
    retrieval: str = "hybrid"
    k: int = 5
    threshold: float = 0.5
    fallback: str = "abstain"
    n_ctx: int = 4096
    max_answer_tokens: int = 64
    chunk_words: int = 200
    overlap_words: int = 20
    # post-retrieval: a conformal trust filter (`verirag calibrate-retrieval`) keeps only trusted
    # chunks; when none is trusted: abstain, answer with no context, or keep the top chunk
    trust: str | None = None
    on_untrusted: str = "abstain"
    # post-retrieval: CalibRAG's forecaster (`verirag train forecaster`) scores `rerank_depth`
    # retrieved documents, reranks them and passes the best `forecast_keep` on; below `epsilon`
    # the query is reformulated and retrieval runs once more
    forecaster: str | None = None
    epsilon: float = 0.3
    rerank_depth: int = 20
    forecast_keep: int = 1

    def validate(self) -> "PipelineConfig":
        threshold = as_controller(self.threshold)   # a controller must be fitted; an uncertified one acts on all
        if threshold.kind == "value" and not 0.0 <= threshold.threshold_ <= 1.0:
            raise InputError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.k < 1:
            raise InputError(f"k must be at least 1, got {self.k}")
        if self.fallback not in FALLBACKS:
            raise InputError(f"fallback must be one of {', '.join(FALLBACKS)}, got {self.fallback!r}")
        if self.on_untrusted not in UNTRUSTED_ACTIONS:
            raise InputError(f"on_untrusted must be one of {', '.join(UNTRUSTED_ACTIONS)}, got {self.on_untrusted!r}")
        if not 0.0 <= self.epsilon <= 1.0:
            raise InputError(f"epsilon must be in [0, 1], got {self.epsilon}")
        if self.rerank_depth < 1 or self.forecast_keep < 1:
            raise InputError("rerank_depth and forecast_keep must be at least 1")
        if self.fallback == "escalate" and not self.escalate_model:
            raise InputError("the escalate fallback needs a second model: set escalate_model (--escalate-model)")
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
        self._method: AwFMethod | None = None
        self._policies: dict = {}
        self._trust = None
        self._forecaster = None

    @classmethod
    def from_preset(cls, name: str = "local", **overrides) -> "Pipeline":
        if name not in PRESETS:
            raise InputError(f"unknown pipeline preset {name!r}; known: {', '.join(PRESETS)}")
        overrides = {k: v for k, v in overrides.items() if v is not None}
        if overrides.get("judge") and "method" not in overrides and PRESETS[name].method == DEFAULT_METHOD:
            overrides["method"] = JUDGED_METHOD  # a judge was chosen: verify with the method that uses it
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

    @property
    def search_index(self):
        """The retrieval index in use (None before index() or load_index())."""
        return self._index

    def load_index(self, path: str | Path):
        from verirag.retrieval import Index
        self._index = Index.load(path)
        return self._index

    # ---- components (loaded lazily, once) -------------------------------------------------
    def _load(self, spec: str):
        """A model, metered: what each answer costs is counted (AskResult.usage)."""
        return MeteredLLM(load_llm(spec, n_ctx=self.config.n_ctx))

    @property
    def llm(self):
        return self._load(self.config.model)

    @property
    def method(self) -> AwFMethod:
        if self._method is None:
            judge_llm = self._load(self.config.judge_model) if self.config.judge_model else None
            options = {}
            if "max_tokens" in accepted_options(MethodSpec.parse(self.config.method).name):
                options["max_tokens"] = self.config.max_answer_tokens
            self._method = build_method(self.config.method, self.llm, judge_llm=judge_llm,
                                        entailment=self._entailment(), **options)
        return self._method

    def policy(self, fallback: str):
        if fallback not in self._policies:
            escalate = self._load(self.config.escalate_model) if fallback == "escalate" else None
            self._policies[fallback] = make_policy(fallback, self.llm, escalate_llm=escalate,
                                                   max_tokens=self.config.max_answer_tokens)
        return self._policies[fallback]

    def _entailment(self) -> EntailmentModel | None:
        """The entailment model the user chose (None: the method's default LLM judge)."""
        judge = self.config.judge
        if judge is None:
            return None
        if judge in ("llm", "same"):
            return create("entailment", "llm", self._load(self.config.judge_model or self.config.model))
        if judge.startswith("hf:"):
            return create("entailment", "hf_nli", judge[3:])
        raise InputError(f"unknown judge {judge!r}: use 'llm' or 'hf:MODEL_ID_OR_PATH'")

    @property
    def trust_filter(self):
        """The conformal trust filter of `config.trust` (None without one), loaded once; a filter
        calibrated for another retriever, corpus or K warns."""
        if self._trust is None and self.config.trust:
            from verirag.learned.trust_filter import ConformalTrustFilter
            index = self._index
            self._trust = ConformalTrustFilter.load(self.config.trust, expect={
                "retriever": getattr(index, "kind", None), "corpus": getattr(index, "fingerprint", None),
                "k": self.config.k})
        return self._trust

    def _filter_untrusted(self, hits: list[ScoredPassage]) -> tuple[list[ScoredPassage], dict | None]:
        """The post-retrieval trust stage: (the chunks kept, what the JSON answer reports)."""
        f = self.trust_filter
        if f is None:
            return hits, None
        mask = f.trusted([h.score for h in hits]) if hits else []
        kept = [h for h, m in zip(hits, mask) if m]
        info = {"threshold": f.threshold_, "alpha": f.alpha, "trusted": [h.passage.id for h in kept],
                "m1": bool(kept), "m2": len(kept) / len(hits) if hits else 0.0, "empty_action": None}
        if not kept:
            info["empty_action"] = self.config.on_untrusted
            kept = hits[:1] if self.config.on_untrusted == "keep-top" else []
        return kept, info

    @property
    def forecaster(self):
        """CalibRAG's forecaster of `config.forecaster` (None without one), loaded once."""
        if self._forecaster is None and self.config.forecaster:
            from verirag.learned.forecaster import load_forecaster
            self._forecaster = load_forecaster(self.config.forecaster, llm=self.llm)
        return self._forecaster

    def _rerank(self, question: str, hits: list[ScoredPassage], stage) -> tuple[list[ScoredPassage], dict | None]:
        """The forecaster's stages 2-3: rerank, re-query once below epsilon; (documents kept, info)."""
        if self.forecaster is None:
            return hits, None
        from verirag.awf.forecast_rerank import ForecastRerank
        c = self.config
        step = ForecastRerank(self.forecaster, lambda q, n: self._filter_untrusted(self.retrieve(q, n))[0],
                              self.llm, epsilon=c.epsilon, depth=c.rerank_depth, keep=c.forecast_keep)
        r = step.run(question, hits, on_stage=stage)
        return r.kept, r.info

    # ---- asking ---------------------------------------------------------------------------
    def retrieve(self, question: str, k: int | None = None) -> list[ScoredPassage]:
        if self._index is None:
            raise InputError("no index: call index(corpus) or load_index(path) first")
        return self._index.search(question, k=k or self.config.k)

    def ask(self, question: str, *, k: int | None = None, threshold: float | ThresholdController | None = None,
            fallback: str | None = None, on_stage: Callable[[str], None] | None = None) -> AskResult:
        """Answer, verify and act. `on_stage` is told each stage as it starts ("retrieving",
        "answering from 5 passages", "verifying (nli)", ...), e.g. to name it on a spinner."""
        question = (question or "").strip()
        if not question:
            raise InputError("the question is empty")
        threshold = self.config.threshold if threshold is None else threshold
        fallback = fallback or self.config.fallback
        replace(self.config, threshold=threshold, fallback=fallback).validate()
        timings: dict[str, float] = {}
        t0 = time.perf_counter()

        stage = on_stage or (lambda _s: None)
        stage("retrieving")
        depth = max(k or self.config.k, self.config.rerank_depth) if self.config.forecaster else k
        hits = self.retrieve(question, depth)
        hits, trust = self._filter_untrusted(hits)
        timings["retrieve"] = time.perf_counter() - t0
        if trust is not None and not hits:   # no chunk is trusted: the user's chosen action
            return self._untrusted_answer(question, trust, timings, t0, stage)
        forecast = None
        if self.config.forecaster:
            t = time.perf_counter()
            with metering() as rerank_usage:   # the reformulation's LLM call, when there is one
                hits, forecast = self._rerank(question, hits, stage)
            forecast["usage"] = rerank_usage.to_dict()
            timings["rerank"] = time.perf_counter() - t
        trace = Trace(question, [h.passage for h in hits], on_compute=lambda key: stage(stage_name(key, len(hits))))

        # The generator's quantity is timed as generation, the rest of the method as verification;
        # a unified method's single call counts as generation.
        method = self.method
        t = time.perf_counter()
        with trace.attribute() as used:
            out = method.run(trace)
            elapsed = time.perf_counter() - t
            generated = (used.seconds(f"generator:{method.generator.registry_name}")
                         if isinstance(method, ComposedMethod) else elapsed)
            timings["generate"], timings["verify"] = generated, max(0.0, elapsed - generated)
            if out.details.get("error_type") == "BackendError" and not out.answer:
                # the model could not be reached or answered garbage: nothing was answered, and
                # abstaining would hide an outage as a verdict
                raise BackendError(out.error)
            if out.answer.strip() and is_abstention(out.answer):
                # The model declined ("the context does not say"): nothing was answered, so there is
                # nothing to call supported, whatever a verifier makes of the refusal; the policy acts.
                out = replace(out, score=0.0)
            t = time.perf_counter()
            decision = self.policy(fallback).apply(trace, out, threshold)
        if decision.action != ANSWERED and fallback != "abstain":
            timings["fallback"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0
        usage = used.cost.to_dict()
        if forecast is not None:   # the re-query's LLM call is part of what this answer cost
            for k_, v in forecast["usage"].items():
                if isinstance(v, (int, float)) and k_ in usage:
                    usage[k_] += v
                elif isinstance(v, dict):
                    for name, n in v.items():
                        usage.setdefault(k_, {})[name] = usage.get(k_, {}).get(name, 0) + n

        error = "; ".join(e for e in (out.error, decision.details.get("error")) if e) or None
        per = out.details.get("per_passage") or [None] * len(hits)
        evidence = [Evidence(id=h.passage.id, text=h.passage.text, title=h.passage.title,
                             source=h.passage.source, retrieval_score=float(h.score), support_score=s)
                    for h, s in zip(hits, per)]
        best = out.details.get("best")
        return AskResult(
            question=question, answer=decision.final_answer, score=float(out.score),
            faithful=decision.action == ANSWERED, action=decision.action,
            threshold=as_controller(threshold).threshold_,  # None: a controller not certified
            evidence=evidence, supporting_passage=evidence[best] if best is not None else None,
            retrieved_answer=out.answer, model=self.llm.model_id, method=method.registry_name,
            judge=getattr(getattr(method, "predictor", None), "name", "") or method.registry_name,
            timings={k: round(v, 4) for k, v in timings.items()}, usage=usage, error=error, trust=trust,
            forecast=forecast)

    def _untrusted_answer(self, question: str, trust: dict, timings: dict, t0: float, stage) -> AskResult:
        """No retrieved chunk is trusted: abstain, or answer without context (action "fallback",
        unverified: there is nothing to verify it against)."""
        answer, action, error = ABSTENTION_TEXT, ABSTAINED, None
        with metering() as usage:
            if self.config.on_untrusted == "no-context":
                stage("answering without the passages")
                t = time.perf_counter()
                try:
                    out = self.policy("no-rag").generator.answer(question, [])
                    text, failed = out.text, out.error
                except VeriragError as e:  # recorded: the user sees an abstention and why
                    text, failed = "", f"{type(e).__name__}: {e}"
                timings["fallback"] = time.perf_counter() - t
                if failed or not text.strip():
                    error = f"the answer without context failed: {failed or 'empty answer'}"
                else:
                    answer, action = text, FALLBACK
        timings["total"] = time.perf_counter() - t0
        return AskResult(question=question, answer=answer, score=0.0, faithful=False, threshold=None, action=action,
                         evidence=[], supporting_passage=None, retrieved_answer="", model=self.llm.model_id,
                         method=self.config.method, judge="", usage=usage.to_dict(), trust=trust,
                         timings={k: round(v, 4) for k, v in timings.items()},
                         error=error or ("no retrieved chunk is trusted by the conformal filter"
                                         if action == ABSTAINED else None))

    def verify(self, question: str, answer: str, passages: Sequence[Passage], *,
               threshold: float | ThresholdController | None = None,
               on_stage: Callable[[str], None] | None = None) -> VerifyResult:
        """Verify an answer another system produced from `passages`: the score of this pipeline's
        predictor (the PRED of its GEN+PRED method; self_check checks the answer in the conversation
        Vanilla would have had), the verdict at `threshold`, and each passage's support. A method
        that generates its own answer (a unified method, or a bare generator) cannot verify another
        one: InputError. A predictor that fails (unparseable judge output) gives score None,
        faithful False and the error, never an exception."""
        question = (question or "").strip()
        if not question:
            raise InputError("the question is empty")
        if not (answer or "").strip():
            raise InputError("the answer is empty: there is nothing to verify")
        passages = list(passages)
        if not passages:
            raise InputError("no passages: an answer is verified against the passages it came from")
        threshold = self.config.threshold if threshold is None else threshold
        replace(self.config, threshold=threshold).validate()
        method = self.method
        predictor = getattr(method, "predictor", None)
        if predictor is None or method.hard:
            raise InputError(f"method {method.registry_name!r} scores only the answers it generates; to verify "
                             "an answer, use a GENERATOR+PREDICTOR method such as " + JUDGED_METHOD)
        if predictor.answer_independent:
            raise InputError(f"{predictor.registry_name} judges the passages, not the answer, so it cannot verify "
                             "a given answer; use e.g. " + JUDGED_METHOD)
        (on_stage or (lambda _s: None))(f"verifying ({predictor.registry_name})")
        t0 = time.perf_counter()
        with metering() as usage:
            v = predictor.verify(question, answer, passages)
        seconds = time.perf_counter() - t0
        score = None if math.isnan(v.score) else float(v.score)
        warnings = list(v.warnings)
        if score is not None and is_abstention(answer):  # as in ask: a refusal answers nothing to support
            score = 0.0
            warnings.append("the answer declines to answer: nothing to call supported")
        cut = as_controller(threshold).threshold_
        faithful = v.error is None and score is not None and as_controller(threshold).decide(score) == ANSWER
        per = v.per_passage or [None] * len(passages)
        evidence = [Evidence(id=p.id, text=p.text, title=p.title, source=p.source, retrieval_score=None,
                             support_score=s) for p, s in zip(passages, per)]
        return VerifyResult(
            question=question, answer=answer, score=score, faithful=bool(faithful), threshold=cut,
            evidence=evidence, supporting_passage=evidence[v.best] if v.best is not None else None,
            method=method.registry_name, judge=getattr(predictor, "name", "") or predictor.registry_name,
            timings={"verify": round(seconds, 4)}, usage=usage.to_dict(), error=v.error, warnings=warnings)

    def describe(self) -> dict:
        return asdict(self.config)
