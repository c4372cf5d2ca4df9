"""The experiment config (YAML): what to run, validated before anything loads.

    name: awf-small
    datasets:                       # names of verirag.datasets loaders
      - {name: nq, n: 200, seed: 0, options: {k: 5, retriever: bm25}}
      - {name: hotpotqa, method_options: {family: multi_hop}}   # defaults for the methods that take them
      - squad2                      # a bare name: every example, seed 0
    models: [qwen2.5-0.5b]          # load_llm specs: preset, .gguf path, openai:M, http URL#M, hf:X
    methods:                        # a name, or a mapping {name, label?, OPTION: VALUE, ...}
      - vanilla
      - vanilla+nli
      - instructrag+pre_answering
      - {name: instructrag, label: instructrag-mh, family: multi_hop}
      - intrinsic
    judge_model: null               # LLM for nli / llm_judge (default: the answering model)
    generation: {max_tokens: 128, n_ctx: 4096}    # max_tokens: for methods that do not set their own
    ground_truth: {match: recall_or_substring}    # or recall, substring, em, llm (+ llm: SPEC)
    threshold: {value: 0.5}         # or {precision: 0.9, delta: 0.1} or {action_rate: 0.2}
    applications:
      no_rag_fallback: {models: [qwen2.5-0.5b], folds: 5}
      escalate: {small: qwen2.5-0.5b, large: qwen2.5-1.5b, large_method: vanilla, rate: 0.2}
    bootstrap: {n_resamples: 1000, confidence: 0.95, seed: 0}
    concurrency: 1                  # examples in flight per HTTP model (llama.cpp runs one at a time)

One schema (pydantic models, below) checks every field; every mistake is reported at once, with its
path in the file ("datasets[1].n: must be an integer >= 1, got 0"), as one InputError. A method is a
`verirag.awf.spec.MethodSpec` (name + options + label); `ExperimentConfig.method_specs(dataset)` gives
the methods with that dataset's `method_options` and the generation `max_tokens` filled in where the
method takes them and does not set them itself.
"""
from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, ValidationInfo
from pydantic import field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from verirag.awf.spec import MethodSpec, accepted_options, split_name
from verirag.errors import InputError

MATCH_RULES = ("recall_or_substring", "recall", "substring", "em", "llm")
TOP_KEYS = {"name", "datasets", "models", "methods", "judge_model", "generation", "ground_truth",
            "threshold", "applications", "bootstrap", "concurrency"}
NO_RAG_METHOD = "no_context"
THRESHOLD_METHODS = ("bonferroni", "fixed_sequence")


# =========================================================================== the parsed config
@dataclass
class DatasetSpec:
    name: str
    n: int | None = None
    seed: int = 0
    path: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    method_options: dict[str, Any] = field(default_factory=dict)  # defaults for the methods that take them


