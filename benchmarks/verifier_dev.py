"""The verifier's dev set: answers of four other LLMs with human correctness labels (instruct_qa_human,
its HotpotQA and TopiOCQA rows; the NQ rows are the final test, run outside issue 27), and how well
each judge ranks the correct ones above the others, with paired bootstrap intervals over questions.

This is evaluation data: never train or tune on it (the labelling run drops all its questions).

    # 1. write the dev log (RAGAS field names; under runs/, never committed: it holds benchmark text)
    python benchmarks/verifier_dev.py log --out runs/verifier_dev/dev.jsonl
    # 2. run each judge on it with `verirag verify` (resumable; the request cache keeps LLM calls)
    VERIRAG_THREADS=1 verirag verify runs/verifier_dev/dev.jsonl --label-field label \
        --method vanilla+nli --model qwen2.5-1.5b --out runs/verifier_dev/nli
    verirag verify runs/verifier_dev/dev.jsonl --label-field label \
        --method "vanilla+verifier(verifier=DIR)" --out runs/verifier_dev/verifier
    # 3. the table: AUROC of each judge, of K-Precision (no model) and of token Recall (it sees the
    #    gold answers, which a verifier never has); paired differences against the first judge
    python benchmarks/verifier_dev.py compare runs/verifier_dev/verifier runs/verifier_dev/nli ...
    # an LLM judge's scores outlive the machine as ids and scores (data/verifier/dev_scores/), and
    # compare reads them in place of its run folder
    python benchmarks/verifier_dev.py export runs/verifier_dev/nli --out data/verifier/dev_scores/nli-qwen2.5-1.5b.jsonl
    # 4. which aggregate of a per-sentence judge's sentence scores ranks answers best (the verifier
    #    takes the weakest sentence; paired differences against that)
    python benchmarks/verifier_dev.py aggregates runs/verifier_dev/verifier
    # 5. the conversation (issue 36): TopiOCQA's follow-ups verified with their history (the log's
    #    `history` field) and without it (--history-field none); paired difference with history first
    python benchmarks/verifier_dev.py log --dataset topiocqa --out runs/verifier_dev/topiocqa.jsonl
    verirag verify runs/verifier_dev/topiocqa.jsonl --label-field label --out runs/verifier_dev/verifier-history
    verirag verify runs/verifier_dev/topiocqa.jsonl --label-field label --history-field none \
        --out runs/verifier_dev/verifier-no-history
    python benchmarks/verifier_dev.py export runs/verifier_dev/verifier-history \
        --out runs/verifier_dev/verifier-history.jsonl   # v1's: data/verifier/dev_scores/verifier-v1-history.jsonl
    python benchmarks/verifier_dev.py compare runs/verifier_dev/verifier-history.jsonl \
        runs/verifier_dev/verifier-no-history
    # 6. issue 47 item 3: the earlier answers counted as context (they join the passages)
    python benchmarks/verifier_dev.py log --dataset topiocqa --earlier-answers-as-passages \
        --out runs/verifier_dev/topiocqa-answers.jsonl
    verirag verify runs/verifier_dev/topiocqa-answers.jsonl --label-field label --out runs/verifier_dev/verifier-answers
    # the shipped verifier's three readings, 2026-11-26: data/verifier/dev_scores/topiocqa-shipped-*.jsonl
    # 7. issue 47 item 3: each follow-up rewritten by the local LLM to stand on its own (prompt
    #    `standalone_question`; resumable; the rewrites are committed as question ids and generated
    #    text), then judged without the history
    python benchmarks/verifier_dev.py rewrite --out data/verifier/dev_scores/topiocqa-standalone-qwen2.5-1.5b.jsonl
    python benchmarks/verifier_dev.py log --dataset topiocqa \
        --standalone data/verifier/dev_scores/topiocqa-standalone-qwen2.5-1.5b.jsonl \
        --out runs/verifier_dev/topiocqa-standalone.jsonl
    verirag verify runs/verifier_dev/topiocqa-standalone.jsonl --label-field label --out runs/verifier_dev/verifier-standalone

Every judge is compared on the same answers: by default those every run scored (a judge stopped
part way, or run with --limit, scored a random sample of questions: the log's order); with
--all, every answer, a missing or failed score counted as 0.5. The counts are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from verirag.metrics.calibration import auroc
from verirag.metrics.faithfulness import k_precision
from verirag.metrics.qa import token_recall
from verirag.metrics.stats import group_bootstrap_intervals

DEV_DATASETS = ("hotpot_qa", "topiocqa")
SOURCE = "instruct_qa_human/correctness_human_eval_1200.jsonl"
# a benchmark of this checkout may know where the checkout keeps its data; the library may not
DATA = Path(os.environ.get("VERIRAG_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
MISSING_SCORE = 0.5
# ways to turn an answer's sentence scores into one score; the first is what the verifier does
AGGREGATES = {"min": np.min, "mean": np.mean, "median": np.median, "first": lambda s: s[0], "max": np.max}


def dev_rows(data: Path | None = None) -> list[dict]:
    """The dev rows as RAGAS log lines: id, user_input, response, retrieved_contexts, reference,
    label (1: humans judged the response correct), group (the question), and history (TopiOCQA's
    earlier turns, oldest first; `verirag verify` reads it, unless --history-field none)."""
    path = Path(data or DATA) / SOURCE
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if d["dataset"] not in DEV_DATASETS:
                continue
            rows.append(
                {
                    "id": f"{d['dataset']}:{d['id']}:{d['model']}",
                    "group": f"{d['dataset']}:{d['id']}",
                    "user_input": d["question"],
                    "response": d["response"],
                    "retrieved_contexts": [g["text"] for g in d["gold_passages"]],
                    "reference": d["references"],
                    "label": int(d["human_correctness"] == "correct"),
                    **({"history": [str(t) for t in d["history"]]} if d.get("history") else {}),
                }
            )
    # whole questions in a seeded order, so that a judge stopped part way (or run with --limit)
    # has scored a random sample of questions, every answer of each
    rank = {g: i for i, g in enumerate(np.random.default_rng(0).permutation(sorted({r["group"] for r in rows})))}
    return sorted(rows, key=lambda r: rank[r["group"]])


def standalone_rewrite(llm, question: str, history: list[str]) -> tuple[str, str | None]:
    """(the follow-up rewritten to stand on its own, error): prompt `standalone_question`; a failed
    or empty rewrite keeps the question and says why. A first question (no history) is its own."""
    import re

    from verirag.conversation import speaker_lines
    from verirag.errors import VeriragError
    from verirag.prompts import load_prompt

    if not history:
        return question, None
    messages = load_prompt("standalone_question").messages(
        conversation="\n".join(speaker_lines(history)), question=question
    )
    try:
        text = llm.generate(messages, max_tokens=64, temperature=0.0).text
    except VeriragError as e:
        return question, f"{type(e).__name__}: {e}"
    lines = [t.strip() for t in text.strip().splitlines() if t.strip()]
    text = re.sub(r"^(rewritten )?question:\s*", "", lines[0], flags=re.I).strip().strip('"') if lines else ""
    return (text, None) if text else (question, "the model returned no question")


def rewrite(rows: list[dict], out: Path, model: str) -> int:
    """Each TopiOCQA question (a group) rewritten once, appended to `out` as {group, standalone,
    error} as it is made; the groups already there are skipped (a killed run goes on)."""
    from rich.progress import Progress

    from verirag.llm.factory import load_llm

    done = (
        {json.loads(t)["group"] for t in out.read_text(encoding="utf-8").splitlines() if t.strip()}
        if out.exists()
        else set()
    )
    todo = {r["group"]: r for r in rows if r["group"].startswith("topiocqa:") and r["group"] not in done}
    out.parent.mkdir(parents=True, exist_ok=True)
    llm = load_llm(model) if todo else None
    with Progress() as bar, open(out, "a", encoding="utf-8") as fh:
        task = bar.add_task("rewriting follow-ups", total=len(todo))
        for group, r in todo.items():
            text, error = standalone_rewrite(llm, r["user_input"], r.get("history", []))
            fh.write(json.dumps({"group": group, "standalone": text, "error": error}, ensure_ascii=False) + "\n")
            fh.flush()
            bar.advance(task)
    print(f"{len(todo)} rewritten, {len(done)} already there -> {out}")
    return 0


def _records(run: Path) -> list[dict]:
    """The lines of a `verirag verify --out` folder's results.jsonl, or of a file `export` wrote."""
    path = Path(run) / "results.jsonl" if Path(run).is_dir() else Path(run)
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_scores(run: Path) -> dict[str, float | None]:
    """id -> score of a `verirag verify --out` folder, or of the compact scores `export` writes
    (the latest line per id; None: failed)."""
    return {r["id"]: r.get("score") for r in _records(run)}


