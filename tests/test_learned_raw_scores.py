"""Learned parts are fitted on the score they route on (issue 49, item 3). A record names both
scores: `score`, after the answer rules (a declined answer scores 0: what `ask` acts on), and
`raw_score`, the method's own (what the cascade routes on and the stack combines at answer time,
the rules applying after them). The cascade's band, its calibrations and the stack's features are
fitted on `raw_score`."""

from __future__ import annotations

import json
import math

import pytest
from doubles import ScriptedLLM

from verirag import Passage
from verirag.awf.core import DECLINED
from verirag.records import ResultRecord

QUESTION = "Who designed the lighthouse?"
PASSAGES = [
    Passage("a", "The lighthouse on Varnholt was designed by Ada Brennan in 1887."),
    Passage("b", "Puffins nest on the cliffs in April."),
]
P_YES = 0.9  # the LLM judge calls the refusal supported


@pytest.fixture(scope="module")
def declined_run(tmp_path_factory):
    """A grid run whose model declines, judged by the trained verifier and by nli."""
    from verirag.records import ResultStore
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    tmp = tmp_path_factory.mktemp("declined")
    llm = ScriptedLLM("I don't know.", next_token={"Yes": math.log(P_YES), "No": math.log(1 - P_YES)})
    data = tmp / "one.jsonl"
    row = {"id": "q1", "question": QUESTION, "references": ["Ada Brennan"]}
    data.write_text(json.dumps({**row, "passages": [p.to_dict() for p in PASSAGES]}) + "\n")
    cfg = parse_config(
        {
            "name": "declined",
            "datasets": [{"name": "jsonl", "path": str(data)}],
            "models": ["scripted"],
            "methods": ["vanilla+verifier", "vanilla+nli"],
        }
    )
    run_experiment(cfg, tmp / "run", llm_factory=lambda spec, n_ctx: llm, progress=False)
    return tmp / "run", {r.method: r for r in ResultStore(tmp / "run").load()}


def raw_verifier_score() -> float:
    """What the cascade's first stage sees for the refusal: the trained verifier's own score."""
    from verirag.awf.predictors.verifier import TrainedVerifierPredictor

    return TrainedVerifierPredictor().verify(QUESTION, "I don't know.", PASSAGES).score


def test_a_record_names_both_scores(declined_run):
    _, records = declined_run
    nli = records["vanilla+nli"]
    assert nli.score == 0.0 and nli.details["answer_rules"] == [DECLINED]
    assert nli.raw_score == pytest.approx(P_YES) == nli.details["raw_score"]
    assert records["vanilla+verifier"].raw_score == pytest.approx(raw_verifier_score(), abs=1e-6)
    assert records["vanilla+verifier"].raw_score > 0.0  # the rule zeroed it; the cascade would not see 0
    # the saved form keeps both, and a record written before `raw_score` existed derives it
    d = nli.to_dict()
    assert d["raw_score"] == pytest.approx(P_YES)
    del d["raw_score"]
    assert ResultRecord.from_dict(d).raw_score == pytest.approx(P_YES)
    plain = {**d, "details": {}, "score": 0.4}
    assert ResultRecord.from_dict(plain).raw_score == 0.4  # no rule applied: the two are one


def test_the_cascade_is_fitted_on_the_raw_scores_it_routes_on(declined_run):
    from verirag_lab.train.cascade import paired_scores

    run, records = declined_run
    pairs = paired_scores([run])
    assert len(pairs) == 1
    assert pairs.verifier[0] == pytest.approx(records["vanilla+verifier"].raw_score)  # before: 0.0
    assert pairs.judge[0] == pytest.approx(P_YES)  # before: 0.0
    assert pairs.labels.tolist() == [0]  # what `fit_cascade` fits the band and both calibrations on


def test_rescored_verifier_rows_give_their_raw_score(tmp_path):
    from verirag_lab.train.cascade import read_verifier_scores

    f = tmp_path / "rescored.jsonl"
    rows = [
        {"header": True, "verifier": {"predictor_digest": "abc"}},
        {"key": "k1", "score": 0.0, "raw_score": 0.7, "rules": [DECLINED], "seconds": 0.1},
        {"key": "k2", "score": 0.4, "seconds": 0.1},
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_verifier_scores([f]).scores == {"k1": (0.7, 0.1), "k2": (0.4, 0.1)}


def test_the_stack_is_fitted_on_the_raw_scores_it_combines(declined_run):
    from verirag_lab.train.stack_features import feature_table

    _, records = declined_run
    table = feature_table(list(records.values()), features=["verifier", "nli"])
    assert table.column("nli")[0] == pytest.approx(P_YES)  # before: 0.0
    assert table.column("verifier")[0] == pytest.approx(records["vanilla+verifier"].raw_score)