@dataclass
class ExperimentConfig:
    name: str
    datasets: list[DatasetSpec]
    models: list[str]
    methods: list[MethodSpec]  # as configured; method_specs(dataset) adds the defaults
    judge_model: str | None = None
    max_tokens: int = 128
    n_ctx: int = 4096
    match: str = "recall_or_substring"
    match_llm: str | None = None
    threshold: dict[str, float] = field(default_factory=lambda: {"value": 0.5})
    # plain JSON: fallback_method / large_method are method labels
    applications: dict[str, dict[str, Any]] = field(default_factory=dict)
    bootstrap: dict[str, Any] = field(default_factory=lambda: {"n_resamples": 1000, "confidence": 0.95, "seed": 0})
    concurrency: int = 1
    source: dict[str, Any] = field(default_factory=dict)  # the YAML as read
    # the MethodSpecs behind applications' fallback_method ("no_rag_fallback") and large_method ("escalate")
    application_methods: dict[str, MethodSpec] = field(default_factory=dict)

    def dataset(self, name: str) -> DatasetSpec:
        for d in self.datasets:
            if d.name == name:
                return d
        raise InputError(f"dataset {name!r} is not in config {self.name!r} "
                         f"(it has: {', '.join(d.name for d in self.datasets)})")

    def method_defaults(self, dataset: str | None = None) -> dict[str, Any]:
        """The option defaults for `dataset`'s methods: generation max_tokens, then the dataset's
        method_options over it. A method keeps only those it takes; its own options win."""
        out: dict[str, Any] = {"max_tokens": self.max_tokens}
        if dataset is not None:
            out.update(self.dataset(dataset).method_options)
        return out

    def method_specs(self, dataset: str | None = None) -> list[MethodSpec]:
        """The configured methods with complete options for `dataset` (None: generation defaults only)."""
        defaults = self.method_defaults(dataset)
        return [MethodSpec.parse(m).with_defaults(defaults) for m in self.methods]

    def application_method(self, app: str) -> MethodSpec | None:
        """The MethodSpec the application `app` ("no_rag_fallback", "escalate") adds, or None."""
        if app in self.application_methods:
            return self.application_methods[app]
        spec = self.applications.get(app)
        key = {"no_rag_fallback": "fallback_method", "escalate": "large_method"}.get(app)
        if not spec or key is None:
            return None
        entry = spec.get(key) or (NO_RAG_METHOD if app == "no_rag_fallback" else "vanilla")
        for m in self.methods:  # a label of a configured method means that method
            if MethodSpec.parse(m).label == entry:
                return MethodSpec.parse(m)
        return MethodSpec.parse(entry)

    def runs(self, dataset: str | None = None) -> list[tuple[str, list[MethodSpec]]]:
        """(model, methods) in the order they run: the configured grid, then what the applications
        need (the no-RAG answers of each fallback model, the larger model's answers); a method whose
        label a model already runs is not added twice. With `dataset`, the specs carry their
        complete options for it (as method_specs); without, their options as configured (apply
        `method_defaults(dataset)` with `spec.with_defaults` before building them)."""
        plan: dict[str, list[MethodSpec]] = {m: [MethodSpec.parse(s) for s in self.methods] for m in self.models}

        def add(model: str, spec: MethodSpec | None) -> None:
            if spec is None:
                return
            specs = plan.setdefault(model, [])
            if spec.label not in {s.label for s in specs}:
                specs.append(spec)

        fb = self.applications.get("no_rag_fallback")
        if fb:
            for m in fb.get("models") or self.models:
                add(m, self.application_method("no_rag_fallback"))
        esc = self.applications.get("escalate")
        if esc:
            add(esc["large"], self.application_method("escalate"))
        if dataset is None:
            return list(plan.items())
        defaults = self.method_defaults(dataset)
        return [(model, [s.with_defaults(defaults) for s in specs]) for model, specs in plan.items()]

    def run_json(self) -> dict[str, Any]:
        """What the report needs to rebuild every output without the YAML (DIR/run.json). Methods
        as configured (name, label, options); the defaults they get are `max_tokens` and each
        dataset's `method_options`."""
        return {"name": self.name, "threshold": dict(self.threshold),
                "applications": copy.deepcopy(self.applications), "bootstrap": dict(self.bootstrap),
                "datasets": [copy.deepcopy(d.__dict__) for d in self.datasets], "models": list(self.models),
                "methods": [MethodSpec.parse(s).to_dict() for s in self.methods],
                "application_methods": {k: s.to_dict()
                                        for k in ("no_rag_fallback", "escalate")
                                        if (s := self.application_method(k)) is not None},
                "match": self.match, "max_tokens": self.max_tokens}


# =========================================================================== errors with a place
def _problem(loc: tuple, msg: str, value: Any = None) -> InitErrorDetails:
    # A message built here is final: with no context, pydantic does not format the template.
    return InitErrorDetails(type=PydanticCustomError("verirag", msg), loc=tuple(loc), input=value)


def _fail(problems: list[InitErrorDetails], title: str = "config") -> None:
    if problems:
        raise ValidationError.from_exception_data(title, problems)


def _got(v: Any) -> str:
    """A value as an error message shows it: its YAML kind and (short) repr."""
    return "null" if v is None else f"{_kind(v)} {_show(v)}"


