"""How fast pruning could make a verified answer at best: issue 48's long-document goal (at most a
fifth of the unpruned seconds on HotpotQA's ten paragraphs) against a pruner that keeps exactly the
supporting facts and nothing else. No LLM; seconds, from committed records.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/prune_bound.py \
        [--records data/bench_prune/issue48-all-layers-retrieved-docs] [--arms build prune]

From `benchmarks/bench_prune.py`'s records of both arms (every sentence read, and the shipped
pruner), on the questions whose two records were made on quiet cores with one build (`--all`:
every question):
- a verified answer's seconds as a line in its prompt tokens, fitted on both arms' records
  (Theil-Sen, robust to the few slow outliers; each answer's prompt is a fixed part, the system
  message, each kept passage's "Document i: title." line, the instruction and the question, plus
  what it reads of the passages' text);
- the fixed part of each question's prompt (the pruned prompt minus the passage tokens it read) and
  its passage tokens (read plus saved);
- the oracle: the fixed part plus the question's passage tokens times the share of its passages'
  words that are HotpotQA's supporting facts;
- the ratio of mean seconds to the unpruned arm's, by the line: measured pruned (a check of the
  line against the measured ratio), the oracle, and the share of the passages a pruner could keep
  at most for a ratio of a fifth.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

GOAL = 1 / 5  # issue 48: a verified answer on long documents in at most a fifth of the unpruned seconds


def load(folder: Path, arm: str, dataset: str) -> dict[str, dict]:
    out = {}
    for line in (folder / f"{arm}.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("dataset") == dataset and not r.get("error"):
            out[r["key"]] = r
    return out


def supporting_share(example_id: str, raw: dict) -> float:
    """The share of a HotpotQA question's paragraph words that are its supporting-fact sentences."""
    from verirag_lab.train.pruner_examples import _supporting

    r = raw[example_id]
    paragraphs = {str(t): ss for t, ss in r["context"]}
    total = sum(len(s.split()) for ss in paragraphs.values() for s in ss)
    facts = sum(
        len(paragraphs[t][i].split())
        for t, i in _supporting(r["supporting_facts"])
        if t in paragraphs and i < len(paragraphs[t])
    )
    return facts / max(total, 1)


def line_fit(tokens: np.ndarray, seconds: np.ndarray) -> tuple[float, float]:
    """(intercept, seconds per prompt token) by Theil-Sen."""
    from scipy.stats import theilslopes

    slope, intercept, _, _ = theilslopes(seconds, tokens)
    return float(intercept), float(slope)


def bound(unpruned: dict[str, dict], pruned: dict[str, dict], shares: dict[str, float]) -> dict:
    """The line, and the ratios of mean seconds to the unpruned arm's it gives (see the module doc)."""
    keys = sorted(k for k in pruned if k in unpruned and k in shares and "prune" in pruned[k])
    if not keys:
        raise SystemExit("no question has both arms' records and its supporting facts")
    u_tok = np.array([unpruned[k]["prompt_tokens"] for k in keys], dtype=float)
    p_tok = np.array([pruned[k]["prompt_tokens"] for k in keys], dtype=float)
    u_sec = np.array([unpruned[k]["seconds"] for k in keys])
    p_sec = np.array([pruned[k]["seconds"] for k in keys])
    read = np.array([pruned[k]["prune"]["tokens_read"] for k in keys], dtype=float)
    saved = np.array([pruned[k]["prune"]["tokens_saved"] for k in keys], dtype=float)
    fixed = p_tok - read
    passages = read + saved
    a, b = line_fit(np.r_[u_tok, p_tok], np.r_[u_sec, p_sec])
    full = (a + b * u_tok).mean()
    oracle_tok = fixed + np.array([shares[k] for k in keys]) * passages
    # the largest passage share s with a + b * (fixed + s * passages) at most GOAL of the line's unpruned mean
    room = (GOAL * full - a - b * fixed.mean()) / (b * passages.mean())
    return {
        "questions": len(keys),
        "intercept_s": a,
        "seconds_per_token": b,
        "fixed_tokens": float(np.median(fixed)),
        "passage_tokens": float(np.median(passages)),
        "supporting_share": float(np.mean([shares[k] for k in keys])),
        "measured_pruned": float(p_sec.mean() / u_sec.mean()),
        "line_pruned": float((a + b * p_tok).mean() / full),
        "oracle": float((a + b * oracle_tok).mean() / full),
        "share_for_goal": float(room),
        "pruned_share": float((read / passages).mean()),
    }


def main(argv: list[str] | None = None) -> int:
    from bench_prune import one_build, quiet

    from verirag_lab.datasets.registry import data_dir
    from verirag_lab.train.pruner_examples import hotpotqa_records

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=Path, default=Path("data/bench_prune/issue48-all-layers-retrieved-docs"))
    ap.add_argument("--arms", nargs=2, default=["build", "prune"], metavar=("UNPRUNED", "PRUNED"))
    ap.add_argument("--all", action="store_true", help="every record, not only those made on quiet cores")
    a = ap.parse_args(argv)
    unpruned, pruned = (load(a.records, arm, "hotpotqa") for arm in a.arms)
    if not a.all:
        calm = [
            k
            for k in pruned
            if k in unpruned and quiet(unpruned[k]) and quiet(pruned[k]) and one_build([unpruned[k], pruned[k]])
        ]
        unpruned, pruned = ({k: rows[k] for k in calm} for rows in (unpruned, pruned))
    raw = {f"hotpotqa:{r['_id']}": r for r in hotpotqa_records(data_dir())}
    shares = {k: supporting_share(k, raw) for k in pruned if k in raw}
    m = bound(unpruned, pruned, shares)
    print(f"HotpotQA, ten paragraphs: {m['questions']} questions ({'all' if a.all else 'quiet cores, one build'})")
    print(
        f"seconds = {m['intercept_s']:.2f} + {m['seconds_per_token'] * 1000:.2f} ms x prompt tokens; "
        f"prompt: {m['fixed_tokens']:.0f} fixed + {m['passage_tokens']:.0f} of passages (medians)"
    )
    print("| pruning | passages read | seconds, ratio to unpruned |")
    print("|---|---|---|")
    print(f"| shipped pruner, measured | {m['pruned_share']:.1%} | {m['measured_pruned']:.3f} |")
    print(f"| shipped pruner, by the line | {m['pruned_share']:.1%} | {m['line_pruned']:.3f} |")
    print(f"| the supporting facts alone (oracle), by the line | {m['supporting_share']:.1%} | {m['oracle']:.3f} |")
    print(f"| the most a pruner may keep for {GOAL:.2f} | {m['share_for_goal']:.1%} | {GOAL:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
