"""Issue 47: the shipped stack judging answers given to verify (`stacked(impute=true)`): no generation
log-probabilities, so they sit at their training means and the stack's judges decide (the verifier
under the plain minimum, as the stack was fitted, `llm_judge` and K-Precision). Measured from the
committed scores of each judge, no model run here:

- the dev set (other LLMs' answers, humans' labels): AUROC beside the verifier and `llm_judge`
  alone, differences paired over questions;
- the dev set's changed-party pairs (`verifier_swaps.py`): right above its copy with one party swapped;
- the made-up checks (`verifier_made_up.py`: follow-ups with their history, bridges).

    VERIRAG_DATA_DIR=../shared/data python benchmarks/stack_given.py
    python benchmarks/stack_given.py --made-up-only      # needs no benchmark data

The local model's own answers given without their log-probabilities are measured by
`verifier_own_answers.py RUN --stack-given NAME=STACK` (docs/results/verifier.md). The dev set is
evaluation data: this measures, it never fits anything (the stack is the shipped one, as fitted).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1] / "data" / "verifier"
DEV_VERIFIER = ROOT / "dev_scores" / "whole" / "verifier-shipped.jsonl"  # the plain minimum, as the stack reads it
DEV_JUDGE = ROOT / "dev_scores" / "whole" / "llm_judge-qwen2.5-1.5b.jsonl"
SWAP_VERIFIER = ROOT / "swaps" / "verifier-shipped.jsonl"
SWAP_JUDGE = ROOT / "swaps" / "llm-judge-party.jsonl"
MADE_UP_VERIFIER = ROOT / "made_up" / "verifier-shipped.json"
MADE_UP_JUDGE = ROOT / "made_up" / "llm_judge-qwen2.5-1.5b.json"


def given_score(stack, verifier: float, judge: float, answer: str, passages: Sequence[str]) -> float:
    """P(faithful) of a given answer by `stack`, as `stacked(impute=true)` computes it before the
    answer rules (a declining answer, scored 0 by them, keeps its stack score here)."""
    from verirag.metrics.faithfulness import k_precision

    values = {"verifier": verifier, "llm_judge": judge, "k_precision": k_precision(answer, list(passages))}
    return stack.score(values, impute=True)


def dev_table(stack, rows: list[dict], verifier: Mapping[str, float], judge: Mapping[str, float], resamples: int):
    """Per dataset (and all): answers, AUROC of the verifier, `llm_judge` and the stack, and the
    stack minus each, paired over questions (95%)."""
    from verirag.metrics.calibration import auroc
    from verirag.metrics.stats import group_bootstrap_intervals

    rows = [r for r in rows if verifier.get(r["id"]) is not None and judge.get(r["id"]) is not None]
    y = np.array([r["label"] for r in rows])
    cols = {
        "verifier": np.array([verifier[r["id"]] for r in rows]),
        "llm_judge": np.array([judge[r["id"]] for r in rows]),
    }
    cols["stack"] = np.array(
        [given_score(stack, verifier[r["id"]], judge[r["id"]], r["response"], r["retrieved_contexts"]) for r in rows]
    )
    out = []
    for part in ("all", *sorted({r["group"].split(":", 1)[0] for r in rows})):
        ix = np.array([i for i, r in enumerate(rows) if part == "all" or r["group"].split(":", 1)[0] == part])

        def statistic(b, ix=ix):
            lab = y[ix][b]
            a = {k: auroc(v[ix][b], lab) for k, v in cols.items()}
            return {"minus_verifier": a["stack"] - a["verifier"], "minus_judge": a["stack"] - a["llm_judge"]}

        ci = group_bootstrap_intervals(statistic, [rows[i]["group"] for i in ix], n_resamples=resamples, seed=0)
        row = {"part": part, "answers": len(ix), **{k: float(auroc(v[ix], y[ix])) for k, v in cols.items()}}
        for k in ("minus_verifier", "minus_judge"):
            row[k] = [float(ci[k].low), float(ci[k].high)]
        out.append(row)
    return out


def pair_share(stack, pairs: list[dict], verifier: Mapping, judge: Mapping) -> dict[str, float]:
    """Over the pairs both judges scored ({(id, kind): {right, wrong}}): the share with the right
    answer strictly above the changed one, by the verifier, `llm_judge` and the stack."""
    hits = {"verifier": [], "llm_judge": [], "stack": []}
    for p in pairs:
        key = (p["id"], p["kind"])
        if key not in verifier or key not in judge:
            continue
        v, j = verifier[key], judge[key]
        right = given_score(stack, v["right"], j["right"], p["response"], p["retrieved_contexts"])
        wrong = given_score(stack, v["wrong"], j["wrong"], p["wrong"], p["retrieved_contexts"])
        for name, (a, b) in {
            "verifier": (v["right"], v["wrong"]),
            "llm_judge": (j["right"], j["wrong"]),
            "stack": (right, wrong),
        }.items():
            hits[name].append(a > b)
    return {"pairs": len(hits["stack"]), **{k: float(np.mean(h)) if h else float("nan") for k, h in hits.items()}}


def made_up_table(stack, verifier_file: Path = MADE_UP_VERIFIER, judge_file: Path = MADE_UP_JUDGE) -> dict:
    """Per kind of made-up check: right above wrong out of all, by the verifier, `llm_judge` and the stack."""
    from verifier_made_up import pairs

    v = json.loads(verifier_file.read_text(encoding="utf-8"))["pairs"]
    j = json.loads(judge_file.read_text(encoding="utf-8"))["pairs"]
    out: dict[str, dict[str, list[int]]] = {}
    for p, a, b in zip(pairs(), v, j, strict=True):
        if not (p["kind"], p["name"]) == (a["kind"], a["name"]) == (b["kind"], b["name"]):
            raise SystemExit(f"{verifier_file} and {judge_file} do not score the made-up pairs in order")
        R, W = p["right"], p["wrong"]
        right = given_score(stack, a["right"], b["right"], R["answer"], R["contexts"])
        wrong = given_score(stack, a["wrong"], b["wrong"], W["answer"], W["contexts"])
        row = out.setdefault(p["kind"], {"verifier": [0, 0], "llm_judge": [0, 0], "stack": [0, 0]})
        for name, above in (
            ("verifier", a["right"] > a["wrong"]),
            ("llm_judge", b["right"] > b["wrong"]),
            ("stack", right > wrong),
        ):
            row[name][0] += int(above)
            row[name][1] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default=None, help="a stack file (default: the shipped one)")
    ap.add_argument("--made-up-only", action="store_true", help="only the made-up checks (no benchmark data)")
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args(argv)
    from verirag.learned.stack import StackedVerifier, shipped_stack_path

    stack = StackedVerifier.load(args.stack or shipped_stack_path())
    lacking = {"verifier", "llm_judge"} - set(stack.features)
    if lacking:
        raise SystemExit(f"the stack reads no {', '.join(sorted(lacking))}: nothing to measure here")
    print("made-up checks, right above wrong (verifier / llm_judge / the stack on given answers):")
    for kind, row in made_up_table(stack).items():
        print(f"  {kind:34s} " + " / ".join(f"{a} of {n}" for a, n in row.values()))
    if args.made_up_only:
        return 0
    from verifier_dev import dev_rows
    from verifier_swaps import make_pairs, read_scores

    rows = dev_rows()
    print("\ndev set (other LLMs' answers), AUROC; the stack minus each, paired over questions:")
    for t in dev_table(
        stack,
        rows,
        *({d["id"]: d.get("score") for d in read_scores(f)} for f in (DEV_VERIFIER, DEV_JUDGE)),
        args.resamples,
    ):
        mv, mj = t["minus_verifier"], t["minus_judge"]
        print(
            f"  {t['part']:10s} {t['answers']:4d}  verifier {t['verifier']:.3f}  llm_judge {t['llm_judge']:.3f}  "
            f"stack {t['stack']:.3f}  minus verifier [{mv[0]:+.3f}, {mv[1]:+.3f}]  minus llm_judge [{mj[0]:+.3f}, {mj[1]:+.3f}]"
        )
    pairs = make_pairs([r for r in rows if r["label"] == 1])
    verifier, judge = ({(d["id"], d["kind"]): d for d in read_scores(f)} for f in (SWAP_VERIFIER, SWAP_JUDGE))
    share = pair_share(stack, pairs, verifier, judge)
    print(
        f"\nchanged-party pairs ({share['pairs']}), right above the changed: verifier {share['verifier']:.3f}, "
        f"llm_judge {share['llm_judge']:.3f}, the stack on given answers {share['stack']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
