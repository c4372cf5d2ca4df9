"""The experiment config (YAML): what to run, validated before anything loads.

    name: awf-small
    datasets:                       # names of verirag.datasets loaders
      - {name: nq, n: 200, seed: 0, options: {k: 5, retriever: bm25}}
      - hotpotqa                    # a bare name: every example, seed 0
    models: [qwen2.5-0.5b]          # load_llm specs: preset, .gguf path, openai:M, http URL#M, hf:X
    methods: [vanilla, vanilla+nli, instructrag+pre_answering, intrinsic]
    judge_model: null               # LLM for nli / llm_judge (default: the answering model)
    generation: {max_tokens: 128, n_ctx: 4096}
    ground_truth: {match: recall_or_substring}    # or recall, substring, em, llm (+ llm: SPEC)
    threshold: {value: 0.5}         # or {precision: 0.9, delta: 0.1} or {action_rate: 0.2}
    applications:
      no_rag_fallback: {models: [qwen2.5-0.5b], folds: 5}
      escalate: {small: qwen2.5-0.5b, large: qwen2.5-1.5b, large_method: vanilla, rate: 0.2}
    bootstrap: {n_resamples: 1000, confidence: 0.95, seed: 0}
    concurrency: 1                  # examples in flight per HTTP model (llama.cpp runs one at a time)

Every mistake is reported at once, with its path in the file ("datasets[1].n: must be a positive
integer"), as one InputError.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from verirag.errors import InputError

MATCH_RULES = ("recall_or_substring", "recall", "substring", "em", "llm")
TOP_KEYS = {"name", "datasets", "models", "methods", "judge_model", "generation", "ground_truth",
            "threshold", "applications", "bootstrap", "concurrency"}
NO_RAG_METHOD = "no_context"


@dataclass
class DatasetSpec:
    name: str
    n: int | None = None
    seed: int = 0
    path: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExperimentConfig:
    name: str
    datasets: list[DatasetSpec]
    models: list[str]
    methods: list[str]
    judge_model: str | None = None
    max_tokens: int = 128
    n_ctx: int = 4096
    match: str = "recall_or_substring"
    match_llm: str | None = None
    threshold: dict[str, float] = field(default_factory=lambda: {"value": 0.5})
    applications: dict[str, dict[str, Any]] = field(default_factory=dict)
    bootstrap: dict[str, Any] = field(default_factory=lambda: {"n_resamples": 1000, "confidence": 0.95, "seed": 0})
    concurrency: int = 1
    source: dict[str, Any] = field(default_factory=dict)  # the YAML as read

    def runs(self) -> list[tuple[str, list[str]]]:
        """(model, methods) in the order they run: the configured grid, then what the applications
        need (the no-RAG answers of each fallback model, the larger model's answers)."""
        plan: dict[str, list[str]] = {m: list(self.methods) for m in self.models}
        fb = self.applications.get("no_rag_fallback")
        if fb:
            for m in fb["models"]:
                plan.setdefault(m, [])
                if fb["fallback_method"] not in plan[m]:
                    plan[m].append(fb["fallback_method"])
        esc = self.applications.get("escalate")
        if esc:
            plan.setdefault(esc["large"], [])
            if esc["large_method"] not in plan[esc["large"]]:
                plan[esc["large"]].append(esc["large_method"])
        return list(plan.items())

    def run_json(self) -> dict[str, Any]:
        """What the report needs to rebuild every output without the YAML (DIR/run.json)."""
        return {"name": self.name, "threshold": dict(self.threshold),
                "applications": copy.deepcopy(self.applications), "bootstrap": dict(self.bootstrap),
                "datasets": [d.__dict__ for d in self.datasets], "models": list(self.models),
                "methods": list(self.methods), "match": self.match, "max_tokens": self.max_tokens}


class _Errors:
    def __init__(self):
        self.items: list[str] = []

    def add(self, where: str, msg: str) -> None:
        self.items.append(f"{where}: {msg}")


def _int(v, where, errs, *, minimum=1, default=None):
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        errs.add(where, f"must be an integer >= {minimum}, got {v!r}")
        return default
    return v


def _unknown(d: dict, allowed: set, where: str, errs: _Errors) -> None:
    for k in d:
        if k not in allowed:
            errs.add(f"{where}{k}", f"unknown key (expected one of: {', '.join(sorted(allowed))})")


def _datasets(raw, errs) -> list[DatasetSpec]:
    from verirag.datasets import dataset_names
    known = set(dataset_names())
    out = []
    if not isinstance(raw, list) or not raw:
        errs.add("datasets", "must be a non-empty list of dataset names or {name: ...} mappings")
        return out
    for i, d in enumerate(raw):
        where = f"datasets[{i}]"
        if isinstance(d, str):
            d = {"name": d}
        if not isinstance(d, dict) or "name" not in d:
            errs.add(where, "must be a name or a mapping with `name`")
            continue
        _unknown(d, {"name", "n", "seed", "path", "options"}, f"{where}.", errs)
        if d["name"] not in known:
            errs.add(f"{where}.name", f"unknown dataset {d['name']!r} (known: {', '.join(sorted(known))})")
        opts = d.get("options") or {}
        if not isinstance(opts, dict):
            errs.add(f"{where}.options", "must be a mapping")
            opts = {}
        out.append(DatasetSpec(name=str(d["name"]), n=_int(d.get("n"), f"{where}.n", errs),
                               seed=_int(d.get("seed"), f"{where}.seed", errs, minimum=0, default=0),
                               path=None if d.get("path") is None else str(d["path"]), options=dict(opts)))
    names = [f"{d.name}" for d in out]
    if len(set(names)) != len(names):
        errs.add("datasets", "a dataset appears twice; records are keyed by dataset name")
    return out


def _strings(raw, where, errs) -> list[str]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) and x.strip() for x in raw):
        errs.add(where, "must be a non-empty list of strings")
        return []
    if len(set(raw)) != len(raw):
        errs.add(where, "contains duplicates")
    return [x.strip() for x in raw]


