"""Prompt reading speed of llama.cpp builds on this machine (issue 48, item 5): this environment's
llama-cpp-python (the build `scripts/install_llama_cpp.sh` made) against ik_llama.cpp
(`ik-llama-cpp-python` from PyPI, installed in another virtual environment given by --ik-python:
its libraries would clash with llama-cpp-python's in one process).

Each build runs in its own process, the builds taking turns `--repeats` times, on one RAG prompt
of the demo corpus (about 850 tokens, as `make demo` reads): the time to read the prompt and write
one token, then the time to write `--tokens` more (greedy). Reported: prompt tokens per second and
written tokens per second of each build (median over its turns), and the ratio to this
environment's build, which is the baseline timed in the same run. Issue 48 adopts a build that
reads at least 1.3x faster with accuracy not lower (`bench_prune.py` decides accuracy).

    python -m venv /tmp/ik && /tmp/ik/bin/pip install ik-llama-cpp-python==0.1.5
    .venv/bin/python benchmarks/bench_llama_builds.py --ik-python /tmp/ik/bin/python [--repeats 3]
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


def worker(build: str, model: str, messages: list[dict[str, str]], tokens: int, threads: int) -> dict:
    """One turn of one build: (prompt tokens, seconds to read them and write 1 token, seconds to
    write `tokens` more), the model loaded first and not timed."""
    if build == "ik":
        from ik_llama_cpp import IkLlama

        llm = IkLlama(model, n_ctx=4096, n_threads=threads, verbose=False)  # its defaults (flash attention on)
        n_prompt = None

        def run(max_tokens: int) -> dict:
            return llm.create_chat_completion(messages=messages, temperature=0.0, max_tokens=max_tokens)
    else:
        from llama_cpp import Llama

        llm = Llama(model, n_ctx=4096, n_threads=threads, n_batch=512, verbose=False)

        def run(max_tokens: int) -> dict:
            llm.reset()  # no prefix reuse between calls: each reads the whole prompt
            return llm.create_chat_completion(messages=messages, temperature=0.0, max_tokens=max_tokens)

    run(1)  # warm-up: first-call allocations
    t = time.perf_counter()
    first = run(1)
    read = time.perf_counter() - t
    t = time.perf_counter()
    more = run(tokens + 1)
    write = time.perf_counter() - t - read
    n_prompt = first.get("usage", {}).get("prompt_tokens") or n_prompt
    written = more.get("usage", {}).get("completion_tokens") or tokens
    return {"build": build, "prompt_tokens": n_prompt, "read_s": read, "write_s": write, "written": written}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ik-python", help="python of a venv with ik-llama-cpp-python (absent: this build only)")
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
        print(json.dumps(worker(args.worker, spec["model"], spec["messages"], spec["tokens"], spec["threads"])))
        return

    from verirag.models import resolve_model

    spec = {
        "model": str(resolve_model(args.model).path),
        "messages": rag_messages(),
        "tokens": args.tokens,
        "threads": args.threads,
    }
    builds = {"llama_cpp": sys.executable}
    if args.ik_python:
        builds["ik"] = args.ik_python
    rows = []
    for turn in range(args.repeats):
        for build, python in builds.items():
            cmd = [python, __file__, "--worker", build, "--spec", json.dumps(spec)]
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
    base = summary["llama_cpp"]
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
