"""The experiment config (YAML): what to run, validated before anything loads.

    name: awf-small
    datasets:                       # names of verirag_lab.datasets loaders
      - {name: nq, n: 200, seed: 0, options: {k: 5, retriever: bm25}}
      - {name: hotpotqa, method_options: {family: multi_hop}}   # defaults for the methods that take them
      - squad2                      # a bare name: every example, seed 0
      - {name: nq, groups: runs/held-out.txt}   # only the questions a file names ("nq:1284" per line)
    models: [qwen2.5-0.5b]          # load_llm specs: preset, .gguf path, openai:M, http URL#M, hf:X
    methods:                        # a name, or a mapping {name, label?, OPTION: VALUE, ...}
      - vanilla
      - vanilla+nli
      - instructrag+pre_answering
      - {name: instructrag, label: instructrag-mh, family: multi_hop}
      - intrinsic
    judge_model: null               # LLM for nli / llm_judge (default: the answering model)
    generation: {max_tokens: 128, n_ctx: 4096}    # max_tokens: for every method (default: each its own)
    ground_truth: {match: recall_or_substring}    # or recall, substring, em, llm (+ llm: SPEC)
    threshold: {value: 0.5}         # or {precision: 0.9, delta: 0.1} or {action_rate: 0.2}
    applications:
      no_rag_fallback: {models: [qwen2.5-0.5b], folds: 5}
      escalate: {small: qwen2.5-0.5b, large: qwen2.5-1.5b, large_method: vanilla, rate: 0.2}
    bootstrap: {n_resamples: 1000, confidence: 0.95, seed: 0}
    concurrency: 1                  # examples in flight per HTTP model (llama.cpp runs one at a time)
    prune: {threshold: 0.3, pruner: runs/my-pruner}   # the context pruner before the methods (issue 37)
    stages: [{use: my_stages:DropShortPassages, options: {min_words: 8}}]   # stages a user wrote

`prune` prunes each example's passages once, before its methods, as `verirag ask --prune` does
(`verirag.awf.stage_kinds.prune.PruneStage`): each passage keeps the sentences the context pruner scores at
least the threshold (and a passage named by the question or the kept text keeps its best sentence:
the hop rule), a passage with none kept is not read, and every method of the example reads the
pruned passages. Its values are those of every door (`verirag.awf.stage_kinds.prune.parse_prune`):
`true` is the shipped pruner at its own fitted threshold, a bare number in [0, 1] the threshold,
`false` off, and the mapping {threshold, pruner} names a threshold (null: the pruner's own) and a
folder `verirag train pruner` wrote (null: the shipped one); absent or null is off. The grid does
not follow the product's default (`PRUNE_DEFAULT`, on since issue 48): a config says what it
measures, so a default flipped later never changes what a committed config runs.
`stages` run before the pruner on each example's passages, in order, as in `verirag ask --stage`
(`verirag.awf.user_stages`); their reports are in `details["stages"]` and their identity (class,
options, version) in the record key.

Each record's `details["prune"]` is the report (per passage: sentences, kept, scores, tokens read
and saved; the totals) and its key names the pruning (`kind_digests["prune"]`, `PruneStage.digest`: the threshold, the
pruner's weights and the keeping rule), so a rerun with other pruning recomputes its records.

The pydantic models below are the schema (null means a key's default); every mistake is reported
at once, with its path ("datasets[1].n: must be an integer >= 1, got 0"), in one InputError.
`ExperimentConfig.method_specs(dataset)` gives the methods (`verirag.awf.spec.MethodSpec`) with
that dataset's `method_options` and the generation `max_tokens` where they take them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from verirag.awf.answer_spec import AnswerSpec, PruneOptions, Unit
from verirag.awf.spec import MethodSpec
from verirag.awf.stage_kinds.prune import OFF, PruneSetting, PruneValueError
from verirag.awf.user_stages import StageRef
from verirag.errors import InputError
from verirag_lab.experiments.grid.method_entries import (
    application_method,
    method_entry,
    method_option_defaults,
    option_problems,
    plain_problem,
    validation_context,
)
from verirag_lab.experiments.schema import StrictModel, fail, listing, read_yaml, shown, validate_config

MatchRule = Literal["recall_or_substring", "recall", "substring", "em", "llm"]
MATCH_RULES = get_args(MatchRule)
NO_RAG_METHOD = "no_context"
THRESHOLD_METHODS = ("bonferroni", "fixed_sequence")


# =========================================================================== the schema
def _distinct(v: list[str]) -> list[str]:
    first: dict[str, int] = {}
    fail(
        [
            ((i,), f"{x!r} appears twice (also at [{first[x]}])", x)
            for i, x in enumerate(v)
            if first.setdefault(x, i) != i
        ]
    )
    return v


def _in_models(v: Any, info: ValidationInfo) -> Any:
    """Model specs (one, or a list) that must be among the config's `models`."""
    models = validation_context(info).get("models")
    if models is not None:
        fail(
            [
                ((i,) if isinstance(v, list) else (), f"{m!r} is not one of `models`", m)
                for i, m in enumerate(v if isinstance(v, list) else [v])
                if m not in models
            ]
        )
    return v


