"""A verifier candidate judged by the rule written down before it was trained
(`data/verifier/candidates/clean/README.md`): it replaces the shipped verifier only if no paired
95% interval of candidate minus shipped (AUROC, resampling whole questions; man pages whole)
lies wholly below 0 on the dev set (other LLMs' answers, 799) and on the man pages (150), the
two sets neither line trained on. The changed-value pairs (numbers, parties, negations) are
reported beside it, paired the same way; with --party-must-rise the dev set's changed parties must
also rise with an interval wholly above 0 (`data/verifier/candidates/contrast/README.md`, the
condition it must meet against the clean candidate).

It reads the score files `scripts/measure_verifier.sh NAME DIR` writes (no LLM, no model):

    VERIRAG_DATA_DIR=../shared/data python benchmarks/candidate_rule.py contrast [--against shipped] [--json OUT]

The own-answer sets do not decide (the shipped line trained on their questions): compare them with
`benchmarks/verifier_own_answers.py RUN --verifier-scores ...`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_docs import read_scores as read_doc_scores
from verifier_dev import DEV_DATASETS, dev_rows
from verifier_dev import read_scores as read_dev_scores
from verifier_swaps import above, paired_table
from verifier_swaps import read_scores as read_swaps

from verirag.metrics.calibration import auroc
from verirag.metrics.stats import group_bootstrap_intervals

ROOT = Path(__file__).resolve().parents[1] / "data" / "verifier"
DECIDING = ("dev, every answer", "man pages")


def paired_auroc(
    y: np.ndarray, groups: Sequence[str], candidate: np.ndarray, base: np.ndarray, resamples: int = 2000
) -> dict:
    """Both AUROCs and candidate minus base with its 95% interval, resampling whole groups (both
    judges on the same resamples)."""
    y, candidate, base = np.asarray(y), np.asarray(candidate, dtype=float), np.asarray(base, dtype=float)

    def stat(ix: np.ndarray) -> dict[str, np.ndarray]:
        a = np.array([auroc(candidate[r], y[r]) for r in ix])
        b = np.array([auroc(base[r], y[r]) for r in ix])
        return {"diff": a - b}

    diff = group_bootstrap_intervals(stat, list(groups), n_resamples=resamples, seed=0)["diff"]
    return {
        "n": len(y),
        "candidate": float(auroc(candidate, y)),
        "base": float(auroc(base, y)),
        "difference": float(diff.estimate),
        "interval": [float(diff.low), float(diff.high)],
    }


def dev_comparison(name: str, against: str, data: Path | None, resamples: int) -> list[dict]:
    """The dev set's answers both scored: every answer, then each dataset alone (reported); each
    row says how many of the set's answers that is (`of`)."""
    folder = ROOT / "dev_scores" / "whole"
    cand, base = (read_dev_scores(folder / f"verifier-{n}.jsonl") for n in (name, against))
    every = dev_rows(data)
    rows = [r for r in every if cand.get(r["id"]) is not None and base.get(r["id"]) is not None]
    out = []
    for label, dataset in (("dev, every answer", None), *((f"dev, {d}", d) for d in DEV_DATASETS)):
        sel = [r for r in rows if dataset is None or r["group"].startswith(dataset + ":")]
        y = np.array([r["label"] for r in sel])
        out.append(
            {
                "set": label,
                "of": sum(dataset is None or r["group"].startswith(dataset + ":") for r in every),
                **paired_auroc(
                    y,
                    [r["group"] for r in sel],
                    np.array([cand[r["id"]] for r in sel]),
                    np.array([base[r["id"]] for r in sel]),
                    resamples,
                ),
            }
        )
    return out


def docs_comparison(name: str, against: str, resamples: int) -> dict:
    """The man pages' claims both scored (labels from the score files), a man page resampled whole."""
    folder = ROOT / "heldout_docs"
    cand, base = (read_doc_scores(folder / f"verifier-{n}.jsonl") for n in (name, against))
    ids = [k for k, s in cand.items() if s.score is not None and base.get(k) and base[k].score is not None]
    missing = [k for k in ids if cand[k].label is None and base[k].label is None]
    if missing:
        raise ValueError(f"{len(missing)} man-page claims have no label in either score file (e.g. {missing[0]})")
    differ = [k for k in ids if None not in (cand[k].label, base[k].label) and cand[k].label != base[k].label]
    if differ:
        raise ValueError(f"{len(differ)} man-page claims are labelled differently in the two files (e.g. {differ[0]})")
    y = np.array([cand[k].label if cand[k].label is not None else base[k].label for k in ids])
    groups = [k.rsplit("#", 1)[0] for k in ids]
    scores = [np.array([s[k].score for k in ids]) for s in (cand, base)]
    return {"set": "man pages", "of": len(set(cand) | set(base)), **paired_auroc(y, groups, *scores, resamples)}


