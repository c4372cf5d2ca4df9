"""Issue 47, item 4: does a judge notice an answer that changes one number, date, party or negation
against its evidence? Each right answer of a held-out set (the dev set's answers humans judged
correct, or any labelled answer log) is paired with copies that change one thing the passages say:

- number: a year, a date's year or a number of the answer that the passages hold, moved;
- party: a name of the answer that the passages hold, replaced by another from the same passages;
- negation: "not" after the answer's first auxiliary verb, or its "not" taken away
(`verirag_lab.train.value_swaps`, the edits `verirag train verifier --value-swaps` teaches with).

A pair counts when the judge scores the right answer strictly above the changed one (a tie counts
against it); the goal is at least 90% of pairs in every kind. 95% Wilson intervals over pairs, and
the same with whole questions resampled (answers of one question are not independent).

    VERIRAG_DATA_DIR=../shared/data python benchmarks/verifier_swaps.py                  # the dev set
    python benchmarks/verifier_swaps.py --log my_log.jsonl --method vanilla+nli --model qwen2.5-1.5b
    python benchmarks/verifier_swaps.py --own data/verifier/own_answers/held-out-nli-qwen2.5-1.5b   # own answers
    python benchmarks/verifier_swaps.py --scores data/verifier/swaps/verifier-shipped.jsonl   # the table again

The pairs' scores are written as ids, kinds and scores (`--out`, no benchmark text); the edited
answers are made again from the data the same way (seeded). The dev set is evaluation data: this
measures, it never trains or tunes anything.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verirag_lab.train.value_swaps import KINDS, negated  # noqa: F401  (the edits: the lab's, as training makes them)
from verirag_lab.train.value_swaps import changed_copies as changed

GOAL = 0.90


def make_pairs(rows: list[dict], seed: int = 0, kinds: tuple[str, ...] = KINDS) -> list[dict]:
    """The right answers' changed copies: one item per (row, kind), of the kinds asked for (each
    copy is made as with every kind, so a kind's pairs are the same whichever others are asked)."""
    pairs = []
    for r in rows:
        if r.get("label") != 1:
            continue
        rng = random.Random(f"{seed}:{r['id']}")
        for kind, wrong in changed(r["response"], r["retrieved_contexts"], rng).items():
            if kind in kinds:
                pairs.append({**r, "kind": kind, "wrong": wrong})
    return pairs


def own_rows(run: Path, history: bool = False) -> list[dict]:
    """A committed own-answer run (`data/verifier/own_answers/RUN`) as rows: each generated answer with
    its question and passages rebuilt from the data as the run read them, labelled by its records'
    `faithful` (right and answerable). A follow-up's earlier turns are written before its question
    in `user_input`, or with `history` kept apart as the row's `history` (as the runs' judges read them)."""
    from rescore_own_answers import config_for, load_examples, read_records, run_answers

    from verirag_lab.train.cascade import generation_key

    records = list(read_records(run))
    faithful = {generation_key(r): r.get("faithful") for r in records if r.get("faithful") is not None}
    answers = run_answers(records)
    examples = load_examples(config_for(run, None), answers)
    rows = []
    for a in answers:
        ex = examples.get((a["dataset"], a["example_id"]))
        if ex is None or faithful.get(a["key"]) is None:
            continue
        rows.append(
            {
                "id": a["key"],
                "group": f"{a['dataset']}:{a['group']}",
                "user_input": ex.question if history else ex.question_with_history(),
                **({"history": list(ex.history)} if history and ex.history else {}),
                "response": a["answer"],
                "retrieved_contexts": [p.text for p in ex.passages],
                "label": int(faithful[a["key"]]),
            }
        )
    return rows


