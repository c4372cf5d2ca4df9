"""Metrics on the instruct-qa human-judged responses (../shared/data; skipped when absent)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from verirag.metrics import qa, stats

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def nq396(shared_data):
    path = shared_data / "instruct_qa_human" / "correctness_nq_corrected_396.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return [json.loads(line) for line in path.open()]


def test_recall_beats_exact_match_on_human_labels(nq396):
    preds = [r["response"] for r in nq396]
    refs = [r["references"] for r in nq396]
    m = qa.token_metrics_batch(preds, refs)
    human = np.array([r["label_correct"] for r in nq396])
    tau = {k: stats.kendall_tau_b(v, human) for k, v in m.items()}
    # Adlakha et al.: token recall correlates with human judgement better than EM and F1
    assert tau["recall"] > tau["f1"] > tau["exact_match"]
    assert tau["recall"] > 0.4
    # batch = scalar on real text
    for r, f1 in zip(nq396[:50], m["f1"][:50]):
        assert f1 == pytest.approx(qa.token_f1(r["response"], r["references"]))
