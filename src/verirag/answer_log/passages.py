"""The passages of one answer to verify (`verirag verify --question Q --answer A --passages FILE...`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from verirag.errors import InputError
from verirag.retrieval import load_corpus
from verirag.types import Passage


def read_passages(paths: Sequence[str | Path]) -> tuple[list[Passage], list[tuple[str, str]]]:
    """(passages, skipped): each .txt/.md file is one passage (whole, not chunked: the verifier
    splits long ones itself), a .jsonl one passage a line, a folder its text files; `skipped` lists
    the unreadable files with the reason."""
    if not paths:
        raise InputError("no passages: give --passages FILE (a text file per passage, or a JSONL of passages)")
    passages: list[Passage] = []
    skipped: list[tuple[str, str]] = []
    for path in paths:
        loaded = load_corpus(path)
        passages += loaded.passages
        skipped += loaded.skipped
    seen: dict[str, int] = {}
    for i, p in enumerate(passages):  # two files of one name in different folders: keep both, apart
        if p.id in seen:
            passages[i] = Passage(id=f"{p.id}#{i + 1}", text=p.text, title=p.title, source=p.source, meta=p.meta)
        seen.setdefault(p.id, i)
    return passages, skipped
