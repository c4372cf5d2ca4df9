"""The trained verifier (issue 27): sentence splitting, chunks that fit the encoder's window (the
end of a long passage is read), training on a tiny synthetic set end to end, save / load, the
encoder fingerprint, the `verifier` predictor through build_method and Pipeline.verify, and
`verirag train verifier`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from verirag.errors import InputError, NotFittedError
from verirag.learned.verifier import ADAPTER_FILE, META_FILE, TrainedVerifier
from verirag.learned.verifier_inputs import word_token_counts, words_that_fit
from verirag.retrieval.sentences import split_sentences
from verirag_lab.train.verifier import read_examples_jsonl, train_verifier
from verirag_lab.train.verifier_examples import VerifierExample

REPO = Path(__file__).resolve().parents[1]

THINGS = ["boat", "house", "kite", "lamp", "hat", "car", "bike", "door", "fence", "chair", "cup", "bag"]
NAMES = ["Anna", "Boris", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kira", "Luis"]
COLOURS = ["red", "blue", "green", "yellow", "black", "white"]
FILLER = "The town holds a market every week and the river runs past the old mill near the square."


def fact(i: int) -> tuple[str, str, str]:
    """(question, answer, the passage sentence that supports the answer) of item i."""
    thing, name, colour = THINGS[i % len(THINGS)], NAMES[(i // len(THINGS)) % len(NAMES)], COLOURS[i % len(COLOURS)]
    return (
        f"What colour is the {thing} of {name}?",
        f"The {thing} of {name} is {colour}.",
        f"The {thing} of {name} is painted {colour}.",
    )


def example(i: int, supported: bool) -> VerifierExample:
    """Supported: a passage states the answer; unsupported: the evidence was removed (the
    passages are about something else), the recipe the verifier must learn first."""
    q, a, evidence = fact(i)
    other = f"The {THINGS[(i + 3) % len(THINGS)]} of {NAMES[(i + 5) % len(NAMES)]} was sold last year."
    passages = (f"{FILLER} {evidence}", other) if supported else (FILLER, other)
    return VerifierExample(
        q, a, passages, int(supported), "evidence_removal", f"toy:{i}", source=f"toy-{i}-{supported}"
    )


def toy_examples(n: int = 40, start: int = 0) -> list[VerifierExample]:
    """n / 2 questions, each answered once with its evidence and once without (one group), so the
    answer's words alone tell nothing: the passages must be read."""
    return [example(start + i // 2, i % 2 == 0) for i in range(n)]


def toy_verifier(**settings) -> TrainedVerifier:
    """Settings that learn the toy task in three epochs over 30 examples (seconds on one core)."""
    return TrainedVerifier(
        **{"epochs": 3, "val_share": 0.25, "learning_rate": 3e-4, "head_learning_rate": 1e-2, **settings}
    )


@pytest.fixture(scope="module")
def trained():
    import torch

    torch.set_num_threads(1)
    return toy_verifier().fit(toy_examples())


# ---- sentences and chunks ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("Paris is the capital. It has 2.1 million people!", ["Paris is the capital.", "It has 2.1 million people!"]),
        (
            "Dr. Smith met J. K. Rowling in Jan. 1999. They talked.",
            ["Dr. Smith met J. K. Rowling in Jan. 1999.", "They talked."],
        ),
        ('He said "Yes." Then (quietly) he left?', ['He said "Yes."', "Then (quietly) he left?"]),
        ("It costs e.g. 5 dollars. Really", ["It costs e.g. 5 dollars.", "Really"]),
        ("First line\n- item one\n\n- item two", ["First line", "- item one", "- item two"]),
        ("Paris", ["Paris"]),
        ("Wait... What? 42 is it.", ["Wait...", "What?", "42 is it."]),
        ("  ", []),
        ("...", []),
    ],
)
def test_sentences_are_split_where_a_reader_would(text, expected):
    assert split_sentences(text) == expected


