"""The `paraphrase` label recipe (issue 36): a supported answer in other words than its passage, the
same answer with its gold answer swapped or a negation added, and the rewrites it refuses to call
supported (a copy, a lost answer, an invented name). The model is scripted: the test is about what
the recipe makes of a rewrite, on the made-up data of test_verifier_labels."""

from __future__ import annotations

from doubles import ScriptedLLM
from test_verifier_labels import write_data

from verirag_lab.train.verifier_labels import label_verifier, read_records, resolve
from verirag_lab.train.verifier_labels.paraphrase import first_line

REWRITES = {  # by a word of the question
    "tallbridge": "The engineer Mara Quill was the designer of the tower.",
    "orrin canal": "It was opened in 1902 after eleven years of work led by Tobias Fenn.",  # a copy
    "kelby viaduct": "Oskar Lind built the Kelby Viaduct with fourteen arches.",  # a name no passage has
    "harbour at dawn": "It is an oil painting finished in 1911.",  # the gold answer lost
    "harwick": 'Here is my sentence:\n"The river Dell reaches the sea at the port town of Harwick."',
    "wexmoor museum": "Edda Morn established the Wexmoor Museum in 1923.",
}


def rewriter() -> ScriptedLLM:
    def reply(prompt) -> str:
        question = prompt[-1]["content"].split("\n", 1)[0].lower()
        return next((r for k, r in REWRITES.items() if k in question), "I don't know.")

    return ScriptedLLM(reply, name="scripted", fingerprint="5c" * 32)


def test_paraphrases_and_their_wrong_twins(tmp_path):
    data = write_data(tmp_path / "data")
    llm = rewriter()
    out = tmp_path / "labels.jsonl"
    label_verifier(
        out,
        data_root=data,
        datasets=["nq"],
        n=None,
        recipes=["paraphrase"],
        models=["scripted"],
        llm_loader=lambda m: llm,
    )
    records = {r["id"].split("/")[2] + "/" + r["id"].split("/")[3].split(".", 1)[1]: r for r in read_records(out)}
    skips = {k: r["skip"] for k, r in records.items() if "skip" in r}
    made = [k for k, r in records.items() if "skip" not in r]
    examples = dict(zip(made, resolve([records[k] for k in made], data)))
    # one request per question, shared by its three variants
    assert len([r for r in llm.requests if r.op == "generate"]) == 6
    # the lighthouse: supported in other words; the answer swapped and the negation added are not
    assert examples["0/paraphrase"].label == 1
    assert examples["0/paraphrase"].answer == REWRITES["tallbridge"]
    swapped = examples["0/paraphrase-swapped"]
    assert (
        swapped.label == 0 and "Mara Quill" not in swapped.answer and swapped.answer.endswith("designer of the tower.")
    )
    negated = examples["0/paraphrase-negated"]
    assert negated.label == 0 and negated.answer == "The engineer Mara Quill was not the designer of the tower."
    assert records["0/paraphrase"]["prompt"].startswith("paraphrase_answer@")
    assert records["0/paraphrase"]["model"] == "scripted" and records["0/paraphrase"]["temperature"] == 0.7
    # refused as supported, and then no wrong twin either
    for v in ("paraphrase", "paraphrase-swapped", "paraphrase-negated"):
        assert skips[f"1/{v}"] == "the rewrite copies its sentence"
        assert skips[f"2/{v}"] == "the rewrite names something the passages do not"
        assert skips[f"3/{v}"] == "the rewrite lost the gold answer"
    # a preamble line is not the answer
    assert examples["4/paraphrase"].answer == "The river Dell reaches the sea at the port town of Harwick."
    # nothing to negate: only that variant is skipped
    assert examples["5/paraphrase"].label == 1 and examples["5/paraphrase-swapped"].label == 0
    assert skips["5/paraphrase-negated"] == "no negation to add or remove"
    # every supported example is judged against passages that hold its gold answer
    for e in examples.values():
        if e.label == 1:
            assert any(a.lower() in " ".join(e.passages).lower() for a in ("mara quill", "river dell", "edda morn"))


def test_first_line_drops_preambles_and_quotes():
    assert first_line('Sure! Here it is:\n\n"A B C."\nMore.') == "A B C."
    assert first_line("  \n") == ""


def test_the_committed_labels_resolve_on_the_shared_data(shared_data):
    """The committed labels (qwen2.5-1.5b's rewrites, gzipped) read back against the benchmark files:
    each supported rewrite holds a gold answer, and no swapped one does."""
    import gzip
    import json
    from pathlib import Path

    from verirag_lab.train.verifier_labels.sources import holds_answer, load_sources

    path = Path(__file__).parents[1] / "data/verifier/labels/paraphrase-qwen2.5-1.5b.heldout.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    made = [r for r in records if "skip" not in r]
    assert len(made) > 200 and all(r["v"] == 2 and r["model"] == "qwen2.5-1.5b" for r in made)
    examples = resolve(made, shared_data)
    sources = load_sources(shared_data, ["nq", "hotpotqa"])
    for r, e in zip(made, examples):
        gold = sources[r["dataset"]].question(r["example"]).answers
        variant = r["meta"]["variant"]
        refs = r["answer"] if isinstance(r["answer"], str) else r["answer"]["edit"]
        assert e.label == (variant == "paraphrase") and e.passages
        assert holds_answer(e.answer, gold) == (variant != "paraphrase-swapped"), (variant, e.answer)
        if variant == "paraphrase":
            assert e.answer == refs
        elif variant == "paraphrase-negated":
            assert "not" in e.answer.split() or len(e.answer) < len(refs)