def swaps_comparison(name: str, against: str, suffix: str = "", resamples: int = 1000) -> list[dict]:
    """Right above changed, per kind: candidate minus base over the pairs both scored."""
    folder = ROOT / "swaps"
    cand, base = (read_swaps(folder / f"verifier-{n}{suffix}.jsonl") for n in (name, against))
    theirs = {(r["id"], r["kind"]): r for r in base}
    rows = paired_table(cand, base, resamples=resamples)
    for row in rows:
        both = [r for r in cand if (row["kind"] in ("all", r["kind"])) and (r["id"], r["kind"]) in theirs]
        row["candidate"] = float(np.mean([above(r) for r in both]))
        row["base"] = float(np.mean([above(theirs[(r["id"], r["kind"])]) for r in both]))
    return rows


def shown_below(rows: Sequence[dict]) -> list[str]:
    """The sets (deciding or not) where the candidate is shown below: interval wholly below 0."""
    return [r.get("set") or r.get("kind", "?") for r in rows if r["interval"][1] < 0]


def verdict(rows: Sequence[dict], party: dict | None = None) -> tuple[bool, list[str]]:
    """(replaces the base, why not): no deciding set's interval wholly below 0, and with `party`
    (the dev set's changed-party pairs) its interval wholly above 0."""
    why = [
        f"{r['set']}: {r['difference']:+.3f} [{r['interval'][0]:+.3f}, {r['interval'][1]:+.3f}] lies wholly below 0"
        for r in rows
        if r["set"] in DECIDING and r["interval"][1] < 0
    ]
    if party is not None and not party["interval"][0] > 0:
        why.append(
            f"changed parties: {party['difference']:+.3f} [{party['interval'][0]:+.3f}, {party['interval'][1]:+.3f}] "
            "does not rise with an interval wholly above 0"
        )
    return not why, why


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", help="the candidate, as scripts/measure_verifier.sh named its score files")
    ap.add_argument("--against", default="shipped", help="the verifier it would replace (default: shipped)")
    ap.add_argument("--party-must-rise", action="store_true", help="the contrast candidate's extra condition")
    ap.add_argument("--data", type=Path, default=None, help="the shared data folder (default: VERIRAG_DATA_DIR)")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--json", type=Path, default=None, help="also write everything here")
    a = ap.parse_args(argv)
    rows = [*dev_comparison(a.name, a.against, a.data, a.resamples), docs_comparison(a.name, a.against, a.resamples)]
    print(f"| set | n | {a.against} | {a.name} | {a.name} minus {a.against} |\n|---|---|---|---|---|")
    for r in rows:
        lo, hi = r["interval"]
        flag = " (decides)" if r["set"] in DECIDING else ""
        n = f"{r['n']}" + (f" of {r['of']}" if r.get("of", r["n"]) != r["n"] else "")
        print(
            f"| {r['set']}{flag} | {n} | {r['base']:.3f} | {r['candidate']:.3f} | "
            f"{r['difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] |"
        )
    swaps = {}
    for label, suffix in (("dev", ""), ("own", "-own"), ("man pages", "-manpages")):
        try:
            swaps[label] = swaps_comparison(a.name, a.against, suffix, min(a.resamples, 1000))
        except FileNotFoundError as e:
            print(f"(changed values, {label}: no scores: {e.filename})")
            continue
        for s in swaps[label]:
            lo, hi = s["interval"]
            print(
                f"| changed values, {label}: {s['kind']} (right above changed) | {s['pairs']} | {s['base']:.3f} | "
                f"{s['candidate']:.3f} | "
                f"{s['difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] |"
            )
    party = next((s for s in swaps.get("dev", []) if s["kind"] == "party"), None)
    if a.party_must_rise and party is None:
        print("the dev set's changed-party pairs are not scored: run scripts/measure_verifier.sh first")
        return 1
    ok, why = verdict(rows, party if a.party_must_rise else None)
    below = shown_below(rows) + [f"changed values, {k}: {s}" for k, v in swaps.items() for s in shown_below(v)]
    print(
        f"\n{a.name} {'replaces' if ok else 'does not replace'} {a.against} by the rule"
        + ("" if ok else ": " + "; ".join(why))
    )
    print("shown below " + a.against + " on: " + (", ".join(below) if below else "no set"))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"auroc": rows, "swaps": swaps, "replaces": ok, "why_not": why}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
