"""`verirag verify LOG --executor ray`: a log's shards verified by Ray actors on a local Ray instance
give the local run's records (timings aside), summary and report; a run resumes from what a local
or a Ray run left (nothing done is recomputed); results.jsonl ends in log order; no Ray, or an
unreachable cluster, is a clear error."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from verirag.cli import main
from verirag.errors import InputError
from verirag.jsonio import AppendedJsonl

TOWNS = ["Varnholt", "Ostby", "Kleve", "Marden", "Sundal", "Trelle", "Brenna", "Lofsted", "Haugen", "Rimdal"]
TOWNS += ["Solvik", "Tarnby"]
COLOURS = ["green", "red", "blue", "yellow", "white", "black", "grey", "orange"]
TIMING = ("seconds",)  # the only fields a run's timing changes


def write_log(path: Path) -> Path:
    """12 RAGAS-style answers (every other one names the wrong colour, labelled) and 2 malformed
    lines (bad JSON at line 4, no contexts at line 9): 14 lines."""
    lines = []
    for i, town in enumerate(TOWNS):
        colour = COLOURS[i % len(COLOURS)]
        said = colour if i % 2 == 0 else COLOURS[(i + 3) % len(COLOURS)]
        row = {
            "id": f"q{i}",
            "user_input": f"What colour is the bridge in {town}?",
            "response": f"The bridge in {town} is {said}. It was built long ago.",
            "retrieved_contexts": [f"The bridge in {town} is painted {colour} every spring.", f"{town} is by the sea."],
            "human": i % 2 == 0,
        }
        lines.append(json.dumps(row))
    lines.insert(3, "{not json")
    lines.insert(8, json.dumps({"id": "empty", "user_input": "Q?", "response": "A.", "retrieved_contexts": []}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]


def untimed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def same(a, b, tol: float = 1e-5) -> bool:
    """Equal, but floats within `tol`: a resumed run cuts other blocks, and a score batched with
    other answers differs by float rounding (`verirag.awf.verify_batch`)."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tol
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    return a == b


def verify(log: Path, out: Path, *extra: str) -> int:
    return main(["verify", str(log), "--out", str(out), "--label-field", "human", "--block", "4", *extra])


# ---------------------------------------------------------------- no model, no Ray started
def test_results_are_put_back_in_log_order_only_when_out_of_it(tmp_path):
    results = AppendedJsonl(tmp_path / "results.jsonl", "key")
    with results:
        for key in ("old", "b", "c", "a"):  # "old": a line of another log, kept first
            results.append({"key": key, "v": 1})
    assert results.put_in_order(["a", "b", "c"])
    assert [r["key"] for r in rows(tmp_path)] == ["old", "a", "b", "c"]
    before = (tmp_path / "results.jsonl").read_bytes()
    with open(tmp_path / "results.jsonl", "ab") as f:
        f.write(b'{"key": "torn')  # a killed run's last line: an in-order file is left as it is
    assert not results.put_in_order(["a", "b", "c"])
    assert (tmp_path / "results.jsonl").read_bytes() == before + b'{"key": "torn'
    with results:
        results.append({"key": "b", "v": 2})  # b again, later (a relabelled record): now out of order
    assert results.put_in_order(["a", "b", "c"])
    assert [(r["key"], r["v"]) for r in rows(tmp_path)] == [("old", 1), ("a", 1), ("b", 2), ("c", 1)]


def test_ray_options_are_checked_before_anything_runs(tmp_path, capsys):
    log = write_log(tmp_path / "log.jsonl")
    assert verify(log, tmp_path / "out", "--workers", "3") == 2
    assert "--workers and --ray-address are for --executor ray" in capsys.readouterr().err
    assert verify(log, tmp_path / "out", "--executor", "dask") == 2
    assert "--executor must be one of local, ray" in " ".join(capsys.readouterr().err.split())
    assert verify(log, tmp_path / "out", "--executor", "ray", "--workers", "0") == 2
    assert not (tmp_path / "out").exists()


def test_without_ray_the_error_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as where it is not installed
    assert verify(write_log(tmp_path / "log.jsonl"), tmp_path / "out", "--executor", "ray") == 2
    assert "pip install 'verirag[ray]'" in " ".join(capsys.readouterr().err.split())


