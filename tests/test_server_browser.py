"""The web page in a real browser: headless Chromium (Debian's chromium + chromium-driver, which
`make test` installs where it can) driven by Selenium against a real `verirag serve` subprocess.
Skipped cleanly where no browser is installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from server_process import start_server

pytestmark = pytest.mark.slow

DEMO = Path(__file__).resolve().parents[1] / "src" / "verirag" / "demo" / "corpus"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from verirag.retrieval import Index, load_corpus

    tmp = tmp_path_factory.mktemp("browser")
    Index.build(load_corpus(DEMO).passages, kind="bm25").save(tmp / "index")
    # the lexical verifier for /v1/verify: which passage supports the answer is then certain
    s = start_server(
        tmp,
        "--preset",
        "tiny",
        "--index",
        str(tmp / "index"),
        "--api-key",
        "page-token",
        "--verify-method",
        "vanilla+k_precision",
        cache_dir=tmp / "cache",
    )
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.skip("no Chromium and chromedriver on this machine (make test installs Debian's where it can)")
    webdriver = pytest.importorskip("selenium.webdriver")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not try to download a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    yield driver
    driver.quit()


def wait_for(driver, css: str, timeout: float = 180):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_ask_in_the_page_shows_answer_verdict_action_and_evidence(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    assert browser.title == "verirag"
    browser.find_element(By.CSS_SELECTOR, "#token-box summary").click()
    browser.find_element(By.ID, "token").send_keys("page-token")
    browser.find_element(By.ID, "ask-question").send_keys("Who kept the Halvorsen lighthouse?")
    browser.find_element(By.ID, "ask-k").send_keys("3")
    browser.find_element(By.ID, "ask-submit").click()
    verdict = wait_for(browser, "#verdict")
    assert verdict.text in {"supported", "not supported"}
    assert browser.find_element(By.ID, "answer").text.strip()
    assert browser.find_element(By.ID, "action").text in {"answered", "abstained"}
    float(browser.find_element(By.ID, "score").text)
    passages = browser.find_elements(By.CSS_SELECTOR, "#evidence .passage")
    assert len(passages) == 3
    assert len(browser.find_elements(By.CSS_SELECTOR, "#evidence .passage.supporting")) == 1
    # the default method's verifier (the shipped trained one) judges sentence by sentence: the answer
    # that was judged carries a mark per sentence (test_server_browser_sentences checks the marks)
    assert browser.find_elements(By.CSS_SELECTOR, "#answer .sentence, #retrieved-answer .sentence")


def test_verify_tab_highlights_the_supporting_passage_and_shows_errors(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    browser.find_element(By.CSS_SELECTOR, "#token-box summary").click()
    token = browser.find_element(By.ID, "token")
    token.clear()
    token.send_keys("page-token")
    browser.find_element(By.ID, "tab-verify").click()
    assert browser.find_element(By.ID, "panel-ask").is_displayed() is False
    browser.find_element(By.ID, "verify-question").send_keys("What is the capital of France?")
    browser.find_element(By.ID, "verify-answer").send_keys("Paris")
    browser.find_element(By.ID, "verify-passages").send_keys(
        "Berlin is the capital of Germany.\n\nParis is the capital of France.\n\nRome is in Italy."
    )
    # a threshold out of range: the service's 422 is shown, naming the field
    browser.find_element(By.ID, "verify-threshold").send_keys("2")
    browser.find_element(By.ID, "verify-submit").click()
    failure = wait_for(browser, "#failure", 60)
    assert "threshold" in failure.text
    browser.find_element(By.ID, "verify-threshold").clear()
    browser.find_element(By.ID, "verify-submit").click()
    wait_for(browser, "#verdict")
    best = browser.find_element(By.CSS_SELECTOR, "#evidence .passage.supporting")
    assert best.get_attribute("data-id") == "p1" and "Paris" in best.text
    # a passage that looks like markup is shown as text, never run
    browser.find_element(By.ID, "verify-passages").send_keys("\n\n<img src=x onerror=\"document.title='owned'\">")
    browser.find_element(By.ID, "verify-submit").click()
    wait_for(browser, "#evidence .passage[data-id='p3']")
    assert browser.title == "verirag"
    assert "<img" in browser.find_element(By.CSS_SELECTOR, "#evidence .passage[data-id='p3']").text
    # what the judge says beside its score is shown: here the number rule's note
    browser.find_element(By.ID, "verify-answer").send_keys(", which has 12 airports")
    browser.find_element(By.ID, "verify-submit").click()
    note = wait_for(browser, "#result .warning", 60)
    assert "12" in note.text and "no passage states" in note.text


def test_without_the_token_the_page_says_so(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    browser.execute_script("sessionStorage.clear()")
    browser.get(server.url + "/")
    browser.find_element(By.ID, "ask-question").send_keys("anything")
    browser.find_element(By.ID, "ask-submit").click()
    assert "bearer token" in wait_for(browser, "#failure", 60).text


@pytest.fixture(scope="module")
def server_without_index(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser-no-index")
    s = start_server(tmp, "--preset", "tiny", "--verify-method", "vanilla+k_precision", cache_dir=tmp / "cache")
    yield s
    s.stop()


def test_without_an_index_the_page_opens_on_verify_and_sends_the_history(server_without_index, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server_without_index.url + "/")
    WebDriverWait(browser, 60).until(lambda b: b.find_element(By.ID, "panel-verify").is_displayed())
    assert browser.find_element(By.ID, "tab-verify").get_attribute("aria-selected") == "true"
    assert browser.find_element(By.ID, "panel-ask").is_displayed() is False
    browser.find_element(By.ID, "tab-ask").click()  # the Ask tab says why it cannot answer here
    assert "no index" in browser.find_element(By.ID, "no-index").text
    browser.find_element(By.ID, "tab-verify").click()

    browser.find_element(By.ID, "verify-question").send_keys("When was it built?")
    browser.find_element(By.ID, "verify-answer").send_keys("The bridge was built in 1931.")
    browser.find_element(By.ID, "verify-passages").send_keys(
        "The Halvorsen bridge was built in 1931.\n\nThe ferry runs in summer."
    )
    # the history field reaches the service: a turn over its limit is the service's 422, naming the turn
    box = browser.find_element(By.ID, "verify-history")
    browser.execute_script("arguments[0].value = 'Which bridge?\\n' + 'x'.repeat(20001)", box)
    browser.find_element(By.ID, "verify-submit").click()
    assert "history" in wait_for(browser, "#failure", 60).text
    box.clear()
    box.send_keys("Tell me about the Halvorsen bridge.\nIt crosses the fjord at Varnholt.")
    browser.find_element(By.ID, "verify-submit").click()
    wait_for(browser, "#verdict")
    # the two numbers are named: the answer's score, each passage's support, and a legend for both
    assert "answer score" in browser.find_element(By.ID, "verdict").find_element(By.XPATH, "..").text
    best = browser.find_element(By.CSS_SELECTOR, "#evidence .passage.supporting")
    assert best.get_attribute("data-id") == "p0" and "passage support" in best.text
    legend = browser.find_element(By.ID, "numbers-legend").text
    assert "answer score" in legend and "passage support" in legend and "threshold" in legend


def test_with_an_index_the_page_stays_on_ask(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    # once /readyz has answered (ready, with an index) the page has nothing to switch
    browser.execute_script("window.__ready = null; fetch('/readyz').then(r => r.json()).then(j => window.__ready = j)")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 60).until(lambda b: b.execute_script("return window.__ready"))
    assert browser.execute_script("return window.__ready.index") is True
    assert browser.find_element(By.ID, "panel-ask").is_displayed()
    assert browser.find_element(By.ID, "no-index").is_displayed() is False


@pytest.fixture(scope="module")
def pruning_server(tmp_path_factory):
    from verirag.retrieval import Index, load_corpus

    tmp = tmp_path_factory.mktemp("browser-prune")
    Index.build(load_corpus(DEMO).passages, kind="bm25").save(tmp / "index")
    # a threshold few sentences pass: some are dropped whatever the question
    s = start_server(
        tmp, "--preset", "tiny", "--index", str(tmp / "index"), "--prune-threshold", "0.9", cache_dir=tmp / "cache"
    )
    yield s
    s.stop()


def test_the_page_shows_what_a_stage_dropped(pruning_server, browser):
    """With the pruner on (a stage kind, its report under the answer's `stages`), each passage is
    shown whole, the sentences the model did not read in grey, and the stage's summary above."""
    from selenium.webdriver.common.by import By

    browser.get(pruning_server.url + "/")
    browser.find_element(By.ID, "ask-question").send_keys("Who kept the Halvorsen lighthouse?")
    browser.find_element(By.ID, "ask-submit").click()
    summary = wait_for(browser, "#cut-summary").text
    assert summary.startswith("prune at 0.90") and "prompt tokens read" in summary
    dropped = browser.find_elements(By.CSS_SELECTOR, "#evidence .dropped")
    assert dropped and all("dropped by prune" in d.get_attribute("title") for d in dropped)
