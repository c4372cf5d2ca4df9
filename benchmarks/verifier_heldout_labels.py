"""Trained verifiers on held-out labels: AUROC per recipe (and per kind of example), paired.

The issue-36 recipes write a held-out split no training example shares a question (or, for the
documentation claims, a package) with (`make issue36-labels`: runs/labels/*.heldout.jsonl). This
scores every example of those files with each verifier and prints, per recipe and pooled, each
verifier's AUROC with a 95% interval resampling question groups, and the paired difference to the
first verifier; and, per recipe, how often a supported answer scores above an unsupported one of
the same question group over the same passages (the `choice` recipe's two options, the `subject`
recipe's question asked of the right entity and of another, a `swap` pair).

    VERIRAG_DATA_DIR=../shared/data python benchmarks/verifier_heldout_labels.py \\
        runs/labels/issue36-qa.heldout.jsonl \\
        --verifier shipped=src/verirag/learned/shipped/verifier --verifier new=runs/verifiers/issue36-joint \\
        [--max-examples 1500] [--json FILE]

Labels held out by construction only: never train or tune on these files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from verirag.errors import InputError
from verirag.learned.verifier import TrainedVerifier
from verirag.metrics.calibration import auroc
from verirag.metrics.stats import group_bootstrap_intervals
from verirag.models.presets import PRESETS
from verirag_lab.train.verifier import read_examples


def kind_of(source: str) -> str:
    """The recipe's variant of an example from its record id (recipe/dataset/example/variant/seed);
    an LLM recipe's variant starts with the model ("qwen2.5-1.5b.paraphrase-swapped")."""
    parts = (source or "").split("/")
    if len(parts) < 4:
        return "?"
    variant = parts[-2]
    model = next((m for m in PRESETS if variant.startswith(m + ".")), None)
    return (variant[len(model) + 1 :] if model else variant).split(".")[0]


def predict(v: TrainedVerifier, b) -> np.ndarray:
    return v.predict_proba(
        [e.question for e in b],
        [e.answer for e in b],
        [list(e.passages) for e in b],
        [list(getattr(e, "history", None) or ()) for e in b],
    )


def score(v: TrainedVerifier, examples, batch: int = 32) -> tuple[np.ndarray, float, dict[int, str]]:
    """Each example's score (NaN where the verifier cannot read it), the mean seconds per example,
    and {index: why} of the examples it could not read (e.g. a question too long for its window)."""
    out, errors, start = [], {}, time.perf_counter()
    for i in range(0, len(examples), batch):
        b = examples[i : i + batch]
        try:
            out.append(predict(v, b))
        except InputError:  # find the example, score the rest
            one = []
            for j, e in enumerate(b):
                try:
                    one.append(float(predict(v, [e])[0]))
                except InputError as err:
                    errors[i + j] = str(err)
                    one.append(float("nan"))
            out.append(np.array(one))
    return np.concatenate(out), (time.perf_counter() - start) / max(len(examples), 1), errors


def table(examples, scores: dict[str, np.ndarray], resamples: int) -> list[dict]:
    names = list(scores)
    subsets: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(examples):
        subsets["pooled"].append(i)
        subsets[e.recipe].append(i)
        subsets[f"{e.recipe}:{kind_of(e.source)}"].append(i)
    rows = []
    for name, ix in sorted(subsets.items()):
        ix = np.array(ix)
        y = np.array([examples[i].label for i in ix])
        if not 0 < y.sum() < len(y):  # one label only (a variant that is always unsupported)
            row = {"subset": name, "n": len(ix), "positives": int(y.sum())}
            row.update({f"mean:{k}": float(scores[k][ix].mean()) for k in names})
            rows.append(row)
            continue
        groups = [examples[i].group for i in ix]
        cols = {k: scores[k][ix] for k in names}

        def stat(sel, cols=cols, y=y):
            vals = {k: auroc(cols[k][sel], y[sel]) for k in names}
            return {**vals, **{f"{k} minus {names[0]}": vals[k] - vals[names[0]] for k in names[1:]}}

        res = group_bootstrap_intervals(stat, groups, n_resamples=resamples, seed=0)
        row = {"subset": name, "n": len(ix), "positives": int(y.sum())}
        row.update({k: (r.estimate, r.low, r.high) for k, r in res.items()})
        rows.append(row)
    return rows


