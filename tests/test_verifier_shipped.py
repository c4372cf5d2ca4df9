"""The shipped trained verifier (issue 27, "used everywhere a judge is used"): where it is found,
the error that names the command making it, `GEN+verifier` without verifier=DIR, the one default
method (no fallback: a missing artifact is an error naming the command), and each sentence's support in Pipeline.verify / ask, `verirag verify`
(one answer and a log's results.jsonl), /v1/verify and /v1/chat/completions.

A tiny verifier trained on a toy task stands in for the shipped one (VERIRAG_VERIFIER_DIR); the
one main ships is checked by test_the_shipped_artifact_is_small_and_loads where it is present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from verifier_artifact import FILLER, fact, rule_score

from verirag.awf.compose import build_method
from verirag.awf.defaults import DEFAULT_METHOD
from verirag.awf.pipeline import Pipeline, uses_shipped_verifier
from verirag.errors import ModelNotFoundError
from verirag.learned import shipped
from verirag.learned.shipped import MAX_SHIPPED_BYTES, VERIFIER_ENV, VERIFIER_FILES, shipped_verifier_dir
from verirag.types import JudgedSentence, Passage

Q, A, EVIDENCE = fact(205)  # an answer whose one sentence a passage states
_, A_OTHER, _ = fact(207)  # a second sentence no passage states
PASSAGES = [Passage("town", FILLER, title="Town"), Passage("colours", f"{FILLER} {EVIDENCE}", title="Colours")]


@pytest.fixture
def stand_in(tiny_verifier_dir, monkeypatch):
    """The tiny verifier as the shipped one."""
    monkeypatch.setenv(VERIFIER_ENV, str(tiny_verifier_dir))
    return tiny_verifier_dir


@pytest.fixture
def none_shipped(tmp_path, monkeypatch):
    """An installation without a shipped verifier (whatever this checkout holds)."""
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    monkeypatch.setattr(shipped, "SHIPPED_VERIFIER", tmp_path / "absent")


# ---- where the verifier is found --------------------------------------------------------------
def test_the_env_folder_is_used_and_a_missing_one_names_the_command(stand_in, tmp_path, monkeypatch):
    assert shipped_verifier_dir() == stand_in
    monkeypatch.setenv(VERIFIER_ENV, str(tmp_path))
    with pytest.raises(ModelNotFoundError, match=f"{VERIFIER_ENV}=.*verirag train verifier LABELS --out"):
        shipped_verifier_dir()


def test_without_a_shipped_verifier_the_error_names_the_command(none_shipped):
    with pytest.raises(ModelNotFoundError) as e:
        shipped_verifier_dir()
    assert "verirag train verifier LABELS --out" in str(e.value) and "verifier=DIR" in str(e.value)
    with pytest.raises(ModelNotFoundError, match="verirag train verifier"):
        build_method("vanilla+verifier", None)


def assert_shipped() -> None:
    """The shipped verifier is part of the package (package-data): its absence is a broken
    checkout or wheel, never a reason to skip."""
    missing = [f for f in VERIFIER_FILES if not (shipped.SHIPPED_VERIFIER / f).is_file()]
    assert not missing, f"{shipped.SHIPPED_VERIFIER} lacks {missing}: the shipped verifier is missing (make verifier)"


def test_the_shipped_artifact_is_small_and_loads(monkeypatch):
    """What main commits into src/verirag/learned/shipped/verifier/: the two saved files, at most
    5 MB, loading over the installed encoder. It ships in the package: missing, the test fails."""
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    assert_shipped()
    folder = shipped_verifier_dir()
    assert sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) <= MAX_SHIPPED_BYTES
    assert sorted(f.name for f in folder.iterdir() if f.is_file()) == sorted(VERIFIER_FILES)
    m = build_method("vanilla+verifier", None)
    v = m.predictor.verify(Q, A, PASSAGES)
    assert v.error is None and 0.0 <= v.score <= 1.0 and [s["text"] for s in v.sentences] == [A]


def test_the_shipped_verifier_says_where_it_started(monkeypatch):
    """It was warm-started from `warm`, the verifier shipped before it (kept in
    data/verifier/candidates/warm for the committed runs it scored), itself warm-started from v1: the
    saved lineage names each adapter by its digest, and each loads over this encoder."""
    import hashlib

    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    assert_shipped()
    v = build_method("vanilla+verifier", None).predictor.model
    candidates = Path(__file__).resolve().parents[1] / "data" / "verifier" / "candidates"
    warm, v1 = candidates / "warm", candidates / "v1"
    assert v.joint and v.train_layers == 6 and v.warm_start_ is not None
    assert v.warm_start_["adapter_sha256"] == hashlib.sha256((warm / "adapter.safetensors").read_bytes()).hexdigest()
    before = build_method(f"vanilla+verifier(verifier={warm})", None).predictor.model  # loads over this encoder
    assert before.adapter_sha256_ == v.warm_start_["adapter_sha256"] and before.joint
    assert before.warm_start_["adapter_sha256"] == hashlib.sha256((v1 / "adapter.safetensors").read_bytes()).hexdigest()


# Held-out pairs written here (invented places and people, in no benchmark): the same question and
# passages, answered once as the passages say and once with what they do not say.
HELD_OUT = [
    (
        "Who founded the village of Marrowby?",
        [
            "Marrowby is a village on the east bank of the Tessel. It was founded in 1412 by the miller Osric Vane, "
            "whose family kept its mill for three centuries.",
            "The Tessel floods most springs.",
        ],
        "Marrowby was founded by Osric Vane.",
        "Marrowby was founded by Edmund Hale.",
    ),
    (
        "What is the capital of the province of Ardel?",
        [
            "Ardel is a mountain province in the north. Its capital, Vostrin, lies at the head of the Ardel valley "
            "and is home to about 40,000 people."
        ],
        "The capital of Ardel is Vostrin.",
        "The capital of Ardel is Keldmouth.",
    ),
    (
        "How long is the Sund tunnel?",
        [
            "The Sund tunnel links the islands of Orm and Haska. Opened in 1994, it is 7.4 kilometres long "
            "and carries both road and rail traffic."
        ],
        "The Sund tunnel is 7.4 kilometres long.",
        "The Sund tunnel is 19 kilometres long.",
    ),
    (
        "Which instrument did Lidia March play?",
        [
            "Lidia March (1921-1990) was a Welsh musician. She played the cello in the Cardiff Philharmonic for "
            "thirty years and taught at its school."
        ],
        "Lidia March played the cello.",
        "Lidia March played the trumpet.",
    ),
]


@pytest.mark.parametrize("question, passages, supported, unsupported", HELD_OUT, ids=[q for q, *_ in HELD_OUT])
def test_the_shipped_artifact_scores_a_supported_answer_above_an_unsupported_one(
    question, passages, supported, unsupported, monkeypatch
):
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    assert_shipped()
    predictor = build_method("vanilla+verifier", None).predictor
    docs = [Passage(f"p{i}", text) for i, text in enumerate(passages)]
    good, bad = predictor.verify(question, supported, docs), predictor.verify(question, unsupported, docs)
    assert good.error is None and bad.error is None and good.score > bad.score, (good.score, bad.score)


# Invented two-hop facts (issue 36): the answer needs both passages, the bridge (who designed it) in
# one and the answer (where that person was born) in the other; neither supports it alone.
TWO_HOP = [
    (
        "Where was the designer of the Marrowby lighthouse born?",
        "The Marrowby lighthouse was completed in 1872 to a design by the engineer Osric Vane.",
        "Osric Vane was born in the port town of Kellhaven and trained as a shipwright there.",
        "The designer of the Marrowby lighthouse was born in Kellhaven.",
    ),
    (
        "Which river flows through the birthplace of the painter of The Grey Orchard?",
        "The Grey Orchard is an oil painting by Hedda Lorne, shown in Stockholm in 1903.",
        "Hedda Lorne grew up in Vessby, a small town on the banks of the river Tolka.",
        "The river Tolka flows through the birthplace of the painter of The Grey Orchard.",
    ),
]
UNRELATED = "The town holds a market every week and the river runs past the old mill near the square."


@pytest.mark.parametrize("question, bridge, hop, answer", TWO_HOP, ids=[q for q, *_ in TWO_HOP])
def test_the_shipped_artifact_finds_support_that_spans_two_passages(question, bridge, hop, answer, monkeypatch):
    """Both passages together score above either one beside an unrelated passage."""
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    assert_shipped()
    assert_support_spans_two_passages(build_method("vanilla+verifier", None).predictor, question, bridge, hop, answer)


def assert_support_spans_two_passages(predictor, question: str, bridge: str, hop: str, answer: str) -> None:
    """Both passages together score above either one beside an unrelated passage."""

    def score(*texts):
        r = predictor.verify(question, answer, [Passage(f"p{i}", t) for i, t in enumerate(texts)])
        assert r.error is None
        return r.score

    both, hop_only, bridge_only = score(bridge, hop), score(UNRELATED, hop), score(bridge, UNRELATED)
    assert both > hop_only and both > bridge_only, (both, hop_only, bridge_only)


def test_every_generator_composes_with_the_shipped_verifier_sharing_one_network(stand_in):
    methods = {g: build_method(f"{g}+verifier", None) for g in ("vanilla", "instructrag", "no_context")}
    scorers = {id(m.predictor.model._scorer) for m in methods.values()}
    assert len(scorers) == 1  # loaded once per process, whichever method reads it
    cheap = build_method("vanilla+verifier(read_top=1)", None)
    assert cheap.predictor.model.read_top == 1 and methods["vanilla"].predictor.model.read_top is None
    named = build_method(f"instructrag+verifier(verifier={stand_in})", None)
    assert named.predictor.model_fingerprint() == methods["instructrag"].predictor.model_fingerprint()


# ---- the one default method -------------------------------------------------------------------
def test_the_one_default_is_the_trained_verifier():
    assert DEFAULT_METHOD == "vanilla+verifier" and uses_shipped_verifier(DEFAULT_METHOD)
    assert Pipeline.from_preset("tiny").config.method == DEFAULT_METHOD


def test_without_the_artifact_the_default_is_an_error_naming_the_command(none_shipped):
    with pytest.raises(ModelNotFoundError, match="verirag train verifier"):
        Pipeline.from_preset("tiny").verify(Q, A, PASSAGES)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("vanilla+verifier", True),
        ("instructrag+verifier(read_top=2)", True),
        ("vanilla+verifier(verifier=/some/dir)", False),
        ("vanilla+nli", False),
        ("intrinsic", False),
        ("vanilla", False),
    ],
)
def test_which_methods_use_the_shipped_verifier(name, expected):
    assert uses_shipped_verifier(name) is expected


# ---- each sentence's support in the results ---------------------------------------------------
@pytest.fixture(scope="module")
def tiny_pipeline(tiny_verifier_dir):
    """The tiny preset answering with vanilla and judging with the stand-in verifier (named by
    its folder: a module-scoped pipeline outlives a test's environment)."""
    return Pipeline.from_preset("tiny", method=f"vanilla+verifier(verifier={tiny_verifier_dir})", max_answer_tokens=12)


@pytest.mark.slow  # loads the tiny preset's model (the method's generator)
def test_verify_reports_each_sentence_with_its_supporting_passage(tiny_pipeline):
    r = tiny_pipeline.verify(Q, f"{A}\n{A_OTHER}", PASSAGES)
    assert r.error is None and [s.text for s in r.sentences] == [A, A_OTHER]
    assert all(isinstance(s, JudgedSentence) and 0.0 <= s.score <= 1.0 for s in r.sentences)
    assert {s.supporting_passage for s in r.sentences} <= {"town", "colours"}
    assert r.sentences[0].supporting_passage == "colours"  # the passage that states it
    assert r.score == pytest.approx(rule_score(s.score for s in r.sentences))
    d = json.loads(json.dumps(r.to_dict()))
    assert d["sentences"][1] == {
        "text": A_OTHER,
        "score": pytest.approx(r.sentences[1].score),
        "supporting_passage": r.sentences[1].supporting_passage,
    }
    acted = tiny_pipeline.verify_and_act(Q, A, PASSAGES)
    assert [s.text for s in acted.sentences] == [A] and acted.to_dict()["sentences"][0]["text"] == A
    # a judge of the whole answer has none
    whole = Pipeline.from_preset("tiny", method="vanilla+k_precision").verify(Q, A, PASSAGES)
    assert whole.sentences is None and whole.to_dict()["sentences"] is None


@pytest.mark.slow
def test_ask_reports_the_sentences_of_the_answer_it_judged(tiny_pipeline):
    from verirag.retrieval import Index
    from verirag.retrieval.sentences import split_sentences

    p = Pipeline(tiny_pipeline.config, index=Index.build(PASSAGES, kind="bm25"))
    r = p.ask(Q)
    assert split_sentences(r.retrieved_answer), r  # the model answered with words
    assert r.error is None and [s.text for s in r.sentences] == split_sentences(r.retrieved_answer)
    assert r.score == pytest.approx(rule_score(s.score for s in r.sentences))
    assert r.to_dict()["sentences"] == [s.__dict__ for s in r.sentences]


@pytest.mark.slow
def test_verirag_verify_prints_and_records_each_sentence(stand_in, tmp_path, capsys):
    from verirag.cli import main

    (tmp_path / "colours.txt").write_text(f"{FILLER} {EVIDENCE}\n")
    args = [
        "verify",
        "--question",
        Q,
        "--answer",
        f"{A} {A_OTHER}",
        "--passages",
        str(tmp_path / "colours.txt"),
        "--preset",
        "tiny",
        "--method",
        "vanilla+verifier",
    ]
    assert main(args + ["--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [s["text"] for s in r["sentences"]] == [A, A_OTHER]
    assert {s["supporting_passage"] for s in r["sentences"]} == {"colours.txt"}
    assert main(args) == 0
    shown = capsys.readouterr().out
    assert A_OTHER in shown and ("unsupported" in shown or r["faithful"])
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            json.dumps({"user_input": Q, "response": a, "retrieved_contexts": [f"{FILLER} {EVIDENCE}"]}) + "\n"
            for a in (A, f"{A} {A_OTHER}")
        )
    )
    assert (
        main(["verify", str(log), "--out", str(tmp_path / "out"), "--preset", "tiny", "--method", "vanilla+verifier"])
        == 0
    )
    rows = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [[s["text"] for s in row["sentences"]] for row in rows] == [[A], [A, A_OTHER]]
    assert all(set(s) == {"text", "score", "supporting_passage"} for row in rows for s in row["sentences"])


@pytest.mark.slow
def test_verify_without_a_method_and_without_the_artifact_says_what_makes_it(none_shipped, tmp_path, capsys):
    from verirag.cli import main

    (tmp_path / "colours.txt").write_text(f"{FILLER} {EVIDENCE}\n")
    argv = ["verify", "--question", Q, "--answer", A, "--passages", str(tmp_path / "colours.txt"), "--preset", "tiny"]
    assert main([*argv, "--json"]) != 0
    captured = capsys.readouterr()
    # no substitute verdict; the console wraps long lines
    assert captured.out == "" and "verirag train verifier" in " ".join(captured.err.split())


# ---- the service ------------------------------------------------------------------------------
def served(**config):
    from fastapi.testclient import TestClient

    from verirag.server import ServiceConfig, VeriragService, create_app

    return TestClient(create_app(VeriragService(ServiceConfig(preset="tiny", warm_up=False, **config))))


def documented(client, body: dict, model: str) -> None:
    """`body` is valid by the service's /openapi.json schema of `model` (what schemathesis holds
    every response to in test_server_contract, here with sentences that are not null)."""
    jsonschema = pytest.importorskip("jsonschema")
    spec = client.get("/openapi.json").json()
    jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{model}", "components": spec["components"]}
    ).validate(body)


