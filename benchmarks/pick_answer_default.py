"""Issue 47: the rule that picks the default judge of the default model's own answers
(`verirag_lab.pick_default.pick_answer_default`), applied to the own-answer sets.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/pick_answer_default.py \
        data/verifier/own_answers/own-answers-verifier-qwen2.5-1.5b \
        data/verifier/own_answers/own-answers-nq-verifier-qwen2.5-1.5b \
        data/verifier/own_answers/own-answers-followup-verifier-qwen2.5-1.5b \
        --stack stacked=src/verirag/learned/shipped/stack.json --candidates stacked,logprob_mean

Each RUN is one set; on each, every candidate column (a run's own, or a `--stack` computed from its
columns, as `benchmarks/verifier_own_answers.py` makes them) is measured against the reference (the
verifier alone) by AUROC with a paired bootstrap over question groups. Prints the table, the rule's
pick and why each candidate was or was not taken.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from verifier_own_answers import load, stacked_column, table_rows

from verirag_lab.pick_default import Measured, pick_answer_default

REFERENCE = "verifier"


def measure(run: str, stacks: list[str], candidates: list[str], resamples: int) -> list[Measured]:
    """Each candidate and the reference on one run: AUROC, and the paired lower bound against the reference."""
    table, columns = load([run])
    for arg in stacks:
        name, column = stacked_column(arg, table, columns)
        columns[name] = column
    lacking = [c for c in [REFERENCE, *candidates] if c not in columns]
    if lacking:
        raise SystemExit(f"{run}: no column {', '.join(lacking)} (columns: {', '.join(columns)})")
    shown = {k: columns[k] for k in dict.fromkeys([REFERENCE, *candidates])}
    rows = table_rows(table, shown, REFERENCE, np.arange(len(table.y)), resamples)
    name = Path(run).name
    out = [Measured(REFERENCE, name, rows[f"{REFERENCE}.auroc"][0], 0.0)]
    for c in candidates:
        out.append(Measured(c, name, rows[f"{c}.auroc"][0], 0.0, rows[f"{c}.diff_auroc"][1]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="own-answer runs, one set each")
    ap.add_argument("--stack", action="append", default=[], help="NAME=FILE: a stacked verifier's column")
    ap.add_argument("--candidates", default="stacked", help="comma-separated candidate columns")
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args(argv)
    candidates = [c for c in args.candidates.split(",") if c and c != REFERENCE]
    measured = [m for run in args.runs for m in measure(run, args.stack, candidates, args.resamples)]
    print(f"{'set':48} {'method':16} {'AUROC':>7} {'minus ' + REFERENCE + ', low':>22}")
    for m in measured:
        low = "" if m.minus_reference_low is None else f"{m.minus_reference_low:+.3f}"
        print(f"{m.dataset:48} {m.method:16} {m.auroc:7.3f} {low:>22}")
    best, why = pick_answer_default(measured, REFERENCE)
    print(f"\nthe rule picks: {best}")
    for method, reason in why.items():
        print(f"  {method}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
