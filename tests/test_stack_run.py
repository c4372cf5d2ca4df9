"""The stacked verifier end to end on a tiny real eval run (SmolLM2-135M, a verifier fitted here on
toy examples): the records carry the answer's signals (token logprobs from the generation itself,
K-Precision, retrieval scores), `verirag train stack` fits on them, and
`vanilla+stacked(stack=FILE)` recomputes the same features at answer time and gives the score the
stack gives the recorded ones."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_learned_verifier import toy_examples, toy_verifier

from verirag.errors import InputError
from verirag.learned.stack import StackedVerifier
from verirag.metrics.faithfulness import k_precision
from verirag.records import ResultStore
from verirag.types import Passage

pytestmark = pytest.mark.slow

THINGS = ["bridge", "tower", "mill", "church", "school", "gate", "well", "barn", "boat", "kiln"]
TOWNS = ["Varnholt", "Ostrava", "Kellby", "Mirow", "Tansk", "Pelling", "Dorn", "Hask"]
COLOURS = ["green", "red", "blue", "yellow", "white", "black"]


def questions(n: int = 10) -> list[dict]:
    """Made-up towns: even questions come with the passage that answers them (and a retriever that
    scored it high), odd ones with two passages that do not."""
    rows = []
    for i in range(n):
        thing, town, colour = THINGS[i % len(THINGS)], TOWNS[i % len(TOWNS)], COLOURS[i % len(COLOURS)]
        other = [
            f"The market of {town} opens on Saturdays and sells fish.",
            f"It rains often in the valley near {town}.",
        ]
        if i % 2 == 0:
            passages, scores = [f"The {thing} in {town} is painted {colour}.", other[0]], [8.0 + i % 3, 3.0]
        else:
            passages, scores = other, [3.5, 2.0 + i % 3]
        rows.append(
            {
                "id": f"q{i}",
                "question": f"What colour is the {thing} in {town}?",
                "passages": passages,
                "references": [colour],
                "meta": {"retrieval_scores": scores},
            }
        )
    return rows


@pytest.fixture(scope="module")
def run(smollm, tmp_path_factory):
    """(run folder, the questions, the verifier folder): vanilla answers judged by self_check and
    by the verifier."""
    import torch

    torch.set_num_threads(1)
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    tmp = tmp_path_factory.mktemp("stack")
    verifier = toy_verifier(epochs=1).fit(toy_examples(16)).save(tmp / "verifier")
    rows = questions()
    data = tmp / "towns.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = parse_config(
        {
            "name": "stack",
            "datasets": [{"name": "jsonl", "path": str(data)}],
            "models": ["smollm2-135m"],
            "methods": ["vanilla+self_check", {"name": "vanilla+verifier", "verifier": str(verifier)}],
            "generation": {"max_tokens": 16},
        }
    )
    out = run_experiment(cfg, tmp / "run", llm_factory=lambda spec, n_ctx: smollm, progress=False)
    assert out.written == 2 * len(rows) and not out.failures
    return tmp / "run", {r["id"]: r for r in rows}, verifier


def test_records_carry_the_answers_signals(run):
    run_dir, rows, _ = run
    recs = ResultStore(run_dir).load()
    by_example: dict[str, list] = {}
    for r in recs:
        by_example.setdefault(r.example_id, []).append(r)
        row = rows[r.example_id]
        values = r.details["signals"]["values"]
        assert values["logprob_min"] <= values["logprob_mean"] < 0 and values["logprob_sum"] <= values["logprob_mean"]
        passages = [Passage(f"{r.example_id}:{i}", t) for i, t in enumerate(row["passages"])]
        assert values["k_precision"] == pytest.approx(k_precision(r.answer, passages))
        assert values["retrieval_top"] == max(row["meta"]["retrieval_scores"])
        assert values["retrieval_mean"] == pytest.approx(np.mean(row["meta"]["retrieval_scores"]))
        assert r.details["predictor_digest"] and r.details["model_fingerprint"]
    for pair in by_example.values():  # both predictors judged one generation
        assert len({r.details["generation"] for r in pair}) == 1 and len({r.answer for r in pair}) == 1
    assert 0 < sum(r.faithful for r in recs) < len(recs)


def test_stacked_from_the_run_scores_new_answers_as_it_scored_the_recorded_ones(run, smollm, tmp_path):
    from verirag.awf.compose import build_method
    from verirag.awf.trace import Trace
    from verirag.cli import main
    from verirag.types import Example

    run_dir, rows, _ = run
    path = tmp_path / "stack.json"
    assert main(["train", "stack", str(run_dir), "--out", str(path), "--folds", "3", "--resamples", "100"]) == 0
    stack = StackedVerifier.load(path)
    assert stack.features == [
        "self_check",
        "verifier",
        "logprob_min",
        "logprob_mean",
        "logprob_sum",
        "k_precision",
        "retrieval_top",
        "retrieval_mean",
    ]
    report = stack.provenance["cv"]
    assert report["answers"] == len(rows) and set(report["rows"]) >= {"stacked", "self_check", "verifier"}

    from verirag_lab.train.stack_features import feature_table

    table = feature_table(ResultStore(run_dir).load())
    method = build_method("vanilla+stacked", smollm, stack=str(path))
    assert method.predictor.continues_generation  # it reads self_check, which continues the conversation
    for i in (0, 1):
        row = rows[f"q{i}"]
        ex = Example.from_dict(
            {**row, "passages": [{"id": f"q{i}:{j}", "text": t} for j, t in enumerate(row["passages"])]}
        )
        out = method.run(Trace(ex.question, ex.passages, retrieval_scores=row["meta"]["retrieval_scores"]))
        k = next(n for n, key in enumerate(table.keys) if f"|q{i}|" in key)
        assert out.error is None and out.answer
        assert out.score == pytest.approx(stack.predict_proba(table.X[k : k + 1])[0], abs=1e-6)

    # an answer written elsewhere has no token logprobs: named, never guessed
    v = method.predictor.verify(rows["q0"]["question"], "It is green.", [Passage("p", rows["q0"]["passages"][0])])
    assert not v.ok and "logprob_min" in v.error and "did not come from a generation" in v.error


def test_a_stack_for_another_verifier_or_model_is_refused(run, smollm, tmp_path):
    from verirag.awf.compose import build_method
    from verirag_lab.train.stack import train_stack
    from verirag_lab.train.stack_features import feature_table

    run_dir, _, _ = run
    table = feature_table(ResultStore(run_dir).load(), features=["verifier", "self_check", "k_precision"])
    result = train_stack(table, folds=3, n_resamples=20)
    path = result.stack.save(tmp_path / "stack.json")
    saved = json.loads(path.read_text())
    saved["settings"]["sources"]["verifier"]["digest"] = "retrained"
    path.write_text(json.dumps(saved))
    with pytest.raises(InputError, match="feature 'verifier' was made by predictor verifier.*refit"):
        build_method("vanilla+stacked", smollm, stack=str(path))
    saved = json.loads(result.stack.save(tmp_path / "other.json").read_text())
    saved["fingerprints"]["model"] = "another-model"
    (tmp_path / "other.json").write_text(json.dumps(saved))
    with pytest.raises(InputError, match="fitted for model 'another-model'"):
        build_method("vanilla+stacked", smollm, stack=str(tmp_path / "other.json"))
