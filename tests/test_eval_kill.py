"""Kill -9 a real `verirag eval` subprocess mid-way and run it again: the results equal those of an
uninterrupted run, and no request the killed run had answered is sent to the model again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]

TOWNS = ["Varnholt", "Ostby", "Kleve", "Marden", "Sundal", "Trelle"]
COLOURS = ["green", "red", "blue", "yellow", "white", "black", "grey", "orange"]


def fixture(path: Path) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "question": f"What colour is the bridge in {t}?",
            "passages": [
                {"id": f"p{i}", "title": t, "text": f"The bridge in {t} is painted {c} every spring."},
                {"id": f"w{i}", "title": "Weather", "text": "It rains often in the valley."},
            ],
            "references": [c],
        }
        for i, (t, c) in enumerate(zip(TOWNS, COLOURS))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_eval(cfg: Path, out: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "VERIRAG_CACHE_DIR": str(cache), "VERIRAG_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "verirag", "eval", str(cfg), "--out", str(out), "--no-report"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def records(out: Path) -> list[dict]:
    f = out / "results.jsonl"
    if not f.exists():
        return []
    rows = []
    for line in f.read_text().splitlines():
        try:  # noqa: SIM105
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # the line the kill cut in half
            pass
    return rows


def cache_rows(cache: Path) -> set[str]:
    with sqlite3.connect(cache / "requests.sqlite") as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {k for (k,) in con.execute("SELECT key FROM requests")}


def misses(rows: list[dict]) -> int:
    """Requests the model really answered for these records (each counted by the method that made it)."""
    return sum(r["spent"]["calls"] - r["spent"]["cache_hits"] for r in rows)


def test_kill_9_then_rerun_gives_the_same_results_and_repeats_no_request(tmp_path):
    cfg = tmp_path / "kill.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "kill",
                "datasets": [{"name": "jsonl", "path": str(fixture(tmp_path / "towns.jsonl"))}],
                "models": ["smollm2-135m"],
                "methods": ["vanilla", "vanilla+self_check", "intrinsic"],
                "generation": {"max_tokens": 24, "n_ctx": 2048},
            }
        )
    )
    ref = run_eval(cfg, tmp_path / "ref", tmp_path / "ref-cache")
    assert ref.wait(600) == 0, ref.stderr.read().decode()[-2000:]
    reference = {r["key"]: r for r in records(tmp_path / "ref")}
    assert len(reference) == 18

    out, cache = tmp_path / "run", tmp_path / "cache"
    victim = run_eval(cfg, out, cache)
    deadline = time.time() + 600
    while len(records(out)) < 5 and time.time() < deadline:
        assert victim.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    killed = records(out)
    assert 5 <= len(killed) < 18
    answered_before = cache_rows(cache)

    again = run_eval(cfg, out, cache)
    assert again.wait(600) == 0, again.stderr.read().decode()[-2000:]
    final = {r["key"]: r for r in records(out)}
    assert set(final) == set(reference)
    for key, r in reference.items():
        assert (final[key]["answer"], final[key]["score"], final[key]["error"]) == (r["answer"], r["score"], r["error"])
    # every request the model answered is in the cache once; the rerun's answered requests plus those
    # the killed run had stored are exactly the requests of the uninterrupted run: none was repeated
    killed_keys = {r["key"] for r in killed}
    rerun_misses = misses([r for k, r in final.items() if k not in killed_keys])
    assert cache_rows(cache) == cache_rows(tmp_path / "ref-cache")
    assert len(answered_before) + rerun_misses == len(cache_rows(tmp_path / "ref-cache"))
    # and a third run has nothing left to do
    third = run_eval(cfg, out, cache)
    assert third.wait(300) == 0
    assert len(records(out)) == 18
