"""The user's first screen: a `Verifier` over plain strings, `evaluate`, `fit_threshold`.

    from verirag import Verifier
    v = Verifier()                                   # the default method, threshold 0.5
    r = v.verify("Who designed the lighthouse?", "Ada Brennan.", ["The lighthouse was designed by Ada Brennan."])
    r.score, r.faithful, r.supporting_passage.id, [s.text for s in r.sentences or []]

Each is a thin layer over the library: a `Verifier` holds a `Pipeline` that only verifies (the
answer core's verify -> answer rules); `evaluate` runs an experiment config (`verirag eval`) or
verifies an answer log (`verirag verify LOG --out DIR`); `fit_threshold` fits a
`ThresholdController` (`verirag calibrate`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.contexts import to_passages
from verirag.errors import InputError, VeriragError
from verirag.learned.threshold import ThresholdController
from verirag.types import Passage, VerifyResult


class ThresholdWarning(UserWarning):
    """A threshold file that was fitted for another model, method or options, or whose target
    could not be certified (every answer then acts)."""


def as_passages(contexts: Sequence[str | Mapping[str, Any] | Passage]) -> list[Passage]:
    """The passages by the one input contract every door reads (`verirag.contexts`): strings,
    {"id", "text", "title"} mappings or Passages; the caller's id kept, else `p0`, `p1`, ..."""
    return to_passages(contexts)


def _threshold(threshold: float | str | Path | ThresholdController) -> float | ThresholdController:
    """A number, a fitted controller, or the path of a threshold file (`verirag calibrate --save`)."""
    if isinstance(threshold, (ThresholdController, bool, int, float)):
        return threshold  # checked by the answer spec, as at every door
    return ThresholdController.load(threshold)


class Verifier:
    """Verify answers against the passages they came from.

    `method`: a GENERATOR+PREDICTOR method whose predictor judges (None: the default for given
    answers, `verirag.awf.defaults.DEFAULT_METHOD`, the shipped trained verifier: ~0.1 s an answer,
    no LLM). `threshold`: a number, or a threshold file's path, checked against the method (a file
    fitted for another model, method or options warns with ThresholdWarning). `model` and
    `judge` choose the LLM of methods that use one (e.g. `method="vanilla+nli"`)."""

    def __init__(
        self,
        method: str | None = None,
        threshold: float | str | Path | ThresholdController = 0.5,
        *,
        model: str | None = None,
        judge: str | None = None,
        preset: str = "local",
    ):
        from verirag.awf.answer_spec import AnswerSpec
        from verirag.awf.pipeline import Pipeline

        # resolved as every door resolves it (no method: the default, or with a judge the method that uses it)
        spec = AnswerSpec(preset=preset, method=method, model=model, judge=judge, threshold=_threshold(threshold))
        self._pipeline = Pipeline(spec.for_given_answers())
        self._pipeline.answer_verifier()  # a method that cannot verify a given answer fails here, not later
        self.warnings = self._pipeline.threshold_warnings(answering=False)
        for w in self.warnings:
            warnings.warn(w, ThresholdWarning, stacklevel=2)
        unused = spec.unused_model()  # a model named for a method that never calls one
        if unused:
            self.warnings.append(unused)
            warnings.warn(unused, UserWarning, stacklevel=2)

    @property
    def method(self) -> str:
        """The method in use (what every result's `method` names)."""
        return self._pipeline.config.method

    @property
    def threshold(self) -> float | None:
        """The verdict threshold (None: a threshold file whose target could not be certified)."""
        from verirag.learned.threshold import as_controller

        return as_controller(self._pipeline.config.threshold).threshold_

    @property
    def pipeline(self):
        """The Pipeline underneath (e.g. for `verify_and_act`)."""
        return self._pipeline

    def verify(
        self,
        question: str,
        answer: str,
        contexts: Sequence[str | Passage],
        history: Sequence[str | Mapping[str, Any]] | None = None,
    ) -> VerifyResult:
        """The score, the verdict at the threshold, each passage's support, and each sentence with
        its supporting passage (from a sentence-level verifier). `history`: the conversation the
        question was asked in, its earlier turns oldest first (strings alternating user and agent,
        or OpenAI-style {"role", "content"} messages; `verirag.conversation`): a follow-up such as
        "When was it released?" is judged in it. Bad input (a history that is not a list of turns,
        an empty turn) raises InputError; a long history is cut to its recent turns; an unreachable
        model raises BackendError; a judge that could not score gives score None."""
        return self._pipeline.verify(question, answer, as_passages(contexts), history=history)

    def verify_many(
        self,
        rows: Iterable[Mapping[str, Any] | Sequence[Any]],
        *,
        on_progress: Callable[[int], None] | None = None,
        block: int | None = None,
    ) -> list[VerifyResult]:
        """Verify a batch: each row a mapping with `question`, `answer`, `contexts` and optionally
        `history` (or a (question, answer, contexts[, history]) tuple). The rows are verified `block`
        at a time, each block in one batched pass (`Pipeline.verify_many`: the trained verifier
        reads the sentence-chunk pairs of all its answers together; scores equal `verify`'s); results
        are in row order. A row that is bad input gives a result with its error (score None, not
        supported) in its place, never a gap; an outage raises. `on_progress(i)`: rows done.
        `block`: rows per batched pass (None: `verirag.awf.verify_batch.default_block` of the method,
        256 for the trained verifier, 8 for an LLM judge, which reads one answer after another)."""
        from verirag.awf.verify_batch import VerifyItem, default_block

        block = default_block(self._pipeline.config.method) if block is None else block
        if block < 1:
            raise InputError(f"block must be at least 1, got {block}")
        results: list[VerifyResult] = []
        pending: list[tuple[int, Any, VerifyItem]] = []

        def flush() -> None:
            done = self._pipeline.verify_many([item for _, _, item in pending])
            for (i, row, _), r in zip(pending, done):
                results.append(self._failed(row, f"row {i}: {r}") if isinstance(r, VeriragError) else r)
                if on_progress:
                    on_progress(i)
            pending.clear()

        for i, row in enumerate(rows, start=1):
            try:
                question, answer, contexts, history = _row(row)
                item = VerifyItem(question, answer, as_passages(contexts), history)
            except VeriragError as e:
                if pending:  # keep row order: the rows before it come first
                    flush()
                results.append(self._failed(row, f"row {i}: {e}"))
                if on_progress:
                    on_progress(i)
                continue
            pending.append((i, row, item))
            if len(pending) >= block:
                flush()
        if pending:
            flush()
        return results

    def _failed(self, row, error: str) -> VerifyResult:
        get = row.get if isinstance(row, Mapping) else (lambda _k, d="": d)
        return VerifyResult(
            question=str(get("question", "") or ""),
            answer=str(get("answer", "") or ""),
            score=None,
            faithful=False,
            threshold=self.threshold,
            evidence=[],
            supporting_passage=None,
            method=self.method,
            judge="",
            timings={},
            error=error,
        )

    def __repr__(self) -> str:
        return f"Verifier(method={self.method!r}, threshold={self.threshold!r})"


