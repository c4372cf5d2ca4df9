"""The pipeline: retrieve -> post-retrieval stages -> generate + verify -> act.

p = Pipeline.from_preset("local")
p.index("docs/")                 # or p.load_index("my-index/")
r = p.ask("Who wrote ...?")      # AskResult: answer, score, faithful, action, evidence, timings
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from verirag.awf.answer_spec import PRESETS as SPEC_PRESETS
from verirag.awf.answer_spec import AnswerSpec, flatten
from verirag.awf.calibrag import reformulate_query
from verirag.awf.compose import build_method, build_predictor
from verirag.awf.core import (
    Act,
    AnswerAndScore,
    AnswerCore,
    AnswerRules,
    AnswerState,
    PassagesRecord,
    Retrieve,
    VerifyGiven,
    ask_result,
    verify_result,
)
from verirag.awf.defaults import JUDGED_METHOD, default_method, given_answer_method, judged_method
from verirag.awf.entailment.base import EntailmentModel
from verirag.awf.methods.base import AwFMethod
from verirag.awf.policies import make_policy
from verirag.awf.registry import create
from verirag.awf.registry import get as get_component
from verirag.awf.spec import SEPARATOR, MethodSpec, accepted_options, split_name
from verirag.awf.stage_kinds.prune import PruneSetting, PruneStage, parse_prune
from verirag.awf.stages import ForecastRerankStage, TrustFilterStage
from verirag.awf.unverified import Verifiability
from verirag.awf.verify_batch import VerifyItem, verify_batch
from verirag.conversation import MAX_HISTORY_WORDS, MAX_TURNS
from verirag.errors import InputError, VeriragError
from verirag.learned.threshold import ThresholdController, as_controller
from verirag.limits import MAX_ANSWER_CHARS
from verirag.llm.factory import load_llm
from verirag.llm.metered import MeteredLLM
from verirag.types import AskResult, Passage, ScoredPassage, VerifyResult

log = logging.getLogger(__name__)


def uses_shipped_verifier(method: str) -> bool:
    """Whether `method` is GEN+verifier without a verifier=DIR of its own."""
    spec = MethodSpec.parse(method)
    unified, _gen, pred = split_name(spec.name)
    return not unified and pred == "verifier" and not spec.routed().get("predictor", {}).get("verifier")


def why_it_cannot_verify(method: AwFMethod) -> str | None:
    """Why `method` cannot verify an answer it did not generate (None when it can): only the
    predictor of a GENERATOR+PREDICTOR method that reads the answer can."""
    predictor = getattr(method, "predictor", None)
    if predictor is None or method.hard:
        return (
            f"method {method.registry_name!r} scores only the answers it generates; to verify "
            "an answer, use a GENERATOR+PREDICTOR method such as " + JUDGED_METHOD
        )
    if predictor.answer_independent:
        return (
            f"{predictor.registry_name} judges the passages, not the answer, so it cannot verify "
            "a given answer; use e.g. " + JUDGED_METHOD
        )
    return None


@dataclass(frozen=True)
class PipelineConfig:
    """Everything that defines a pipeline: the resolved answer spec (`verirag.awf.answer_spec`:
    `PipelineConfig.from_spec(spec)`; `config.spec()` goes back), its stages' options flat.

    `method` is any AwF method name (`verirag.awf.compose.method_names()`): None (the model's
    default, `verirag.awf.defaults`: for qwen2.5-1.5b "vanilla+stacked(fallback=verifier)", the
    shipped verifier beside the generation's log-probabilities; else "vanilla+verifier", the shipped
    trained verifier), "vanilla+verifier", "vanilla+self_check", "vanilla+nli", "instructrag+pre_answering", "intrinsic", ... `judge` is the entailment model of
    predictors that use one (nli): None (default) or "llm" for the LLM yes/no judge ("same" is an
    alias), or "hf:MODEL" for an HF NLI model; set for a method without an entailment model, it is
    an InputError. `judge_model` (default `model`) runs the LLM judges. `fallback` acts below the
    threshold: abstain, no-rag, or escalate (to `escalate_model`)."""

    model: str = "qwen2.5-1.5b"
    method: str | None = None  # None: the model's default (`verirag.awf.defaults.default_method`)
    judge: str | None = None
    judge_model: str | None = None
    escalate_model: str | None = None
    retrieval: str = "hybrid"
    k: int = 5
    threshold: float = 0.5
    fallback: str = "abstain"
    n_ctx: int = 4096
    max_answer_tokens: int | None = None  # None: each method's own answer length
    backend_timeout: float | None = None  # seconds per HTTP request to an openai:/http:// model (None: its default)
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
    # post-retrieval, last: the context pruner (issue 37); one setting, as every door reads it
    # (`verirag.awf.stage_kinds.prune`): True (the pruner's own threshold), False, a threshold in
    # [0, 1], {threshold, pruner} or a PruneSetting; None or absent: PRUNE_DEFAULT
    prune: PruneSetting | bool | float | dict | None = None
    # post-retrieval, before the pruner: stages a user wrote (`verirag.awf.user_stages.StageRef`)
    stages: tuple = ()

    # the conversation window (`verirag.conversation`): the most recent turns, then words, read
    history_turns: int = MAX_TURNS
    history_words: int = MAX_HISTORY_WORDS

    def __post_init__(self):
        object.__setattr__(self, "prune", parse_prune(self.prune))  # held as a PruneSetting
        if self.method is None:
            object.__setattr__(self, "method", judged_method(None, self.judge, default_method(self.model)))

    def validate(self) -> PipelineConfig:
        """Checked as every door checks its settings: through the answer spec (one message per bad
        value, `verirag.awf.answer_spec`); a threshold controller must be fitted."""
        AnswerSpec.from_config(self)
        as_controller(self.threshold)  # a controller must be fitted; an uncertified one acts on all
        return self

    def spec(self):
        """This config as an AnswerSpec (`verirag.awf.answer_spec`)."""
        return AnswerSpec.from_config(self)

    @classmethod
    def from_spec(cls, spec: AnswerSpec) -> PipelineConfig:
        """The config of the resolved spec (what `Pipeline` runs)."""
        return cls(**flatten(spec.resolve()))


# The presets as configs (`verirag.awf.answer_spec.PRESETS` holds their values; `resolve` applies them).
PRESETS: dict[str, PipelineConfig] = {name: PipelineConfig.from_spec(AnswerSpec(preset=name)) for name in SPEC_PRESETS}


class Pipeline:
    def __init__(self, config: PipelineConfig | AnswerSpec, *, index=None, pruner=None):
        """`config`: a PipelineConfig, or an AnswerSpec (resolved into one). `pruner`: a loaded
        ContextPruner to prune with instead of `config.prune.pruner`'s (default: the one this
        process shares, `verirag.learned.pruner_store`)."""
        if isinstance(config, AnswerSpec):
            config = PipelineConfig.from_spec(config)
        self.config = config.validate()
        self._index = index
        self._method: AwFMethod | None = None
        self._answer_verifier = None  # (method name, predictor) that `verify` uses
        self._given_methods: dict[str, AwFMethod] = {}  # the method given answers go to, where it is another
        self._policies: dict = {}
        self._trust = None
        self._forecaster = None
        self._pruner = pruner
        self._stages: list | None = None
        self._llms: dict[str, MeteredLLM] = {}

    @classmethod
    def from_preset(cls, name: str = "local", **overrides) -> Pipeline:
        """The pipeline of preset `name` with `overrides` (PipelineConfig's keywords; None: not
        given), resolved as at every door (`AnswerSpec.resolve`: a judge chosen without a method
        selects the method that uses it)."""
        return cls(AnswerSpec.from_flat(preset=name, **overrides))

    def threshold_warnings(self, *, answering: bool = True) -> list[str]:
        """What a user should hear about a threshold file (`config.threshold` a fitted
        ThresholdController): a target that could not be certified (every answer acts), or a fit
        for another model, method, method identity or method options. Empty for a number.
        `answering=False` (verifying given answers only): a predictor that calls no LLM is
        compared by the model's and method's names, without loading the model to digest it."""
        from verirag.learned.threshold import ThresholdController

        fitted = self.config.threshold
        if not isinstance(fitted, ThresholdController):
            return []
        warnings = []
        if not fitted.certified_ and not answering:  # verifying: what every verdict's warnings say
            warnings.append(fitted.uncertified_warning())
        elif not fitted.certified_:
            warnings.append(
                f"the target {fitted.target_text()} could not be certified on {fitted.n_fit_} examples: "
                f"every answer acts ({self.config.fallback})"
            )
        name = self.config.method if answering else given_answer_method(self.config.method)
        expect = {"model": self.config.model, "method": name}
        if answering or self._llm_free_predictor(name) is None:  # the whole method is built: compare its identity
            expect["method_digest"] = self._method_named(name).digest
        warnings += fitted.mismatches(expect)[1]
        if fitted.kind != "value" and not fitted.fingerprints.get("method"):
            warnings.append(  # a score's meaning is its method's: an unnamed fit cannot be checked
                f"the threshold names no method it was fitted for, so it cannot be checked against "
                f"{name}; fit one that names it (`verirag calibrate`, or fit_threshold(method=...))"
            )
        then = fitted.provenance.get("method_options") or {}
        now = {}
        if "method_digest" in expect:
            now = self._method_named(name).resolved_options()
        changed = [
            f"{k} {then[k]!r} (fitted) vs {now[k]!r} (now)"
            for k in sorted(then)
            if k in now and str(then[k]) != str(now[k])
        ]
        if changed:
            warnings.append("the threshold was fitted on answers made with other options: " + "; ".join(changed))
        return warnings

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
        self._index = Index.build(
            passages,
            kind=self.config.retrieval,
            chunk_words=self.config.chunk_words,
            overlap_words=self.config.overlap_words,
        )
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
        """A model, metered (what each answer costs is counted: AskResult.usage), wrapped once."""
        if spec not in self._llms:
            self._llms[spec] = MeteredLLM(load_llm(spec, n_ctx=self.config.n_ctx, timeout=self.config.backend_timeout))
        return self._llms[spec]

    @property
    def llm(self):
        return self._load(self.config.model)

    def _answer_length(self) -> dict:
        """max_tokens for the parts that answer, only when the user set one: each method's own
        default stands otherwise (InstructRAG's rationale needs its 256, Vanilla's answer 96)."""
        n = self.config.max_answer_tokens
        return {} if n is None else {"max_tokens": n}

    @property
    def method(self) -> AwFMethod:
        if self._method is None:
            judge_llm = self._load(self.config.judge_model) if self.config.judge_model else None
            options = self._answer_length()
            if "max_tokens" not in accepted_options(MethodSpec.parse(self.config.method).name):
                options = {}
            self._method = build_method(
                self.config.method, self.llm, judge_llm=judge_llm, entailment=self._entailment(), **options
            )
        return self._method

    def policy(self, fallback: str):
        if fallback not in self._policies:
            escalate = self._load(self.config.escalate_model) if fallback == "escalate" else None
            # abstaining calls no model: verifying another system's answer never loads the LLM for it
            llm = self.llm if fallback == "no-rag" else None
            self._policies[fallback] = make_policy(fallback, llm, escalate_llm=escalate, **self._answer_length())
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
            self._trust = ConformalTrustFilter.load(
                self.config.trust,
                expect={
                    "retriever": getattr(index, "kind", None),
                    "corpus": getattr(index, "fingerprint", None),
                    "k": self.config.k,
                },
            )
        return self._trust

    @property
    def forecaster(self):
        """CalibRAG's forecaster of `config.forecaster` (None without one), loaded once."""
        if self._forecaster is None and self.config.forecaster:
            from verirag.learned.forecaster import load_forecaster

            self._forecaster = load_forecaster(self.config.forecaster, llm=self.llm)
        return self._forecaster

    @property
    def context_pruner(self):
        """The context pruner of `config.prune.pruner` (the shipped one when None): the one this
        process shares (`verirag.learned.pruner_store`), unless the pipeline was given its own."""
        return self.pruner_for(self.config.prune)

    def pruner_for(self, setting: PruneSetting):
        """The pruner a setting prunes with: the one given to this pipeline for its own folder,
        else the process's shared one for the setting's folder (loaded once, whatever the threshold)."""
        if self._pruner is not None and setting.pruner == self.config.prune.pruner:
            return self._pruner
        from verirag.learned.pruner_store import shared_pruner

        return shared_pruner(setting.pruner)

    @property
    def stages(self) -> list:
        """The post-retrieval stages in order at the configured pruning: see `stages_for`."""
        return self.stages_for(self.config.prune)

    def stages_for(self, prune: PruneSetting) -> list:
        """The post-retrieval stages in order: the trust filter, the forecast rerank and the stages
        a user wrote (built once), then the pruner at `prune` (a small object over the shared
        pruner, made per call)."""
        if self._stages is None:
            from verirag.awf.user_stages import build_stages

            c = self.config
            self._stages = (
                ([TrustFilterStage(self.trust_filter, c.on_untrusted)] if c.trust else [])
                + (
                    [ForecastRerankStage(self.forecaster, epsilon=c.epsilon, keep=c.forecast_keep)]
                    if c.forecaster
                    else []
                )
                + build_stages(c.stages)
            )
        if not prune.on:
            return list(self._stages)
        stage = PruneStage(self.pruner_for(prune), prune.threshold, count_tokens=lambda t: self.llm.count_tokens(t))
        return [*self._stages, stage]

    # ---- asking ---------------------------------------------------------------------------
    def retrieve(self, question: str, k: int | None = None) -> list[ScoredPassage]:
        if self._index is None:
            raise InputError("no index: call index(corpus) or load_index(path) first")
        return self._index.search(question, k=k or self.config.k)

    def ask(
        self,
        question: str,
        *,
        history: Sequence | None = None,
        k: int | None = None,
        threshold: float | ThresholdController | None = None,
        fallback: str | None = None,
        prune: PruneSetting | bool | float | dict | None = None,
        on_stage: Callable[[str], None] | None = None,
    ) -> AskResult:
        """Answer, verify and act (`verirag.awf.core`): retrieve -> post-retrieval stages (trust
        filter, forecast rerank, one re-query when a stage asks) -> generate + verify -> the
        answer rules -> act. `on_stage` is told each stage as it starts ("retrieving", "reading 5
        passages and answering (vanilla)", "verifying (verifier)", ...), e.g. to name it on a
        spinner. A backend outage anywhere on this path raises BackendError: it is never turned
        into a verdict. `history`: the conversation's earlier turns (strings, oldest first, or
        OpenAI-style messages; `verirag.conversation`): retrieval reads the last two before the
        question, the generator and the judges read the conversation before it. `prune`: this
        call's pruning (`verirag.awf.stage_kinds.prune.parse_prune`; None: `config.prune`)."""
        question = (question or "").strip()
        if not question:
            raise InputError("the question is empty")
        asked = AnswerState.asked(question, history, window=self._window())
        threshold = self.config.threshold if threshold is None else threshold
        fallback = fallback or self.config.fallback
        replace(self.config, threshold=threshold, fallback=fallback).validate()
        depth = max(k or self.config.k, self.config.rerank_depth) if self.config.forecaster else k
        setting = self.config.prune if prune is None else parse_prune(prune)
        retrieve = Retrieve(
            lambda query: self.retrieve(query, depth),
            self.stages_for(setting),
            reformulate=lambda query: reformulate_query(self.llm, query),
        )
        act = Act(self.policy, fallback, threshold, untrusted_fallback=self._untrusted_fallback())
        judge = getattr(self.method, "predictor", None)  # a unified method judges itself: no predictor
        verifiable = Verifiability(english_only=getattr(judge, "english_only", False))
        core = AnswerCore([retrieve, AnswerAndScore(self.method), AnswerRules(), verifiable, act])
        state = core.run(asked, on_stage)
        return ask_result(state, threshold, model=self.llm.model_id)

    def _window(self) -> tuple[int, int]:
        """The conversation window: (most recent turns, words) of a history that are read."""
        return self.config.history_turns, self.config.history_words

    def _untrusted_fallback(self) -> str:
        """The policy for "no chunk is trusted": abstain, or answer without context (no-rag)."""
        return "no-rag" if self.config.on_untrusted == "no-context" else "abstain"

    def verify(
        self,
        question: str,
        answer: str,
        passages: Sequence[Passage],
        *,
        history: Sequence | None = None,
        threshold: float | ThresholdController | None = None,
        on_stage: Callable[[str], None] | None = None,
    ) -> VerifyResult:
        """Verify an answer another system produced from `passages` (`verirag.awf.core`: verify
        -> the answer rules): the score of this pipeline's predictor (the PRED of its GEN+PRED
        method; self_check checks the answer in the conversation Vanilla would have had), the
        verdict at `threshold`, each passage's support and, from a predictor that judges sentence
        by sentence (verifier), each sentence's. A method that generates its own answer (a
        unified method, or a bare generator) cannot verify another one: InputError. A predictor
        that fails (unparseable judge output) gives score None, faithful False and the error,
        never an exception; an outage raises BackendError. `history`: the conversation's earlier
        turns (strings, oldest first, or OpenAI-style messages; `verirag.conversation`): the
        predictor reads the question in it (bad history: InputError; long history: cut)."""
        threshold = self.config.threshold if threshold is None else threshold
        state = self._verified(question, answer, passages, threshold, on_stage, history=history)
        return verify_result(state, threshold)

    def _verified(self, question, answer, passages, threshold, on_stage, *stages, history=None) -> AnswerState:
        """The state of (question, answer, passages) after verify, the answer rules and `stages`."""
        state = self.given_state(question, answer, passages, threshold, history)
        predictor = self.answer_verifier()
        verifiable = Verifiability(english_only=predictor.english_only)
        core = AnswerCore([VerifyGiven(predictor, self._answer_verifier[0]), AnswerRules(), verifiable, *stages])
        return core.run(state, on_stage)

    def given_state(self, question, answer, passages, threshold, history=None) -> AnswerState:
        """The state of an answer given to verify, checked (InputError for an empty question or
        answer, an answer over MAX_ANSWER_CHARS, no passages, a bad history or threshold) before any
        model runs."""
        question = (question or "").strip()
        if not question:
            raise InputError("the question is empty")
        if not (answer or "").strip():
            raise InputError("the answer is empty: there is nothing to verify")
        if len(answer) > MAX_ANSWER_CHARS:  # refused at once (verirag.limits), not read sentence by sentence
            raise InputError(f"the answer has {len(answer):,} characters: at most {MAX_ANSWER_CHARS:,} are verified")
        passages = list(passages)
        if not passages:
            raise InputError("no passages: an answer is verified against the passages it came from")
        asked = AnswerState.asked(
            question, history, window=self._window(), answer=answer, passages=PassagesRecord(passages)
        )
        replace(self.config, threshold=threshold).validate()
        return asked

    def verify_many(
        self, items: Sequence[VerifyItem], *, on_stage: Callable[[str], None] | None = None
    ) -> list[VerifyResult | VeriragError]:
        """`verify` of many answers (`verirag.awf.verify_batch`): one result per item, in input order;
        an item that is bad input gets its InputError in its place; an outage raises BackendError."""
        return verify_batch(self, items, on_stage=on_stage)

    def answer_verifier(self):
        """The predictor that `verify` scores a given answer with; InputError when this pipeline's
        method cannot verify an answer it did not generate (so a batch can refuse before it starts).
        A predictor that calls no LLM (the trained verifier, k_precision) is built alone: verifying
        with it never loads the generator's model. A stack with a fallback hands given answers to
        its fallback (`verirag.awf.defaults.given_answer_method`): they have no generation log-probs."""
        if self._answer_verifier is None:
            given = given_answer_method(self.config.method)
            alone = self._llm_free_predictor(given)
            if alone is None:
                method = self._method_named(given)
                refusal = why_it_cannot_verify(method)
                if refusal:
                    raise InputError(refusal)
                alone = (method.registry_name, method.predictor)
            self._answer_verifier = alone
        return self._answer_verifier[1]

    def _method_named(self, name: str) -> AwFMethod:
        """This pipeline's method, or (`name` another: the method given answers go to) that one, built once."""
        if name == self.config.method:
            return self.method
        if name not in self._given_methods:
            judge_llm = self._load(self.config.judge_model) if self.config.judge_model else None
            self._given_methods[name] = build_method(name, self.llm, judge_llm=judge_llm, entailment=self._entailment())
        return self._given_methods[name]

    def _llm_free_predictor(self, method: str):
        """(method name, predictor) of a GEN+PRED `method` whose predictor calls no LLM, built
        without the generator; None for every other method (built whole, as `ask` builds it)."""
        built = self._method is not None and method == self.config.method
        if built or self.config.judge or self.config.judge_model:
            return None
        spec = MethodSpec.parse(method)
        unified, gen, pred = split_name(spec.name)
        if unified or pred is None:
            return None
        cls = get_component("predictor", pred)
        if cls.uses_llm or cls.answer_independent:
            return None
        gen_name = get_component("generator", gen).registry_name
        return f"{gen_name}{SEPARATOR}{cls.registry_name}", build_predictor(
            pred, None, options=spec.routed().get("predictor", {})
        )

    def verify_and_act(
        self,
        question: str,
        answer: str,
        passages: Sequence[Passage],
        *,
        history: Sequence | None = None,
        threshold: float | ThresholdController | None = None,
        fallback: str | None = None,
        on_stage: Callable[[str], None] | None = None,
    ) -> AskResult:
        """Verify another system's answer (as `verify`), then act on it by the policy `ask` uses
        (`fallback`: abstain, no-rag or escalate): what a framework integration needs to put
        verirag after its own chain. The result is an AskResult whose `retrieved_answer` is the
        given answer and `answer` what the user should see; an outage raises as in `ask`."""
        threshold = self.config.threshold if threshold is None else threshold
        fallback = fallback or self.config.fallback
        replace(self.config, threshold=threshold, fallback=fallback).validate()
        state = self._verified(
            question, answer, passages, threshold, on_stage, Act(self.policy, fallback, threshold), history=history
        )
        return ask_result(state, threshold, model=self._model_id())

    def _model_id(self) -> str:
        """The answering model's id where it is loaded, else its spec (verifying with a predictor
        that calls no LLM never loads it just to name it)."""
        loaded = self._llms.get(self.config.model)
        return loaded.model_id if loaded is not None else self.config.model

    def describe(self) -> dict:
        return asdict(self.config)