def test_every_word_lands_in_exactly_one_sentence():
    text = "A b. - C d? E f! ... G h. I. J k"
    assert " ".join(split_sentences(text)).split() == text.split()


def test_words_that_fit_is_the_largest_window_under_the_budget():
    counts = np.array([1, 3, 1, 1, 2, 1, 4, 1])

    def fits(k: int, budget: int) -> bool:
        return all(counts[i : i + k].sum() <= budget for i in range(len(counts) - k + 1))

    for budget in range(1, 16):
        w = words_that_fit(counts, budget)
        assert w >= 1 and (fits(w, budget) or w == 1)
        assert w == len(counts) or not fits(w + 1, budget)


def test_chunks_fit_the_window_and_the_end_of_a_long_passage_is_read():
    reader = TrainedVerifier(max_length=128).reader  # a small window: many chunks
    words = [f"{w}{i % 97}" for i, w in enumerate(["harbour", "übermäßig", "1,234.5", "x-ray", "co-op"] * 1000)]
    passage = " ".join(words) + " The kite of Anna is painted green."
    assert len(passage.split()) > 5000
    r = reader.read("What colour is the kite of Anna?", "The kite of Anna is green. It flies well.", [passage])
    assert len(r.claims) == 2 and len(r.chunks) > 50
    tok = reader.tokenizer
    longest = max(r.claims, key=lambda c: len(tok(c)["input_ids"]))
    for chunk in r.chunks:  # not one pair is truncated
        assert len(tok(longest, chunk)["input_ids"]) <= reader.window
    assert r.chunks[-1].endswith("The kite of Anna is painted green.")
    covered = set()
    for c in r.chunks:
        covered.update(c.split())
    assert covered == set(passage.split())
    counts = word_token_counts(tok, passage.split())
    assert counts.sum() == len(tok(passage, add_special_tokens=False, verbose=False)["input_ids"])  # counts add up


def test_a_long_sentence_is_read_in_pieces_and_a_long_question_refused():
    reader = TrainedVerifier(max_length=64).reader
    long_sentence = " ".join(f"word{i}" for i in range(80)) + "."
    sentences, claims, owner, context = reader.claims("Why?", long_sentence)
    assert sentences == [long_sentence] and len(claims) > 1 and set(owner) == {0}
    assert context == ""  # no history, nothing read before the question
    assert all(len(reader.tokenizer(c, add_special_tokens=False)["input_ids"]) <= reader.claim_budget for c in claims)
    with pytest.raises(InputError, match="question .* too long"):
        reader.claims(" ".join(["why"] * 200) + "?", "Yes.")


def test_an_encoder_is_found_by_name_where_installed(monkeypatch):
    from verirag.errors import ModelNotFoundError
    from verirag.learned.encoders import encoder_dir, encoder_fingerprint

    with pytest.raises(ModelNotFoundError, match="VERIRAG_MODEL_PATH_ALL_MPNET_BASE_V2"):
        encoder_dir("all-mpnet-base-v2")
    monkeypatch.setenv("VERIRAG_MODEL_PATH_ALL_MPNET_BASE_V2", str(encoder_dir("all-MiniLM-L6-v2")))
    assert encoder_fingerprint("all-mpnet-base-v2") == encoder_fingerprint("all-MiniLM-L6-v2")


# ---- training ---------------------------------------------------------------------------------
def test_not_fitted_before_fit():
    with pytest.raises(NotFittedError, match="TrainedVerifier is not fitted.*verirag train verifier"):
        TrainedVerifier().support("q?", "a.", ["p"])


def test_training_lowers_the_loss_and_separates_held_out_answers(trained):
    h = trained.history_
    assert h[-1]["train_loss"] < h[0]["train_loss"] and h[-1]["val_loss"] < h[0]["val_loss"]
    assert trained.n_train_ + trained.n_val_ == 40 and trained.metrics_["auroc"] > 0.5
    held = toy_examples(8, start=200)  # questions never seen in training
    p = trained.predict_proba([e.question for e in held], [e.answer for e in held], [e.passages for e in held])
    for i in range(0, 8, 2):  # each supported answer above the unsupported one beside it
        assert held[i].label == 1 and held[i + 1].label == 0 and p[i] > p[i + 1]


