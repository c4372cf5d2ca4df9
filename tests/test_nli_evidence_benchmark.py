"""benchmarks/nli_evidence.py: the paired comparison and the rows it reads (no LLM)."""

from __future__ import annotations

import json

import pytest
from benchmark_module import load_benchmark

bench = load_benchmark("nli_evidence")


def test_compare_set_pairs_the_columns_on_the_answers_all_scored():
    items = [(f"q{i}:a", "q", "a", [], i % 2, f"q{i}") for i in range(12)] + [("q99:a", "q", "a", [], None, "q99")]
    good = {t[0]: float(t[4] or 0) + 0.1 * (i % 3) for i, t in enumerate(items)}
    noisy = {k: (1 - v if k in ("q0:a", "q1:a") else v) for k, v in good.items()}
    partial = {k: v for k, v in good.items() if k != "q11:a"}
    r = bench.compare_set("toy", items, {"verifier": noisy, "nli over the evidence": partial, "nli": good}, 200)
    assert r["n"] == 11  # an unlabelled answer and one a column lacks are left out
    assert r["nli"][0] == pytest.approx(1.0) and r["nli over the evidence - nli"][0] == pytest.approx(0.0)
    assert r["verifier - nli"][0] < 0 and r["verifier - nli"][1] <= r["verifier - nli"][0] <= r["verifier - nli"][2]


def test_rows_are_read_by_id_or_key_the_latest_winning(tmp_path):
    f = tmp_path / "rows.jsonl"
    rows = [{"id": "a", "score": 0.1}, {"id": "a", "score": 0.7}, {"key": "k", "score": 0.3}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    out = bench._read(f)
    assert out["a"]["score"] == 0.7 and out["k"]["score"] == 0.3 and bench._read(tmp_path / "none") == {}
    assert bench._ci([0.5, 0.4, 0.6]) == "0.500 [0.400, 0.600]"


def test_a_follow_up_is_judged_in_its_conversation(shared_data_dir):
    """The conversational own-answer set: each follow-up reaches the judge as `ask` gives it (an
    InContext question carrying its turns), not flattened into one string the verifier would read
    as the question."""
    from pathlib import Path

    from verirag.conversation import InContext

    run = Path(__file__).resolve().parents[1] / "data/verifier/own_answers/own-answers-followup-verifier-qwen2.5-1.5b"
    items = bench.own_items(run)
    assert len(items) == 344
    assert all(isinstance(q, InContext) and q.history for _, q, *_ in items)
    assert all(q.startswith("Conversation so far:\nUser: ") for _, q, *_ in items)


def test_the_llm_judge_arm_needs_an_out_file():
    with pytest.raises(SystemExit, match="give --out"):
        bench.main(["score", "own", "--arm", "llm_judge"])


def test_the_evidence_stack_is_refused_by_cost_where_the_evidence_judge_is_dear(tmp_path):
    """The rule's fourth candidate (a stack of the verifier and nli over the evidence) pays nli over the
    evidence on every answer: over a fifth of nli's seconds on a set, it cannot qualify."""
    cascade = load_benchmark("cascade")

    def rows(name, seconds):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"a{i}", "seconds": s}) + "\n" for i, s in enumerate(seconds)))
        return path

    files = {
        "cheap": {"evidence": rows("ce", [0.1, 0.3]), "passages": rows("cp", [1.0, 3.0])},
        # an answer timed by one arm only is not counted
        "dear": {"evidence": rows("de", [1.0, 1.0, 9.0]), "passages": rows("dp", [2.0, 2.0])},
    }
    shares = cascade.evidence_judge_shares(files)
    assert shares == {"cheap": (pytest.approx(0.1), 2), "dear": (pytest.approx(0.5), 2)}
    assert "cannot qualify" in cascade.evidence_stack_reason(shares)
    assert "over 20% on dear" in cascade.evidence_stack_reason(shares)
    assert "measure its AUROC" in cascade.evidence_stack_reason({"cheap": shares["cheap"]})
