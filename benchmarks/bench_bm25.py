"""Benchmark: verirag's BM25Retriever (bm25s) against rank_bm25.BM25Okapi, same run, same tokens.

Corpus: HotpotQA paragraphs read in place from ../shared/data/hotpotqa_amor_subset/ when that
folder exists (never copied), padded with synthetic paragraphs up to --n-docs; otherwise fully
synthetic (Zipf-distributed pseudo-words). Queries: the HotpotQA questions when available, else
synthetic ones drawn from corpus words.

Both libraries get exactly the same token lists (verirag's English analyzer: lower-case,
stopwords removed, Snowball stemming), so timings compare the indexing and scoring engines.
Reported: build time (with and without tokenisation), query time (median over repeated runs of
all queries, top-10 each, query tokenisation included for both), ratios rank_bm25 / verirag,
and how often the two agree on the top passage and top-10 set (they use different idf
variants, so agreement is high but not total). The defaults run in about two minutes on two
cores, nearly all of it in rank_bm25's query loop.

    .venv/bin/python benchmarks/bench_bm25.py --n-docs 10000 --n-queries 500
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import bm25s
import numpy as np

from verirag.retrieval.analyzer import EnglishAnalyzer
from verirag.retrieval.base import top_k
from verirag.retrieval.bm25 import BM25Retriever, passage_text
from verirag.types import Passage

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa_amor_subset"
K = 10


def read_hotpotqa(folder: Path) -> tuple[list[Passage], list[str]]:
    """Unique (title, paragraph) pairs and the questions from every *.json file in `folder`.

    Each line is one question with `context`: a list of [title, [sentence, ...]] paragraphs.
    """
    seen: set[tuple[str, str]] = set()
    passages: list[Passage] = []
    questions: list[str] = []
    for path in sorted(folder.glob("*.json")):
        with path.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                questions.append(row["question"])
                for title, sentences in row["context"]:
                    text = "".join(sentences).strip()
                    if text and (title, text) not in seen:
                        seen.add((title, text))
                        passages.append(Passage(id=f"hp{len(passages)}", text=text, title=title))
    return passages, questions


def synthetic(
    n: int, rng: random.Random, vocab: list[str], weights: list[float] | None, lengths: list[int], start: int
) -> list[Passage]:
    """n paragraphs of words sampled from `vocab` (with `weights`), lengths drawn from `lengths`."""
    out = []
    for i in range(n):
        words = rng.choices(vocab, weights=weights, k=rng.choice(lengths))
        out.append(Passage(id=f"syn{start + i}", text=" ".join(words), title=""))
    return out


def zipf_vocab(size: int, rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(size)]
    return vocab, [1.0 / (r + 1) for r in range(size)]


def make_corpus(n_docs: int, n_queries: int, data: Path, seed: int) -> tuple[list[Passage], list[str], str]:
    rng = random.Random(seed)
    real: list[Passage] = []
    questions: list[str] = []
    if data.is_dir():
        real, questions = read_hotpotqa(data)
    real = real[:n_docs]
    if real:
        # Pad with paragraphs that follow the real word distribution and lengths.
        words = [w for p in real for w in p.text.split()]
        lengths = [len(p.text.split()) for p in real]
        docs = real + synthetic(n_docs - len(real), rng, words, None, lengths, len(real))
        source = f"{len(real)} HotpotQA paragraphs from {data} + {n_docs - len(real)} synthetic"
    else:
        vocab, weights = zipf_vocab(50_000, rng)
        docs = synthetic(n_docs, rng, vocab, weights, list(range(40, 160)), 0)
        source = f"{n_docs} synthetic paragraphs (no data at {data})"
    queries = questions[:n_queries]
    while len(queries) < n_queries:  # synthetic queries: a few words from a random passage
        words = rng.choice(docs).text.split()
        queries.append(" ".join(rng.sample(words, min(len(words), rng.randint(4, 12)))))
    return docs, queries, source


def timed(fn):
    """(wall seconds, output)."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def timed_cpu(fn):
    """(wall seconds, CPU seconds of this process, output). CPU time is less disturbed than
    wall time when other programs share the machine."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-docs", type=int, default=10_000)
    ap.add_argument("--n-queries", type=int, default=500)
    ap.add_argument(
        "--repeats", type=int, default=3, help="timed runs of all queries for verirag; the median is reported"
    )
    # rank_bm25 scores every passage in Python for every query term: one run of 500 queries
    # over 10k passages takes about a minute, so fewer runs keep the benchmark under 3 minutes.
    ap.add_argument("--baseline-repeats", type=int, default=2, help="timed runs for rank_bm25 (median reported)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if min(args.n_docs, args.n_queries, args.repeats, args.baseline_repeats) < 1:
        ap.error("--n-docs, --n-queries and the repeat counts must be at least 1")
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        print("rank_bm25 is not installed (pip install rank-bm25==0.2.2)", file=sys.stderr)
        return 1

    docs, queries, source = make_corpus(args.n_docs, args.n_queries, args.data, args.seed)
    texts = [passage_text(p) for p in docs]
    analyzer = EnglishAnalyzer()
    print(f"corpus: {source}")
    print(
        f"        {len(docs)} passages, {sum(len(t.split()) for t in texts):,} words; "
        f"{len(queries)} queries, top-{K}; median of {args.repeats} (verirag) and "
        f"{args.baseline_repeats} (rank_bm25) query runs"
    )

    # -- build ---------------------------------------------------------------------------
    t_ours_build, ours = timed(lambda: BM25Retriever.build(docs))
    # The analyzer's stem cache is warm now; tokenise with a fresh one so that rank_bm25's
    # build is charged the same tokenisation work as ours.
    fresh = EnglishAnalyzer()
    t_tok, tokens = timed(lambda: fresh.many(texts))
    t_rank_index, rank = timed(lambda: BM25Okapi(tokens))
    t_rank_build = t_tok + t_rank_index
    # The indexing step of our build alone, on the same tokens (same settings as build()).
    t_ours_index, _ = timed(lambda: bm25s.BM25(method="lucene", csc_backend="auto").index(tokens, show_progress=False))

    # -- query ---------------------------------------------------------------------------
    def run_ours():
        return ours.search_hits_many(queries, K)

    def run_rank():
        return [top_k(np.asarray(rank.get_scores(analyzer(q))), K) for q in queries]

    ours_runs, rank_runs, ours_cpu, rank_cpu = [], [], [], []
    for i in range(max(args.repeats, args.baseline_repeats)):
        # Interleaved, so that a burst of load on the machine hits both engines alike.
        if i < args.repeats:
            t, c, ours_hits = timed_cpu(run_ours)
            ours_runs.append(t)
            ours_cpu.append(c)
        if i < args.baseline_repeats:
            t, c, rank_hits = timed_cpu(run_rank)
            rank_runs.append(t)
            rank_cpu.append(c)
    t_ours_q, t_rank_q = statistics.median(ours_runs), statistics.median(rank_runs)
    c_ours_q, c_rank_q = statistics.median(ours_cpu), statistics.median(rank_cpu)

    # -- agreement -----------------------------------------------------------------------
    top1 = overlap = 0
    for (oi, _), (ri, _) in zip(ours_hits, rank_hits):
        if len(oi) and len(ri):
            top1 += int(oi[0] == ri[0])
        overlap += len(set(oi.tolist()) & set(ri.tolist()))

    nq = len(queries)
    print()
    print(f"{'':34}{'verirag (bm25s)':>16}{'rank_bm25':>12}{'ratio':>9}")
    print(
        f"{'build, incl. tokenisation (s)':34}{t_ours_build:16.3f}{t_rank_build:12.3f}"
        f"{t_rank_build / t_ours_build:8.2f}x"
    )
    print(
        f"{'build, index only (s)':34}{t_ours_index:16.3f}{t_rank_index:12.3f}"
        f"{t_rank_index / max(t_ours_index, 1e-9):8.2f}x"
    )
    print(f"{f'{nq} queries, median (s)':34}{t_ours_q:16.3f}{t_rank_q:12.3f}{t_rank_q / t_ours_q:8.2f}x")
    print(f"{'per query (ms)':34}{1000 * t_ours_q / nq:16.2f}{1000 * t_rank_q / nq:12.2f}")
    print(
        f"{f'{nq} queries, median CPU time (s)':34}{c_ours_q:16.3f}{c_rank_q:12.3f}"
        f"{c_rank_q / max(c_ours_q, 1e-9):8.2f}x"
    )
    print(
        f"{'query runs (s)':34}{' '.join(f'{t:.2f}' for t in ours_runs):>16}"
        f"{' '.join(f'{t:.2f}' for t in rank_runs):>20}"
    )
    print(f"tokenisation of the corpus alone: {t_tok:.3f} s")
    print(f"agreement: same top-1 on {top1 / nq:.1%} of queries; mean top-{K} overlap {overlap / nq:.2f}/{K}")
    print("ratio = rank_bm25 time / verirag time (above 1 means verirag is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
