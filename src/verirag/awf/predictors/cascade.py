"""The cascade (issue 36, item 4): the trained verifier decides where it is sure, an LLM judge where
it is not.

    vanilla+cascade                          # the shipped band (20% of held-out answers reach nli)
    vanilla+cascade(budget=0.1)              # the band refitted to 10% from the band file's held-out scores
    vanilla+cascade(low=0.4,high=0.6)        # a band given (calibrated verifier scale)
    vanilla+cascade(judge=llm_judge)         # another LLM judge inside the band
    vanilla+cascade(cascade=FILE, verifier=DIR)   # a band made by `verirag train cascade`, its verifier

The verifier scores every answer (~0.1 s, no LLM); its score is calibrated (`verirag.learned.cascade`,
Platt scaling fitted on held-out labelled answers). Outside the band [low, high] that calibrated score
is the answer's; inside it the judge (`nli` by default) scores the answer and its calibrated score is
the answer's. A judge the band file holds no calibration for (one the band was not fitted with) gives
its raw score, with a warning. `cascade` on the Verification (and on the method's output and the JSON
answer) says which judge decided, both raw and calibrated scores where computed, the band, and what
the judge cost (seconds, LLM calls and tokens; 0 when the verifier decided). The per-passage and
per-sentence support is the verifier's (the judge's per passage where it decided and names passages).
A judge that fails is the answer's failure (as `vanilla+JUDGE` would report it); an outage is never a score.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, invalid_input
from verirag.awf.predictors.verifier import TrainedVerifierPredictor
from verirag.awf.registry import register
from verirag.errors import InputError
from verirag.llm.usage import Usage, current_usage, metering
from verirag.types import CascadeDecision, Passage

VERIFIER = "verifier"


@register("predictor", "cascade")
class CascadePredictor(FaithfulnessPredictor):
    needs: tuple[str, ...] = ()
    composes_judges = True  # built with the judge's LLM / entailment model (`build_predictor`)
    english_only = True  # its first judge, the trained verifier, decides most answers alone

    def __init__(
        self,
        llm=None,
        *,
        judge: str = "nli",
        budget: float | None = None,
        low: float | None = None,
        high: float | None = None,
        cascade: str | None = None,
        verifier: str | None = None,
        **wiring: Any,
    ):
        from verirag.awf.compose import build_predictor
        from verirag.learned.cascade import CascadeBand, shipped_cascade_path

        unknown = set(wiring) - {"judge_llm", "entailment"}
        if unknown:
            raise InputError(f"the cascade takes no option {', '.join(sorted(unknown))}")
        if judge in ("cascade", VERIFIER, "trivial"):
            raise InputError(f"the cascade's judge is an LLM judge (nli, llm_judge, ...), not {judge!r}")
        if budget is not None and (low is not None or high is not None):
            raise InputError("give the cascade a budget or a band (low, high), not both")
        if (low is None) != (high is None):
            raise InputError("a band needs both low and high")
        self.llm = llm
        # the bands were fitted on the plain minimum's scores (before the smooth one): read as fitted
        self.verifier_part = TrainedVerifierPredictor(verifier=verifier, softmin=0.0)
        self.judge_part = build_predictor(judge, llm, wiring.get("judge_llm"), wiring.get("entailment"))
        self.judge_name = judge
        path = cascade or shipped_cascade_path()
        loaded = CascadeBand.load(path, expect={"verifier": self.verifier_part.model_fingerprint()})
        if judge == loaded.judge:  # another prompt or model under the same name: its calibration weakens
            loaded.check_expected({"judge": self.judge_part.digest}, where=str(path))
        if budget is not None:
            loaded = loaded.with_budget(budget)
        elif low is not None:
            loaded = loaded.with_band(float(low), float(high))
        self.band = loaded
        self.band_digest = f"{loaded.band_[0]:.6f},{loaded.band_[1]:.6f}|{loaded.fingerprints.get('data', '')}"
        self.name = f"cascade[{self.verifier_part.name} -> {self.judge_part.name}]"

    def model_fingerprint(self) -> str:
        return f"cascade:{self.band_digest}"

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        bad = invalid_input(answer, passages)
        if bad is not None:
            return bad
        first = self.verifier_part.verify(question, answer, passages)
        if not first.ok:
            return first
        calibrated, inside = self.band.route(first.score)
        decision = CascadeDecision(
            decided_by=VERIFIER,
            judge=self.judge_name,
            band=[float(x) for x in self.band.band_],
            verifier_score=float(first.score),
            verifier_calibrated=float(calibrated),
        )
        if not inside:
            return Verification(
                score=float(calibrated),
                per_passage=first.per_passage,
                best=first.best,
                warnings=list(first.warnings),
                sentences=first.sentences,
                cascade=decision,
            )
        outer = current_usage()
        t0 = time.perf_counter()
        with metering() as spent:
            second = self.judge_part.verify(question, answer, passages)
        decision.seconds = time.perf_counter() - t0
        if outer is not None:  # the judge's requests still count where the caller counts them
            outer += spent
        _cost(decision, spent)
        decision.decided_by = self.judge_name
        if not second.ok:
            second.cascade = decision
            return second
        decision.judge_score = float(second.score)
        warnings = list(first.warnings) + list(second.warnings)
        if self.band.calibrated_for(self.judge_name):
            decision.judge_calibrated = float(self.band.calibrate(self.judge_name, second.score))
            score = decision.judge_calibrated
        else:
            score = float(second.score)
            warnings.append(
                f"the cascade's band file has no calibration for {self.judge_name}: its raw score stands "
                f"(refit with `{self.band.fit_command}` on a run that {self.judge_name} judged)"
            )
        named = second if second.best is not None else first
        return Verification(
            score=score,
            per_passage=named.per_passage,
            best=named.best,
            warnings=warnings,
            sentences=first.sentences,
            cascade=decision,
        )


def _cost(decision: CascadeDecision, spent: Usage) -> None:
    decision.llm_calls = spent.calls
    decision.prompt_tokens = spent.prompt_tokens
    decision.completion_tokens = spent.completion_tokens
    decision.cache_hits = spent.cache_hits