def _plain_options(v: dict[str, Any]) -> dict[str, Any]:
    fail([((k,), p, x) for k, x in v.items() if (p := plain_problem(x))])
    return copy.deepcopy(v)


def _listed(kinds: tuple[type, ...], what: str, each: Any = lambda x: x) -> BeforeValidator:
    """A non-empty list (of `each(entry)`); one entry of `kinds` alone is a list of one."""

    def check(v: Any) -> Any:
        v = [v] if isinstance(v, kinds) else v
        if not isinstance(v, list) or not v:
            raise ValueError(f"must be a non-empty list of {what}, got {shown(v)}")
        return [each(x) for x in v]

    return BeforeValidator(check)


Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Names = Annotated[list[Text], _listed((str,), "model specs"), AfterValidator(_distinct)]
Options = Annotated[dict[str, Any], AfterValidator(_plain_options)]
AppMethod = Annotated[Any, AfterValidator(application_method)]


class _Section(StrictModel):
    """A mapping with known keys; null stands for a key's default (except the `null_is_error` keys)."""

    model_config = ConfigDict(strict=True, frozen=True, allow_inf_nan=False)
    null_is_error: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            k: v
            for k, v in data.items()
            if v is not None or k in cls.null_is_error or (f := cls.model_fields.get(k)) is None or f.is_required()
        }


