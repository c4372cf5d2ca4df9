"""HotpotQA loaders on tiny files written here: twins, distractor mode, both file formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag_lab.datasets import load_dataset


def record(qid: str, answer: str = "Paris", n_distractors: int = 8) -> dict:
    context = [["Gold A", ["Alpha is in France.", " It is old."]], ["Gold B", ["The capital of France is Paris."]]]
    context += [[f"{qid} distractor {i}", [f"Unrelated text {i}."]] for i in range(n_distractors)]
    return {
        "_id": qid,
        "question": f"Where is the place of {qid}?",
        "answer": answer,
        "type": "bridge",
        "level": "easy",
        "context": context,
        "supporting_facts": [["Gold A", 0], ["Gold B", 0]],
    }


def write_array(path: Path, records: list[dict]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def write_lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_twins_from_official_array(tmp_path: Path) -> None:
    f = write_array(tmp_path / "hotpot_dev_distractor.json", [record("q1"), record("q2")])
    examples = load_dataset("hotpotqa_original", f)
    assert [e.id for e in examples] == ["q1:unanswerable", "q1:answerable", "q2:unanswerable", "q2:answerable"]
    una, ans = examples[0], examples[1]
    assert una.group == ans.group == "q1"
    assert (una.answerable, ans.answerable) == (False, True)
    assert len(una.passages) == len(ans.passages) == 8
    assert una.relevance == [0] * 8 and sum(ans.relevance) == 1
    gold_at = ans.relevance.index(1)
    # The gold paragraph holding the answer is preferred; it replaces exactly one distractor.
    assert ans.passages[gold_at].title == "Gold B" and ans.meta["gold_contains_answer"]
    assert [p.id for i, p in enumerate(ans.passages) if i != gold_at] == [
        p.id for i, p in enumerate(una.passages) if i != gold_at
    ]
    assert una.references == ["Paris"] and una.dataset == "hotpotqa_original"
    assert ans.passages[gold_at].text == "The capital of France is Paris."
    assert una.passages[0].text == "Unrelated text 0." and not una.meta["answer_in_distractors"]


def test_json_lines_give_the_same_examples(tmp_path: Path) -> None:
    recs = [record("q1"), record("q2")]
    a = load_dataset("hotpotqa_original", write_array(tmp_path / "a.json", recs))
    b = load_dataset("hotpotqa_original", write_lines(tmp_path / "b.jsonl", recs))
    assert [e.to_dict() for e in a] == [e.to_dict() for e in b]


def test_sentences_are_joined_as_released(tmp_path: Path) -> None:
    f = write_array(tmp_path / "h.json", [record("q1", answer="old")])
    ans = load_dataset("hotpotqa_original", f)[1]
    gold = ans.passages[ans.relevance.index(1)]
    assert gold.title == "Gold A" and gold.text == "Alpha is in France. It is old."


def test_distractor_mode(tmp_path: Path) -> None:
    f = write_array(tmp_path / "h.json", [record("q1")])
    (ex,) = load_dataset("hotpotqa_original", f, mode="distractor")
    assert ex.id == "q1" and len(ex.passages) == 10 and ex.relevance[:2] == [1, 1]
    assert sum(ex.relevance) == 2 and ex.answerable is True


def test_n_passages_and_bad_options(tmp_path: Path) -> None:
    f = write_array(tmp_path / "h.json", [record("q1")])
    una, ans = load_dataset("hotpotqa_original", f, n_passages=3)
    assert len(una.passages) == len(ans.passages) == 3
    with pytest.raises(InputError, match="n_passages"):
        load_dataset("hotpotqa_original", f, n_passages=0)
    with pytest.raises(InputError, match="mode"):
        load_dataset("hotpotqa_original", f, mode="fullwiki")


def test_questions_without_gold_text_or_distractors_are_skipped(tmp_path: Path) -> None:
    no_gold = record("nogold")
    no_gold["supporting_facts"] = [["Missing title", 0]]
    only_gold = record("onlygold", n_distractors=0)
    f = write_array(tmp_path / "h.json", [no_gold, only_gold, record("ok")])
    assert [e.group for e in load_dataset("hotpotqa_original", f)] == ["ok", "ok"]


def test_gold_text_found_in_another_questions_context(tmp_path: Path) -> None:
    # In the retrieved-context files a gold paragraph can be missing from its own question.
    other = record("other")
    lonely = record("lonely")
    lonely["context"] = lonely["context"][2:]
    f = write_array(tmp_path / "h.json", [other, lonely])
    ans = next(e for e in load_dataset("hotpotqa_original", f) if e.id == "lonely:answerable")
    assert ans.passages[ans.relevance.index(1)].text == "The capital of France is Paris."


def test_folder_loader_subsamples_questions_and_keeps_twins(tmp_path: Path) -> None:
    write_lines(tmp_path / "dev.json", [record(f"d{i}") for i in range(6)])
    write_lines(tmp_path / "test.json", [record(f"t{i}") for i in range(6)])
    everything = load_dataset("hotpotqa", tmp_path)
    assert len(everything) == 24 and everything[0].dataset == "hotpotqa"
    picked = load_dataset("hotpotqa", tmp_path, n=5, seed=3)
    assert len(picked) == 10
    groups = [e.group for e in picked]
    assert all(groups[i] == groups[i + 1] for i in range(0, 10, 2))
    assert picked == load_dataset("hotpotqa", tmp_path, n=5, seed=3)
    assert groups != [e.group for e in load_dataset("hotpotqa", tmp_path, n=5, seed=4)]
    # an example's content does not depend on which others were sampled
    by_id = {e.id: e for e in everything}
    assert all(e == by_id[e.id] for e in picked)


def test_malformed_record_names_its_position(tmp_path: Path) -> None:
    bad = record("q1")
    bad["context"] = [["title only"]]
    f = write_lines(tmp_path / "h.jsonl", [record("q0"), bad])
    with pytest.raises(InputError, match=r"record 2.*context"):
        load_dataset("hotpotqa_original", f)
    with pytest.raises(InputError, match="not found"):
        load_dataset("hotpotqa", tmp_path / "nowhere")