def read_seconds(run: Path) -> dict[str, float]:
    """id -> the seconds an answer's verification took, where the run recorded them (the latest line per id)."""
    return {r["id"]: float(r["seconds"]) for r in _records(run) if isinstance(r.get("seconds"), (int, float))}


def compare(rows: list[dict], judges: dict[str, np.ndarray], n_resamples: int = 2000) -> dict:
    """AUROC of every judge with a 95% interval over questions, and each one's paired difference
    against the first, all on one set of resamples."""
    y = np.array([r["label"] for r in rows])
    groups = [r["group"] for r in rows]
    names = list(judges)

    def stat(ix: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for n in names:
            out[n] = np.array([auroc(judges[n][row], y[row]) for row in ix])
        for n in names[1:]:
            out[f"{names[0]} - {n}"] = out[names[0]] - out[n]
        return out

    return group_bootstrap_intervals(stat, groups, n_resamples=n_resamples, seed=0)


def sentence_scores(run: Path) -> dict[str, list[float]]:
    """id -> the per-sentence scores of a `verirag verify --out` folder (answers without any left out).
    They are the predictor's own: an answer that declines, which `verify` scores 0, keeps them, so
    "min" here can differ a little from the run's score."""
    out = {}
    with open(Path(run) / "results.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                if r.get("sentences"):
                    out[r["id"]] = [float(x["score"]) for x in r["sentences"]]
    return out


def aggregates(rows: list[dict], run: Path, n_resamples: int) -> int:
    scores = sentence_scores(run)
    rows = [r for r in rows if r["id"] in scores]
    if not rows:
        print(f"{run}: no answer with sentence scores")
        return 1
    judges = {k: np.array([float(f(np.array(scores[r["id"]]))) for r in rows]) for k, f in AGGREGATES.items()}
    res = compare(rows, judges, n_resamples)
    counts = np.bincount([min(len(scores[r["id"]]), 4) for r in rows], minlength=5)[1:]
    print(f"dev: {len(rows)} answers with sentence scores; 1, 2, 3, 4+ sentences: {', '.join(map(str, counts))}")
    for ds in DEV_DATASETS:
        ix = np.array([r["group"].startswith(ds + ":") for r in rows])
        y = np.array([r["label"] for r in rows])[ix]
        print(f"  {ds}: " + ", ".join(f"{k} {auroc(v[ix], y):.3f}" for k, v in judges.items()))
    print(f"{'aggregate':<20} {'AUROC':>7}  95% interval")
    for k, r in res.items():
        print(f"{k:<20} {r.estimate:7.3f}  [{r.low:.3f}, {r.high:.3f}]")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("log", help="write the dev log")
    lg.add_argument("--out", type=Path, default=Path("runs/verifier_dev/dev.jsonl"))
    lg.add_argument("--data", type=Path, default=None)
    lg.add_argument("--dataset", choices=DEV_DATASETS, default=None, help="only this dataset's rows")
    lg.add_argument(
        "--earlier-answers-as-passages",
        action="store_true",
        help="issue 47 item 3: the conversation's earlier answers (its agent turns) join the passages",
    )
    lg.add_argument(
        "--standalone",
        type=Path,
        default=None,
        help="issue 47 item 3: each question replaced by its rewrite in this file (`rewrite`), without the history",
    )
    rw = sub.add_parser("rewrite", help="each TopiOCQA follow-up rewritten by the local LLM to stand on its own")
    rw.add_argument("--out", type=Path, required=True)
    rw.add_argument("--model", default="qwen2.5-1.5b")
    rw.add_argument("--data", type=Path, default=None)
    ex = sub.add_parser(
        "export",
        help="a verify run's scores in compact form (ids, scores and seconds, no benchmark "
        "text): what an LLM judge's hours on the dev set leave for the next machine",
    )
    ex.add_argument("run", type=Path)
    ex.add_argument("--out", type=Path, required=True)
    cp = sub.add_parser("compare", help="the AUROC table of verify runs on the dev log")
    cp.add_argument(
        "runs", nargs="+", type=Path, help="verify --out folders or exported scores; the first is compared to the rest"
    )
    cp.add_argument("--data", type=Path, default=None)
    cp.add_argument("--resamples", type=int, default=2000)
    cp.add_argument("--json", type=Path, default=None, help="also write the table here")
    cp.add_argument("--all", action="store_true", help="every answer, a missing score counted as 0.5")
    cp.add_argument("--dataset", choices=DEV_DATASETS, default=None, help="only this dataset's answers")
    ag = sub.add_parser("aggregates", help="AUROC of ways to aggregate a verify run's sentence scores")
    ag.add_argument("run", type=Path)
    ag.add_argument("--data", type=Path, default=None)
    ag.add_argument("--resamples", type=int, default=2000)
    a = ap.parse_args(argv)
    if a.cmd == "export":
        latest = {r["id"]: r for r in _records(a.run)}
        scores = {k: r.get("score") for k, r in latest.items()}
        a.out.parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w", encoding="utf-8") as fh:
            for k, r in latest.items():
                timed = {"seconds": float(r["seconds"])} if isinstance(r.get("seconds"), (int, float)) else {}
                fh.write(json.dumps({"id": k, "score": r.get("score"), **timed}) + "\n")
        print(f"{len(scores)} scores ({sum(v is None for v in scores.values())} failed) -> {a.out}")
        return 0
    rows = dev_rows(a.data)
    if a.cmd == "rewrite":
        return rewrite(rows, a.out, a.model)
    if a.cmd == "aggregates":
        return aggregates(rows, a.run, a.resamples)
    if a.cmd == "log":
        rows = [r for r in rows if a.dataset is None or r["group"].startswith(a.dataset + ":")]
        if a.earlier_answers_as_passages:  # the history alternates user and agent turns, the user first
            rows = [
                {
                    **r,
                    "retrieved_contexts": r["retrieved_contexts"]
                    + [t for t in r.get("history", [])[1::2] if t.strip()],
                }
                for r in rows
            ]
        if a.standalone:  # a question missing from the file is an error, not silently the original
            given = [json.loads(t) for t in a.standalone.read_text(encoding="utf-8").splitlines() if t.strip()]
            rewritten = {d["group"]: d["standalone"] for d in given}
            missing = sorted({r["group"] for r in rows} - set(rewritten))
            if missing:
                print(f"{len(missing)} questions have no rewrite in {a.standalone} (e.g. {missing[0]}): run `rewrite`")
                return 1
            rows = [
                {**{k: v for k, v in r.items() if k != "history"}, "user_input": rewritten[r["group"]]} for r in rows
            ]
        a.out.parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(f"{len(rows)} dev answers ({sum(r['label'] for r in rows)} correct) -> {a.out}")
        return 0
    if a.dataset is not None:
        rows = [r for r in rows if r["group"].startswith(a.dataset + ":")]
    runs = {run.name.removesuffix(".jsonl"): read_scores(run) for run in a.runs}
    missing = {k: sum(v.get(r["id"]) is None for r in rows) for k, v in runs.items()}
    if not a.all:
        rows = [r for r in rows if all(v.get(r["id"]) is not None for v in runs.values())]
        if not rows:
            print("no answer was scored by every run")
            return 1
    judges = {
        k: np.array([MISSING_SCORE if v.get(r["id"]) is None else v[r["id"]] for r in rows], dtype=float)
        for k, v in runs.items()
    }
    judges["k_precision"] = np.array([k_precision(r["response"], r["retrieved_contexts"]) for r in rows])
    judges["recall (sees gold)"] = np.array([token_recall(r["response"], r["reference"]) for r in rows])
    res = compare(rows, judges, a.resamples)
    print(
        f"dev: {len(rows)} answers, {len({r['group'] for r in rows})} questions, "
        f"{sum(r['label'] for r in rows)} correct"
    )
    for k, v in missing.items():
        print(
            f"  {k}: {v} of the dev answers without a score (failed or not run)"
            + (f", scored {MISSING_SCORE}" if a.all else ", left out")
        )
    print(f"{'judge':<40} {'AUROC':>7}  95% interval")
    for k, r in res.items():
        print(f"{k:<40} {r.estimate:7.3f}  [{r.low:.3f}, {r.high:.3f}]")
    for k, run in zip(runs, a.runs):  # where a run recorded them: the judges' costs on these answers
        seconds = read_seconds(run)
        timed = [seconds[r["id"]] for r in rows if r["id"] in seconds]
        if timed:
            print(f"{k}: {np.mean(timed):.3f} s an answer (mean; median {np.median(timed):.3f}, {len(timed)} timed)")
    if a.json:
        a.json.write_text(
            json.dumps(
                {k: {"estimate": r.estimate, "low": r.low, "high": r.high} for k, r in res.items()}
                | {"missing": missing},
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
