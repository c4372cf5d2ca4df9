"""`verirag label verifier` (issue 27, part 1): each recipe's labels on a tiny made-up data folder,
the resolve round trip, the exclusion of instruct_qa_human questions, resuming after kill -9, and
the real recipe with the smallest real model."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from doubles import ScriptedLLM

from verirag.errors import InputError
from verirag.evaluation.ground_truth import matches
from verirag.metrics.qa import substring_match
from verirag.retrieval.sentences import sentence_spans
from verirag_lab.train.verifier_labels import (
    label_verifier,
    read_records,
    resolve,
    resolve_file,
)

# A small made-up world: no benchmark text.
NQ_ROWS = [
    (
        "who designed the tallbridge lighthouse",
        ["Mara Quill"],
        "Tallbridge Lighthouse",
        "The Tallbridge Lighthouse is a stone tower on the Wexmoor coast. It was designed by the engineer "
        "Mara Quill and completed in 1887. The tower stands 31 metres tall.",
    ),
    (
        "when was the orrin canal opened",
        ["1902"],
        "Orrin Canal",
        "The Orrin Canal links the river Dell to the port of Harwick. It was opened in 1902 after eleven "
        "years of work led by Tobias Fenn.",
    ),
    (
        "how many arches does the kelby viaduct have",
        ["fourteen", "14"],
        "Kelby Viaduct",
        "The Kelby Viaduct carries the railway over the Amber valley on fourteen arches. It was built by "
        "Selma Hart in 1871.",
    ),
    (
        "who painted the harbour at dawn",
        ["Ivo Brandt"],
        "The Harbour at Dawn",
        "The Harbour at Dawn is an oil painting by Ivo Brandt, finished in 1911 and kept in a museum of the coast.",
    ),
    (
        "what river flows through harwick",
        ["river Dell", "Dell"],
        "Harwick",
        "Harwick is a port town where the river Dell meets the sea. Its harbour master in 1890 was Piet Lund.",
    ),
    (
        "who founded the wexmoor museum",
        ["Edda Morn"],
        "Wexmoor Museum",
        "The Wexmoor Museum was founded by Edda Morn in 1923 and holds paintings of the coast.",
    ),
    (
        "who wrote the song of amber valley",
        ["Luca Venn"],
        "Song of Amber Valley",
        "The Song of Amber Valley is a folk song written by Luca Venn in 1934.",
    ),
    (
        "what colour is the kelby signal box",
        ["green"],
        "Kelby signal box",
        "The Kelby signal box stands beside the viaduct and was rebuilt after a fire.",
    ),  # no answer: unusable
]
EXCLUDED_NQ = "who wrote the song of amber valley"
HOTPOT = [
    {
        "_id": "h1",
        "question": "What year was the architect of Gallo Hall born?",
        "answer": "1850",
        "gold": [
            ("Gallo Hall", ["Gallo Hall is a concert hall in Harwick.", " It was designed by Nora Vell."]),
            ("Nora Vell", ["Nora Vell (born 1850) was an architect from Dellport."]),
        ],
    },
    {
        "_id": "h2",
        "question": "Which is older, the Orrin waterway or the Kelby bridge?",
        "answer": "Kelby bridge",
        "gold": [
            ("Orrin waterway", ["The Orrin waterway opened in 1902."]),
            ("Kelby bridge", ["The Kelby bridge was completed in 1871."]),
        ],
    },
    {
        "_id": "h3",
        "question": "Who directed the film Grey Tide?",
        "answer": "Ada Roe",
        "gold": [
            ("Grey Tide", ["Grey Tide is a film about fishermen."]),
            ("Ada Roe", ["Ada Roe directed Grey Tide, her first film."]),
        ],
    },
]
HOTPOT_DISTRACTORS = [
    ("Amber Valley", ["Amber Valley is a valley with orchards and a railway."]),
    ("Piet Lund", ["Piet Lund was a sailor and harbour master."]),
    ("Dellport", ["Dellport is a village on the river Dell."]),
]
EXCLUDED_HOTPOT = "Who directed the film Grey Tide?"

# What the scripted model says, by a word of the question; long answers are two grounded sentences.
SCRIPT = {
    "tallbridge": "The Tallbridge Lighthouse was designed by Mara Quill. It was completed in 1887.",
    "orrin canal": "The Orrin Canal was opened in 1902. It links the river Dell to the port of Harwick.",
    "kelby viaduct": "The Kelby Viaduct has fourteen arches. It was built by Selma Hart in 1871.",
    "harbour at dawn": "The Harbour at Dawn was painted by Ivo Brandt. He finished it in 1911.",
    "harwick": "The river Dell flows through Harwick. Harwick is a port town.",
    "wexmoor museum": "The Wexmoor Museum was founded by Edda Morn. It was founded in 1923.",
    "gallo hall": "Gallo Hall was designed by Nora Vell. Nora Vell was born in 1850.",
    "older": "The Kelby bridge is older. The Kelby bridge was completed in 1871.",
}


def write_data(root: Path) -> Path:
    (root / "lost_in_the_middle_nq").mkdir(parents=True)
    with gzip.open(root / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz", "wt", encoding="utf-8") as f:
        for q, answers, title, text in NQ_ROWS:
            f.write(
                json.dumps(
                    {
                        "question": q,
                        "answers": answers,
                        "ctxs": [{"title": title, "text": text, "hasanswer": True, "isgold": True}],
                    }
                )
                + "\n"
            )
    (root / "hotpotqa_amor_subset").mkdir()
    with open(root / "hotpotqa_amor_subset" / "dev.json", "w", encoding="utf-8") as f:
        for h in HOTPOT:
            context = [[t, s] for t, s in h["gold"]] + [[t, s] for t, s in HOTPOT_DISTRACTORS]
            f.write(
                json.dumps(
                    {
                        "_id": h["_id"],
                        "question": h["question"],
                        "answer": h["answer"],
                        "context": context,
                        "supporting_facts": [[t, 0] for t, _ in h["gold"]],
                    }
                )
                + "\n"
            )
    folder = root / "instruct_qa_human"
    folder.mkdir()
    row = {
        "model": "m",
        "response": "r",
        "references": ["x"],
        "gold_passages": [{"title": "t", "text": "x"}],
        "human_correctness": "correct",
        "label_correct": 1,
    }
    with open(folder / "correctness_nq_corrected_396.jsonl", "w", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {**row, "dataset": "natural_questions", "id": 1, "question": "Who wrote the Song of Amber-Valley?"}
            )
            + "\n"
        )
    with open(folder / "correctness_human_eval_1200.jsonl", "w", encoding="utf-8") as f:
        f.write(
            json.dumps({**row, "dataset": "hotpot_qa", "id": 2, "question": "who directed the film  grey tide"}) + "\n"
        )
    (root / "nomiracl_en" / "non_relevant").mkdir(parents=True)
    prompt = (
        "Answer.\n\nQUESTION:\nWhat is the capital of Veloria?\n\nCONTEXTS:\n[1] Orchards: Apples grow in the "
        "valley.\n\n[2] Ferries: The ferry crosses twice a day.\n\nOUTPUT:\n"
    )
    (root / "nomiracl_en" / "non_relevant" / "en.test.jsonl").write_text(
        json.dumps({"query_id": "n1", "docids": ["d1", "d2"], "prompt": prompt}) + "\n", encoding="utf-8"
    )
    return root


def scripted(delay: float = 0.0, log: Path | None = None) -> ScriptedLLM:
    """Answers from SCRIPT (the long answer whatever the style), optionally slowly, logging each question."""

    def answer(prompt) -> str:
        question = prompt[-1]["content"].rsplit("Question:", 1)[-1].lower()
        if log:
            with open(log, "a") as f:
                f.write(question.strip() + "\n")
        return next((a for k, a in SCRIPT.items() if k in question), "I don't know.")

    return ScriptedLLM(answer, name="scripted", fingerprint="5c" * 32, delay=delay)


@pytest.fixture()
def data(tmp_path) -> Path:
    return write_data(tmp_path / "data")


def run(tmp_path, data, **kw):
    kw.setdefault("n", None)
    kw.setdefault("datasets", ["nq", "hotpotqa"])
    kw.setdefault("models", [])
    return label_verifier(tmp_path / "labels.jsonl", data_root=data, **kw)


def by_id(tmp_path) -> dict[str, dict]:
    return {r["id"]: r for r in read_records(tmp_path / "labels.jsonl")}


def test_swap_gold_is_supported_and_swapped_is_not(tmp_path, data):
    r = run(tmp_path, data, recipes=["swap"])
    examples = {e.source: e for e in resolve_file(tmp_path / "labels.jsonl", data)}
    gold = [e for s, e in examples.items() if s.split("/")[3] == "gold"]
    swapped = [e for s, e in examples.items() if s.split("/")[3] == "swapped"]
    assert len(gold) == 6 + 2 and r.summary["by_recipe"]["swap"]["supported"] == len(gold)
    assert all(e.label == 1 for e in gold) and all(e.label == 0 for e in swapped) and len(swapped) >= 6
    for e in gold:  # the unchanged gold answer, among passages that hold it
        assert any(substring_match(p, [e.answer]) for p in e.passages)
    for e in swapped:  # a different answer of the same question, which no gold answer matches
        refs = (
            next(q[1] for q in NQ_ROWS if q[0] == e.question)
            if e.group.startswith("nq:")
            else [next(h["answer"] for h in HOTPOT if h["question"] == e.question)]
        )
        assert not matches(e.answer, refs, "recall_or_substring"), e
    choice = next(e for e in swapped if e.group == "hotpotqa:h2")
    assert choice.answer == "Orrin waterway"  # a choice question: the other option


def test_evidence_sentence_gives_whole_sentences_of_either_label(tmp_path, data):
    run(tmp_path, data, recipes=["evidence_sentence"], datasets=["nq"])
    examples = {
        e.source.split("/")[2] + "/" + e.source.split("/")[3]: e for e in resolve_file(tmp_path / "labels.jsonl", data)
    }
    rows = {str(i): row for i, row in enumerate(NQ_ROWS)}
    lighthouse = rows["0"]
    evidence, swapped, other = (examples[f"0/{v}"] for v in ("evidence", "evidence-swapped", "other-sentence"))
    # the sentence that holds the gold answer, copied whole: supported
    assert evidence.label == 1 and evidence.answer == (
        "It was designed by the engineer Mara Quill and completed in 1887."
    )
    # the same sentence with the answer swapped: as long, unsupported, no gold answer left in it
    assert swapped.label == 0 and "Mara Quill" not in swapped.answer
    assert swapped.answer.startswith("It was designed by the engineer ") and swapped.answer.endswith(
        " and completed in 1887."
    )
    # another sentence of the evidence, true but no answer: unsupported
    assert other.label == 0 and other.answer in lighthouse[3] and not substring_match(other.answer, lighthouse[1])
    assert all(len(e.answer.split()) >= 6 for e in examples.values())
    # a passage whose every usable sentence holds the answer has no other-sentence item
    assert "5/other-sentence" not in examples and examples["5/evidence"].label == 1
    summary = json.loads((tmp_path / "labels.summary.json").read_text())
    assert summary["by_recipe"]["evidence_sentence"]["supported"] == sum(e.label for e in examples.values())


def test_evidence_removal_is_unsupported(tmp_path, data):
    run(tmp_path, data, recipes=["evidence_removal"])
    examples = resolve_file(tmp_path / "labels.jsonl", data)
    assert examples and all(e.label == 0 for e in examples)
    nq = [e for e in examples if e.group.startswith("nq:")]
    assert len(nq) == 6 and not any(substring_match(p, [e.answer]) for e in nq for p in e.passages)
    hotpot = [e for e in examples if e.group == "hotpotqa:h1"]
    assert len(hotpot) == 2  # each supporting paragraph dropped in turn
    assert sorted(sum(p.startswith(("Gallo Hall\n", "Nora Vell\n")) for p in e.passages) for e in hotpot) == [1, 1]


def test_real_labels_right_with_support_only(tmp_path, data):
    r = run(tmp_path, data, recipes=["real"], models=["scripted"], llm_loader=lambda m: scripted(), real_per_question=3)
    records = [x for x in by_id(tmp_path).values() if "skip" not in x]
    assert len(records) == r.planned == 8 * 3
    for x in records:
        cond = x["meta"]["condition"]
        # the scripted model is always right: supported exactly when its passages hold the evidence
        assert x["meta"]["correct"] is True and x["label"] == int(cond != "distractor"), x
        assert x["model"] == "scripted" and x["fingerprint"] == "5c" * 8 and x["prompt"].count("@") == 1
    assert {x["meta"]["condition"] for x in records} == {"gold", "mixed", "distractor"}


def test_local_edit_marks_exactly_the_edited_sentence(tmp_path, data):
    run(tmp_path, data, recipes=["local_edit"], models=["scripted"], llm_loader=lambda m: scripted())
    records = [x for x in by_id(tmp_path).values() if "skip" not in x]
    examples = {e.source: e for e in resolve(records, data)}
    assert len(records) >= 6
    for x in records:
        e = examples[x["id"]]
        base = x["answer"]["edit"]
        assert e.label == 0 and sorted(e.sentence_labels).count(0) == 1 and len(e.sentence_labels) == 2
        before = [base[s:t] for s, t in sentence_spans(base)]
        after = [e.answer[s:t] for s, t in sentence_spans(e.answer)]
        changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
        assert changed == [e.sentence_labels.index(0)], (before, after, e.sentence_labels)


def test_swap_on_a_model_answer_edits_the_answer_sentence(tmp_path, data):
    run(tmp_path, data, recipes=["swap"], models=["scripted"], llm_loader=lambda m: scripted())
    edited = [x for x in by_id(tmp_path).values() if x["id"].split("/")[3] == "scripted.swapped" and "skip" not in x]
    assert len(edited) >= 5
    nq = {q[0]: q[1] for q in NQ_ROWS}
    hotpot = {h["question"]: [h["answer"]] for h in HOTPOT}
    for e in resolve(edited, data):
        assert e.label == 0 and e.sentence_labels is not None and e.sentence_labels.count(0) == 1
        # no reference answer left: in the whole answer for NQ; for HotpotQA in the edited sentence,
        # as another may name one ("X is older. Y was completed in 1871.")
        start, end = sentence_spans(e.answer)[e.sentence_labels.index(0)]
        text = e.answer if e.question in nq else e.answer[start:end]
        assert not any(r.lower() in text.lower() for r in {**nq, **hotpot}[e.question]), e.answer


def test_records_hold_no_benchmark_text_and_resolve_round_trips(tmp_path, data):
    run(tmp_path, data, recipes=["swap", "evidence_removal"], datasets=["nq", "hotpotqa", "nomiracl"])
    lines = (tmp_path / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    texts = (
        [q for q, *_ in NQ_ROWS]
        + [a for _, ans, *_ in NQ_ROWS for a in ans if len(a) > 4]
        + [t[:30] for *_, t in NQ_ROWS]
        + [h["question"] for h in HOTPOT]
        + [h["answer"] for h in HOTPOT]
    )
    for line in lines:
        assert not [t for t in texts if t.lower() in line.lower()], line
    examples = resolve_file(tmp_path / "labels.jsonl", data)
    assert len(examples) == sum(1 for line in lines if '"skip"' not in line)
    e = next(x for x in examples if x.source == "swap/nq/0/gold/s0")
    assert (e.question, e.answer, e.group, e.recipe) == (NQ_ROWS[0][0], "Mara Quill", "nq:0", "swap")
    assert f"{NQ_ROWS[0][2]}\n{NQ_ROWS[0][3]}" in e.passages
    # a record whose question changed is refused, not silently resolved
    rec = json.loads(lines[0])
    with pytest.raises(InputError, match="changed"):
        resolve([{**rec, "qh": "00000000"}], data)


def test_instruct_qa_human_questions_are_dropped(tmp_path, data):
    r = run(tmp_path, data, recipes=["swap", "evidence_removal"])
    assert r.excluded == {"nq": 1, "hotpotqa": 1} and r.unusable["nq"] == 1
    assert r.summary["last_run"]["excluded_as_evaluation_questions"] == {"nq": 1, "hotpotqa": 1}
    examples = resolve_file(tmp_path / "labels.jsonl", data)
    asked = {e.question for e in examples}
    assert EXCLUDED_NQ not in asked and EXCLUDED_HOTPOT not in asked and len(asked) == 6 + 2
    # other questions' answers lent to swaps never come from an excluded question either
    assert "Luca Venn" not in {e.answer for e in examples} and "Ada Roe" not in {e.answer for e in examples}
    # nor does their evidence serve as another question's distractor
    passages = {p.split("\n")[0] for e in examples for p in e.passages}
    assert "Song of Amber Valley" not in passages and "Grey Tide" not in passages and "Ada Roe" not in passages
    for name in ("correctness_nq_corrected_396.jsonl", "correctness_human_eval_1200.jsonl"):
        (data / "instruct_qa_human" / name).unlink()
        with pytest.raises(InputError, match="instruct_qa_human"):
            label_verifier(tmp_path / "other.jsonl", data_root=data, recipes=["swap"], models=[])


def test_rerun_makes_nothing_and_options_are_checked(tmp_path, data, monkeypatch):
    small = label_verifier(tmp_path / "small.jsonl", data_root=data, n=3, recipes=["swap"], models=[])
    large = label_verifier(tmp_path / "large.jsonl", data_root=data, n=5, recipes=["swap"], models=[])
    assert small.questions == {"nq": 3, "hotpotqa": 2}
    ids = {r["id"] for r in read_records(tmp_path / "small.jsonl")}
    assert ids < {r["id"] for r in read_records(tmp_path / "large.jsonl")} and large.questions["nq"] == 5
    first = run(tmp_path, data, recipes=["swap", "evidence_removal"], limit=5)
    assert first.written == 5 and first.stopped_at_limit
    second = run(tmp_path, data, recipes=["swap", "evidence_removal"])
    third = run(tmp_path, data, recipes=["swap", "evidence_removal"])
    assert second.already_done == 5 and second.written == second.planned - 5
    assert third.written == 0 and third.already_done == third.planned
    summary = json.loads((tmp_path / "labels.summary.json").read_text())
    assert summary["examples"] + sum(c["skipped"] for c in summary["by_recipe"].values()) == third.planned
    from verirag_lab.train.verifier_labels import swap

    monkeypatch.setattr(swap, "VERSION", swap.VERSION + 1)  # a changed recipe: its items are made again
    fourth = run(tmp_path, data, recipes=["swap", "evidence_removal"])
    assert fourth.remade == fourth.written == summary["by_recipe"]["swap"]["supported"] * 2
    assert all(r["v"] == swap.VERSION for r in by_id(tmp_path).values() if r["recipe"] == "swap")
    with pytest.raises(InputError, match="need a model"):
        run(tmp_path, data, recipes=["real"])
    with pytest.raises(InputError, match="unknown recipe"):
        run(tmp_path, data, recipes=["swop"])


KILL_SCRIPT = """
import sys, time
sys.path.insert(0, {tests!r})
from test_verifier_labels import scripted
from verirag_lab.train.verifier_labels import label_verifier
llm = scripted(delay=0.25, log={log!r})
run = label_verifier({out!r}, data_root={data!r}, recipes=["real"], models=["scripted"], n=None,
                     llm_loader=lambda m: llm, real_per_question=3)
