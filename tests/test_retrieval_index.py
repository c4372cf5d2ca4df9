"""`Index`: build with chunking, search, save/load round trips, safe saving, bad folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_retrieval_hybrid import BagOfWordsEmbedder

from verirag.errors import InputError
from verirag.retrieval import BM25Retriever, Index
from verirag.types import Passage

LONG = (
    " ".join(f"filler{i}" for i in range(50))
    + " the lighthouse keeper lit the lamp "
    + " ".join(f"padding{i}" for i in range(50))
)
PASSAGES = [
    Passage(id="light", text=LONG, title="Lighthouse", source="light.txt"),
    Passage(id="cat", text="The feline slept on the warm windowsill.", source="cat.txt"),
    Passage(id="car", text="An automobile needs fuel, tyres and regular service.", source="car.txt"),
    Passage(id="bread", text="Bake the bread for forty minutes until golden.", source="bread.txt"),
]
QUERIES = ["who lit the lamp", "kitty on a windowsill", "car service", "bread"]


@pytest.fixture
def emb() -> BagOfWordsEmbedder:
    return BagOfWordsEmbedder()


def build(kind: str, emb: BagOfWordsEmbedder) -> Index:
    return Index.build(PASSAGES, kind=kind, chunk_words=40, overlap_words=5, embedder=emb)


def test_build_chunks_first(emb: BagOfWordsEmbedder) -> None:
    index = build("bm25", emb)
    assert len(index) == 3 + 3  # 107 words -> 3 chunks of <= 40 words; 3 short passages
    assert [p.id for p in index.passages[:3]] == ["light#0", "light#1", "light#2"]
    assert index.n_source_passages == 4
    hit = index.search("lighthouse keeper lamp", k=1)[0]
    assert hit.passage.meta["parent_id"] == "light" and hit.passage.title == "Lighthouse"


def test_no_chunking(emb: BagOfWordsEmbedder) -> None:
    index = Index.build(PASSAGES, kind="bm25", chunk_words=None)
    assert [p.id for p in index.passages] == ["light", "cat", "car", "bread"]


@pytest.mark.parametrize("kind", ["bm25", "dense", "hybrid"])
def test_save_load_round_trip(tmp_path: Path, emb: BagOfWordsEmbedder, kind: str) -> None:
    index = build(kind, emb)
    path = index.save(tmp_path / "ix")
    loaded = Index.load(path, embedder=emb)
    assert len(loaded) == len(index) and loaded.kind == kind
    assert loaded.passages == index.passages
    assert loaded.search_many(QUERIES, k=3) == index.search_many(QUERIES, k=3)
    assert [loaded.search(q, k=2) for q in QUERIES] == [index.search(q, k=2) for q in QUERIES]


def test_meta_json(tmp_path: Path, emb: BagOfWordsEmbedder) -> None:
    build("hybrid", emb).save(tmp_path / "ix")
    meta = json.loads((tmp_path / "ix" / "meta.json").read_text())
    assert meta == {
        "format": "verirag-index",
        "version": 1,
        "kind": "hybrid",
        "embedder": "test-bow",
        "chunk_words": 40,
        "overlap_words": 5,
        "k_rrf": 60.0,
        "n_passages": 6,
        "n_source_passages": 4,
    }
    assert sorted(p.name for p in (tmp_path / "ix").iterdir()) == ["bm25", "dense", "meta.json", "passages.jsonl"]


def test_save_replaces_an_index_and_leaves_no_temp_folders(tmp_path: Path, emb: BagOfWordsEmbedder) -> None:
    build("hybrid", emb).save(tmp_path / "ix")
    Index.build(PASSAGES[1:], kind="bm25").save(tmp_path / "ix")
    assert [p.name for p in tmp_path.iterdir()] == ["ix"]
    loaded = Index.load(tmp_path / "ix")
    assert loaded.kind == "bm25" and len(loaded) == 3
    assert not (tmp_path / "ix" / "dense").exists()


def test_interrupted_save_keeps_the_old_index(
    tmp_path: Path, emb: BagOfWordsEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = Index.build(PASSAGES, kind="bm25")
    old.save(tmp_path / "ix")

    def crash(self, directory):
        raise KeyboardInterrupt

    monkeypatch.setattr(BM25Retriever, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        Index.build(PASSAGES[:2], kind="bm25").save(tmp_path / "ix")
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["ix"]
    assert Index.load(tmp_path / "ix").search("bread", k=1) == old.search("bread", k=1)


def test_save_refuses_to_clobber_other_data(tmp_path: Path) -> None:
    index = Index.build(PASSAGES, kind="bm25")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("precious")
    with pytest.raises(InputError, match="not a verirag index"):
        index.save(tmp_path / "notes")
    assert (tmp_path / "notes" / "keep.txt").read_text() == "precious"
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="file"):
        index.save(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    index.save(tmp_path / "empty")  # an empty folder is fine
    assert len(Index.load(tmp_path / "empty")) == len(index)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "sparse"}, "unknown index kind"),
        ({"chunk_words": 10, "overlap_words": 10}, "overlap"),
    ],
)
def test_build_rejects_bad_options(kwargs: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        Index.build(PASSAGES, **kwargs)


def test_build_rejects_empty_and_duplicate_passages() -> None:
    with pytest.raises(InputError, match="zero passages"):
        Index.build([], kind="bm25")
    with pytest.raises(InputError, match="more than once"):
        Index.build(PASSAGES + [PASSAGES[1]], kind="bm25")


def test_search_validates_query_and_k() -> None:
    index = Index.build(PASSAGES, kind="bm25")
    with pytest.raises(InputError):
        index.search("", k=3)
    with pytest.raises(InputError):
        index.search("bread", k=0)


# -- Index.load on bad folders ------------------------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    return Index.build(PASSAGES, kind="bm25").save(tmp_path / "ix")


def edit_meta(path: Path, **changes) -> None:
    meta = json.loads((path / "meta.json").read_text())
    meta.update(changes)
    (path / "meta.json").write_text(json.dumps(meta))


def test_load_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        Index.load(tmp_path / "nowhere")


def test_load_folder_without_meta(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a verirag index"):
        Index.load(tmp_path)


def test_load_unreadable_meta(saved: Path) -> None:
    (saved / "meta.json").write_text("{truncated")
    with pytest.raises(InputError, match="corrupt"):
        Index.load(saved)


def test_load_version_mismatch(saved: Path) -> None:
    edit_meta(saved, version=99)
    with pytest.raises(InputError, match="version 99.*rebuild"):
        Index.load(saved)


def test_load_foreign_format(saved: Path) -> None:
    edit_meta(saved, format="something-else")
    with pytest.raises(InputError, match="not a verirag index"):
        Index.load(saved)


def test_load_truncated_passages(saved: Path) -> None:
    lines = (saved / "passages.jsonl").read_text().splitlines()
    (saved / "passages.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(InputError, match="corrupt"):
        Index.load(saved)


def test_load_garbled_passages(saved: Path) -> None:
    (saved / "passages.jsonl").write_text('{"id": "x"}\n')  # no text
    with pytest.raises(InputError, match="line 1"):
        Index.load(saved)


def test_load_missing_retriever_files(saved: Path) -> None:
    (saved / "bm25" / "bm25.json").unlink()
    with pytest.raises(InputError, match=r"bm25/bm25\.json is missing.*verirag index CORPUS --out"):
        Index.load(saved)


def test_load_with_a_different_embedder(tmp_path: Path, emb: BagOfWordsEmbedder) -> None:
    build("dense", emb).save(tmp_path / "ix")
    with pytest.raises(InputError, match="built with embedder 'test-bow'"):
        Index.load(tmp_path / "ix", embedder=BagOfWordsEmbedder(name="other"))
