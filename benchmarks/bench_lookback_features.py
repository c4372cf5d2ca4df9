"""Lookback-ratio feature extraction against a plain forward pass that keeps every attention tensor.

For prompts of about 500, 1,000 and 2,000 tokens (passages of a synthetic corpus) and a 24-token
answer, each in its own process (so peak RSS is that measurement's alone):
- baseline: the model's forward pass with output_attentions=True, keeping [layers, heads, seq, seq];
- ours: `TransformersLLM.lookback_ratios` (one pass, each layer's weights reduced by a hook).
Prints seconds and peak RSS growth over the loaded model for each, and ours / baseline ratios.

    .venv/bin/python benchmarks/bench_lookback_features.py [--model qwen2.5-0.5b] [--sizes 500 1000 2000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

ANSWER = "The bridge over the river was painted green in the spring of 1911 by the town council."


def passages(n_tokens: int) -> list[str]:
    """Passages of ~100 tokens each, as many as make ~n_tokens."""
    out = []
    for i in range(max(1, n_tokens // 100)):
        words = " ".join(f"word{(i * 37 + j) % 101}" for j in range(50))
        out.append(f"Passage {i} tells of place number {i}: {words}.")
    return out


def child(model: str, size: int, mode: str) -> None:
    import resource

    import torch

    from verirag.llm.factory import load_llm

    llm = load_llm(f"hf:{model}", cache=False)
    ps = passages(size)
    messages = [
        {"role": "system", "content": "Answer from the passages."},
        {"role": "user", "content": "\n\n".join(ps) + "\n\nQuestion: what colour is the bridge?"},
    ]
    llm.lookback_ratios(messages[:1] + [{"role": "user", "content": ps[0]}], "warm up", [ps[0]])  # warm-up
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if mode == "ours":
        r = llm.lookback_ratios(messages, ANSWER, ps)
        n_prompt = r.n_prompt
    else:
        ids = llm.prompt_ids(messages) + llm.continuation_ids(ANSWER)
        with llm.eager_attention(), torch.inference_mode():
            out = llm.model(input_ids=torch.tensor([ids]), output_attentions=True)
        kept = [a[0].float() for a in out.attentions]  # what a full-tensor extraction holds on to
        n_prompt = len(ids) - len(llm.continuation_ids(ANSWER))
        del kept
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_mb": (peak - base) / 1024, "n_prompt": n_prompt}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), a.child[2])
        return
    print(f"model hf:{a.model}; answer of {len(ANSWER.split())} words")
    print(
        f"{'prompt tokens':>13} | {'full tensors s':>14} {'MB':>7} | {'lookback s':>10} {'MB':>7} | "
        f"{'time ratio':>10} {'memory ratio':>12}"
    )
    for size in a.sizes:
        res = {}
        for mode in ("full", "ours"):
            p = subprocess.run(
                [sys.executable, __file__, "--child", a.model, str(size), mode], capture_output=True, text=True
            )
            if p.returncode != 0:
                sys.exit(f"{mode} at {size} failed:\n{p.stderr[-2000:]}")
            res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
        f, o = res["full"], res["ours"]
        print(
            f"{o['n_prompt']:>13} | {f['seconds']:>14.2f} {f['peak_mb']:>7.0f} | {o['seconds']:>10.2f} "
            f"{o['peak_mb']:>7.0f} | {o['seconds'] / f['seconds']:>9.2f}x "
            f"{o['peak_mb'] / max(f['peak_mb'], 1e-9):>11.3f}x"
        )


if __name__ == "__main__":
    main()