def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _kind(v: Any) -> str:
    """What a YAML value is, in YAML words."""
    if v is None:
        return "null"
    for t, word in ((bool, "true/false"), (int, "an integer"), (float, "a number"), (str, "text"),
                    (list, "a list"), (dict, "a mapping")):
        if isinstance(v, t):
            return word
    return type(v).__name__


_MESSAGES = {  # pydantic's own error types, in the words of this file
    "missing": "is required", "model_type": "must be a mapping (key: value)",
    "model_attributes_type": "must be a mapping (key: value)", "dict_type": "must be a mapping (key: value)",
    "list_type": "must be a list", "string_type": "must be text", "bool_type": "must be true or false",
    "int_type": "must be an integer", "int_parsing": "must be an integer", "int_from_float": "must be an integer",
    "float_type": "must be a number", "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
}


def _message(err: Mapping[str, Any]) -> str:
    if err["type"] == "verirag":
        return err["msg"]
    if err["type"] == "missing":
        return "is required"
    base = _MESSAGES.get(err["type"], err["msg"])
    return f"{base}, got {_got(err.get('input'))}"


def _final(e: ValidationError) -> list[InitErrorDetails]:
    """e's errors with their messages in our words, ready to be raised again."""
    return [_problem(err["loc"], _message(err), err.get("input")) for err in e.errors()]


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


# =========================================================================== value checks
def _integer(minimum: int):
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise PydanticCustomError("verirag", f"must be an integer >= {minimum}, got {_show(v)}")
        return v
    return PlainValidator(check)


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise PydanticCustomError("verirag", f"must be a finite number, got {_got(v)}")
    return v


def _between(low: float, high: float, *, closed: bool = False):
    brackets = "[]" if closed else "()"

    def check(v: Any) -> float:
        ok = (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
              and (low <= v <= high if closed else low < v < high))
        if not ok:
            raise PydanticCustomError("verirag", f"must be a number in {brackets[0]}{low:g}, {high:g}{brackets[1]}, "
                                                 f"got {_got(v)}")
        return float(v)
    return PlainValidator(check)


def _text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise PydanticCustomError("verirag", f"must be non-empty text, got {_got(v)}")
    return v.strip()


def _plain_problem(v: Any, depth: int = 0) -> str | None:
    """Why v is not plain data (text, numbers, true/false, null, lists, mappings with text keys)."""
    if depth > 32:
        return "is nested too deeply (or refers to itself)"
    if v is None or isinstance(v, (str, bool, int)):
        return None
    if isinstance(v, float):
        return None if math.isfinite(v) else f"must be a finite number, got {_show(v)}"
    if isinstance(v, list):
        return next((p for x in v if (p := _plain_problem(x, depth + 1))), None)
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            return "mapping keys must be text"
        return next((p for x in v.values() if (p := _plain_problem(x, depth + 1))), None)
    return f"must be text, a number, true/false, a list or a mapping, got {_got(v)}"