def test_support_reports_each_sentence_and_finds_evidence_at_the_end_of_a_long_passage(trained):
    q, a, evidence = fact(201)
    long = " ".join([FILLER] * 300)  # about 5,000 words
    found = trained.support(q, a, [f"{long} {evidence}"])
    missing = trained.support(q, a, [long])
    assert found.sentences[0].chunk.endswith(evidence) and found.score > missing.score
    trained.read_top = 2  # the evidence is among the 2 chunks closest in words: the same verdict, 2 pairs read
    try:
        assert trained.support(q, a, [f"{long} {evidence}"]).score == pytest.approx(found.score, abs=1e-6)
    finally:
        trained.read_top = None
    two = trained.support(q, f"{a} It was bought in Paris.", [FILLER, f"{FILLER} {evidence}"])
    assert [s.text for s in two.sentences] == [a, "It was bought in Paris."]
    assert two.score == pytest.approx(min(s.score for s in two.sentences))
    assert two.sentences[0].passage == 1 and two.best == 1 and two.per_passage[1] > two.per_passage[0]


def test_validation_holds_out_whole_groups():
    twins = [
        VerifierExample(e.question, e.answer, e.passages, e.label, e.recipe, f"toy:{i // 4}")
        for i, e in enumerate(toy_examples(16))
    ]
    v = toy_verifier(epochs=1, val_share=0.5)
    tr, va = v._split(twins, None)
    assert not {twins[i].group for i in tr} & {twins[i].group for i in va}
    # what an eval of the verifier's own held-out questions reads: exactly the validation groups
    assert v.validation_groups(twins) == sorted({twins[i].group for i in va})
    assert len(v.validation_groups(twins)) == 2


def test_bad_training_input_is_a_clear_error():
    with pytest.raises(InputError, match="every example has label 1"):
        TrainedVerifier().fit([example(0, True), example(2, True)])
    with pytest.raises(InputError, match="no training examples"):
        TrainedVerifier().fit([])
    with pytest.raises(InputError, match="train_layers must be between 0 and 6"):
        TrainedVerifier(train_layers=9, epochs=1).fit(toy_examples(4), val_groups=["toy:0"])
    bad = [*toy_examples(4), VerifierExample("q?", "...", ("p",), 0, "real", "toy:9", source="labels.jsonl:7")]
    with pytest.raises(InputError, match="example labels.jsonl:7: the answer has no sentence"):
        TrainedVerifier(epochs=1).fit(bad, val_groups=["toy:0"])
    with pytest.raises(InputError, match="max_length"):
        TrainedVerifier(max_length=8)


def test_save_load_gives_equal_scores_and_a_small_artifact(trained, tmp_path):
    trained.save(tmp_path / "v", command="test")
    adapter = tmp_path / "v" / ADAPTER_FILE
    assert adapter.stat().st_size <= 5_000_000 and trained.adapter_bytes_ == adapter.stat().st_size
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == [ADAPTER_FILE, META_FILE]
    back = TrainedVerifier.load(tmp_path / "v")
    held = toy_examples(6, start=300)
    args = ([e.question for e in held], [e.answer for e in held], [e.passages for e in held])
    np.testing.assert_array_equal(back.predict_proba(*args), trained.predict_proba(*args))
    assert back.fingerprints == trained.fingerprints and back.window_ == trained.window_


