"""Corpus loading: folders, single files, JSONL, and every way a file can be unusable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag.retrieval import load_corpus


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


@pytest.fixture
def messy_folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    # Written out of order: the loader must sort by relative path.
    write(root / "sub" / "c.md", "Some intro line.\n\n## Gamma section\n\nGamma text.")
    write(root / "b.txt", "Beta is plain text without a heading.")
    write(root / "a.md", "# Alpha Title\n\nAlpha body text.")
    write(root / "binary.txt", b"GIF89a\x00\x01\x02 not text")
    write(root / "latin1.txt", "caf\u00e9 au lait".encode("latin-1"))
    write(root / "blank.md", "  \n\t\n   ")
    write(root / "report.pdf", b"%PDF-1.4 ...")
    write(root / ".hidden.txt", "hidden files are not corpus content")
    write(root / ".git" / "HEAD.txt", "ref: refs/heads/main")
    return root


def test_folder_loads_text_and_markdown_sorted(messy_folder: Path) -> None:
    load = load_corpus(messy_folder)
    assert [p.id for p in load.passages] == ["a.md", "b.txt", "sub/c.md"]
    a, b, c = load.passages
    assert a.title == "Alpha Title" and a.text == "# Alpha Title\n\nAlpha body text."
    assert b.title == "b"  # no heading: the file stem
    assert c.title == "Gamma section"  # first heading, wherever it is
    assert [p.source for p in load.passages] == [p.id for p in load.passages]


def test_folder_records_skipped_files_with_reasons(messy_folder: Path) -> None:
    skipped = dict(load_corpus(messy_folder).skipped)
    assert set(skipped) == {"binary.txt", "latin1.txt", "blank.md", "report.pdf"}
    assert "binary" in skipped["binary.txt"]
    assert "UTF-8" in skipped["latin1.txt"]
    assert "empty" in skipped["blank.md"]
    assert "unsupported" in skipped["report.pdf"]


def test_hidden_files_and_folders_are_ignored(messy_folder: Path) -> None:
    load = load_corpus(messy_folder)
    names = [p.id for p in load.passages] + [name for name, _ in load.skipped]
    assert not any(n.startswith(".") or "/." in n for n in names)


def test_single_text_file(tmp_path: Path) -> None:
    f = write(tmp_path / "notes.md", "\ufeff# Notes\r\nline one\r\nline two\r\n")
    load = load_corpus(f)
    assert len(load.passages) == 1
    p = load.passages[0]
    assert p.id == "notes.md" and p.title == "Notes"
    assert p.text == "# Notes\nline one\nline two"  # BOM dropped, line ends normalised


def test_heading_inside_code_fence_is_not_a_title(tmp_path: Path) -> None:
    f = write(tmp_path / "code.md", "```\n# not a title\n```\nbody")
    assert load_corpus(f).passages[0].title == "code"


def test_jsonl_fields_defaults_and_extras(tmp_path: Path) -> None:
    rows = [
        {"text": "first passage", "title": "One"},
        {"id": 42, "contents": "second, Pyserini style", "url": "http://x"},
        {"id": "p3", "passage": "third"},
    ]
    f = write(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in rows[:2]) + "\n\n" + json.dumps(rows[2]) + "\n")
    load = load_corpus(f)
    assert [p.id for p in load.passages] == ["1", "42", "p3"]  # default id = line number
    assert [p.text for p in load.passages] == ["first passage", "second, Pyserini style", "third"]
    assert load.passages[0].title == "One"
    assert load.passages[1].source == "http://x"
    assert load.passages[2].source == "c.jsonl:4"
    assert load.skipped == []


def test_jsonl_empty_text_is_skipped(tmp_path: Path) -> None:
    f = write(tmp_path / "c.jsonl", '{"text": "ok"}\n{"text": "   "}\n')
    load = load_corpus(f)
    assert [p.id for p in load.passages] == ["1"]
    assert load.skipped == [("c.jsonl:2", "empty text")]


@pytest.mark.parametrize(
    "bad_line, expected",
    [
        ("{not json", "not valid JSON"),
        ('["a", "list"]', "expected a JSON object"),
        ('{"title": "no text"}', "no text field"),
        ('{"text": 5}', "must be a string"),
        ('{"id": "1", "text": "dup of line 1"}', "duplicate id"),
    ],
)
def test_jsonl_bad_line_names_file_and_line(tmp_path: Path, bad_line: str, expected: str) -> None:
    f = write(tmp_path / "bad.jsonl", '{"text": "fine"}\n' + bad_line + "\n")
    with pytest.raises(InputError) as exc:
        load_corpus(f)
    msg = str(exc.value)
    assert "bad.jsonl" in msg and "line 2" in msg and expected in msg


def test_jsonl_non_utf8_line(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.jsonl", b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(InputError, match="line 2.*UTF-8"):
        load_corpus(f)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_corpus(tmp_path / "nope")


def test_unsupported_single_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unsupported"):
        load_corpus(write(tmp_path / "x.pdf", b"%PDF"))


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no .txt or .md files"):
        load_corpus(tmp_path)


def test_no_usable_passage_lists_skipped_files(tmp_path: Path) -> None:
    write(tmp_path / "bin.txt", b"\x00\x01")
    write(tmp_path / "empty.md", "\n\n")
    with pytest.raises(InputError) as exc:
        load_corpus(tmp_path)
    msg = str(exc.value)
    assert "no usable passage" in msg
    assert "bin.txt: binary" in msg and "empty.md: empty" in msg


def test_single_unusable_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="latin.txt: not valid UTF-8"):
        load_corpus(write(tmp_path / "latin.txt", "\u00e9t\u00e9".encode("latin-1")))


def test_jsonl_with_only_blank_lines(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no passages"):
        load_corpus(write(tmp_path / "e.jsonl", "\n\n"))
