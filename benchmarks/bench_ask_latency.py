"""`ask` latency of a pipeline preset, broken down into retrieve / generate / verify, per method.

Runs the shipped demo questions with the request cache off (every call is paid), after one
warm-up question that also loads the models. The baseline in the same run is generation:
verification is reported as a ratio to it, since both are dominated by prompt processing. With
several `--method`s each runs the same questions on the same loaded model, so their ratios can
be compared (e.g. vanilla+nli, which reads every passage again, against vanilla+self_check, which
continues the generation's KV state and reads ~20 new tokens).

    .venv/bin/python benchmarks/bench_ask_latency.py [--preset local] [--method M ...] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def run(p, questions, repeats: int) -> dict[str, float]:
    rows = []
    for _ in range(repeats):
        for q in questions:
            r = p.ask(q["question"])
            rows.append(r.timings)
            print(
                f"  {r.action:9s} score {r.score:.3f}  {q['question'][:60]}  "
                + " ".join(f"{k}={v:.2f}s" for k, v in r.timings.items()),
                flush=True,
            )
    return {k: statistics.mean(row.get(k, 0.0) for row in rows) for k in ("retrieve", "generate", "verify", "total")}


def main() -> None:
    os.environ["VERIRAG_NO_CACHE"] = "1"  # set here, not at import (tests import benchmark scripts)
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="local")
    ap.add_argument("--method", action="append", help="AwF method (repeatable); default: the preset's")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()

    from verirag import Pipeline
    from verirag.demo import corpus_path, questions

    methods = args.method or [None]
    results = {}
    for method in methods:
        p = Pipeline.from_preset(args.preset, **({"method": method} if method else {}))
        t = time.perf_counter()
        p.index(corpus_path())
        t_index = time.perf_counter() - t
        t = time.perf_counter()
        p.ask("Warm-up: when was the lighthouse built?")
        t_warm = time.perf_counter() - t
        print(f"== {p.config.method}: index {t_index:.2f} s; warm-up question incl. model load {t_warm:.2f} s")
        results[p.config.method] = (run(p, questions(), args.repeats), p)
    for method, (mean, p) in results.items():
        print(f"preset {args.preset} ({p.config.model}), method {method}, k={p.config.k}")
        for k, v in mean.items():
            print(f"  mean {k:9s}: {v:7.3f} s")
        print(f"  verify / generate ratio: {mean['verify'] / mean['generate']:.3f}")
        print(f"  retrieve / total ratio : {mean['retrieve'] / mean['total']:.4f}")


if __name__ == "__main__":
    main()