def test_another_encoder_is_refused(trained, tmp_path):
    trained.save(tmp_path / "v")
    with pytest.raises(InputError, match="fitted for encoder .*`verirag train verifier"):
        TrainedVerifier.load(tmp_path / "v", expect={"encoder": "another"})
    meta = tmp_path / "v" / META_FILE
    d = json.loads(meta.read_text())
    d["fingerprints"]["encoder"] = "0123456789abcdef"  # trained over other weights than those installed
    meta.write_text(json.dumps(d))
    with pytest.raises(InputError, match="installed encoder all-MiniLM-L6-v2.*fitted for encoder '0123456789abcdef'"):
        TrainedVerifier.load(tmp_path / "v")
    (tmp_path / "v" / ADAPTER_FILE).write_bytes(b"not the adapter")
    with pytest.raises(InputError, match="differ from those the verifier was saved with"):
        TrainedVerifier.load(tmp_path / "v")


# ---- the labels file and the command ----------------------------------------------------------
def write_labels(path, examples):
    with open(path, "w", encoding="utf-8") as fh:
        for e in examples:
            fh.write(
                json.dumps(
                    {
                        "question": e.question,
                        "answer": e.answer,
                        "passages": list(e.passages),
                        "label": e.label,
                        "recipe": e.recipe,
                        "group": e.group,
                        "sentence_labels": None,
                    }
                )
                + "\n"
            )
            fh.write("\n")


def test_the_labels_file_is_read_and_checked(tmp_path):
    f = tmp_path / "labels.jsonl"
    write_labels(f, toy_examples(4))
    got = list(read_examples_jsonl(f))
    assert [e.question for e in got] == [e.question for e in toy_examples(4)] and got[0].source == f"{f}:1"
    good = json.loads(f.read_text().splitlines()[0])
    for bad, msg in [
        ({**good, "label": 2}, "`label` must be"),
        ({**good, "label": True}, "`label` must be"),
        ({**good, "passages": []}, "`passages`"),
        ({**good, "group": ""}, "`group`"),
        ({**good, "sentence_labels": [1, 5]}, "sentence_labels"),
        ([1], "not a JSON object"),
    ]:
        f.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(InputError, match=f"labels.jsonl:2: .*{msg}"):
            list(read_examples_jsonl(f))
    f.write_text("{oops\n")
    with pytest.raises(InputError, match="labels.jsonl:1: not JSON"):
        list(read_examples_jsonl(f))
    with pytest.raises(InputError, match="cannot read the labels"):
        list(read_examples_jsonl(tmp_path / "absent.jsonl"))


def test_sentence_labels_train_each_sentence_and_a_mismatch_warns(tmp_path):
    exs = toy_examples(12)
    q, a, _ = fact(0)
    exs[0] = VerifierExample(
        q, f"{a} It was bought in Paris.", exs[0].passages, 0, "local_edit", exs[0].group, sentence_labels=(1, 0)
    )
    exs[2] = VerifierExample(q, a, exs[2].passages, 1, "real", exs[2].group, sentence_labels=(1, 1))  # 1 sentence
    with pytest.warns(UserWarning, match="1 examples have sentence labels that do not match"):
        v = toy_verifier(epochs=1, val_share=0.34).fit(exs)
    assert v.sentence_labels_ignored_ == 1


def test_a_question_too_long_for_the_training_window_is_left_out_and_counted():
    exs = toy_examples(12)
    long_question = "Which of these " + " ".join(f"place{i}" for i in range(40)) + " is it?"
    exs[0] = VerifierExample(long_question, exs[0].answer, exs[0].passages, 1, "real", exs[0].group)
    with pytest.warns(UserWarning, match="1 of 12 examples left out"):
        v = toy_verifier(epochs=1, val_share=0.34, max_length=64).fit(exs)
    assert v.questions_too_long_ == 1 and v.n_train_ + v.n_val_ == 11
    with pytest.raises(InputError, match="too long"):  # at inference it stays a clear error
        v.support(long_question, exs[0].answer, list(exs[0].passages))


