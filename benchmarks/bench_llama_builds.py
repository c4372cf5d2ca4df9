"""Prompt reading speed of the llama.cpp engines on this machine (issue 48, item 5): verirag's GGUF
backend (`LlamaCppLLM`, its own decoding loop, prefix reuse off) on llama-cpp-python (the build
`scripts/install_llama_cpp.sh` made, the default engine) and on ik_llama.cpp (the
`ik-llama-cpp-python` wheel, the `ik` extra: VERIRAG_LLAMA_ENGINE=ik).

Each engine runs in its own process, the engines taking turns `--repeats` times, on one RAG prompt
of the demo corpus (about 850 tokens, as `make demo` reads): the time to read the prompt and write
one token, then the time to write `--tokens` more (greedy). Reported: prompt tokens per second and
written tokens per second of each engine (median over its turns), and the ratio to llama-cpp-python,
the baseline timed in the same run. Issue 48 adopts an engine that reads at least 1.3x faster with
accuracy not lower (`bench_prune.py --engine` decides accuracy).

    .venv/bin/python benchmarks/bench_llama_builds.py [--repeats 3] [--n-batch 64] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUESTION = "Who designed the Halvorsen bridge, and when was it opened?"


def rag_messages(target_words: int = 600) -> list[dict[str, str]]:
    """The demo corpus's passages, whole, until about `target_words`, then the question."""
    from verirag.demo import corpus_path

    passages, words = [], 0
    for f in sorted(Path(corpus_path()).rglob("*")):
        if f.is_file() and f.suffix in (".txt", ".md") and words < target_words:
            text = f.read_text(encoding="utf-8").strip()
            passages.append(text)
            words += len(text.split())
    context = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
    return [
        {"role": "system", "content": "Answer the question from the passages. Be brief."},
        {"role": "user", "content": f"Passages:\n{context}\n\nQuestion: {QUESTION}"},
    ]


def worker(engine: str, model: str, messages: list[dict[str, str]], tokens: int, threads: int, n_batch: int) -> dict:
    """One turn of one engine: (prompt tokens, seconds to read them and write 1 token, seconds to
    write `tokens` more), the model loaded first and not timed."""
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(model, engine=engine, n_threads=threads, n_batch=n_batch, reuse_prefix=False)

    def run(max_tokens: int):
        return llm.generate(messages, max_tokens=max_tokens, temperature=0.0)

    run(1)  # warm-up: first-call allocations
    t = time.perf_counter()
    first = run(1)
    read = time.perf_counter() - t
    t = time.perf_counter()
    more = run(tokens + 1)
    write = time.perf_counter() - t - read
    from verirag.llm.llama_engine import build_info

    return {
        "build": engine,
        **{k: v for k, v in build_info(engine).items() if k != "engine"},  # the library: portable or native
        "prompt_tokens": first.prompt_tokens,
        "read_s": read,
        "write_s": write,
        "written": max(more.completion_tokens - 1, 1),
        "text": more.text,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", nargs="+", default=["llama_cpp", "ik"], help="the first is the baseline")
    ap.add_argument("--n-batch", type=int, default=64, help="decode batch (the backend's default: 64)")
    ap.add_argument("--model", default="qwen2.5-1.5b")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, help="also write the rows and the summary here (JSON)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        spec = json.loads(args.spec)
        print(
            json.dumps(
                worker(args.worker, spec["model"], spec["messages"], spec["tokens"], spec["threads"], spec["n_batch"])
            )
        )
        return

    from verirag.models import resolve_model

    spec = {
        "model": str(resolve_model(args.model).path),
        "messages": rag_messages(),
        "tokens": args.tokens,
        "threads": args.threads,
        "n_batch": args.n_batch,
    }
    builds = args.engines
    rows = []
    for turn in range(args.repeats):
        for build in builds:
            cmd = [sys.executable, __file__, "--worker", build, "--spec", json.dumps(spec)]
            env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"{build} failed:\n{done.stderr[-2000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(
                f"turn {turn + 1} {build:10s} {row['prompt_tokens']} prompt tokens in {row['read_s']:.2f} s, "
                f"{row['written']} written in {row['write_s']:.2f} s",
                flush=True,
            )
    summary = {}
    for build in builds:
        mine = [r for r in rows if r["build"] == build]
        # writing is timed as a longer call minus a short one: on a busy machine that difference
        # can come out negative, and such a turn says nothing of writing speed
        writes = [r["written"] / r["write_s"] for r in mine if r["write_s"] > 0]
        summary[build] = {
            "prompt_tokens": mine[0]["prompt_tokens"],
            "read_tokens_per_s": statistics.median(r["prompt_tokens"] / r["read_s"] for r in mine),
            "write_tokens_per_s": statistics.median(writes) if writes else float("nan"),
        }
    base = summary[args.engines[0]]
    print(f"\n{'build':10s} {'prompt tok/s':>13s} {'ratio':>7s} {'write tok/s':>12s} {'ratio':>7s}")
    for build, s in summary.items():
        s["read_ratio"] = s["read_tokens_per_s"] / base["read_tokens_per_s"]
        s["write_ratio"] = s["write_tokens_per_s"] / base["write_tokens_per_s"]
        print(
            f"{build:10s} {s['read_tokens_per_s']:13.1f} {s['read_ratio']:7.2f} "
            f"{s['write_tokens_per_s']:12.1f} {s['write_ratio']:7.2f}"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps({"spec": {**spec, "messages": None}, "rows": rows, "summary": summary}, indent=1)
        )


if __name__ == "__main__":
    main()
