"""The `distill` label recipe (issue 47, item 1): the pipeline's own short answers from pruned passages,
scored by nli over the evidence (and over every passage on a sample), graded against gold answers;
on the made-up data of test_verifier_labels. The scripted model checks the bookkeeping (what the
generator read, the judge's scores and failures, resuming); SmolLM2-135M runs the real path."""

from __future__ import annotations

import re

import pytest
from doubles import ScriptedLLM, yes_no
from test_verifier_labels import NQ_ROWS, write_data

from verirag.errors import BackendError
from verirag_lab.train.verifier_labels import label_verifier, read_records, resolve
from verirag_lab.train.verifier_labels.context import LabelContext
from verirag_lab.train.verifier_labels.distill import full_judged, plan
from verirag_lab.train.verifier_labels.sources import Question

SHORT = {  # the scripted model's short answers, by a word of the question
    "tallbridge": "Mara Quill",
    "orrin canal": "1902",
    "kelby viaduct": "twelve",  # wrong
    "harbour at dawn": "Ivo Brandt",
    "harwick": "the river Dell",
    "wexmoor museum": "Edda Morn",
    "gallo hall": "1850",
    "older": "the Kelby bridge",
    "veloria": "Orchard City",
}


def short_answer(prompt) -> str:
    """The answer a word of the question names; a follow-up ("who designed it?") is read with the
    conversation before it, where the entity is named."""
    content = prompt[-1]["content"]
    question = content.rsplit("Question:", 1)[-1].lower()
    if "Conversation so far:" in content:
        question = content.split("Conversation so far:", 1)[1].lower()
    return next((a for k, a in SHORT.items() if k in question), "I don't know.")


def judge_by_words(prompt):
    """Yes (0.9) when the passage holds the answer the statement names, else 0.2; a reply with neither
    Yes nor No for "Edda Morn" (a judge failure that is not an outage). `llm_judge`'s question over all
    the documents likewise, at 0.8 and 0.3."""
    user = prompt[-1]["content"]
    if "Is the answer fully supported by the documents?" in user:
        documents, _, asked = user.rpartition("Question:")
        answer = asked.split("Answer:", 1)[1].split("\n", 1)[0].strip().lower()
        return yes_no(0.8 if answer in documents.lower() else 0.3)
    premise = user.split("Passage:", 1)[1].split("Statement:", 1)[0].lower()
    answer = re.search(r'" is: (.*)', user).group(1).strip().lower()
    if answer == "edda morn":
        return {"Maybe": -0.1}
    return yes_no(0.9 if answer in premise else 0.2)


def model(**kw) -> ScriptedLLM:
    kw.setdefault("next_token", judge_by_words)
    return ScriptedLLM(short_answer, name="scripted", fingerprint="5c" * 32, **kw)


def run(tmp_path, data, llm, **kw):
    kw.setdefault("datasets", ["nq", "hotpotqa", "nomiracl"])
    return label_verifier(
        tmp_path / "labels.jsonl",
        data_root=data,
        n=None,
        recipes=["distill"],
        models=["scripted"],
        llm_loader=lambda m: llm,
        **kw,
    )


@pytest.fixture()
def data(tmp_path):
    return write_data(tmp_path / "data")


