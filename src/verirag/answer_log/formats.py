"""Reading a log of another RAG system's answers (JSONL, one answer a line) into entries to verify.

The field names are those of the evaluation tools RAG engineers already feed, detected per file:

    format        question     answer         contexts             reference
    ragas         user_input   response       retrieved_contexts   reference           (RAGAS >= 0.2)
    ragas_legacy  question     answer         contexts             ground_truth(s)     (RAGAS < 0.2)
    deepeval      input        actual_output  retrieval_context    expected_output     (DeepEval test cases)
    verirag       question     answer         passages             reference           (a /v1/verify body a line)

The format whose question, answer and contexts fields occur on the most lines wins; any field can be
mapped instead (`read_answer_log(..., question_field=...)`, the CLI's --question-field ...). A human
label is read only from a field named by `label_field`: true/false, 1/0, "supported"/"unsupported",
"yes"/"no", "correct"/"incorrect", "faithful"/"unfaithful" (any case); a line with another value is
malformed, and a label field that occurs on no line, or holds none of these values on any line, is
an InputError naming the values it holds.

In every format, a line's `history` field (mapped with `history_field`; "none" reads none) is the
conversation the question was asked in: its earlier turns, oldest first, as strings (alternating
user and agent, the user's first) or OpenAI-style {role, content} messages
(`verirag.conversation.as_history`: a history that is not a list of turns, or has an empty turn,
makes the line malformed; a long one is cut to its recent turns). A line without it has none.

Contexts are strings or objects with a text (`text`, `page_content`, `content` or `contents`) and
optional `title` and `id`. An entry's id is its `id` field, else "line-N". A line that cannot be
verified (bad JSON, a missing or empty field, no contexts, a bad label, a repeated id, a line over
MAX_LINE_BYTES) becomes an entry with `error` set and its line number, keeping the question and
answer text when they parsed: reported and counted, never dropped. Blank lines carry nothing and
are passed over. The fields an AnswerLog names are those its lines have (a reference or history
field no line has is not named).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verirag.contexts import to_passages
from verirag.conversation import as_history
from verirag.errors import InputError
from verirag.types import Passage

EXCERPT_BYTES = 300
KEPT_CHARS = 2000  # of a malformed line's question and answer: enough to recognise it in the report
# one answer (question, answer and its contexts) on one line: a line longer than this is a line
# the log writer got wrong (a whole corpus in one context), not one answer to read for minutes
MAX_LINE_BYTES = 2_000_000
LABEL_WORDS = {
    "supported": 1,
    "unsupported": 0,
    "true": 1,
    "false": 0,
    "yes": 1,
    "no": 0,
    "1": 1,
    "0": 0,
    "correct": 1,
    "incorrect": 0,
    "faithful": 1,
    "unfaithful": 0,
}
LABEL_SPELLINGS = (
    'true/false, 1/0, "supported"/"unsupported", "yes"/"no", "correct"/"incorrect", "faithful"/"unfaithful"'
)


@dataclass(frozen=True)
class LogFields:
    """Which field of a log line holds what. `references`: candidate fields of the gold answer,
    the first present on a line is read."""

    format: str
    question: str
    answer: str
    contexts: str
    references: tuple[str, ...] = ()
    label: str | None = None
    history: str | None = "history"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "question": self.question,
            "answer": self.answer,
            "contexts": self.contexts,
            "references": list(self.references),
            "label": self.label,
            "history": self.history,
        }


FORMATS: dict[str, LogFields] = {
    "ragas": LogFields("ragas", "user_input", "response", "retrieved_contexts", ("reference",)),
    "ragas_legacy": LogFields("ragas_legacy", "question", "answer", "contexts", ("ground_truth", "ground_truths")),
    "deepeval": LogFields("deepeval", "input", "actual_output", "retrieval_context", ("expected_output",)),
    # what /v1/verify and Verifier.verify take: a service's request log verifies as it is
    "verirag": LogFields("verirag", "question", "answer", "passages", ("reference",)),
}


@dataclass
class LogEntry:
    """One line of the log: an answer to verify, or (`error` set) why it cannot be."""

    line: int
    id: str
    question: str = ""
    answer: str = ""
    passages: list[Passage] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    label: int | None = None
    history: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    raw_digest: str = ""  # of the line's bytes: what a malformed line's record is keyed by
    raw_excerpt: str = ""  # a malformed line's start, to show which line it is

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class AnswerLog:
    path: Path
    fields: LogFields
    entries: list[LogEntry]

    @property
    def malformed(self) -> list[LogEntry]:
        return [e for e in self.entries if not e.ok]


class MalformedLine(ValueError):
    """Why one line cannot be verified (becomes the entry's `error`)."""


def parse_label(value: Any) -> int | None:
    """A human label as 1 (supported) / 0 (unsupported) / None (unlabelled); MalformedLine otherwise."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in LABEL_WORDS:
        return LABEL_WORDS[value.strip().lower()]
    raise MalformedLine(f"label {value!r} is not one of {LABEL_SPELLINGS}")


def _text_field(obj: dict, name: str) -> str:
    if name not in obj or obj[name] is None:
        raise MalformedLine(f"no {name!r} field")
    value = obj[name]
    if not isinstance(value, str):
        raise MalformedLine(f"field {name!r} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise MalformedLine(f"field {name!r} is empty")
    return value.strip()


def _passages(obj: dict, name: str, warnings: list[str]) -> list[Passage]:
    """The line's passages by the one input contract every door reads (`verirag.contexts`); an
    empty one is kept and said (the verifier reads the others)."""
    if obj.get(name) is None:
        raise MalformedLine(f"no {name!r} field")
    try:
        passages = to_passages(obj[name], name=f"field {name!r}")
    except InputError as e:
        raise MalformedLine(str(e)) from None
    warnings += [f"passage {p.id} is empty: nothing in it is read" for p in passages if not p.text.strip()]
    return passages


def _references(obj: dict, names: tuple[str, ...]) -> list[str]:
    for name in names:
        value = obj.get(name)
        if value is None:
            continue
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise MalformedLine(f"field {name!r} must be a string or a list of strings")
        return [v for v in values if v.strip()]
    return []


def _entry_id(obj: dict, line: int) -> str:
    value = obj.get("id")
    if value is None:
        return f"line-{line}"
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise MalformedLine("field 'id' must be a non-empty string or an integer")
    return str(value).strip()


def parse_entry(obj: Any, line: int, fields: LogFields) -> LogEntry:
    """One decoded JSON line as an entry (MalformedLine says why it cannot be verified)."""
    if not isinstance(obj, dict):
        raise MalformedLine(f"expected a JSON object, got {type(obj).__name__}")
    warnings: list[str] = []
    entry = LogEntry(line=line, id=_entry_id(obj, line))
    entry.question = _text_field(obj, fields.question)
    entry.answer = _text_field(obj, fields.answer)
    entry.passages = _passages(obj, fields.contexts, warnings)
    entry.references = _references(obj, fields.references)
    entry.label = parse_label(obj.get(fields.label)) if fields.label else None
    if fields.history and obj.get(fields.history) is not None:
        try:
            entry.history = as_history(obj[fields.history], name=fields.history)
        except InputError as e:
            raise MalformedLine(str(e)) from None
    entry.warnings = warnings
    return entry


def _decode(raw: bytes, line: int) -> Any:
    try:
        text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError as e:
        raise MalformedLine(f"not valid UTF-8 (byte 0x{raw[e.start]:02x})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise MalformedLine(f"not valid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:  # "[[[[…" deeper than the parser recurses
        raise MalformedLine("not valid JSON (nested too deeply)") from None


def _kept_text(obj: Any, name: str) -> str:
    """A malformed line's field `name` when it parsed as a string (cut to KEPT_CHARS), else ""."""
    value = obj.get(name) if isinstance(obj, dict) else None
    if not isinstance(value, str):
        return ""
    value = value.strip()
    return value if len(value) <= KEPT_CHARS else value[:KEPT_CHARS] + "…"


def present_fields(fields: LogFields, objects: list[dict]) -> LogFields:
    """`fields` naming only the reference and history fields some line has (what the log holds)."""
    references = tuple(r for r in fields.references if any(r in o for o in objects))
    history = fields.history if fields.history and any(fields.history in o for o in objects) else None
    return replace(fields, references=references, history=history)


def check_label_field(fields: LogFields, objects: list[dict], path: Path) -> None:
    """A label field that no line has, or whose values are never a label: InputError (every line
    would be malformed otherwise, and the reason would be lost in a per-line count)."""
    if not fields.label:
        return
    values = [o[fields.label] for o in objects if o.get(fields.label) is not None]
    if not values:
        seen = ", ".join(k for k, _ in Counter(k for o in objects for k in o).most_common(12))
        raise InputError(f"the label field {fields.label!r} is on no line of {path}; the fields seen are: {seen}")
    readable = 0
    for v in values:
        try:
            parse_label(v)
            readable += 1
        except MalformedLine:
            pass
    if not readable:
        shown = ", ".join(v for v, _ in Counter(json.dumps(v) for v in values).most_common(5))
        raise InputError(
            f"the label field {fields.label!r} of {path} holds no label verirag reads (values seen: {shown}); "
            f"a label is one of {LABEL_SPELLINGS}: map yours to these"
        )


def detect_fields(objects: list[dict], overrides: dict[str, Any]) -> LogFields:
    """The known format (with `overrides` applied) whose question, answer and contexts fields occur
    on the most lines; ties go to the one whose reference field occurs more, then to table order."""
    best, best_rank = None, (0, 0)
    for fmt in FORMATS.values():
        candidate = replace(fmt, **overrides)
        core = sum(all(k in o for k in (candidate.question, candidate.answer, candidate.contexts)) for o in objects)
        refs = sum(any(k in o for k in candidate.references) for o in objects)
        if (core, refs) > best_rank:
            best, best_rank = candidate, (core, refs)
    if best is None:
        seen = Counter(k for o in objects for k in o)
        listed = ", ".join(k for k, _ in seen.most_common(12)) or "none"
        known = "; ".join(f"{f.format}: {f.question}/{f.answer}/{f.contexts}" for f in FORMATS.values())
        raise InputError(
            f"no line has the question, answer and contexts fields of a known log format ({known}); "
            f"the fields seen are: {listed}. Name yours with --question-field, --answer-field "
            "and --contexts-field"
        )
    mapped = set(overrides) - {"label", "history"}  # a label or history field is no part of any format
    name = "mapped" if {"question", "answer", "contexts"} <= mapped else best.format + (" (mapped)" if mapped else "")
    return replace(best, format=name)


def read_answer_log(
    path: str | Path,
    *,
    question_field: str | None = None,
    answer_field: str | None = None,
    contexts_field: str | None = None,
    reference_field: str | None = None,
    label_field: str | None = None,
    history_field: str | None = None,
) -> AnswerLog:
    """Every non-blank line of the JSONL log at `path` as a LogEntry (malformed ones with `error`)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"no log file at {path}" + (" (a folder)" if path.is_dir() else ""))
    try:
        raw_lines = path.read_bytes().split(b"\n")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    overrides: dict[str, Any] = {
        k: v
        for k, v in (
            ("question", question_field),
            ("answer", answer_field),
            ("contexts", contexts_field),
            ("label", label_field),
        )
        if v
    }
    if reference_field:
        overrides["references"] = (reference_field,)
    if history_field:
        overrides["history"] = None if history_field.strip().lower() == "none" else history_field
    decoded: list[tuple[int, bytes, Any]] = []
    for line, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            decoded.append((line, raw, _decode(raw, line)))
        except MalformedLine as e:
            decoded.append((line, raw, e))
    if not decoded:
        raise InputError(f"the log {path} is empty: no line to verify")
    objects = [o for _, _, o in decoded if isinstance(o, dict)]
    try:
        fields = present_fields(detect_fields(objects, overrides), objects)
    except InputError as e:
        raise InputError(f"the log {path}: {e}") from None
    check_label_field(fields, objects, path)
    entries, first_line_of = [], {}
    for line, raw, obj in decoded:
        digest = hashlib.sha256(raw.strip()).hexdigest()[:16]
        try:
            if isinstance(obj, MalformedLine):
                raise obj
            if len(raw) > MAX_LINE_BYTES:
                raise MalformedLine(
                    f"the line is {len(raw) / 1e6:.1f} MB, over the {MAX_LINE_BYTES / 1e6:g} MB of one "
                    "answer with its contexts: log the contexts this answer was generated from, not a corpus"
                )
            entry = parse_entry(obj, line, fields)
            if entry.id in first_line_of:
                raise MalformedLine(f"id {entry.id!r} repeats line {first_line_of[entry.id]}'s: ids must be unique")
            first_line_of[entry.id] = line
        except MalformedLine as e:
            entry_id = obj.get("id") if isinstance(obj, dict) else None
            usable = isinstance(entry_id, (str, int)) and not isinstance(entry_id, bool) and str(entry_id).strip()
            entry = LogEntry(
                line=line,
                id=str(entry_id).strip() if usable else f"line-{line}",
                question=_kept_text(obj, fields.question),
                answer=_kept_text(obj, fields.answer),
                error=str(e),
                raw_excerpt=raw.strip()[:EXCERPT_BYTES].decode("utf-8", "replace"),
            )
        entry.raw_digest = digest
        entries.append(entry)
    return AnswerLog(path=path, fields=fields, entries=entries)
