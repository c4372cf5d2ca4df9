"""One input contract for passages (issue 49, item 7; `verirag.contexts`): the same passages give
the same ids, scores and errors through Python, a log (`verirag verify LOG`), HTTP and both
integrations."""

from __future__ import annotations

import json

import pytest

from verirag.contexts import to_passages
from verirag.errors import InputError
from verirag.limits import MAX_PASSAGE_CHARS
from verirag.types import Passage

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
TEXTS = ["Berlin is the capital of Germany.", "Paris is the capital of France."]
# the same two passages given three ways: plain strings, mappings with the caller's ids, a mix
STRINGS = list(TEXTS)
MAPPINGS = [{"id": "de", "text": TEXTS[0]}, {"id": "fr", "text": TEXTS[1], "title": ""}]
MIXED = [TEXTS[0], {"page_content": TEXTS[1]}]
IDS = {"strings": ["p0", "p1"], "mappings": ["de", "fr"], "mixed": ["p0", "p1"]}
INPUTS = {"strings": STRINGS, "mappings": MAPPINGS, "mixed": MIXED}


# ---- the contract itself ------------------------------------------------------------------------
def test_ids_are_the_callers_or_their_place():
    assert [p.id for p in to_passages(STRINGS)] == ["p0", "p1"]
    assert [p.id for p in to_passages(MAPPINGS)] == ["de", "fr"]
    assert [p.id for p in to_passages([Passage("x", "t"), "u", {"content": "v", "id": 7}])] == ["x", "p1", "7"]
    assert to_passages(({"text": "t", "title": "T"},))[0].title == "T"  # a tuple is a list too


def test_an_empty_passage_is_kept_not_dropped():
    assert [(p.id, p.text) for p in to_passages(["", "t"])] == [("p0", ""), ("p1", "t")]


@pytest.mark.parametrize(
    "contexts, message",
    [
        (None, "no contexts"),
        ("one text", "given bare"),
        (Passage("a", "t"), "given bare"),
        ({"text": "t"}, "given bare"),
        ([], "no passages"),
        (["t", 3], "passage 1 is a int"),
        ([{"title": "no text"}], "passage 0 has no text"),
        ([{"text": 5}], "passage 0 has no text"),
        ([{"text": "t", "id": ["x"]}], "passage 0's id must be a string"),
        ([{"id": "a", "text": "t"}, {"id": "a", "text": "u"}], "same id 'a'"),
        (["x" * (MAX_PASSAGE_CHARS + 1)], "at most 50,000"),
        (42, "must be a list"),
    ],
)
def test_bad_passages_get_one_clear_error(contexts, message):
    with pytest.raises(InputError, match=message):
        to_passages(contexts)


# ---- the same input through every door -----------------------------------------------------------
@pytest.fixture(scope="module")
def verifier():
    from verirag import Verifier

    return Verifier()  # the shipped trained verifier: no LLM


def python_door(verifier, contexts):
    r = verifier.verify(QUESTION, ANSWER, contexts)
    return [p["id"] for p in r.to_dict()["evidence"]], r.score


def http_door(client, contexts):
    r = client.post("/v1/verify", json={"question": QUESTION, "answer": ANSWER, "passages": contexts})
    assert r.status_code == 200, r.text
    body = r.json()
    return [p["id"] for p in body["evidence"]], body["score"]


def log_door(tmp_path, contexts, name):
    from verirag.cli import main

    log, out = tmp_path / f"{name}.jsonl", tmp_path / f"out-{name}"
    log.write_text(json.dumps({"id": name, "question": QUESTION, "answer": ANSWER, "contexts": contexts}) + "\n")
    assert main(["verify", str(log), "--out", str(out), "--preset", "tiny", "--json"]) == 0
    (record,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return [p["id"] for p in record["support_scores"]], record["score"]


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from verirag.server import ServiceConfig, VeriragService, create_app

    with TestClient(create_app(VeriragService(ServiceConfig(preset="tiny", warm_up=False)))) as c:
        yield c


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(INPUTS))
def test_python_the_log_and_http_give_the_same_ids_and_scores(kind, verifier, client, tmp_path):
    contexts = INPUTS[kind]
    ids, score = python_door(verifier, contexts)
    assert ids == IDS[kind] and score is not None
    for door_ids, door_score in (http_door(client, contexts), log_door(tmp_path, contexts, kind)):
        assert door_ids == ids and door_score == pytest.approx(score, abs=1e-6)


@pytest.mark.slow
def test_the_integrations_give_the_same_ids_and_scores(verifier):
    from langchain_core.documents import Document

    from verirag.integrations.langchain import VeriragVerifier
    from verirag.integrations.llamaindex import VeriragEvaluator

    ids, score = python_door(verifier, STRINGS)
    pipe = verifier.pipeline
    llama = VeriragEvaluator(pipeline=pipe).evaluate(query=QUESTION, response=ANSWER, contexts=STRINGS)
    assert llama.score == pytest.approx(score, abs=1e-6)
    chain = VeriragVerifier(pipeline=pipe).invoke(
        {"input": QUESTION, "answer": ANSWER, "context": [Document(page_content=t) for t in STRINGS]}
    )
    assert [p["id"] for p in chain["verirag"]["evidence"]] == ids
    assert chain["score"] == pytest.approx(score, abs=1e-6)


@pytest.mark.slow
def test_an_empty_list_is_the_same_error_at_every_door(verifier, client, tmp_path):
    from verirag.integrations.llamaindex import VeriragEvaluator

    with pytest.raises(InputError, match="no passages"):
        verifier.verify(QUESTION, ANSWER, [])
    with pytest.raises(InputError, match="no passages"):
        VeriragEvaluator(pipeline=verifier.pipeline).evaluate(query=QUESTION, response=ANSWER, contexts=[])
    r = client.post("/v1/verify", json={"question": QUESTION, "answer": ANSWER, "passages": []})
    assert r.status_code == 422 and "passages" in r.text
    from verirag.cli import main

    log, out = tmp_path / "empty.jsonl", tmp_path / "out-empty"
    log.write_text(json.dumps({"id": "e", "question": QUESTION, "answer": ANSWER, "contexts": []}) + "\n")
    main(["verify", str(log), "--out", str(out), "--preset", "tiny", "--json"])
    (record,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert "no passages" in json.dumps(record)


@pytest.mark.slow
def test_an_empty_passage_is_read_alike_over_http_and_in_python(verifier, client):
    """An empty passage beside a real one is kept, not refused: the verdict rests on the other."""
    contexts = ["", TEXTS[1]]
    ids, score = python_door(verifier, contexts)
    http_ids, http_score = http_door(client, contexts)
    assert http_ids == ids and score is not None and http_score == pytest.approx(score, abs=1e-6)
