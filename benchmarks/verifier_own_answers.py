"""The local generator's own answers: how well each judge of an eval run ranks them, paired.

Reads the answers of one or more `verirag eval` runs of the same model (configs/verifier-held-out.yaml:
qwen2.5-1.5b on the questions the trained verifier held out), one row per generated answer with
every predictor's score and signal (`verirag_lab.train.stack_features`), and prints, overall and per
dataset, each column's AUROC and AwF PR-AUC (the AwF label: correct and answerable) with the
difference to a baseline column, paired on the same bootstrap resamples of question groups.

    python benchmarks/verifier_own_answers.py runs/verifier-held-out [Z=runs/verifier-held-out-Z] \\
        [--baseline self_check] [--columns verifier,self_check,k_precision]

A run given as NAME=DIR adds its predictor columns as NAME:COLUMN (a second verifier scoring the
same answers, from the request cache); answers are matched by their generation key. `--pool DIR`
(repeatable) adds the answers of another run of the same set-up to the first run's, so that two
samples of held-out questions are read as one; an answer both runs made (same generation key) counts
once.

    # an eval run's records as they are committed (data/verifier/own_answers/): without benchmark
    # text (question and references blanked: read them by dataset and example_id), and only the
    # answers that every method of the run judged (a run stopped part way keeps its whole answers)
    python benchmarks/verifier_own_answers.py runs/verifier-held-out-nli --export data/verifier/own_answers/NAME

`--question-kinds CONFIG` also splits each dataset's answers into choice questions ("Which is older, A
or B?": a claim that names every option) and the others, the questions read back from the data with
the run's config.

`--split-groups FILE` also reports the answers whose question group ("dataset:id" lines, # comments)
FILE lists apart from the others: e.g. data/verifier/own_answers/v2-training-split.txt, the questions
a verifier trained before they were held out may have read.

`--verifier-scores NAME=FILE` (repeatable) adds the column NAME: another verifier's scores of the
same answers, written without an LLM call by benchmarks/rescore_own_answers.py and matched by the
answers' generation key; give NAME once per file when answers come from several runs (--pool).

    python benchmarks/verifier_own_answers.py data/verifier/own_answers/held-out-nli-qwen2.5-1.5b \\
        --verifier-scores joint=data/verifier/own_answers/held-out-nli-qwen2.5-1.5b/verifier-issue36-joint.jsonl

`--partial NAME` lets the `--verifier-scores` column NAME cover only part of the answers (a scoring run
still going, e.g. nli over every passage): every part is then reported on the answers it scored.

`--stack NAME=FILE` (repeatable) adds the column NAME: a stacked verifier (`verirag train stack`, e.g.
fitted on distill labels: the pipeline's answers to training questions) applied to each answer's own
columns (its verifier score, its token log-probabilities), no model run:

    python benchmarks/verifier_own_answers.py data/verifier/own_answers/own-answers-verifier-qwen2.5-1.5b \
        --baseline verifier --stack stacked=runs/stack-distill.json

A stack fitted on another verifier's scores (`verirag train stack LABELS --verifier DIR`) reads that
verifier's rescored column instead of the run's (matched by the digest its header records):

    python benchmarks/verifier_own_answers.py RUN --baseline stacked --verifier-scores support=RUN/verifier-support.jsonl \
        --stack stacked=src/verirag/learned/shipped/stack.json --stack support=data/verifier/candidates/support/stack.json
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rescore_own_answers import load_examples, read_header, read_rescored

from verirag.metrics.awf import pr_auc_statistic, random_pr_auc
from verirag.metrics.calibration import auroc
from verirag.metrics.stats import group_bootstrap_intervals
from verirag.records import ResultStore
from verirag_lab.train.stack_features import feature_table
from verirag_lab.train.verifier_labels.replacements import is_choice_question


def load(runs: list[str], pool: list[str] = (), scores: list[str] = (), methods: list[str] = (), partial=()):
    """(first run's table, {column: scores}) with the other runs' predictor columns merged in; the
    first run's answers are those of `runs[0]` and every run of `pool`. `scores` ("NAME=FILE",
    files of benchmarks/rescore_own_answers.py) adds the column NAME; a NAME given several times
    reads all its files; every answer must have a score, except in a column named in `partial` (a
    scoring run still going: `covered` says which answers to report). `methods` keeps only those
    methods' records (two methods with one predictor, nli and nli over the evidence, cannot both be a
    column)."""
    base, columns = None, {}
    for i, arg in enumerate(runs):
        name, _, path = arg.rpartition("=")
        records = list(ResultStore(Path(path)).load())
        if i == 0:
            for more in pool:  # records of one generation key merge into one answer (feature_table)
                records += list(ResultStore(Path(more)).load())
        if methods:
            records = [r for r in records if r.method in methods]
        table = feature_table(records, impute=True)  # signals a dataset lacks (retrieval scores) stay NaN
        lacking = {f: n for f, n in table.missing.items() if f in table.sources}
        if lacking:  # a judge's score is never filled in: a run stopped part way is finished first
            raise SystemExit(
                f"{path}: answers without a score of "
                + ", ".join(f"{f} ({n})" for f, n in lacking.items())
                + ": finish the run (it resumes), or keep the methods that scored every answer with --methods"
            )
        if base is None:
            base = table
            columns = {f: table.column(f) for f in table.features}
            continue
        at = {k: j for j, k in enumerate(table.keys)}
        if set(at) != set(base.keys):
            raise SystemExit(f"{path} holds other answers than {runs[0]}: match the configs")
        order = np.array([at[k] for k in base.keys])
        for f in table.sources:  # predictor columns only: the signals are the same answers' signals
            columns[f"{name or f'run{i}'}:{f}"] = table.column(f)[order]
    for name, found in rescored_columns(scores).items():
        lacking = [k for k in base.keys if k not in found]
        if lacking and name not in partial:
            raise SystemExit(
                f"--verifier-scores {name}: {len(lacking)} of {len(base.keys)} answers have no score "
                f"(first: {lacking[0]}); rescore the run(s) they come from"
            )
        if name in columns:
            raise SystemExit(f"--verifier-scores {name}: the run already has a column {name}")
        columns[name] = np.array([found[k][0] if k in found else np.nan for k in base.keys])
    for f, x in columns.items():
        columns[f] = np.where(np.isnan(x), np.nanmean(x), x)
    return base, columns


def stacked_column(
    arg: str, table, columns: dict[str, np.ndarray], rescored: dict[str, str] | None = None, given: bool = False
) -> tuple[str, np.ndarray]:
    """(NAME, P(faithful) per answer) of "NAME=FILE": the stack applied to the answers' columns, as
    `vanilla+stacked(stack=FILE)` would at answer time. Each predictor feature reads the run's column
    of the same identity (digest), or else a `--verifier-scores` column whose verifier has it
    (`rescored`: {column: predictor digest}), so a stack fitted on another verifier is measured with
    that verifier's scores; with neither, it is refused. `given`: as `stacked(impute=true)` judges
    the same answers given to verify, without the generation's log-probabilities (at their
    training means)."""
    from verirag.learned.stack import StackedVerifier

    name, sep, path = arg.partition("=")
    if not sep or not name or not path:
        raise SystemExit(f"--stack takes NAME=FILE, got {arg!r}")
    if name in columns:
        raise SystemExit(f"--stack {name}: the run already has a column {name}")
    stack = StackedVerifier.load(path)
    lacking = [f for f in stack.features if f not in columns]
    if lacking:
        raise SystemExit(f"--stack {name}: the run has no column {', '.join(lacking)} (columns: {', '.join(columns)})")
    reads = {f: f for f in stack.features}
    for f, source in stack.sources.items():
        want, have = stack.scored_as(f), (table.sources.get(f) or {}).get("digest")
        if want and have and have not in want:
            same = [c for c, d in (rescored or {}).items() if d in want]
            if not same:
                raise SystemExit(
                    f"--stack {name}: its {f} is {source.get('digest')}, the run's is {have}: another model"
                )
            reads[f] = same[0]
    from verirag.awf.signals import LOGPROB_SIGNALS

    missing = np.full(len(table.y), np.nan)
    X = [missing if given and f in LOGPROB_SIGNALS else columns[reads[f]] for f in stack.features]
    return name, stack.predict_proba(np.column_stack(X), impute=given or None)


def rescored_digests(scores: list[str]) -> dict[str, str]:
    """{NAME: the scoring verifier's predictor digest} of "NAME=FILE" arguments whose header says it."""
    out = {}
    for arg in scores:
        name, _, path = arg.partition("=")
        digest = ((read_header(path) or {}).get("verifier") or {}).get("predictor_digest")
        if digest:
            out[name] = digest
    return out


def rescored_columns(scores: list[str]) -> dict[str, dict[str, tuple[float, float]]]:
    """{NAME: {generation key: (score, seconds)}} of "NAME=FILE" arguments (files of one NAME merged)."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for arg in scores:
        name, sep, path = arg.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--verifier-scores takes NAME=FILE, got {arg!r}")
        found, merged = read_rescored(path), out.setdefault(name, {})
        clash = next((k for k, v in found.items() if k in merged and merged[k][0] != v[0]), None)
        if clash is not None:  # two sets' files under one name: their keys collide (a follow-up's is its question's)
            raise SystemExit(
                f"--verifier-scores {name}: {path} scores {clash} otherwise than an earlier file of that name"
            )
        merged.update(found)
    return out


def covered(table, scores: list[str], partial: list[str]) -> np.ndarray:
    """Which answers every `partial` column scored (all answers when none is named)."""
    found = rescored_columns(scores)
    unknown = [n for n in partial if n not in found]
    if unknown:
        raise SystemExit(f"--partial {unknown[0]}: no --verifier-scores column of that name")
    return np.array([all(k in found[n] for n in partial) for k in table.keys], dtype=bool)


def export(run: Path, out: Path) -> int:
    """Write `run`'s records without benchmark text to out/results.jsonl; the count written."""
    import json
    from collections import defaultdict

    lines = [json.loads(x) for x in (run / "results.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    methods = {r["method"] for r in lines}
    judged = defaultdict(set)
    for r in lines:
        judged[(r["dataset"], r["example_id"])].add(r["method"])
    kept = [
        _without_text(r | {"question": "", "references": []})
        for r in lines
        if judged[(r["dataset"], r["example_id"])] == methods
    ]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.jsonl", "w", encoding="utf-8") as fh:
        for r in kept:
            fh.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")  # compact: runs are committed
    print(
        f"{len(kept)} records ({len(kept) // max(len(methods), 1)} answers x {len(methods)} methods; "
        f"{len(lines) - len(kept)} of answers not judged by every method left out) -> {out / 'results.jsonl'}"
    )
    return len(kept)


def _without_text(record: dict) -> dict:
    """The record without the benchmark's passage text a pruned run's report holds (each passage's
    sentences and title in `details.prune.passages`): their count stays, with what was kept and the
    pruner's scores."""
    prune = (record.get("details") or {}).get("prune")
    if not isinstance(prune, dict) or not isinstance(prune.get("passages"), list):
        return record
    passages = [
        {k: v for k, v in p.items() if k not in ("sentences", "title")} | {"n_sentences": len(p.get("sentences") or [])}
        for p in prune["passages"]
    ]
    return record | {"details": record["details"] | {"prune": prune | {"passages": passages}}}


def question_kind_parts(table, config: Path) -> list[tuple[str, np.ndarray]]:
    """("DATASET:choice" / "DATASET:other", answer indices): the answers to choice questions ("Which
    is older, A or B?", whose claim names every option) apart from the others, the questions read back
    from the data with the run's config (`rescore_own_answers.load_examples`)."""
    where = [g.split(":", 1) for g in table.groups]
    examples = load_examples(config, [{"dataset": d, "group": g} for d, g in where])
    ids = [k.split("|")[2] for k in table.keys]  # dataset|model|example_id|generation
    kinds = []
    for (dataset, _), example_id in zip(where, ids):
        e = examples.get((dataset, example_id))
        if e is None:
            raise SystemExit(f"{config}: no question {dataset}:{example_id}; is it the run's config?")
        kinds.append(f"{dataset}:{'choice' if is_choice_question(e.question) else 'other'}")
    return [(k, np.array([i for i, x in enumerate(kinds) if x == k])) for k in sorted(set(kinds))]


def listed_parts(table, path: Path) -> list[tuple[str, np.ndarray]]:
    """("listed in FILE" / "not listed", answer indices): the answers whose question group FILE lists."""
    listed = {line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}
    inside = np.array([g in listed for g in table.groups], dtype=bool)
    return [(f"listed in {path.name}", np.flatnonzero(inside)), (f"not listed in {path.name}", np.flatnonzero(~inside))]


def table_rows(table, columns: dict[str, np.ndarray], baseline: str, ix: np.ndarray, n_resamples: int):
    y, A = table.y[ix], table.answerable[ix]
    cols = {k: v[ix] for k, v in columns.items()}

    def statistic(b: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for name, s in cols.items():
            out[f"{name}.auroc"] = np.atleast_1d(auroc(s[b], y[b]))
            out[f"{name}.pr_auc"] = np.atleast_1d(pr_auc_statistic(s, y, A, indices=b))
        for name in cols:
            if name != baseline:
                for m in ("auroc", "pr_auc"):
                    out[f"{name}.diff_{m}"] = out[f"{name}.{m}"] - out[f"{baseline}.{m}"]
        return out

    res = group_bootstrap_intervals(statistic, [table.groups[i] for i in ix], n_resamples=n_resamples, seed=0)
    return {k: (r.estimate, r.low, r.high) for k, r in res.items()}


def verdict_row(y: np.ndarray, score: np.ndarray, threshold: float) -> tuple[float, float, float]:
    """(share called supported, precision of "supported", recall of the faithful) at `threshold`;
    precision is NaN when nothing is called supported."""
    from sklearn.metrics import precision_score, recall_score

    called, faithful = score >= threshold, y > 0
    return (
        float(called.mean()),
        float(precision_score(faithful, called, zero_division=np.nan)),
        float(recall_score(faithful, called, zero_division=np.nan)),
    )


def fmt(t) -> str:
    est, lo, hi = t
    return "n/a" if math.isnan(est) else f"{est:.3f} [{lo:.3f}, {hi:.3f}]"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="eval run folders (the first: the answers; NAME=DIR: more judges)")
    ap.add_argument(
        "--pool",
        action="append",
        default=[],
        metavar="DIR",
        help="another run of the same set-up whose answers join the first run's (repeatable)",
    )
    ap.add_argument(
        "--verifier-scores",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a column NAME of another verifier's scores of these answers (rescore_own_answers.py; repeatable)",
    )
    ap.add_argument(
        "--stack",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a column NAME of a stacked verifier's scores (`verirag train stack`), computed from the run's "
        "own columns (its verifier must be the run's; repeatable)",
    )
    ap.add_argument(
        "--stack-given",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="as --stack, judging the answers as if given to verify (`stacked(impute=true)`): without the "
        "generation's log-probabilities, at their training means",
    )
    ap.add_argument(
        "--partial",
        action="append",
        default=[],
        metavar="NAME",
        help="a --verifier-scores column that covers only part of the answers (a scoring run still going): "
        "every part is reported on the answers it scored",
    )
    ap.add_argument("--baseline", default="self_check")
    ap.add_argument("--columns", default="", help="comma-separated columns to show (default: all)")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--methods", default="", help="comma-separated methods whose records are read (default: all)")
    ap.add_argument(
        "--question-kinds",
        type=Path,
        default=None,
        metavar="CONFIG",
        help="also split each dataset's answers into choice questions ('..., A or B?') and the others; "
        "CONFIG is the run's config (the questions are read back from the data by id)",
    )
    ap.add_argument(
        "--split-groups",
        type=Path,
        default=None,
        metavar="FILE",
        help="also report the answers whose question group FILE lists ('dataset:id' lines) apart from the others",
    )
    ap.add_argument(
        "--verdict-at",
        type=float,
        default=None,
        metavar="T",
        help="also print each column's verdict at threshold T: the share called supported, the precision of "
        "'supported' and the recall of the faithful answers (for columns that are probabilities)",
    )
    ap.add_argument(
        "--export",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the first run's records without benchmark text to DIR/results.jsonl, and stop",
    )
    return ap


def report_parts(table, args) -> list[tuple[str, np.ndarray]]:
    """(name, answer indices) of every part reported: all answers, each dataset, and the optional splits."""
    datasets = sorted({g.split(":", 1)[0] for g in table.groups})
    parts = [("all", np.arange(len(table.y)))] + [
        (d, np.array([i for i, g in enumerate(table.groups) if g.split(":", 1)[0] == d])) for d in datasets
    ]
    if args.question_kinds:
        parts += question_kind_parts(table, args.question_kinds)
    if args.split_groups:
        parts += listed_parts(table, args.split_groups)
    return parts


def print_part(part: str, ix: np.ndarray, table, columns: dict[str, np.ndarray], args) -> None:
    """One part's table: each column's AUROC and AwF PR-AUC, paired against the baseline, and its verdict."""
    y, A = table.y[ix], table.answerable[ix]
    rand = random_pr_auc(int(y.sum()), int(((A > 0) | (y > 0)).sum()), len(y))
    print(
        f"\n{part}: {len(ix)} answers, {len({table.groups[i] for i in ix})} questions, {int(y.sum())} faithful; "
        f"PR-AUC of a random score {rand:.3f}"
    )
    res = table_rows(table, columns, args.baseline, ix, args.resamples)
    print(
        f"{'column':28} {'AUROC':>24} {'minus ' + args.baseline:>26} {'AwF PR-AUC':>24} {'minus ' + args.baseline:>26}"
    )
    for name in columns:
        d_au = fmt(res[f"{name}.diff_auroc"]) if name != args.baseline else ""
        d_pr = fmt(res[f"{name}.diff_pr_auc"]) if name != args.baseline else ""
        print(f"{name:28} {fmt(res[f'{name}.auroc']):>24} {d_au:>26} {fmt(res[f'{name}.pr_auc']):>24} {d_pr:>26}")
    if args.verdict_at is not None:
        print(f"verdict at {args.verdict_at:g}:\n{'column':28} {'supported':>10} {'precision':>10} {'recall':>8}")
        for name in columns:
            called, precision, recall = verdict_row(y, columns[name][ix], args.verdict_at)
            print(f"{name:28} {called:>10.0%} {precision:>10.2f} {recall:>8.2f}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.export:
        return 0 if export(Path(args.runs[0]), args.export) else 1
    methods = [m for m in args.methods.split(",") if m]
    table, columns = load(args.runs, args.pool, args.verifier_scores, methods, args.partial)
    scored = covered(table, args.verifier_scores, args.partial)
    if args.partial:
        print(f"{int(scored.sum())} of {len(scored)} answers, those {', '.join(args.partial)} scored (--partial)")
    digests = rescored_digests(args.verifier_scores)
    for arg, given in [(a, False) for a in args.stack] + [(a, True) for a in args.stack_given]:
        name, column = stacked_column(arg, table, columns, digests, given=given)
        columns[name] = column
    if args.baseline not in columns:
        raise SystemExit(f"no column {args.baseline!r}; columns: {', '.join(columns)}")
    shown = [c for c in args.columns.split(",") if c] or list(columns)
    columns = {k: columns[k] for k in dict.fromkeys([args.baseline, *shown])}
    for part, ix in report_parts(table, args):
        ix = ix[scored[ix]]
        if len(ix):
            print_part(part, ix, table, columns, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