def score_pairs(pairs: list[dict], method: str | None, model: str | None) -> list[dict]:
    """Each pair's two scores by the judge (`verirag.Verifier`, batched), right and changed answer."""
    from rich.progress import Progress

    from verirag import Verifier

    verifier = Verifier(method, model=model)
    rows = []
    for p in pairs:
        for answer in (p["response"], p["wrong"]):
            rows.append(
                {
                    "question": p["user_input"],
                    "answer": answer,
                    "contexts": p["retrieved_contexts"],
                    "history": p.get("history") or None,
                }
            )
    with Progress() as bar:
        task = bar.add_task(f"{verifier.method}: right and changed answers", total=len(rows))
        results = verifier.verify_many(rows, on_progress=lambda i: bar.update(task, completed=i))
    return [
        {
            "id": p["id"],
            "group": p.get("group", p["id"]),
            "kind": p["kind"],
            "right": right.score,
            "wrong": wrong.score,
            "method": verifier.method,
        }
        for p, right, wrong in zip(pairs, results[0::2], results[1::2])
    ]


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of k successes in n (scipy's; NaN for no pairs)."""
    if n == 0:
        return float("nan"), float("nan")
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def above(row: dict) -> bool:
    r, w = row["right"], row["wrong"]
    return r is not None and w is not None and r > w


def table(scored: list[dict], resamples: int = 2000, seed: int = 0) -> list[dict]:
    """Per kind (and all): pairs, share with the right answer above, its Wilson interval and a
    question-level bootstrap interval."""
    from verirag.metrics.stats import group_bootstrap_intervals

    out = []
    for kind in (*KINDS, "all"):
        rows = [r for r in scored if kind == "all" or r["kind"] == kind]
        if not rows:
            continue
        hits = np.array([above(r) for r in rows], dtype=float)
        groups = [r["group"] for r in rows]
        boot = group_bootstrap_intervals(
            lambda ix, h=hits: {"share": h[ix].mean(axis=1)}, groups, n_resamples=resamples, seed=seed
        )["share"]
        low, high = wilson(int(hits.sum()), len(hits))
        out.append(
            {
                "kind": kind,
                "pairs": len(rows),
                "right_above": float(hits.mean()),
                "wilson": [low, high],
                "by_question": [boot.low, boot.high],
                "goal_met": bool(hits.mean() >= GOAL),
            }
        )
    return out


def paired_table(scored: list[dict], base: list[dict], resamples: int = 1000, seed: int = 0) -> list[dict]:
    """Per kind (and all), over the pairs both judges scored (matched by id and kind): the share with
    the right answer above for `scored` minus that for `base`, and its interval resampling whole
    questions (the pairs of one question stay together, both judges on the same resamples)."""
    from verirag.metrics.stats import group_bootstrap_intervals

    theirs = {(r["id"], r["kind"]): r for r in base}
    out = []
    for kind in (*KINDS, "all"):
        rows = [r for r in scored if (kind == "all" or r["kind"] == kind) and (r["id"], r["kind"]) in theirs]
        if not rows:
            continue
        diff = np.array([float(above(r)) - float(above(theirs[(r["id"], r["kind"])])) for r in rows])
        boot = group_bootstrap_intervals(
            lambda ix, d=diff: {"diff": d[ix].mean(axis=1)},
            [r["group"] for r in rows],
            n_resamples=resamples,
            seed=seed,
        )["diff"]
        out.append(
            {"kind": kind, "pairs": len(rows), "difference": float(diff.mean()), "interval": [boot.low, boot.high]}
        )
    return out


def read_scores(path: Path) -> list[dict]:
    """The pairs' scores `--out` wrote (JSON lines)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, help="a labelled answer log (RAGAS fields; default: the dev set)")
    ap.add_argument("--own", type=Path, help="a committed own-answer run (data/verifier/own_answers/RUN) instead")
    ap.add_argument("--method", default=None, help="the judge (default: verirag's verify default)")
    ap.add_argument("--model", default=None, help="the LLM of a judge that uses one")
    ap.add_argument("--limit", type=int, default=None, help="at most this many right answers")
    ap.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"the kinds of change to pair, comma-separated (default: all, {','.join(KINDS)}): a slow judge can take one",
    )
    ap.add_argument("--out", type=Path, help="write the pairs' scores here (JSONL: ids, kinds, scores)")
    ap.add_argument("--scores", type=Path, help="read the pairs' scores written by --out (no judge runs)")
    ap.add_argument(
        "--against", type=Path, help="another judge's pair scores (--out's file): print the paired difference"
    )
    args = ap.parse_args(argv)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    if not kinds or set(kinds) - set(KINDS):
        ap.error(f"--kinds takes some of {', '.join(KINDS)}, got {args.kinds!r}")
    if args.scores:
        scored = read_scores(args.scores)
    else:
        if args.own:
            rows = own_rows(args.own)
        elif args.log:
            rows = [json.loads(line) for line in args.log.read_text(encoding="utf-8").splitlines() if line.strip()]
        else:
            from verifier_dev import dev_rows

            rows = dev_rows()
        rows = [r for r in rows if r.get("label") == 1][: args.limit]
        pairs = make_pairs(rows, kinds=kinds)
        print(
            f"{len(rows)} right answers; pairs: "
            + ", ".join(f"{k} {sum(p['kind'] == k for p in pairs)}" for k in KINDS)
        )
        scored = score_pairs(pairs, args.method, args.model)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text("".join(json.dumps(r) + "\n" for r in scored), encoding="utf-8")
    method = scored[0]["method"] if scored else "?"
    print(f"{method}: the right answer scored above the changed one (goal: {GOAL:.0%} of pairs in every kind)")
    print(f"{'kind':10s} {'pairs':>6s} {'right above':>12s}  {'95% Wilson':>16s}  {'95% by question':>16s}")
    for t in table(scored):
        w, b = t["wilson"], t["by_question"]
        print(
            f"{t['kind']:10s} {t['pairs']:6d} {t['right_above']:12.3f}  [{w[0]:.3f}, {w[1]:.3f}]  "
            f"[{b[0]:.3f}, {b[1]:.3f}]" + ("" if t["goal_met"] else "  below the goal")
        )
    if args.against:
        base = read_scores(args.against)
        other = base[0]["method"] if base else "?"
        print(f"minus {other} ({args.against}), paired over questions:")
        for t in paired_table(scored, base):
            lo, hi = t["interval"]
            print(f"{t['kind']:10s} {t['pairs']:6d} {t['difference']:+12.3f}  [{lo:+.3f}, {hi:+.3f}]")


if __name__ == "__main__":
    main()
