"""The answer core: one sequence of typed stages that every entry point composes.

    Pipeline.ask              Retrieve -> AnswerAndScore -> AnswerRules -> Verifiability -> Act
    Pipeline.verify           VerifyGiven -> AnswerRules -> Verifiability
    Pipeline.verify_and_act   VerifyGiven -> AnswerRules -> Verifiability -> Act
    the experiment grid       AnswerAndScore (the example's passages) -> AnswerRules

`verirag verify`, the service, the integrations and the `Verifier` facade go through `Pipeline`,
so a record of the grid holds the very score `ask` acts on, and a threshold that `verirag
calibrate` fits on grid records means the same thing in `ask`.

A stage is a small object with a `name` and `run(state, say)`; it reads the typed records of the
stages before it from the `AnswerState` and writes its own (`PassagesRecord`, `Judgement`,
`ActRecord`). A new stage is one class placed in the list. The core times each stage, counts what
its LLM requests cost, and raises an outage (a BackendError) as soon as a stage records one: an
unreachable model is never turned into a verdict. The grid, which records outages as errors,
runs the core with `raise_outages=False`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol

from verirag.awf.methods.base import MethodOutput
from verirag.awf.policies import ANSWERED
from verirag.awf.trace import Attribution, Trace
from verirag.errors import VeriragError, is_outage
from verirag.learned.threshold import ANSWER, as_controller
from verirag.llm.usage import Usage, metering
from verirag.metrics.abstention import is_abstention
from verirag.types import (
    SUPPORTED,
    UNSUPPORTED,
    UNVERIFIED,
    AskResult,
    CascadeDecision,
    Evidence,
    Passage,
    ScoredPassage,
    VerifyResult,
    judged_sentences,
)

Say = Callable[[str], None]

# The answer rules, by the name a record gives them (Judgement.rules, details["answer_rules"]).
DECLINED = "declined"  # the answer declines ("the context does not say"): nothing to call supported
UNTRUSTED = "untrusted"  # the trust filter kept no chunk: nothing was answered from the passages
UNSTATED_NUMBER = "unstated_number"  # the answer states a number that nothing it was given states
DECLINED_WARNING = "the answer declines to answer: nothing to call supported"
# An answer with a number nothing it read states keeps a tenth of its score: below any threshold a
# user would choose for a supported answer, and such answers keep their order among themselves.
NUMBER_PENALTY = 0.1
UNTRUSTED_ERROR = "no retrieved chunk is trusted by the conformal filter"
RETRIEVAL_TURNS = 2  # turns of the conversation that retrieval reads before the question


@dataclass
class PassagesRecord:
    """The passages the answer is read from: retrieved (with each retrieval score) or given by
    the caller (`retrieval_scores` None). `trust` and `forecast` are what those post-retrieval
    stages report (the JSON answer's fields), `stages` what every other stage reports, by name;
    `untrusted`: the trust filter kept no chunk; `whole`: the passages before a stage (`cut_by`)
    cut their text (None: none did), what a corrective second answer that reads passages reads (`Act`)."""

    passages: list[Passage]
    retrieval_scores: list[float] | None = None
    trust: dict[str, Any] | None = None
    forecast: dict[str, Any] | None = None
    stages: dict[str, Any] | None = None  # the other stages' reports, by name
    untrusted: bool = False
    whole: list[ScoredPassage] | None = None
    cut_by: str | None = None

    @classmethod
    def from_hits(cls, hits: Sequence[ScoredPassage], **info: Any) -> PassagesRecord:
        return cls([h.passage for h in hits], [float(h.score) for h in hits], **info)


@dataclass
class Judgement:
    """An answer and its faithfulness score: what a method generated and scored, or a given
    answer a predictor scored. `score` is None when nothing could be scored (see `error`);
    `raw_score` is the score before the answer rules, `rules` the rules that changed it.
    `per_passage`, `best` and `sentences` are the predictor's support of each passage and
    sentence; `details` the method's own intermediate values (grid records keep them)."""

    answer: str
    score: float | None
    method: str
    judge: str
    error: str | None = None
    failure: VeriragError | None = None
    hard: bool = False
    per_passage: list[float | None] | None = None
    best: int | None = None
    sentences: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    raw_score: float | None = None
    cascade: CascadeDecision | None = None  # a cascade predictor's routing
    rules: list[str] = field(default_factory=list)
    # why the judge could not judge (`verirag.awf.unverified`): {reason, message, language}
    unverified: dict[str, Any] | None = None

    @classmethod
    def of(cls, found: Any, **fields: Any) -> Judgement:
        """The judgement of what a method (MethodOutput) or a predictor (Verification) `found`:
        its error, failure, support of each passage and sentence, warnings and routing, with `fields`."""
        return cls(
            error=found.error,
            failure=found.failure,
            per_passage=found.per_passage,
            best=found.best,
            sentences=found.sentences,
            warnings=list(found.warnings),
            cascade=found.cascade,
            **fields,
        )

    @property
    def outage(self) -> bool:
        return is_outage(self.failure)

    def as_output(self) -> MethodOutput:
        """The MethodOutput a policy acts on (a score that could not be computed acts as 0, and so
        does the untrusted score of an unverified answer: it takes the unsupported action)."""
        score = 0.0 if self.score is None or self.unverified else self.score
        return MethodOutput(answer=self.answer, score=score, error=self.error, details=self.details)


@dataclass
class ActRecord:
    """What the act stage did: the action, the answer the user sees, the policy that chose it."""

    action: str
    answer: str
    policy: str
    error: str | None = None
    failure: VeriragError | None = None
    # the second answer read the passages whole, as no stage cut them: the JSON answer's
    # stages[cut_by].second_answer
    second_read: dict[str, Any] | None = None


@dataclass
class AnswerState:
    """One question on its way through the core: what the caller gave (`answer`: an answer to
    verify; `passages`: passages to read instead of retrieving; `history`: the conversation's
    earlier turns, `verirag.conversation.as_history`), then each stage's record. The stages read
    the question in its conversation (`in_context`)."""

    question: str
    history: tuple[str, ...] = ()
    answer: str | None = None
    passages: PassagesRecord | None = None
    judgement: Judgement | None = None
    act: ActRecord | None = None
    trace: Trace | None = None  # given by the grid (shared by the methods of one example)
    timings: dict[str, float] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    attribution: Attribution | None = None  # what this run used of the trace (cost, shared, spent)
    _stack: ExitStack | None = field(default=None, repr=False)

    @classmethod
    def asked(
        cls, question: str, history: Any = None, *, window: tuple[int, int] | None = None, **fields: Any
    ) -> AnswerState:
        """The state of `question` asked after `history`, its turns read and cut by the one rule
        (`verirag.conversation.as_history`: bad turns are an InputError, a long conversation keeps
        its recent turns), so `ask`, `verify` and the experiment grid read the same conversation.
        `window`: (most recent turns, words) kept (None: the documented defaults)."""
        from verirag.conversation import as_history

        cut = {} if window is None else {"max_turns": window[0], "max_words": window[1]}
        return cls(question, history=as_history(history, **cut), **fields)

    def in_context(self) -> str:
        """The question as a judge or the generator reads it: with the conversation before it
        (an `InContext` string) when there is one, else the question."""
        from verirag.conversation import in_context

        return in_context(self.question, self.history)

    def retrieval_query(self) -> str:
        """What retrieval searches for: the question, after the last RETRIEVAL_TURNS turns of the
        conversation (a follow-up's "it" is named there)."""
        from verirag.conversation import bare_turns

        if not self.history:
            return self.question
        return " ".join([*bare_turns(self.history[-RETRIEVAL_TURNS:]), self.question])

    def open_trace(self, say: Say | None = None) -> Trace:
        """The trace of this question and its passages, made once; what this run uses of it is
        attributed to it (`attribution`) until the core finishes."""
        if self.trace is None:
            p = self.passages or PassagesRecord([])
            self.trace = Trace(self.in_context(), p.passages, on_compute=say, retrieval_scores=p.retrieval_scores)
        if self.attribution is None and self._stack is not None:
            self.attribution = self._stack.enter_context(self.trace.attribute())
        return self.trace


class Stage(Protocol):
    name: str

    def run(self, state: AnswerState, say: Say) -> None: ...


class AnswerCore:
    """Runs `stages` in order over an AnswerState (module doc)."""

    def __init__(self, stages: Sequence[Stage], *, raise_outages: bool = True):
        self.stages = list(stages)
        self.raise_outages = raise_outages

    def run(self, state: AnswerState, say: Say | None = None) -> AnswerState:
        say = say or (lambda _s: None)
        t_start = time.perf_counter()
        direct = Usage()
        with metering(direct), ExitStack() as stack:  # the trace's attribution closes first
            state._stack = stack
            try:
                for stage in self.stages:
                    stage.run(state, say)
                    if self.raise_outages:
                        for record in (state.judgement, state.act):
                            if record is not None and is_outage(record.failure):
                                raise record.failure
            finally:
                state._stack = None  # the attribution closes with the stack: nothing may enter it later
            attributed = state.attribution.cost if state.attribution is not None else Usage()
        state.usage += direct
        state.usage += attributed
        state.timings["total"] = time.perf_counter() - t_start
        return state


# ---- the stages ---------------------------------------------------------------------------------
class Retrieve:
    """Retrieval and the post-retrieval stages (`verirag.awf.stages`: trust filter, forecast
    rerank; one re-query with a reformulated question when a stage asks). Each post-retrieval
    stage that ran writes its report into the PassagesRecord (`stage.report`)."""

    name = "retrieve"

    def __init__(self, retrieve: Callable[[str], list[ScoredPassage]], stages: Sequence = (), reformulate=None):
        self.retrieve, self.stages, self.reformulate = retrieve, list(stages), reformulate

    def run(self, state: AnswerState, say: Say) -> None:
        from verirag.awf.stages import run_stages
        from verirag.awf.user_stages import report

        say("retrieving")
        t0 = time.perf_counter()
        with metering() as usage:  # a re-query's reformulation is an LLM call
            got = run_stages(state.retrieval_query(), self.retrieve, self.stages, say, reformulate=self.reformulate)
        state.timings["retrieve"] = time.perf_counter() - t0
        state.usage += usage
        record = PassagesRecord.from_hits(got.hits)
        for stage in self.stages:
            result = got.results.get(stage.name)
            if result is not None:
                report(stage, result, got, usage, record)
        state.passages = record


class AnswerAndScore:
    """An AwF method M(q, P) = (a, v): generate an answer from the passages and score it (a
    GENERATOR+PREDICTOR or a unified method), through the trace. Nothing to answer from (the
    trust filter kept no chunk) skips it: the answer rules say why."""

    name = "answer"

    def __init__(self, method):
        self.method = method

    def run(self, state: AnswerState, say: Say) -> None:
        if state.passages is not None and state.passages.untrusted:  # the answer rules say why
            state.judgement = Judgement(answer="", score=None, method=self.method.registry_name, judge="")
            return
        trace = state.open_trace(say)
        t0 = time.perf_counter()
        out = self.method.run(trace)
        elapsed = time.perf_counter() - t0
        split = out.timings  # a composed method reports its own split
        state.timings["generate"] = split.get("generate", elapsed)
        state.timings["verify"] = split.get("verify", max(0.0, elapsed - state.timings["generate"]))
        predictor = getattr(self.method, "predictor", None)
        state.judgement = Judgement.of(
            out,
            answer=out.answer,
            score=float(out.score),
            method=self.method.registry_name,
            judge=(getattr(predictor, "name", "") or self.method.registry_name),
            hard=out.hard,
            details=out.details,
        )


class VerifyGiven:
    """Score an answer someone else produced against the passages it came from, with a
    predictor (the PRED of a GENERATOR+PREDICTOR method). A predictor that fails (unparseable
    judge output) gives score None and the error; an outage is raised by the core. `given`: the
    predictor's Verification and seconds already computed for this answer (a batch scored them
    together: `verirag.awf.verify_batch`), recorded as if computed here."""

    name = "verify"

    def __init__(self, predictor, method_name: str, given: tuple[Any, float] | None = None):
        self.predictor, self.method_name, self.given = predictor, method_name, given

    def run(self, state: AnswerState, say: Say) -> None:
        say(f"verifying ({self.predictor.registry_name})")
        passages = state.passages.passages if state.passages else []
        if self.given is not None:
            v, state.timings["verify"] = self.given
        else:
            t0 = time.perf_counter()
            v = self.predictor.verify(state.in_context(), state.answer or "", passages)
            state.timings["verify"] = time.perf_counter() - t0
        state.judgement = Judgement.of(
            v,
            answer=state.answer or "",
            score=None if math.isnan(v.score) else float(v.score),
            method=self.method_name,
            judge=getattr(self.predictor, "name", "") or self.predictor.registry_name,
        )


class AnswerRules:
    """The rules that belong to the answer, whatever judged it:
    - declined: an answer that declines ("the context does not say") answered nothing, so there
      is nothing to call supported, whatever a verifier makes of the refusal: score 0;
    - unstated_number: the answer states a number (digits or number words, `verirag.awf.numbers`)
      that neither the passages it was judged against (texts and titles) nor the question and its
      conversation state: its score times NUMBER_PENALTY (a hard label's: 0), and a warning naming
      the numbers; an answer read from no passage is left alone. A judge reads a changed year or
      count as a small edit; the passages either state it or they do not;
    - untrusted: the trust filter kept no chunk, so nothing was answered: score 0 and the error.
    Each rule applied is named in `Judgement.rules`, the score before it kept in `raw_score`."""

    name = "rules"

    def run(self, state: AnswerState, say: Say) -> None:
        if state.passages is not None and state.passages.untrusted:
            method = state.judgement.method if state.judgement else ""
            state.judgement = Judgement(answer="", score=0.0, method=method, judge="", error=UNTRUSTED_ERROR)
            state.judgement.rules.append(UNTRUSTED)
            return
        j = state.judgement
        if j is None or j.score is None:
            return
        if j.answer.strip() and is_abstention(j.answer):
            j.raw_score, j.score = j.score, 0.0
            j.rules.append(DECLINED)
            j.warnings.append(DECLINED_WARNING)
            return
        passages = state.passages.passages if state.passages is not None else []
        if j.answer.strip() and passages:  # an answer read from no passage (no_context) claims no support
            from verirag.awf.numbers import unstated_numbers

            missing = unstated_numbers(j.answer, [state.in_context(), *(f"{p.title}\n{p.text}" for p in passages)])
            if missing:  # a hard-label method's decision becomes "unsupported"
                j.raw_score, j.score = j.score, 0.0 if j.hard else j.score * NUMBER_PENALTY
                j.rules.append(UNSTATED_NUMBER)
                j.warnings.append(f"the answer states {', '.join(missing)}, which no passage states")


class Act:
    """Answer when the score passes the threshold, else the policy acts (abstain, answer again
    without retrieval, escalate; AwF section 6). With no trusted chunk the pipeline's untrusted
    policy acts instead. `policy_for(name)` gives the pipeline's (loaded once) policy.

    A second answer that reads passages (escalate) reads them whole when a stage cut their text
    for the first answer: that answer was judged unsupported, and the cut may have dropped what
    it needed; the escalation is the expensive second try, so it gets everything retrieved."""

    name = "act"

    def __init__(self, policy_for: Callable[[str], Any], fallback: str, threshold, untrusted_fallback: str = "abstain"):
        self.policy_for, self.fallback, self.threshold = policy_for, fallback, threshold
        self.untrusted_fallback = untrusted_fallback

    def run(self, state: AnswerState, say: Say) -> None:
        untrusted = state.passages is not None and state.passages.untrusted
        policy = self.policy_for(self.untrusted_fallback if untrusted else self.fallback)
        t0 = time.perf_counter()
        trace, output = state.open_trace(say), state.judgement.as_output()
        whole_hits = state.passages.whole if state.passages is not None else None
        second_read = None
        if whole_hits is None or not policy.reads_passages:
            decision = policy.apply(trace, output, self.threshold)
        else:
            whole = Trace(
                state.in_context(),
                [h.passage for h in whole_hits],
                on_compute=say,
                retrieval_scores=[float(h.score) for h in whole_hits],
            )
            with whole.attribute() as spent:  # its own trace: what it costs is added to the answer's
                decision = policy.apply(trace, output, self.threshold, second_trace=whole)
            state.usage += spent.cost
            if "second_answer" in decision.details:  # the policy answered again, over the passages whole
                second_read = {"action": policy.action, "read_whole": [h.passage.id for h in whole_hits]}
        if decision.action != ANSWERED and policy.name != "abstain":
            state.timings["fallback"] = time.perf_counter() - t0
        state.act = ActRecord(
            action=decision.action,
            answer=decision.final_answer,
            policy=policy.name,
            error=decision.details.get("error"),
            failure=decision.failure,
            second_read=second_read,
        )


# ---- results --------------------------------------------------------------------------------------
def _evidence(state: AnswerState) -> list[Evidence]:
    p = state.passages or PassagesRecord([])
    scores = p.retrieval_scores or [None] * len(p.passages)
    per = (state.judgement.per_passage if state.judgement else None) or [None] * len(p.passages)
    return [
        Evidence(id=x.id, text=x.text, title=x.title, source=x.source, retrieval_score=r, support_score=s)
        for x, r, s in zip(p.passages, scores, per)
    ]


def _rounded(timings: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in timings.items()}


def _errors(*errors: str | None) -> str | None:
    return "; ".join(e for e in errors if e) or None


def _stage_reports(p: PassagesRecord | None, act: ActRecord) -> dict[str, Any] | None:
    """The JSON answer's `stages`: each stage's report by name; the stage that cut the passages'
    text gets `second_answer` when a second answer read them whole (its action, the ids read)."""
    if p is None or not p.stages:
        return None
    if act.second_read is None or p.cut_by not in p.stages:
        return p.stages
    return {**p.stages, p.cut_by: {**p.stages[p.cut_by], "second_answer": act.second_read}}


def _verdict(j: Judgement, faithful: bool) -> str:
    if j.unverified:
        return UNVERIFIED
    return SUPPORTED if faithful else UNSUPPORTED


def ask_result(state: AnswerState, threshold, *, model: str) -> AskResult:
    """The AskResult of a state that went through the act stage."""
    j, act, p = state.judgement, state.act, state.passages
    evidence = _evidence(state)
    faithful = act.action == ANSWERED and not j.unverified
    return AskResult(
        question=state.question,
        answer=act.answer,
        score=float(j.score or 0.0),
        faithful=faithful,
        verdict=_verdict(j, faithful),
        unverified=j.unverified,
        action=act.action,
        threshold=None if (p and p.untrusted) else as_controller(threshold).threshold_,
        evidence=evidence,
        supporting_passage=evidence[j.best] if j.best is not None else None,
        retrieved_answer=j.answer if state.answer is None else state.answer,
        model=model,
        method=j.method,
        judge=j.judge,
        timings=_rounded(state.timings),
        usage=state.usage.to_dict(),
        error=_errors(j.error, act.error),
        warnings=list(j.warnings),
        trust=p.trust if p else None,
        forecast=p.forecast if p else None,
        stages=_stage_reports(p, act),
        sentences=judged_sentences(j.sentences),
        cascade=j.cascade,
    )


def verify_result(state: AnswerState, threshold) -> VerifyResult:
    """The VerifyResult of a state whose answer was verified: the verdict at `threshold` is
    "supported" only when a score was computed without error and the threshold answers it."""
    j = state.judgement
    controller = as_controller(threshold)
    faithful = bool(
        j.error is None and not j.unverified and j.score is not None and controller.decide(j.score) == ANSWER
    )
    evidence = _evidence(state)
    return VerifyResult(
        question=state.question,
        answer=j.answer,
        score=j.score,
        faithful=faithful,
        verdict=_verdict(j, faithful),
        unverified=j.unverified,
        threshold=controller.threshold_,
        evidence=evidence,
        supporting_passage=evidence[j.best] if j.best is not None else None,
        method=j.method,
        judge=j.judge,
        timings=_rounded({"verify": state.timings.get("verify", 0.0)}),
        usage=state.usage.to_dict(),
        error=j.error,
        warnings=j.warnings + [w for w in [controller.uncertified_warning()] if w],
        sentences=judged_sentences(j.sentences),
        cascade=j.cascade,
    )
