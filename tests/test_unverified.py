"""The `unverified` verdict (issue 47, item 5): an answer the judge cannot judge (not in English for
the English-only trained verifier, no claim, passages without text) is unverified with a reason,
never supported, through Python, HTTP and `verirag verify LOG`; short English answers, names and
numbers are judged as usual."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verirag.awf.language import guess_language
from verirag.awf.unverified import (
    ANSWER_LANGUAGE,
    NO_CLAIM,
    NO_PASSAGE_TEXT,
    PASSAGE_LANGUAGE,
    UNTRUSTED_SCORE,
    why_unverified,
)
from verirag.types import UNVERIFIED, AskResult, Passage, VerifyResult

QUESTION = "Who designed the bridge in Varnholt, and when was it built?"
PASSAGE = "The bridge in Varnholt was designed by the engineer Ada Brennan and built in 1962."
# one fixture, three languages (and Chinese): each answer claims what the passage says or names the
# wrong person; whichever, the English-only verifier cannot judge it
FOREIGN = {
    "de": ["Die Brücke wurde von Ada Brennan entworfen.", "Die Brücke wurde 1962 von Johann Keller gebaut."],
    "ru": ["Мост спроектировала Ада Бреннан в 1962 году.", "Мост спроектировал Иван Петров."],
    "es": ["El puente fue diseñado por Ada Brennan.", "El puente fue construido por Carlos Ruiz en 1962."],
    "zh": ["这座桥是由艾达·布伦南设计的。"],
}
ENGLISH = [
    "In 1962.",
    "1962",
    "Ada Brennan.",
    "Ada Brennan",
    "Guillermo del Toro",
    "Sergei Rachmaninoff",
    "Johann Sebastian Bach.",
    "42",
    "Yes.",
    "The bridge was designed by Ada Brennan.",
    "It was built in 1962 by the engineer Ada Brennan.",
    "The bridge in Varnholt was designed by Ada Brennan and built in 1962.",
]
FOREIGN_ANSWERS = [a for answers in FOREIGN.values() for a in answers]


# ---- the rule --------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer", FOREIGN_ANSWERS)
def test_every_non_english_answer_is_unverified_for_an_english_only_judge(answer):
    found = why_unverified(answer, [Passage("p0", PASSAGE)], english_only=True)
    assert found is not None and found.reason == ANSWER_LANGUAGE
    assert found.language != "en" and "English" in found.message
    # an LLM judge reads other languages: the language rule is not its
    assert why_unverified(answer, [Passage("p0", PASSAGE)], english_only=False) is None


@pytest.mark.parametrize("answer", ENGLISH)
def test_short_english_answers_names_and_numbers_are_judged(answer):
    assert why_unverified(answer, [Passage("p0", PASSAGE)], english_only=True) is None
    assert not guess_language(answer).not_english


def test_no_claim_no_passage_text_and_passages_in_another_language():
    p = [Passage("p0", PASSAGE)]
    for answer in ("...", "?!", " – ", "…", "text text text text", "Paris, Paris. PARIS!"):
        assert why_unverified(answer, p, english_only=False).reason == NO_CLAIM
    for answer in ("Paris.", "Paris Paris", "Ada Brennan, Ada Brennan, Ada Brennan."):  # a claim, if a loop
        assert why_unverified(answer, p, english_only=False) is None
    blank = [Passage("p0", "   "), Passage("p1", "—")]
    assert why_unverified("Ada Brennan.", blank, english_only=False).reason == NO_PASSAGE_TEXT
    chinese = [Passage("p0", "瓦恩霍尔特的桥由工程师艾达·布伦南设计，建于1962年。")]
    found = why_unverified("Ada Brennan designed it.", chinese, english_only=True)
    assert found.reason == PASSAGE_LANGUAGE and found.language == "zh"
    # one English passage among them is enough to judge against
    assert why_unverified("Ada Brennan designed it.", chinese + p, english_only=True) is None


def test_long_and_odd_answers_are_decided_without_a_crash():
    p = [Passage("p0", PASSAGE)]
    assert why_unverified("The bridge was designed by Ada Brennan. " * 2_500, p, english_only=True) is None
    assert why_unverified("x" * 100_000, p, english_only=True) is None  # no language to speak of
    long_russian = "Мост спроектировала Ада Бреннан. " * 3_000
    assert why_unverified(long_russian, p, english_only=True).reason == ANSWER_LANGUAGE


def test_a_verdict_contradicting_faithful_or_unknown_is_refused():
    base = {"question": "q", "answer": "a", "score": 0.9, "threshold": 0.5, "evidence": [], "method": "m"}
    base.update(supporting_passage=None, judge="j", timings={})
    with pytest.raises(ValueError, match="contradicts"):
        VerifyResult(**base, faithful=True, verdict=UNVERIFIED)
    with pytest.raises(ValueError, match="one of"):
        VerifyResult(**base, faithful=False, verdict="maybe")
    old = VerifyResult(**base, faithful=False).to_dict()
    del old["verdict"]  # a record written before verdicts existed
    assert VerifyResult.from_dict(old).verdict == "unsupported"


# ---- Python: the Verifier facade and verify_and_act ---------------------------------------------
@pytest.fixture(scope="module")
def verifier():
    from verirag import Verifier

    return Verifier()  # the shipped trained verifier: English only, no LLM


@pytest.mark.slow
def test_the_verifier_says_unverified_for_each_foreign_answer_and_keeps_the_score(verifier):
    for answer in FOREIGN_ANSWERS:
        r = verifier.verify(QUESTION, answer, [PASSAGE])
        assert r.verdict == UNVERIFIED and r.faithful is False, answer
        assert r.unverified["reason"] == ANSWER_LANGUAGE
        assert isinstance(r.score, float) and UNTRUSTED_SCORE in r.warnings  # kept, not trusted
        assert VerifyResult.from_dict(json.loads(json.dumps(r.to_dict()))).verdict == UNVERIFIED
    for answer in ENGLISH:
        r = verifier.verify(QUESTION, answer, [PASSAGE])
        assert r.verdict in ("supported", "unsupported") and r.unverified is None, answer
        assert r.faithful == (r.verdict == "supported")
    right = verifier.verify(QUESTION, "The bridge was designed by Ada Brennan.", [PASSAGE])
    assert right.verdict == "supported"  # the fixture is one the verifier judges when it can


@pytest.mark.slow
def test_no_claim_and_blank_passages_are_unverified_and_a_blank_answer_is_refused(verifier):
    from verirag.errors import InputError

    r = verifier.verify(QUESTION, "?!", [PASSAGE])
    assert r.verdict == UNVERIFIED and r.unverified["reason"] == NO_CLAIM and not r.faithful
    r = verifier.verify(QUESTION, "Ada Brennan.", ["   "])
    assert r.verdict == UNVERIFIED and r.unverified["reason"] == NO_PASSAGE_TEXT
    with pytest.raises(InputError, match="empty"):
        verifier.verify(QUESTION, "   \n ", [PASSAGE])


@pytest.mark.slow
def test_an_unverified_answer_takes_the_unsupported_action(verifier):
    r = verifier.pipeline.verify_and_act(QUESTION, "Мост спроектировал Иван Петров.", [Passage("p0", PASSAGE)])
    assert isinstance(r, AskResult)
    assert r.verdict == UNVERIFIED and r.faithful is False and r.action == "abstained"
    assert AskResult.from_dict(r.to_dict()).unverified["reason"] == ANSWER_LANGUAGE


@pytest.mark.slow
def test_a_judge_that_reads_any_language_is_not_held_to_the_language_rule():
    from verirag import Verifier

    r = Verifier("vanilla+k_precision").verify(QUESTION, "Мост спроектировал Иван Петров.", [PASSAGE])
    assert r.verdict != UNVERIFIED and r.unverified is None


# ---- HTTP ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from verirag.server import ServiceConfig, VeriragService, create_app

    app = create_app(VeriragService(ServiceConfig(preset="tiny", warm_up=False)))
    with TestClient(app) as c:
        yield c


@pytest.mark.slow
def test_http_verify_reports_unverified_and_counts_it_apart(client):
    for answer in ["Мост спроектировал Иван Петров.", "Die Brücke wurde 1962 von Johann Keller gebaut."]:
        r = client.post("/v1/verify", json={"question": QUESTION, "answer": answer, "passages": [PASSAGE]})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["verdict"] == UNVERIFIED and body["faithful"] is False
        assert body["unverified"]["reason"] == ANSWER_LANGUAGE and body["score"] is not None
    english = client.post("/v1/verify", json={"question": QUESTION, "answer": "In 1962.", "passages": [PASSAGE]})
    assert english.json()["verdict"] in ("supported", "unsupported") and english.json()["unverified"] is None
    other_script = client.post(
        "/v1/verify", json={"question": QUESTION, "answer": "Ada Brennan.", "passages": ["艾达·布伦南设计了这座桥。"]}
    ).json()
    assert other_script["verdict"] == UNVERIFIED and other_script["unverified"]["reason"] == PASSAGE_LANGUAGE
    blank = client.post("/v1/verify", json={"question": QUESTION, "answer": "  ", "passages": [PASSAGE]})
    assert blank.status_code == 422  # a blank answer is bad input, named by the schema
    huge = client.post("/v1/verify", json={"question": QUESTION, "answer": "a" * 100_000, "passages": [PASSAGE]})
    assert huge.status_code == 422 and "answer" in huge.text  # beyond the schema's limit, not a crash
    metrics = client.get("/metrics").text
    assert 'verdict="unverified"' in metrics


# ---- verirag verify LOG ------------------------------------------------------------------------------
@pytest.mark.slow
def test_verify_log_counts_unverified_apart_in_summary_and_report(tmp_path: Path, capsys):
    from verirag.cli import main

    rows = [(a, "de") for a in FOREIGN["de"]] + [(FOREIGN["ru"][1], "ru"), (FOREIGN["es"][0], "es")]
    rows += [("In 1962.", "en"), ("The bridge was designed by Ada Brennan.", "en"), ("Ada Brennan", "en")]
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            json.dumps({"user_input": QUESTION, "response": a, "retrieved_contexts": [PASSAGE], "id": f"{lang}{i}"})
            + "\n"
            for i, (a, lang) in enumerate(rows)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["verify", str(log), "--out", str(out), "--preset", "tiny", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["unverified"] == 4 and summary["unverified_reasons"] == {ANSWER_LANGUAGE: 4}
    assert summary["supported"] + summary["unsupported"] + summary["unverified"] + summary["failed"] == 7
    assert summary["supported"] >= 1 and summary["share_unverified"] == pytest.approx(4 / 7)
    assert {u["id"] for u in summary["unverified_answers"]} == {"de0", "de1", "ru2", "es3"}
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all((r["status"] == UNVERIFIED) == (r["id"][:2] != "en") for r in records)
    assert not any(r["supported"] for r in records if r["status"] == UNVERIFIED)
    report = (out / "report.html").read_text()
    assert report.count('class="badge unv"') == 4 and "not in English" in report
    assert main(["verify", str(log), "--out", str(out), "--preset", "tiny"]) == 0  # the terminal summary
    printed = capsys.readouterr().out
    assert "4 unverified: answer_language 4" in " ".join(printed.split())


@pytest.mark.slow
def test_acting_on_a_given_answer_by_abstaining_never_loads_the_llm(tmp_path):
    """verify_and_act with the abstain fallback calls no model: a missing answering model is no
    obstacle (the CI machine holds only the smallest model)."""
    from verirag import Verifier

    v = Verifier(model=str(tmp_path / "absent.gguf"))
    r = v.pipeline.verify_and_act(QUESTION, "Мост спроектировал Иван Петров.", [Passage("p0", PASSAGE)])
    assert r.action == "abstained" and r.verdict == UNVERIFIED
    assert not v.pipeline._llms  # nothing was loaded
