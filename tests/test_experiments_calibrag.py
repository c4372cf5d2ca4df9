"""The CalibRAG study (Jang et al.): its tables, report and config, on records written by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from verirag.errors import InputError


def _record(i: int, correct: int, conf: float, guidance_correct: int, na: int = 0) -> dict:
    rows = {
        name: {"doc": f"d{i}", "correct": correct, "na": na, "confidence": conf, "guidance_correct": guidance_correct}
        for name in ("base", "verbal_number", "calibrag")
    }
    rows["t2_base"] = {"doc": f"d{i}", "correct": 0, "na": na, "guidance_correct": 0}
    rows["t2_calibrag"] = {
        "doc": f"e{i}" if i % 2 else f"d{i}",
        "correct": correct,
        "na": na,
        "guidance_correct": guidance_correct,
    }
    return {"id": str(i), "rows": rows}


def test_study_tables_compute_the_papers_metrics():
    from verirag.metrics.calibration import auroc, brier, ece
    from verirag_lab.experiments.studies.calibrag import BootstrapSpec, table1, table2

    recs = [_record(i, int(i % 3 == 0), 0.9 if i % 3 == 0 else 0.2, 1 - int(i % 3 == 0)) for i in range(30)]
    recs.append({"id": "x", "rows": {}, "error": "nothing retrieved"})  # excluded, not averaged
    t1 = {r["method"]: r for r in table1("toy", recs, BootstrapSpec(n_resamples=200))}
    assert set(t1) == {"base", "verbal_number", "calibrag"} and "auroc" not in t1["base"]
    c = np.array([0.9 if i % 3 == 0 else 0.2 for i in range(30)])
    y = np.array([int(i % 3 == 0) for i in range(30)])
    cal = t1["calibrag"]
    assert cal["n"] == 30 and cal["accuracy"]["value"] == pytest.approx(y.mean())
    assert cal["auroc"]["value"] == pytest.approx(auroc(c, y)) == 1.0
    assert cal["ece"]["value"] == pytest.approx(ece(c, y, n_bins=10))
    assert cal["brier"]["value"] == pytest.approx(brier(c, y))
    assert cal["auroc_answer"]["value"] == pytest.approx(0.0)  # graded against the guidance: inverted here
    assert cal["accuracy"]["low"] <= cal["accuracy"]["value"] <= cal["accuracy"]["high"]
    # NLL reads the confidences clipped to [0.01, 0.99]; each row is also compared with CalibRAG's, paired
    from verirag.metrics.calibration import nll
    from verirag_lab.experiments.studies.calibrag import NLL_CLIP

    assert cal["nll"]["value"] == pytest.approx(nll(np.clip(c, NLL_CLIP, 1 - NLL_CLIP), y))
    assert "ece_vs_calibrag" not in cal
    assert t1["verbal_number"]["ece_vs_calibrag"]["value"] == pytest.approx(0.0)  # the same scores here
    assert t1["verbal_number"]["auroc_vs_calibrag"]["value"] == pytest.approx(0.0)
    t2 = {r["reranker"]: r for r in table2("toy", recs, BootstrapSpec(n_resamples=200), llm_rerank=False)}
    assert t2["calibrag"]["decision_vs_base"]["value"] == pytest.approx(y.mean())
    assert t2["calibrag"]["top1_changed"] == pytest.approx(0.5)
    assert "decision_vs_base" not in t2["base"]


def test_study_report_writes_markdown_and_latex_tables(tmp_path):
    from verirag_lab.experiments.report.calibrag import build_calibrag_report
    from verirag_lab.experiments.studies.calibrag import BootstrapSpec, table1, table2

    recs = [_record(i, int(i % 3 == 0), 0.9 if i % 3 == 0 else 0.2, 1 - int(i % 3 == 0)) for i in range(30)]
    boot = BootstrapSpec(n_resamples=100)
    result = {
        "name": "toy",
        "config": {"model": "m", "retrieval": "bm25", "k": 20, "epsilon": 0.3},
        "labels": {"pairs": 10, "questions": 2, "positive_share": 0.2, "top1_positive_share": 0.5, "failed": 0},
        "forecasters": {
            "calibrag": {
                "kind": "cross_encoder",
                "n_train": 8,
                "n_val": 2,
                "label_balance": 0.25,
                "temperature": 1.5,
                "validation": {"auroc": 0.75, "ece": 0.1, "brier": 0.2},
            }
        },
        "table1": table1("toy", recs, boot),
        "table2": table2("toy", recs, boot, llm_rerank=False),
    }
    html_path = build_calibrag_report(tmp_path, result)
    assert "CalibRAG" in html_path.read_text() and (tmp_path / "figures" / "reliability_toy.png").stat().st_size > 0
    t1 = (tmp_path / "tables" / "calibrag_table1.md").read_text()
    cal = next(r for r in result["table1"] if r["method"] == "calibrag")
    assert f"| toy | CalibRAG | 30 | {cal['auroc']['value']:.3f} [" in t1
    t2 = (tmp_path / "tables" / "calibrag_table2.md").read_text()
    assert (
        "| toy | Base | 30 | 0.0 [0.0, 0.0] |" in t2
        and "\\toprule" in (tmp_path / "tables" / "calibrag_table2.tex").read_text()
    )
    assert (
        "| calibrag | cross_encoder | 8 | 2 | 0.250 | 1.500 | 0.750 |"
        in (tmp_path / "tables" / "calibrag_forecasters.md").read_text()
    )


def test_paired_difference_to_calibrag_detects_a_worse_calibration():
    from verirag.metrics.calibration import ece
    from verirag_lab.experiments.studies.calibrag import BootstrapSpec, table1

    recs = [_record(i, int(i % 2 == 0), 0.8 if i % 2 == 0 else 0.2, 0) for i in range(60)]
    for r in recs:  # Number says 10/10 to everything: half of it wrong
        r["rows"]["verbal_number"]["confidence"] = 1.0
    t1 = {r["method"]: r for r in table1("toy", recs, BootstrapSpec(n_resamples=300))}
    d = t1["verbal_number"]["ece_vs_calibrag"]
    y = np.array([int(i % 2 == 0) for i in range(60)])
    want = ece(np.ones(60), y, n_bins=10) - ece(np.where(y == 1, 0.8, 0.2), y, n_bins=10)
    assert d["value"] == pytest.approx(want) and d["low"] > 0  # the interval excludes 0


def test_relevance_label_matches_whole_words():
    from verirag_lab.experiments.studies.calibrag import relevance_label

    assert relevance_label("The bridge opened in 1889.", ["1889"]) == 1
    assert relevance_label("The bridge opened in 2012.", ["2"]) == 0  # not inside another number
    assert relevance_label("A party was held.", ["art"]) == 0
    assert relevance_label("Painted by J.M.W. Turner!", ["J.M.W. Turner", "nobody"]) == 1
    assert relevance_label("anything", [""]) == 0


def test_a_test_entry_of_the_training_dataset_takes_trains_seed_and_options():
    from verirag_lab.experiments.studies.calibrag import parse_calibrag_study

    base = {"study": "calibrag", "train": {"dataset": "nq", "n": 10, "seed": 3, "options": {"k": 10}}}
    assert parse_calibrag_study({**base, "test": [{"name": "nq", "n": 5}]}).test[0].n == 5  # unset: fine
    with pytest.raises(InputError, match="seed must be train's"):
        parse_calibrag_study({**base, "test": [{"name": "nq", "n": 5, "seed": 0}]})
    with pytest.raises(InputError, match="options must be train's"):
        parse_calibrag_study({**base, "test": [{"name": "nq", "options": {"k": 5}}]})
    parse_calibrag_study({**base, "test": [{"name": "hotpotqa", "seed": 0}]})  # another dataset: its own


def test_report_recomputes_the_tables_from_the_records(tmp_path):
    from verirag.cli import main
    from verirag_lab.experiments.studies.calibrag import retable

    recs = [_record(i, int(i % 3 == 0), 0.9 if i % 3 == 0 else 0.2, 1 - int(i % 3 == 0)) for i in range(30)]
    from verirag_lab.experiments.studies.calibrag import parse_calibrag_study

    # stored as the run stores it: every field dumped, a test entry of the training dataset included
    config = parse_calibrag_study(
        {
            "study": "calibrag",
            "name": "toy",
            "llm_rerank": False,
            "train": {"dataset": "toy", "options": {"k": 10}},
            "test": [{"name": "toy"}],
            "bootstrap": {"n_resamples": 100},
        }
    ).model_dump()
    study = {
        "name": "toy",
        "config": config,
        "labels": {},
        "forecasters": {},
        "questions": {"toy": recs},
        "table1": [{"stale": True}],
        "table2": [],
    }
    (tmp_path / "study.json").write_text(json.dumps(study))
    assert main(["report", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "study.json").read_text())
    want = retable({"config": config, "questions": {"toy": recs}})
    assert again["table1"] == json.loads(json.dumps(want["table1"])) and {"stale": True} not in again["table1"]
    assert (tmp_path / "tables" / "calibrag_table1.md").is_file()
