"""One reader of results.jsonl (issue 49, item 4): the cascade's training reads a run as every other
part does (`ResultStore`): a torn line of a killed run is skipped, and of a slot recomputed after
its method changed only the latest record counts."""

from __future__ import annotations

import numpy as np
import pytest

from verirag.errors import InputError
from verirag.records import ResultRecord, ResultStore
from verirag_lab.train.cascade import paired_scores


def record(method: str, example: str, score: float, *, digest: str, generation: str, faithful: int = 1):
    predictor = method.split("+", 1)[1]
    return ResultRecord(
        dataset="nq",
        model="m",
        method=method,
        example_id=example,
        question="q",
        answer="a",
        score=score,
        hard=False,
        answerable=1,
        correct=faithful,
        faithful=faithful,
        group=example,
        details={
            "generator": "vanilla",
            "predictor": predictor,
            "generation": generation,
            "predictor_digest": f"{predictor}-digest",
        },
        method_digest=digest,
    )


def test_a_torn_line_of_a_killed_run_is_skipped(tmp_path):
    store = ResultStore(tmp_path)
    store.append(record("vanilla+verifier", "1", 0.8, digest="new", generation="g-new"))
    store.append(record("vanilla+nli", "1", 0.9, digest="new", generation="g-new"))
    with open(store.path, "a", encoding="utf-8") as f:
        f.write('{"dataset": "nq", "model": "m", "meth')

    pairs = paired_scores([tmp_path])  # before: a JSONDecodeError on the torn line
    assert len(pairs) == 1 and np.allclose(pairs.verifier, [0.8]) and np.allclose(pairs.judge, [0.9])
    assert np.allclose(paired_scores([tmp_path / "results.jsonl"]).verifier, [0.8])  # the file names its run


def test_the_latest_record_of_a_slot_counts_once(tmp_path):
    """A slot recomputed after its method changed (a new generation): before, the stale answer was
    paired too, as a second answer."""
    store = ResultStore(tmp_path)
    for digest, generation, v, j in (("old", "g-old", 0.2, 0.3), ("new", "g-new", 0.8, 0.9)):
        store.append(record("vanilla+verifier", "1", v, digest=digest, generation=generation))
        store.append(record("vanilla+nli", "1", j, digest=digest, generation=generation))
    pairs = paired_scores([tmp_path])
    assert len(pairs) == 1 and np.allclose(pairs.verifier, [0.8]) and np.allclose(pairs.judge, [0.9])


def test_the_run_is_read_by_the_result_store(tmp_path):
    from verirag_lab.train.cascade import run_records

    store = ResultStore(tmp_path)
    store.append(record("vanilla+verifier", "1", 0.2, digest="old", generation="g-old"))
    store.append(record("vanilla+verifier", "1", 0.8, digest="new", generation="g-new"))
    with open(store.path, "a", encoding="utf-8") as f:
        f.write('{"dataset": "nq", "mo')
    rows = run_records(tmp_path)
    assert [r["key"] for r in rows] == [r.key for r in store.load()] and store.skipped_lines == 1
    assert [r["method_digest"] for r in rows] == ["new"]


def test_a_missing_run_is_a_clear_error(tmp_path):
    from verirag_lab.train.cascade import run_records

    with pytest.raises(InputError, match="no eval run"):
        run_records(tmp_path / "nowhere")
