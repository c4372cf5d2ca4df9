"""Every AwF method on N questions of the NQ oracle set: AwF best-F1, PR-AUC, seconds per question.

Runs the experiment runner (`verirag_lab.experiments`) on the `nq` benchmark built from ../shared/data
(each question's top-5 passages retrieved by BM25 from all oracle gold passages plus the HotpotQA
paragraphs, so some questions get their gold passage and some do not), then prints one row per
method from the records:
- A (answerable): some retrieved passage contains a reference answer;
- V (faithful): the answer matches a reference (token recall 1 or substring) and A.
All methods of one question share one trace, so a generation is paid once; "s/q" is the marginal
time a method added on top of the methods before it in the list. The run resumes from --out and
from the request cache; "cached" is the share of backend calls the cache answered, and timings of
cached calls are not the cost of the method (use a fresh VERIRAG_CACHE_DIR to time from cold).

    .venv/bin/python benchmarks/bench_awf_methods.py [--n 30] [--model qwen2.5-0.5b] [--out runs/bench-awf-nq]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_METHODS = [
    "vanilla",
    "vanilla+pre_answering",
    "vanilla+nli",
    "vanilla+k_precision",
    "vanilla+llm_judge",
    "instructrag",
    "instructrag+pre_answering",
    "instructrag+nli",
    "intrinsic",
    "cot_hybrid",
    "dual_generation",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--out", default="runs/bench-awf-nq")
    args = ap.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"{DATA} not found: this benchmark reads ../shared/data")

    from verirag.metrics.awf import best_f1, pr_auc
    from verirag.records import ResultStore
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    cfg = parse_config(
        {
            "name": "bench-awf-nq",
            "models": [args.model],
            "methods": methods,
            "datasets": [
                {
                    "name": "nq",
                    "n": args.n,
                    "seed": args.seed,
                    "path": str(DATA),
                    "options": {"k": args.k, "retriever": "bm25"},
                }
            ],
            "generation": {"max_tokens": args.max_tokens},
        }
    )
    outcome = run_experiment(cfg, args.out, progress=True)
    recs = [r for r in ResultStore(args.out).load() if r.model == args.model and r.dataset == "nq"]
    by = defaultdict(list)
    for r in recs:
        by[r.method].append(r)
    A = np.array([r.answerable for r in by[methods[0]]])
    print(
        f"\n{args.n} questions, model {args.model}, {outcome.written} new records, "
        f"{outcome.skipped} resumed; {int(A.sum())} of {len(A)} answerable from their top-{args.k}"
    )
    print(f"{'method':28s} {'best-F1':>8s} {'PR-AUC':>8s} {'s/q':>7s} {'errors':>7s} {'cached':>7s}")
    for m in methods:
        rs = sorted(by[m], key=lambda r: r.example_id)
        if not rs:
            print(f"{m:28s} (no records: see {args.out}/failures.jsonl)")
            continue
        s = np.array([r.score for r in rs])
        V = np.array([r.faithful for r in rs])
        A = np.array([r.answerable for r in rs])
        calls = sum(r.calls for r in rs)
        hits = sum(r.details.get("cache_hits", 0) for r in rs)
        print(
            f"{m:28s} {best_f1(s, V, A).f1:8.3f} {pr_auc(s, V, A, hard=rs[0].hard):8.3f} "
            f"{np.mean([r.seconds for r in rs]):7.2f} {sum(r.error is not None for r in rs):7d} "
            f"{(hits / calls if calls else 0):7.0%}"
        )
    print("s/q is the marginal time in the order above (a shared generation is paid by the first method).")


if __name__ == "__main__":
    main()