@pytest.mark.slow
def test_v1_verify_defaults_to_the_shipped_verifier_with_sentences(stand_in):
    body = {
        "question": Q,
        "answer": f"{A} {A_OTHER}",
        "passages": [{"id": p.id, "title": p.title, "text": p.text} for p in PASSAGES],
    }
    with served() as client:
        assert client.get("/v1/methods").json()["verify_default"] == DEFAULT_METHOD
        r = client.post("/v1/verify", json=body)
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["method"] == DEFAULT_METHOD and out["warnings"] == []
        assert [s["text"] for s in out["sentences"]] == [A, A_OTHER]
        assert out["score"] == pytest.approx(rule_score(s["score"] for s in out["sentences"]))
        documented(client, out, "VerifyResult")
        with pytest.raises(Exception, match=r"On instance\['sentences'\]"):  # the check can fail
            documented(client, {**out, "sentences": [{"text": A, "score": 0.5}]}, "VerifyResult")
        nli = client.post("/v1/verify", json={**body, "method": "vanilla+k_precision"}).json()
        assert nli["sentences"] is None


def test_a_service_without_the_artifact_refuses_to_start_and_names_the_command(none_shipped):
    from verirag.server import ServiceConfig, VeriragService

    with pytest.raises(ModelNotFoundError, match="verirag train verifier"):
        VeriragService(ServiceConfig(preset="tiny", warm_up=False))  # the default verify method needs it


def test_a_service_told_to_verify_with_the_missing_verifier_refuses_to_start(none_shipped):
    from verirag.server import ServiceConfig, VeriragService

    with pytest.raises(ModelNotFoundError, match="verirag train verifier"):
        VeriragService(ServiceConfig(preset="tiny", warm_up=False, verify_method="vanilla+verifier"))


@pytest.mark.slow
def test_chat_completions_carry_the_sentences_in_the_verirag_block(stand_in, tmp_path):
    from verirag.retrieval import Index
    from verirag.retrieval.sentences import split_sentences

    Index.build(PASSAGES, kind="bm25").save(tmp_path / "index")
    with served(index=tmp_path / "index", overrides={"method": "vanilla+verifier", "max_answer_tokens": 12}) as client:
        r = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": Q}]})
        assert r.status_code == 200, r.text
        block = r.json()["verirag"]
        assert block["method"] == "vanilla+verifier" and block["error"] is None
        assert [s["text"] for s in block["sentences"]] == split_sentences(block["retrieved_answer"])
        assert all(set(s) == {"text", "score", "supporting_passage"} for s in block["sentences"])
        documented(client, block, "AskResult")