def test_train_verifier_command(tmp_path, monkeypatch):
    from tests.test_verifier_guard import guard_data
    from verirag.cli import main

    guard_data(tmp_path, monkeypatch)  # the guard refuses to train without the evaluation data

    f = tmp_path / "labels.jsonl"
    write_labels(f, toy_examples(40))
    out = tmp_path / "out"
    assert main(["train", "verifier", str(f), "--out", str(out), "--epochs", "1", "--max-examples", "24"]) == 0
    v = TrainedVerifier.load(out)
    assert v.n_train_ + v.n_val_ == 24 and v.provenance["command"] == "verirag train verifier"
    assert not (out / "checkpoint").exists()  # a killed run's state, removed once the fit ended
    s = v.provenance["label_summary"]
    assert s["examples"] == 24 and set(s["recipes"]) == {"evidence_removal"}
    assert main(["train", "verifier", str(tmp_path / "absent.jsonl"), "--out", str(out)]) != 0


def test_train_verifier_takes_any_reader(tmp_path, monkeypatch):
    from tests.test_verifier_guard import guard_data

    guard_data(tmp_path, monkeypatch)
    seen = []

    def reader(path):
        seen.append(path)
        return iter(toy_examples(12))

    v = train_verifier(tmp_path / "records", read=reader, verifier=toy_verifier(epochs=1, val_share=0.34))
    assert seen == [tmp_path / "records"] and v.provenance["label_summary"]["groups"] == 6


def test_a_warm_start_is_refused_unless_its_whole_line_was_trained_under_the_guard(tmp_path, monkeypatch):
    """What a network learned from held-out questions stays in the weights a warm start copies, so
    `train_verifier` starts only from a verifier that records a guarded line (issue 47, item 6);
    the verifiers trained before the guard (v1, `warm`, and the shipped one, started from `warm`) do not."""
    from tests.test_verifier_guard import guard_data
    from verirag_lab.train.guard import LINEAGE_KEY, start_refusal

    guard_data(tmp_path, monkeypatch)
    first = train_verifier("x", read=lambda _: iter(toy_examples(12)), verifier=toy_verifier(epochs=1, val_share=0.34))
    assert first.provenance[LINEAGE_KEY] is True
    first.save(tmp_path / "guarded")
    meta = json.loads((tmp_path / "guarded" / "verifier.json").read_text())
    del meta["provenance"][LINEAGE_KEY]
    (tmp_path / "old").mkdir()
    for f in (tmp_path / "guarded").iterdir():
        (tmp_path / "old" / f.name).write_bytes(f.read_bytes())
    (tmp_path / "old" / "verifier.json").write_text(json.dumps(meta))

    with pytest.raises(InputError, match="refusing to start from .*before the evaluation-data guard"):
        train_verifier(
            "x",
            read=lambda _: iter(toy_examples(12)),
            verifier=toy_verifier(epochs=1, val_share=0.34, init_from=str(tmp_path / "old")),
        )
    again = train_verifier(
        "x",
        read=lambda _: iter(toy_examples(12, start=20)),
        verifier=toy_verifier(epochs=1, val_share=0.34, init_from=str(tmp_path / "guarded")),
    )
    assert again.provenance[LINEAGE_KEY] is True and again.warm_start_["path"] == str(tmp_path / "guarded")
    assert "cannot read" in start_refusal(tmp_path / "absent")
    for trained_before_the_guard in ("data/verifier/candidates/v1", "data/verifier/candidates/warm"):
        assert "before the evaluation-data guard" in start_refusal(REPO / trained_before_the_guard)
    assert start_refusal(REPO / "src/verirag/learned/shipped/verifier") is not None  # started from `warm`


# ---- the predictor ----------------------------------------------------------------------------
@pytest.mark.slow  # loads the tiny preset's model (the pipeline's generator)
def test_the_verifier_predictor_builds_and_verifies_through_the_pipeline(trained, tmp_path):
    from verirag.awf.pipeline import Pipeline
    from verirag.types import Passage

    trained.save(tmp_path / "v")
    q, a, evidence = fact(205)
    passages = [Passage("p1", FILLER, title="Town"), Passage("p2", f"{FILLER} {evidence}", title="Colours")]
    p = Pipeline.from_preset("tiny", method=f"vanilla+verifier(verifier={tmp_path / 'v'})")
    r = p.verify(q, f"{a} It was bought in Paris.", passages)
    assert r.judge == "verifier[all-MiniLM-L6-v2]" and r.error is None and 0.0 <= r.score <= 1.0
    assert r.supporting_passage.id == "p2" and r.evidence[1].support_score > r.evidence[0].support_score
    v = p.answer_verifier().verify(q, a, passages)
    assert v.sentences == [{"text": a, "score": pytest.approx(v.score), "supporting_passage": "p2"}]
    assert p.verify(q, a, passages[:1]).score < v.score  # without its evidence
    bad = p.answer_verifier().verify(q, "...", passages)
    assert bad.error and "no sentence" in bad.error


