"""`nq` (oracle questions + retrieved passages) and `nq_open` on tiny files written here."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag.retrieval import BM25Retriever
from verirag.types import Passage
from verirag_lab.datasets import load_dataset

ORACLE = [
    (
        "who wrote the novel moby dick",
        ["Herman Melville"],
        ("Moby-Dick", "Moby-Dick is an 1851 novel by American writer Herman Melville."),
    ),
    (
        "what is the capital city of australia",
        ["Canberra"],
        ("Canberra", "Canberra is the capital city of Australia, in the Australian Capital Territory."),
    ),
    (
        "when did the titanic sink",
        ["1912", "April 15, 1912"],
        ("RMS Titanic", "RMS Titanic sank in the North Atlantic Ocean on 15 April 1912."),
    ),
    (
        "who painted the mona lisa",
        ["Leonardo da Vinci"],
        ("Mona Lisa", "The Mona Lisa is a portrait painting by the Italian artist Leonardo da Vinci."),
    ),
]


def write_shared_layout(root: Path) -> Path:
    """<root>/lost_in_the_middle_nq/nq-open-oracle.jsonl.gz and <root>/hotpotqa_amor_subset/."""
    (root / "lost_in_the_middle_nq").mkdir(parents=True)
    with gzip.open(root / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz", "wt") as f:
        for q, answers, (title, text) in ORACLE:
            f.write(
                json.dumps(
                    {
                        "question": q,
                        "answers": answers,
                        "ctxs": [{"title": title, "text": text, "hasanswer": True, "isgold": True}],
                    }
                )
                + "\n"
            )
    (root / "hotpotqa_amor_subset").mkdir()
    rec = {
        "_id": "h1",
        "question": "q?",
        "answer": "a",
        "supporting_facts": [["Whales", 0]],
        "context": [
            ["Whales", ["Whales are marine mammals; a famous novel is about one."]],
            ["Sydney", ["Sydney is the largest city in Australia, not its capital."]],
            ["Ocean liners", ["Ocean liners crossed the Atlantic; some sank."]],
        ],
    }
    (root / "hotpotqa_amor_subset" / "dev.json").write_text(json.dumps(rec) + "\n")
    return root


def test_top_k_from_the_mixed_pool(tmp_path: Path) -> None:
    root = write_shared_layout(tmp_path)
    examples = load_dataset("nq", root, k=3)
    assert [e.id for e in examples] == ["0", "1", "2", "3"]
    assert all(len(e.passages) <= 3 and e.dataset == "nq" for e in examples)
    first = examples[0]
    assert first.passages[0].id == "nq-oracle:0" and first.relevance[0] == 1
    assert first.answerable is True and first.meta["gold_retrieved"] is True
    assert first.meta["pool_size"] == 7 and len(first.meta["retrieval_scores"]) == len(first.passages)
    ids = {p.id for e in examples for p in e.passages}
    assert any(i.startswith("hotpotqa:") for i in ids)
    for e in examples:
        assert e.relevance == [int(any(a.lower() in p.text.lower() for a in e.references)) for p in e.passages]


def test_path_forms_and_distractor_choices(tmp_path: Path) -> None:
    root = write_shared_layout(tmp_path)
    oracle = root / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz"
    a = load_dataset("nq", root, k=2)
    assert a == load_dataset("nq", oracle, k=2) == load_dataset("nq", oracle.parent, k=2)
    alone = load_dataset("nq", oracle, k=2, distractors=None)
    assert alone[0].meta["pool_size"] == 4
    with pytest.raises(InputError, match="distractors"):
        load_dataset("nq", _copy(oracle, tmp_path / "other" / "place"))
    with pytest.raises(InputError, match="retriever"):
        load_dataset("nq", root, retriever="splade")
    with pytest.raises(InputError, match="k "):
        load_dataset("nq", root, k=0)


def _copy(src: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / src.name).write_bytes(src.read_bytes())
    return folder / src.name


def test_n_samples_questions_before_retrieval(tmp_path: Path) -> None:
    root = write_shared_layout(tmp_path)
    picked = load_dataset("nq", root, n=2, seed=1)
    assert len(picked) == 2 and picked == load_dataset("nq", root, n=2, seed=1)
    full = {e.id: e for e in load_dataset("nq", root)}
    assert all(e == full[e.id] for e in picked)


@pytest.mark.slow
def test_dense_pool_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from verirag.retrieval import DenseRetriever

    root = write_shared_layout(tmp_path / "data")
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "cache"))
    first = load_dataset("nq", root, k=2, retriever="dense")
    assert first[1].passages[0].id == "nq-oracle:1" and first[1].answerable
    cached = list((tmp_path / "cache" / "datasets").iterdir())
    assert len(cached) == 1 and (cached[0] / "embeddings.npy").is_file()

    def no_build(*args, **kwargs):
        raise AssertionError("the cached index should have been loaded")

    monkeypatch.setattr(DenseRetriever, "build", classmethod(no_build))
    again = load_dataset("nq", root, k=2, retriever="dense")
    assert [[p.id for p in e.passages] for e in again] == [[p.id for p in e.passages] for e in first]


def test_nq_open_questions_and_optional_retriever(tmp_path: Path) -> None:
    f = tmp_path / "NQ-open.dev.jsonl"
    f.write_text(
        '{"question": "who wrote moby dick", "answer": ["Herman Melville"]}\n\n'
        '{"question": "capital of australia", "answer": "Canberra"}\n'
        '{"question": "unanswered test question"}\n'
    )
    examples = load_dataset("nq_open", f)
    assert [(e.id, e.references) for e in examples] == [("1", ["Herman Melville"]), ("3", ["Canberra"]), ("4", [])]
    assert examples[0].passages == [] and examples[0].answerable is None
    bm25 = BM25Retriever.build(
        [
            Passage(id="m", text="Moby Dick was written by Herman Melville."),
            Passage(id="c", text="Canberra is the capital of Australia."),
        ]
    )
    with_passages = load_dataset("nq_open", f, retriever=bm25, k=1)
    assert with_passages[0].passages[0].id == "m" and with_passages[0].relevance == [1]
    assert with_passages[1].answerable is True
    assert with_passages[2].relevance == [None] * len(with_passages[2].passages)
    f.write_text('{"question": "ok", "answer": ["x"]}\n{"answer": ["y"]}\n')
    with pytest.raises(InputError, match="line 2.*question"):
        load_dataset("nq_open", f)
