"""Importing a benchmark script (as the tests of its pure parts do) leaves the process as it was: a
script that turned the request cache off at import once failed three later tests of the cache."""

from __future__ import annotations

import pytest
from benchmark_module import BENCHMARKS, load_benchmark

# the scripts that set environment variables for their runs: each does it in main()
SETS_ENVIRONMENT = ["bench_demo_prune", "bench_ask_latency", "bench_server"]


@pytest.mark.parametrize("name", SETS_ENVIRONMENT)
def test_a_benchmark_script_sets_no_environment_when_imported(name, monkeypatch):
    monkeypatch.delenv("VERIRAG_NO_CACHE", raising=False)
    load_benchmark(name)  # raises if the import changed os.environ


def test_the_guard_catches_a_script_that_does(tmp_path, monkeypatch):
    import benchmark_module

    monkeypatch.setattr(benchmark_module, "BENCHMARKS", tmp_path)
    (tmp_path / "sets_env.py").write_text('import os\nos.environ["VERIRAG_NO_CACHE"] = "1"\n')
    monkeypatch.delenv("VERIRAG_NO_CACHE", raising=False)
    with pytest.raises(AssertionError, match="VERIRAG_NO_CACHE"):
        benchmark_module.load_benchmark("sets_env")
    import os

    assert "VERIRAG_NO_CACHE" not in os.environ  # and put it back


def test_every_script_named_here_exists():
    assert all((BENCHMARKS / f"{n}.py").exists() for n in SETS_ENVIRONMENT)