def test_a_composed_method_records_each_sentence(trained, tmp_path):
    """After any generator (here a stand-in that answers with a fixed text: the generator is not
    what is tested), the method's details hold the sentences."""
    from doubles import ScriptedLLM

    from verirag.awf.compose import build_method
    from verirag.awf.trace import Trace
    from verirag.types import Passage

    trained.save(tmp_path / "v")
    q, a, evidence = fact(206)
    m = build_method(f"instructrag+verifier(verifier={tmp_path / 'v'})", ScriptedLLM(f"{a} Nothing else."))
    out = m.run(Trace(q, [Passage("p1", FILLER), Passage("p2", f"{FILLER} {evidence}")]))
    assert out.error is None and [s["text"] for s in out.details["sentences"]] == [a, "Nothing else."]
    from verifier_artifact import rule_score

    assert out.score == pytest.approx(rule_score(s["score"] for s in out.details["sentences"]))
    assert out.score < min(s["score"] for s in out.details["sentences"])  # never above the weakest


@pytest.mark.parametrize("train_layers", [0, 1, 2])
def test_training_from_frozen_states_scores_as_the_whole_encoder(train_layers):
    """Training reads the states entering the top layers once; going on from them must give the
    logits of running the whole encoder on the pair (up to their fp16 storage)."""
    import torch

    from verirag.learned.encoders import encoder_dir
    from verirag.learned.verifier_model import frozen_states, load_scorer, logits, top_logits

    torch.manual_seed(0)
    scorer, tokenizer = load_scorer(encoder_dir("all-MiniLM-L6-v2"))
    scorer.eval()
    q, a, evidence = fact(3)
    claims = [f"{q} {a}", f"{q} It is a short claim."]
    chunks = [f"{FILLER} {evidence} {FILLER}", "A much shorter chunk."]  # two lengths: padding is dropped
    whole = logits(scorer, tokenizer, claims, chunks, 128)
    states = frozen_states(scorer, tokenizer, claims, chunks, 128, train_layers)
    assert [len(s) for s in states] == [len(m) for m in tokenizer(claims, chunks)["attention_mask"]]
    assert states[0].dtype == torch.float16 and len(states[0]) > len(states[1])
    with torch.inference_mode():
        again = top_logits(scorer, states, train_layers)
    assert torch.allclose(whole, again, atol=2e-3), (whole, again)


def test_lora_trains_every_layer_in_a_small_adapter_that_round_trips(tmp_path):
    """With lora_rank, every layer learns low-rank updates (their base weights stay the
    encoder's): the loss falls, the adapter holds only the updates and the head (far under one
    full layer's 3.5 MB), and a reloaded verifier scores as the one in memory."""
    import torch
    from safetensors.torch import load_file

    torch.set_num_threads(1)
    v = toy_verifier(train_layers=6, lora_rank=4, epochs=2).fit(toy_examples(24))
    assert v.history_[-1]["train_loss"] < v.history_[0]["train_loss"]
    assert v._trainable and all(n.startswith("head.") or ".lora_" in n for n in v._trainable)
    assert {n.split(".layer.")[1].split(".")[0] for n in v._trainable if ".layer." in n} == {str(i) for i in range(6)}
    v.save(tmp_path / "v")
    assert set(load_file(str(tmp_path / "v" / ADAPTER_FILE))) == set(v._trainable)
    assert v.adapter_bytes_ < 500_000
    back = TrainedVerifier.load(tmp_path / "v")
    assert back.lora_rank == 4 and back.train_layers == 6
    held = toy_examples(6, start=300)
    args = ([e.question for e in held], [e.answer for e in held], [e.passages for e in held])
    np.testing.assert_allclose(back.predict_proba(*args), v.predict_proba(*args), atol=1e-6)
    with pytest.raises(InputError, match="lora_rank"):
        TrainedVerifier(lora_rank=-1)


