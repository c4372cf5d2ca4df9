"""The `subject` recipe: the same answer over the same passages, to the question as asked (its
evidence is about the entity it names) and to the question asked of another entity the passages
tell about."""

from __future__ import annotations

from test_verifier_labels import HOTPOT, NQ_ROWS, by_id, data, run  # noqa: F401  (data: a fixture)

from verirag_lab.train.verifier_labels import resolve_file


def _pairs(tmp_path, data):
    run(tmp_path, data, recipes=["subject"])
    examples = resolve_file(tmp_path / "labels.jsonl", data)
    gold = {e.group: e for e in examples if e.source.split("/")[3] == "gold"}
    other = {e.group: e for e in examples if e.source.split("/")[3] == "other"}
    return gold, other


def test_only_the_entity_the_question_names_changes_and_it_is_a_passage_title(tmp_path, data):
    gold, other = _pairs(tmp_path, data)
    assert gold and set(gold) == set(other)
    originals = {q.lower() for q, *_ in NQ_ROWS} | {h["question"].lower() for h in HOTPOT}
    for group, g in gold.items():
        o = other[group]
        assert g.label == 1 and o.label == 0
        assert g.answer == o.answer and g.passages == o.passages and g.question != o.question
        assert g.question.lower() in originals and o.question.lower() not in originals
        titles = {p.split("\n", 1)[0] for p in o.passages}
        # the new name is another passage's title, and no passage holding the answer is about it
        new = next(t for t in titles if t.lower() in o.question.lower() and t.lower() not in g.question.lower())
        about_it = [p for p in o.passages if p.startswith(new + "\n")]
        assert about_it and not any(g.answer.lower() in p.lower() for p in about_it)
        # the words around the name are kept ("who designed the X lighthouse" keeps "who designed the")
        head = g.question.lower().split()[0]
        assert o.question.lower().startswith(head)


def test_a_title_with_its_own_article_takes_the_question_s_place(tmp_path, data):
    _, other = _pairs(tmp_path, data)
    assert any("the harbour at dawn" in o.question.lower() for o in other.values())  # the fixture has one
    assert not any(" the the " in f" {o.question.lower()} " for o in other.values())


def test_records_hold_no_benchmark_text(tmp_path, data):
    run(tmp_path, data, recipes=["subject"])
    records = by_id(tmp_path).values()
    assert all(r["recipe"] == "subject" for r in records)
    made = [r for r in records if "skip" not in r]
    assert made
    text = (tmp_path / "labels.jsonl").read_text(encoding="utf-8").lower()
    for q, _answers, _title, passage in NQ_ROWS:
        assert q.lower() not in text and passage[:30].lower() not in text
    for h in HOTPOT:
        assert h["question"].lower() not in text
