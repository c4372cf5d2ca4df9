"""The `unstated_number` answer rule (issue 47, item 4), measured from committed scores, no model run:
an answer that states a number neither its passages nor its question state keeps a tenth of its
score (`verirag.awf.core.AnswerRules`).

    VERIRAG_DATA_DIR=../shared/data python benchmarks/number_rule.py [--resamples 2000]

- The changed-value pairs (`benchmarks/verifier_swaps.py`: a right answer and a copy with one number,
  party or negation changed) of the dev set, the own answers and the man pages: the share of pairs
  the trained verifier ranks right above changed, without and with the rule, from its committed
  scores of both answers (data/verifier/swaps/verifier-warm-norule*.jsonl: the verifier shipped then, data/verifier/candidates/warm,
  scored before the rule existed).
- AUROC of each judge whose scores are committed (the verifier, nli, nli over the evidence) on the
  dev set, the own answers and the man pages, without and with the rule, paired over questions: what
  the rule costs the answers that are right.

The rule reads the answer, the passages and the question, so applying it to a committed score gives
exactly what the answer path gives (the scores were made before the rule; a score made since has it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nli_evidence as ne
from verifier_swaps import make_pairs, own_rows

from verirag.awf.core import NUMBER_PENALTY
from verirag.awf.numbers import unstated_numbers
from verirag.conversation import in_context
from verirag.metrics.calibration import auroc
from verirag.metrics.stats import group_bootstrap_intervals

ROOT = Path(__file__).resolve().parents[1]
SWAPS = ROOT / "data" / "verifier" / "swaps"


def penalised(question: str, answer: str, passages) -> bool:
    """Whether the rule applies: the sources are what `AnswerRules` reads."""
    texts = [getattr(p, "text", p) for p in passages]
    return bool(unstated_numbers(answer or "", [question, *texts]))


def before_rules(scores: dict[str, float | None], rows: list[dict]) -> dict[str, float | None]:
    """`scores` of the dev log's answers (`rows`: verifier_dev.dev_rows) as they were before the
    number rule: a score `verirag verify` made since the rule keeps a tenth of itself where the rule
    applied, so that share is given back (tests/test_dev_scores_whole.py checks it against a run made
    before the rule)."""
    out = dict(scores)
    for r in rows:
        s = scores.get(r["id"])
        if s is not None and penalised(
            in_context(r["user_input"], r.get("history") or []), r["response"], r["retrieved_contexts"]
        ):
            out[r["id"]] = s / NUMBER_PENALTY
    return out


def swap_rows(which: str) -> list[dict]:
    from verifier_dev import dev_rows

    if which == "dev":
        return dev_rows()
    if which == "own":
        return own_rows(ne.OWN)
    from heldout_docs import LOG, heldout_rows

    return heldout_rows(LOG)


SWAP_FILES = {
    "dev": "verifier-warm-norule.jsonl",
    "own": "verifier-warm-norule-own.jsonl",
    "manpages": "verifier-warm-norule-manpages.jsonl",
}


def swaps_table() -> list[dict]:
    out = []
    for which, name in SWAP_FILES.items():
        path = SWAPS / name
        if not path.is_file():
            continue
        scored = {}
        for r in map(json.loads, filter(str.strip, path.read_text(encoding="utf-8").splitlines())):
            scored[(r["id"], r["kind"])] = r
        rows = [
            r
            for r in swap_rows("own" if which == "own" else ("docs" if which == "manpages" else "dev"))
            if r.get("label") == 1
        ]
        for p in make_pairs(rows):
            s = scored.get((p["id"], p["kind"]))
            if s is None or s["right"] is None or s["wrong"] is None:
                continue
            q = in_context(p["user_input"], p.get("history") or [])
            right = s["right"] * (NUMBER_PENALTY if penalised(q, p["response"], p["retrieved_contexts"]) else 1)
            wrong = s["wrong"] * (NUMBER_PENALTY if penalised(q, p["wrong"], p["retrieved_contexts"]) else 1)
            out.append({"set": which, "kind": p["kind"], "before": s["right"] > s["wrong"], "after": right > wrong})
    return out


def auroc_table(resamples: int) -> list[dict]:
    rows = []
    for which, load in ne.ITEMS.items():
        items = load()
        nli, ver = ne.reference_scores(which)
        evidence = {
            k: r["score"] for k, r in ne._read(ne.FILES[which]["evidence"]).items() if r.get("score") is not None
        }
        columns = {"verifier": ver, "nli": nli, "nli over the evidence": evidence}
        for name, part in ne.subsets(which, items):
            kept = [t for t in part if t[4] is not None and all(t[0] in c for c in columns.values())]
            if not kept:
                continue
            y = np.array([t[4] for t in kept])
            hit = np.array([penalised(t[1], t[2], t[3]) for t in kept])
            cols = {}
            for k, c in columns.items():
                s = np.array([c[t[0]] for t in kept], dtype=float)
                cols[k], cols[f"{k}+rule"] = s, np.where(hit, s * NUMBER_PENALTY, s)

            def stat(ix, cols=cols, y=y, names=tuple(columns)):
                out = {k: np.array([auroc(v[r], y[r]) for r in ix]) for k, v in cols.items()}
                return out | {f"{k} gain": out[f"{k}+rule"] - out[k] for k in names}

            res = group_bootstrap_intervals(stat, [t[5] for t in kept], n_resamples=resamples, seed=0)
            rows.append(
                {
                    "set": name,
                    "n": len(kept),
                    "ruled": int(hit.sum()),
                    "ruled_right": int((hit & (y == 1)).sum()),
                    **{k: [res[k].estimate] for k in cols},
                    **{
                        f"{k} gain": [res[f"{k} gain"].estimate, res[f"{k} gain"].low, res[f"{k} gain"].high]
                        for k in columns
                    },
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resamples", type=int, default=2000)
    a = ap.parse_args(argv)
    swaps = swaps_table()
    print(
        "| changed-value pairs | kind | pairs | right above changed, verifier | with the rule |\n|---|---|---|---|---|"
    )
    for which in SWAP_FILES:
        for kind in ("number", "party", "negation"):
            part = [r for r in swaps if r["set"] == which and r["kind"] == kind]
            if part:
                before = np.mean([r["before"] for r in part])
                after = np.mean([r["after"] for r in part])
                print(f"| {which} | {kind} | {len(part)} | {before:.3f} | {after:.3f} |")
    print(
        "\n| set | answers | ruled (right) | verifier | +rule [gain] | nli | +rule [gain] | nli over the evidence | +rule [gain] |"
        "\n|---|---|---|---|---|---|---|---|---|"
    )
    for r in auroc_table(a.resamples):
        cells = []
        for k in ("verifier", "nli", "nli over the evidence"):
            g = r[f"{k} gain"]
            cells.append(f"{r[k][0]:.3f} | {r[k + '+rule'][0]:.3f} [{g[0]:+.3f} ({g[1]:+.3f}, {g[2]:+.3f})]")
        print(f"| {r['set']} | {r['n']} | {r['ruled']} ({r['ruled_right']}) | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
