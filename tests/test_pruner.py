"""The context pruner (issue 37): its labels, its windows, training end to end, the shipped one,
and the pruning stage's report."""

from __future__ import annotations

import gzip
import json

import pytest

from verirag.errors import InputError
from verirag.learned.pruner import ContextPruner, PrunerExample
from verirag.learned.pruner_inputs import passage_sentences, windows_for

ANSWERING = "The lighthouse at Cape Arrow was built in 1874 by the harbour board."
UNRELATED = "The town's bakery is known for its rye bread and its apple cakes."


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from verirag.learned.encoders import encoder_dir

    return AutoTokenizer.from_pretrained(str(encoder_dir("all-MiniLM-L6-v2")))


# ---- labels ---------------------------------------------------------------------------------------
def _write_fixture(root):
    rows = [
        {
            "question": f"when was lighthouse {i} built",
            "answers": [f"18{i:02d}"],
            "ctxs": [
                {"title": f"Lighthouse {i}", "text": f"Lighthouse {i} is white. It was built in 18{i:02d}. It is tall."}
            ],
        }
        for i in range(40)
    ]
    # a question whose gold passage does not hold its answer: no clean label, so no example at all
    rows.append(
        {
            "question": "when was the harbour light built",
            "answers": ["1777"],
            "ctxs": [{"title": "Harbour light", "text": "The harbour light is white. It was built of stone."}],
        }
    )
    (root / "lost_in_the_middle_nq").mkdir()
    with gzip.open(root / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    (root / "hotpotqa_amor_subset").mkdir()
    rec = {
        "_id": "h1",
        "question": "Which river flows through the city where the composer was born?",
        "answer": "Vltava",
        "type": "bridge",
        "level": "hard",
        "supporting_facts": [["Composer", 0], ["Prague", 1]],
        "context": [
            ["Composer", ["The composer was born in Prague.", " He wrote operas."]],
            ["Prague", ["Prague is a capital.", " The Vltava flows through Prague."]],
            ["Bakery", ["A bakery sells bread.", " It opens early."]],
        ],
    }
    (root / "hotpotqa_amor_subset" / "dev.json").write_text(json.dumps(rec) + "\n")


def test_labels_mark_the_answering_sentences_and_hold_questions_out(tmp_path):
    from verirag_lab.train.pruner_examples import NQ_HELD_OUT, held_out, hotpotqa_examples, nq_examples

    _write_fixture(tmp_path)
    train, held = nq_examples(tmp_path), nq_examples(tmp_path, held=True)
    gold = [e for e in train + held if e.source == "nq-gold"]
    assert len(gold) == 40  # every question, on exactly one side
    for e in gold:
        assert e.labels == (0, 1, 0), e  # only "It was built in 18xx." holds the answer
    assert all(held_out(e.question, NQ_HELD_OUT) for e in held)
    assert not any(held_out(e.question, NQ_HELD_OUT) for e in train)
    both = hotpotqa_examples(tmp_path) + hotpotqa_examples(tmp_path, held=True)
    by_title = {e.title: e.labels for e in both}
    assert by_title["Composer"] == (1, 0)  # supporting fact, then a hard negative of the same paragraph
    assert by_title["Prague"] == (0, 1)
    assert by_title.get("Bakery", (0, 0)) == (0, 0)  # a distractor: nothing kept


def test_retrieved_hard_negatives_come_from_training_questions_only(tmp_path):
    from verirag_lab.train.guard import TrainingGuard
    from verirag_lab.train.pruner_examples import (
        HOTPOTQA_HELD_OUT,
        NQ_HELD_OUT,
        held_out,
        hotpotqa_records,
        nq_examples,
        pruner_examples,
    )

    _write_fixture(tmp_path)
    guard = TrainingGuard(frozenset())
    examples = pruner_examples(tmp_path, retrieved=2, guard=guard)
    retrieved = [e for e in examples if e.source == "nq-retrieved"]
    assert retrieved and not any(e.source == "nq-random" for e in examples)  # in place of the random one
    assert all(not held_out(e.question, NQ_HELD_OUT) for e in retrieved)
    per_question = {}
    for e in retrieved:
        per_question[e.question] = per_question.get(e.question, 0) + 1
    assert max(per_question.values()) <= 2
    held_gold = {" ".join(e.sentences) for e in nq_examples(tmp_path, held=True) if e.source == "nq-gold"}
    held_titles = {
        t for r in hotpotqa_records(tmp_path) if held_out(r["question"], HOTPOTQA_HELD_OUT) for t, _ in r["context"]
    }
    for e in retrieved:
        assert " ".join(e.sentences) not in held_gold  # no benchmark passage is read
        assert e.title not in held_titles
        if e.title.startswith("Lighthouse"):  # another lighthouse's year: nothing answers
            assert e.title != f"Lighthouse {e.question.split()[3]}" and not any(e.labels)
    without = pruner_examples(tmp_path, guard=guard, retrieved=0)
    assert len(without) != len(examples)
    # the same questions either way: the validation split, drawn by question, does not move
    assert {e.group for e in without} == {e.group for e in examples}


def test_same_place_negatives_move_another_training_passage_to_the_questions_title(tmp_path):
    from verirag_lab.train.guard import TrainingGuard
    from verirag_lab.train.pruner_examples import (
        HOTPOTQA_HELD_OUT,
        NQ_HELD_OUT,
        held_out,
        hotpotqa_records,
        pruner_examples,
        same_place_examples,
        transplant,
    )

    assert transplant("The Vltava flows through prague.", "Prague", "Brno") == "The Vltava flows through Brno."
    assert transplant("Pragueville is far.", "Prague", "Brno") is None  # whole words only
    _write_fixture(tmp_path)
    examples = same_place_examples(tmp_path)
    nq = [e for e in examples if e.source == "nq-same-place"]
    trained = [i for i in range(40) if not held_out(f"when was lighthouse {i} built", NQ_HELD_OUT)]
    assert len(nq) == len(trained)  # every training question names its title; the held-out ones never
    for e in nq:
        asked = int(e.question.split()[3])
        assert e.title == f"Lighthouse {asked}" and e.sentences[0].endswith(f"Lighthouse {asked} is white.")
        if e.sentences[1] != "It was built of stone.":  # the harbour light's passage (a question without labels)
            year = int(e.sentences[1].removeprefix("It was built in ").rstrip(".")) - 1800
            assert year != asked and year in trained  # another training question's passage, never a held-out one
        assert len(e.labels) == len(e.sentences) and not any(e.labels)  # it names the place, answers nothing
    (h1,) = hotpotqa_records(tmp_path)
    hotpotqa = [e for e in examples if e.source == "hotpotqa-same-place"]
    # one record: its only other supporting paragraph is the donor, moved to the title the question names
    if not held_out(h1["question"], HOTPOTQA_HELD_OUT):
        assert [(e.title, e.sentences, e.labels) for e in hotpotqa] == [
            ("Composer", ("Composer is a capital.", "The Vltava flows through Composer."), (0, 0))
        ]
    else:
        assert hotpotqa == []
    guard = TrainingGuard(frozenset())
    without, with_ = pruner_examples(tmp_path, guard=guard), pruner_examples(tmp_path, guard=guard, same_place=True)
    assert len(with_) == len(without) + len(examples)
    assert {e.group for e in with_} == {e.group for e in without}  # the validation split does not move
    assert same_place_examples(tmp_path) == examples and same_place_examples(tmp_path, seed=1) != examples


# ---- windows --------------------------------------------------------------------------------------
def test_a_long_passage_is_read_to_its_end_in_windows_that_fit(tokenizer):
    text = " ".join(f"Sentence number {i} says that item {i} weighs {i * 3} grams." for i in range(500))  # ~5,000 words
    sentences = passage_sentences(text)
    windows = windows_for(tokenizer, "How much does item 499 weigh?", sentences, 256)
    assert len(windows) > 10
    assert sorted({i for w in windows for i in w.sentence_of}) == list(range(len(sentences)))
    for w in windows:
        n = len(tokenizer(w.question, w.text)["input_ids"])
        assert n <= 256
        for (s, e), i in zip(w.spans, w.sentence_of):
            assert w.text[s:e] in sentences[i]


def test_a_passage_without_a_sentence_boundary_is_read_in_pieces(tokenizer):
    text = " ".join(["word"] * 900)  # one "sentence" far longer than a window
    sentences = passage_sentences(text)
    assert len(sentences) == 1
    windows = windows_for(tokenizer, "a question", sentences, 128)
    assert len(windows) > 3 and {i for w in windows for i in w.sentence_of} == {0}
    assert sum(len(w.text.split()) for w in windows) == 900  # nothing cut off unread
    assert passage_sentences("") == [] and windows_for(tokenizer, "q", [], 128) == []


# ---- training ---------------------------------------------------------------------------------------
def _tiny_examples():
    out = []
    for i in range(24):
        town = f"Town{i}"
        sentences = (
            f"{town} has a lighthouse.",
            f"The lighthouse of {town} was built in {1800 + i}.",
            f"{town} is known for its bakery.",
        )
        out.append(PrunerExample(f"When was the lighthouse of {town} built?", town, sentences, (0, 1, 0), f"g{i}"))
    return out


@pytest.mark.slow
def test_training_end_to_end_loss_falls_and_saves_and_refuses_other_encoders(tmp_path):
    p = ContextPruner(epochs=3, train_layers=1, batch_size=4, patience=3, val_share=0.25, compress_rank=4)
    said: list[str] = []
    p.fit(_tiny_examples(), say=said.append)
    losses = [h["train_loss"] for h in p.history_]
    # a long epoch reports the windows it has trained, so a background log moves within an epoch
    assert any(m.startswith("epoch 1: trained") for m in said) and any("val AUROC" in m for m in said)
    assert losses[-1] < losses[0]
    assert 0.0 < p.threshold_ <= 1.0 and p.metrics_["passages_keeping_an_answer"] >= 0.95
    p.save(tmp_path / "pruner")
    q = ContextPruner.load(tmp_path / "pruner")
    before = p.sentence_scores("When was the lighthouse of Town3 built?", [" ".join(_tiny_examples()[3].sentences)])
    after = q.sentence_scores("When was the lighthouse of Town3 built?", [" ".join(_tiny_examples()[3].sentences)])
    assert before[0][1] == pytest.approx(after[0][1], abs=1e-4)
    with pytest.raises(InputError, match="encoder"):
        ContextPruner.load(tmp_path / "pruner", expect={"encoder": "0" * 16})
    (tmp_path / "pruner" / "adapter.safetensors").write_bytes(b"cut short")
    with pytest.raises(InputError, match="differ"):
        ContextPruner.load(tmp_path / "pruner")


def test_training_refuses_labels_of_one_kind():
    one_kind = [PrunerExample("q", "t", ("a.", "b."), (1, 1), "g")]
    with pytest.raises(InputError, match="kept and dropped"):
        ContextPruner().fit(one_kind)


# ---- the shipped pruner ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    from verirag.learned.shipped import shipped_pruner_dir

    return ContextPruner.load(shipped_pruner_dir())


@pytest.mark.slow
def test_the_shipped_pruner_keeps_the_answering_sentence_and_drops_an_unrelated_one(shipped):
    question = "When was the lighthouse at Cape Arrow built?"
    [unrelated, answering], fallback = shipped.prune(question, [UNRELATED, ANSWERING])
    assert not fallback
    assert answering.kept == [0] and unrelated.kept == []
    # inside a passage that answers, an unrelated sentence ranks below the answering one (the shipped
    # pruner does not always drop it there: a known weakness, on its model card)
    [pruned], _ = shipped.prune(question, [f"{UNRELATED} {ANSWERING} The town hall faces the market square."])
    assert pruned.sentences[1] == ANSWERING and 1 in pruned.kept
    assert pruned.scores[1] > max(pruned.scores[0], pruned.scores[2])


@pytest.mark.slow
def test_bad_input_never_empties_the_context(shipped):
    # nothing passes a threshold of 1: the best sentence of the best passage is kept, and said
    out, fallback = shipped.prune("When was the lighthouse at Cape Arrow built?", [UNRELATED, ANSWERING, ""], 1.0)
    assert fallback and [len(o.kept) for o in out] == [0, 1, 0]
    # another language, an empty passage, a passage without a boundary, a long one: scores, no crash
    german = "Wann wurde der Leuchtturm von Cape Arrow gebaut?"
    long = " ".join([ANSWERING] * 400)
    out, _ = shipped.prune(german, ["", " ".join(["wort"] * 700), long])
    assert out[0].sentences == [] and len(out[1].scores) == 1 and len(out[2].scores) == 400
    with pytest.raises(InputError, match="threshold"):
        shipped.prune("q", ["a."], 1.5)


def test_a_passage_named_by_the_question_or_by_kept_text_keeps_its_best_sentence():
    """The hop rule (`pruner.hops`): the second passage of a two-hop chain scores low against the
    question alone; named by the kept text of the first (or by the question), it keeps its best
    sentence. Titles match as whole words; a passage that kept something, or has no title, is left."""
    from verirag.learned.pruner import PrunedPassage, hops

    painting = PrunedPassage(["The Grey Orchard is an oil painting by Hedda Lorne."], [0.8], [0])
    painter = PrunedPassage(["She liked tea.", "Hedda Lorne grew up in Vessby."], [0.1, 0.3], [])
    puffins = PrunedPassage(["Puffins nest in April."], [0.35], [])
    question = "Which river flows through the birthplace of the painter of The Grey Orchard?"
    out = hops(question, [painting, painter, puffins], ["The Grey Orchard", "Hedda Lorne", "Puffin"])
    assert out[0] == painting and out[2] == puffins  # kept already; "Puffin" is not the word "Puffins"
    assert out[1].kept == [1] and out[1].hop and out[1].text == "Hedda Lorne grew up in Vessby."
    dropped = PrunedPassage(painting.sentences, painting.scores, [])
    named_by_question = hops(question, [dropped, painter], ["the grey orchard", None])
    assert named_by_question[0].kept == [0] and named_by_question[0].hop and named_by_question[1].kept == []
    assert hops("q", [painter], [""])[0].kept == []  # no title: nothing to be named by
    # chunks of one document share its title: a chunk naming its document does not pull in its siblings
    chunk = PrunedPassage(["Hedda Lorne painted The Grey Orchard."], [0.9], [0])
    sibling = PrunedPassage(["Puffins nest in April."], [0.2], [])
    assert hops("q", [chunk, sibling], ["Hedda Lorne", "Hedda Lorne"])[1].kept == []
    # a title too short to name anything ("C++" is "c" once normalised) never hops
    vitamin = PrunedPassage(["Vitamin C is found in fruit."], [0.9], [0])
    assert hops("q", [vitamin, sibling], ["Vitamins", "C++"])[1].kept == []


def test_nothing_passing_keeps_the_best_sentence_before_any_hop():
    """The fallback is decided by the threshold alone: when nothing passes, the best sentence of the
    best passage is kept and said, and a passage the question names still hops."""
    from verirag.learned.pruner import keep_sentences

    scored = [(["Hedda Lorne grew up in Vessby."], [0.3]), (["The Grey Orchard hangs in Oslo."], [0.1])]
    out, fallback = keep_sentences("Where is The Grey Orchard?", scored, 0.5, ["Hedda Lorne", "The Grey Orchard"])
    assert fallback and out[0].kept == [0] and not out[0].hop  # the best sentence anywhere
    assert out[1].kept == [0] and out[1].hop  # named by the question
    out, fallback = keep_sentences("q", scored, 0.5)
    assert fallback and [o.kept for o in out] == [[0], []]


# ---- the stage ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_stage_reports_kept_sentences_and_tokens(shipped):
    from verirag.awf.stage_kinds.prune import PruneStage
    from verirag.types import Passage, ScoredPassage

    hits = [
        ScoredPassage(Passage("a", f"{ANSWERING} It stands on the northern cliff.", "Cape Arrow"), 2.0, 0),
        ScoredPassage(Passage("b", UNRELATED, "Bakery"), 1.0, 1),
    ]
    r = PruneStage(shipped).run("When was the lighthouse at Cape Arrow built?", hits, lambda _m: None)
    assert [h.passage.id for h in r.kept] == ["a"] and r.kept[0].passage.text.startswith(ANSWERING)
    assert r.kept[0].passage.title == "Cape Arrow"  # the title stays
    info = r.info
    assert 0 in info["passages"][0]["kept"] and info["passages"][1]["kept"] == []
    assert info["passages"][1]["sentences"] == [UNRELATED]
    assert info["tokens_saved"] >= len(UNRELATED.split()) and info["tokens_read"] == len(r.kept[0].passage.text.split())
    assert set(info) == {"threshold", "fallback", "passages", "tokens_read", "tokens_saved"}
    assert info["passages"][0]["hop"] is False and info["passages"][1]["hop"] is False  # "Bakery" is named nowhere


# ---- the answer path ------------------------------------------------------------------------------
@pytest.mark.slow
def test_ask_with_and_without_pruning(smollm_path):
    from dataclasses import replace

    from verirag import demo
    from verirag.awf.pipeline import PRESETS, Pipeline

    on = Pipeline(replace(PRESETS["tiny"], prune=0.4))
    on.index(demo.corpus_path())
    off = Pipeline(replace(PRESETS["tiny"], prune=False), index=on.search_index)
    question = "Who designed the lighthouse?"
    pruned, full = on.ask(question), off.ask(question)
    assert full.stages is None  # --no-prune reads everything: every chunk whole
    assert [e.text for e in full.evidence] == [h.passage.text for h in off.retrieve(question)]
    report = pruned.to_dict()["stages"]["prune"]
    assert set(report) == {"threshold", "fallback", "passages", "tokens_read", "tokens_saved"}
    assert report["threshold"] == 0.4 and report["tokens_saved"] > 0
    for p in report["passages"]:
        assert set(p) == {"id", "title", "sentences", "kept", "hop", "scores", "tokens_read", "tokens_saved"}
        assert p["hop"] or all(s >= 0.4 for i, s in enumerate(p["scores"]) if i in p["kept"])
    read = {p["id"] for p in report["passages"] if p["kept"]}
    assert {e.id for e in pruned.evidence} == read  # a passage with nothing kept is not read
    assert pruned.usage["prompt_tokens"] < full.usage["prompt_tokens"]


def test_prune_options_are_checked():
    from verirag.awf.stage_kinds.prune import KIND, OFF, SHIPPED, PruneSetting

    cli = KIND.from_cli  # what --prune / --prune-threshold X / --no-prune give the spec
    assert cli() is None and cli(no_prune=True) == OFF and cli(prune=True) == SHIPPED
    assert cli(prune_threshold=0.3) == PruneSetting(on=True, threshold=0.3)
    with pytest.raises(InputError, match="not both"):
        cli(prune_threshold=0.3, no_prune=True)
    with pytest.raises(InputError, match=r"--prune-threshold: must be a number in \[0, 1\]"):
        cli(prune_threshold=1.5)


def test_a_command_gets_the_stage_kinds_options_as_its_settings():
    """`with_stage_options` adds every stage kind's flags to a command (typer reads them) and hands
    the command the spec fields they set: none given, none set."""
    import typer
    from typer.testing import CliRunner

    from verirag.awf.stage_kinds.prune import PruneSetting
    from verirag.cli._shared import with_stage_options

    got = []

    @with_stage_options
    def command(name: str = "x", stage_settings: dict | None = None):
        got.append((name, stage_settings))

    app = typer.Typer()
    app.command()(command)
    app.command("other")(lambda: None)  # two commands: typer then names them
    runner = CliRunner()
    assert runner.invoke(app, ["command", "--name", "y", "--prune-threshold", "0.3"]).exit_code == 0
    assert runner.invoke(app, ["command"]).exit_code == 0
    assert got == [("y", {"prune": PruneSetting(on=True, threshold=0.3)}), ("x", {})]
    assert "--no-prune" in runner.invoke(app, ["command", "--help"]).output


class _Killed(Exception):
    pass


def test_a_killed_training_resumes_from_its_checkpoint_and_ends_where_an_unbroken_one_does(tmp_path, monkeypatch):
    import verirag.learned.checkpoint as checkpoint_module

    settings = {"epochs": 2, "train_layers": 1, "batch_size": 4, "patience": 2, "val_share": 0.25, "compress_rank": 0}
    unbroken = ContextPruner(**settings).fit(_tiny_examples())

    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_SECONDS", 0.0)  # save after every step
    steps: list[str] = []

    def kill_in_epoch_2(message: str) -> None:
        if message.startswith("epoch 2: trained"):
            steps.append(message)
            if len(steps) == 2:
                raise _Killed

    folder = tmp_path / "checkpoint"
    with pytest.raises(_Killed):
        ContextPruner(**settings).fit(_tiny_examples(), say=kill_in_epoch_2, checkpoint=folder)
    assert (folder / "checkpoint.json").exists()
    # another run's checkpoint (other settings) is never resumed
    other: list[str] = []
    ContextPruner(**{**settings, "epochs": 1, "learning_rate": 5e-5}).fit(
        _tiny_examples(), say=other.append, checkpoint=tmp_path / "elsewhere"
    )
    assert not any(m.startswith("resumed") for m in other)

    said: list[str] = []
    resumed = ContextPruner(**settings).fit(_tiny_examples(), say=said.append, checkpoint=folder)
    assert any(m.startswith("resumed from") and "inside epoch 2" in m for m in said)
    assert not any(m.startswith("epoch 1:") for m in said)  # epoch 1 is not trained again
    assert [h["epoch"] for h in resumed.history_] == [1, 2]
    for a, b in zip(unbroken.history_, resumed.history_):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5)
        assert b["val_auroc"] == pytest.approx(a["val_auroc"], abs=1e-6)
    assert resumed.threshold_ == pytest.approx(unbroken.threshold_, abs=1e-5)
    assert not folder.exists()  # a finished fit leaves no checkpoint behind
