"""Paired comparison of two labels of one run: the paper's prompt layout against the shared one.

Reads OUT/results.jsonl of `verirag eval configs/layout-compare.yaml --out OUT` and, for each
dataset and each method that ran in both layouts (label "M" and "M@shared"), prints accuracy
(correct answers), AwF best F1 and PR-AUC in each layout and the paired difference (shared -
paper) with a 95% bootstrap interval over question groups (a HotpotQA question's two twins are
resampled together), plus seconds per question of each. A verifier's seconds are what it added
after its generator.

    .venv/bin/python benchmarks/compare_layouts.py runs/layout-compare [--suffix @shared]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--suffix", default="@shared")
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()

    from verirag.metrics.awf import best_f1, pr_auc
    from verirag.metrics.stats import percentile_interval
    from verirag.records import ResultStore

    by = defaultdict(dict)
    for r in ResultStore(args.run).load():
        by[(r.dataset, r.method)][r.example_id] = r
    rng = np.random.default_rng(0)
    print(
        f"{'dataset':9s} {'method':24s} {'n':>4s} {'metric':>8s} {'paper':>7s} {'shared':>7s} "
        f"{'shared-paper [95% CI]':>24s}"
    )
    for (dataset, label), paper in sorted(by.items()):
        if label.endswith(args.suffix) or (dataset, label + args.suffix) not in by:
            continue
        shared = by[(dataset, label + args.suffix)]
        ids = sorted(set(paper) & set(shared))
        groups = sorted({paper[i].group for i in ids})
        members = {g: [k for k, i in enumerate(ids) if paper[i].group == g] for g in groups}
        a = [paper[i] for i in ids]
        b = [shared[i] for i in ids]
        hard = a[0].hard

        def stats(rs, ix):
            s = np.array([rs[k].score for k in ix])
            V = np.array([rs[k].faithful for k in ix])
            A = np.array([rs[k].answerable for k in ix])
            C = np.array([rs[k].correct for k in ix])
            return {"accuracy": C.mean(), "best-F1": best_f1(s, V, A).f1, "PR-AUC": pr_auc(s, V, A, hard=hard)}  # noqa: B023

        full = list(range(len(ids)))
        est_a, est_b = stats(a, full), stats(b, full)
        diffs = defaultdict(list)
        for _ in range(args.resamples):
            ix = [k for g in rng.choice(groups, size=len(groups)) for k in members[g]]
            sa, sb = stats(a, ix), stats(b, ix)
            for m in sa:
                diffs[m].append(sb[m] - sa[m])
        for m in est_a:
            lo, hi = percentile_interval(np.array(diffs[m]), 0.95)
            print(
                f"{dataset:9s} {label:24s} {len(ids):4d} {m:>8s} {est_a[m]:7.3f} {est_b[m]:7.3f} "
                f"{est_b[m] - est_a[m]:+8.3f} [{lo:+.3f}, {hi:+.3f}]"
            )
        print(
            f"{dataset:9s} {label:24s} {len(ids):4d} {'s/q':>8s} {np.mean([r.seconds for r in a]):7.2f} "
            f"{np.mean([r.seconds for r in b]):7.2f}"
        )


if __name__ == "__main__":
    main()
