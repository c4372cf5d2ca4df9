"""Run every benchmark in this folder, one after another, each in its own process.

.venv/bin/python benchmarks/run_all.py [--only NAME ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    "bench_llama_decode.py",
    "bench_prompt_batch.py",
    "bench_bm25.py",
    "bench_ask_latency.py",
    "bench_metrics.py",
    "bench_awf_methods.py",
    "bench_grid_reuse.py",
    "bench_server.py",
    "bench_lookback_features.py",
    "bench_forecaster.py",
    "bench_verifier.py",
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", help="benchmark file names (without .py)")
    args = ap.parse_args()
    failed = []
    for name in BENCHMARKS:
        if args.only and name[:-3] not in args.only:
            continue
        if not (HERE / name).exists():
            continue
        print(f"\n=== {name} ===", flush=True)
        if subprocess.call([sys.executable, str(HERE / name)]) != 0:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