def _row(row) -> tuple[str, str, Sequence[str | Passage], Any]:
    if isinstance(row, Mapping):
        missing = [k for k in ("question", "answer", "contexts") if k not in row]
        if missing:
            raise InputError(f"missing {', '.join(missing)} (a row has question, answer, contexts)")
        return row["question"], row["answer"], row["contexts"], row.get("history")
    if isinstance(row, Sequence) and not isinstance(row, str) and len(row) in (3, 4):
        return row[0], row[1], row[2], row[3] if len(row) == 4 else None
    raise InputError(
        "a row is a mapping with question, answer, contexts (and optionally history), "
        "or a (question, answer, contexts[, history]) tuple"
    )


def fit_threshold(
    scores: Sequence[float],
    labels: Sequence[int] | None = None,
    *,
    precision: float | None = None,
    delta: float = 0.1,
    action_rate: float | None = None,
    method: str | None = None,
    model: str | None = None,
) -> ThresholdController:
    """A threshold fitted on scores: for a target `precision` (with `labels`, 1 = correct),
    guaranteed with probability >= 1 - `delta` (Learn then Test), or for at most an `action_rate`
    of answers acting. Read `threshold_` (None: not certified, every answer acts and every
    verdict says so in its `warnings`) and `certified_`; pass it (or its `save(path)` file) as a
    Verifier's or Pipeline's threshold. `method` (e.g. `Verifier().method`) and `model` (only
    when an LLM judged) name what scored: used with another method or model it warns
    (ThresholdWarning); one that names no method warns that it cannot be checked. From a
    labelled answer log in one step: `verirag verify LOG --label-field F --fit-precision P`."""
    if (precision is None) == (action_rate is None):
        raise InputError("give exactly one of precision= (with labels) or action_rate=")
    try:
        if precision is not None:
            if labels is None:
                raise InputError("a target precision needs labels (1 = correct / faithful)")
            fitted = ThresholdController(precision=precision, delta=delta).fit(scores, labels)
        else:
            fitted = ThresholdController(action_rate=action_rate).fit(scores)
    except ValueError as e:  # labels that are not 0/1, a target out of range, no scores
        raise InputError(str(e)) from None
    fitted.fingerprints.update({k: v for k, v in (("method", method), ("model", model)) if v})
    return fitted


@dataclass
class Evaluation:
    """What `evaluate` did: `kind` ("experiment", "study" or "answer_log"), where it wrote, its
    summary (the same JSON the CLI prints), the report's path, and run-level failures."""

    kind: str
    out_dir: Path
    summary: dict[str, Any]
    report: Path | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)


def evaluate(
    source: str | Path,
    out: str | Path,
    *,
    method: str | None = None,
    threshold: float | str | Path | ThresholdController = 0.5,
    limit: int | None = None,
    progress: bool = False,
    report: bool = True,
    **log_fields: str,
) -> Evaluation:
    """Evaluate into the folder `out`, resuming what is already there:
    - an experiment config (YAML: `verirag eval CONFIG --out DIR`): the grid's records, summary
      and report (`limit` examples per dataset);
    - an answer log (JSONL of another system's question, answer and contexts: `verirag verify LOG
      --out DIR`): each answer verified with `method` at `threshold`, the summary (AUROC and
      precision / recall against labels or references where the log has them) and the report.
      `log_fields` map the log's field names (question_field=, answer_field=, contexts_field=,
      reference_field=, label_field=)."""
    path, out_dir = Path(source), Path(out)
    if not path.is_file():
        raise InputError(f"nothing to evaluate at {path}: give an experiment config (.yaml) or an answer log (.jsonl)")
    if path.suffix.lower() in (".yaml", ".yml"):
        # the experiment grid is the lab's (`verirag_lab.experiments`): its one door from the library
        try:
            from verirag_lab.experiments.evaluate import evaluate_config
        except ModuleNotFoundError as e:
            if e.name != "verirag_lab":
                raise
            raise InputError(
                f"{path} is an experiment config, which the lab runs, and the lab is not installed: "
                "`pip install -e lab` in a checkout of verirag (or `make dev`)"
            ) from None

        return evaluate_config(path, out_dir, limit=limit, progress=progress, report=report)
    from verirag.answer_log import verify_log

    done = verify_log(Verifier(method, threshold).pipeline, path, out_dir, limit=limit, **log_fields)
    return Evaluation("answer_log", out_dir, done.summary, done.report)
