"""The stacked verifier's feature table: one row per generated answer of an eval run.

An eval run (`verirag eval`) writes one record per (dataset, model, method, example). Composed
methods over one generator share its answer (one generation per example, however many predictors
judge it), and each record names that generation (`details["generation"]`, its trace key). So the
rows are the distinct (dataset, model, example, generation) answers, and the columns:

- one per predictor that scored the answers (`vanilla+self_check` gives `self_check`,
  `vanilla+verifier(verifier=DIR)` gives `verifier`): the record's `raw_score` (the predictor's
  score before the answer rules: what the `stacked` predictor combines at answer time, the rules
  applying after it), 0 where the predictor failed (the records' own convention: a failure stays
  in every denominator with score 0);
  `trivial` (a constant) gives none;
- the answer's signals each record carries (`details["signals"]`, `verirag.awf.signals`): token
  logprob min / mean / sum, K-Precision, retrieval top / mean.

By default the features are every predictor column and every signal some answer has; a signal no
answer has is reported in `absent` with the reason the records give. A selected feature that some
answers lack is an InputError naming it, how many lack it, the first such answer and why, unless
`impute` (the stack then fills it with the training mean, and counts it).

The label is the record's `faithful` (the AwF V: correct and answerable; default) or `correct`;
`answerable` goes with it for the AwF PR-AUC; `group` is "<dataset>:<question group>" (validation
holds out whole groups). Records of unified methods (intrinsic, ...) judge answers of their own and
are listed in `ignored`, not read.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verirag.awf.signals import SIGNALS
from verirag.awf.spec import MethodSpec
from verirag.errors import InputError

LABELS = ("faithful", "correct")
CONSTANT_PREDICTORS = ("trivial",)


@dataclass
class Answer:
    """One row: the generated answer and what is known of it."""

    key: str
    dataset: str
    example_id: str
    group: str
    text: str
    label: int
    answerable: int
    values: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # signal -> why the record has no value
    methods: dict[str, str] = field(default_factory=dict)  # predictor column -> method label
    errors: dict[str, str] = field(default_factory=dict)  # predictor column -> its error (scored 0)


@dataclass
class StackTable:
    features: list[str]
    X: np.ndarray  # (answers, features), NaN where a value is missing (imputed later)
    y: np.ndarray  # the label
    answerable: np.ndarray
    groups: list[str]
    keys: list[str]
    label: str
    sources: dict[str, dict[str, Any]]  # predictor column -> {predictor, options, method, digest}
    model: str  # the run's model (spec) and its fingerprint
    model_fingerprint: str
    absent: dict[str, str] = field(default_factory=dict)  # a signal no answer has -> why
    missing: dict[str, int] = field(default_factory=dict)  # feature -> answers without it (imputed)
    errors: dict[str, int] = field(default_factory=dict)  # predictor column -> answers it failed on
    ignored: dict[str, int] = field(default_factory=dict)  # method label -> records not read

    @property
    def data_fingerprint(self) -> str:
        """What the stack was fitted on: the answers' keys and labels."""
        blob = json.dumps([[k, int(v)] for k, v in zip(self.keys, self.y)], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def column(self, feature: str) -> np.ndarray:
        return self.X[:, self.features.index(feature)]


def _predictor_options(spec: dict[str, Any]) -> dict[str, Any]:
    """The options a record's method gave its predictor (as the config gave them)."""
    try:
        return MethodSpec(spec["name"], spec.get("options") or {}).routed().get("predictor", {})
    except (KeyError, InputError):
        return {}


def answer_key(dataset: str, model: Any, example_id: Any, details: Mapping[str, Any]) -> str:
    """ "dataset|model|example_id|generation": the generated answer a record judged (every record
    over one generation shares it; runs before answers named their generation use the generator)."""
    gen = details.get("generation") or f"generator:{details.get('generator')}"
    return f"{dataset}|{model}|{example_id}|{gen}"


def _raw(record: Any) -> float:
    """A record's score before the answer rules (`ResultRecord.raw_score`)."""
    raw = getattr(record, "raw_score", None)
    return float(record.score if raw is None else raw)


def _answers(records: Sequence[Any], label: str) -> tuple[dict[str, Answer], dict[str, dict], dict[str, int], set]:
    answers: dict[str, Answer] = {}
    sources: dict[str, dict[str, Any]] = {}
    ignored: Counter = Counter()
    fingerprints: set[tuple[str, str]] = set()
    for r in records:
        d = r.details or {}
        if "generator" not in d or "predictor" not in d:
            ignored[r.method] += 1
            continue
        key = answer_key(r.dataset, r.model, r.example_id, d)
        a = answers.get(key)
        if a is None:
            a = answers[key] = Answer(
                key=key,
                dataset=r.dataset,
                example_id=r.example_id,
                group=f"{r.dataset}:{r.group or r.example_id}",
                text=r.answer or "",
                label=int(getattr(r, label)),
                answerable=int(r.answerable),
            )
        elif (r.answer or "") != a.text:
            raise InputError(
                f"records of one generation disagree on the answer ({key}: {r.method} says "
                f"{r.answer!r}, another method {a.text!r}): the run mixes set-ups"
            )
        fingerprints.add((r.model, d.get("model_fingerprint") or ""))
        signals = d.get("signals") or {}
        for name, v in (signals.get("values") or {}).items():
            a.values.setdefault(name, float(v))
        for name, why in (signals.get("missing") or {}).items():
            a.missing.setdefault(name, str(why))
        pred = d["predictor"]
        if pred in CONSTANT_PREDICTORS:
            continue
        if pred in SIGNALS:  # k_precision: the same quantity as the signal (which older records lack)
            if not r.error:
                a.values.setdefault(pred, _raw(r))
            continue
        if pred in a.methods and a.methods[pred] != r.method:
            raise InputError(
                f"two methods score the same answers with predictor {pred} ({a.methods[pred]} and "
                f"{r.method}): keep one with --methods"
            )
        a.methods[pred] = r.method
        a.values[pred] = 0.0 if r.error else _raw(r)
        if r.error:
            a.errors[pred] = r.error
        source = sources.setdefault(
            pred,
            {
                "predictor": pred,
                "options": _predictor_options(r.method_spec or {}),
                "method": r.method,
                "digest": d.get("predictor_digest", ""),
            },
        )
        if d.get("predictor_digest", "") != source["digest"]:
            raise InputError(
                f"the {pred} scores come from two different predictors (identities {source['digest']!r} "
                f"and {d.get('predictor_digest', '')!r}, e.g. a verifier retrained between runs): "
                "stack the records of one set-up"
            )
    return answers, sources, dict(ignored), fingerprints


def _records_of(records: Sequence[Any], methods: Sequence[str] | None, model: str | None) -> tuple[list[Any], str]:
    """The records of `methods` (all when not given) and of one model: (records, that model)."""
    records = list(records)
    if methods:
        known = sorted({r.method for r in records})
        unknown = [m for m in methods if m not in known]
        if unknown:
            raise InputError(f"the run has no method {', '.join(unknown)}; it has: {', '.join(known) or 'none'}")
        records = [r for r in records if r.method in methods]
    models = sorted({r.model for r in records})
    if model is not None:
        if model not in models:
            raise InputError(f"the run has no records of model {model!r}; it has: {', '.join(models) or 'none'}")
        return [r for r in records if r.model == model], model
    if len(models) > 1:
        raise InputError(
            f"the run holds answers of several models ({', '.join(models)}): a stack combines one "
            "model's signals; choose it with --model"
        )
    return records, models[0] if models else ""


def _chosen_features(features: Sequence[str] | None, available: list[str], absent: dict[str, str]) -> list[str]:
    """The requested features (every available one when none is named), each checked present."""
    if features:
        unknown = [f for f in features if f not in available]
        if unknown:
            why = "; ".join(f"{f}: {absent[f]}" for f in unknown if f in absent)
            raise InputError(
                f"feature(s) {', '.join(unknown)} are not in this run"
                + (f" ({why})" if why else "")
                + f"; it has: {', '.join(available)}"
            )
        chosen = list(dict.fromkeys(features))
    else:
        chosen = available
    if not chosen:
        raise InputError("the run's answers carry no feature to stack")
    return chosen


def _refuse_missing(missing: dict[str, int], rows: list[Answer], sources: dict[str, dict]) -> None:
    """An InputError naming the first missing feature, how many answers lack it and why."""
    f = next(iter(missing))
    first = next(a for a in rows if f not in a.values)
    why = first.missing.get(f) or (
        f"no record of a method with predictor {f} on this answer" if f in sources else "not recorded"
    )
    also = (
        "; also missing: " + ", ".join(f"{g} ({n})" for g, n in missing.items() if g != f) if len(missing) > 1 else ""
    )
    raise InputError(
        f"feature {f} is missing for {missing[f]} of {len(rows)} answers (first: {first.key}: {why})"
        + also
        + ". Leave it out with --features, or pass --impute to fill missing values with the "
        "training mean (counted in the report)"
    )


def feature_table(
    records: Sequence[Any],
    *,
    methods: Sequence[str] | None = None,
    features: Sequence[str] | None = None,
    label: str = "faithful",
    impute: bool = False,
    model: str | None = None,
) -> StackTable:
    """The table of the run's `records` (its ResultRecords), of the `methods` labels only when
    given, of one model (`model`, needed when the run has several). See the module docstring."""
    if label not in LABELS:
        raise InputError(f"the label must be one of {', '.join(LABELS)}, got {label!r}")
    records, model = _records_of(records, methods, model)
    answers, sources, ignored, fingerprints = _answers(records, label)
    if not answers:
        raise InputError(
            "the run holds no answers of a GENERATOR+PREDICTOR method (e.g. vanilla+self_check, "
            "vanilla+verifier(verifier=DIR)): nothing to stack"
            + (f"; records not read: {', '.join(ignored)}" if ignored else "")
        )
    rows = list(answers.values())
    present_signals = [s for s in SIGNALS if any(s in a.values for a in rows)]
    available = sorted(sources) + present_signals
    absent = {
        s: Counter(
            a.missing.get(s, "not recorded (a run made before answers carried signals)") for a in rows
        ).most_common(1)[0][0]
        for s in SIGNALS
        if s not in present_signals
    }
    chosen = _chosen_features(features, available, absent)
    X = np.array([[a.values.get(f, math.nan) for f in chosen] for a in rows], dtype=np.float64)
    missing = {f: int(np.isnan(X[:, j]).sum()) for j, f in enumerate(chosen) if np.isnan(X[:, j]).any()}
    if missing and not impute:
        _refuse_missing(missing, rows, sources)
    fps = {fp for _, fp in fingerprints}
    return StackTable(
        features=chosen,
        X=X,
        y=np.array([a.label for a in rows], dtype=np.int64),
        answerable=np.array([a.answerable for a in rows], dtype=np.int64),
        groups=[a.group for a in rows],
        keys=[a.key for a in rows],
        label=label,
        sources={f: sources[f] for f in chosen if f in sources},
        model=model,
        model_fingerprint=fps.pop() if len(fps) == 1 else "",
        absent=absent,
        missing=missing,
        errors={f: sum(f in a.errors for a in rows) for f in chosen if any(f in a.errors for a in rows)},
        ignored=ignored,
    )
