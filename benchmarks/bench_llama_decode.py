"""Decoding throughput: our llama.cpp backend WITH per-token logprobs (top-5) vs. raw
llama-cpp-python WITHOUT logprobs, same model, same prompt, same number of tokens, same run.

The goal is a ratio >= 0.9: requesting logprobs must not slow decoding down. For reference the
run also times raw llama-cpp-python with `logits_all=True`, its own way of giving logprobs.

    .venv/bin/python benchmarks/bench_llama_decode.py [--model qwen2.5-0.5b] [--tokens 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

PROMPT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Write a long story about a lighthouse keeper and a storm at sea."},
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-logits-all", action="store_true")
    args = ap.parse_args()

    from llama_cpp import Llama

    from verirag.llm.llama_cpp_backend import LlamaCppLLM
    from verirag.models import resolve_model

    path = str(resolve_model(args.model).path)
    threads = os.cpu_count() or 1
    ours = LlamaCppLLM(path, n_ctx=2048)
    prompt_tokens = ours._tokenize_prompt(PROMPT)

    def time_ours() -> float:
        ours.llama.reset()  # no prefix reuse: both sides process the prompt
        t = time.perf_counter()
        g = ours.generate(PROMPT, max_tokens=args.tokens, logprobs=True, top_logprobs=5)
        dt = time.perf_counter() - t
        return dt, g.completion_tokens

    raw = ours.llama  # the very same weights and context: only the decoding path differs

    def time_raw(llm) -> float:
        llm.reset()
        t = time.perf_counter()
        out = llm.create_completion(prompt_tokens, max_tokens=args.tokens, temperature=0.0)
        dt = time.perf_counter() - t
        return dt, out["usage"]["completion_tokens"]

    time_ours(), time_raw(raw)  # warm-up
    ours_t, raw_t = [], []
    for _ in range(args.repeats):  # interleaved, so machine noise hits both alike
        ours_t.append(time_ours())
        raw_t.append(time_raw(raw))
    n_ours, n_raw = ours_t[0][1], raw_t[0][1]
    assert n_ours == n_raw, f"greedy outputs differ in length: {n_ours} vs {n_raw}"
    o, r = statistics.median(t for t, _ in ours_t), statistics.median(t for t, _ in raw_t)
    print(f"model {args.model}, prompt {len(prompt_tokens)} tokens, {n_ours} new tokens, {threads} threads")
    print(f"raw llama-cpp-python, no logprobs      : {r:.3f} s  ({n_raw / r:.1f} tok/s incl. prompt)")
    print(f"verirag llama.cpp, logprobs + top-5    : {o:.3f} s  ({n_ours / o:.1f} tok/s incl. prompt)")
    print(f"throughput ratio ours/raw              : {r / o:.3f}  (goal >= 0.9)")
    if not args.skip_logits_all:
        ours.close()
        full = Llama(
            model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, logits_all=True, verbose=False
        )

        def time_full() -> float:
            full.reset()
            t = time.perf_counter()
            full.create_completion(prompt_tokens, max_tokens=args.tokens, temperature=0.0, logprobs=5)
            return time.perf_counter() - t

        time_full()
        f = statistics.median(time_full() for _ in range(args.repeats))
        print(f"raw llama-cpp-python, logits_all=True  : {f:.3f} s  -> ratio ours/that {f / o:.2f}")


if __name__ == "__main__":
    main()