def _methods(raw, errs) -> list[str]:
    from verirag.awf.compose import method_names
    out = _strings(raw, "methods", errs)
    known = set(method_names())
    for i, m in enumerate(out):
        if m not in known:
            errs.add(f"methods[{i}]", f"unknown method {m!r} (`verirag methods` lists them)")
    return out


def _threshold(raw, errs) -> dict[str, float]:
    if raw is None:
        return {"value": 0.5}
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        raw = {"value": raw}
    if not isinstance(raw, dict):
        errs.add("threshold", "must be a number or one of {value: T}, {precision: P, delta: D}, {action_rate: R}")
        return {"value": 0.5}
    _unknown(raw, {"value", "precision", "delta", "action_rate", "method"}, "threshold.", errs)
    kinds = [k for k in ("value", "precision", "action_rate") if k in raw]
    if len(kinds) != 1:
        errs.add("threshold", "give exactly one of value, precision, action_rate")
        return {"value": 0.5}
    try:
        from verirag.calibration import ThresholdTarget
        ThresholdTarget(**{k: raw[k] for k in ("value", "precision", "action_rate", "delta", "method") if k in raw})
    except (ValueError, TypeError) as e:
        errs.add("threshold", str(e))
    return dict(raw)


def _applications(raw, models: list[str], errs) -> dict[str, dict[str, Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        errs.add("applications", "must be a mapping")
        return {}
    _unknown(raw, {"no_rag_fallback", "escalate"}, "applications.", errs)
    out: dict[str, dict[str, Any]] = {}
    fb = raw.get("no_rag_fallback")
    if fb is not None:
        fb = fb if isinstance(fb, dict) else {}
        _unknown(fb, {"models", "folds", "fallback_method"}, "applications.no_rag_fallback.", errs)
        fb_models = _strings(fb.get("models", models), "applications.no_rag_fallback.models", errs)
        for m in fb_models:
            if m not in models:
                errs.add("applications.no_rag_fallback.models", f"{m!r} is not one of `models`")
        out["no_rag_fallback"] = {"models": fb_models,
                                  "folds": _int(fb.get("folds"), "applications.no_rag_fallback.folds", errs,
                                                minimum=2, default=5),
                                  "fallback_method": str(fb.get("fallback_method", NO_RAG_METHOD))}
    esc = raw.get("escalate")
    if esc is not None:
        if not isinstance(esc, dict) or "large" not in esc:
            errs.add("applications.escalate", "needs at least `large` (the model to switch to)")
        else:
            _unknown(esc, {"small", "large", "large_method", "rate"}, "applications.escalate.", errs)
            small = str(esc.get("small", models[0] if models else ""))
            if small not in models:
                errs.add("applications.escalate.small", f"{small!r} is not one of `models`")
            rate = esc.get("rate", 0.2)
            if not isinstance(rate, (int, float)) or not 0 < rate < 1:
                errs.add("applications.escalate.rate", f"must lie in (0, 1), got {rate!r}")
            out["escalate"] = {"small": small, "large": str(esc["large"]),
                               "large_method": str(esc.get("large_method", "vanilla")), "rate": float(rate)}
    return out


def parse_config(raw: Any, *, source_name: str = "config") -> ExperimentConfig:
    """Validate a config mapping; raise one InputError listing every problem."""
    errs = _Errors()
    if not isinstance(raw, dict):
        raise InputError(f"{source_name}: the top level must be a mapping of {', '.join(sorted(TOP_KEYS))}")
    _unknown(raw, TOP_KEYS, "", errs)
    datasets = _datasets(raw.get("datasets"), errs)
    models = _strings(raw.get("models"), "models", errs)
    methods = _methods(raw.get("methods"), errs)
    gen = raw.get("generation") or {}
    if not isinstance(gen, dict):
        errs.add("generation", "must be a mapping")
        gen = {}
    _unknown(gen, {"max_tokens", "n_ctx"}, "generation.", errs)
    gt = raw.get("ground_truth") or {}
    if not isinstance(gt, dict):
        errs.add("ground_truth", "must be a mapping")
        gt = {}
    _unknown(gt, {"match", "llm"}, "ground_truth.", errs)
    match = gt.get("match", "recall_or_substring")
    if match not in MATCH_RULES:
        errs.add("ground_truth.match", f"must be one of {', '.join(MATCH_RULES)}, got {match!r}")
    if match == "llm" and not gt.get("llm"):
        errs.add("ground_truth.llm", "match: llm needs the judge model spec in `llm`")
    boot = raw.get("bootstrap") or {}
    if not isinstance(boot, dict):
        errs.add("bootstrap", "must be a mapping")
        boot = {}
    _unknown(boot, {"n_resamples", "confidence", "seed"}, "bootstrap.", errs)
    cfg = ExperimentConfig(
        name=str(raw.get("name") or Path(source_name).stem),
        datasets=datasets, models=models, methods=methods,
        judge_model=raw.get("judge_model"),
        max_tokens=_int(gen.get("max_tokens"), "generation.max_tokens", errs, default=128),
        n_ctx=_int(gen.get("n_ctx"), "generation.n_ctx", errs, minimum=256, default=4096),
        match=match, match_llm=gt.get("llm"),
        threshold=_threshold(raw.get("threshold"), errs),
        applications=_applications(raw.get("applications"), models, errs),
        bootstrap={"n_resamples": _int(boot.get("n_resamples"), "bootstrap.n_resamples", errs, default=1000),
                   "confidence": float(boot.get("confidence", 0.95)),
                   "seed": _int(boot.get("seed"), "bootstrap.seed", errs, minimum=0, default=0)},
        concurrency=_int(raw.get("concurrency"), "concurrency", errs, default=1),
        source=copy.deepcopy(raw))
    if errs.items:
        raise InputError(f"{source_name}: {len(errs.items)} problem(s): " + "; ".join(errs.items))
    return cfg


def load_config(path: str | Path) -> ExperimentConfig:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"config file not found: {p}")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise InputError(f"{p}: not valid YAML: {e}") from None
    return parse_config(raw, source_name=str(p))
