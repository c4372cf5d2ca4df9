"""Issue 48's demo goal: seconds per verified answer on the shipped demo corpus and questions with the
context pruner at its published thresholds, against reading every retrieved sentence, on one loaded
model (the `local` preset: qwen2.5-1.5b, the trained verifier), the request cache off.

    .venv/bin/python benchmarks/bench_demo_prune.py [--repeats 3] [--pruner DIR ...] \
        [--arms off conservative aggressive] [--threshold 0.4 ...] [--out runs/bench-demo-prune.jsonl]
    .venv/bin/python benchmarks/bench_demo_prune.py --records data/bench_prune/demo/stack-default-2026-11-30.jsonl

Each repeat asks every demo question in each arm (each pruner's arms, with several `--pruner`s), the
arms taking turns in a rotated order; within an arm the questions follow one another, as in one
`verirag demo` run. Only the live KV state of the request before is reused (the saved prefix states
are off: with them a repeat would find its own earlier prompts cached and read almost nothing), so
an answer reuses what a first run reuses, the shared system prompt, never its own question's prompt
from another arm or repeat. A warm-up question loads the models first and is not counted. Reported per arm: mean
seconds of a verified answer (retrieve + prune + generate + verify) as a ratio to `off` with a paired
bootstrap interval over the (repeat, question) rows, prompt tokens likewise, and how many answers
changed their action; the goal is a ratio of at most 1/3; and where the seconds go (the mean seconds
of each part of an answer: retrieve, which holds the pruning, generate and verify), since a part that
does not shrink with the passages bounds the ratio. Records go to --out, one per answer; `--records`
prints the report of committed records again without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # prune_bound

GOAL = 1 / 3  # issue 48: a verified demo answer in at most a third of the unpruned time


def arm_settings(arms: list[str], thresholds: list[float], pruners: list[str | None]) -> dict[str, object]:
    """{arm name: the `prune` value `Pipeline.ask` takes}: off, each pruner's conservative (its own
    fitted threshold) and aggressive thresholds, and any given number; with several pruners an arm's
    name starts with its pruner's folder name ("shipped" for the default)."""
    from verirag.learned.pruner import ContextPruner
    from verirag.learned.shipped import shipped_pruner_dir

    unknown = [a for a in arms if a not in ("off", "conservative", "aggressive")]
    if unknown:
        raise SystemExit(f"unknown arm {unknown[0]!r} (off, conservative, aggressive; numbers go to --threshold)")
    settings: dict[str, object] = {"off": False} if "off" in arms else {}
    for pruner in pruners:
        loaded = ContextPruner.load(pruner or shipped_pruner_dir())
        named = f"{Path(pruner).name if pruner else 'shipped'}:" if len(pruners) > 1 else ""
        for arm in arms:
            if arm != "off":
                settings[named + arm] = {"threshold": loaded.named_threshold(arm), "pruner": pruner}
        for t in thresholds:
            settings[f"{named}t={t:g}"] = {"threshold": t, "pruner": pruner}
    return settings


def rotated(names: list[str], shift: int) -> list[str]:
    shift %= len(names)
    return names[shift:] + names[:shift]


def paired_ratio(values, reference) -> tuple[float, float, float]:
    """mean(values) / mean(reference) and its 95% paired bootstrap interval over the rows."""
    import numpy as np

    from verirag.metrics.stats import bootstrap_ci

    a, b = np.asarray(values, dtype=float), np.asarray(reference, dtype=float)
    ci = bootstrap_ci(lambda x, y: x.mean() / y.mean(), a, b, n_resamples=2000)
    return float(a.mean() / b.mean()), float(ci.low), float(ci.high)


def report(rows: list[dict], arms: list[str]) -> dict:
    """Per arm against `off`: seconds and prompt tokens as paired ratios, actions changed."""
    by = {(r["arm"], r["repeat"], r["question"]): r for r in rows}
    keys = sorted({(r["repeat"], r["question"]) for r in rows if r["arm"] == "off"})
    out = {}
    for arm in arms:
        pairs = [(by[(arm, *k)], by[("off", *k)]) for k in keys if (arm, *k) in by]
        if not pairs:
            continue
        seconds = paired_ratio([a["seconds"] for a, _ in pairs], [b["seconds"] for _, b in pairs])
        tokens = paired_ratio([a["prompt_tokens"] for a, _ in pairs], [b["prompt_tokens"] for _, b in pairs])
        out[arm] = {
            "rows": len(pairs),
            "mean_seconds": statistics.mean(a["seconds"] for a, _ in pairs),
            "seconds_ratio": seconds,
            "prompt_tokens_ratio": tokens,
            "actions_changed": sum(a["action"] != b["action"] for a, b in pairs),
            "meets_goal": seconds[0] <= GOAL,
            "parts": mean_parts([a for a, _ in pairs]),
        }
    return out


