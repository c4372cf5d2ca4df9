"""Speed of the metrics: vectorised implementations vs. plain per-item Python, same run.

1. Token metrics (EM, F1, precision, recall, recall-strict, substring) over N (prediction,
   references) pairs: `token_metrics_batch` vs. a plain per-item implementation that computes the
   same six numbers with collections.Counter (normalising each string once), and vs. six
   per-metric loops over the scalar functions (instruct-qa's way: one pass per metric).
   ROUGE-L: `rouge_l_batch` (bit-parallel LCS) vs. the textbook dynamic programme per pair.
2. Bootstrap of AwF best-F1 and PR-AUC, B resamples over N examples: the vectorised bootstrap
   (resample indices, one sort, one bincount per batch) and the 2-D-rows mode vs. a naive loop over resamples (one
   curve per resample; timed on fewer resamples and extrapolated when slow, as printed).

    .venv/bin/python benchmarks/bench_metrics.py [--n 10000] [--resamples 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import string
import time
from collections import Counter

import numpy as np

from verirag.metrics import awf, qa
from verirag.metrics.stats import bootstrap_ci

WORDS = [
    "paris",
    "france",
    "tower",
    "eiffel",
    "1889",
    "river",
    "seine",
    "city",
    "capital",
    "king",
    "queen",
    "war",
    "peace",
    "president",
    "united",
    "states",
    "america",
    "john",
    "smith",
    "new",
    "york",
    "london",
    "river",
    "thames",
    "music",
    "band",
    "album",
    "song",
    "film",
    "director",
    "actor",
    "born",
    "died",
    "year",
    "century",
    "first",
    "second",
    "third",
    "world",
    "cup",
    "football",
    "team",
    "player",
    "season",
    "league",
    "game",
]


def make_pairs(n: int, seed: int) -> tuple[list[str], list[list[str]]]:
    rnd = random.Random(seed)
    preds, refs = [], []
    for _ in range(n):
        rs = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 4))) for _ in range(rnd.randint(1, 3))]
        body = [rnd.choice(WORDS + ["the", "a", "an", "is", "was", "of"]) for _ in range(rnd.randint(0, 25))]
        if rnd.random() < 0.6:  # often contains a reference
            pos = rnd.randint(0, len(body))
            body[pos:pos] = rnd.choice(rs).split()
        text = " ".join(body)
        if rnd.random() < 0.5:
            text = text.capitalize() + rnd.choice([".", "!", ",", ""])
        preds.append(text)
        refs.append([r.title() if rnd.random() < 0.3 else r for r in rs])
    return preds, refs


# ---------------------------------------------------------------- plain per-item reference
_ART = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def plain_normalize(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ART.sub(" ", s)
    return " ".join(s.split())


def plain_all(pred: str, refs: list[str]) -> tuple[float, ...]:
    p = plain_normalize(pred)
    pt = p.split()
    pc = Counter(pt)
    em = f1 = prec = rec = strict = sub = 0.0
    for r in refs:
        rn = plain_normalize(r)
        rt = rn.split()
        common = sum((pc & Counter(rt)).values())
        pr = common / len(pt) if pt else 0.0
        rc = common / len(rt) if rt else 1.0
        if not pt or not rt:
            f = float(pt == rt)
        elif common == 0:
            f = 0.0
        else:
            f = 2 * pr * rc / (pr + rc)
        em = max(em, float(pt == rt))
        f1, prec, rec = max(f1, f), max(prec, pr), max(rec, rc)
        strict = max(strict, float(rc == 1.0))
        sub = max(sub, float(rn in p))
    return em, f1, prec, rec, strict, sub


def lcs_dp(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def plain_rouge_l(pred: str, refs: list[str]) -> float:
    pt = plain_normalize(pred).split()
    best = 0.0
    for r in refs:
        rt = plain_normalize(r).split()
        if not pt or not rt:
            continue
        lcs = lcs_dp(pt, rt)
        if lcs:
            p, q = lcs / len(pt), lcs / len(rt)
            best = max(best, 2 * p * q / (p + q))
    return best


def timeit(fn, repeats: int = 3):
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def bench_tokens(n: int, seed: int) -> None:
    preds, refs = make_pairs(n, seed)
    keys = ["exact_match", "f1", "precision", "recall", "recall_strict", "substring_match"]
    t_vec, vec = timeit(lambda: qa.token_metrics_batch(preds, refs))
    t_plain, plain = timeit(lambda: np.array([plain_all(p, r) for p, r in zip(preds, refs)]))
    scalar = {
        "exact_match": qa.exact_match,
        "f1": qa.token_f1,
        "precision": qa.token_precision,
        "recall": qa.token_recall,
        "recall_strict": qa.recall_strict,
        "substring_match": qa.substring_match,
    }
    t_six, _ = timeit(lambda: {k: [f(p, r) for p, r in zip(preds, refs)] for k, f in scalar.items()}, 1)
    for j, k in enumerate(keys):
        np.testing.assert_allclose(vec[k], plain[:, j], err_msg=k)
    print(f"token metrics (6 metrics) over {n:,} pairs, {sum(map(len, refs)):,} references")
    print(f"  vectorised token_metrics_batch   {t_vec * 1e3:9.1f} ms")
    print(f"  plain per-item Python (Counter)   {t_plain * 1e3:9.1f} ms   ratio {t_plain / t_vec:5.1f}x")
    print(f"  six per-metric loops (scalar fns) {t_six * 1e3:9.1f} ms   ratio {t_six / t_vec:5.1f}x")
    t_rv, rv = timeit(lambda: qa.rouge_l_batch(preds, refs))
    t_rp, rp = timeit(lambda: np.array([plain_rouge_l(p, r) for p, r in zip(preds, refs)]), 1)
    np.testing.assert_allclose(rv, rp)
    print(f"ROUGE-L over {n:,} pairs")
    print(f"  rouge_l_batch (bit-parallel LCS)  {t_rv * 1e3:9.1f} ms")
    print(f"  plain per-item DP LCS             {t_rp * 1e3:9.1f} ms   ratio {t_rp / t_rv:5.1f}x")


def bench_bootstrap(n: int, B: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(n), 3)  # ties, as real judge scores have
    answerable = (rng.random(n) < 0.7).astype(np.int64)
    V = answerable * (rng.random(n) < 0.3 + 0.6 * scores).astype(np.int64)
    print(f"bootstrap of AwF statistics: {B:,} resamples x {n:,} examples")
    for name, stat in (("best F1", awf.best_f1_statistic), ("PR-AUC", awf.pr_auc_statistic)):
        t_w, rw = timeit(
            lambda stat=stat: bootstrap_ci(
                stat, scores, V, answerable, n_resamples=B, seed=seed, keep_distribution=True
            ),
            1,
        )
        t_r, rr = timeit(
            lambda stat=stat: bootstrap_ci(
                stat,
                scores,
                V,
                answerable,
                n_resamples=B,
                seed=seed,
                vectorized=True,
                keep_distribution=True,
            ),
            1,
        )
        np.testing.assert_allclose(rw.distribution, rr.distribution)
        # naive loop: one curve per resample, on fewer resamples if slow, extrapolated
        m = min(B, 100)
        t_l, rl = timeit(
            lambda stat=stat, m=m: bootstrap_ci(
                stat,
                scores,
                V,
                answerable,
                n_resamples=m,
                seed=seed,
                vectorized=False,
                keep_distribution=True,
            ),
            1,
        )
        np.testing.assert_allclose(rl.distribution, rw.distribution[:m])
        t_loop = t_l * B / m
        note = f"(timed on {m} resamples, extrapolated x{B / m:.0f})" if m < B else ""
        print(f"  {name:7s} estimate {rw.estimate:.4f}  95% CI [{rw.low:.4f}, {rw.high:.4f}]")
        print(f"    vectorised (indices, one sort) {t_w:7.2f} s")
        print(f"    vectorised (2-D rows, B sorts)  {t_r:7.2f} s")
        print(f"    naive loop over resamples       {t_loop:7.2f} s {note}")
        print(f"    ratio naive / vectorised        {t_loop / t_w:7.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(
        f"# bench_metrics: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}"
    )
    bench_tokens(args.n, args.seed)
    bench_bootstrap(args.n, args.resamples, args.seed)


if __name__ == "__main__":
    main()