class DatasetSpec(_Section):
    """A `datasets` entry: a verirag_lab.datasets loader, how many examples (seed), its options."""

    name: Text
    n: int | None = Field(None, ge=1)
    seed: int = Field(0, ge=0)
    path: Text | None = None
    groups: Text | None = None  # a file of "DATASET:GROUP" lines: only those questions, before `n` draws
    options: Options = {}
    method_options: Options = {}  # defaults for the methods that take them

    @field_validator("name")
    @classmethod
    def _known(cls, v: str, info: ValidationInfo) -> str:
        from verirag_lab.datasets import dataset_names

        seen = validation_context(info).setdefault("datasets", set())
        if v not in dataset_names():
            raise ValueError(f"unknown dataset {v!r} (known: {listing(dataset_names())})")
        if v in seen:
            raise ValueError(f"dataset {v!r} appears twice (records are keyed by dataset name)")
        seen.add(v)
        return v

    @field_validator("options")
    @classmethod
    def _loader_options(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        from verirag_lab.datasets import dataset_info

        if "name" in info.data:
            allowed = set(dataset_info(info.data["name"]).options())
            if "references_llm" in allowed:  # the config names the model; the runner loads it
                allowed = (allowed - {"references_llm"}) | {"references_model"}
            option_problems(v, dict.fromkeys(allowed), f"dataset {info.data['name']!r} takes no option")
        return v

    @field_validator("method_options")
    @classmethod
    def _taken(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        accepted = validation_context(info).get("accepted_options")  # None: the methods' own errors say why
        if accepted is not None:
            option_problems(v, accepted, "no method in `methods` takes option", "options they take")
        return v


class _Generation(_Section):
    # None: each method answers at its own length (InstructRAG's rationale needs more than Vanilla's answer)
    max_tokens: int | None = Field(None, ge=1)
    n_ctx: int = Field(4096, ge=256)


class _GroundTruth(_Section):
    match: MatchRule = "recall_or_substring"
    llm: Text | None = None

    @model_validator(mode="after")
    def _judge(self) -> _GroundTruth:
        if self.match == "llm" and not self.llm:
            fail([(("llm",), "match: llm needs the judge model spec in `llm`", None)])
        return self


class _Threshold(_Section):
    value: Unit | None = None  # the answer spec's threshold (`verirag.awf.answer_spec`), read as every door reads it
    precision: float | None = Field(None, gt=0, lt=1)
    action_rate: float | None = Field(None, ge=0, le=1)
    delta: float | None = Field(None, gt=0, lt=1)
    method: Literal[THRESHOLD_METHODS] | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_number_is_the_value(cls, v: Any) -> Any:
        return {"value": v} if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _one_target(self) -> _Threshold:
        from verirag.learned.threshold import ThresholdController

        ThresholdController(**self.model_dump(exclude_none=True))  # ValueError unless exactly one target
        return self


class _Fallback(_Section):
    models: Annotated[Names, AfterValidator(_in_models)] | None = None
    folds: int = Field(5, ge=2)
    fallback_method: AppMethod = Field(NO_RAG_METHOD, validate_default=True)


class _Escalate(_Section):
    small: Annotated[Text, AfterValidator(_in_models)] | None = None
    large: Text
    large_method: AppMethod = Field("vanilla", validate_default=True)
    rate: float = Field(0.2, gt=0, lt=1)


class _Applications(_Section):
    no_rag_fallback: _Fallback | None = None
    escalate: _Escalate | None = None


def _prune_setting(v: Any) -> PruneSetting:
    """`prune`: read by the one parser every door uses (`verirag.awf.stage_kinds.prune.parse_prune`:
    false is off, true the pruner's own threshold, a number a threshold, a mapping {threshold,
    pruner}); absent or null is off here, not PRUNE_DEFAULT (see the module's docstring); a named
    pruner folder must hold a saved pruner."""
    if v is None:
        return OFF
    from verirag.learned.pruner import META_FILE

    try:
        setting = PruneOptions.model_validate(v).setting  # the answer spec's `prune`, as every door reads it
    except PruneValueError as e:
        fail([((e.place,) if e.place else (), e.problem, v)])
    if setting.pruner is not None and not (Path(setting.pruner).expanduser() / META_FILE).is_file():
        problem = (
            f"no saved context pruner in {setting.pruner!r} (it lacks {META_FILE}): name a folder that "
            "`verirag train pruner --out DIR` wrote, or leave it out for the shipped pruner"
        )
        fail([(("pruner",), problem, v)])
    return setting


class _Bootstrap(_Section):
    null_is_error: ClassVar[frozenset[str]] = frozenset({"confidence"})

    n_resamples: int = Field(1000, ge=1)
    confidence: float = Field(0.95, gt=0, lt=1)
    seed: int = Field(0, ge=0)


class _Config(_Section):
    # Validated in this order: models and methods first, for the fields that refer to them.
    name: str | None = None
    models: Names
    methods: Annotated[list[Any], _listed((str, dict), "method names or {name: METHOD, OPTION: VALUE} mappings")]
    datasets: Annotated[
        list[DatasetSpec],
        _listed(
            (str, dict), "dataset names or {name: ...} mappings", lambda d: {"name": d} if isinstance(d, str) else d
        ),
    ]
    judge_model: Text | None = None
    generation: _Generation = _Generation()
    ground_truth: _GroundTruth = _GroundTruth()
    threshold: _Threshold = Field(default_factory=lambda: _Threshold(value=0.5))
    applications: _Applications = _Applications()
    bootstrap: _Bootstrap = _Bootstrap()
    concurrency: int = Field(1, ge=1)
    prune: Annotated[Any, PlainValidator(_prune_setting)] = OFF
    stages: list[StageRef] = Field(default_factory=list)  # stages a user wrote (verirag.awf.user_stages)

    @field_validator("name", mode="plain")
    @classmethod
    def _name(cls, v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise ValueError(f"must be text, got {shown(v)}")
        return str(v).strip() or None

    @field_validator("models", mode="before")
    @classmethod
    def _remember_models(cls, v: Any, info: ValidationInfo) -> Any:
        # What `models` names, even with other problems (duplicates), for the fields that refer to it.
        names = [v] if isinstance(v, str) else v if isinstance(v, list) else []
        validation_context(info)["models"] = [x.strip() for x in names if isinstance(x, str)]
        return v

    @field_validator("methods")
    @classmethod
    def _methods(cls, v: list[Any], info: ValidationInfo) -> list[MethodSpec]:
        problems, specs, first = [], [], {}  # first: label -> (index, spec) of its first entry
        accepted: dict[str, Any] | None = {}  # option -> a default, over the methods named; None: a name is unknown
        for i, entry in enumerate(v):
            name = entry.get("name") if isinstance(entry, dict) else getattr(entry, "name", entry)
            try:
                accepted = None if accepted is None else {**method_option_defaults(name.strip()), **accepted}
            except (AttributeError, InputError):
                accepted = None
            try:
                specs.append(spec := method_entry(entry))
            except ValidationError as e:
                problems += [((i, *err["loc"]), err["msg"], err["input"]) for err in e.errors()]
                continue
            j, other = first.setdefault(spec.label, (i, spec))
            if j != i:
                what = "the same method twice" if spec == other else f"label {spec.label!r} twice"
                problems.append(
                    (
                        (i, "label") if isinstance(entry, dict) else (i,),
                        f"{what} (also methods[{j}]): entries of one method with different options "
                        "need distinct labels, {name: ..., label: ..., OPTION: VALUE}",
                        entry,
                    )
                )
        validation_context(info).update(
            accepted_options=accepted, methods_by_label={k: s for k, (_, s) in first.items()}
        )
        fail(problems)
        return specs


# =========================================================================== the parsed config
@dataclass
class ExperimentConfig:
    """A validated config (parse_config / load_config build it)."""

    name: str
    datasets: list[DatasetSpec]
    models: list[str]
    methods: list[MethodSpec]  # as configured; method_specs(dataset) adds the defaults
    judge_model: str | None = None
    max_tokens: int | None = None
    n_ctx: int = 4096
    match: str = "recall_or_substring"
    match_llm: str | None = None
    threshold: dict[str, float] = field(default_factory=lambda: {"value": 0.5})
    applications: dict[str, dict[str, Any]] = field(default_factory=dict)  # JSON; methods by their labels
    bootstrap: dict[str, Any] = field(default_factory=lambda: {"n_resamples": 1000, "confidence": 0.95, "seed": 0})
    concurrency: int = 1
    application_methods: dict[str, MethodSpec] = field(default_factory=dict)  # app -> the MethodSpec it adds
    prune: PruneSetting = OFF  # verirag.awf.stage_kinds.prune; the grid's default is off (module docstring)
    stages: tuple[StageRef, ...] = ()  # stages a user wrote, before the pruner (verirag.awf.user_stages)

    def dataset(self, name: str) -> DatasetSpec:
        for d in self.datasets:
            if d.name == name:
                return d
        raise InputError(
            f"dataset {name!r} is not in config {self.name!r} (it has: {', '.join(d.name for d in self.datasets)})"
        )

    def answer_spec(self, model: str, method: MethodSpec | str) -> AnswerSpec:
        """The resolved answer spec of one (model, method) unit of this grid: its judge model,
        answer length, context window, pruning and (a fixed `threshold: {value: T}`) threshold, read
        and defaulted as every door reads them. A target threshold (precision, action_rate) is
        fitted per run and is not the spec's; a method's options stay with its MethodSpec."""
        name = method.name if isinstance(method, MethodSpec) else method
        return AnswerSpec(
            model=model,
            method=name,
            judge_model=self.judge_model,
            max_answer_tokens=self.max_tokens,
            n_ctx=self.n_ctx,
            prune=self.prune,
            stages=self.stages,
            threshold=self.threshold.get("value"),
        ).resolve()

    def method_defaults(self, dataset: str | None = None) -> dict[str, Any]:
        """Generation max_tokens, then `dataset`'s method_options (a method takes those it has; its own win)."""
        length = {} if self.max_tokens is None else {"max_tokens": self.max_tokens}
        return {**length, **(self.dataset(dataset).method_options if dataset is not None else {})}

    def method_specs(self, dataset: str | None = None) -> list[MethodSpec]:
        """The configured methods with complete options for `dataset` (None: generation defaults only)."""
        return [m.with_defaults(self.method_defaults(dataset)) for m in self.methods]

    def application_method(self, app: str) -> MethodSpec | None:
        """The MethodSpec the application `app` ("no_rag_fallback", "escalate") adds, or None."""
        return self.application_methods.get(app)

    def runs(self, dataset: str | None = None) -> list[tuple[str, list[MethodSpec]]]:
        """(model, methods) in the order they run: the grid, then what the applications add (once per
        label); with `dataset`, with their complete options for it, else with the options as configured."""
        plan = {m: list(self.methods) for m in self.models}
        needs = [(m, "no_rag_fallback") for m in self.applications.get("no_rag_fallback", {}).get("models", [])]
        needs += [(self.applications["escalate"]["large"], "escalate")] if "escalate" in self.applications else []
        for model, app in needs:
            spec, specs = self.application_methods[app], plan.setdefault(model, [])
            if spec.label not in {s.label for s in specs}:
                specs.append(spec)
        if dataset is None:
            return list(plan.items())
        defaults = self.method_defaults(dataset)
        return [(model, [s.with_defaults(defaults) for s in specs]) for model, specs in plan.items()]

    def only_methods(self, labels: list[str]) -> ExperimentConfig:
        """This grid with only the methods labelled `labels` (`verirag eval --methods`): a slow judge's
        column can be left for a later run of the whole config, which resumes from these records. An
        application is kept only if its method is named too."""
        known = [s.label for s in self.methods] + [s.label for s in self.application_methods.values()]
        unknown = [x for x in labels if x not in known]
        if unknown:
            raise InputError(
                f"--methods names {', '.join(map(repr, unknown))}, not a method of config {self.name!r} "
                f"(its methods: {', '.join(known)})"
            )
        apps = {k: s for k, s in self.application_methods.items() if s.label in labels}
        return replace(
            self,
            methods=[s for s in self.methods if s.label in labels],
            application_methods=apps,
            applications={k: v for k, v in self.applications.items() if k in apps},
        )

    def run_json(self) -> dict[str, Any]:
        """DIR/run.json: what the report needs without the YAML (methods as configured)."""
        return {
            "name": self.name,
            "threshold": dict(self.threshold),
            "applications": copy.deepcopy(self.applications),
            "bootstrap": dict(self.bootstrap),
            "datasets": [d.model_dump() for d in self.datasets],
            "models": list(self.models),
            "methods": [s.to_dict() for s in self.methods],
            "application_methods": {k: s.to_dict() for k, s in self.application_methods.items()},
            "match": self.match,
            "max_tokens": self.max_tokens,
            "prune": self.prune.to_json(),
            **({"stages": [s.model_dump() for s in self.stages]} if self.stages else {}),
        }


# =========================================================================== entry points
def parse_config(raw: Any, *, source_name: str = "config") -> ExperimentConfig:
    """Validate a config mapping; raise one InputError listing every problem with its place."""
    m = validate_config(_Config, raw, source_name, context={})
    apps: dict[str, dict[str, Any]] = {}
    app_methods: dict[str, MethodSpec] = {}
    if (fb := m.applications.no_rag_fallback) is not None:
        apps["no_rag_fallback"] = {
            "models": list(fb.models or m.models),
            "folds": fb.folds,
            "fallback_method": fb.fallback_method.label,
        }
        app_methods["no_rag_fallback"] = fb.fallback_method
    if (esc := m.applications.escalate) is not None:
        apps["escalate"] = {
            "small": esc.small or m.models[0],
            "large": esc.large,
            "large_method": esc.large_method.label,
            "rate": esc.rate,
        }
        app_methods["escalate"] = esc.large_method
    config = ExperimentConfig(
        name=m.name or Path(source_name).stem,
        datasets=list(m.datasets),
        models=list(m.models),
        methods=list(m.methods),
        judge_model=m.judge_model,
        max_tokens=m.generation.max_tokens,
        n_ctx=m.generation.n_ctx,
        match=m.ground_truth.match,
        match_llm=m.ground_truth.llm,
        threshold=m.threshold.model_dump(exclude_none=True),
        applications=apps,
        bootstrap=m.bootstrap.model_dump(),
        concurrency=m.concurrency,
        application_methods=app_methods,
        prune=m.prune,
        stages=tuple(m.stages),
    )
    for model, specs in config.runs():  # every unit resolves as every door's settings do, before anything runs
        for spec in specs:
            config.answer_spec(model, spec)
    return config


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a YAML config; every way the file can be wrong is an InputError."""
    return parse_config(read_yaml(path), source_name=str(Path(path)))
