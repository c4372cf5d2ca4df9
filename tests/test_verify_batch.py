"""Batched verification (issue 50): many answers' (sentence, chunk) pairs scored together give each
answer the score it gets alone (within 1e-5), in input order, with bad items' errors in their place;
`verirag verify LOG` stays in log order and resumable; POST /v1/verify/batch; a 100,000-character
answer is refused in under a second on every path.

The shipped verifier (joint premises, read_top 1: what users run) is used where this checkout holds
it; the plumbing tests use it too, as the default method."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag.learned.shipped import shipped_verifier_dir

try:
    SHIPPED = shipped_verifier_dir()
except Exception:  # a checkout without the artifact: these tests need the real verifier
    SHIPPED = None
pytestmark = pytest.mark.skipif(SHIPPED is None, reason="no shipped verifier in this checkout")

TOWNS = ["Varnholt", "Ostby", "Kleve", "Marden", "Sundal", "Trelle", "Brenna", "Lofsted"]
COLOURS = ["green", "red", "blue", "yellow", "white", "black", "grey", "orange"]
FILLER = (
    "The town holds a market every week and the river runs past the old mill near the square. "
    "Its council meets in the hall beside the harbour, where fishing boats land their catch at dawn. "
)
LONG = "The bridge is old. " * 6_000  # ~110,000 characters: about 6,000 sentences if it were read


def row(i: int, sentences: int = 1) -> dict:
    """An answer of `sentences` sentences about town i, right on even i, with passages of varied length."""
    town, colour = TOWNS[i % len(TOWNS)], COLOURS[i % len(COLOURS)]
    said = colour if i % 2 == 0 else COLOURS[(i + 3) % len(COLOURS)]
    extra = [f"The market of {town} opens at dawn.", f"The river of {town} is wide."][: sentences - 1]
    return {
        "question": f"What colour is the bridge in {town}?",
        "answer": " ".join([f"The bridge in {town} is {said}.", *extra]),
        "contexts": [
            FILLER * (1 + i % 4),
            f"{FILLER}The bridge in {town} is painted {colour} every spring. The market of {town} opens at dawn.",
            f"The river of {TOWNS[(i + 1) % len(TOWNS)]} is wide. " + FILLER * (i % 3),
        ],
    }


ROWS = [row(i, 1 + i % 3) for i in range(10)]


@pytest.fixture(scope="module")
def verifier():
    from verirag import Verifier

    return Verifier()


@pytest.fixture(scope="module")
def trained():
    from verirag.awf.predictors.verifier import loaded_verifier

    return loaded_verifier(SHIPPED)


def test_support_many_equals_support_for_each_answer_in_order(trained):
    qs, ans, ps = [r["question"] for r in ROWS], [r["answer"] for r in ROWS], [r["contexts"] for r in ROWS]
    # a few of them batched in the other order too: nothing may depend on a neighbour
    many = trained.support_many(qs, ans, ps)
    backwards = trained.support_many(qs[::-1], ans[::-1], ps[::-1])[::-1]
    for got, again, q, a, p in zip(many, backwards, qs, ans, ps):
        alone = trained.support(q, a, p)
        assert abs(got.score - alone.score) < 1e-5 and abs(again.score - alone.score) < 1e-5
        assert got.best == alone.best
        assert max(abs(x - y) for x, y in zip(got.per_passage, alone.per_passage)) < 1e-5
        assert [(s.text, s.passage, s.chunk) for s in got.sentences] == [
            (s.text, s.passage, s.chunk) for s in alone.sentences
        ]
        assert max(abs(s.score - t.score) for s, t in zip(got.sentences, alone.sentences)) < 1e-5
    assert len({round(s.score, 3) for s in many}) > 2  # the scores differ: the test can tell answers apart


def test_an_unreadable_answer_gets_its_error_in_its_place(trained):
    out = trained.support_many(
        ["Q one?", "Q two?", "Q three?"], ["Yes it is.", "...", "It is."], [["It is so."], ["It is."], ["   "]]
    )
    assert not isinstance(out[0], InputError)
    assert isinstance(out[1], InputError) and "no sentence" in str(out[1])
    assert isinstance(out[2], InputError) and "no passage" in str(out[2])


def test_verify_many_equals_verify_row_by_row_with_bad_rows_in_place(verifier):
    rows = [*ROWS[:4], {"question": "Q?", "answer": "", "contexts": ["x"]}, {"nope": 1}, *ROWS[4:6]]
    many = verifier.verify_many(rows, block=3)  # blocks that split the rows
    assert len(many) == len(rows)
    for got, r in zip(many, rows):
        if r in ROWS:
            alone = verifier.verify(r["question"], r["answer"], r["contexts"])
            assert got.error is None and abs(got.score - alone.score) < 1e-5, (got, alone)
            assert got.faithful == alone.faithful and got.answer == r["answer"]
            assert got.supporting_passage.id == alone.supporting_passage.id
            assert [s.supporting_passage for s in got.sentences] == [s.supporting_passage for s in alone.sentences]
    assert many[4].score is None and "row 5" in many[4].error and "empty" in many[4].error
    assert many[5].score is None and "row 6" in many[5].error and "missing" in many[5].error


def test_a_100000_character_answer_is_refused_in_under_a_second_on_every_path(verifier):
    r = ROWS[0]
    verifier.verify(r["question"], r["answer"], r["contexts"])  # loaded: what is timed is the refusal
    t0 = time.perf_counter()
    with pytest.raises(InputError, match="characters: at most 20,000"):
        verifier.verify(r["question"], LONG, r["contexts"])
    assert time.perf_counter() - t0 < 1.0
    t0 = time.perf_counter()
    out = verifier.verify_many([{**r, "answer": LONG}, {**r, "answer": LONG + "!"}])
    assert time.perf_counter() - t0 < 1.0
    assert all(x.score is None and "at most 20,000" in x.error for x in out)
    out = verifier.verify_many([{**r, "answer": LONG}, r])  # its neighbour is scored
    assert out[0].score is None and out[1].score is not None


def test_verify_log_is_batched_in_log_order_and_resumes(tmp_path, monkeypatch):
    from verirag.answer_log import read_answer_log
    from verirag.answer_log.run import results_file, run_log
    from verirag.awf.pipeline import Pipeline

    lines = [
        json.dumps(
            {"id": f"q{i}", "user_input": r["question"], "response": r["answer"], "retrieved_contexts": r["contexts"]}
        )
        for i, r in enumerate(ROWS[:7])
    ]
    lines.insert(3, "{not json")
    log_path = tmp_path / "log.jsonl"
    log_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = read_answer_log(log_path)
    pipeline = Pipeline.from_preset("local")
    first = run_log(pipeline, log, tmp_path / "out", limit=5, block=3)
    assert first.written == 5 and [r["line"] for r in first.records] == [1, 2, 3, 4, 5]
    assert first.records[3]["status"] == "malformed"
    seen, blocks = [], []
    second = run_log(
        pipeline,
        log,
        tmp_path / "out",
        block=2,
        on_progress=lambda i, n, rec: seen.append((i, rec is None)),
        on_block=lambda n: blocks.append((n, len(seen))),
    )
    assert second.already_done == 5 and second.written == 3
    assert seen == [(i, i <= 5) for i in range(1, 9)]
    assert blocks == [(2, 5), (1, 7)]  # each block announced before its records, the done ones first
    assert [r["line"] for r in second.records] == list(range(1, 9))
    written = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [w["line"] for w in written] == list(range(1, 9))  # the file too, in log order
    assert len(results_file(tmp_path / "out").load()) == 8
    for rec, r in zip([x for x in second.records if x["status"] == "verified"], ROWS[:7]):
        alone = pipeline.verify(
            r["question"], r["answer"], [__import__("verirag").Passage(f"p{j}", t) for j, t in enumerate(r["contexts"])]
        )
        assert abs(rec["score"] - alone.score) < 1e-5


# ---- POST /v1/verify/batch ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from verirag.server import ServiceConfig, VeriragService, create_app

    app = create_app(VeriragService(ServiceConfig(preset="tiny")))
    with TestClient(app) as c:
        deadline = time.time() + 120
        while c.get("/readyz").status_code != 200:
            assert time.time() < deadline, c.get("/readyz").json()
            time.sleep(0.2)
        yield c


def _request(r: dict) -> dict:
    return {"question": r["question"], "answer": r["answer"], "passages": r["contexts"]}


def test_batch_route_answers_each_request_in_order_as_verify_does(client):
    from verirag.server.schemas import MAX_BATCH

    good = [_request(r) for r in ROWS[:3]]
    body = {
        "requests": [
            good[0],
            {**good[1], "answer": LONG},
            {**good[1], "method": "no+such"},
            {"question": "Q?"},
            good[1],
            {**good[2], "threshold": 0.99},
        ]
    }
    t0 = time.perf_counter()
    r = client.post("/v1/verify/batch", json=body)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 6
    for got, req in ((results[0], good[0]), (results[4], good[1]), (results[5], {**good[2], "threshold": 0.99})):
        one = client.post("/v1/verify", json=req).json()
        assert got["error"] is None and abs(got["score"] - one["score"]) < 1e-5
        assert (got["faithful"], got["threshold"], got["supporting_passage"]["id"]) == (
            one["faithful"],
            one["threshold"],
            one["supporting_passage"]["id"],
        )
    assert results[1]["score"] is None and "requests.1.answer" in results[1]["error"]
    assert results[1]["answer"] == ""  # an invalid request's text is not echoed back
    assert results[2]["score"] is None and "unknown method" in results[2]["error"]
    assert "requests.3.answer" in results[3]["error"] and "requests.3.passages" in results[3]["error"]
    assert time.perf_counter() - t0 < 30

    too_many = client.post("/v1/verify/batch", json={"requests": [good[0]] * (MAX_BATCH + 1)})
    assert too_many.status_code == 422
    err = too_many.json()["error"]
    assert err["fields"][0]["field"] == "body.requests" and f"at most {MAX_BATCH}" in err["fields"][0]["message"]
    assert client.post("/v1/verify/batch", json={"requests": []}).status_code == 422


def test_benchmark_builds_a_log_of_rag_answers_from_the_shared_data():
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("bench", root / "benchmarks" / "bench_verify_throughput.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    if not (bench.DATA / "lost_in_the_middle_nq").is_dir():
        pytest.skip("no shared benchmark data")
    rows = bench.build_log(bench.DATA, 40)
    assert len(rows) == 40 and {r["label"] for r in rows} == {0, 1}
    for r in rows:
        assert len(r["retrieved_contexts"]) == 5
        assert all(10 <= len(p.split()) <= 200 for p in r["retrieved_contexts"])
        supported = any(r["response"] in p for p in r["retrieved_contexts"])
        assert supported == bool(r["label"])


@pytest.mark.parametrize(
    ("method", "block"),
    [
        ("vanilla+verifier", 256),  # reads a block's answers in one batched pass
        ("vanilla+stacked(fallback=verifier)", 256),  # a given answer goes to the stack's fallback
        ("vanilla+nli", 8),  # an LLM judge reads one answer after another
        ("vanilla+llm_judge", 8),
        ("vanilla+k_precision", 8),
    ],
)
def test_a_log_run_blocks_by_whether_the_judge_shares_work_across_answers(method, block):
    from verirag.awf.verify_batch import default_block

    assert default_block(method) == block


def test_a_log_run_of_an_llm_judge_writes_a_few_answers_at_a_time(tmp_path, monkeypatch):
    """An LLM judge's log run (no block given) hands out blocks of JUDGE_BLOCK, so its results and
    its progress come every few answers, not once per 256. The judge is a stand-in: this is about
    how the run cuts the log, not about any judge."""
    import dataclasses

    from verirag.answer_log import read_answer_log
    from verirag.answer_log.run import run_log
    from verirag.awf.pipeline import Pipeline
    from verirag.awf.predictors.base import Verification
    from verirag.awf.verify_batch import JUDGE_BLOCK

    lines = [
        json.dumps({"id": f"q{i}", "user_input": "Q?", "response": f"Answer {i}.", "retrieved_contexts": ["Answer."]})
        for i in range(JUDGE_BLOCK * 2 + 3)
    ]
    (tmp_path / "log.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pipeline = Pipeline.from_preset("local")
    monkeypatch.setattr(pipeline, "config", dataclasses.replace(pipeline.config, method="vanilla+nli"))

    class OneAtATime:  # what an LLM judge is to the run: no batched pass of its own
        registry_name, name, english_only, digest = "nli", "nli", False, "stand-in"

        def verify_batch(self, items):
            return [Verification(score=0.5) for _ in items]

    monkeypatch.setattr(pipeline, "answer_verifier", lambda: OneAtATime())
    pipeline._answer_verifier = ("vanilla+nli", OneAtATime())
    blocks = []
    run = run_log(pipeline, read_answer_log(tmp_path / "log.jsonl"), tmp_path / "out", on_block=blocks.append)
    assert blocks == [JUDGE_BLOCK, JUDGE_BLOCK, 3] and run.written == len(lines)
