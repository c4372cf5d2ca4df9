"""One call from a log file to its verdicts: read the log, verify each answer (resumable), write
the summary and the report. What `verirag verify LOG --out DIR` and `verirag.evaluate` run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verirag.answer_log.formats import AnswerLog, read_answer_log
from verirag.answer_log.run import LogRun, record_labels, run_log
from verirag.answer_log.summary import write_summary


@dataclass
class VerifiedLog:
    """A verified log: its entries, the run (records, written, already done), the summary and
    the report's path."""

    log: AnswerLog
    run: LogRun
    summary: dict[str, Any]
    report: Path


def verify_log(
    pipeline,
    path: str | Path,
    out_dir: str | Path,
    *,
    limit: int | None = None,
    block: int | None = None,
    on_progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
    on_block: Callable[[int], None] | None = None,
    executor: str = "local",
    workers: int = 2,
    ray_address: str | None = None,
    **fields: str | None,
) -> VerifiedLog:
    """Verify the log at `path` with `pipeline` into `out_dir` (OUT/results.jsonl, summary.json,
    report.html), `block` answers at a time in one batched pass (default: by the method, `run_log`), resuming what is done; the log's
    labels (label_field) are kept in the records. `executor="ray"`: the blocks are shards verified
    by `workers` Ray actors (the cluster at `ray_address`, else RAY_ADDRESS, else a local instance
    started for the run), with the same records, summary and report (`run_log`). `fields` map the log's field names (question_field,
    answer_field, contexts_field, reference_field, label_field, history_field). An outage raises BackendError with
    the verdicts so far kept: the same call resumes."""
    logged = read_answer_log(path, **fields)
    run = run_log(
        pipeline,
        logged,
        out_dir,
        limit=limit,
        block=block,
        on_progress=on_progress,
        on_block=on_block,
        executor=executor,
        workers=workers,
        ray_address=ray_address,
    )
    record_labels(logged, run, out_dir)
    warnings = pipeline.threshold_warnings(answering=False)
    summary, report = write_summary(logged, run.records, out_dir, warnings=warnings)
    return VerifiedLog(logged, run, summary, report)
