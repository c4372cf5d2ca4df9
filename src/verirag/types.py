"""Plain, JSON-serialisable records shared by every layer.

Nothing here imports the rest of verirag, so any module may depend on it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# A prompt is either raw text (sent as is) or chat messages ({"role", "content"}),
# which each backend renders with the model's own chat template.
Message = dict[str, str]
Prompt = str | list[Message]

# The verdicts (AskResult.verdict, VerifyResult.verdict): an unverified answer is one the judge
# could not judge (`verirag.awf.unverified`: no claim, no passage text, a language it cannot read).
SUPPORTED, UNSUPPORTED, UNVERIFIED = "supported", "unsupported", "unverified"
VERDICTS = (SUPPORTED, UNSUPPORTED, UNVERIFIED)


def checked_verdict(verdict: str, faithful: bool) -> str:
    """`verdict`, or the one `faithful` implies when it is ""; ValueError for a verdict that is not
    one of VERDICTS or that contradicts `faithful` (only a supported answer is faithful)."""
    verdict = verdict or (SUPPORTED if faithful else UNSUPPORTED)
    if verdict not in VERDICTS:
        raise ValueError(f"verdict is one of {', '.join(VERDICTS)}, not {verdict!r}")
    if (verdict == SUPPORTED) != bool(faithful):
        raise ValueError(f"verdict {verdict!r} contradicts faithful={faithful!r}: only a supported answer is faithful")
    return verdict


def verdict_of(d: dict[str, Any]) -> str:
    """A record's verdict; a record written before verdicts existed has it from `faithful`."""
    return d.get("verdict") or (SUPPORTED if d.get("faithful") else UNSUPPORTED)


@dataclass
class Passage:
    """A unit of retrievable text. `id` is stable across index rebuilds of the same corpus."""

    id: str
    text: str
    title: str = ""
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Passage:
        return cls(
            id=str(d["id"]),
            text=d["text"],
            title=d.get("title", "") or "",
            source=d.get("source", "") or "",
            meta=dict(d.get("meta") or {}),
        )


@dataclass
class ScoredPassage:
    """A passage with the retriever's score (higher is better) and its rank (0 = best)."""

    passage: Passage
    score: float
    rank: int

    def to_dict(self) -> dict[str, Any]:
        return {"passage": self.passage.to_dict(), "score": self.score, "rank": self.rank}


