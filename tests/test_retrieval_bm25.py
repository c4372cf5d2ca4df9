"""BM25 retrieval over a small hand-written corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verirag.errors import InputError
from verirag.retrieval import BM25Retriever
from verirag.retrieval.analyzer import EnglishAnalyzer
from verirag.retrieval.bm25 import passage_text
from verirag.types import Passage

TEXTS = {
    "eiffel": (
        "Eiffel Tower",
        "The wrought-iron lattice tower on the Champ de Mars in Paris was "
        "designed by Gustave Eiffel's company and completed in 1889.",
    ),
    "photosynthesis": (
        "Photosynthesis",
        "Plants convert light energy into chemical energy, producing oxygen and glucose from carbon dioxide and water.",
    ),
    "everest": (
        "Mount Everest",
        "Earth's highest mountain above sea level lies in the Himalayas on the border between Nepal and China.",
    ),
    "python": (
        "Python (programming language)",
        "A high-level programming language created by Guido van Rossum, first released in 1991.",
    ),
    "marathon": (
        "Marathon",
        "A long-distance foot race of 42.195 kilometres; runners train for months, running many miles each week.",
    ),
    "volcano": (
        "Volcano",
        "A rupture in the crust of a planet through which lava, ash and gases "
        "escape from a magma chamber below the surface.",
    ),
    "coffee": (
        "Coffee",
        "A brewed drink prepared from roasted coffee beans, the seeds of berries "
        "from Coffea species, first cultivated in Yemen.",
    ),
}


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    return [Passage(id=k, title=t, text=x, source=f"{k}.txt") for k, (t, x) in TEXTS.items()]


@pytest.fixture(scope="module")
def retriever(passages: list[Passage]) -> BM25Retriever:
    return BM25Retriever.build(passages)


@pytest.mark.parametrize(
    "query, expected",
    [
        ("who designed the tower in Paris", "eiffel"),
        ("how do plants make oxygen from light", "photosynthesis"),
        ("highest mountain in Nepal", "everest"),
        ("when was the Python language released", "python"),
        ("where was coffee first grown", "coffee"),
    ],
)
def test_obvious_passage_ranks_first(retriever: BM25Retriever, query: str, expected: str) -> None:
    assert retriever.search(query, k=3)[0].passage.id == expected


def test_stemming_matches_word_forms(retriever: BM25Retriever) -> None:
    # The marathon text says "running", which the Snowball stemmer reduces to "run".
    assert retriever.search("run", k=1)[0].passage.id == "marathon"


def test_title_is_indexed(retriever: BM25Retriever) -> None:
    # "Everest" appears only in the title.
    assert retriever.search("Everest", k=1)[0].passage.id == "everest"


def test_results_sorted_ranked_and_k_larger_than_corpus(retriever: BM25Retriever) -> None:
    hits = retriever.search("energy from water and lava below the surface", k=100)
    assert 1 < len(hits) <= len(TEXTS)
    assert [h.rank for h in hits] == list(range(len(hits)))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


def test_query_without_known_terms_returns_nothing(retriever: BM25Retriever) -> None:
    assert retriever.search("the of and", k=5) == []  # only stopwords
    assert retriever.search("zyzzyva", k=5) == []  # unknown word


@pytest.mark.parametrize("query", ["", "   \n", None])
def test_empty_query_raises(retriever: BM25Retriever, query) -> None:
    with pytest.raises(InputError):
        retriever.search(query, k=3)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_k_raises(retriever: BM25Retriever, k) -> None:
    with pytest.raises(InputError):
        retriever.search("tower", k=k)


def test_search_many_equals_single_searches(retriever: BM25Retriever) -> None:
    queries = ["tower in Paris", "coffee beans", "zyzzyva"]
    assert retriever.search_many(queries, k=3) == [retriever.search(q, k=3) for q in queries]
    with pytest.raises(InputError):
        retriever.search_many(["fine", ""], k=3)


def test_build_rejects_empty_input() -> None:
    with pytest.raises(InputError):
        BM25Retriever.build([])
    with pytest.raises(InputError, match="indexable"):
        BM25Retriever.build([Passage(id="a", text="the and of")])


def test_save_load_round_trip(tmp_path: Path, retriever: BM25Retriever, passages: list[Passage]) -> None:
    retriever.save(tmp_path / "bm25")
    loaded = BM25Retriever.load(tmp_path / "bm25", passages)
    for q in ["tower in Paris", "mountain", "programming language 1991"]:
        assert loaded.search(q, k=5) == retriever.search(q, k=5)


def test_load_errors(tmp_path: Path, retriever: BM25Retriever, passages: list[Passage]) -> None:
    with pytest.raises(InputError, match="missing or corrupt"):
        BM25Retriever.load(tmp_path / "absent", passages)
    retriever.save(tmp_path / "bm25")
    with pytest.raises(InputError, match="passages"):
        BM25Retriever.load(tmp_path / "bm25", passages[:3])


def test_ordering_agrees_with_rank_bm25(passages: list[Passage]) -> None:
    """Same tokens, different idf variant (Lucene vs Okapi): orderings should agree here."""
    rank_bm25 = pytest.importorskip("rank_bm25")
    analyzer = EnglishAnalyzer()
    ours = BM25Retriever.build(passages)
    theirs = rank_bm25.BM25Okapi([analyzer(passage_text(p)) for p in passages])
    for query in [
        "tower Paris 1889",
        "energy from light and water",
        "lava gases magma chamber",
        "programming language released",
        "mountain border China",
    ]:
        ours_ids = [h.passage.id for h in ours.search(query, k=len(passages))]
        scores = np.asarray(theirs.get_scores(analyzer(query)))
        order = np.argsort(-scores, kind="stable")
        theirs_ids = [passages[i].id for i in order if scores[i] > 0]
        assert ours_ids[0] == theirs_ids[0]
        assert set(ours_ids) == set(theirs_ids)


def test_top_k_is_exact_and_breaks_ties_by_index() -> None:
    from verirag.retrieval.base import top_k

    rng = np.random.default_rng(0)
    for _ in range(200):
        scores = rng.integers(0, 4, size=rng.integers(1, 30)).astype(np.float32)
        k = int(rng.integers(1, 35))
        idx, top = top_k(scores, k)
        expected = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
        assert idx.tolist() == expected
        assert top.tolist() == scores[expected].tolist()


def test_duplicate_passages_tie_in_index_order() -> None:
    dup = [Passage(id=str(i), text="identical text about tides") for i in range(6)]
    hits = BM25Retriever.build(dup).search("tides", k=3)
    assert [h.passage.id for h in hits] == ["0", "1", "2"]
