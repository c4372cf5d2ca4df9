"""`ask` latency of a pipeline preset, broken down into retrieve / generate / verify.

Runs the shipped demo questions with the request cache off (every call is paid), after one
warm-up question that also loads the models. The baseline in the same run is generation:
verification is reported as a ratio to it, since both are dominated by prompt processing.

    .venv/bin/python benchmarks/bench_ask_latency.py [--preset local] [--repeats 1]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ["VERIRAG_NO_CACHE"] = "1"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="local")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()

    from verirag import Pipeline
    from verirag.demo import corpus_path, questions

    p = Pipeline.from_preset(args.preset)
    t = time.perf_counter()
    p.index(corpus_path())
    t_index = time.perf_counter() - t
    t = time.perf_counter()
    p.ask("Warm-up: when was the lighthouse built?")
    t_warm = time.perf_counter() - t
    rows = []
    for _ in range(args.repeats):
        for q in questions():
            r = p.ask(q["question"])
            rows.append(r.timings)
            print(f"  {r.action:9s} score {r.score:.3f}  {q['question'][:60]}  "
                  + " ".join(f"{k}={v:.2f}s" for k, v in r.timings.items()))
    mean = {k: statistics.mean(row.get(k, 0.0) for row in rows) for k in ("retrieve", "generate", "verify", "total")}
    print(f"preset {args.preset} ({p.config.model}), {len(rows)} questions, k={p.config.k}")
    print(f"index demo corpus: {t_index:.2f} s; first question incl. model load: {t_warm:.2f} s")
    for k, v in mean.items():
        print(f"mean {k:9s}: {v:7.3f} s")
    print(f"verify / generate ratio: {mean['verify'] / mean['generate']:.2f}")
    print(f"retrieve / total ratio : {mean['retrieve'] / mean['total']:.4f}")


if __name__ == "__main__":
    main()
