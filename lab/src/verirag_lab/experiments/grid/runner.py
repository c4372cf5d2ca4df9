"""`verirag eval CONFIG --out DIR`: run the grid datasets x models x methods, one record at a time.

Each finished (dataset, model, method, example) is appended to DIR/results.jsonl at once; a rerun
loads the keys already there and skips them, and every LLM request goes through the persistent
request cache, so killing a run and starting it again repeats no finished work (an example whose
methods were half done replays its shared generation from the cache).

Failures never vanish:
- a method that fails on an example gives a record with `error` set (score 0, counted everywhere);
- a model that cannot be loaded, or a method that its backend cannot serve (CapabilityError), is a
  run-level failure: appended to DIR/failures.jsonl, reported at the end, and the rest of the grid
  still runs.

With the config's `prune` on, each example's passages are pruned once per model, before its
methods (`verirag.awf.stage_kinds.prune.PruneStage`, as `verirag ask --prune`), and every method reads the
pruned passages; the records carry the report and the pruning's identity (`kind_digests["prune"]`).

Examples of one model run one after another on llama.cpp (one model instance is not thread-safe,
and it already uses every core); HTTP backends run `concurrency` examples in flight. Ray takes the
same work units with `executor="ray"` (verirag_lab.experiments.grid.executors).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from verirag.awf.spec import MethodSpec
from verirag.conversation import as_history
from verirag.errors import InputError, VeriragError, is_outage
from verirag.evaluation.ground_truth import GroundTruth, passages_support_reference
from verirag.llm.metered import MeteredLLM
from verirag.llm.usage import Usage
from verirag.records import ResultRecord, ResultStore, record_key
from verirag.types import Example
from verirag_lab.experiments.grid.config import ExperimentConfig
from verirag_lab.experiments.grid.executors import get_executor

RUN_FILE = "run.json"
FAILURES_FILE = "failures.jsonl"

LLMFactory = Callable[[str, int], Any]  # (spec, n_ctx) -> LLM


def default_llm_factory(spec: str, n_ctx: int):
    from verirag.llm import load_llm

    return load_llm(spec, n_ctx=n_ctx)


@dataclass
class WorkUnit:
    """The examples of one dataset that one model answers with some methods (with the dataset's
    option defaults applied)."""

    dataset: str
    model: str
    methods: list[MethodSpec]
    examples: list[Example]

    @property
    def size(self) -> int:
        return len(self.examples) * len(self.methods)


@dataclass
class RunOutcome:
    out_dir: Path
    written: int = 0
    skipped: int = 0
    recomputed: int = 0  # records written again because their method's identity changed
    record_errors: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)


def result_fingerprint(cfg: ExperimentConfig) -> str:
    """What changes the content of a record beyond its method's options (which are part of each
    record's key); a directory holds the results of one fingerprint."""
    from verirag.prompts import DEFAULT_LAYOUT

    # the prompt layout a method without a `layout` option gets (its records' keys do not name it)
    parts = {
        "n_ctx": cfg.n_ctx,
        "match": cfg.match,
        "default_layout": DEFAULT_LAYOUT,
        "match_llm": cfg.match_llm,
        "judge_model": cfg.judge_model,
        "datasets": [{"name": d.name, "path": d.path, "options": d.options, "seed": d.seed} for d in cfg.datasets],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_pruner(directory: str | None):
    """The context pruner a config's `prune.pruner` names (None: the shipped one), loaded once per
    process (`verirag.learned.pruner_store`: every unit of a run, and every pipeline, shares it)."""
    from verirag.learned.pruner_store import shared_pruner

    return shared_pruner(directory)


def prepare_dir(cfg: ExperimentConfig, out_dir: Path) -> None:
    """Write DIR/run.json; refuse a directory that holds results of a different set-up."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run_path = out_dir / RUN_FILE
    fp = result_fingerprint(cfg)
    if run_path.exists() and (out_dir / "results.jsonl").exists():
        try:
            old = json.loads(run_path.read_text()).get("fingerprint")
        except json.JSONDecodeError:
            old = None
        if old and old != fp:
            raise InputError(
                f"{out_dir} holds results of a different set-up (generation, ground truth "
                f"or dataset options changed); use another --out directory"
            )
    info = cfg.run_json()
    info["fingerprint"] = fp
    tmp = run_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=2, default=str))
    tmp.replace(run_path)


def read_groups(path: str | Path, dataset: str) -> set[str]:
    """The question groups a `groups` file names for `dataset`: one "DATASET:GROUP" per line (the
    form `verirag train verifier` labels use), blank lines and `#` comments skipped."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"groups file not found: {p}")
    wanted = set()
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, group = line.partition(":")
        if not sep or not name or not group:
            raise InputError(f"{p}, line {lineno}: expected DATASET:GROUP (e.g. nq:1284), got {line!r}")
        if name == dataset:
            wanted.add(group)
    if not wanted:
        raise InputError(f"{p} names no question of dataset {dataset!r}")
    return wanted


def load_examples(cfg: ExperimentConfig, llm_factory: LLMFactory) -> dict[str, list[Example]]:
    from verirag_lab.datasets import load_dataset
    from verirag_lab.datasets._sampling import subsample

    out = {}
    for d in cfg.datasets:
        opts = dict(d.options)
        if "references_model" in opts:  # NoMIRACL: references written by an LLM, cached
            opts["references_llm"] = llm_factory(opts.pop("references_model"), cfg.n_ctx)
        if d.groups is None:
            examples = load_dataset(d.name, d.path, n=d.n, seed=d.seed, **opts)
        else:  # the named questions first, then `n` of them (every example of a group stays)
            wanted = read_groups(d.groups, d.name)
            examples = [e for e in load_dataset(d.name, d.path, seed=d.seed, **opts) if e.group in wanted]
            if not examples:
                raise InputError(f"dataset {d.name!r}: no example belongs to a group of {d.groups}")
            keep = set(subsample(sorted({e.group for e in examples}), d.n, d.seed))
            examples = [e for e in examples if e.group in keep]
        for e in examples:
            e.dataset = d.name
            as_history(e.history, name=f"dataset {d.name!r}, example {e.id}: history")  # bad turns fail before the run
        out[d.name] = examples
    return out


def dataset_defaults(cfg: ExperimentConfig, dataset: str) -> dict[str, Any]:
    """Options every method of `dataset` gets unless it sets them: the generation settings, then
    the dataset's `method_options` (e.g. HotpotQA's multi-hop demonstrations)."""
    spec = next(d for d in cfg.datasets if d.name == dataset)
    length = {} if cfg.max_tokens is None else {"max_tokens": cfg.max_tokens}
    return {**length, **getattr(spec, "method_options", {})}


def plan(cfg: ExperimentConfig, examples: dict[str, list[Example]]) -> list[WorkUnit]:
    units = []
    for model, methods in cfg.runs():
        for ds in examples:
            if methods:
                defaults = dataset_defaults(cfg, ds)
                units.append(
                    WorkUnit(ds, model, [MethodSpec.parse(m).with_defaults(defaults) for m in methods], examples[ds])
                )
    return units


class UnitRunner:
    """Runs one WorkUnit's examples: builds the methods once, then one trace per example."""

    def __init__(self, cfg: ExperimentConfig, unit: WorkUnit, llm_factory: LLMFactory):
        from verirag.awf.compose import build_method

        self.cfg, self.unit = cfg, unit
        llm = llm_factory(unit.model, cfg.n_ctx)
        judge = llm_factory(cfg.judge_model, cfg.n_ctx) if cfg.judge_model else None
        self.metered = MeteredLLM(llm)
        self.metered_judge = MeteredLLM(judge) if judge is not None else None
        self.concurrency = cfg.concurrency if llm.backend == "openai" else 1
        self.methods: dict[str, tuple[MethodSpec, Any]] = {}
        self.failures: list[dict[str, Any]] = []
        for spec in unit.methods:
            try:
                self.methods[spec.label] = (spec, build_method(spec, self.metered, judge_llm=self.metered_judge))
            except VeriragError as e:  # e.g. CapabilityError: this backend cannot serve the method
                self.failures.append(
                    {
                        "dataset": unit.dataset,
                        "model": unit.model,
                        "method": spec.label,
                        "error": f"{type(e).__name__}: {e}",
                    }
                )
        correctness_judge = None
        if cfg.match == "llm":
            from verirag.evaluation.judges import CorrectnessJudge

            correctness_judge = CorrectnessJudge(llm_factory(cfg.match_llm, cfg.n_ctx))
        self.truth = GroundTruth(cfg.match, correctness_judge)
        from verirag.awf.user_stages import build_stages, stages_digest

        self.user_stages, self.stages_digest = build_stages(cfg.stages), stages_digest(cfg.stages)
        self.prune_stage, self.prune_digest = None, ""
        if cfg.prune.on:  # one pruning per example, before its methods (PruneStage, as `ask`)
            from verirag.awf.stage_kinds.prune import PruneStage

            pruner = load_pruner(cfg.prune.pruner)
            self.prune_stage = PruneStage(pruner, cfg.prune.threshold, count_tokens=self.metered.count_tokens)
            self.prune_digest = self.prune_stage.digest
        self._prune_lock = threading.Lock()  # HTTP models run examples in threads; the pruner runs one at a time

    def key(self, label: str, ex: Example) -> str:
        """The record key: its slot, the built method's identity (`Component.digest`) and, with
        pruning on, the pruning's (`PruneStage.digest`)."""
        return record_key(
            self.unit.dataset,
            self.unit.model,
            label,
            ex.id,
            self.methods[label][1].digest,
            {"prune": self.prune_digest},
            self.stages_digest,
        )

    def passages(self, ex: Example):
        """The PassagesRecord the methods of `ex` read: its passages, or those the stages a user
        wrote and the pruner keep (in order, their retrieval scores kept), with their reports in
        `stages` (the pruner's under `stages["prune"]`, which the records keep as `details["prune"]`),
        as `ask` runs them after retrieval."""
        from verirag.awf.core import AnswerState, PassagesRecord
        from verirag.awf.user_stages import report
        from verirag.types import ScoredPassage

        scores = ex.meta.get("retrieval_scores")
        stages = [*self.user_stages, *([self.prune_stage] if self.prune_stage is not None else [])]
        if not stages:
            return PassagesRecord(list(ex.passages), scores)
        scored = scores is not None and len(scores) == len(ex.passages)
        hits = [ScoredPassage(p, float(scores[i]) if scored else 0.0, i) for i, p in enumerate(ex.passages)]
        query = AnswerState.asked(ex.question, ex.history).retrieval_query()  # what `ask` prunes for
        results = []
        with self._prune_lock:  # HTTP models run examples in threads; the stages run one at a time
            for stage in stages:
                if not hits:  # nothing left (as in `ask`): the methods read no passage
                    break
                results.append((stage, stage.run(query, hits, lambda _m: None)))
                hits = results[-1][1].kept
        record = PassagesRecord([h.passage for h in hits], [float(h.score) for h in hits] if scored else None)
        for stage, result in results:
            report(stage, result, None, None, record)
        pruned = (record.stages or {}).get("prune")
        if pruned is None:
            return record
        refs = [r for r in ex.references if r.strip()]
        record.stages["prune"] = {
            **pruned,
            "reference_kept": passages_support_reference(replace(ex, passages=record.passages)) if refs else None,
        }
        return record

    def todo(self, done: set[str]) -> tuple[list[Example], int]:
        """(the examples with a method whose record is missing or stale, the records already done)."""
        todo, finished = [], 0
        for ex in self.unit.examples:
            n = sum(self.key(label, ex) in done for label in self.methods)
            finished += n
            if n < len(self.methods):
                todo.append(ex)
        return todo, finished

    @property
    def lost(self) -> int:
        """Records this unit cannot write: its methods that could not be built."""
        return len(self.unit.examples) * (len(self.unit.methods) - len(self.methods))

    def run_example(self, ex: Example, done: set[str]) -> list[ResultRecord]:
        """One record per method of `ex` still to do, each from the answer core (`verirag.awf.core`:
        the method, then the answer rules `ask` applies), over one trace the methods share. The
        question is asked in the example's history as `ask` and `Verifier.verify` ask it
        (`AnswerState.asked`: the same turns, cut by the same rule), not as one long question."""
        from verirag.awf.core import AnswerAndScore, AnswerCore, AnswerRules, AnswerState, PassagesRecord
        from verirag.awf.trace import Trace
        from verirag.learned.pair_cache import shared_pair_logits

        refused = None
        try:
            passages = self.passages(ex)  # pruned once, shared by the methods
        except VeriragError as e:  # a stage refused this example: each method's record says so
            passages, refused = PassagesRecord(list(ex.passages), ex.meta.get("retrieval_scores")), e
        asked = AnswerState.asked(ex.question, ex.history)
        trace = Trace(asked.in_context(), passages.passages, retrieval_scores=passages.retrieval_scores)
        reports = dict(passages.stages or {})
        pruned = reports.pop("prune", None)  # the records keep the pruner's report in details["prune"]
        prune = {} if pruned is None else {"prune": _jsonable(pruned)}
        prune |= {} if not reports else {"stages": _jsonable(reports)}
        records = []
        with shared_pair_logits():  # the methods of one example score the verifier's pairs once
            for label, (spec, method) in self.methods.items():
                if self.key(label, ex) in done:
                    continue
                t0 = time.perf_counter()
                state = AnswerState(ex.question, history=asked.history, passages=passages, trace=trace)
                try:
                    if refused is not None:
                        raise refused
                    AnswerCore([AnswerAndScore(method), AnswerRules()], raise_outages=False).run(state)
                    j = state.judgement
                    answer, score, hard, error, details = j.answer, j.score, j.hard, j.error, j.details
                    raw = score if j.raw_score is None else j.raw_score  # before the answer rules
                    if j.outage:  # counted as an error like any other, and named as an outage
                        details = {**details, "outage": True}
                    if j.rules:  # the score the answer path acts on, and what it was before
                        details = {**details, "answer_rules": j.rules, "raw_score": j.raw_score}
                except VeriragError as e:  # a user or backend failure is this example's error
                    answer, score, hard, error, details = "", 0.0, method.hard, f"{type(e).__name__}: {e}", {}
                    raw = score
                    if is_outage(e):
                        details = {"outage": True}
                seconds = time.perf_counter() - t0
                outcome = (answer, score, raw, hard, error, details)
                records.append(self._record(ex, label, spec, method, outcome, seconds, state.attribution, prune))
        return records

    def _record(self, ex: Example, label: str, spec, method, outcome: tuple, seconds: float, used, prune: dict):
        """The ResultRecord of one method's outcome (answer, score, raw score, hard, error, details) on `ex`."""
        answer, score, raw, hard, error, details = outcome
        # `used`: None only when the method failed before it read the trace
        cost, shared, spent = (used.cost, used.shared, used.spent) if used else (Usage(), Usage(), Usage())
        truth = self.truth.label(ex, answer)
        return ResultRecord(
            dataset=self.unit.dataset,
            model=self.unit.model,
            method=label,
            example_id=ex.id,
            question=ex.question,
            answer=answer,
            score=float(score),
            raw_score=float(raw),
            hard=bool(hard),
            answerable=truth.answerable,
            correct=truth.correct,
            faithful=truth.faithful,
            abstained=truth.abstained,
            error=error,
            group=ex.group or ex.id,
            references=list(ex.references),
            seconds=round(seconds, 4),
            calls=cost.calls,
            prompt_tokens=cost.prompt_tokens,
            completion_tokens=cost.completion_tokens,
            details={
                **_jsonable(details),
                **truth.details,
                **prune,
                "cache_hits": cost.cache_hits,
                "shared": {
                    "calls": shared.calls,
                    "prompt_tokens": shared.prompt_tokens,
                    "completion_tokens": shared.completion_tokens,
                },
            },
            method_digest=method.digest,
            method_spec=_jsonable({**spec.to_dict(), "resolved_options": method.resolved_options()}),
            spent=spent.to_dict(),
            kind_digests={"prune": self.prune_digest} if self.prune_digest else {},
            stages_digest=self.stages_digest,
        )


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(d, default=str))
    except (TypeError, ValueError):
        return {"unserialisable_details": str(d)[:2000]}


