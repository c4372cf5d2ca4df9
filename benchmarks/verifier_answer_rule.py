"""How the verifier's claim scores combine into the answer's (issue 47, item 4): the plain minimum
(`softmin=0`, the rule until 2026-12-01) against the smooth minimum at a few temperatures
(`verirag.learned.verifier.answer_logit`), from one scoring pass that keeps every answer's claim
logits:

- the dev set (instruct_qa_human's HotpotQA and TopiOCQA rows): AUROC against the human labels;
- the committed own-answer sets of 300 (HotpotQA, NQ) and the follow-ups (344): AUROC against the
  gold grade, their passages rebuilt from the data as the runs read them;
- the changed-value pairs of `verifier_swaps.py` (a number, a party or a negation changed in a
  right dev answer): the share of pairs whose right answer scores strictly above the changed one,
  overall and for answers of several sentences, where the rules differ.

AUROC differences are paired over questions (whole questions resampled). The dev set is evaluation
data: this measures, it trains nothing; the rule's temperature is a choice made on it (a dev set).

    VERIRAG_DATA_DIR=../shared/data python benchmarks/verifier_answer_rule.py \\
        --out data/verifier/answer_rule/verifier-shipped.jsonl        # score once (a few minutes)
    python benchmarks/verifier_answer_rule.py --logits data/verifier/answer_rule/verifier-shipped.jsonl

The logits file holds ids, labels, kinds and numbers (no benchmark text). The number rule
(`unstated_number`) is left out here: it acts on the answer after the verifier, alike for every rule.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

RULES = (0.0, 0.1, 0.25, 0.5)  # softmin temperatures; 0: the plain minimum
# a pair's two answers are scored in different batches, whose logits differ by up to ~1e-6: a
# difference below this is a tie (and a tie counts against the rule, as in verifier_swaps.py)
TIE = 1e-5
OWN_SETS = {
    "own HotpotQA": "own-answers-verifier-qwen2.5-1.5b",
    "own NQ": "own-answers-nq-verifier-qwen2.5-1.5b",
    "own follow-ups": "own-answers-followup-verifier-qwen2.5-1.5b",
}
OWN = Path(__file__).resolve().parents[1] / "data" / "verifier" / "own_answers"


def claim_logits(rows: list[dict], verifier: str | None, answer_field: str = "response") -> list[list[float] | None]:
    """Each row's claim logits under the verifier (None: it could not be read), scored as
    `verirag.Verifier` scores it (the same questions, histories and passages)."""
    from verirag import Verifier
    from verirag.learned.verifier import TrainedVerifier

    seen: list[tuple[tuple, list[float] | None]] = []  # (answer and passages, logits) as read, in row order
    original = TrainedVerifier.support_many

    def recording(self, questions, answers, passages, histories=None):
        out = original(self, questions, answers, passages, histories)
        for a, p, s in zip(answers, passages, out):
            seen.append((_key(a, p), None if isinstance(s, Exception) else list(s.claim_logits)))
        return out

    TrainedVerifier.support_many = recording
    try:
        v = Verifier(f"vanilla+verifier(verifier={verifier})" if verifier else None)
        ins = [
            {
                "question": r["user_input"],
                "answer": r[answer_field],
                "contexts": r["retrieved_contexts"],
                "history": r.get("history") or None,
            }
            for r in rows
        ]
        results = v.verify_many(ins)
    finally:
        TrainedVerifier.support_many = original
    # the verifier reads the rows in order, less those refused before it (e.g. an empty answer): the
    # rows it read are a subsequence of `rows`, matched greedily by answer and passages
    out, at = [], 0
    for r, res in zip(rows, results):
        z = None
        if at < len(seen) and seen[at][0] == _key(r[answer_field], r["retrieved_contexts"]):
            z, at = seen[at][1], at + 1
        out.append(z if res.score is not None else None)
    if at != len(seen):
        raise SystemExit(f"{len(seen) - at} answers read by the verifier were not matched to their rows")
    return out


def _key(answer: str, passages) -> tuple:
    """An answer and its passages as the verifier reads them and as a row holds them (whitespace aside)."""
    return (" ".join(str(answer).split()), tuple(" ".join(str(p).split()) for p in passages))


def score_all(verifier: str | None) -> list[dict]:
    """One line per scored item: dev and own answers (set, id, group, label, logits) and changed-value
    pairs (set "pairs", id, kind, right and changed logits)."""
    from verifier_dev import dev_rows
    from verifier_swaps import make_pairs, own_rows

    lines = []
    dev = dev_rows()
    dev_z = claim_logits(dev, verifier)
    for r, z in zip(dev, dev_z):
        name = "dev HotpotQA" if r["id"].startswith("hotpot") else "dev TopiOCQA"
        lines.append({"set": name, "id": r["id"], "group": r["group"], "label": r["label"], "logits": z})
    by_id = {r["id"]: z for r, z in zip(dev, dev_z)}
    pairs = make_pairs([r for r in dev if r["label"] == 1])
    for p, z in zip(pairs, claim_logits(pairs, verifier, "wrong")):
        lines.append({"set": "pairs", "id": p["id"], "kind": p["kind"], "right": by_id[p["id"]], "changed": z})
    for name, run in OWN_SETS.items():
        rows = own_rows(OWN / run, history=True)
        for r, z in zip(rows, claim_logits(rows, verifier)):
            lines.append({"set": name, "id": r["id"], "group": r["group"], "label": r["label"], "logits": z})
    return lines


def rule_score(logits: list[float], softmin: float) -> float:
    from verirag.learned.verifier import answer_logit

    return answer_logit(logits, softmin)


def auroc_table(lines: list[dict], resamples: int = 1000) -> list[dict]:
    """Per set and rule: AUROC, and its difference to the plain minimum paired over questions."""
    from verirag.metrics.calibration import auroc
    from verirag.metrics.stats import group_bootstrap_intervals

    out = []
    for name in dict.fromkeys(x["set"] for x in lines if x["set"] != "pairs"):
        rows = [x for x in lines if x["set"] == name and x["logits"] is not None]
        y = np.array([x["label"] for x in rows])
        cols = {t: np.array([rule_score(x["logits"], t) for x in rows]) for t in RULES}

        def stat(ix, cols=cols, y=y):
            res = {t: np.array([auroc(v[r], y[r]) for r in ix]) for t, v in cols.items()}
            return {**{str(t): a for t, a in res.items()}, **{f"{t}-min": res[t] - res[0.0] for t in RULES[1:]}}

        res = group_bootstrap_intervals(stat, [x["group"] for x in rows], n_resamples=resamples, seed=0)
        for t in RULES:
            d = res.get(f"{t}-min")
            out.append(
                {
                    "set": name,
                    "n": len(rows),
                    "softmin": t,
                    "auroc": res[str(t)].estimate,
                    "minus_min": None if d is None else [d.estimate, d.low, d.high],
                }
            )
    return out


def pairs_table(lines: list[dict]) -> list[dict]:
    """Per kind and rule: the share of pairs whose right answer scores strictly above the changed one,
    over all pairs and over those whose right answer has several claims."""
    pairs = [x for x in lines if x["set"] == "pairs" and x["right"] is not None and x["changed"] is not None]
    out = []
    for kind in dict.fromkeys(x["kind"] for x in pairs):
        for subset, keep in (("all", lambda x: True), ("several claims", lambda x: len(x["right"]) > 1)):
            rows = [x for x in pairs if x["kind"] == kind and keep(x)]
            for t in RULES:
                above = [rule_score(x["right"], t) > rule_score(x["changed"], t) + TIE for x in rows]
                out.append(
                    {"kind": kind, "subset": subset, "pairs": len(rows), "softmin": t, "above": float(np.mean(above))}
                )
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verifier", default=None, help="a verifier folder (default: the shipped one)")
    ap.add_argument("--out", type=Path, help="write every item's claim logits here (JSONL: ids and numbers)")
    ap.add_argument("--logits", type=Path, help="read the claim logits written by --out (nothing is scored)")
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args(argv)
    if args.logits:
        lines = [json.loads(x) for x in args.logits.read_text(encoding="utf-8").splitlines() if x.strip()]
    else:
        lines = score_all(args.verifier)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    unread = sum(1 for x in lines if x.get("logits", x.get("right", 0)) is None)
    print(f"{len(lines)} items ({unread} the verifier could not read, left out of every rule alike)")
    print("\nAUROC by answer rule (softmin temperature; 0: the plain minimum), minus the minimum paired over questions")
    for r in auroc_table(lines, args.resamples):
        d = r["minus_min"]
        diff = "" if d is None else f"  {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]"
        print(f"  {r['set']:16s} n={r['n']:4d}  softmin {r['softmin']:<5g} {r['auroc']:.3f}{diff}")
    print("\nchanged-value pairs: right above the changed answer")
    for r in pairs_table(lines):
        print(f"  {r['kind']:9s} {r['subset']:15s} {r['pairs']:4d}  softmin {r['softmin']:<5g} {r['above']:.3f}")


if __name__ == "__main__":
    main()
