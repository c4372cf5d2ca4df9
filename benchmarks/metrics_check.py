"""Correctness metrics vs. human judgement on instruct-qa's annotated responses (Adlakha et al.).

Computes EM, token F1 / precision / recall, recall-strict, substring match ("Recall (S)"),
METEOR, ROUGE-L, BERTScore (P / R / F1, MiniLM by default) and optionally an LLM judge, for every
response in ../shared/data/instruct_qa_human/, and prints their Spearman rho and Kendall tau-b
with the human labels (label_correct: 1 = correct, 0 = incorrect or refused), x100, beside the
values the paper reports (Table 3, 1,200 responses; BERTScore there used roberta-large).

    .venv/bin/python benchmarks/metrics_check.py [--file 1200|396|both] [--no-bertscore]
        [--no-meteor] [--bootstrap 1000] [--llm-judge PRESET [--judge-mode generate|logprobs]
        [--judge-limit N]] [--by-dataset] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from verirag.metrics import qa
from verirag.metrics.stats import metric_human_correlation

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
FILES = {"1200": "correctness_human_eval_1200.jsonl", "396": "correctness_nq_corrected_396.jsonl"}

# Adlakha et al., Table 3 (Spearman, Kendall tau), 1,200 responses.
PAPER = {
    "EM": (27.326, 27.326),
    "F1": (47.341, 40.164),
    "Recall": (60.048, 55.622),
    "Recall (S) = substring": (52.535, 52.535),
    "Precision": (43.929, 37.636),
    "METEOR": (48.232, 39.845),
    "ROUGE-L": (45.874, 38.797),
    "BertS (F1)": (31.853, 26.133),
    "BertS (Recall)": (38.841, 31.866),
    "BertS (Precision)": (20.876, 17.129),
    "GPT4-Eval": (67.474, 67.474),
}


def load(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def compute(rows: list[dict], args) -> tuple[list[dict], list[str], dict[str, float]]:
    preds = [r["response"] or "" for r in rows]
    refs = [r["references"] for r in rows]
    timings = {}
    t = time.perf_counter()
    tok = qa.token_metrics_batch(preds, refs)
    timings["token metrics"] = time.perf_counter() - t
    cols = {
        "EM": tok["exact_match"],
        "F1": tok["f1"],
        "Recall": tok["recall"],
        "Recall-strict (token)": tok["recall_strict"],
        "Recall (S) = substring": tok["substring_match"],
        "Precision": tok["precision"],
    }
    if not args.no_meteor:
        t = time.perf_counter()
        try:
            cols["METEOR"] = qa.meteor_batch(preds, refs)
        except (ImportError, LookupError) as e:
            print(f"METEOR skipped: {e}", file=sys.stderr)
        timings["METEOR"] = time.perf_counter() - t
    t = time.perf_counter()
    cols["ROUGE-L"] = qa.rouge_l_batch(preds, refs)
    timings["ROUGE-L"] = time.perf_counter() - t
    if not args.no_bertscore:
        t = time.perf_counter()
        scorer = qa.BertScorer(args.bertscore_model) if args.bertscore_model else None
        b = qa.bertscore_batch(preds, refs, scorer=scorer)
        cols.update({"BertS (F1)": b.f1, "BertS (Recall)": b.recall, "BertS (Precision)": b.precision})
        timings["BERTScore"] = time.perf_counter() - t
    if args.llm_judge:
        from verirag.evaluation.judges import CorrectnessJudge
        from verirag.llm import load_llm
        from verirag.metrics.judges import score_or_nan

        t = time.perf_counter()
        judge = CorrectnessJudge(load_llm(args.llm_judge), mode=args.judge_mode)
        limit = args.judge_limit or len(rows)
        scores = np.full(len(rows), np.nan)
        unreadable = 0
        for i, r in enumerate(rows[:limit]):
            question = "\n".join(r.get("history") or []) + ("\n" if r.get("history") else "") + r["question"]
            v = judge.judge(question, r["references"], r["response"] or "")
            scores[i] = score_or_nan(v)
            unreadable += v.verdict is None
        cols[f"LLM judge ({args.llm_judge}, {args.judge_mode})"] = scores
        timings["LLM judge"] = time.perf_counter() - t
        print(f"LLM judge: {limit} responses judged, {unreadable} verdicts unreadable (left out)", file=sys.stderr)
    records = []
    for i, r in enumerate(rows):
        rec = {name: (None if math.isnan(float(v[i])) else float(v[i])) for name, v in cols.items()}
        rec["label_correct"] = int(r["label_correct"])
        rec["dataset"] = r["dataset"]
        records.append(rec)
    return records, list(cols), timings


def print_table(title: str, table, with_paper: bool) -> None:
    print(f"\n## {title}")
    lines = table.to_text().splitlines()
    if with_paper:
        width = max(len(x) for x in lines)
        lines[0] = lines[0].ljust(width) + "   paper rho / tau"
        lines[1] = lines[1].ljust(width) + "   -----------------"
        for k, row in enumerate(table.rows):
            ref = PAPER.get(row.metric)
            if ref:
                lines[k + 2] = lines[k + 2].ljust(width) + f"   {ref[0]:6.2f} / {ref[1]:6.2f}"
    print("\n".join(lines))
    best_t, best_r = table.best("kendall_tau_b"), table.best("spearman")
    print(
        f"best by Kendall tau-b: {best_t.metric} ({best_t.kendall_tau_b * 100:.2f}); "
        f"best by Spearman: {best_r.metric} ({best_r.spearman * 100:.2f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--file", choices=["1200", "396", "both"], default="both")
    ap.add_argument("--no-bertscore", action="store_true")
    ap.add_argument("--bertscore-model", default=None, help="local encoder folder (default: MiniLM)")
    ap.add_argument("--no-meteor", action="store_true")
    ap.add_argument("--bootstrap", type=int, default=0, help="bootstrap resamples for 95%% CIs")
    ap.add_argument("--llm-judge", default=None, metavar="PRESET", help="e.g. qwen2.5-1.5b")
    ap.add_argument("--judge-mode", choices=["generate", "logprobs"], default="generate")
    ap.add_argument("--judge-limit", type=int, default=0, help="judge only the first N responses")
    ap.add_argument("--by-dataset", action="store_true", help="also a table per source dataset")
    ap.add_argument("--json", type=Path, default=None, help="write the tables as JSON")
    args = ap.parse_args()

    folder = args.data_dir / "instruct_qa_human"
    if not folder.is_dir():
        sys.exit(f"{folder} not found: this check needs ../shared/data (see DESIGN.md)")
    out = {}
    for key in ["1200", "396"] if args.file == "both" else [args.file]:
        rows = load(folder / FILES[key])
        records, names, timings = compute(rows, args)
        table = metric_human_correlation(records, names, "label_correct", n_resamples=args.bootstrap)
        pos = sum(r["label_correct"] for r in records)
        print_table(
            f"{FILES[key]}: {len(rows)} responses, {pos} judged correct, {len(rows) - pos} incorrect or refused (x100)",
            table,
            with_paper=key == "1200",
        )
        print("time: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
        if key == "1200":
            print(
                "note: in this file some human labels do not fit the response they are paired with "
                "(the released response was likely another sample than the one annotated; see "
                "shared/data/README.md), which caps every metric's correlation; the 396-row NQ "
                "file with re-checked labels is the one to validate metrics on."
            )
        out[key] = table.to_dicts()
        if args.by_dataset:
            for ds in sorted({r["dataset"] for r in records}):
                sub = [r for r in records if r["dataset"] == ds]
                t = metric_human_correlation(sub, names, "label_correct")
                print_table(f"{FILES[key]} / {ds}: {len(sub)} responses", t, with_paper=False)
                out[f"{key}/{ds}"] = t.to_dicts()
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