def test_answers_from_pruned_passages_judged_and_graded(tmp_path, data):
    llm = model()
    r = run(tmp_path, data, llm, judge_full_every=2)
    records = read_records(tmp_path / "labels.jsonl")
    made = [x for x in records if "skip" not in x]
    assert r.written == len(records) == r.planned and not r.failed and len(made) == len(records)
    assert {x["meta"]["condition"] for x in made} >= {"mixed", "non_relevant"}
    examples = {e.source: e for e in resolve(made, data)}
    prompts = [p for p, op in zip(llm.prompts, llm.ops) if op == "generate"]
    assert len(prompts) == len(made)  # one answer per item
    for x in made:
        e, m = examples[x["id"]], x["meta"]
        assert x["answer"] == e.answer and x["prompt"].startswith("vanilla@") and x["max_tokens"] == 96
        assert x["label"] == int(bool(m["correct"]) and m["evidence"] and not m["abstained"])
        judge, prune = m["judge"], m["prune"]
        if x["answer"] == "Edda Morn":  # the judge could not answer: kept, with the reason
            assert judge["evidence"] is None and judge.get("passages") is None
            assert "could not judge" in judge["errors"]["evidence"]
        else:
            assert 0.0 <= judge["evidence"] <= 1.0 and 0.0 <= judge.get("passages", 0.0) <= 1.0
            assert judge["read"] in ("evidence", "passages") and len(judge["digest"]) == 12
            assert judge["read"] == "passages" or judge["premise_words"] > 0
        assert 0 < prune["tokens_read"] <= prune["tokens_full"] and 1 <= prune["passages_read"] <= len(x["passages"])
        assert 0 < prune["sentences_kept"] <= prune["sentences"] and set(m["seconds"]) >= {"prune", "generate"}
        if x["dataset"] == "nomiracl":
            assert x["label"] == 0 and m["correct"] is None
        # this scripted model gives no log-probabilities: named missing, with why; K-Precision is there
        assert 0.0 <= m["signals"]["k_precision"] <= 1.0 and "logprob_mean" not in m["signals"]
        assert m["signals_missing"]["logprob_mean"] == "the backend gave no token log-probabilities for the answer"
    # 1 in 2 (seeded) also judged over every passage
    assert 0 < sum("passages" in x["meta"]["judge"] for x in made) < len(made)
    # the generator read the pruned text: some fixture sentences the pruner dropped are in no prompt
    read = "\n".join(p[-1]["content"] for p in prompts)
    sentences = [s for *_, text in NQ_ROWS for s in re.split(r"(?<=\.) ", text)]
    assert [s for s in sentences if s not in read]
    assert any(x["meta"]["prune"]["sentences_kept"] < x["meta"]["prune"]["sentences"] for x in made)
    # llm_judge asked first, right after the answer, over what the generator read (its documents
    # are the generation prompt's), on every answer
    for x in made:
        assert x["meta"]["judge"]["llm_judge"] in (0.8, 0.3) and len(x["meta"]["judge"]["llm_judge_digest"]) == 12
        assert "llm_judge" in x["meta"]["seconds"]
    after = [llm.ops[i + 1] for i, op in enumerate(llm.ops) if op == "generate"]
    asked_first = [llm.prompts[i + 1][-1]["content"] for i, op in enumerate(llm.ops) if op == "generate"]
    assert set(after) == {"next_token"} and all("fully supported by the documents" in a for a in asked_first)
    assert all(g[-1]["content"].split("Read the documents")[0] in a for g, a in zip(prompts, asked_first))
    lighthouse = next(x for x in made if x["answer"] == "Mara Quill" and x["meta"]["condition"] == "mixed")
    assert lighthouse["label"] == 1 and lighthouse["meta"]["judge"]["evidence"] == 0.9
    assert lighthouse["meta"]["judge"]["llm_judge"] == 0.8
    wrong = next(x for x in made if x["answer"] == "twelve")
    assert wrong["label"] == 0 and wrong["meta"]["correct"] is False and wrong["meta"]["judge"]["evidence"] == 0.2
    # a rerun makes nothing and asks nothing
    asked = len(llm.requests)
    again = run(tmp_path, data, llm, judge_full_every=2)
    assert again.written == 0 and again.already_done == r.planned and len(llm.requests) == asked


