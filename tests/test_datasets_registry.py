"""The registry: names, options, default paths, and what goes wrong when data is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag_lab.datasets import data_dir, dataset_info, dataset_names, load_dataset


def test_names_and_options() -> None:
    names = dataset_names()
    assert names[:4] == ["nq", "hotpotqa", "nomiracl", "instruct_qa_human"]
    assert {"nq_open", "hotpotqa_original", "topiocqa", "squad2", "bioasq", "jsonl"} <= set(names)
    assert dataset_info("nq").options() == ["k", "retriever", "distractors", "embedder", "cache_index", "followup"]
    assert dataset_info("hotpotqa").options() == ["n_passages", "followup"]
    assert dataset_info("nomiracl").options() == ["subset", "references_llm"]
    assert dataset_info("jsonl").options() == []


def test_unknown_name_and_option_list_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"unknown dataset 'squad'.*squad2"):
        load_dataset("squad")
    f = tmp_path / "a.jsonl"
    f.write_text('{"question": "q"}\n')
    with pytest.raises(InputError, match=r"unknown option\(s\) k for dataset 'jsonl'; valid options: none"):
        load_dataset("jsonl", f, k=3)
    with pytest.raises(InputError, match=r"valid options: subset, references_llm"):
        load_dataset("nomiracl", tmp_path, subsets="relevant")
    with pytest.raises(InputError, match="positive integer"):
        load_dataset("jsonl", f, n=0)
    with pytest.raises(InputError, match="seed"):
        load_dataset("jsonl", f, seed="zero")


def test_default_paths_come_from_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path
    with pytest.raises(InputError) as err:
        load_dataset("topiocqa")
    msg = str(err.value)
    assert str(tmp_path / "topiocqa" / "topiocqa_dev.early-2021-11.json") in msg
    assert "VERIRAG_DATA_DIR" in msg and "pass the path" in msg
    with pytest.raises(InputError, match=r"needs a path.*load_dataset\('squad2'"):
        load_dataset("squad2")
    (tmp_path / "nq_open").mkdir()
    (tmp_path / "nq_open" / "NQ-open.dev.jsonl").write_text(
        "".join(json.dumps({"question": f"q{i}", "answer": [str(i)]}) + "\n" for i in range(10))
    )
    assert len(load_dataset("nq_open")) == 10


def test_n_is_deterministic_and_keeps_file_order(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_text("".join(json.dumps({"question": f"q{i}"}) + "\n" for i in range(50)))
    a = [e.id for e in load_dataset("jsonl", f, n=10, seed=7)]
    assert a == [e.id for e in load_dataset("jsonl", f, n=10, seed=7)]
    assert a == sorted(a, key=int) and len(set(a)) == 10
    assert a != [e.id for e in load_dataset("jsonl", f, n=10, seed=8)]
    assert len(load_dataset("jsonl", f, n=500)) == 50


def test_without_a_data_dir_nothing_is_guessed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERIRAG_DATA_DIR", raising=False)
    with pytest.raises(InputError, match=r"VERIRAG_DATA_DIR.*--data DIR"):
        data_dir()
    with pytest.raises(InputError, match=r"'nomiracl' has no path and VERIRAG_DATA_DIR is not set.*nomiracl_en"):
        load_dataset("nomiracl")
    assert data_dir(tmp_path) == tmp_path  # an explicit folder needs no setting