def mean_parts(rows: list[dict]) -> dict[str, float]:
    """The mean seconds of each part of an answer (`AskResult.timings`, its total left out)."""
    parts: dict[str, list[float]] = {}
    for r in rows:
        for k, v in (r.get("timings") or {}).items():
            if k != "total":
                parts.setdefault(k, []).append(float(v))
    return {k: statistics.mean(v) for k, v in parts.items()}


def tokens_for_goal(rows: list[dict]) -> dict[str, float]:
    """Where a third lies in prompt tokens: a verified answer's seconds as a line in its prompt tokens
    (`prune_bound.line_fit`, over every row), and the mean prompt tokens an answer at which the line
    gives GOAL of `off`'s mean seconds. What a pruner must bring the prompts down to."""
    import numpy as np
    from prune_bound import line_fit

    a, b = line_fit(np.array([r["prompt_tokens"] for r in rows], float), np.array([r["seconds"] for r in rows]))
    off = statistics.mean(r["seconds"] for r in rows if r["arm"] == "off")
    return {"intercept_s": a, "seconds_per_token": b, "tokens": (GOAL * off - a) / b}


def print_report(rows: list[dict], names: list[str]) -> None:
    print(f"\nseconds of a verified answer and prompt tokens, as ratios to `off` (goal: seconds at most {GOAL:.3f}x)")
    for arm, e in report(rows, names).items():
        s, t = e["seconds_ratio"], e["prompt_tokens_ratio"]
        parts = ", ".join(f"{k} {v:.2f}" for k, v in e["parts"].items())
        print(
            f"  {arm:24s} {e['mean_seconds']:6.2f} s  seconds {s[0]:.3f}x [{s[1]:.3f}, {s[2]:.3f}]  "
            f"tokens {t[0]:.3f}x [{t[1]:.3f}, {t[2]:.3f}]  actions changed {e['actions_changed']}/{e['rows']}"
            + ("  goal met" if e["meets_goal"] and arm != "off" else "")
            + (f"\n  {'':24s} seconds by part: {parts}" if parts else "")
        )
    line = tokens_for_goal(rows)
    means = ", ".join(
        f"{arm} {statistics.mean(r['prompt_tokens'] for r in rows if r['arm'] == arm):.0f}" for arm in names
    )
    print(
        f"  on the line seconds = {line['intercept_s']:.2f} + {line['seconds_per_token'] * 1000:.2f} ms x prompt tokens, "
        f"the goal is at {line['tokens']:.0f} prompt tokens an answer (the arms' means: {means})"
    )


def main() -> None:
    # set here, not at import: a test that imports this script must not turn the cache off for others
    os.environ["VERIRAG_NO_CACHE"] = "1"
    os.environ["VERIRAG_PREFIX_CACHE_MB"] = "0"  # see the docstring: a repeat must not find itself cached
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--arms", nargs="+", default=["off", "conservative", "aggressive"])
    ap.add_argument("--threshold", type=float, action="append", default=[], help="one more arm at this threshold")
    ap.add_argument(
        "--pruner", action="append", help="a saved pruner folder (repeat to compare; default: the shipped one)"
    )
    ap.add_argument("--out", type=Path, default=Path("runs/bench-demo-prune.jsonl"))
    ap.add_argument("--records", type=Path, help="print the report of these records instead of running")
    args = ap.parse_args()
    if args.records:
        rows = [json.loads(x) for x in args.records.read_text(encoding="utf-8").splitlines() if x.strip()]
        print_report(rows, list(dict.fromkeys(["off", *(r["arm"] for r in rows)])))
        return
    if "off" not in args.arms:
        args.arms = ["off", *args.arms]  # the reference

    from verirag import Pipeline
    from verirag.demo import corpus_path, questions

    settings = arm_settings(args.arms, args.threshold, args.pruner or [None])
    names = list(settings)
    p = Pipeline.from_preset("local")
    p.index(corpus_path())
    p.ask("Warm-up: when was the lighthouse built?", prune=settings[names[-1]])  # loads the pruner too
    qs = [q["question"] for q in questions()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(args.out, "w", encoding="utf-8") as fh:
        for repeat in range(args.repeats):
            for arm in rotated(names, repeat):
                for qi, q in enumerate(qs):
                    t = time.perf_counter()
                    r = p.ask(q, prune=settings[arm])
                    row = {
                        "repeat": repeat,
                        "arm": arm,
                        "question": qi,
                        "prune": settings[arm],
                        "seconds": time.perf_counter() - t,
                        "timings": r.timings,
                        "prompt_tokens": r.usage.get("prompt_tokens"),
                        "action": r.action,
                        "score": r.score,
                        "answer": r.retrieved_answer,
                        "load": round(os.getloadavg()[0], 2),
                    }
                    rows.append(row)
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    fh.flush()
                    print(
                        f"[{repeat}] {arm:24s} q{qi} {row['seconds']:5.1f}s {row['prompt_tokens']} tokens "
                        f"{r.action} {r.score:.2f} {r.retrieved_answer[:50]!r}",
                        flush=True,
                    )
    print_report(rows, names)


if __name__ == "__main__":
    main()
