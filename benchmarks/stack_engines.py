"""Issue 48, item 5: can `ask`'s default judge (the shipped stack) read the features of another
llama.cpp build? The stack combines the verifier's score with the default model's own signals (the
answer's token log-probabilities, `llm_judge`'s P(yes)), fitted on the default build (llama-cpp-python,
n_batch 64); a model's fingerprint names engine and batch, so on ik_llama.cpp `ask` sets the stack
aside for the verifier alone. This compares the stack applied to each build's features, on two runs
of one own-answer config (the committed default-build run and one made with
`VERIRAG_LLAMA_ENGINE=ik VERIRAG_N_BATCH=512`), each answer labelled by its own gold grade:

- the stack's AUROC on each run (its features read from each run's rows; the verifier's score from a
  rescored file of the stack's verifier and rule, `rescore_own_answers.py --softmin 0`), the
  difference paired over questions;
- the features' agreement on the answers both builds wrote alike (the same text): mean |difference|
  and Spearman correlation per feature, and how often the stack's verdict at 0.5 differs.

    python benchmarks/stack_engines.py --default data/verifier/own_answers/own-answers-pruned-qwen2.5-1.5b \\
        --other data/verifier/own_answers/own-answers-pruned-ik-qwen2.5-1.5b \\
        --verifier-scores DEFAULT_FILE OTHER_FILE [--out SUMMARY.json]

`--out` writes these numbers as JSON: the evidence `verirag_lab.train.stack_repoint --equivalent-model`
reads to let the stack accept the other build's model fingerprint.
Both runs' rows are their exports (ids, answers, scores, signals; no benchmark text).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

JUDGE = "vanilla+llm_judge"


def rows_by_answer(run: Path) -> dict[str, dict]:
    """{example id: {"answer", "faithful", "group", "signals", "llm_judge"}} of a run's export."""
    out: dict[str, dict] = {}
    for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        e = out.setdefault(r["example_id"], {"answer": r["answer"], "faithful": r["faithful"], "group": r["group"]})
        e.setdefault("signals", (r.get("details") or {}).get("signals", {}).get("values", {}))
        if r["method"] == JUDGE:
            e["llm_judge"] = r["score"] if r.get("error") is None else None
    return out


def verifier_scores(path: Path) -> dict[str, float]:
    """{example id: score} of a rescored file (`rescore_own_answers.py`)."""
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return {r["example_id"]: r["score"] for r in lines[1:] if r.get("error") is None}


def features(rows: dict[str, dict], verifier: dict[str, float], names: list[str]) -> dict[str, dict[str, float]]:
    """{example id: {feature: value}} of the answers that have every feature the stack reads."""
    out = {}
    for k, e in rows.items():
        values = {**e["signals"], "llm_judge": e.get("llm_judge"), "verifier": verifier.get(k)}
        if all(values.get(f) is not None and np.isfinite(values[f]) for f in names):
            out[k] = {f: float(values[f]) for f in names}
    return out


def main(argv: list[str] | None = None) -> None:
    from scipy.stats import spearmanr

    from verirag.learned.stack import StackedVerifier, shipped_stack_path
    from verirag.metrics.calibration import auroc
    from verirag.metrics.stats import group_bootstrap_intervals

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--default", type=Path, required=True, help="the default build's run (its export)")
    ap.add_argument("--other", type=Path, required=True, help="the other build's run (its export)")
    ap.add_argument("--verifier-scores", type=Path, nargs=2, required=True, metavar=("DEFAULT", "OTHER"))
    ap.add_argument("--stack", type=Path, default=None, help="a stack (default: the shipped one)")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=None, help="write the summary as JSON here")
    args = ap.parse_args(argv)
    stack = StackedVerifier.load(args.stack or shipped_stack_path())
    names = list(stack.features)
    runs = [rows_by_answer(args.default), rows_by_answer(args.other)]
    feats = [features(r, verifier_scores(v), names) for r, v in zip(runs, args.verifier_scores)]
    keys = sorted(set(feats[0]) & set(feats[1]))
    print(f"{len(keys)} answers with every feature on both builds (of {len(runs[0])} and {len(runs[1])})")
    score = [stack.predict_proba(np.array([[f[k][n] for n in names] for k in keys])) for f in feats]
    y = [np.array([r[k]["faithful"] for k in keys]) for r in runs]
    groups = [runs[0][k]["group"] for k in keys]

    def stat(ix):
        a = np.array([auroc(score[0][r], y[0][r]) for r in ix])
        b = np.array([auroc(score[1][r], y[1][r]) for r in ix])
        return {"default": a, "other": b, "other-default": b - a}

    res = group_bootstrap_intervals(stat, groups, n_resamples=args.resamples, seed=0)
    summary: dict = {
        "default_run": str(args.default),
        "other_run": str(args.other),
        "answers": len(keys),
        "questions": len(set(groups)),
        "resamples": args.resamples,
        **{k: {"estimate": res[k].estimate, "low": res[k].low, "high": res[k].high} for k in res},
        "labels_differ": int((y[0] != y[1]).sum()),
    }
    for k in ("default", "other", "other-default"):
        r, sign = res[k], "+" if "-" in k else ""
        print(f"  stack AUROC {k:14s} {r.estimate:{sign}.3f} [{r.low:{sign}.3f}, {r.high:{sign}.3f}]")
    print(
        f"  right answers: default {int(y[0].sum())}, other {int(y[1].sum())}; labels differ on {int((y[0] != y[1]).sum())}"
    )
    alike = [k for k in keys if runs[0][k]["answer"] == runs[1][k]["answer"]]
    print(f"\n{len(alike)} answers written alike by both builds: the features' agreement")
    for n in names:
        a = np.array([feats[0][k][n] for k in alike])
        b = np.array([feats[1][k][n] for k in alike])
        print(f"  {n:14s} mean |diff| {np.mean(np.abs(a - b)):.4f}  Spearman {spearmanr(a, b).statistic:.3f}")
    ix = [keys.index(k) for k in alike]
    s0, s1 = score[0][ix], score[1][ix]
    differ = int(((s0 >= 0.5) != (s1 >= 0.5)).sum())
    print(f"  the stack's score: mean |diff| {np.mean(np.abs(s0 - s1)):.4f}; its verdict at 0.5 differs on {differ}")
    summary.update(
        alike=len(alike), verdict_differs_alike=differ, score_mean_abs_diff_alike=float(np.mean(np.abs(s0 - s1)))
    )
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
        print(f"\nsummary: {args.out}")


if __name__ == "__main__":
    main()
