"""CalibRAG's forecaster against the LLM-rerank baseline, on the same (question, document) pairs.

For `--questions` questions of a synthetic corpus, each with K = `--k` documents of about 120
words:
- ours: the cross-encoder forecaster scores all K pairs of a question (`Forecaster.predict_proba`);
- baseline: LLM-rerank asks the LLM (`--model`, llama.cpp, request cache off) one yes/no
  question per document (`verirag.awf.llm_rerank.LLMRerank`);
and prints pairs per second of each and ours / baseline. It also times the forecaster's training
(one epoch over `--train-pairs` pairs) and prints seconds per 1,000 pairs.

    .venv/bin/python benchmarks/bench_forecaster.py [--model qwen2.5-0.5b] [--k 20] [--questions 3]
"""

from __future__ import annotations

import argparse
import random
import time

TOPICS = ["bridge", "market", "harbour", "library", "station", "tower", "mill", "school", "chapel", "castle"]


def corpus(n_questions: int, k: int, seed: int = 0):
    from verirag.types import Passage, ScoredPassage

    rng = random.Random(seed)
    questions, docs = [], []
    for qi in range(n_questions):
        town = f"Town{qi}"
        questions.append(f"When was the {TOPICS[qi % len(TOPICS)]} in {town} built?")
        hits = []
        for j in range(k):
            topic = rng.choice(TOPICS)
            words = " ".join(
                rng.choice(
                    [
                        "old",
                        "stone",
                        "river",
                        "council",
                        "rebuilt",
                        "visitors",
                        "north",
                        "road",
                        "century",
                        "painted",
                        "square",
                        "famous",
                    ]
                )
                for _ in range(100)
            )
            text = f"The {topic} of {town if j % 3 else 'Elsewhere'} was built in {1700 + j * 7}. {words}."
            hits.append(ScoredPassage(Passage(id=f"{qi}-{j}", text=text, title=f"{town} {topic}"), 1.0 / (j + 1), j))
        docs.append(hits)
    return questions, docs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--train-pairs", type=int, default=320)
    args = ap.parse_args()

    from verirag.awf.llm_rerank import LLMRerank
    from verirag.learned.forecaster import Forecaster, pair_text
    from verirag.llm.factory import load_llm

    questions, docs = corpus(args.questions, args.k)
    q_pairs = [q for q, hs in zip(questions, docs) for _ in hs]
    d_pairs = [pair_text(h.passage.title, h.passage.text) for hs in docs for h in hs]
    labels = [int(i % 3 == 0) for i in range(len(q_pairs))]
    groups = list(q_pairs)

    # training: one epoch, timed; the fitted forecaster then scores
    n_train = args.train_pairs
    tq = (q_pairs * (n_train // len(q_pairs) + 1))[:n_train]
    td = (d_pairs * (n_train // len(d_pairs) + 1))[:n_train]
    ty = (labels * (n_train // len(labels) + 1))[:n_train]
    tg = [f"{g}-{i % 10}" for i, g in enumerate((groups * (n_train // len(groups) + 1))[:n_train])]
    f = Forecaster(epochs=1, temperature=False)
    _ = f.model  # loading is not training
    t0 = time.perf_counter()
    f.fit(tq, td, ty, tg)
    train_s = time.perf_counter() - t0

    f.predict_proba(q_pairs[:2], d_pairs[:2])  # warm-up
    t0 = time.perf_counter()
    for q, hs in zip(questions, docs):
        f.predict_proba([q] * len(hs), [pair_text(h.passage.title, h.passage.text) for h in hs])
    ours = time.perf_counter() - t0

    llm = load_llm(args.model, cache=False)
    rr = LLMRerank(llm)
    rr.rerank(questions[0], docs[0][:1])  # warm-up
    t0 = time.perf_counter()
    for q, hs in zip(questions, docs):
        rr.rerank(q, hs)
    base = time.perf_counter() - t0

    n = len(q_pairs)
    print(f"{args.questions} questions x K={args.k} = {n} pairs")
    print(f"forecaster (cross-encoder, MiniLM-L6): {n / ours:8.1f} pairs/s ({ours:.2f} s)")
    print(f"LLM-rerank ({args.model}):        {n / base:8.1f} pairs/s ({base:.2f} s)")
    print(f"throughput ours / baseline: {base / ours:.1f}x")
    print(
        f"training: {train_s:.1f} s for one epoch over {f.n_train_} pairs plus two passes over {f.n_val_} "
        f"validation pairs = {1000 * train_s / f.n_train_:.0f} s per 1,000 training pairs per epoch"
    )


if __name__ == "__main__":
    main()