def run_experiment(
    cfg: ExperimentConfig,
    out_dir: str | Path,
    *,
    executor: str = "local",
    llm_factory: LLMFactory | None = None,
    progress: bool = True,
    limit: int | None = None,
) -> RunOutcome:
    """Run (or resume) the experiment into `out_dir`. `limit` caps the examples per dataset."""
    out_dir = Path(out_dir)
    llm_factory = llm_factory or default_llm_factory
    if cfg.prune.on:  # a missing or damaged pruner fails the run before anything runs
        load_pruner(cfg.prune.pruner)
    prepare_dir(cfg, out_dir)
    store = ResultStore(out_dir)
    stored = store.load()
    done, slots = {r.key for r in stored}, {r.slot for r in stored}
    examples = load_examples(cfg, llm_factory)
    if limit is not None:
        examples = {k: v[:limit] for k, v in examples.items()}
    units = plan(cfg, examples)
    outcome = RunOutcome(out_dir=out_dir)
    total = sum(u.size for u in units)

    with _progress(progress, total) as advance:

        def emit(rec: ResultRecord) -> None:
            store.append(rec)
            outcome.written += 1
            outcome.record_errors += rec.error is not None
            outcome.recomputed += rec.slot in slots  # present, but of another identity
            advance(1)

        def skip(n: int) -> None:
            outcome.skipped += n
            advance(n)

        get_executor(executor).run(
            units, done, partial(UnitRunner, cfg, llm_factory=llm_factory), emit, skip, advance, outcome.failures
        )
    for f in outcome.failures:
        _append_failure(out_dir, f)
    return outcome


def _append_failure(out_dir: Path, failure: dict[str, Any]) -> None:
    with open(out_dir / FAILURES_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**failure, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")


class _progress:
    """A rich progress bar over records (or nothing when disabled); yields advance(n)."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total = enabled, total

    def __enter__(self):
        if not self.enabled:
            return lambda n=1: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.p = Progress(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self.p.__enter__()
        task = self.p.add_task("records", total=self.total)
        return lambda n=1: self.p.advance(task, n)

    def __exit__(self, *exc):
        if self.enabled:
            self.p.__exit__(*exc)
        return False