def right_above_wrong(examples, scores: dict[str, np.ndarray]) -> dict[str, dict[str, tuple[int, int]]]:
    """{recipe: {verifier: (pairs whose supported answer scores strictly above the unsupported one,
    pairs)}}: a pair is a supported and an unsupported example of one recipe with the same question
    group (and history) and passages: the `choice` recipe's two options to one question, the
    `subject` recipe's one answer to its question and to the question asked of another entity; a tie
    counts against."""
    by: dict[tuple, list[int]] = defaultdict(list)
    for i, e in enumerate(examples):
        by[(e.recipe, e.group, tuple(e.history or ()), e.passages)].append(i)
    out: dict[str, dict[str, list[int]]] = {}
    for (recipe, *_), ix in by.items():
        right = [i for i in ix if examples[i].label == 1]
        wrong = [i for i in ix if examples[i].label == 0]
        for name, s in scores.items():
            won = out.setdefault(recipe, {}).setdefault(name, [0, 0])
            for r in right:
                for w in wrong:
                    won[0] += int(s[r] > s[w])
                    won[1] += 1
    return {rec: {k: (v[0], v[1]) for k, v in d.items()} for rec, d in out.items() if any(n for _, n in d.values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("labels", type=Path, nargs="+", help="held-out labels files (compact records)")
    ap.add_argument("--verifier", action="append", required=True, help="NAME=DIR, repeatable; the first is the base")
    ap.add_argument("--max-examples", type=int, default=None, help="a seeded sample of at most this many")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    examples = read_examples(a.labels, a.max_examples, seed=0)
    print(f"{len(examples)} held-out examples, {sum(e.label for e in examples)} supported")
    scores, seconds, unread = {}, {}, {}
    for spec in a.verifier:
        name, _, path = spec.rpartition("=")
        name = name or Path(path).name
        scores[name], seconds[name], errors = score(TrainedVerifier.load(path), examples)
        unread.update(errors)
        print(f"{name}: {seconds[name]:.3f} s an example")
    if unread:  # left out for every verifier, so the columns stay paired; counted, never silent
        print(f"{len(unread)} examples left out: a verifier could not read them (e.g. {next(iter(unread.values()))})")
        keep = [i for i in range(len(examples)) if i not in unread]
        examples = [examples[i] for i in keep]
        scores = {k: v[keep] for k, v in scores.items()}
    rows = table(examples, scores, a.resamples)
    names = list(scores)

    def fmt(v):
        return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]" if isinstance(v, tuple) else ""

    print("| subset | n | supported | " + " | ".join(names + [f"{k} minus {names[0]}" for k in names[1:]]) + " |")
    print("|---|---|---|" + "---|" * (2 * len(names) - 1))
    for r in rows:
        if names[0] not in r:
            means = ", ".join(f"{k} mean {r[f'mean:{k}']:.3f}" for k in names)
            print(f"| {r['subset']} | {r['n']} | {r['positives']} | one label only: {means} |")
            continue
        cells = [fmt(r[k]) for k in names] + [fmt(r[f"{k} minus {names[0]}"]) for k in names[1:]]
        print(f"| {r['subset']} | {r['n']} | {r['positives']} | " + " | ".join(cells) + " |")
    pairs = right_above_wrong(examples, scores)
    for recipe, won in sorted(pairs.items()):
        shown = ", ".join(f"{k} {w / n:.3f}" for k, (w, n) in won.items())
        print(f"{recipe}: right above wrong in {next(iter(won.values()))[1]} pairs of one question group: {shown}")
    if a.json:
        out = {"rows": rows, "seconds": seconds, "right_above_wrong": pairs, "left_out": len(unread)}
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
