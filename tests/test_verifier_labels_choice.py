"""The `choice` recipe: a question made a choice between its gold answer and another, answered with
each option over the same passages."""

from __future__ import annotations

from test_verifier_labels import HOTPOT, NQ_ROWS, by_id, data, run  # noqa: F401  (data: a fixture)

from verirag.metrics.qa import substring_match
from verirag_lab.train.verifier_labels import resolve_file
from verirag_lab.train.verifier_labels.replacements import is_choice_question


def test_pairs_share_question_and_passages_and_differ_only_in_the_option(tmp_path, data):
    r = run(tmp_path, data, recipes=["choice"])
    examples = {e.source: e for e in resolve_file(tmp_path / "labels.jsonl", data)}
    gold = {e.group: e for s, e in examples.items() if s.split("/")[3] == "gold"}
    other = {e.group: e for s, e in examples.items() if s.split("/")[3] == "other"}
    assert gold and set(gold) == set(other)
    assert r.summary["by_recipe"]["choice"]["supported"] == len(gold)
    for group, g in gold.items():
        o = other[group]
        assert g.label == 1 and o.label == 0
        assert g.question == o.question and g.passages == o.passages and g.answer != o.answer
        # both options are offered, the gold one is what the passages hold
        assert is_choice_question(g.question) and g.answer in g.question and o.answer in g.question
        assert g.question.endswith(f"{g.answer} or {o.answer}?") or g.question.endswith(f"{o.answer} or {g.answer}?")
        assert any(substring_match(p, [g.answer]) for p in g.passages)
    # the question is rebuilt from its own text: the original, then the options
    originals = [q for q, *_ in NQ_ROWS] + [h["question"] for h in HOTPOT]
    assert all(any(g.question.startswith(q.rstrip().rstrip("?")) for q in originals) for g in gold.values())


def test_questions_that_offer_a_choice_and_yes_no_answers_are_left_to_swap(tmp_path, data):
    run(tmp_path, data, recipes=["choice"])
    records = by_id(tmp_path).values()
    made = {r["example"] for r in records if r["dataset"] == "hotpotqa" and "skip" not in r}
    choice_qs = {h["_id"] for h in HOTPOT if is_choice_question(h["question"])}
    assert choice_qs and not (made & choice_qs)
    yes_no = [r for r in records if "skip" in r and "yes/no" in str(r.get("skip", ""))]
    assert all(r["dataset"] == "hotpotqa" for r in yes_no)


def test_records_hold_no_benchmark_text(tmp_path, data):
    run(tmp_path, data, recipes=["choice"])
    text = (tmp_path / "labels.jsonl").read_text(encoding="utf-8").lower()
    for q, answers, _title, passage in NQ_ROWS:
        assert q.lower() not in text and passage[:30].lower() not in text
        assert not [a for a in answers if len(a) > 4 and a.lower() in text]
    for h in HOTPOT:
        assert h["question"].lower() not in text
