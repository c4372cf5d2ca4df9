"""One block of a log's answers verified in one batched pass, and the record of each answer (the
fields `run` documents): what a local run and a Ray shard both run, so the two give the same
records and resume from one another."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from typing import Any

from verirag.answer_log.formats import LogEntry
from verirag.awf.defaults import given_answer_method
from verirag.errors import BackendError, CapabilityError, VeriragError
from verirag.learned.threshold import ThresholdController, as_controller
from verirag.types import UNVERIFIED, VerifyResult


def verifier_identity(pipeline, threshold: float | ThresholdController) -> dict[str, Any]:
    """What a verdict depends on besides the entry (loads the model: its fingerprint is part of it)."""
    predictor = pipeline.answer_verifier()
    return {
        "method": given_answer_method(pipeline.config.method),  # what judges a given answer
        "predictor": predictor.digest,
        "threshold": as_controller(threshold).threshold_,
    }


def entry_key(entry: LogEntry, identity: dict[str, Any]) -> str:
    """ "id|digest" of the entry's question, answer and contexts and the verifier's identity; a
    malformed line's digest is of its bytes and line number."""
    if not entry.ok:
        content: Any = {"malformed": entry.raw_digest, "line": entry.line}
    else:
        content = {
            "question": entry.question,
            "answer": entry.answer,
            "contexts": [[p.id, p.title, p.text] for p in entry.passages],
            "verifier": identity,
        }
        if entry.history:  # a line without history keeps the key it had before history was read
            content["history"] = list(entry.history)
    blob = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return f"{entry.id}|{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:16]}"


def _passage_dict(e) -> dict[str, Any]:
    return {"id": e.id, "title": e.title, "text": e.text, "support_score": e.support_score}


def verify_entry(pipeline, entry: LogEntry, threshold: float | ThresholdController, key: str) -> dict[str, Any]:
    """The record of one entry (module doc); raises only for an outage or a missing capability."""
    return verify_entries(pipeline, [entry], threshold, [key])[0]


def verify_entries(
    pipeline, entries: list[LogEntry], threshold: float | ThresholdController, keys: list[str]
) -> list[dict[str, Any]]:
    """The records of `entries`, in order, their answers verified in one batch
    (`Pipeline.verify_many`); raises only for an outage or a missing capability."""
    from verirag.awf.verify_batch import VerifyItem

    readable = [i for i, e in enumerate(entries) if e.ok]
    items = [VerifyItem(e.question, e.answer, e.passages, e.history, threshold) for e in (entries[i] for i in readable)]
    t0 = time.perf_counter()
    try:
        verified = dict(zip(readable, pipeline.verify_many(items)))
    except (BackendError, CapabilityError):
        raise
    except Exception as e:  # a bug of a predictor fails the block's answers, recorded, not the run
        failure = f"{type(e).__name__}: {e}"
        verified = dict.fromkeys(readable, failure)
    seconds = round((time.perf_counter() - t0) / max(len(readable), 1), 4)
    return [_record(pipeline, e, k, verified.get(i), seconds) for i, (e, k) in enumerate(zip(entries, keys))]


def _record(pipeline, entry: LogEntry, key: str, v: Any, seconds: float) -> dict[str, Any]:
    """An entry's record from its result `v`: a VerifyResult, an error (VeriragError or message),
    or None for a malformed line."""
    base = {"key": key, "id": entry.id, "line": entry.line, "question": entry.question, "answer": entry.answer}
    if entry.label is not None:
        base["label"] = entry.label
    if not entry.ok:
        return {
            **base,
            "status": "malformed",
            "score": None,
            "supported": False,
            "error": entry.error,
            "line_text": entry.raw_excerpt,
        }
    if not isinstance(v, VerifyResult):
        return {
            **base,
            "status": "failed",
            "score": None,
            "supported": False,
            "error": v if isinstance(v, str) else f"{type(v).__name__}: {v}",
            "warnings": entry.warnings,
            "seconds": seconds,
        }
    status = UNVERIFIED if v.verdict == UNVERIFIED else ("failed" if v.score is None else "verified")
    return {
        **base,
        "status": status,
        "score": v.score,
        "supported": v.faithful,
        "verdict": v.verdict,
        "unverified": v.unverified,
        "threshold": v.threshold,
        "supporting_passage": _passage_dict(v.supporting_passage) if v.supporting_passage else None,
        "support_scores": [{"id": e.id, "support_score": e.support_score} for e in v.evidence],
        "sentences": None if v.sentences is None else [asdict(s) for s in v.sentences],
        "method": v.method,
        "judge": v.judge,
        **llm_model(pipeline, v.usage),
        "error": v.error,
        "warnings": entry.warnings + v.warnings,
        "seconds": v.timings.get("verify"),
        "usage": v.usage,
    }


def llm_model(pipeline, usage: dict[str, Any] | None) -> dict[str, str]:
    """{"model": the judging LLM} when the verification made an LLM request (answered by the
    request cache or not), else {}: a record names a model only where one judged."""
    if not (usage or {}).get("calls"):
        return {}
    return {"model": pipeline.config.judge_model or pipeline.config.model}


def verify_block(
    pipeline, entries: list[LogEntry], threshold: float | ThresholdController, keys: list[str]
) -> tuple[list[dict[str, Any]], VeriragError | None]:
    """(records, None) of one block (`verify_entries`), or, when an outage or a missing capability
    stops it, (the records of its malformed lines, which need no verifier, the error): what a
    local block and a Ray shard both run."""
    try:
        return verify_entries(pipeline, entries, threshold, keys), None
    except (BackendError, CapabilityError) as e:
        return [_record(pipeline, e_, k, None, 0.0) for e_, k in zip(entries, keys) if not e_.ok], e
