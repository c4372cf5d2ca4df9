"""Issue 47: the rule that picks the default judge of the default model's own answers
(`verirag_lab.pick_default.pick_answer_default`), applied to the own-answer sets.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/pick_answer_default.py \
        data/verifier/own_answers/own-answers-verifier-qwen2.5-1.5b \
        data/verifier/own_answers/own-answers-nq-verifier-qwen2.5-1.5b \
        data/verifier/own_answers/own-answers-followup-verifier-qwen2.5-1.5b \
        --stack stacked=src/verirag/learned/shipped/stack.json --candidates stacked,logprob_mean

Each RUN is one set; on each, every candidate column (a run's own, a `--verifier-scores` file's, or a
`--stack` computed from its columns, as `benchmarks/verifier_own_answers.py` makes them) is measured
against the reference (the verifier alone) by AUROC with a paired bootstrap over question groups.
Prints the table, the rule's pick and why each candidate was or was not taken.

With `--judge nli --costs LABELS` the rule weighs cost as issue 47's goal does: each candidate's
seconds after an answer, as a share of its generation, are the LLM judges' it reads (a stack: those
among its features), timed by the distillation (`verirag_lab.judge_costs`; LABELS is its labels file,
`.gz` or not); one over a fifth of nli's does not qualify, and each qualifier is compared with nli
on the answers nli scored (a score column may be partial there: a run still going). Give a column
that each set holds in its own folder with `--run-scores NAME=FILENAME` (read as RUN/FILENAME where the
run has it): the sets share generation keys, so one `--verifier-scores` name over several sets' files
is refused where they clash:

    python benchmarks/pick_answer_default.py RUN_HOTPOTQA RUN_NQ RUN_FOLLOWUP \
        --run-scores llm_judge=llm-judge.jsonl --run-scores nli=nli-passages.jsonl \
        --stack judged=STACK.json --candidates judged,llm_judge --judge nli --costs LABELS
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from verifier_own_answers import covered, load, rescored_digests, stacked_column, table_rows

from verirag_lab.datasets._io import read_records
from verirag_lab.judge_costs import judge_costs
from verirag_lab.pick_default import Measured, pick_answer_default

REFERENCE = "verifier"


def measure(run: str, args, candidates: list[str], cost: dict[str, float]) -> list[Measured]:
    """Each candidate and the reference on one run: AUROC, the paired lower bound against the
    reference, and, with a judge, against the judge on the answers it scored."""
    judge = args.judge
    scores = run_scores(run, args)
    partial = [judge] if judge and judge in _score_names(scores) else []
    table, columns = load([run], scores=scores, partial=partial)
    for arg in args.stack:
        # a stack fitted on another verifier reads that verifier's rescored column (matched by digest)
        name, column = stacked_column(arg, table, columns, rescored_digests(scores))
        columns[name] = column
    lacking = [c for c in [REFERENCE, *candidates] if c not in columns]
    if lacking:
        raise SystemExit(f"{run}: no column {', '.join(lacking)} (columns: {', '.join(columns)})")
    shown = {k: columns[k] for k in dict.fromkeys([REFERENCE, *candidates])}
    rows = table_rows(table, shown, REFERENCE, np.arange(len(table.y)), args.resamples)
    vs_judge, judged = (
        _against_judge(table, columns, judge, [REFERENCE, *candidates], scores, args.resamples)
        if judge in columns
        else ({}, 0)
    )
    name = Path(run).name
    ref_low = vs_judge.get(f"{REFERENCE}.diff_auroc", (None, None))[1]
    out = [Measured(REFERENCE, name, rows[f"{REFERENCE}.auroc"][0], 0.0, None, ref_low)]
    for c in candidates:
        low = vs_judge.get(f"{c}.diff_auroc", (None, None))[1]
        out.append(Measured(c, name, rows[f"{c}.auroc"][0], cost.get(c, 0.0), rows[f"{c}.diff_auroc"][1], low))
    if judged == len(table.y):  # the judge's own row only where it scored every answer
        out.append(Measured(judge, name, vs_judge[f"{judge}.auroc"][0], cost.get(judge, 0.0), None, None))
    return out


def run_scores(run: str, args) -> list[str]:
    """The NAME=FILE score columns of one run: every --verifier-scores one, and each --run-scores
    NAME=FILENAME as RUN/FILENAME where the run has that file (so one run's column never reads another
    run's file: the own-answer sets share generation keys, a follow-up's with its direct question's)."""
    out = list(args.verifier_scores)
    for arg in args.run_scores:
        name, sep, filename = arg.partition("=")
        if not sep or not name or not filename:
            raise SystemExit(f"--run-scores takes NAME=FILENAME, got {arg!r}")
        if (Path(run) / filename).is_file():
            out.append(f"{name}={Path(run) / filename}")
    return out


def _against_judge(table, columns, judge: str, candidates: list[str], scores: list[str], resamples: int):
    """(table_rows of the candidates against the judge, how many answers they read): the answers the
    judge scored, all of them unless its column is a partial --verifier-scores one ({} under two
    questions); prints how many."""
    ix = np.arange(len(table.y))
    if judge in _score_names(scores):
        ix = np.flatnonzero(covered(table, scores, [judge]))
        if len(ix) < len(table.y):
            print(f"{judge} scored {len(ix)} of {len(table.y)} answers: the comparison with it is on those")
    if len(np.unique([table.groups[i] for i in ix])) < 2:
        return {}, 0
    shown = {k: columns[k] for k in dict.fromkeys([judge, *candidates])}
    return table_rows(table, shown, judge, ix, resamples), len(ix)


def _score_names(scores: list[str]) -> set[str]:
    """The column names NAME=FILE arguments give (their files are read by `load`)."""
    return {arg.partition("=")[0] for arg in scores}


def column_costs(args, candidates: list[str]) -> dict[str, float]:
    """{column: seconds after an answer as a share of its generation}: a judge's own (the
    distillation's timing), a stack's the sum over the judges among its features; others free."""
    if not args.costs:
        return {}
    timed = {k: share for k, (share, _) in judge_costs(r for _, r in read_records(args.costs)).items()}
    out = dict(timed)
    for arg in args.stack:
        from verirag.learned.stack import StackedVerifier

        name, _, path = arg.partition("=")
        out[name] = sum(timed.get(f, 0.0) for f in StackedVerifier.load(path).features)
    for c in [*candidates, args.judge]:
        if c and c in {"llm_judge", "nli_evidence", "nli"} and c not in timed:
            raise SystemExit(f"--costs {args.costs}: no answer timed {c}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="own-answer runs, one set each")
    ap.add_argument("--stack", action="append", default=[], help="NAME=FILE: a stacked verifier's column")
    ap.add_argument("--candidates", default="stacked", help="comma-separated candidate columns")
    ap.add_argument(
        "--verifier-scores", action="append", default=[], help="NAME=FILE: a column of rescored scores (repeatable)"
    )
    ap.add_argument(
        "--run-scores",
        action="append",
        default=[],
        help="NAME=FILENAME: each run's column NAME from RUN/FILENAME, where the run has it (repeatable)",
    )
    ap.add_argument("--judge", default=None, help="the column the default is held level with (nli)")
    ap.add_argument("--costs", default=None, help="the distillation's labels file: the judges' timing")
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args(argv)
    candidates = [c for c in args.candidates.split(",") if c and c not in (REFERENCE, args.judge)]
    if args.judge and not args.costs:
        raise SystemExit("--judge weighs cost: give --costs LABELS (the distillation's labels file)")
    cost = column_costs(args, candidates)
    measured = [m for run in args.runs for m in measure(run, args, candidates, cost)]
    judge_col = f"minus {args.judge}, low" if args.judge else ""
    print(f"{'set':48} {'method':16} {'AUROC':>7} {'minus ' + REFERENCE + ', low':>22} {judge_col:>18} {'cost':>6}")
    for m in measured:
        low = "" if m.minus_reference_low is None else f"{m.minus_reference_low:+.3f}"
        jlow = "" if m.minus_judge_low is None else f"{m.minus_judge_low:+.3f}"
        print(f"{m.dataset:48} {m.method:16} {m.auroc:7.3f} {low:>22} {jlow:>18} {m.seconds:6.3f}")
    best, why = pick_answer_default(measured, REFERENCE, args.judge, cost.get(args.judge) if args.judge else None)
    print(f"\nthe rule picks: {best}")
    for method, reason in why.items():
        print(f"  {method}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
