"""Verify every answer of a log, one JSON line per answer in OUT/results.jsonl as soon as it is done.

The file is the run's resume cache (the grid's pattern): a line's `key` is the entry's id and a
digest of what its verdict depends on (question, answer, contexts, the verifier's identity - the
predictor's component digest: options, prompts, model fingerprint - and the threshold), so a
killed run started again with the same command skips every answer already written and recomputes
none; an answer whose log line or verifier changed gets a new line (the latest one counts).

Record fields: key, id, line, status ("verified"; "unverified": the judge cannot judge this answer,
`unverified` says why (`verirag.awf.unverified`), its score is kept but not trusted; "failed": the
verifier could not score it, with `error`; "malformed": the log line cannot be verified, with
`error`), question, answer, score (None when failed or malformed), line_text (a malformed line's
start), supported (the verdict at `threshold`: never for an unverified answer), verdict
("supported", "unsupported", "unverified"), unverified, threshold, supporting_passage (id, title,
text, support_score: the best supported context; the closest one when unsupported), support_scores
(each context's id and score), sentences (a sentence-level verifier's: each answer sentence's text,
score and supporting_passage id; None for judges of the whole answer), method, judge, model (the
LLM that judged: only when the verification called one; the trained verifier calls none),
warnings, seconds (the entry's share of its block's batched verification: a block's
answers are scored together, `verify_entries`), usage; label (1 / 0: the log's label, when it was
read with a label field and the line has one; not part of the key, so `record_labels` adds it to an
answer verified before without re-verifying it). A recorded failure
is remembered like a verdict. An outage of the model backend (BackendError) or a backend without a
capability the verifier needs (CapabilityError) is no verdict: it stops the run, the lines written
so far stay, and the same command resumes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.answer_log.blocks import entry_key, verifier_identity, verify_block
from verirag.answer_log.formats import AnswerLog
from verirag.awf.verify_batch import default_block
from verirag.errors import InputError, VeriragError
from verirag.jsonio import AppendedJsonl
from verirag.learned.threshold import ThresholdController

RESULTS_FILE = "results.jsonl"


def results_file(out_dir: str | Path) -> AppendedJsonl:
    """OUT/results.jsonl, keyed by each record's "key"."""
    return AppendedJsonl(Path(out_dir) / RESULTS_FILE, "key")


def record_labels(log: AnswerLog, run: LogRun, out_dir: str | Path) -> int:
    """Give the run's records the labels of the log read with a label field: a record written
    before (without `--label-field`, or with other labels) is appended again with the current
    label, nothing re-verified (the latest line of a key wins). Returns how many were appended."""
    if not log.fields.label:
        return 0
    changed = []
    for i, (entry, record) in enumerate(zip(log.entries, run.records)):  # the records are in log order
        want = entry.label if entry.ok else record.get("label")
        if record.get("label") != want:
            record = {k: v for k, v in record.items() if k != "label"}
            if want is not None:
                record["label"] = want
            run.records[i] = record
            changed.append(record)
    if changed:
        with results_file(out_dir) as results:
            for record in changed:
                results.append(record)
        if run.log_keys:  # appended at the end: put back in log order
            results.put_in_order(run.log_keys)
    return len(changed)


@dataclass
class LogRun:
    """What a run did: `records` are the current log's, in log order (`limit` applied)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    written: int = 0
    already_done: int = 0
    unreadable_lines: int = 0
    stale_lines: int = 0  # lines of an earlier log or verifier, not read by the summary
    log_keys: list[str] = field(default_factory=list)  # every entry's key, in log order (`limit` aside)

    def count(self, status: str) -> int:
        return sum(r["status"] == status for r in self.records)


class LocalBlocks:
    """This process verifies the blocks, one after another, in log order."""

    def __init__(self, pipeline):
        self.pipeline = pipeline

    def __enter__(self) -> LocalBlocks:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def identity(self, threshold: float | ThresholdController) -> dict[str, Any]:
        return verifier_identity(self.pipeline, threshold)

    def verify(self, blocks, threshold) -> Iterator[tuple[list[dict[str, Any]], VeriragError | None]]:
        for entries, keys in blocks:
            yield verify_block(self.pipeline, entries, threshold, keys)


def _handed_out(parts: list[list[int]], entries, keys: list[str], on_block: Callable[[int], None] | None):
    """Each part's (entries, keys), told to `on_block` as it is handed out (pulled by the executor)."""
    for part in parts:
        if on_block:
            on_block(len(part))
        yield [entries[i] for i in part], [keys[i] for i in part]