def test_followups_are_asked_judged_and_kept_with_their_conversation(tmp_path, data):
    """A seeded third of the NQ and HotpotQA questions also come as a follow-up: the generator and the
    judge read the conversation, the pruner the last turns with the question (as `ask` does), and the
    record keeps the rewritten question and the turns as specs that resolve back to that text."""
    llm = model()
    run(tmp_path, data, llm, datasets=["nq", "hotpotqa", "nomiracl"])
    records = read_records(tmp_path / "labels.jsonl")
    follow = [x for x in records if x.get("meta", {}).get("condition") == "followup"]
    assert follow and all(x["dataset"] in ("nq", "hotpotqa") for x in follow)
    assert all(not isinstance(x["question"], str) and x["history"] for x in follow)  # specs, not text
    examples = {e.source: e for e in resolve([x for x in records if "skip" not in x], data)}
    prompts = ["\n".join(m["content"] for m in p) for p, op in zip(llm.prompts, llm.ops) if op == "generate"]
    judged = ["\n".join(m["content"] for m in p) for p, op in zip(llm.prompts, llm.ops) if op == "next_token"]
    for x in follow:
        e, m = examples[x["id"]], x["meta"]
        plain = next(y for y in records if y["id"] == x["id"].replace(".followup/", ".mixed/"))
        assert e.history[0].startswith("User: Tell me about") and e.history[1].startswith("Agent: ")
        assert m["phrase"] in e.question and e.question != examples[plain["id"]].question
        assert any(f"Question: {e.question}" in p and e.history[0] in p for p in prompts)
        assert any(e.history[0] in p for p in judged)
        # the entity named only in the conversation: the scripted model answers from it, as it did
        # the question asked plainly, and the gold grade is the same
        assert x["answer"] == plain["answer"] and x["label"] == plain["label"] and x["passages"] == plain["passages"]
    # the other conditions are unchanged: a plain question has no question or history of its own
    assert all("history" not in x for x in records if x.get("meta", {}).get("condition") in ("mixed", "distractor"))


def test_a_judge_outage_writes_nothing_and_the_next_run_retries(tmp_path, data):
    down = model(next_token=BackendError("judge unreachable"))
    r = run(tmp_path, data, down, datasets=["nq"])
    assert r.written == 0 and r.failed and all("judge unreachable" in f for f in r.failed)
    assert not (tmp_path / "labels.jsonl").exists() or not read_records(tmp_path / "labels.jsonl")
    r = run(tmp_path, data, model(), datasets=["nq"])
    assert r.written == r.planned == len(read_records(tmp_path / "labels.jsonl")) > 0


def test_the_full_passage_sample_is_seeded_and_can_be_off():
    ctx = LabelContext({}, judge_full_every=3)
    q = Question("nq", "7", "q", ("a",), ("7",))
    drawn = [full_judged(ctx, Question("nq", str(i), "q", ("a",), ("x",)), "m", "mixed") for i in range(300)]
    assert 60 < sum(drawn) < 140 and drawn == [
        full_judged(ctx, Question("nq", str(i), "q", ("a",), ("x",)), "m", "mixed") for i in range(300)
    ]
    assert not full_judged(LabelContext({}, judge_full_every=0), q, "m", "mixed")
    assert full_judged(LabelContext({}, judge_full_every=1), q, "m", "mixed")


def test_datasets_without_gold_answers_are_a_skip_line():
    ctx = LabelContext({}, models=["m"])
    doc = Question("docs", "pkg:README#3", "What does the pkg documentation say in README?", (), ("pkg:README#3",))
    (item,) = plan(doc, ctx)
    assert item.make()["skip"].startswith("no gold answers")


@pytest.mark.slow
def test_distill_with_the_smallest_real_model(tmp_path, data, smollm_path):
    """SmolLM2-135M answers, and judges, one NQ and one HotpotQA question for real, the NQ one also as
    a follow-up (kept small: each answer is pruned, generated and judged twice, about half a minute
    on a busy machine)."""
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(smollm_path, model_id="smollm2-135m", n_ctx=2048, n_threads=1)

    def run():
        return label_verifier(
            tmp_path / "labels.jsonl",
            data_root=data,
            datasets=["nq", "hotpotqa"],
            n=1,
            recipes=["distill"],
            models=["smollm2-135m"],
            llm_loader=lambda m: llm,
            judge_full_every=2,
        )

    try:
        r = run()
        records = read_records(tmp_path / "labels.jsonl")
        assert r.written == r.planned == len(records) >= 2 and not r.failed
        for x in records:
            if "skip" in x:
                assert x["skip"] == "the model returned an empty answer", x
                continue
            m = x["meta"]
            assert x["answer"].strip() and x["model"] == "smollm2-135m" and x["fingerprint"] == llm.fingerprint[:16]
            assert m["correct"] in (True, False) and x["label"] in (0, 1)
            assert m["judge"]["evidence"] is not None and 0.0 <= m["judge"]["evidence"] <= 1.0, m["judge"]
            assert "passages" not in m["judge"] or 0.0 <= m["judge"]["passages"] <= 1.0
            assert 0 < m["prune"]["tokens_read"] <= m["prune"]["tokens_full"]
            # llama.cpp gives the reply's token log-probabilities: a stack can be trained on them
            sig = m["signals"]
            assert sig["logprob_min"] <= sig["logprob_mean"] <= 0.0 and sig["logprob_sum"] <= sig["logprob_mean"]
            assert 0.0 <= sig["k_precision"] <= 1.0 and "signals_missing" not in m
            # a follow-up keeps its conversation as specs (the seeded plan gives this fixture one)
            assert (m["condition"] == "followup") == ("history" in x)
        assert any(".followup/" in x["id"] for x in records)
        again = run()
        assert again.written == 0 and again.already_done == r.planned
    finally:
        llm.close()


