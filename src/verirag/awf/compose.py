"""Composition GENERATOR+PREDICTOR (AwF, section 4.2) and method lookup by name.

    m = build_method("vanilla+nli", llm)          # or "instructrag+pre_answering", "intrinsic", "vanilla"
    out = m.run(Trace(question, passages))        # MethodOutput(answer, score, ...)

A composed method answers with the generator through the trace (`trace.answer(generator)`: one
generation per example and generator, however many predictors run over it), then scores that
answer with the predictor, memoised in the trace under "verify:GEN:PRED". Predictors whose score
does not depend on the answer (`verify_with_trace`, e.g. pre_answering) memoise their own request
under a key naming no generator, so one request serves every generator. A bare generator name means
GEN+trivial (the generator alone, v = 1).

Failures are recorded, never dropped: a generator error gives MethodOutput(score=0, error=...);
a predictor error (NaN score) gives score 0 with the predictor's error.
"""
from __future__ import annotations

import math

from verirag.awf import registry
from verirag.awf.generators.base import AnswerGenerator
from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification
from verirag.awf.trace import Trace
from verirag.errors import InputError

SEPARATOR = "+"


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

    @property
    def verify_key(self) -> str:
        return f"verify:{self.gen_name}:{self.pred_name}"

    def _verify(self, trace: Trace, answer: str) -> Verification:
        with_trace = getattr(self.predictor, "verify_with_trace", None)
        if with_trace is not None:
            return with_trace(trace, answer)
        return self.predictor.verify(trace.question, answer, trace.passages)

    def run(self, trace: Trace) -> MethodOutput:
        try:
            ans = trace.answer(self.generator)
        except Exception as e:  # a backend failure is an output with an error, not a crash
            return MethodOutput(answer="", score=0.0, hard=self.hard,
                                error=f"generator {self.gen_name} failed: {type(e).__name__}: {e}",
                                details={"generator": self.gen_name, "predictor": self.pred_name})
        details = {"generator": self.gen_name, "predictor": self.pred_name}
        for k in ("parse_ok", "parse_warning"):  # structured generators: was the format followed?
            if k in ans.meta:
                details[k] = ans.meta[k]
        if ans.error:
            return MethodOutput(answer=ans.text, score=0.0, hard=self.hard, error=ans.error, details=details)
        try:
            v = trace.get(self.verify_key, lambda: self._verify(trace, ans.text))
        except Exception as e:
            return MethodOutput(answer=ans.text, score=0.0, hard=self.hard,
                                error=f"predictor {self.pred_name} failed: {type(e).__name__}: {e}",
                                details=details)
        details.update(per_passage=v.per_passage, best=v.best, warnings=list(v.warnings))
        score = 0.0 if math.isnan(v.score) else min(1.0, max(0.0, float(v.score)))
        return MethodOutput(answer=ans.text, score=score, hard=self.hard, error=v.error, details=details)


def _predictor(name: str, llm, judge_llm, **kw) -> FaithfulnessPredictor:
    cls = registry.get("predictor", name)
    if name == "nli":
        entailment = kw.pop("entailment", None) or registry.create("entailment", "llm", judge_llm or llm)
        return cls(entailment, **kw)
    if name == "llm_judge":
        return cls(judge_llm or llm, **kw)
    # trivial, k_precision, pre_answering, and any predictor registered later: (llm, **kw)
    return cls(llm, **kw)


def build_method(name: str, llm, *, judge_llm=None, predictor_kw: dict | None = None, **kw) -> AwFMethod:
    """The AwF method called `name`:
    - a registered unified method ("method" kind, looked up at call time): cls(llm, **kw);
    - "GEN+PRED": ComposedMethod(generator(llm, **kw), predictor), where "nli" judges entailment
      with the LLM yes/no judge on `judge_llm` (default `llm`) unless `predictor_kw` gives an
      `entailment` model, "llm_judge" runs on `judge_llm` (default `llm`), and other predictors on `llm`;
    - a bare generator name: GEN+trivial.
    Unknown names raise InputError listing what exists; a backend lacking a capability the method
    needs raises CapabilityError here, at construction time.
    """
    name = name.strip()
    predictor_kw = dict(predictor_kw or {})
    if SEPARATOR in name:
        gen_name, _, pred_name = (s.strip() for s in name.partition(SEPARATOR))
    else:
        if name in registry.names("method"):
            return registry.create("method", name, llm, **kw)
        gen_name, pred_name = name, "trivial"
    if gen_name not in registry.names("generator"):
        raise InputError(f"unknown method {name!r}: {gen_name!r} is not a generator; "
                         f"known methods: {', '.join(method_names())}")
    if pred_name not in registry.names("predictor"):
        raise InputError(f"unknown predictor {pred_name!r} in {name!r}; "
                         f"known predictors: {', '.join(registry.names('predictor'))}")
    generator = registry.create("generator", gen_name, llm, **kw)
    return ComposedMethod(generator, _predictor(pred_name, llm, judge_llm, **predictor_kw))


def method_names() -> list[str]:
    """Every name build_method accepts: unified methods, bare generators, and GEN+PRED pairs."""
    gens, preds = registry.names("generator"), registry.names("predictor")
    return (registry.names("method") + gens
            + [f"{g}{SEPARATOR}{p}" for g in gens for p in preds])
