"""The warm start's replay sample draws labelled records only, reproducibly (verirag_lab.train.replay)."""

from __future__ import annotations

import json

import pytest

from verirag.errors import InputError
from verirag_lab.train.replay import labelled_records, main, replay_sample


def write_labels(path, n_labelled: int, n_skipped: int, prefix: str) -> None:
    rows = [
        {"id": f"{prefix}/nq/{i}/a/s0", "recipe": "swap", "dataset": "nq", "example": str(i), "label": i % 2}
        for i in range(n_labelled)
    ]
    rows += [
        {"id": f"{prefix}/nq/skip{i}/a/s0", "recipe": "swap", "dataset": "nq", "example": f"k{i}", "skip": "no span"}
        for i in range(n_skipped)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_skip_lines_are_never_drawn_however_many_the_files_hold(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_labels(a, 30, 70, "a")  # mostly skips, as issue 36's label files are
    write_labels(b, 20, 5, "b")
    assert len(labelled_records([a, b])) == 50
    sample = replay_sample([a, b], 50, seed=0)
    assert len(sample) == 50 and all("skip" not in r and r["label"] in (0, 1) for r in sample)


def test_the_same_files_and_seed_give_the_same_sample_and_another_seed_another(tmp_path):
    a = tmp_path / "a.jsonl"
    write_labels(a, 40, 10, "a")
    ids = [r["id"] for r in replay_sample([a], 10, seed=0)]
    assert ids == [r["id"] for r in replay_sample([a], 10, seed=0)]
    assert ids != [r["id"] for r in replay_sample([a], 10, seed=1)]


def test_asking_for_more_than_the_labelled_records_is_a_clear_error(tmp_path):
    a = tmp_path / "a.jsonl"
    write_labels(a, 3, 100, "a")
    with pytest.raises(InputError, match="hold 3 labelled"):
        replay_sample([a], 4)
    with pytest.raises(SystemExit):
        main([str(a), "--n", "4", "--out", str(tmp_path / "r.jsonl")])


def test_the_command_writes_the_sample_as_labels_lines(tmp_path, capsys):
    a, out = tmp_path / "a.jsonl", tmp_path / "replay.jsonl"
    write_labels(a, 12, 12, "a")
    main([str(a), "--n", "6", "--seed", "3", "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in replay_sample([a], 6, seed=3)]
    assert "6 labelled records" in capsys.readouterr().out
