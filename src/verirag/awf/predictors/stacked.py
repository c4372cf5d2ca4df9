"""A stacked verifier as a predictor: the learned combination `verirag train stack RUN`
made, applied at answer time (issue 27, item 5).

    vanilla+stacked                  # the shipped stack: the default model's (qwen2.5-1.5b) answers only
    vanilla+stacked(stack=stack.json)

It computes every feature the stack reads, as the eval run that trained it did: each predictor
feature with the same predictor and options (rebuilt from the stack's `sources`, on this LLM;
a rebuilt predictor whose identity differs from the one that made the training scores, e.g. a
retrained verifier or another self-check prompt, is refused), and the answer's signals
(`verirag.awf.signals`: token logprobs from the generation, K-Precision, retrieval scores from
the trace). A predictor that fails on an answer counts 0, as the run's records count it (its
error is kept in `warnings`); an outage is a failure, never a score. A feature this answer cannot
have (no logprobs for an answer written elsewhere, no retrieval scores for passages given with
the question) is an error naming it, unless the stack was fitted with imputation.

It pays for every predictor it combines (a self-check request, the verifier's encoder), on top of
the generation; `per_passage`, `best` and `sentences` come from the first combined predictor that
names passages (K-Precision per passage otherwise).

    vanilla+stacked(fallback=verifier)

`fallback` names a predictor that judges where the stack cannot: a stack fitted for another model
(or whose predictor features another set-up made) is not refused but set aside, and an answer
without a feature the stack needs (an answer written elsewhere has no token logprobs) is judged by
the fallback alone (found before any combined predictor runs). Either way the result says so in
`warnings`, so a score is never passed off as the stack's. Where the fallback is also one of the
stack's features (the verifier), one instance serves both.

    vanilla+stacked(impute=true)      # e.g. `verirag verify --method "stacked(impute=true)" --model qwen2.5-1.5b`

`impute` judges an answer that lacks a signal (a given answer has no generation log-probabilities)
by the stack all the same, the missing signals at their training means (they say nothing about it)
and the stack's judges deciding; `warnings` name each imputed signal. Measured on given answers
(docs/results/verifier.md, "The stack on given answers"): the shipped stack so, over the verifier
and `llm_judge`, ranks right above wrong above the verifier alone on the local model's own answers
and sees a swapped party the verifier misses; on other LLMs' answers it is no better than the
verifier.
It costs the judge's LLM call, so it is asked for, never the default of a given answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path

from verirag.awf.component import fingerprint_of, identity_digest
from verirag.awf.generators.base import Answer
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, invalid_input
from verirag.awf.predictors.k_precision import KPrecisionPredictor
from verirag.awf.registry import register
from verirag.awf.signals import answer_signals
from verirag.errors import InputError, is_outage
from verirag.types import Passage


@register("predictor", "stacked")
class StackedPredictor(FaithfulnessPredictor):
    needs: tuple[str, ...] = ()

    def __init__(self, llm=None, *, stack: str | None = None, fallback: str | None = None, impute: bool = False):
        from verirag.awf.compose import build_predictor

        self.llm = llm
        self.impute = bool(impute)
        self.model = None
        self.parts: dict[str, FaithfulnessPredictor] = {}
        self.unfit: str | None = None  # why the stack was set aside for the fallback
        self.fallback_name = fallback
        self.fallback_part: FaithfulnessPredictor | None = None
        if fallback is not None:
            if fallback.split("(", 1)[0].strip() == "stacked":
                raise InputError("a stacked verifier's fallback must be another predictor (e.g. verifier)")
            self.fallback_part = build_predictor(fallback, llm)
        try:
            self._load(stack)
        except InputError as e:
            if self.fallback_part is None:
                raise
            self.unfit, self.model, self.parts = str(e), None, {}
        # a text its verifier cannot read (another language) is unverified, whatever the log-probs say
        judges = [*self.parts.values(), *([self.fallback_part] if self.fallback_part is not None else [])]
        self.english_only = any(getattr(p, "english_only", False) for p in judges)
        if self.model is None:
            self.stack_sha256 = ""
            self.continues_generation = self.fallback_part.continues_generation
            self.name = f"stacked[set aside: {fallback}]"
        else:
            self.continues_generation = any(p.continues_generation for p in self.parts.values())
            self.name = f"stacked[{', '.join(self.model.features)}]"

    def _load(self, stack: str | None) -> None:
        """The stack and a predictor per predictor feature; InputError where they do not fit this LLM."""
        from verirag.awf.compose import build_predictor
        from verirag.learned.stack import StackedVerifier, shipped_stack_path

        stack = stack or str(shipped_stack_path())
        model = StackedVerifier.load(stack, expect={"model": fingerprint_of(self.llm)})
        parts: dict[str, FaithfulnessPredictor] = {}
        for feature in model.features:
            source = model.sources.get(feature) or {}
            if "predictor" not in source:
                continue  # a signal: computed here from the answer
            options = source.get("options") or {}
            fallback = self.fallback_part
            if fallback is not None and source.get("digest") and fallback.digest == source["digest"]:
                part = fallback  # the same predictor (identity): one instance judges for both
            else:
                part = build_predictor(source["predictor"], self.llm, options=options)
            want = source.get("digest")
            if want and part.digest != want and _as_fitted(part.identity(), fingerprint_of(self.llm), model) != want:
                raise InputError(
                    f"{stack}: its feature {feature!r} was made by predictor {source['predictor']} "
                    f"with options {options} and identity {want}; built here it "
                    f"is {part.digest} (retrained weights, another prompt or model): refit with "
                    f"`{StackedVerifier.fit_command}` on a run of this set-up"
                )
            parts[feature] = part
        self.model, self.parts = model, parts
        self.stack_sha256 = hashlib.sha256(Path(stack).read_bytes()).hexdigest()

    def identity(self) -> dict:
        """As every component's, but `impute` off is left out: the option came after runs, records and
        thresholds were keyed by the stack's identity, and off it changes nothing they computed."""
        out = super().identity()
        if not self.impute:
            out["options"] = {k: v for k, v in out["options"].items() if k != "impute"}
        return out

    def model_fingerprint(self) -> str:
        if self.model is None:
            return f"stack:set-aside|{self.fallback_part.model_fingerprint()}"
        return f"stack:{self.stack_sha256[:16]}|{fingerprint_of(self.llm)}"

    def verify_in(self, trace, answer: Answer) -> Verification:
        return self.combine(trace.question, answer, trace.passages, trace.retrieval_scores)

    def verify_answer(self, question: str, answer: Answer, passages: Sequence[Passage]) -> Verification:
        return self.combine(question, answer, passages, None)

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        return self.combine(question, Answer(text=answer), passages, None)

    def combine(
        self, question: str, answer: Answer, passages: Sequence[Passage], retrieval_scores: Sequence[float] | None
    ) -> Verification:
        bad = invalid_input(answer.text, passages)
        if bad is not None:
            return bad
        if self.model is None:
            return self._fallen_back(question, answer, passages, f"the stack does not fit: {self.unfit}")
        signals = answer_signals(answer.text, answer.generation, passages, retrieval_scores)
        # a predictor feature always has a value (a failure counts 0), so only a signal can be missing:
        # known before any predictor runs
        missing = [f for f in self.model.features if f not in self.parts and f not in signals.values]
        if missing and not (self.model.impute or self.impute):
            reasons = "; ".join(f"{f}: {signals.missing.get(f, 'not computed')}" for f in missing)
            if self.fallback_part is not None:
                return self._fallen_back(
                    question, answer, passages, f"the stack needs {', '.join(missing)} ({reasons})"
                )
            return Verification(
                score=float("nan"),
                per_passage=[None] * len(passages),
                error=f"the stacked verifier needs {', '.join(missing)} ({reasons})",
            )
        values: dict[str, float] = dict(signals.values)
        warnings: list[str] = []
        named: Verification | None = None
        for feature, part in self.parts.items():
            v = part.verify_answer(question, answer, passages)
            if v.failure is not None and is_outage(v.failure):
                return Verification(
                    score=float("nan"),
                    per_passage=[None] * len(passages),
                    error=f"{feature}: {v.error}",
                    failure=v.failure,
                )
            if v.ok:
                values[feature] = float(v.score)
            else:  # the run's records score a failed predictor 0, and so did the stack's training
                values[feature] = 0.0
                warnings.append(f"{feature} failed and counts 0: {v.error}")
            if named is None and v.ok and v.best is not None:
                named = v
        warnings += [f"{f} imputed (the training mean): {signals.missing.get(f, 'not computed')}" for f in missing]
        score = self.model.score(values, impute=True if self.impute else None)
        if named is None:
            named = KPrecisionPredictor().verify(question, answer.text, passages)
        return Verification(
            score=score,
            per_passage=list(named.per_passage),
            best=named.best,
            warnings=warnings,
            sentences=named.sentences,
        )

    def _fallen_back(self, question: str, answer: Answer, passages: Sequence[Passage], why: str) -> Verification:
        """The fallback's judgement, saying why it stands in."""
        v = self.fallback_part.verify_answer(question, answer, passages)
        note = f"judged by {self.fallback_name} alone: {why}"
        return dataclasses.replace(v, warnings=[*v.warnings, note])


def _as_fitted(identity: dict, fingerprint: str, model) -> str:
    """The digest `identity` (a part built on the model `fingerprint`) has with the model the stack
    was fitted on in its place, when the stack reads `fingerprint` as its own (a build listed as
    equivalent: `verirag_lab.train.stack_repoint --equivalent-model`); "" when it does not."""
    own = str(model.fingerprints.get("model") or "")
    if not own or fingerprint == own or fingerprint not in model.accepted("model"):
        return ""

    def swapped(node):
        if isinstance(node, dict):
            return {k: (own if k == "model" and v == fingerprint else swapped(v)) for k, v in node.items()}
        return node

    return identity_digest(swapped(identity))