EXECUTORS = ("local", "ray")


def log_executor(pipeline, executor: str = "local", *, workers: int = 2, ray_address: str | None = None):
    """Who verifies the blocks: this process ("local"), or `workers` Ray actors (`ray_shards`)."""
    if executor == "local":
        return LocalBlocks(pipeline)
    if executor == "ray":
        from verirag.answer_log.ray_shards import RayShards

        return RayShards(pipeline, workers=workers, address=ray_address)
    raise InputError(f"unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}")


def run_log(
    pipeline,
    log: AnswerLog,
    out_dir: str | Path,
    *,
    threshold: float | ThresholdController | None = None,
    limit: int | None = None,
    block: int | None = None,
    on_progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
    on_block: Callable[[int], None] | None = None,
    executor: str = "local",
    workers: int = 2,
    ray_address: str | None = None,
) -> LogRun:
    """Verify the entries of `log` (the first `limit`) into OUT/results.jsonl, skipping those done.
    The entries not done are cut into blocks of `block` (contiguous in log order; None: the method's
    `default_block`), each verified in one batched pass (`verify_entries`) by this process, or with
    `executor="ray"` by `workers` Ray actors, one block (a shard) at a time each (`ray_shards`). Each block's records are written when
    it finishes, so a killed run loses at most the blocks in progress and the same call resumes
    (local and Ray runs resume from one another: the blocks are the same, so are the records). The
    file ends in log order (`AppendedJsonl.put_in_order`, for blocks that finished out of order).
    `on_progress(done, total, record)` after each entry, in log order (record None when it was
    already done); `on_block(n)` as a block of n is handed out (its records come when all is done)."""
    block = default_block(pipeline.config.method) if block is None else block
    if block < 1:
        raise InputError(f"block must be at least 1, got {block}")
    if workers < 1:
        raise InputError(f"workers must be at least 1, got {workers}")
    threshold = pipeline.config.threshold if threshold is None else threshold
    entries = log.entries if limit is None else log.entries[: max(limit, 0)]
    with log_executor(pipeline, executor, workers=workers, ray_address=ray_address) as blocks_by:
        identity = blocks_by.identity(threshold)  # InputError first, for a method that cannot verify
        results = results_file(out_dir)
        done = results.load()
        run = LogRun(unreadable_lines=results.unreadable_lines)
        keys = [entry_key(e, identity) for e in entries]
        run.stale_lines = len(set(done) - set(keys))
        resumed = bool(done)
        todo, wanted = [], set()
        for i, k in enumerate(keys):
            if k not in done and k not in wanted:  # a repeated line is verified once, as before
                todo.append(i)
                wanted.add(k)
        fresh = set(todo)
        reported = 0

        def report() -> None:
            """Records and progress of the entries done, up to the first one not done, in log order."""
            nonlocal reported
            while reported < len(entries) and keys[reported] in done:
                i = reported
                run.records.append(done[keys[i]])
                if i not in fresh:
                    run.already_done += 1
                if on_progress:
                    on_progress(i + 1, len(entries), done[keys[i]] if i in fresh else None)
                reported += 1

        parts = [todo[start : start + block] for start in range(0, len(todo), block)]
        position = {k: i for i, k in enumerate(keys)}
        last_written, in_order = -1, True
        with results:
            report()
            for records, stopped in blocks_by.verify(_handed_out(parts, entries, keys, on_block), threshold):
                for record in records:
                    results.append(record)
                    done[record["key"]] = record
                    run.written += 1
                    in_order = in_order and position[record["key"]] > last_written
                    last_written = max(last_written, position[record["key"]])
                if stopped is not None:  # no verdict for the block (its malformed lines are kept): stop
                    raise stopped
                report()
    # the whole log's keys, so that lines past `limit` keep their place after the first ones
    run.log_keys = keys + [entry_key(e, identity) for e in log.entries[len(entries) :]]
    if not in_order or resumed:  # a block finished early, or a killed run's file may be out of order
        results.put_in_order(run.log_keys)
    return run