@dataclass
class TokenLogprob:
    """One generated (or scored) token with its log-probability and the top-k alternatives."""

    token: str
    logprob: float
    top: list[tuple[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "logprob": self.logprob, "top": [list(t) for t in self.top]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TokenLogprob:
        return cls(
            token=d["token"], logprob=float(d["logprob"]), top=[(str(t), float(lp)) for t, lp in d.get("top", [])]
        )


@dataclass
class Generation:
    """What an LLM returned for one request.

    `tokens` is empty unless logprobs were requested. `finish_reason` is "stop" (end of
    sequence or a stop string), "length" (max_tokens reached) or "error".
    """

    text: str
    tokens: list[TokenLogprob] = field(default_factory=list)
    finish_reason: str = "stop"
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    token_ids: list[int] = field(default_factory=list)  # the generated ids, where the backend has them

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tokens"] = [t.to_dict() for t in self.tokens]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Generation:
        return cls(
            text=d["text"],
            tokens=[TokenLogprob.from_dict(t) for t in d.get("tokens", [])],
            finish_reason=d.get("finish_reason", "stop"),
            model=d.get("model", ""),
            prompt_tokens=int(d.get("prompt_tokens", 0)),
            completion_tokens=int(d.get("completion_tokens", 0)),
            cached=bool(d.get("cached", False)),
            token_ids=[int(t) for t in d.get("token_ids", [])],
        )


@dataclass
class ContinuationScore:
    """log P(continuation | prompt), token by token (teacher forcing)."""

    tokens: list[TokenLogprob]
    cached: bool = False

    @property
    def total_logprob(self) -> float:
        return float(sum(t.logprob for t in self.tokens))

    @property
    def mean_logprob(self) -> float:
        return self.total_logprob / max(1, len(self.tokens))

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": [t.to_dict() for t in self.tokens], "cached": self.cached}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContinuationScore:
        return cls(tokens=[TokenLogprob.from_dict(t) for t in d["tokens"]], cached=bool(d.get("cached", False)))


@dataclass
class Evidence:
    """A retrieved passage as the verifier saw it."""

    id: str
    text: str
    title: str
    source: str
    retrieval_score: float | None  # None: not retrieved by verirag (Pipeline.verify)
    support_score: float | None  # None when the verifier did not judge this passage

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        return cls(
            id=str(d["id"]),
            text=d["text"],
            title=d.get("title", "") or "",
            source=d.get("source", "") or "",
            retrieval_score=d.get("retrieval_score"),
            support_score=d.get("support_score"),
        )


def _evidence(d: dict[str, Any] | None) -> Evidence | None:
    return None if d is None else Evidence.from_dict(d)


@dataclass
class JudgedSentence:
    """One sentence of an answer as a sentence-level verifier judged it: its support score and the
    id of the passage that supports it best (the closest one when the score is low)."""

    text: str
    score: float
    supporting_passage: str | None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgedSentence:
        return cls(text=str(d["text"]), score=float(d["score"]), supporting_passage=d.get("supporting_passage"))


def judged_sentences(records: list[dict[str, Any]] | None) -> list[JudgedSentence] | None:
    """A predictor's per-sentence records (Verification.sentences) as JudgedSentence; None stays None."""
    return None if records is None else [JudgedSentence.from_dict(r) for r in records]


@dataclass
class CascadeDecision:
    """How a cascade (`vanilla+cascade`) judged one answer: `decided_by` is "verifier" (its
    calibrated score was outside `band`) or the LLM judge's name; the raw and calibrated scores of
    each judge that ran (None: not run); what the LLM judge cost (`seconds`, `llm_calls`, tokens,
    `cache_hits`; 0 when the verifier decided)."""

    decided_by: str
    judge: str
    band: list[float]
    verifier_score: float
    verifier_calibrated: float
    judge_score: float | None = None
    judge_calibrated: float | None = None
    seconds: float = 0.0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> CascadeDecision | None:
        return None if d is None else cls(**d)


@dataclass
class AskResult:
    """The answer to one question, verified, with the action taken.

    action: "answered" (score >= threshold), "abstained", "fallback" (answered again
    without retrieval because the retrieved answer was not supported) or "escalated" (answered
    again by a larger model). `verdict`: "supported", "unsupported" or "unverified" (the judge
    could not judge the retrieved answer, `unverified` says why: it is never supported, the
    action is the unsupported one and the score is not to be trusted).
    `error` is set when the request could be served only partly (e.g. unparseable judge
    output); the record is kept so that nothing is silently dropped.
    """

    question: str
    answer: str
    score: float
    faithful: bool
    threshold: float | None  # None: a fitted threshold whose target was not certified (all act)
    action: str
    evidence: list[Evidence]
    supporting_passage: Evidence | None
    retrieved_answer: str
    model: str
    method: str
    judge: str
    timings: dict[str, float]
    usage: dict[str, Any] = field(default_factory=dict)  # calls, cache hits, tokens of this answer
    error: str | None = None
    # what the judge says beside its score (a number no passage states, a stack set aside for its
    # fallback, a predictor that failed and counted 0), as VerifyResult.warnings
    warnings: list[str] = field(default_factory=list)
    # the conformal trust stage, when one is set: threshold, trusted chunk ids, m1, m2, empty_action
    trust: dict[str, Any] | None = None
    # CalibRAG's forecaster stage, when one is set: confidence f(q, d*), epsilon, whether the query
    # was reformulated and to what, the reranked documents with their f values, the ids kept
    forecast: dict[str, Any] | None = None
    # what the other post-retrieval stages report, by stage name: the built-in kinds'
    # (`verirag.awf.stage_kinds`) and those a user wrote (`verirag.awf.user_stages`); a stage that
    # cut the passages' text has `second_answer` when the escalate fallback answered again over them
    # whole ({"action": "escalated", "read_whole": ids}): its tokens are in `usage`, not there
    stages: dict[str, Any] | None = None
    # each sentence of `retrieved_answer` with its support, from a verifier that judges sentence by
    # sentence (the trained verifier); None for judges that score the answer as a whole
    sentences: list[JudgedSentence] | None = None
    # a cascade's routing (method GEN+cascade): which judge decided, both scores, the LLM's cost
    cascade: CascadeDecision | None = None
    verdict: str = ""  # "" only in a record built by hand: __post_init__ derives it from faithful
    # why the answer is unverified: {reason, message, language} (`verirag.awf.unverified`)
    unverified: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.verdict = checked_verdict(self.verdict, self.faithful)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = [e.to_dict() for e in self.evidence]
        d["supporting_passage"] = self.supporting_passage.to_dict() if self.supporting_passage else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AskResult:
        """The inverse of to_dict (e.g. a service's JSON answer): missing optional parts take their defaults."""
        return cls(
            **_judged_fields(d),
            action=d["action"],
            retrieved_answer=d.get("retrieved_answer", d["answer"]),
            model=d.get("model", ""),
            trust=d.get("trust"),
            forecast=d.get("forecast"),
            stages=d.get("stages"),
            warnings=list(d.get("warnings") or []),
        )


@dataclass
class VerifyResult:
    """The verdict on an answer someone else produced (another RAG system's question, answer and
    passages): the score, the verdict at `threshold`, each passage's support and the passage that
    supports it best. `faithful` is False whenever `error` is set: a score that could not be
    computed is no evidence of support. `verdict`: "supported", "unsupported" or "unverified"
    (the judge could not judge: `unverified` says why; `faithful` is then False and `score`,
    when there is one, is not to be trusted)."""

    question: str
    answer: str
    score: float | None  # None: no passage could be judged (see error)
    faithful: bool
    threshold: float | None
    evidence: list[Evidence]
    supporting_passage: Evidence | None
    method: str
    judge: str
    timings: dict[str, float]
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    # each sentence of the answer with its support (as AskResult.sentences); None for whole-answer judges
    sentences: list[JudgedSentence] | None = None
    # a cascade's routing (method GEN+cascade): which judge decided, both scores, the LLM's cost
    cascade: CascadeDecision | None = None
    verdict: str = ""  # "" only in a record built by hand: __post_init__ derives it from faithful
    # why the answer is unverified: {reason, message, language} (`verirag.awf.unverified`)
    unverified: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.verdict = checked_verdict(self.verdict, self.faithful)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # the Evidence and JudgedSentence records become dicts too

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VerifyResult:
        """The inverse of to_dict (e.g. a service's JSON answer): missing optional parts take their defaults."""
        return cls(**_judged_fields(d), warnings=list(d.get("warnings") or []))


def _judged_fields(d: dict[str, Any]) -> dict[str, Any]:
    """The fields an AskResult and a VerifyResult share, read from their JSON form (missing
    optional parts take their defaults)."""
    return {
        "question": d["question"],
        "answer": d["answer"],
        "score": d["score"],
        "faithful": bool(d["faithful"]),
        "threshold": d.get("threshold"),
        "evidence": [Evidence.from_dict(e) for e in d.get("evidence") or []],
        "supporting_passage": _evidence(d.get("supporting_passage")),
        "method": d["method"],
        "judge": d.get("judge", ""),
        "timings": dict(d.get("timings") or {}),
        "usage": dict(d.get("usage") or {}),
        "error": d.get("error"),
        "sentences": judged_sentences(d.get("sentences")),
        "cascade": CascadeDecision.from_dict(d.get("cascade")),
        "verdict": verdict_of(d),
        "unverified": d.get("unverified"),
    }


@dataclass
class Example:
    """One benchmark item: a question, the passages it is answered from, and what is known of it.

    - `references`: acceptable reference answers (may be empty, e.g. NoMIRACL before references
      are generated).
    - `history`: earlier turns of a conversation (TopiOCQA), oldest first, "speaker: text" or text.
    - `relevance[i]`: 1 if passages[i] supports a reference answer, 0 if not, None if unknown.
    - `answerable`: whether the passages support an answer at all (None if unknown). Loaders set it
      from relevance labels when they have them.
    - `group`: examples built from one source item share it (HotpotQA's twin answerable /
      unanswerable copies), so cross-validation can keep them in one fold.
    """

    id: str
    question: str
    passages: list[Passage] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    relevance: list[int | None] | None = None
    answerable: bool | None = None
    dataset: str = ""
    group: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def question_with_history(self) -> str:
        """The question as a model should see it: earlier turns first, when there are any."""
        if not self.history:
            return self.question
        turns = "\n".join(self.history)
        return f"Conversation so far:\n{turns}\n\nQuestion: {self.question}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["passages"] = [p.to_dict() for p in self.passages]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Example:
        return cls(
            id=str(d["id"]),
            question=d["question"],
            passages=[Passage.from_dict(p) for p in d.get("passages", [])],
            references=list(d.get("references", [])),
            history=list(d.get("history", [])),
            relevance=d.get("relevance"),
            answerable=d.get("answerable"),
            dataset=d.get("dataset", ""),
            group=d.get("group", "") or "",
            meta=dict(d.get("meta") or {}),
        )
