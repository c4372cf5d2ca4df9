"""Prompt-reading throughput against the decode batch size (n_batch) and the thread count, in one run.

Prefix reuse is exact only at whole decode batches (see `verirag.llm.prefix_store`), so a smaller
n_batch lets more of a shared prefix be reused; this measures what a smaller batch costs when a
prompt is read from scratch. Several models (presets or GGUF paths, comma-separated) compare
quantisations of one model. Prints tokens per second and the ratio to the baseline: the first
model, n_batch=512, the most threads given.

    .venv/bin/python benchmarks/bench_prompt_batch.py [--model qwen2.5-0.5b[,other.gguf]] [--tokens 768] \
        [--batches 32,64,128,256,512] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import statistics
import time

TEXT = (
    "The lighthouse stood on a rock at the mouth of the bay, and its keeper climbed the ninety "
    "steps every evening to light the lamp before the fishing boats came home. "
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--model", default="qwen2.5-0.5b", help="one or more models, comma-separated (the first: the baseline)"
    )
    ap.add_argument("--tokens", type=int, default=768)
    ap.add_argument("--batches", default="32,64,128,256,512")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", default=None, help="thread counts, e.g. 1,2 (default: llama.cpp's own choice)")
    args = ap.parse_args()

    from verirag.llm.llama_cpp_backend import LlamaCppLLM
    from verirag.llm.prefix_store import batched
    from verirag.models import resolve_model

    models = args.model.split(",")
    paths = {m: str(resolve_model(m).path) for m in models}
    sizes = [int(s) for s in args.batches.split(",")]
    threads = [int(t) for t in args.threads.split(",")] if args.threads else [None]
    rate = {}
    for m, nt, nb in ((m, nt, nb) for m in models for nt in threads for nb in sizes):
        llm = LlamaCppLLM(paths[m], n_ctx=2048, n_batch=nb, reuse_prefix=False, n_threads=nt)
        tokens = llm.llama.tokenize((TEXT * 200).encode(), add_bos=True)[: args.tokens]
        times = []
        for _ in range(args.repeats):
            llm.llama.reset()
            t = time.perf_counter()
            for chunk in batched(tokens, nb):
                llm.llama.eval(list(chunk))
            times.append(time.perf_counter() - t)
        rate[m, nt, nb] = len(tokens) / statistics.median(times)
        del llm
    base = rate.get((models[0], threads[-1], 512)) or rate[models[0], threads[-1], max(sizes)]
    print(f"{args.tokens} prompt tokens, median of {args.repeats}")
    print(f"{'model':>40s} {'threads':>8s} {'n_batch':>8s} {'tokens/s':>9s} {'vs base':>8s}")
    for m, nt, nb in rate:
        name = m if len(m) <= 40 else "..." + m[-37:]
        print(f"{name:>40s} {nt or 'auto'!s:>8s} {nb:8d} {rate[m, nt, nb]:9.1f} {rate[m, nt, nb] / base:8.2f}")


if __name__ == "__main__":
    main()
