"""The questions of the own-answer evaluation sets of issue 47, item 6: the default model's own answers
to at least 300 questions a dataset that no verifier trains on, written as an eval `groups` file.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/own_answer_groups.py [--check]

- NQ: 300 questions: the committed own-answer runs' NQ questions (already held out), then the
  verifier's held-out bucket (`verirag_lab.train.verifier_labels.heldout.hash_split`), in a seeded
  order (sha256 of "own-v2|DATASET|ID").
- HotpotQA: 151 questions, each answered twice by the eval where it can (with and without a gold
  paragraph; one question has no distractor paragraph: 300 answers): the committed runs' questions,
  the held-out bucket, then training-split questions that no committed distillation answer used
  (the shared set has 252 usable questions: the rest of them stay for training).

The conversational set asks the same questions as follow-ups (`configs/own-answers-followup.yaml`,
the loaders' `followup` option): those whose question names a supporting passage's title, 120 NQ
and 224 HotpotQA answers.

It writes `data/verifier/own_answers/v2.txt` (the sets' groups, what `configs/own-answers.yaml`
reads) and adds each chosen question that is not held out yet to `data/verifier/own_answers/groups.txt`,
which the verifier's labelling and training refuse (`heldout.split_of`), whatever the command
line says. Run again, it chooses the same questions; `--check` only says whether the files agree.

Not every chosen question was unseen by the verifier shipped on 2026-11-26: its `swap` recipe read
every usable question, held-out bucket included (the audit of issue 47); verifiers trained since
the guard cannot read them.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OWN = ROOT / "data" / "verifier" / "own_answers"
V2 = OWN / "v2.txt"
GROUPS = OWN / "groups.txt"
DISTILLED = ROOT / "data" / "verifier" / "labels" / "distill-qwen2.5-1.5b.jsonl.gz"
WANTED = {"nq": 300, "hotpotqa": 151}  # one HotpotQA question has no distractor paragraph: 150 pairs
HEADER = (
    "# Issue 47, item 6: the own-answer evaluation sets' questions (benchmarks/own_answer_groups.py):\n"
    "# NQ 300, HotpotQA 151 (answered twice each where the eval can: 150); configs/own-answers.yaml reads this file\n"
)


def order(dataset: str, qid: str) -> str:
    return hashlib.sha256(f"own-v2|{dataset}|{qid}".encode()).hexdigest()


def distilled(path: Path = DISTILLED) -> set[str]:
    """The question groups the committed distillation answered (training data: never chosen)."""
    if not path.is_file():
        return set()
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return {f"{r['dataset']}:{r['example']}" for r in map(json.loads, filter(str.strip, fh)) if "example" in r}


def choose(data_root: Path | None = None) -> dict[str, list[str]]:
    """{dataset: the chosen groups, in the seeded order} (module doc)."""
    from verirag_lab.datasets import data_dir
    from verirag_lab.train.verifier_labels.exclusion import evaluation_questions, question_key
    from verirag_lab.train.verifier_labels.heldout import hash_split, own_answer_groups
    from verirag_lab.train.verifier_labels.sources import load_sources

    root = data_dir(data_root)
    evaluation, own, used = evaluation_questions(root), own_answer_groups(), distilled()
    sources = load_sources(root, sorted(WANTED))
    out = {}
    for dataset, n in WANTED.items():
        allowed = [q for q in sources[dataset].questions.values() if question_key(q.text) not in evaluation]
        tiers = (
            [q for q in allowed if q.group in own],
            [q for q in allowed if q.group not in own and hash_split(dataset, q.id) == "heldout"],
            [q for q in allowed if q.group not in own and hash_split(dataset, q.id) == "train" and q.group not in used],
        )
        chosen: list[str] = []
        for tier in tiers:
            chosen += [q.group for q in sorted(tier, key=lambda q: order(dataset, q.id))][: n - len(chosen)]
        if len(chosen) < n:
            raise SystemExit(f"{dataset}: only {len(chosen)} questions can be held out, {n} wanted")
        # written in the seeded order, whichever tier each came from: a rerun, which finds the
        # questions this one held out among the committed groups, writes the same file
        out[dataset] = sorted(chosen, key=lambda g: order(dataset, g.split(":", 1)[1]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether the committed files hold the choice")
    a = ap.parse_args(argv)
    from verirag_lab.train.verifier_labels.heldout import own_answer_groups, split_of

    chosen = choose()
    text = HEADER + "".join(f"{g}\n" for d in WANTED for g in chosen[d])
    new = [g for d in WANTED for g in chosen[d] if split_of(d, g.split(":", 1)[1]) != "heldout"]
    if a.check:
        ok = V2.is_file() and V2.read_text(encoding="utf-8") == text and not new
        print("the committed own-answer groups hold the choice" if ok else "they do not: run without --check")
        return 0 if ok else 1
    V2.write_text(text, encoding="utf-8")
    if new:
        with open(GROUPS, "a", encoding="utf-8") as fh:
            fh.write("# issue 47, item 6: the own-answer evaluation sets (benchmarks/own_answer_groups.py)\n")
            fh.write("".join(f"{g}\n" for g in new))
        own_answer_groups.cache_clear()
    counts = ", ".join(f"{d} {len(chosen[d])}" for d in WANTED)
    print(f"{V2.relative_to(ROOT)}: {counts}; {len(new)} newly held out in {GROUPS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