def test_llm_judge_is_added_to_answers_made_before_it_over_what_the_generator_read(tmp_path, data):
    """`verirag label llm-judge`: answers recorded without llm_judge get the score the recipe would have
    given them (the same judge over the passages the generator read, rebuilt by the pruner and checked
    by the tokens it kept); what cannot be rebuilt is counted and left; a rerun asks nothing."""
    import json

    from verirag_lab.train.verifier_labels.distill_llm_judge import backfill_llm_judge

    llm = model()
    run(tmp_path, data, llm, judge_full_every=0, datasets=["nq", "hotpotqa"])
    path = tmp_path / "labels.jsonl"
    made = [x for x in read_records(path) if "skip" not in x]
    assert any(x.get("history") for x in made)  # a follow-up among them
    before = {x["id"]: x["meta"]["judge"]["llm_judge"] for x in made}
    for x in made:  # as the answers made before 2026-11-29 are
        for key in ("llm_judge", "llm_judge_digest"):
            x["meta"]["judge"].pop(key)
        x["meta"]["seconds"].pop("llm_judge")
    made[0]["meta"]["prune"]["data"] = "another-pruner"
    made[1]["meta"]["prune"]["tokens_read"] += 1
    path.write_text("".join(json.dumps(x) + "\n" for x in made), encoding="utf-8")

    asked = len(llm.requests)
    done = backfill_llm_judge(path, data_root=data, llm_loader=lambda m: llm)
    assert done.todo == len(made) and done.scored == len(made) - 2
    assert done.left == {
        "made with another pruner": 1,
        "the pruner kept another number of tokens than the generator read": 1,
    }
    after = {x["id"]: x for x in read_records(path)}
    for x in made[2:]:
        judge = after[x["id"]]["meta"]["judge"]
        assert judge["llm_judge"] == before[x["id"]] and judge["llm_judge_backfilled"] is True
        assert "llm_judge" not in after[x["id"]]["meta"]["seconds"]  # not its cost after an answer
    assert all("llm_judge" not in after[x["id"]]["meta"]["judge"] for x in made[:2])
    prompts = [p[-1]["content"] for p, op in zip(llm.prompts[asked:], llm.ops[asked:]) if op == "next_token"]
    assert len(prompts) == done.scored and sum("Conversation so far:" in p for p in prompts) >= 1
    again = backfill_llm_judge(path, data_root=data, llm_loader=lambda m: llm)
    assert again.scored == 0 and again.todo == 2 and len(llm.requests) == asked + done.scored


@pytest.mark.slow
def test_the_llm_judge_command_reports_what_it_scored_and_refuses_a_missing_file(tmp_path, data):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "verirag", "label", "llm-judge", *args, "--data", str(data)],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    run(tmp_path, data, model(), datasets=["nq"])  # every answer made now carries llm_judge already
    r = cli(str(tmp_path / "labels.jsonl"))
    assert r.returncode == 0, r.stderr
    assert "0 of 0 answers without llm_judge scored" in " ".join(r.stdout.split())
    r = cli(str(tmp_path / "missing.jsonl"))
    assert r.returncode != 0 and "labels file not found" in r.stderr + r.stdout
