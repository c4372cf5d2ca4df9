"""Reading benchmark files: JSON, JSON lines (optionally gzipped), with errors a user can act on.

Every loader reads through these helpers so that a missing file, a bad line or a wrong top-level
type always ends as one `InputError` naming the file (and line), never as a bare traceback.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from verirag.errors import InputError


def existing_file(path: str | Path, what: str) -> Path:
    """`path` as a Path if it is a file, else `InputError` saying what was expected there."""
    p = Path(path).expanduser()
    if not p.is_file():
        kind = "a folder" if p.is_dir() else "missing"
        raise InputError(f"{what}: expected a file at {p} ({kind})")
    return p


def _open_text(p: Path) -> IO[str]:
    if p.suffix == ".gz":
        return gzip.open(p, "rt", encoding="utf-8")
    return p.open(encoding="utf-8")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) for every non-blank line of a JSON-lines file (.gz allowed)."""
    p = existing_file(path, "JSON-lines file")
    try:
        with _open_text(p) as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    yield lineno, json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(f"{p}, line {lineno}: not valid JSON ({e.msg})") from e
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise InputError(f"cannot read {p} ({type(e).__name__}: {e})") from e


def read_json(path: str | Path) -> Any:
    """The one JSON document in `path` (.gz allowed)."""
    p = existing_file(path, "JSON file")
    try:
        with _open_text(p) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise InputError(f"{p}: not valid JSON (line {e.lineno}: {e.msg})") from e
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise InputError(f"cannot read {p} ({type(e).__name__}: {e})") from e


def read_records(path: str | Path) -> list[tuple[int, Any]]:
    """Records of a file that is either one JSON array or JSON lines, as (position, record).

    Official releases ship a JSON array (HotpotQA, SQuAD-style, TopiOCQA) while re-distributions
    often use JSON lines; sniffing the first non-blank character lets one loader take both.
    Positions are 1-based line numbers for JSON lines and 0-based indices for an array.
    """
    p = existing_file(path, "data file")
    try:
        with _open_text(p) as f:
            head = f.read(4096).lstrip()
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise InputError(f"cannot read {p} ({type(e).__name__}: {e})") from e
    if head.startswith("["):
        data = read_json(p)
        return list(enumerate(data))
    return list(iter_jsonl(p))


def require(record: Any, key: str, where: str) -> Any:
    """record[key], or `InputError` naming the record's position and the missing field."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if key not in record:
        raise InputError(f"{where}: missing field {key!r}")
    return record[key]


def string_list(value: Any, where: str) -> list[str]:
    """A reference-answer field as a list of strings: a string becomes a one-item list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"{where}: expected a string or a list of strings, got {value!r:.80}")
