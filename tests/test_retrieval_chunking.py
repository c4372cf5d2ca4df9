"""Word-window chunking: exact overlap, lengths, coverage, validation, passage ids."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verirag.errors import InputError
from verirag.retrieval import chunk_passages, chunk_words
from verirag.types import Passage


def words(n: int, start: int = 0) -> list[str]:
    return [f"w{i}" for i in range(start, start + n)]


def test_short_text_is_one_chunk_unchanged() -> None:
    text = "  A short text.\nWith a second line.  "
    assert chunk_words(text, max_words=10, overlap_words=2) == [text.strip()]


def test_exactly_max_words_is_one_chunk() -> None:
    assert len(chunk_words(" ".join(words(200)))) == 1


def test_windows_and_exact_overlap() -> None:
    chunks = [c.split() for c in chunk_words(" ".join(words(450)), max_words=200, overlap_words=20)]
    assert [len(c) for c in chunks] == [200, 200, 90]
    assert chunks[0] == words(200)
    assert chunks[1] == words(200, start=180)
    assert chunks[2] == words(90, start=360)
    for a, b in itertools.pairwise(chunks):
        assert a[-20:] == b[:20]


def test_one_word_over_gives_a_second_chunk_of_overlap_plus_one() -> None:
    chunks = chunk_words(" ".join(words(11)), max_words=10, overlap_words=3)
    assert [len(c.split()) for c in chunks] == [10, 4]


def test_zero_overlap_partitions() -> None:
    chunks = chunk_words(" ".join(words(25)), max_words=10, overlap_words=0)
    assert [c.split() for c in chunks] == [words(10), words(10, 10), words(5, 20)]


def test_line_breaks_inside_a_chunk_are_kept() -> None:
    chunks = chunk_words("a b\nc d\n\ne f", max_words=3, overlap_words=1)
    assert chunks == ["a b\nc", "c d\n\ne", "e f"]


def test_empty_text_gives_no_chunk() -> None:
    assert chunk_words("  \n ") == []


@pytest.mark.parametrize("max_words, overlap", [(10, 10), (10, 11), (0, 0), (-1, 0), (5, -1), (5.5, 1)])
def test_invalid_parameters(max_words, overlap) -> None:
    with pytest.raises(InputError):
        chunk_words("some text", max_words=max_words, overlap_words=overlap)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 120), max_words=st.integers(1, 30), data=st.data())
def test_chunks_cover_the_text_in_order(n: int, max_words: int, data) -> None:
    overlap = data.draw(st.integers(0, max_words - 1))
    chunks = [c.split() for c in chunk_words(" ".join(words(n)), max_words, overlap)]
    assert all(1 <= len(c) <= max_words for c in chunks)
    # Dropping each chunk's overlap with the previous one rebuilds the text exactly.
    rebuilt = chunks[0] if chunks else []
    for prev, cur in itertools.pairwise(chunks):
        if overlap:
            assert prev[-overlap:] == cur[:overlap]
        rebuilt += cur[overlap:]
    assert rebuilt == words(n)


def test_chunk_passages_ids_meta_and_fields() -> None:
    long = Passage(id="doc", text=" ".join(words(25)), title="T", source="s.txt", meta={"k": 1})
    short = Passage(id="short", text="tiny text", title="S", source="t.txt")
    empty = Passage(id="empty", text="   ")
    out = chunk_passages([long, short, empty], max_words=10, overlap_words=2)
    assert [p.id for p in out] == ["doc#0", "doc#1", "doc#2", "short"]
    assert all(p.title == "T" and p.source == "s.txt" for p in out[:3])
    assert out[1].meta == {"k": 1, "parent_id": "doc", "chunk_index": 1, "n_chunks": 3}
    assert out[3].meta == {"parent_id": "short", "chunk_index": 0, "n_chunks": 1}
    assert out[3].text == "tiny text"
    assert long.meta == {"k": 1}  # the input is not modified