def test_an_unreachable_cluster_is_named_at_once(tmp_path):
    from verirag.ray_session import check_reachable

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(InputError, match=f"cannot reach the Ray cluster at {address}.*ray start --head"):
            check_reachable(address)
    check_reachable("auto")  # Ray resolves these itself


# ---------------------------------------------------------------- a local Ray instance, the shipped verifier
@pytest.fixture(scope="module")
def ray_local():
    """A local Ray with 2 CPUs, no dashboard, started once for these tests and shut down after."""
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'verirag[ray]'")
    from verirag.ray_session import ray_session

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIRAG_OPENAI_MAX_RETRIES", "0")  # the workers' outage test fails at once (env read at start)
        with ray_session(num_cpus=2) as ray:
            yield ray


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The log verified by this process: what a Ray run must reproduce."""
    tmp = tmp_path_factory.mktemp("local")
    log = write_log(tmp / "log.jsonl")
    assert verify(log, tmp / "out") == 0
    return log, tmp / "out"


@pytest.mark.slow
def test_ray_workers_give_the_rows_summary_and_report_of_a_local_run(ray_local, local_run, tmp_path, capsys):
    log, local = local_run
    capsys.readouterr()
    assert verify(log, tmp_path / "ray", "--executor", "ray", "--workers", "2") == 0
    assert "14 of 14 lines done now, 0 were already done" in " ".join(capsys.readouterr().out.split())
    ray_rows, local_rows = rows(tmp_path / "ray"), rows(local)
    assert untimed(ray_rows) == untimed(local_rows)  # every field, in log order, malformed rows too
    assert [r["status"] for r in ray_rows].count("malformed") == 2
    assert [r["line"] for r in ray_rows] == list(range(1, 15))
    assert json.loads((tmp_path / "ray" / "summary.json").read_text()) == json.loads(
        (local / "summary.json").read_text()
    )
    assert (tmp_path / "ray" / "report.html").read_text() == (local / "report.html").read_text()


@pytest.mark.slow
def test_a_run_resumes_from_what_a_ray_or_a_local_run_left(ray_local, local_run, tmp_path, capsys):
    log, local = local_run
    full = rows(local)
    # a killed run, simulated: a cache holding some rows, not contiguous (shards finished out of order)
    kept = full[:4] + full[8:12]
    cache = tmp_path / "from-local"
    cache.mkdir()
    (cache / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept[4:] + kept[:4]))
    capsys.readouterr()
    assert verify(log, cache, "--executor", "ray", "--workers", "2") == 0
    assert "6 of 14 lines done now, 8 were already done" in " ".join(capsys.readouterr().out.split())
    resumed = rows(cache)
    assert same(untimed(resumed), untimed(full))  # in log order
    assert [r for r in resumed if r["key"] in {k["key"] for k in kept}] == kept  # not recomputed: as they were

    # Ray on the first half, then Ray on the whole, then the local run on it: each does only the rest
    half = tmp_path / "halves"
    assert verify(log, half, "--executor", "ray", "--workers", "2", "--limit", "7") == 0
    first = rows(half)
    assert untimed(first) == untimed(full[:7])
    capsys.readouterr()
    assert verify(log, half, "--executor", "ray", "--workers", "2") == 0
    assert "7 of 14 lines done now, 7 were already done" in " ".join(capsys.readouterr().out.split())
    assert rows(half)[:7] == first and same(untimed(rows(half)), untimed(full))
    assert verify(log, half) == 0
    assert "0 of 14 lines done now, 14 were already done" in " ".join(capsys.readouterr().out.split())


@pytest.mark.slow
def test_an_outage_in_a_worker_stops_with_exit_5_keeping_the_malformed_line(ray_local, tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text('{torn\n{"user_input": "Q?", "response": "A.", "retrieved_contexts": ["C."]}\n')
    out = tmp_path / "out"
    for _ in range(2):  # the rerun finds the malformed line done and stops at the outage again
        code = main(
            ["verify", str(log), "--out", str(out), "--executor", "ray", "--workers", "1"]
            + ["--method", "vanilla+nli", "--model", "http://127.0.0.1:9/v1#absent"]
        )
        assert code == 5
        assert "the same command resumes" in " ".join(capsys.readouterr().err.split())
        assert [(r["line"], r["status"]) for r in rows(out)] == [(1, "malformed")]
