"""A multi-hop own-answer set on `ask`'s path that neither the verifier nor the pruner learned from
(issue 47, item 6): the held-out questions of the `hotpotqa_support` source, written as a JSONL
benchmark that `verirag eval` reads (`configs/own-answers-support.yaml`).

Why this source: the shared HotpotQA file holds 252 usable questions, and of the 151 in the own-answer
sets 84 are among the pruner's training questions, so a pruned answer to them read passages cut by a
pruner that trained on the question. The `hotpotqa_support` source (multi-hop questions with their
supporting sentences, read from $VERIRAG_HOTPOTQA_SUPPORT: docs/how-to/train.md) was never read by
the pruner, and its held-out bucket (10% by a hash of dataset and question,
`verirag_lab.train.verifier_labels.heldout`) by no verifier: labelling and training refuse it
whatever the command line says.

Each question is written twice, as the HotpotQA twins are: `unanswerable`, `k` distractor paragraphs
(other questions' supporting paragraphs, the most similar by BM25 first, as the labelling source
chooses them), and `answerable`, every supporting paragraph (a multi-hop answer needs both hops) in
place of distractors at positions drawn from the question's id, `k` paragraphs in all.

    VERIRAG_DATA_DIR=../shared/data VERIRAG_HOTPOTQA_SUPPORT=DIR python benchmarks/own_answers_support.py \
        --out runs/own-answers-support/examples.jsonl
    VERIRAG_DATA_DIR=../shared/data verirag eval configs/own-answers-support.yaml --out runs/own-answers-support/run

The committed set (own-answers-support-qwen2.5-1.5b) was written from ECM's two files alone
(`scripts/make_support_folder.sh DIR ecm`): a folder with more questions draws other BM25
distractors, so rebuild its passages from that folder.

The JSONL holds benchmark text: it stays under runs/, never committed; the run's export does
(`benchmarks/verifier_own_answers.py RUN --export DIR`: ids, answers, scores).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

DATASET = "hotpotqa_support"
PASSAGES = 8  # as the HotpotQA twins read: 8 paragraphs an answer


def twins(source, q, k: int = PASSAGES) -> list[dict]:
    """[unanswerable, answerable] rows of question `q` of `source` (a labelling `Source`), or [] when
    it has too few distractors to fill `k` paragraphs beside its supporting ones."""
    gold = list(q.gold)
    distractors = source.distractors(q, k)
    if len(distractors) < k or len(gold) >= k:
        return []

    def passage(key: str) -> dict:
        p = source.passage(key)
        return {"id": p.id, "title": p.title, "text": p.text}

    rng = random.Random(f"{DATASET}-twin:{q.id}")
    positions = sorted(rng.sample(range(k), len(gold)))
    with_gold = list(distractors)
    for position, key in zip(positions, gold):
        with_gold[position] = key
    base = {"question": q.text, "answers": list(q.answers), "group": q.id}
    meta = {"kind": q.kind, "gold_positions": positions}
    return [
        {
            **base,
            "id": f"{q.id}:unanswerable",
            "passages": [passage(key) for key in distractors],
            "relevance": [0] * k,
            "answerable": False,
            "meta": {**meta, "variant": "unanswerable"},
        },
        {
            **base,
            "id": f"{q.id}:answerable",
            "passages": [passage(key) for key in with_gold],
            "relevance": [int(key in gold) for key in with_gold],
            "answerable": True,
            "meta": {**meta, "variant": "answerable"},
        },
    ]


def held_out_questions(source) -> list:
    """The source's questions in its held-out bucket, in a seeded order (the files' order aside)."""
    from verirag_lab.train.verifier_labels.heldout import split_of

    held = [q for q in source.questions.values() if split_of(DATASET, q.id) == "heldout"]
    return sorted(held, key=lambda q: q.id)


def run_groups(folder: Path) -> set[str]:
    """The question groups of a run export (its results.jsonl rows' `group`)."""
    path = Path(folder) / "results.jsonl"
    if not path.is_file():
        raise SystemExit(f"--skip-run: no {path}")
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {str(r["group"]) for r in rows if r.get("group")}


def main(argv: list[str] | None = None) -> int:
    from verirag_lab.datasets import data_dir
    from verirag_lab.train.verifier_labels.sources import load_sources

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the JSONL to write (under runs/: it holds benchmark text)")
    ap.add_argument("--passages", type=int, default=PASSAGES, help="paragraphs an answer reads")
    ap.add_argument(
        "--skip-run",
        type=Path,
        action="append",
        default=[],
        help="a committed run export (results.jsonl inside) whose questions are left out: a second set",
    )
    args = ap.parse_args(argv)
    source = load_sources(data_dir(), [DATASET])[DATASET]
    skipped = set().union(*(run_groups(d) for d in args.skip_run))
    held = [q for q in held_out_questions(source) if q.id not in skipped]
    rows, short = [], 0
    for q in held:
        pair = twins(source, q, args.passages)
        short += not pair
        rows += pair
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(
        (f"{len(skipped)} questions of --skip-run left out; " if skipped else "")
        + f"{len(held)} held-out questions of {len(source.questions)} usable ({source.unusable} left out by the "
        f"source); {len(rows)} answers to make ({short} questions without enough distractors) -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
