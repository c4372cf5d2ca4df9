"""What the HTTP service does, without HTTP: ask, verify and retrieve over one index and one model.

Every call runs on the model worker (`ModelWorker`), one at a time; a request may choose another
method than the default, and gets a pipeline that shares the index and the loaded weights (models
load once per process). A request's setting of a built-in stage kind (`verirag.awf.stage_kinds`)
is a parameter of its call, not a pipeline of its own: every setting runs with the one model the
process loaded for that stage, and the pipelines kept per method are at most
`PIPELINE_CACHE_SIZE` (least recently used dropped). Each job checks its cancel token between
stages, so a request whose client has timed out stops at its next stage.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verirag.awf.answer_spec import AnswerSpec
from verirag.awf.defaults import judge_name, named_by_judge
from verirag.awf.pipeline import Pipeline, uses_shipped_verifier, why_it_cannot_verify
from verirag.awf.spec import method_names
from verirag.errors import InputError, VeriragError
from verirag.learned.threshold import as_controller
from verirag.server.worker import CancelToken, ModelWorker
from verirag.settings import settings
from verirag.types import AskResult, Passage, VerifyResult

# Pipelines kept for the methods requests name besides the default (which is always kept): more
# than the registry's method names, so GET /v1/methods does not rebuild them; a name seen once more
# after being dropped is rebuilt (cheap: no model loads again, models are shared per process).
PIPELINE_CACHE_SIZE = 64


class NoIndex(InputError):
    """A route that retrieves, on a service started without an index: the request is well formed,
    the service cannot serve it (409, not 422)."""


@dataclass
class ServiceConfig:
    """How `verirag serve` runs: the pipeline (`preset` + overrides, `threshold` a number or a fitted
    ThresholdController), the index, the queue, and the HTTP limits."""

    preset: str = "local"
    index: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # model, method, judge, k, fallback, ...
    threshold: Any = None
    api_key: str | None = None
    queue_size: int = 16
    queue_timeout: float = 120.0
    request_timeout: float = 300.0
    max_body_bytes: int = 1 << 20
    max_passages: int = 64  # /v1/verify: more would take minutes to judge on a CPU
    # what /v1/verify judges with when a request names no method (None: the default, or with a
    # judge in `overrides` the method that uses it: `AnswerSpec.resolve`, as /v1/ask and every door)
    verify_method: str | None = None
    warm_up: bool = True  # load the models at start-up, so /readyz means ready
    # seconds an OpenAI-compatible backend may take per HTTP request (it is retried twice);
    # None: VERIRAG_OPENAI_TIMEOUT when set, else a third of request_timeout (at least 5), so a
    # stalled backend frees the model thread soon after the client got its 504
    backend_timeout: float | None = None

    def validate(self) -> ServiceConfig:
        for name, value in (
            ("queue_timeout", self.queue_timeout),
            ("request_timeout", self.request_timeout),
            ("max_body_bytes", self.max_body_bytes),
        ):
            if value <= 0:
                raise InputError(f"{name} must be positive, got {value:g}")
        if self.queue_size < 0:
            raise InputError(f"queue_size must be 0 or more, got {self.queue_size}")
        if self.backend_timeout is not None and self.backend_timeout <= 0:
            raise InputError(f"backend_timeout must be positive, got {self.backend_timeout:g}")
        if self.index is not None and not Path(self.index).is_dir():
            raise InputError(f"no index at {self.index}: build one with `verirag index PATH --out DIR`")
        return self

    def resolved_backend_timeout(self) -> float | None:
        """The backend timeout the pipeline gets (None: the backend reads VERIRAG_OPENAI_TIMEOUT)."""
        if self.backend_timeout is not None:
            return self.backend_timeout
        if settings().openai_timeout is not None:
            return None
        return max(5.0, self.request_timeout / 3)


class VeriragService:
    def __init__(self, config: ServiceConfig):
        self.config = config
        self.pipeline = Pipeline.from_preset(
            config.preset,
            **{"backend_timeout": config.resolved_backend_timeout(), **config.overrides},
            **({"threshold": config.threshold} if config.threshold is not None else {}),
        )
        if config.index is not None:
            self.pipeline.load_index(config.index)
        self.worker = ModelWorker(
            queue_size=config.queue_size, queue_timeout=config.queue_timeout, run_timeout=config.request_timeout
        )
        # method name -> its pipeline, least recently used first (see pipeline_for)
        self._pipelines: OrderedDict[str, Pipeline] = OrderedDict()
        self._lock = threading.Lock()
        self.ready = threading.Event()
        if not config.warm_up:  # models load on the first request that needs them
            self.ready.set()
        self.load_error: str | None = None
        self._runnable: list[str] | None = None
        # the settings of /v1/ask and of /v1/verify (`verify_method`; none: the default, or with a
        # judge the method that uses it), resolved as every door resolves them (`AnswerSpec.resolve`)
        self.spec = self.pipeline.config.spec().resolve()
        given = {**config.overrides, "threshold": config.threshold, "method": config.verify_method}
        self.verify_spec = AnswerSpec.from_flat(preset=config.preset, **given).for_given_answers()
        self.verify_method = self.verify_spec.method
        if uses_shipped_verifier(self.verify_method):  # missing is an error at start, not on each request
            from verirag.learned.shipped import shipped_verifier_dir

            shipped_verifier_dir()

    # ---- state -------------------------------------------------------------------------------
    @property
    def has_index(self) -> bool:
        return self.pipeline.search_index is not None

    @property
    def model_id(self) -> str:
        return self.pipeline.config.model

    def warm_up(self) -> None:
        """Load the model, the default method and, when pruning is on and there is an index to answer
        from, the pruner (on the worker's thread at start-up), so the first request pays for none of
        them. A service without an index only verifies, which never prunes: its readiness must not
        wait on (or fail over) a part it never uses."""
        try:
            _ = self.pipeline.method
            if self.has_index and self.pipeline.config.prune.on:
                _ = self.pipeline.context_pruner
            self.ready.set()
        except Exception as e:  # reported by /readyz, not raised: the process stays up to say why
            self.load_error = f"{type(e).__name__}: {e}"
            raise

    def check_method(self, method: str | None) -> None:
        """A request's method name (a judge's name alone reads as `named_by_judge` reads it)."""
        method = None if method is None else named_by_judge(method)
        if method is not None and method != self.pipeline.config.method and method not in method_names():
            raise InputError(f"unknown method {method!r}; GET /v1/methods lists them")

    def runnable_methods(self) -> list[str]:
        """The method names this service can build: a method that needs a trained file it was
        not given (calibrag's forecaster, lookback's classifier) is left out. Building is cheap
        (no model call); the result is what /openapi.json offers."""
        if self._runnable is None:
            runnable = []
            for name in method_names():
                try:
                    _ = self.pipeline_for(name).method
                except VeriragError:
                    continue
                runnable.append(name)
            self._runnable = runnable
        return self._runnable

    def verifying_methods(self) -> list[str]:
        """What /v1/verify can judge with, named by the judge ("verifier", "nli", "cascade", ...):
        of the runnable methods, those whose predictor can verify a given answer. A generator
        prefix is left out: verifying a given answer generates nothing, so it changes nothing."""
        found = [n for n in self.runnable_methods() if why_it_cannot_verify(self.pipeline_for(n).method) is None]
        return list(dict.fromkeys(judge_name(n) or n for n in found if judge_name(n) or "+" not in n))

    def check_passages(self, n: int) -> None:
        if n > self.config.max_passages:
            raise InputError(f"{n} passages: at most {self.config.max_passages} are verified per request")

    def pipeline_for(self, method: str | None) -> Pipeline:
        """The pipeline of `method` (None: the default), sharing the index and, through the process,
        the models and the stages' models; at most `PIPELINE_CACHE_SIZE` besides the default are kept."""
        name = method or self.pipeline.config.method
        if name == self.pipeline.config.method:
            return self.pipeline
        with self._lock:
            p = self._pipelines.get(name)
            if p is None:
                self.check_method(name)
                p = Pipeline(replace(self.pipeline.config, method=name), index=self.pipeline.search_index)
                self._pipelines[name] = p
                while len(self._pipelines) > PIPELINE_CACHE_SIZE:
                    self._pipelines.popitem(last=False)
            self._pipelines.move_to_end(name)
            return p

    def request_spec(self, base: AnswerSpec, **given: Any) -> AnswerSpec:
        """A request's settings (None: not given) over the service's (`base`: `spec` for /v1/ask,
        `verify_spec` for /v1/verify), resolved as every door resolves them (`AnswerSpec`)."""
        return base.override(**given).resolve()

    def methods(self) -> dict[str, Any]:
        cfg = self.pipeline.config
        return {
            "default": cfg.method,
            "verify_default": self.verify_method,
            "methods": self.runnable_methods(),
            "verify_methods": self.verifying_methods(),
            "model": cfg.model,
            "threshold": as_controller(cfg.threshold).threshold_,
            "fallback": cfg.fallback,
            "k": cfg.k,
        }

    # ---- jobs (run on the worker thread) -----------------------------------------------------
    def ask(
        self,
        token: CancelToken,
        question: str,
        *,
        history: list | None = None,
        k: int | None = None,
        method: str | None = None,
        threshold: float | None = None,
        fallback: str | None = None,
        **stage_settings: Any,
    ) -> AskResult:
        token.check()
        if not self.has_index:
            raise NoIndex(
                "this service has no index to answer from: start it with `verirag serve --index DIR`, "
                "or send your own passages to /v1/verify"
            )
        spec = self.request_spec(
            self.spec, method=method, k=k, threshold=threshold, fallback=fallback, **stage_settings
        )
        return self.pipeline_for(spec.method).ask(
            question,
            history=history,
            k=spec.k,
            threshold=spec.threshold,
            fallback=spec.fallback,
            **spec.call_settings(),
            on_stage=lambda _stage: token.check(),
        )

    def verify(
        self,
        token: CancelToken,
        question: str,
        answer: str,
        passages: list[Passage],
        *,
        history: list | None = None,
        method: str | None = None,
        threshold: float | None = None,
    ) -> VerifyResult:
        token.check()
        self.check_passages(len(passages))
        spec = self.request_spec(self.verify_spec, method=method, threshold=threshold)
        pipeline = self.pipeline_for(spec.method)
        result = pipeline.verify(
            question, answer, passages, history=history, threshold=spec.threshold, on_stage=lambda _stage: token.check()
        )
        return result

    def retrieve(self, token: CancelToken, question: str, k: int | None = None) -> list[dict[str, Any]]:
        token.check()
        if not (question or "").strip():
            raise InputError("the question is empty")
        if not self.has_index:
            raise NoIndex("this service has no index: start it with `verirag serve --index DIR`")
        return [
            {"rank": h.rank, "score": float(h.score), **h.passage.to_dict()}
            for h in self.pipeline.retrieve(question.strip(), k)
        ]