print(run.planned, run.written, run.already_done, len(llm.requests))
"""


@pytest.mark.slow
def test_resumes_after_kill_9_without_recomputing(tmp_path, data):
    out, log = tmp_path / "labels.jsonl", tmp_path / "calls.log"
    script = tmp_path / "label.py"
    script.write_text(KILL_SCRIPT.format(tests=str(Path(__file__).parent), log=str(log), out=str(out), data=str(data)))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and (not out.exists() or out.read_text().count("\n") < 4):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = [line for line in out.read_text().splitlines() if line.strip()]
    ids_before = {json.loads(line)["id"] for line in kept if line.endswith("}")}
    assert 4 <= len(ids_before) < 24
    log.unlink()
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    planned, written, already, calls = map(int, done.stdout.split())
    assert planned == 24 and already == len(ids_before) and written == planned - already
    assert calls == written == len(log.read_text().splitlines())  # one request per item not yet in the file
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip().endswith("}")]
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)) == planned


@pytest.fixture(scope="module")
def smollm_one_thread(smollm_path):
    """SmolLM2-135M with one llama.cpp thread: on two shared cores, two threads that wait for each
    other are many times slower."""
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(smollm_path, model_id="smollm2-135m", n_ctx=2048, n_threads=1)
    yield llm
    llm.close()


@pytest.mark.slow
def test_real_recipe_with_the_smallest_real_model(tmp_path, data, smollm_one_thread):
    smollm = smollm_one_thread
    r = run(
        tmp_path,
        data,
        recipes=["real"],
        datasets=["nq", "nomiracl"],
        n=2,
        models=["smollm2-135m"],
        llm_loader=lambda m: smollm,
        real_per_question=2,
    )
    records = list(by_id(tmp_path).values())
    assert r.planned == len(records) == 3 * 2 and r.summary["by_model"]
    examples = {e.source: e for e in resolve(records, data)}
    for x in records:
        assert "skip" not in x, x
        e = examples[x["id"]]
        assert e.answer == x["answer"] and x["model"] == "smollm2-135m" and x["fingerprint"] == smollm.fingerprint[:16]
        if x["dataset"] == "nomiracl":  # no relevant passage: never supported
            assert x["label"] == 0 and x["meta"]["condition"] == "non_relevant" and x["meta"]["correct"] is None
            continue
        refs = next(q[1] for q in NQ_ROWS if q[0] == e.question)
        right = matches(e.answer, refs, "recall_or_substring") and not x["meta"]["abstained"]
        evidence = any(substring_match(p, refs) for p in e.passages)
        assert (x["meta"]["correct"], x["meta"]["evidence"], x["label"]) == (right, evidence, int(right and evidence))


def label_cli(*args: str) -> subprocess.CompletedProcess:
    """`verirag label verifier ARGS` in a fresh process, no standard input."""
    return subprocess.run(
        [sys.executable, "-m", "verirag", "label", "verifier", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_cli_labels_and_reports(tmp_path, data):
    out = tmp_path / "labels.jsonl"
    r = label_cli(
        "--out", str(out), "--data", str(data), "--recipes", "swap,evidence_removal", "--models", "none", "--n", "0"
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "labels.summary.json").read_text())
    assert summary["by_recipe"]["swap"]["supported"] == 8 and summary["last_run"]["questions"] == {
        "nq": 6,
        "hotpotqa": 2,
    }
    assert "nq 1, hotpotqa 1" in r.stdout and "supported" in r.stdout
    r = label_cli("--out", str(out), "--data", str(data), "--recipes", "real", "--models", "none")
    assert r.returncode != 0 and "need a model" in r.stderr + r.stdout


@pytest.mark.shared_data
def test_on_the_shared_data(tmp_path, shared_data):
    run = label_verifier(
        tmp_path / "labels.jsonl",
        data_root=shared_data,
        n=4,
        recipes=["swap", "evidence_removal"],
        models=[],
        datasets=["nq", "hotpotqa"],
    )
    assert run.excluded["nq"] > 0 and run.questions == {"nq": 4, "hotpotqa": 4}
    examples = resolve_file(tmp_path / "labels.jsonl", shared_data)
    assert {e.label for e in examples} == {0, 1} and all(e.passages and e.answer for e in examples)


def test_train_verifier_reads_the_labels_file_or_resolved_examples(tmp_path, data, monkeypatch):
    from verirag_lab.train.verifier import read_labels

    run(tmp_path, data, recipes=["swap"])
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(data))
    examples = list(read_labels(tmp_path / "labels.jsonl"))
    assert examples == resolve_file(tmp_path / "labels.jsonl", data) and examples
    resolved = tmp_path / "examples.jsonl"  # the other format: the examples themselves
    resolved.write_text(
        "".join(
            json.dumps(
                {
                    "question": e.question,
                    "answer": e.answer,
                    "passages": list(e.passages),
                    "label": e.label,
                    "recipe": e.recipe,
                    "group": e.group,
                }
            )
            + "\n"
            for e in examples
        ),
        encoding="utf-8",
    )
    assert [(e.question, e.answer, e.label) for e in read_labels(resolved)] == [
        (e.question, e.answer, e.label) for e in examples
    ]
    with pytest.raises(InputError, match="cannot read"):
        list(read_labels(tmp_path / "missing.jsonl"))


def test_swap_from_passage_draws_only_wrong_spans_of_the_same_passages(tmp_path, data):
    """--swap-from passage: every swapped answer is a span the passages hold (the hard negative),
    a question without one is skipped with that reason, and the records' ids name the origins so
    a file made with the default draw is not mistaken for it on resume."""
    r = run(tmp_path, data, recipes=["swap"], swap_from=["passage"])
    records = by_id(tmp_path)
    swapped = [x for x in records.values() if x["id"].split("/")[3] == "swapped-from-passage"]
    made = [x for x in swapped if "skip" not in x]
    assert made and all(x["meta"]["origin"] == "passage" for x in made)
    assert all("from passage" in x["skip"] for x in swapped if "skip" in x)
    examples = {e.source: e for e in resolve_file(tmp_path / "labels.jsonl", data)}
    for x in made:  # the wrong answer is there, word for word, in the passages it is judged against
        e = examples[x["id"]]
        assert e.label == 0 and any(e.answer.lower() in p.lower() for p in e.passages)
    assert r.summary["by_recipe"]["swap"]["unsupported"] == len(made)
    with pytest.raises(InputError, match="unknown swap origin"):
        run(tmp_path, data, recipes=["swap"], swap_from=["nowhere"])
