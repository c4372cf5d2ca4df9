"""The web page marks the unsupported sentences of an answer (issue 27): a real headless Chromium
(as test_server_browser) against a real `verirag serve` whose methods judge with a tiny trained
verifier standing in for the shipped one (VERIRAG_VERIFIER_DIR). The service's own sentence scores
set the threshold, so what is checked is the page: which sentence it marks, the score beside it,
the passage on hover and on click. Skipped cleanly where no browser is installed."""

from __future__ import annotations

import httpx
import pytest
from server_process import start_server
from test_server_browser import browser, wait_for  # noqa: F401 - the browser fixture, shared
from verifier_artifact import FILLER, fact

pytestmark = pytest.mark.slow

QUESTION, SUPPORTED, EVIDENCE = fact(205)
_, OTHER, _ = fact(207)
PASSAGES = [f"{FILLER} {EVIDENCE}", "The cup of Boris was sold last year."]
ANSWER = f"{SUPPORTED} {OTHER}"


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_verifier_dir):
    """/v1/ask answers with vanilla+verifier and /v1/verify verifies with it, over an index of two
    short passages (a short prompt: the tiny model answers in seconds)."""
    from verirag.retrieval import Index
    from verirag.types import Passage

    tmp = tmp_path_factory.mktemp("browser-sentences")
    Index.build([Passage(f"p{i + 1}", t) for i, t in enumerate(PASSAGES)], kind="bm25").save(tmp / "index")
    s = start_server(
        tmp,
        "--preset",
        "tiny",
        "--index",
        str(tmp / "index"),
        "--method",
        "vanilla+verifier",
        "--verify-method",
        "vanilla+verifier",
        "--max-answer-tokens",
        "12",
        "--k",
        "1",
        cache_dir=tmp / "cache",
        env={"VERIRAG_VERIFIER_DIR": str(tiny_verifier_dir)},
    )
    yield s
    s.stop()


def sentence_scores(url: str) -> list[dict]:
    r = httpx.post(
        url + "/v1/verify",
        timeout=120,
        json={
            "question": QUESTION,
            "answer": ANSWER,
            "passages": list(PASSAGES),  # p0, p1, ... by place, as the page sends them
        },
    )
    assert r.status_code == 200, r.text
    return r.json()["sentences"]


def test_verify_tab_marks_the_unsupported_sentence_and_shows_its_passage(server, browser):
    from selenium.webdriver.common.by import By

    judged = sentence_scores(server.url)
    scores = [s["score"] for s in judged]
    assert [s["text"] for s in judged] == [SUPPORTED, OTHER] and scores[0] != scores[1]
    weakest = scores.index(min(scores))
    passage_id = judged[weakest]["supporting_passage"]

    browser.get(server.url + "/")
    browser.find_element(By.ID, "tab-verify").click()
    browser.find_element(By.ID, "verify-question").send_keys(QUESTION)
    browser.find_element(By.ID, "verify-answer").send_keys(ANSWER)
    browser.find_element(By.ID, "verify-passages").send_keys("\n\n".join(PASSAGES))
    browser.find_element(By.ID, "verify-threshold").send_keys(f"{sum(scores) / 2:.6f}")  # between the two
    browser.find_element(By.ID, "verify-submit").click()
    assert wait_for(browser, "#verdict").text == "not supported"
    sentences = browser.find_elements(By.CSS_SELECTOR, "#answer .sentence")
    assert [s.get_attribute("data-index") for s in sentences] == ["0", "1"]
    assert sentences[0].text.startswith(SUPPORTED) and sentences[1].text.startswith(OTHER)
    marked = browser.find_elements(By.CSS_SELECTOR, "#answer .sentence.unsupported")
    assert [m.get_attribute("data-index") for m in marked] == [str(weakest)]
    assert marked[0].text.endswith(f"{scores[weakest]:.2f}")  # its score, beside it
    assert marked[0].get_attribute("data-passage") == passage_id
    assert f"passage {passage_id}: " in marked[0].get_attribute("title")  # on hover
    assert "1 of 2 sentences below the threshold" in browser.find_element(By.ID, "sentence-summary").text
    assert not browser.find_element(By.ID, "sentence-detail").is_displayed()
    marked[0].click()
    detail = browser.find_element(By.ID, "sentence-detail")
    assert detail.is_displayed() and detail.text.startswith("not supported") and passage_id in detail.text
    assert (
        browser.find_element(By.ID, "sentence-passage").text == PASSAGES[int(passage_id[1:])]
    )  # p0, p1, ... by place (verirag.contexts)
    focused = browser.find_elements(By.CSS_SELECTOR, "#evidence .passage.focused")
    assert [p.get_attribute("data-id") for p in focused] == [passage_id]

    # a threshold below both scores: the answer is supported and no sentence is marked
    browser.find_element(By.ID, "verify-threshold").clear()
    browser.find_element(By.ID, "verify-threshold").send_keys("0")
    browser.find_element(By.ID, "verify-submit").click()
    assert wait_for(browser, "#verdict").text == "supported"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#answer .sentence")) == 2
    assert browser.find_elements(By.CSS_SELECTOR, "#answer .sentence.unsupported") == []


def test_ask_tab_marks_the_sentences_of_the_answer_that_was_judged(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    browser.find_element(By.ID, "ask-question").send_keys(QUESTION)
    browser.find_element(By.ID, "ask-threshold").send_keys("1")  # no score reaches 1: the action abstains
    browser.find_element(By.ID, "ask-submit").click()
    wait_for(browser, "#verdict")
    assert browser.find_element(By.ID, "action").text == "abstained"
    # the abstention shown is not what was judged: the retrieved answer below it carries the marks
    assert browser.find_elements(By.CSS_SELECTOR, "#answer .sentence") == []
    judged = browser.find_elements(By.CSS_SELECTOR, "#retrieved-answer .sentence")
    assert judged and all("unsupported" in s.get_attribute("class") for s in judged)
    assert {s.get_attribute("data-passage") for s in judged} <= {"p0", "p1"}
