"""Load a corpus from disk into `Passage` records.

Three inputs are accepted:

* a folder, read recursively: every ``.txt`` and ``.md`` file is one passage;
* a single ``.txt`` or ``.md`` file: one passage;
* a ``.jsonl`` file: one JSON object per line, one passage per object.

Files that cannot be used (binary, not UTF-8, empty) are not fatal: they are listed in
`CorpusLoad.skipped` with a reason so that the caller can report them. Only a corpus with no
usable passage at all is an error, because nothing could be retrieved from it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..types import Passage

TEXT_SUFFIXES = (".txt", ".md")
JSONL_SUFFIX = ".jsonl"
# Keys that may hold the passage text, in order of preference ("contents" is Pyserini's
# convention, "passage" appears in several QA dumps).
TEXT_KEYS = ("text", "contents", "passage")

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
# How many skipped files an error message lists before summarising the rest.
_MAX_LISTED = 10


@dataclass
class CorpusLoad:
    """The result of `load_corpus`: usable passages, and what was left out and why."""

    passages: list[Passage]
    skipped: list[tuple[str, str]] = field(default_factory=list)


def load_corpus(path: str | os.PathLike[str]) -> CorpusLoad:
    """Read a folder, a ``.txt``/``.md`` file or a ``.jsonl`` file into passages.

    Raises `InputError` if the path does not exist, has an unsupported type, contains a
    malformed JSONL line, or yields no usable passage (the message lists skipped files).
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise InputError(f"corpus path does not exist: {root}")
    if root.is_dir():
        load = _load_folder(root)
    elif root.suffix.lower() == JSONL_SUFFIX:
        load = _load_jsonl(root)
    elif root.suffix.lower() in TEXT_SUFFIXES:
        load = _load_text_files(root.parent, [root])
    else:
        raise InputError(f"unsupported corpus file {root}: expected a folder, a .txt or .md file, or a .jsonl file")
    if not load.passages:
        raise InputError(_no_passages_message(root, load.skipped))
    return load


def _load_folder(root: Path) -> CorpusLoad:
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    # os.walk without following links: a symlink loop cannot hang the loader. Hidden files and
    # folders (.git, .DS_Store …) are never corpus content, so they are passed over silently.
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            p = Path(dirpath) / name
            if p.suffix.lower() in TEXT_SUFFIXES:
                files.append(p)
            else:
                kind = p.suffix or "(none)"
                skipped.append((_rel(p, root), f"unsupported file type '{kind}' (only .txt and .md are read)"))
    # Sort the whole list (not per folder) so that order depends only on relative paths.
    files.sort(key=lambda p: _rel(p, root))
    load = _load_text_files(root, files)
    load.skipped = sorted(skipped + load.skipped)
    return load


def _load_text_files(root: Path, files: list[Path]) -> CorpusLoad:
    passages: list[Passage] = []
    skipped: list[tuple[str, str]] = []
    for p in files:
        rel = _rel(p, root)
        text, reason = _read_text(p)
        if reason is not None:
            skipped.append((rel, reason))
            continue
        assert text is not None
        passages.append(Passage(id=rel, text=text, title=_title(text, p), source=rel))
    return CorpusLoad(passages=passages, skipped=skipped)


def _read_text(p: Path) -> tuple[str | None, str | None]:
    """Return (text, None) or (None, reason-for-skipping)."""
    try:
        raw = p.read_bytes()
    except OSError as e:
        return None, f"cannot be read: {e.strerror or e}"
    if b"\x00" in raw:
        return None, "binary file (contains NUL bytes)"
    try:
        # utf-8-sig drops a byte-order mark that some editors write.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return None, f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})"
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return None, "empty (only whitespace)"
    return text, None


def _title(text: str, p: Path) -> str:
    """The first markdown ATX heading outside code fences, else the file name without suffix."""
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            m = _HEADING.match(line)
            if m:
                return m.group(1)
    return p.stem


def _load_jsonl(path: Path) -> CorpusLoad:
    passages: list[Passage] = []
    skipped: list[tuple[str, str]] = []
    first_line_of: dict[str, int] = {}
    try:
        fh = path.open("rb")
    except OSError as e:
        raise InputError(f"cannot read corpus file {path}: {e.strerror or e}") from e
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            where = f"{path}, line {lineno}"
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise InputError(f"{where}: not valid UTF-8 (byte 0x{raw[e.start]:02x})") from e
            if not line.strip():
                continue  # blank lines (e.g. a trailing newline) carry nothing
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from e
            except RecursionError:  # "[[[[…" deeper than the parser recurses
                raise InputError(f"{where}: not valid JSON (nested too deeply)") from None
            if not isinstance(obj, dict):
                raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
            passage = _passage_from_object(obj, lineno, path, where)
            if not passage.text.strip():
                skipped.append((f"{path.name}:{lineno}", "empty text"))
                continue
            if passage.id in first_line_of:
                raise InputError(
                    f"{where}: duplicate id {passage.id!r} "
                    f"(first used on line {first_line_of[passage.id]}); ids must be unique"
                )
            first_line_of[passage.id] = lineno
            passages.append(passage)
    return CorpusLoad(passages=passages, skipped=skipped)


def _passage_from_object(obj: dict[str, Any], lineno: int, path: Path, where: str) -> Passage:
    key = next((k for k in TEXT_KEYS if k in obj), None)
    if key is None:
        raise InputError(f"{where}: no text field (expected one of {', '.join(TEXT_KEYS)})")
    text = obj[key]
    if not isinstance(text, str):
        raise InputError(f"{where}: field {key!r} must be a string, got {type(text).__name__}")
    pid = obj.get("id", lineno)
    if pid is None or isinstance(pid, (dict, list, bool)) or str(pid).strip() == "":
        raise InputError(f"{where}: field 'id' must be a non-empty string or number")
    title = obj.get("title") or ""
    if not isinstance(title, str):
        raise InputError(f"{where}: field 'title' must be a string, got {type(title).__name__}")
    source = obj.get("source") or obj.get("url") or f"{path.name}:{lineno}"
    # Any other fields (url, dates, labels …) are kept rather than silently dropped.
    meta = {k: v for k, v in obj.items() if k not in (key, "id", "title", "source")}
    return Passage(id=str(pid), text=text.strip(), title=title.strip(), source=str(source), meta=meta)


def _rel(p: Path, root: Path) -> str:
    # POSIX separators so that ids are identical on every OS.
    return p.relative_to(root).as_posix()


def _no_passages_message(root: Path, skipped: list[tuple[str, str]]) -> str:
    if not skipped:
        kind = "folder" if root.is_dir() else "file"
        what = "no .txt or .md files" if root.is_dir() else "no passages"
        return f"corpus {kind} {root} has {what}; nothing to index"
    lines = [f"corpus {root} has no usable passage; {len(skipped)} skipped:"]
    lines += [f"  {name}: {reason}" for name, reason in skipped[:_MAX_LISTED]]
    if len(skipped) > _MAX_LISTED:
        lines.append(f"  … and {len(skipped) - _MAX_LISTED} more")
    return "\n".join(lines)
