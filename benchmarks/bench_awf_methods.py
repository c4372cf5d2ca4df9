"""Every AwF method on N questions of the NQ oracle set: AwF best-F1, PR-AUC, seconds per question.

The benchmark mirrors the AwF paper's NQ set-up on the files in ../shared/data (read in place):
each question's top-k passages are retrieved by BM25 from a pool of all the oracle gold passages
plus the HotpotQA paragraphs, so some questions get their gold passage and some do not.
- answerable (A): some retrieved passage contains a reference answer (normalised substring);
- faithful (V): the generated answer matches a reference (token recall 1 or substring match)
  and the question is answerable (the reference is supported by the passages).
All methods of one question share one trace, so a generation is paid once; "s/q" is therefore the
marginal time a method added on top of the methods listed before it (the order is printed).

    .venv/bin/python benchmarks/bench_awf_methods.py [--n 30] [--model qwen2.5-0.5b] [--methods a,b,...]
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_METHODS = ["vanilla", "vanilla+pre_answering", "vanilla+nli", "vanilla+k_precision",
                   "vanilla+llm_judge", "instructrag", "instructrag+pre_answering", "instructrag+nli",
                   "intrinsic", "cot_hybrid", "dual_generation"]


def load_pool_and_questions(n: int, seed: int):
    from verirag.types import Passage
    rows = [json.loads(line) for line in gzip.open(DATA / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz", "rt")]
    pool = [Passage(id=f"nq{i}", text=r["ctxs"][0]["text"], title=r["ctxs"][0]["title"]) for i, r in enumerate(rows)]
    seen = set()
    for split in ("dev", "test"):
        for line in open(DATA / "hotpotqa_amor_subset" / f"{split}.json"):
            for title, sentences in json.loads(line)["context"]:
                if title not in seen:  # the same paragraph recurs across questions
                    seen.add(title)
                    pool.append(Passage(id=f"hp:{title}", text="".join(sentences).strip(), title=title))
    picked = random.Random(seed).sample(range(len(rows)), n)
    return pool, [(rows[i]["question"], rows[i]["answers"]) for i in picked]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"{DATA} not found: this benchmark reads ../shared/data")

    from verirag.awf.compose import build_method
    from verirag.awf.trace import Trace
    from verirag.llm import load_llm
    from verirag.metrics.awf import best_f1, pr_auc
    from verirag.metrics.qa import substring_match, token_recall
    from verirag.retrieval import BM25Retriever

    pool, questions = load_pool_and_questions(args.n, args.seed)
    t = time.perf_counter()
    bm25 = BM25Retriever.build(pool)
    print(f"pool {len(pool)} passages, BM25 built in {time.perf_counter() - t:.1f} s; "
          f"{len(questions)} questions, k={args.k}, model {args.model}")
    llm = load_llm(args.model, n_ctx=4096)
    names = [m.strip() for m in args.methods.split(",") if m.strip()]
    methods = {n: build_method(n, llm, max_tokens=args.max_tokens) for n in names}
    scores = {n: [] for n in names}
    faithful = {n: [] for n in names}
    seconds = {n: 0.0 for n in names}
    errors = {n: 0 for n in names}
    answerable = []
    for qi, (question, answers) in enumerate(questions):
        passages = [h.passage for h in bm25.search(question, args.k)]
        A = any(substring_match(p.text, answers) for p in passages)
        answerable.append(int(A))
        trace = Trace(question, passages)
        for n, m in methods.items():
            t = time.perf_counter()
            out = m.run(trace)
            seconds[n] += time.perf_counter() - t
            correct = max(token_recall(out.answer, answers), substring_match(out.answer, answers)) >= 1.0
            scores[n].append(out.score)
            faithful[n].append(int(correct and A))
            errors[n] += out.error is not None
        print(f"  [{qi + 1}/{len(questions)}] answerable={int(A)} {question[:60]}", flush=True)

    A = np.array(answerable)
    print(f"\n{A.sum()} of {len(A)} questions answerable from their passages")
    print(f"{'method':28s} {'best-F1':>8s} {'PR-AUC':>8s} {'s/q':>7s} {'errors':>7s}")
    for n, m in methods.items():
        s, V = np.array(scores[n]), np.array(faithful[n])
        bf = best_f1(s, V, A)
        auc = pr_auc(s, V, A, hard=m.hard)
        print(f"{n:28s} {bf.f1:8.3f} {auc:8.3f} {seconds[n] / len(questions):7.2f} {errors[n]:7d}")
    print("s/q is the marginal time in the order above (shared generations are paid by the first method).")


if __name__ == "__main__":
    main()