def test_compressing_a_full_fine_tuning_keeps_its_scores_in_a_small_adapter(tmp_path):
    """compress_rank: every layer is fine-tuned in full, then each linear map's update is stored
    as a truncated SVD (LoRA factors over the encoder's own weights). At full rank (384, MiniLM's
    width) nothing is lost: the compressed verifier scores as the one it was compressed from;
    at rank 8 the adapter is small and reloads to the same scores."""
    import torch

    torch.set_num_threads(1)
    held = toy_examples(6, start=300)
    args = ([e.question for e in held], [e.answer for e in held], [e.passages for e in held])
    full = toy_verifier(train_layers=6, epochs=1).fit(toy_examples(16))
    exact = toy_verifier(train_layers=6, epochs=1, compress_rank=384).fit(toy_examples(16))
    assert exact.val_auroc_before_compression_ == pytest.approx(full.history_[0]["val_auroc"])
    # the same training; only the fp16 rounding of the factors differs from the full weights'
    np.testing.assert_allclose(exact.predict_proba(*args), full.predict_proba(*args), atol=2e-3)
    small = toy_verifier(train_layers=6, epochs=1, compress_rank=8).fit(toy_examples(16))
    assert all(
        n.startswith("head.") or ".lora_" in n or n.endswith(".bias") or "LayerNorm" in n for n in small._trainable
    )
    small.save(tmp_path / "v")
    full.save(tmp_path / "f")
    assert small.adapter_bytes_ < 1_000_000 < full.adapter_bytes_
    back = TrainedVerifier.load(tmp_path / "v")
    np.testing.assert_allclose(back.predict_proba(*args), small.predict_proba(*args), atol=1e-6)
    with pytest.raises(InputError, match="cannot be combined"):
        TrainedVerifier(lora_rank=4, compress_rank=4)


def test_recipe_weights_give_each_recipe_equal_label_weight():
    from verirag.learned.verifier_trainer import recipe_weights

    w = recipe_weights(["swap"] * 3 + ["real"] * 4 + ["removal"] * 2, [1, 1, 0, 1, 0, 0, 0, 0, 0])
    assert w["swap"] == {1: 0.75, 0: 1.5} and w["real"] == {1: 2.0, 0: 4 / 6} and w["removal"] == {0: 1.0}
    for r, n in (("swap", (2, 1)), ("real", (1, 3))):  # equal halves, the recipe's total kept
        assert w[r][1] * n[0] == pytest.approx(w[r][0] * n[1]) and w[r][1] * n[0] + w[r][0] * n[1] == pytest.approx(
            sum(n)
        )


def test_balancing_weights_the_training_loss_by_recipe_and_label():
    """An unbalanced recipe: with balance the rare label's examples weigh more in the loss (the
    weights are saved with the verifier); without it every example weighs 1."""
    import torch

    torch.set_num_threads(1)
    examples = toy_examples(20)[:-4] + [e for e in toy_examples(12, start=40) if e.label == 1]
    v = toy_verifier(epochs=1).fit(examples, val_groups=["toy:0", "toy:1"])
    w = v.recipe_weights_["evidence_removal"]
    assert float(w["0"]) > 1.0 > float(w["1"])
    off = toy_verifier(epochs=1, balance=False).fit(examples, val_groups=["toy:0", "toy:1"])
    assert off.recipe_weights_ is None and off.history_[0]["train_loss"] != v.history_[0]["train_loss"]
