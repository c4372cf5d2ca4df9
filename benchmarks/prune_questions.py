"""The questions of issue 48's pruning benchmark (`bench_prune.py`): held-out NQ, NQ-open outside the
oracle file, held-out HotpotQA, and the licence questions, each with the passages its arms read.
`pruner_recall.py --split bench|documents` looks at the same questions without an LLM."""

from __future__ import annotations

import json
from pathlib import Path


def examples(dataset: str, n: int, seed: int):
    """The held-out questions of `dataset` (at most n, seeded), as verirag Examples: questions no
    pruner trains or validates on, none of them an instruct_qa_human question (evaluation data,
    never used here either).

    - `nq`: NQ-open oracle questions the pruner holds out, top-5 BM25 passages from the oracle +
      HotpotQA pool;
    - `nq-open`: NQ-open dev questions that are not in the oracle file at all (the pruner never
      reads them), top-5 BM25 from the same pool (their gold passage is mostly absent: some are
      unanswerable, as in a real RAG system);
    - `hotpotqa`: the HotpotQA questions the pruner holds out, all 10 distractor paragraphs."""
    import random

    from verirag_lab.datasets.hotpotqa import read_hotpotqa_path
    from verirag_lab.datasets.hotpotqa_original import distractor_example
    from verirag_lab.datasets.nq import load_nq
    from verirag_lab.datasets.registry import data_dir
    from verirag_lab.train.guard import TrainingGuard
    from verirag_lab.train.pruner_examples import HOTPOTQA_HELD_OUT, NQ_HELD_OUT, held_out

    root = data_dir()
    guard = TrainingGuard.for_data(root)
    if dataset == "nq":
        pool = load_nq(root, k=5, retriever="bm25", seed=seed)
        chosen = [e for e in pool if held_out(e.question, NQ_HELD_OUT)]
    elif dataset == "nq-open":
        chosen = nq_open_only(root)
    elif dataset == "licences":
        return licence_questions()[:n]  # a fixed set of 33, in file order: no draw
    elif dataset == "hotpotqa":
        records = read_hotpotqa_path(root / "hotpotqa_amor_subset")
        chosen = [distractor_example(r, dataset="hotpotqa") for r in records if held_out(r.question, HOTPOTQA_HELD_OUT)]
    else:
        raise SystemExit(f"unknown dataset {dataset!r}: nq, nq-open or hotpotqa")
    chosen = [e for e in chosen if guard.refusal(e.question) is None]
    random.Random(seed).shuffle(chosen)
    return chosen[:n]


LICENCE_QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "pruner" / "heldout_docs" / "licence_questions.jsonl"


def licence_questions():
    """Issue 48's documents of another kind: questions written for this benchmark, with known
    answers, about the licence texts of /usr/share/common-licenses, which no pruner or verifier
    trains on (`verirag_lab.train.guard.TrainingGuard` refuses them). Each question gets the top-5
    passages of an index built as `verirag index` builds one (hybrid, 200-word chunks) over every
    licence file: what a user asking about these documents would retrieve."""
    from verirag.retrieval import Index
    from verirag.types import Example, Passage
    from verirag_lab.datasets._retrieved import attach_retrieved
    from verirag_lab.train.guard import LICENCE_DIR

    files = sorted(f for f in LICENCE_DIR.iterdir() if f.is_file() and not f.is_symlink())
    if not files:
        raise SystemExit(f"no licence texts in {LICENCE_DIR}: the licences dataset reads them there")
    index = Index.build([Passage(f.name, f.read_text(encoding="utf-8")) for f in files], kind="hybrid")
    rows = [json.loads(line) for line in LICENCE_QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = [Example(id=r["id"], question=r["question"], references=r["answers"], dataset="licences") for r in rows]
    attach_retrieved(out, index, 5)
    return out


def nq_open_only(root: Path):
    """NQ-open dev questions absent from the oracle file, each with its top-5 BM25 passages from
    the oracle + HotpotQA pool (ids "open:LINE")."""
    from verirag.types import Example
    from verirag_lab.datasets._retrieved import attach_retrieved
    from verirag_lab.datasets.nq import build_pool, build_retriever, find_distractors, find_oracle_file, read_oracle
    from verirag_lab.train.verifier_labels.exclusion import question_key

    oracle = find_oracle_file(root)
    rows = read_oracle(oracle)
    in_oracle = {question_key(r["question"]) for r in rows}
    pool, _ = build_pool(rows, find_distractors(oracle, "auto"))
    out = []
    for i, line in enumerate((root / "nq_open" / "NQ-open.dev.jsonl").read_text(encoding="utf-8").splitlines()):
        r = json.loads(line)
        if question_key(r["question"]) not in in_oracle:
            out.append(Example(id=f"open:{i}", question=r["question"], references=list(r["answer"]), dataset="nq-open"))
    attach_retrieved(out, build_retriever(pool, "bm25"), 5)
    return out