def _options(v: Any) -> dict[str, Any]:
    """A mapping of option names to plain values; null is no options."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise PydanticCustomError("verirag", f"must be a mapping of option: value, got {_got(v)}")
    problems = [_problem((str(k),), "option names must be text", val) for k, val in v.items()
                if not isinstance(k, str)]
    problems += [_problem((k,), p, val) for k, val in v.items()
                 if isinstance(k, str) and (p := _plain_problem(val))]
    _fail(problems)
    return dict(v)


def _names(what: str):
    """A non-empty list of distinct non-empty strings; a single string is a list of one."""
    def check(v: Any) -> list[str]:
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not v:
            raise PydanticCustomError("verirag", f"must be a non-empty list of {what}, got {_got(v)}")
        problems, seen = [], {}
        for i, x in enumerate(v):
            if not isinstance(x, str) or not x.strip():
                problems.append(_problem((i,), f"must be non-empty text, got {_got(x)}", x))
            elif x.strip() in seen:
                problems.append(_problem((i,), f"{x.strip()!r} appears twice (also at [{seen[x.strip()]}])", x))
            else:
                seen[x.strip()] = i
        _fail(problems)
        return [x.strip() for x in v]
    return PlainValidator(check)


# --------------------------------------------------------------------------- methods
def _option_defaults(name: str) -> dict[str, Any]:
    """Option -> constructor default, for the type check of option values (mirrors accepted_options)."""
    from verirag.awf import registry
    unified, gen, pred = split_name(name)
    parts = [registry.get("method", unified)] if unified else [registry.get("predictor", pred),
                                                                  registry.get("generator", gen)]
    out: dict[str, Any] = {}
    for cls in parts:
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
                out[p.name] = p.default
    return out


def _type_problem(value: Any, default: Any) -> str | None:
    """The option's value must have the type of the constructor's default (when it has one)."""
    if isinstance(default, bool):
        ok, want = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, want = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif isinstance(default, str):
        ok, want = isinstance(value, str), "text"
    else:
        return None
    return None if ok else f"must be {want}, got {_got(value)}"


def _take(accepted: dict[str, Any], name: str) -> None:
    defaults = _option_defaults(name)
    for k in accepted_options(name):
        accepted.setdefault(k, defaults.get(k))


def _name_problem(name: str) -> str | None:
    """Why build_method would not know `name`, in one short sentence."""
    from verirag.awf import registry
    unified, gen, pred = split_name(name)
    if unified:
        return None
    if gen not in registry.names("generator"):
        return (f"unknown method {name!r} (`verirag methods` lists them: generators "
                f"{', '.join(registry.names('generator'))} alone or as GENERATOR+PREDICTOR, and unified methods "
                f"{', '.join(registry.names('method'))})")
    if pred not in registry.names("predictor"):
        return f"unknown predictor {pred!r} in {name!r} (predictors: {', '.join(registry.names('predictor'))})"
    return None


def method_entry(entry: Any) -> MethodSpec:
    """A config's method entry as a MethodSpec: "vanilla+nli" or {name, label?, OPTION: VALUE...}.
    Raises ValidationError whose places are relative to the entry (e.g. ("famly",))."""
    if isinstance(entry, MethodSpec):
        return entry
    if isinstance(entry, str):
        name, label, opts, name_at = entry.strip(), None, {}, ()
        if not name:
            _fail([_problem((), "must be a method name, got empty text", entry)])
    elif isinstance(entry, dict):
        problems = [_problem((str(k),), "option names must be text", v) for k, v in entry.items()
                    if not isinstance(k, str)]
        name, label, name_at = entry.get("name"), entry.get("label"), ("name",)
        if "name" not in entry:
            problems.append(_problem(("name",), "is required: a method entry is {name: METHOD, OPTION: VALUE, ...}"))
        elif not isinstance(name, str) or not name.strip():
            problems.append(_problem(("name",), f"must be a method name, got {_got(name)}", name))
        if label is not None and (not isinstance(label, str) or not label.strip()):
            problems.append(_problem(("label",), f"must be non-empty text, got {_got(label)}", label))
        opts = {k: v for k, v in entry.items() if isinstance(k, str) and k not in ("name", "label")}
        problems += [_problem((k,), p, v) for k, v in opts.items() if (p := _plain_problem(v))]
        _fail(problems)
        name = name.strip()
    else:
        _fail([_problem((), "must be a method name or a mapping {name: METHOD, OPTION: VALUE, ...}, "
                            f"got {_got(entry)}", entry)])
    why = _name_problem(name)
    if why:
        _fail([_problem(name_at, why, name)])
    try:
        accepted = accepted_options(name)
        defaults = _option_defaults(name)
    except (InputError, KeyError) as e:
        _fail([_problem(name_at, str(e).strip('"'), name)])
    problems = []
    for k, v in opts.items():
        if k not in accepted:
            problems.append(_problem((k,), f"method {name!r} takes no option {k!r} (it takes: "
                                           f"{', '.join(sorted(accepted)) or 'none'})", v))
        elif (p := _type_problem(v, defaults.get(k))):
            problems.append(_problem((k,), p, v))
    _fail(problems)
    try:
        return MethodSpec(name, opts, (label or "").strip())
    except InputError as e:
        _fail([_problem((), str(e), entry)])
    raise AssertionError("unreachable")


# =========================================================================== the schema
class _Section(BaseModel):
    """A mapping with known keys: unknown keys are reported with the keys that exist; keys in
    `null_is_default` may be null (meaning: the default)."""

    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False, frozen=True)
    null_is_default: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="wrap")
    @classmethod
    def _known_keys(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        problems = []
        if isinstance(data, dict):
            allowed = list(cls.model_fields)
            for k, v in data.items():
                if k not in allowed:
                    problems.append(_problem((str(k),), f"unknown key (expected one of: {', '.join(sorted(allowed))})", v))
            data = {k: v for k, v in data.items()
                    if k in allowed and not (v is None and k in cls.null_is_default)}
        elif not isinstance(data, cls):
            _fail([_problem((), f"must be a mapping (key: value), got {_got(data)}", data)])
        try:
            out = handler(data)
        except ValidationError as e:
            _fail(_final(e) + problems)
        _fail(problems)
        return out


def _context(info: ValidationInfo) -> dict[str, Any]:
    return info.context if isinstance(info.context, dict) else {}


class _Dataset(_Section):
    null_is_default: ClassVar[frozenset[str]] = frozenset({"seed", "options", "method_options"})

    name: str
    n: Annotated[int, _integer(1)] | None = None
    seed: Annotated[int, _integer(0)] = 0
    path: Annotated[str, PlainValidator(_text)] | None = None
    options: Annotated[dict[str, Any], PlainValidator(_options)] = Field(default_factory=dict)
    method_options: Annotated[dict[str, Any], PlainValidator(_options)] = Field(default_factory=dict)

    @field_validator("name", mode="plain")
    @classmethod
    def _known(cls, v: Any, info: ValidationInfo) -> str:
        from verirag.datasets import dataset_names
        v = _text(v)
        known = dataset_names()
        if v not in known:
            raise PydanticCustomError("verirag", f"unknown dataset {v!r} (known: {', '.join(sorted(known))})")
        seen = _context(info).setdefault("datasets_seen", set())
        if v in seen:
            raise PydanticCustomError("verirag", f"dataset {v!r} appears twice (records are keyed by dataset name)")
        seen.add(v)
        return v

    @field_validator("options", mode="after")
    @classmethod
    def _loader_options(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        from verirag.datasets import dataset_info
        name = info.data.get("name")
        if name is None:
            return v
        allowed = set(dataset_info(name).options())
        if "references_llm" in allowed:  # the config names the model; the runner loads it
            allowed = (allowed - {"references_llm"}) | {"references_model"}
        _fail([_problem((k,), f"dataset {name!r} takes no option {k!r} (it takes: "
                              f"{', '.join(sorted(allowed)) or 'none'})", val)
               for k, val in v.items() if k not in allowed])
        return v

    @field_validator("method_options", mode="after")
    @classmethod
    def _taken(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        accepted = _context(info).get("accepted_options")  # option -> a constructor default
        if accepted is None:  # the methods could not be read; their errors say why
            return v
        problems = []
        for k, val in v.items():
            if k not in accepted:
                problems.append(_problem((k,), f"no method in `methods` takes option {k!r} (options they take: "
                                               f"{', '.join(sorted(accepted)) or 'none'})", val))
            elif (p := _type_problem(val, accepted[k])):
                problems.append(_problem((k,), p, val))
        _fail(problems)
        return v


class _Generation(_Section):
    null_is_default: ClassVar[frozenset[str]] = frozenset({"max_tokens", "n_ctx"})

    max_tokens: Annotated[int, _integer(1)] = 128
    n_ctx: Annotated[int, _integer(256)] = 4096


class _GroundTruth(_Section):
    null_is_default: ClassVar[frozenset[str]] = frozenset({"match", "llm"})

    match: str = "recall_or_substring"
    llm: Annotated[str, PlainValidator(_text)] | None = None

    @field_validator("match", mode="plain")
    @classmethod
    def _rule(cls, v: Any) -> str:
        if v not in MATCH_RULES:
            raise PydanticCustomError("verirag", f"must be one of {', '.join(MATCH_RULES)}, got {_show(v)}")
        return v

    @model_validator(mode="after")
    def _judge(self) -> "_GroundTruth":
        if self.match == "llm" and not self.llm:
            _fail([_problem(("llm",), "match: llm needs the judge model spec in `llm`")])
        return self


class _Threshold(_Section):
    value: Annotated[float, PlainValidator(_number)] | None = None
    precision: Annotated[float, _between(0, 1)] | None = None
    action_rate: Annotated[float, _between(0, 1, closed=True)] | None = None
    delta: Annotated[float, _between(0, 1)] | None = None
    method: str | None = None

    @field_validator("method", mode="plain")
    @classmethod
    def _method(cls, v: Any) -> str | None:
        if v is not None and v not in THRESHOLD_METHODS:
            raise PydanticCustomError("verirag", f"must be one of {', '.join(THRESHOLD_METHODS)}, got {_show(v)}")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> "_Threshold":
        kinds = [k for k in ("value", "precision", "action_rate") if getattr(self, k) is not None]
        if len(kinds) != 1:
            _fail([_problem((), "give exactly one of value, precision, action_rate"
                                + (f" (got {', '.join(kinds)})" if kinds else ""))])
        from verirag.calibration import ThresholdTarget
        try:
            ThresholdTarget(**self.as_dict())
        except (ValueError, TypeError) as e:
            _fail([_problem((), str(e))])
        return self

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


def _application_method(v: Any, info: ValidationInfo, default: str) -> MethodSpec:
    """A method entry; a label of a configured method means that method."""
    if v is None:
        v = default
    by_label: dict[str, MethodSpec] = _context(info).get("methods_by_label", {})
    if isinstance(v, str) and v.strip() in by_label:
        return by_label[v.strip()]
    spec = method_entry(v)
    other = by_label.get(spec.label)
    if other is not None and other != spec:
        _fail([_problem(("label",) if isinstance(v, dict) else (),
                        f"label {spec.label!r} is already used by a method in `methods` with other options: "
                        "give this one its own `label`", v)])
    return spec


def _configured_models(v: list[str], info: ValidationInfo) -> None:
    models = _context(info).get("models")
    if models is not None:
        _fail([_problem((i,), f"{m!r} is not one of `models`", m)
               for i, m in enumerate(v) if m not in models])


class _Fallback(_Section):
    null_is_default: ClassVar[frozenset[str]] = frozenset({"folds", "fallback_method"})

    models: Annotated[list[str], _names("model specs")] | None = None
    folds: Annotated[int, _integer(2)] = 5
    fallback_method: Any = Field(default=None, validate_default=True)

    @field_validator("models", mode="after")
    @classmethod
    def _in_models(cls, v: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if v is not None:
            _configured_models(v, info)
        return v

    @field_validator("fallback_method", mode="plain")
    @classmethod
    def _spec(cls, v: Any, info: ValidationInfo) -> MethodSpec:
        return _application_method(v, info, NO_RAG_METHOD)


class _Escalate(_Section):
    null_is_default: ClassVar[frozenset[str]] = frozenset({"small", "large_method", "rate"})

    small: Annotated[str, PlainValidator(_text)] | None = None
    large: Annotated[str, PlainValidator(_text)]
    large_method: Any = Field(default=None, validate_default=True)
    rate: Annotated[float, _between(0, 1)] = 0.2

    @field_validator("small", mode="after")
    @classmethod
    def _in_models(cls, v: str | None, info: ValidationInfo) -> str | None:
        models = _context(info).get("models")
        if v is not None and models is not None and v not in models:
            raise PydanticCustomError("verirag", f"{v!r} is not one of `models`")
        return v

    @field_validator("large_method", mode="plain")
    @classmethod
    def _spec(cls, v: Any, info: ValidationInfo) -> MethodSpec:
        return _application_method(v, info, "vanilla")


class _Applications(_Section):
    no_rag_fallback: _Fallback | None = None
    escalate: _Escalate | None = None


class _Bootstrap(_Section):
    null_is_default: ClassVar[frozenset[str]] = frozenset({"n_resamples", "seed"})

    n_resamples: Annotated[int, _integer(1)] = 1000
    confidence: Annotated[float, _between(0, 1)] = 0.95
    seed: Annotated[int, _integer(0)] = 0


class _Config(_Section):
    # Fields are validated in this order: models and methods first, so that the fields that
    # refer to them (applications, datasets' method_options) can check against them.
    null_is_default: ClassVar[frozenset[str]] = frozenset(
        {"name", "judge_model", "generation", "ground_truth", "threshold", "applications", "bootstrap",
         "concurrency"})

    name: str | None = None
    models: Annotated[list[str], _names("model specs")]
    methods: list[Any]  # -> list[MethodSpec]
    datasets: list[_Dataset]
    judge_model: Annotated[str, PlainValidator(_text)] | None = None
    generation: _Generation = Field(default_factory=_Generation)
    ground_truth: _GroundTruth = Field(default_factory=_GroundTruth)
    threshold: _Threshold = Field(default_factory=lambda: _Threshold(value=0.5))
    applications: _Applications = Field(default_factory=_Applications)
    bootstrap: _Bootstrap = Field(default_factory=_Bootstrap)
    concurrency: Annotated[int, _integer(1)] = 1

    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False, frozen=True,
                              arbitrary_types_allowed=True)

    @field_validator("name", mode="plain")
    @classmethod
    def _name(cls, v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise PydanticCustomError("verirag", f"must be text, got {_got(v)}")
        return str(v).strip() or None

    @field_validator("models", mode="before")
    @classmethod
    def _remember_models(cls, v: Any, info: ValidationInfo) -> Any:
        # What `models` names, even if it has other problems (duplicates), for the fields that refer to it.
        names = [v] if isinstance(v, str) else v if isinstance(v, list) else []
        _context(info)["models"] = [x.strip() for x in names if isinstance(x, str)]
        return v

    @field_validator("methods", mode="plain")
    @classmethod
    def _methods(cls, v: Any, info: ValidationInfo) -> list[MethodSpec]:
        if isinstance(v, (str, dict)):
            v = [v]
        if not isinstance(v, list) or not v:
            raise PydanticCustomError("verirag", "must be a non-empty list of method names or "
                                                 f"{{name: METHOD, OPTION: VALUE}} mappings, got {_got(v)}")
        problems: list[InitErrorDetails] = []
        specs: dict[int, MethodSpec] = {}
        accepted: dict[str, Any] | None = {}  # option -> its constructor default
        for i, entry in enumerate(v):
            try:
                specs[i] = method_entry(entry)
            except ValidationError as e:
                problems += [_problem((i, *err["loc"]), _message(err), err.get("input")) for err in e.errors()]
                name = entry.get("name") if isinstance(entry, dict) else entry
                if accepted is not None and isinstance(name, str) and not _name_problem(name.strip() or "?"):
                    _take(accepted, name.strip())
                else:
                    accepted = None  # cannot tell which options the methods take
                continue
            if accepted is not None:
                _take(accepted, specs[i].name)
        by_label: dict[str, int] = {}
        for i, spec in specs.items():
            if spec.label in by_label:
                j = by_label[spec.label]
                same = "the same method twice" if spec == specs[j] else f"label {spec.label!r} twice"
                problems.append(_problem((i, "label") if isinstance(v[i], dict) else (i,),
                                         f"{same} (also methods[{j}]): entries of one method with different "
                                         "options need distinct labels, {name: ..., label: ..., OPTION: VALUE}",
                                         v[i]))
            else:
                by_label[spec.label] = i
        ctx = _context(info)
        ctx["accepted_options"] = accepted
        ctx["methods_by_label"] = {spec.label: spec for i, spec in specs.items() if by_label.get(spec.label) == i}
        _fail(problems)
        return [specs[i] for i in range(len(v))]

    @field_validator("datasets", mode="before")
    @classmethod
    def _named(cls, v: Any) -> Any:
        if isinstance(v, (str, dict)):
            v = [v]
        if not isinstance(v, list) or not v:
            raise PydanticCustomError("verirag", "must be a non-empty list of dataset names or "
                                                 f"{{name: ...}} mappings, got {_got(v)}")
        return [{"name": d} if isinstance(d, str) else d for d in v]

    @field_validator("threshold", mode="before")
    @classmethod
    def _number_is_value(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return {"value": v}
        return v


# =========================================================================== entry points
def _build(m: _Config, raw: dict[str, Any], source_name: str) -> ExperimentConfig:
    apps: dict[str, dict[str, Any]] = {}
    app_methods: dict[str, MethodSpec] = {}
    fb = m.applications.no_rag_fallback
    if fb is not None:
        apps["no_rag_fallback"] = {"models": list(fb.models or m.models), "folds": fb.folds,
                                   "fallback_method": fb.fallback_method.label}
        app_methods["no_rag_fallback"] = fb.fallback_method
    esc = m.applications.escalate
    if esc is not None:
        apps["escalate"] = {"small": esc.small or m.models[0], "large": esc.large,
                            "large_method": esc.large_method.label, "rate": float(esc.rate)}
        app_methods["escalate"] = esc.large_method
    return ExperimentConfig(
        name=m.name or Path(source_name).stem,
        datasets=[DatasetSpec(name=d.name, n=d.n, seed=d.seed, path=d.path, options=copy.deepcopy(d.options),
                              method_options=copy.deepcopy(d.method_options)) for d in m.datasets],
        models=list(m.models), methods=list(m.methods), judge_model=m.judge_model,
        max_tokens=m.generation.max_tokens, n_ctx=m.generation.n_ctx,
        match=m.ground_truth.match, match_llm=m.ground_truth.llm,
        threshold=m.threshold.as_dict(), applications=apps,
        bootstrap={"n_resamples": m.bootstrap.n_resamples, "confidence": m.bootstrap.confidence,
                   "seed": m.bootstrap.seed},
        concurrency=m.concurrency, source=copy.deepcopy(raw), application_methods=app_methods)


def parse_config(raw: Any, *, source_name: str = "config") -> ExperimentConfig:
    """Validate a config mapping; raise one InputError listing every problem with its place."""
    if not isinstance(raw, dict):
        raise InputError(f"{source_name}: the top level must be a mapping of {', '.join(sorted(TOP_KEYS))}, "
                         f"got {_kind(raw)}")
    try:
        m = _Config.model_validate(raw, context={})
    except ValidationError as e:
        items = [f"{_where(err['loc'])}: {_message(err)}" for err in e.errors()]
        raise InputError(f"{source_name}: {len(items)} problem(s): " + "; ".join(items)) from None
    return _build(m, raw, source_name)


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a YAML config; every way the file can be wrong is an InputError."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p} is a directory; give the config's YAML file")
        if not p.is_file():
            raise InputError(f"config file not found: {p}")
        data = p.read_bytes()
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read config {p}: {getattr(e, 'strerror', None) or e}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise InputError(f"{p}: not UTF-8 text (byte {e.start}, line {line}: {data[e.start:e.start + 1]!r}); "
                         "save the config as UTF-8") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(f"{p}: not valid YAML: {e}") from None
    except (ValueError, OverflowError, TypeError) as e:  # e.g. a date 2024-13-45, an integer of 5000 digits
        raise InputError(f"{p}: not valid YAML: {e}") from None
    except RecursionError:
        raise InputError(f"{p}: not valid YAML: nested too deeply") from None
    if raw is None:
        raise InputError(f"{p} is empty; a config names at least datasets, models and methods")
    return parse_config(raw, source_name=str(p))
