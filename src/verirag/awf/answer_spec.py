"""AnswerSpec: what a pipeline answers and verifies with, typed and frozen, with one `resolve()`.

    spec = AnswerSpec(judge="llm", threshold=0.7, prune=0.3)      # what the user said
    spec.resolve().method                                          # "vanilla+nli": every default applied
    spec.resolve().digest()                                        # the same settings, the same digest
    Pipeline(spec)                                                 # what runs it (PipelineConfig.from_spec)

Every door builds one and resolves it: `Pipeline.from_preset`, `Verifier(...)`, `verirag ask`,
`verify` and `serve`, the service's per-request settings and the experiment grid's YAML. So an
option means one thing everywhere, and a bad value gets one message ("threshold must be a number
in [0, 1], got 1.5") whichever door it came through; the HTTP schema reuses the field types below.

`resolve()` is the one place defaults are applied, in this order: what the spec names, then its
`preset`'s values (PRESETS), then DEFAULTS; the method a (method, judge) pair runs
(`verirag.awf.defaults.judged_method`: a judge without a method selects the method that uses one;
neither, the model's default, `default_method`: the shipped stack for the model it was fitted for,
else the verifier; a door that verifies given answers reads `for_given_answers()`);
pruning off or on by PRUNE_DEFAULT. Left None after it: `max_answer_tokens` (each method's own
length), `backend_timeout` (the backend's own), `trust` and `rerank` (those stages are off), and a
prune setting's `threshold` / `pruner` (the shipped pruner at its own fitted threshold, read when
the pruner loads: the digest names them as that).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from verirag.awf.defaults import default_method, given_answer_method, judged_method
from verirag.awf.policies import FALLBACKS
from verirag.awf.stage_kinds import kinds
from verirag.awf.stage_kinds.prune import OFF, PRUNE_DEFAULT, SHIPPED, PruneSetting, parse_prune
from verirag.awf.stages import UNTRUSTED_ACTIONS
from verirag.awf.user_stages import StageRef, check_names
from verirag.conversation import MAX_HISTORY_WORDS, MAX_TURNS
from verirag.errors import InputError
from verirag.learned.threshold import ThresholdController

RETRIEVERS = ("hybrid", "bm25", "dense")  # verirag.retrieval.index.KINDS (a test checks they agree)

# The values `resolve()` fills in where neither the spec nor its preset names one.
DEFAULTS: dict[str, Any] = {
    "model": "qwen2.5-1.5b",
    "threshold": 0.5,
    "fallback": "abstain",
    "retrieval": "hybrid",
    "k": 5,
    "n_ctx": 4096,
    "chunk_words": 200,
    "overlap_words": 20,
}
# A preset is a named set of values under the spec's own (`Pipeline.from_preset(NAME)`, `--preset`).
PRESETS: dict[str, dict[str, Any]] = {
    # The quality default: Qwen2.5-1.5B answers and judges; hybrid BM25 + MiniLM retrieval.
    "local": {},
    "fast": {"model": "qwen2.5-0.5b"},
    # The smallest real model: for tests and smoke runs, not for answers worth trusting.
    "tiny": {"model": "smollm2-135m", "n_ctx": 2048},
}


# ---- field types: one check and one message per kind of value, shared with the HTTP schema -------
def _shown(v: Any) -> str:
    return json.dumps(v) if v is None or isinstance(v, bool) else repr(v)


def _problem(message: str) -> PydanticCustomError:
    # a custom error's message is shown as is (no "Value error, " before it), here, in a 422 and in
    # the experiment configs' errors (their own problems are of this type too)
    return PydanticCustomError("verirag", message)


def _unit(v: Any) -> Any:
    if isinstance(v, ThresholdController):
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise _problem(f"must be a number in [0, 1], got {_shown(v)}")
    return float(v)


def _at_least(low: int, high: int | None = None):
    def check(v: Any) -> int:
        integral = isinstance(v, float) and math.isfinite(v) and v.is_integer()  # JSON's 3.0 is 3
        if isinstance(v, bool) or not (isinstance(v, int) or integral) or v < low:
            raise _problem(f"must be an integer >= {low}, got {_shown(v)}")
        if high is not None and v > high:
            raise _problem(f"must be an integer <= {high}, got {_shown(v)}")
        return int(v)

    return check


def count(low: int = 1, high: int | None = None) -> Any:
    """An integer field of at least `low` (and at most `high`): Count is count(1); the HTTP schema
    bounds `k` above too."""
    return Annotated[int, BeforeValidator(_at_least(low, high)), Field(json_schema_extra=_range(low, high))]


def _positive(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise _problem(f"must be a positive number, got {_shown(v)}")
    return float(v)


def _one_of(*names: str):
    def check(v: Any) -> str:
        if v not in names:
            raise _problem(f"must be one of {', '.join(names)}, got {_shown(v)}")
        return v

    return check


def _text(v: Any) -> str:
    if isinstance(v, os.PathLike):  # a folder given as a Path is its text
        v = os.fspath(v)
    if not isinstance(v, str) or not v.strip():
        raise _problem(f"must be non-empty text, got {_shown(v)}")
    return v.strip()


def _judge(v: Any) -> str:
    v = _text(v)
    if v not in ("llm", "same") and not (v.startswith("hf:") and len(v) > 3):
        raise _problem(f"must be llm (the LLM yes/no judge; same is an alias) or hf:MODEL_ID_OR_PATH, got {v!r}")
    return v


def _range(low: float | None = None, high: float | None = None) -> dict:
    return {k: b for k, b in (("minimum", low), ("maximum", high)) if b is not None}


Unit = Annotated[float, BeforeValidator(_unit), Field(json_schema_extra=_range(0, 1))]
Count = count(1)
Size = count(0)
Seconds = Annotated[float, BeforeValidator(_positive), Field(json_schema_extra={"exclusiveMinimum": 0})]
Text = Annotated[str, BeforeValidator(_text)]
Fallback = Annotated[str, BeforeValidator(_one_of(*FALLBACKS)), Field(json_schema_extra={"enum": list(FALLBACKS)})]
Untrusted = Annotated[
    str, BeforeValidator(_one_of(*UNTRUSTED_ACTIONS)), Field(json_schema_extra={"enum": list(UNTRUSTED_ACTIONS)})
]
Retriever = Annotated[str, BeforeValidator(_one_of(*RETRIEVERS)), Field(json_schema_extra={"enum": list(RETRIEVERS)})]
Judge = Annotated[str, BeforeValidator(_judge)]
Threshold = Annotated[float | ThresholdController, BeforeValidator(_unit), Field(json_schema_extra=_range(0, 1))]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


# ---- the post-retrieval stages, each with its options --------------------------------------------
class TrustOptions(_Frozen):
    """The conformal trust filter (`verirag calibrate-retrieval`): only trusted chunks reach the model."""

    filter: Text = Field(description="The trust filter's folder (`verirag calibrate-retrieval --out DIR`).")
    on_untrusted: Untrusted = Field("abstain", description="When no chunk is trusted: abstain, no-context or keep-top.")


class RerankOptions(_Frozen):
    """CalibRAG's forecast rerank (`verirag train forecaster`): rerank `depth` retrieved documents by
    the forecast that an answer from each is right, pass the best `keep` on; below `epsilon` the
    query is reformulated and retrieval runs once more."""

    forecaster: Text = Field(description="The forecaster's folder (`verirag train forecaster`).")
    epsilon: Unit = Field(0.3, description="Below this forecast the query is reformulated once.")
    depth: Count = Field(20, description="Retrieved documents the forecaster scores.")
    keep: Count = Field(1, description="Best-forecast documents passed on to the generator.")


class PruneOptions(_Frozen):
    """The answer spec's `prune`, read as every door reads a prune value (`verirag.awf.stage_kinds.prune.parse_prune`): true (on
    at the pruner's own threshold), false, a threshold in [0, 1], {threshold, pruner}, or {on,
    threshold, pruner}."""

    on: bool = Field(False, description="Whether the retrieved passages are pruned.")
    threshold: float | None = Field(None, description="Score a sentence needs (None: the pruner's fitted one).")
    pruner: str | None = Field(None, description="A saved pruner's folder (None: the shipped pruner).")

    @model_validator(mode="before")
    @classmethod
    def _read(cls, v: Any) -> Any:
        if isinstance(v, PruneOptions):
            return v.model_dump()
        if isinstance(v, dict) and "on" in v and set(v) <= {"on", "threshold", "pruner"}:
            s = PruneSetting(**v)  # the resolved form, as model_dump writes it
        else:
            s = parse_prune(v)
        return {"on": s.on, "threshold": s.threshold, "pruner": s.pruner}

    @property
    def setting(self) -> PruneSetting:
        s = PruneSetting(self.on, self.threshold, self.pruner)
        return next((c for c in (PRUNE_DEFAULT, OFF, SHIPPED) if c == s), s)  # the module's own constants


class ConversationOptions(_Frozen):
    """The conversation window: how much of a question's history the generator and judges read
    (`verirag.conversation`: the most recent turns, then the most recent words)."""

    max_turns: Count = Field(MAX_TURNS, description="Most recent turns of the history that are read.")
    max_words: Count = Field(MAX_HISTORY_WORDS, description="Words of those turns in all, the most recent first.")


# ---- the spec ------------------------------------------------------------------------------------
class AnswerSpec(_Frozen):
    """What a pipeline answers and verifies with (module doc). None: not given, `resolve()` fills it."""

    preset: str = Field("local", description="Pipeline preset: local (qwen2.5-1.5b), fast (qwen2.5-0.5b), tiny.")
    model: Text | None = Field(
        None, description="Generator (and default judge) model: a preset name, a .gguf path, openai:M, URL#M, hf:ID."
    )
    method: Text | None = Field(
        None,
        description="AwF method (`verirag methods`); default: for qwen2.5-1.5b's own answers "
        "vanilla+stacked(fallback=verifier) (the shipped verifier with the generation's log-probabilities), "
        "else and for given answers vanilla+verifier (the shipped trained verifier); vanilla+nli when a judge is given.",
    )
    judge: Judge | None = Field(
        None, description="Entailment model of methods that use one (+nli): llm or hf:NLI_MODEL."
    )
    judge_model: Text | None = Field(None, description="Model of the LLM judge (default: model).")
    threshold: Threshold | None = Field(
        None, description="Verdict threshold on the score (default 0.5), or a fitted ThresholdController."
    )
    fallback: Fallback | None = Field(None, description="Below the threshold: abstain (default), no-rag or escalate.")
    escalate_model: Text | None = Field(None, description="The larger model of the escalate fallback.")
    retrieval: Retriever | None = Field(None, description="Retriever of a new index: hybrid (default), bm25, dense.")
    k: Count | None = Field(None, description="Passages to retrieve (default 5).")
    trust: TrustOptions | None = Field(None, description="The conformal trust filter (None: off).")
    rerank: RerankOptions | None = Field(None, description="The forecast rerank (None: off).")
    stages: tuple[StageRef, ...] | None = Field(
        None,
        description="Stages a user wrote (`verirag.awf.user_stages`), run in order after the trust filter and the "
        "rerank, before pruning: each {use: module:Class, options: {...}}.",
    )
    prune: PruneOptions | None = Field(None, description="Context pruning (None: PRUNE_DEFAULT).")
    conversation: ConversationOptions | None = Field(None, description="The conversation window.")
    n_ctx: Count | None = Field(None, description="Context window of a local model in tokens (default 4096).")
    max_answer_tokens: Count | None = Field(None, description="Longest answer in tokens (None: each method's own).")
    backend_timeout: Seconds | None = Field(None, description="Seconds per request to an HTTP model backend.")
    chunk_words: Count | None = Field(None, description="Words per indexed chunk (default 200).")
    overlap_words: Size | None = Field(None, description="Words two neighbouring chunks share (default 20).")

    def __init__(self, **values: Any):
        try:
            super().__init__(**values)
        except ValidationError as e:
            raise InputError(spec_error(e)) from None

    @model_validator(mode="after")
    def _consistent(self) -> AnswerSpec:
        if self.preset not in PRESETS:
            raise _problem(f"unknown pipeline preset {self.preset!r}; known: {', '.join(PRESETS)}")
        if self.fallback == "escalate" and not self.escalate_model:
            raise _problem("the escalate fallback needs a second model: set escalate_model (--escalate-model)")
        return self

    # ---- building ---------------------------------------------------------------------------------
    @classmethod
    def from_flat(cls, **flat: Any) -> AnswerSpec:
        """A spec from the flat keywords `PipelineConfig`, `Pipeline.from_preset` and the CLI use
        (FLAT: trust, on_untrusted, forecaster, epsilon, ...); None means not given."""
        return cls(**nest(flat))

    @classmethod
    def from_config(cls, config: Any) -> AnswerSpec:
        """The (resolved) spec of a PipelineConfig."""
        from dataclasses import fields

        return cls.from_flat(**{f.name: getattr(config, f.name) for f in fields(config)})

    def override(self, **flat: Any) -> AnswerSpec:
        """This spec with the flat keywords that are not None put over it (a request's own settings)."""
        given = nest({k: v for k, v in flat.items() if v is not None})
        if not given:
            return self
        mine = self.model_dump(exclude_none=True)
        for stage in ("trust", "rerank", "conversation"):  # a stage's options are set one by one
            if stage in given and stage in mine:
                given[stage] = {**mine[stage], **given[stage]}
        return AnswerSpec(**{**mine, **given})

    # ---- the one place defaults are applied ----------------------------------------------------------
    def resolve(self) -> AnswerSpec:
        """Every default applied (module doc): explicit values, then the preset's, then DEFAULTS; the
        method a (method, judge) pair runs; PRUNE_DEFAULT. A method no builder knows is an InputError.
        Idempotent: `s.resolve().resolve() == s.resolve()`."""
        from verirag.awf.spec import MethodSpec, check_name

        base = {**DEFAULTS, **PRESETS[self.preset]}
        filled = {k: (getattr(self, k) if getattr(self, k) is not None else v) for k, v in base.items()}
        filled["method"] = judged_method(self.method, self.judge, default_method(filled["model"]))
        check_name(MethodSpec.parse(filled["method"]).name)
        filled["prune"] = self.prune if self.prune is not None else PruneOptions.model_validate(PRUNE_DEFAULT)
        filled["conversation"] = self.conversation or ConversationOptions()
        filled["stages"] = tuple(self.stages or ())
        for ref in filled["stages"]:  # a stage that cannot be imported or built fails before anything runs
            ref.checked_options()
        check_names(filled["stages"])
        return self.model_copy(update=filled)

    def for_given_answers(self) -> AnswerSpec:
        """Resolved for a door that verifies answers given to it (`Verifier`, `verirag verify`,
        `/v1/verify`): the method that judges them (`verirag.awf.defaults.given_answer_method`: the
        default stack's fallback, the verifier, since a given answer has no generation log-probs)."""
        r = self.resolve()
        return r.model_copy(update={"method": given_answer_method(r.method)})

    def unused_model(self) -> str | None:
        """For a door that verifies given answers, on the spec as the user gave it: what to tell a
        user who named a model (`model=`, `--model`) that the method judging the answers never asks
        (the default verifier reads no LLM; the model serves only a fallback that answers again), with
        the methods that would judge with it; None otherwise."""
        from verirag.awf.registry import get as get_component
        from verirag.awf.spec import MethodSpec, split_name

        if self.model is None:
            return None
        method = self.for_given_answers().method
        unified, _, predictor = split_name(MethodSpec.parse(method).name)
        if unified or predictor is None or get_component("predictor", predictor).uses_llm:
            return None
        return (
            f"model {self.model!r} does not judge: {method} judges without an LLM (the model only answers "
            "again where a fallback does); to judge with it, name a method that uses it (e.g. "
            '"stacked(impute=true)", "llm_judge", "nli")'
        )

    def call_settings(self) -> dict[str, Any]:
        """A resolved spec's settings of the built-in stage kinds (`verirag.awf.stage_kinds`) as
        `Pipeline.ask` takes them per call."""
        return {kind.name: getattr(self, kind.name).setting for kind in kinds()}

    def digest(self) -> str:
        """A stable digest of the resolved spec (its preset aside: what it resolved to is what counts)."""
        data = self.resolve().model_dump(mode="python", exclude={"preset"})
        t = data["threshold"]
        if isinstance(t, ThresholdController):  # a fitted controller by what it decides with
            data["threshold"] = {"kind": t.kind, "target": t.target, "threshold_": t.threshold_}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- flat keywords (PipelineConfig, from_preset, the CLI) <-> the spec's fields ----------------------
# flat keyword -> (spec field, option of that stage or None)
FLAT: dict[str, tuple[str, str | None]] = {
    **{name: (name, None) for name in AnswerSpec.model_fields if name not in ("trust", "rerank", "conversation")},
    "trust": ("trust", "filter"),
    "on_untrusted": ("trust", "on_untrusted"),
    "forecaster": ("rerank", "forecaster"),
    "epsilon": ("rerank", "epsilon"),
    "rerank_depth": ("rerank", "depth"),
    "forecast_keep": ("rerank", "keep"),
    "history_turns": ("conversation", "max_turns"),
    "history_words": ("conversation", "max_words"),
}


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Flat keywords as the spec's fields (None: not given); an unknown keyword is an InputError."""
    unknown = sorted(set(flat) - set(FLAT))
    if unknown:
        raise InputError(f"unknown pipeline setting {', '.join(map(repr, unknown))}; known: {', '.join(FLAT)}")
    out: dict[str, Any] = {}
    for key, value in flat.items():
        name, option = FLAT[key]
        if option is None:
            if value is not None:
                out[name] = value
        elif value is not None:
            out.setdefault(name, {})[option] = value
    for stage, (model, main) in _STAGES.items():
        options = out.get(stage)
        if options is not None and main not in options:
            # the stage is off (PipelineConfig carries its options at their defaults all the same):
            # its options are checked, then set aside
            try:
                model.model_validate({main: "-", **options})
            except ValidationError as e:
                raise InputError(spec_error(e)) from None
            out.pop(stage)
    return out


# a stage with options is on when its main option (the fitted part's folder) is set
_STAGES = {"trust": (TrustOptions, "filter"), "rerank": (RerankOptions, "forecaster")}


def flatten(spec: AnswerSpec) -> dict[str, Any]:
    """A resolved spec as PipelineConfig's keywords."""
    out: dict[str, Any] = {}
    for key, (name, option) in FLAT.items():
        if key == "preset":
            continue
        value = getattr(spec, name)
        if option is None:
            out[key] = value.setting if isinstance(value, PruneOptions) else value
        elif value is not None:
            out[key] = getattr(value, option)
    return out


def spec_error(e: ValidationError) -> str:
    """A ValidationError of the spec in the words every door shows: "threshold must be ...", one
    problem per place."""
    parts = []
    for err in e.errors():
        where = ".".join(str(p) for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p[:1].isupper())))
        kind = err["type"]
        if kind == "extra_forbidden":
            msg = "is no setting of the answer spec"
        elif kind == "missing":
            msg = "is required"
        else:
            msg = err["msg"]
        parts.append(f"{where} {msg}" if where else msg)
    return "; ".join(dict.fromkeys(parts))
