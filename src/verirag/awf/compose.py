"""Composition GENERATOR+PREDICTOR (AwF, section 4.2) and method lookup by name.

    m = build_method("vanilla+nli", llm)          # or "instructrag+pre_answering", "intrinsic", "vanilla"
    m = build_method("instructrag", llm, family="multi_hop", max_tokens=160)   # options (MethodSpec)
    out = m.run(Trace(question, passages))        # MethodOutput(answer, score, ...)

A composed method answers with the generator through the trace (`trace.answer(generator)`: one
generation per example, generator, model and options, however many predictors run over it),
then scores that answer with the predictor, memoised in the trace under the predictor's key (its
model, options, the passages and the answer). Predictors whose score does not read the answer
(`answer_independent`, e.g. pre_answering) are keyed without it, so one request serves every
generator. A bare generator name means GEN+trivial (the generator alone, v = 1).

Failures are recorded, never dropped: a generator error gives MethodOutput(score=0, error=...);
a predictor error (NaN score) gives score 0 with the predictor's error. Only errors a user or a
backend can cause (VeriragError) are recorded so, with the exception in `failure` (an outage is
a BackendError there, never a verdict); a programming error propagates.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from verirag.awf import registry
from verirag.awf.generators.base import AnswerGenerator
from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification
from verirag.awf.signals import answer_signals
from verirag.awf.spec import SEPARATOR, MethodSpec, split_name
from verirag.awf.trace import Trace
from verirag.errors import InputError, VeriragError


class ComposedMethod(AwFMethod):
    """A generator followed by a faithfulness predictor; `registry_name` is "GEN+PRED"."""

    hard = False

    def __init__(self, generator: AnswerGenerator, predictor: FaithfulnessPredictor):
        self.generator = generator
        self.predictor = predictor
        self.gen_name = generator.registry_name
        self.pred_name = predictor.registry_name
        self.registry_name = f"{self.gen_name}{SEPARATOR}{self.pred_name}"
        self.needs = tuple(getattr(predictor, "needs", ()))
        self.hard = self.pred_name == "trivial"  # always exactly 1.0
        if predictor.continues_generation and not generator.reads_passages:
            raise InputError(
                f"{self.registry_name}: {self.pred_name} continues the generator's "
                f"conversation, and {self.gen_name} shows the model no passages to check against"
            )

    def verify_key(self, trace: Trace, answer: str) -> str:
        if self.predictor.answer_independent:
            return self.predictor.quantity_key(trace)
        if self.predictor.continues_generation:  # the generator's conversation is part of its input
            return self.predictor.quantity_key(trace, answer=answer, conversation=self.generator.quantity_key(trace))
        return self.predictor.quantity_key(trace, answer=answer)

    def answer_details(self, trace: Trace, ans) -> dict[str, Any]:
        """What the records say of the generated answer itself, the same for every predictor over
        it: `generation` (the generation's trace key: records that share it judged one answer), the
        model's fingerprint, and the answer's signals (`verirag.awf.signals`: no model call,
        about a millisecond for 5 passages of 200 words, so each method computes them rather than the
        trace keeping them)."""
        signals = answer_signals(ans.text, ans.generation, trace.passages, trace.retrieval_scores)
        return {
            "generation": self.generator.quantity_key(trace),
            "model_fingerprint": self.generator.model_fingerprint(),
            "signals": signals.to_dict(),
        }

    def run(self, trace: Trace) -> MethodOutput:
        details: dict[str, Any] = {
            "generator": self.gen_name,
            "predictor": self.pred_name,
            "predictor_digest": self.predictor.digest,
        }
        t0 = time.perf_counter()
        try:
            ans = trace.answer(self.generator)
        except VeriragError as e:  # an output with an error and its exception, not a crash
            return MethodOutput(
                answer="",
                score=0.0,
                hard=self.hard,
                details=details,
                failure=e,
                error=f"generator {self.gen_name} failed: {type(e).__name__}: {e}",
            )
        finally:  # the method reports its own split of the time (a shared generation counts 0)
            details["timings"] = {"generate": time.perf_counter() - t0}
        for k in ("parse_ok", "parse_warning"):  # structured generators: was the format followed?
            if k in ans.meta:
                details[k] = ans.meta[k]
        details.update(self.answer_details(trace, ans))
        if ans.error:
            return MethodOutput(answer=ans.text, score=0.0, hard=self.hard, error=ans.error, details=details)
        t0 = time.perf_counter()
        try:
            v: Verification = trace.get(
                self.verify_key(trace, ans.text),
                lambda: self.predictor.verify_in(trace, ans),
                stage=self.predictor.stage_text(len(trace.passages)),
            )
        except VeriragError as e:
            return MethodOutput(
                answer=ans.text,
                score=0.0,
                hard=self.hard,
                details=details,
                failure=e,
                error=f"predictor {self.pred_name} failed: {type(e).__name__}: {e}",
            )
        finally:
            details["timings"]["verify"] = time.perf_counter() - t0
        details.update(per_passage=v.per_passage, best=v.best, warnings=list(v.warnings))
        if v.sentences is not None:
            details["sentences"] = v.sentences
        if v.cascade is not None:
            details["cascade"] = v.cascade.to_dict()
        score = 0.0 if math.isnan(v.score) else min(1.0, max(0.0, float(v.score)))
        return MethodOutput(
            answer=ans.text,
            score=score,
            hard=self.hard,
            error=v.error,
            details=details,
            failure=v.failure,
            per_passage=v.per_passage,
            best=v.best,
            sentences=v.sentences,
            warnings=list(v.warnings),
            timings=dict(details["timings"]),
            cascade=v.cascade,
        )


def entailment_predictors() -> list[str]:
    """Predictors judged by an entailment model: those a judge (`--judge`) applies to."""
    return [n for n in registry.names("predictor") if registry.get("predictor", n).uses_entailment]


def _no_judge(name: str) -> InputError:
    return InputError(
        f"{name!r} uses no entailment model, so a judge (--judge) does not apply to it; "
        "it applies to GENERATOR+PREDICTOR methods whose predictor is one of: " + ", ".join(entailment_predictors())
    )


def build_predictor(
    name: str, llm, judge_llm=None, entailment=None, options: Mapping[str, Any] | None = None
) -> FaithfulnessPredictor:
    """The predictor `name` with `options`, wired as `build_method` wires it (see there)."""
    options = dict(options or {})
    cls = registry.get("predictor", name)
    wired = judge_llm or llm if name == "llm_judge" or cls.uses_entailment else llm
    if wired is None and (getattr(cls, "needs", ()) or (cls.uses_entailment and entailment is None)):
        # before the constructor's AttributeError: a stack built to verify strings sets such a part aside
        raise InputError(f"predictor {name} judges with an LLM, and none was given (name a model or a judge)")
    if getattr(cls, "composes_judges", False):  # the cascade: its LLM judge is wired as the others are
        return cls(llm, judge_llm=judge_llm, entailment=entailment, **options)
    if cls.uses_entailment:
        return cls(entailment or registry.create("entailment", "llm", judge_llm or llm), **options)
    if entailment is not None:
        raise _no_judge(f"predictor {name}")
    if name == "llm_judge":
        return cls(judge_llm or llm, **options)
    # trivial, k_precision, pre_answering, and any predictor registered later: (llm, **options)
    return cls(llm, **options)


def build_method(name: str | MethodSpec, llm, *, judge_llm=None, entailment=None, **options) -> AwFMethod:
    """The AwF method `name` (or a MethodSpec) with `options`, each routed to the part that takes it:
    - a registered unified method ("method" kind): cls(llm, **options);
    - "GEN+PRED": ComposedMethod(generator(llm, ...), predictor), where a predictor that uses an
      entailment model ("nli") judges with `entailment` (e.g. an HF NLI classifier), by default the
      LLM yes/no judge on `judge_llm` (default `llm`); "llm_judge" runs on `judge_llm` (default
      `llm`), other predictors on `llm`;
    - a bare generator name: GEN+trivial.
    Unknown names and options raise InputError listing what exists, and so does `entailment` given
    to a method without an entailment model; a backend lacking a capability the method needs raises
    CapabilityError here, at construction time. The method's MethodSpec is its `spec`.
    """
    spec = MethodSpec.parse(name)
    if options:
        spec = MethodSpec(spec.name, {**spec.options, **options}, spec.label)
    routed = spec.routed()
    unified, gen_name, pred_name = split_name(spec.name)
    if unified:
        if entailment is not None:
            raise _no_judge(f"method {unified}")
        method = registry.create("method", unified, llm, **routed.get("method", {}))
    else:
        generator = registry.create("generator", gen_name, llm, **routed.get("generator", {}))
        method = ComposedMethod(
            generator, build_predictor(pred_name, llm, judge_llm, entailment, routed.get("predictor", {}))
        )
    method.spec = spec
    return method
