"""The cascade (`vanilla+cascade`, issue 36 item 4) measured offline, without an LLM call, from
scores already committed, and the verify default the stated rule picks (item 5,
`verirag_lab.pick_default.pick_verify_default`).

    VERIRAG_DATA_DIR=../shared/data python benchmarks/cascade.py [--resamples 2000] [--json FILE]

- Dev set (instruct_qa_human's HotpotQA and TopiOCQA rows, other LLMs' answers, human correctness
  labels; evaluation only): the shipped verifier's and nli's committed scores
  (data/verifier/dev_scores/), on the answers both scored. The cascade's score of an answer is
  what `vanilla+cascade` gives it with the shipped band (src/verirag/learned/shipped/cascade.json):
  the verifier's calibrated score outside the band, nli's calibrated score inside. Seconds are a
  cost model (the dev scores carry no timings): each judge's mean verify seconds on the own-answer
  run below, the cascade paying the verifier always and nli on the answers it escalates.
- Own answers (data/verifier/own_answers/held-out-nli-qwen2.5-1.5b: qwen2.5-1.5b's answers to
  held-out NQ and HotpotQA questions, judged by the verifier and nli): this run is what the shipped
  band is fitted on, so the cascade here is cross-fitted (5 folds by question: each answer scored by
  a band and calibrations fitted without its question). Seconds are the records' own verify timings.

- The own-answer sets of 300 (issue 47, item 6: data/verifier/own_answers/own-answers-{verifier,nq-verifier,
  followup-verifier}-qwen2.5-1.5b, HotpotQA, NQ and the same questions asked as follow-ups): the
  verifier's scores in each run's records, nli's over every passage in its `nli-passages.jsonl`
  (benchmarks/nli_evidence.py score own --arm passages), the cascade cross-fitted on the set; a set
  without nli's scores is left out. Where measured they are the rule's own-answer sets, in place of
  the 150 answers above.

- The held-out kind of document (benchmarks/heldout_docs.py: 150 claims about the Debian man pages, a
  kind of document no training example comes from, label-balanced; committed scores in
  data/verifier/heldout_docs/): the cascade's score combines the committed verifier and nli scores with
  the band; seconds are the claims' own verify timings.

`--verifier NAME` measures another trained verifier (and `--band FILE` its cascade band) from its
committed scores: data/verifier/dev_scores/whole/verifier-NAME.jsonl (`verirag verify` of the dev log
with `vanilla+verifier(verifier=DIR)`, exported; read before the answer rules, as nli's are; an older
dev_scores/verifier-NAME.jsonl, made before the rules, where that is missing),
data/verifier/own_answers/<run>/verifier-NAME.jsonl (benchmarks/rescore_own_answers.py) and
data/verifier/heldout_docs/verifier-NAME.jsonl (scripts/measure_verifier.sh writes all three); the shipped
verifier's rows are then added as "shipped verifier" ("minus verifier" of that row: shipped minus NAME).
The shipped verifier itself (NAME `shipped`, the default) is compared the same way with `warm`, the
verifier shipped from 2026-11-26 to 2026-12-01 (data/verifier/candidates/warm), whose scores the
own-answer sets of 300 hold in their records (the 150 answers' records hold v1's, the one before it).

The issue's fourth candidate, a stack of the verifier and nli over the verifier's evidence, reads nli
over the evidence on every answer: its seconds are at least that judge's, whose share of nli's
seconds on the answers both were timed on (benchmarks/nli_evidence.py's committed rows) the rule's
output prints; over CHEAP_SHARE on any set, the stack cannot qualify whatever its AUROC.

AUROC with 95% intervals resampling questions (`group_bootstrap_intervals`), every column on the
same resamples, so the differences are paired.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_docs import read_scores as read_doc_scores
from nli_evidence import FILES as NLI_EVIDENCE_FILES
from nli_evidence import _read as read_timed
from number_rule import before_rules
from verifier_dev import dev_rows, read_scores, read_seconds

from verirag.learned.cascade import CascadeBand, shipped_cascade_path
from verirag.metrics.calibration import auroc
from verirag.metrics.faithfulness import k_precision
from verirag.metrics.qa import token_recall
from verirag.metrics.stats import group_bootstrap_intervals
from verirag_lab.pick_default import CHEAP_SHARE, Measured, pick_verify_default
from verirag_lab.train.cascade import cross_fitted, paired_scores, read_verifier_scores

ROOT = Path(__file__).resolve().parents[1]
DEV_SCORES = ROOT / "data" / "verifier" / "dev_scores"
OWN = ROOT / "data" / "verifier" / "own_answers" / "held-out-nli-qwen2.5-1.5b"
# the own-answer sets of 300 (issue 47, item 6), each with nli over every passage scored apart from the run
OWN_300 = {
    "own300:hotpotqa": ROOT / "data" / "verifier" / "own_answers" / "own-answers-verifier-qwen2.5-1.5b",
    "own300:nq": ROOT / "data" / "verifier" / "own_answers" / "own-answers-nq-verifier-qwen2.5-1.5b",
    # the same questions asked as follow-ups, in their conversation (120 NQ, 224 HotpotQA)
    "own300:followup": ROOT / "data" / "verifier" / "own_answers" / "own-answers-followup-verifier-qwen2.5-1.5b",
}
OWN_300_NLI = "nli-passages.jsonl"
DOCS = ROOT / "data" / "verifier" / "heldout_docs"
# nli's scores of every dev answer as `verirag verify` made them (the history read, the answer rules
# applied; ids, scores, seconds; 2026-11-30): the rule's table reads them before the rules, as it reads
# every other set
DEV_NLI = DEV_SCORES / "whole" / "nli-qwen2.5-1.5b.jsonl"
JUDGES = ("verifier", "cascade", "nli")
EVIDENCE_STACK = "stack of the verifier and nli(premise=evidence)"
OWN_SETS = (("own300:hotpotqa", "own:hotpotqa"), ("own300:nq", "own:nq"), ("own300:followup", None))
SHIPPED = "shipped"
# the verifier shipped until 2026-12-01 (data/verifier/candidates/warm): the own-answer sets of 300
# hold its scores in their records, and the shipped one is measured against it
PREVIOUS = "warm"
# the verifier whose scores the 150 own answers' records hold (data/verifier/candidates/v1)
OWN_RECORDS = "v1"


def dev_verifier_scores(name: str, rows: list[dict]) -> dict:
    """The dev scores of verifier `name` before the answer rules, as nli's are read: from its run over
    every dev answer (`whole/`, made by `verirag verify` since the rules, which are given back) where
    committed, else from its older file (made before the rules; the shipped one's with TopiOCQA's
    history where committed)."""
    whole = DEV_SCORES / "whole" / f"verifier-{name}.jsonl"
    if whole.is_file():
        return before_rules(read_scores(whole), rows)
    scores = read_scores(DEV_SCORES / f"verifier-{name}.jsonl")
    history = DEV_SCORES / f"verifier-{name}-history.jsonl"
    if history.is_file():
        scores.update(read_scores(history))
    return scores


def dev_nli_seconds(ids: list[str]) -> np.ndarray | None:
    """nli's measured seconds on each dev answer of `ids` (DEV_NLI: each answer's share of its batched
    block), or None when it lacks one."""
    timed = read_seconds(DEV_NLI)
    if any(timed.get(i) is None for i in ids):
        return None
    return np.array([float(timed[i]) for i in ids])


def own_pairs(name: str):
    """The own-answer run's pairs with verifier `name`'s scores (the run's own records for v1's)."""
    if name == OWN_RECORDS:
        return paired_scores([OWN])
    return paired_scores([OWN], verifier_scores=read_verifier_scores([OWN / f"verifier-{name}.jsonl"]))


def table(name, y, groups, cols, seconds, escalated, resamples) -> list[dict]:
    """Rows of one evaluation set: AUROC [interval], minus nli and minus verifier (paired), s/answer."""

    def stat(ix):
        out = {k: np.array([auroc(v[r], y[r]) for r in ix]) for k, v in cols.items()}
        for k in cols:
            if k != "nli":
                out[f"{k}-nli"] = out[k] - out["nli"]
            if k not in ("verifier",):
                out[f"{k}-verifier"] = out[k] - out["verifier"]
        return out

    res = group_bootstrap_intervals(stat, groups, n_resamples=resamples, seed=0)
    rows = []
    for k in cols:
        r = res[k]
        s = seconds.get(k)
        row = {
            "set": name,
            "judge": k,
            "n": len(y),
            "auroc": r.estimate,
            "low": r.low,
            "high": r.high,
            "minus_nli": None if k == "nli" else [res[f"{k}-nli"].estimate, res[f"{k}-nli"].low, res[f"{k}-nli"].high],
            "minus_verifier": None
            if k == "verifier"
            else [res[f"{k}-verifier"].estimate, res[f"{k}-verifier"].low, res[f"{k}-verifier"].high],
            "mean_s": None if s is None else float(np.mean(s)),
            "median_s": None if s is None else float(np.median(s)),
            "to_llm": float(np.mean(escalated)) if k == "cascade" else (1.0 if k == "nli" else 0.0),
        }
        if row["mean_s"]:
            row["auroc_per_s"] = row["auroc"] / row["mean_s"]
        rows.append(row)
    return rows


def reference(name: str) -> str:
    """The verifier `name` is compared with: the shipped one, or the one shipped before for the shipped one."""
    return PREVIOUS if name == SHIPPED else SHIPPED


def dev_tables(band: CascadeBand, costs: dict[str, float], resamples: int, name: str = SHIPPED) -> list[dict]:
    rows = dev_rows()
    v = dev_verifier_scores(name, rows)
    shipped = dev_verifier_scores(reference(name), rows)
    n = before_rules(read_scores(DEV_NLI), rows)
    rows = [r for r in rows if all(x.get(r["id"]) is not None for x in (v, n, shipped))]
    V = np.array([v[r["id"]] for r in rows])
    S = np.array([shipped[r["id"]] for r in rows])
    N = np.array([n[r["id"]] for r in rows])
    y = np.array([r["label"] for r in rows])
    esc = band.inside(band.calibrate("verifier", V))
    C = band.combine(V, N)
    kp = np.array([k_precision(r["response"], r["retrieved_contexts"]) for r in rows])
    rec = np.array([token_recall(r["response"], r["reference"]) for r in rows])
    ds = np.array([r["group"].split(":")[0] for r in rows])
    groups = np.array([r["group"] for r in rows])
    measured = dev_nli_seconds([r["id"] for r in rows])
    nli_s = measured if measured is not None else np.full(len(rows), costs["nli"])
    costs["nli_measured"] = measured is not None
    out = []
    for subset, m in [
        ("dev:hotpot_qa", ds == "hotpot_qa"),
        ("dev:topiocqa", ds == "topiocqa"),
        ("dev:pooled", ds == ds),
    ]:
        sec = {
            "verifier": np.full(m.sum(), costs["verifier"]),
            "nli": nli_s[m],
            "cascade": costs["verifier"] + esc[m] * nli_s[m],
        }
        cols = {"verifier": V[m], "cascade": C[m], "nli": N[m], "k_precision": kp[m], "recall (sees gold)": rec[m]}
        cols[f"{reference(name)} verifier"], sec[f"{reference(name)} verifier"] = S[m], sec["verifier"]
        out += table(subset, y[m], list(groups[m]), cols, sec, esc[m], resamples)
    return out


def own_tables(resamples: int, name: str = SHIPPED) -> list[dict]:
    p = own_pairs(name)
    shipped = own_pairs(reference(name))
    C, esc = cross_fitted(p, budget=0.2)
    ds = np.array(p.datasets)
    out = []
    for subset, m in [("own:hotpotqa", ds == "hotpotqa"), ("own:nq", ds == "nq"), ("own:pooled", ds == ds)]:
        # the same answers in the same order (both sorted by generation)
        out += own_rows(subset, p.subset(m), shipped.subset(m), C[m], esc[m], resamples, name)
    return out


def own_rows(subset: str, p, ref, C: np.ndarray, esc: np.ndarray, resamples: int, name: str) -> list[dict]:
    """One own-answer set's rows: the verifier, the cross-fitted cascade (`C`, `esc`), nli, and the
    reference verifier's scores of the same answers (`ref`)."""
    sec = {
        "verifier": p.verifier_seconds,
        "nli": p.judge_seconds,
        "cascade": p.verifier_seconds + esc * p.judge_seconds,
        f"{reference(name)} verifier": ref.verifier_seconds,
    }
    cols = {"verifier": p.verifier, "cascade": C, "nli": p.judge, f"{reference(name)} verifier": ref.verifier}
    return table(subset, p.labels, p.groups, cols, sec, esc, resamples)


def own300_pairs(run: Path, name: str):
    """A set of 300's answers paired with nli's scores over every passage, the verifier's column verifier
    `name`'s (the run's own records for the one that made them, else its rescored file there); None when
    the set lacks nli's scores or that verifier's."""
    from verirag_lab.train.cascade import paired_with_judge_file

    rescored = run / f"verifier-{name}.jsonl"
    if not (run / OWN_300_NLI).is_file() or (name != PREVIOUS and not rescored.is_file()):
        return None
    other = None if name == PREVIOUS else read_verifier_scores([rescored])
    return paired_with_judge_file(run, run / OWN_300_NLI, verifier_scores=other)


def own300_tables(resamples: int, name: str = SHIPPED) -> list[dict]:
    """The sets of 300: the verifier, the cascade cross-fitted on the set itself, nli over every passage
    (seconds: the set's rescoring, which reads each prompt whole), and the reference verifier."""
    out = []
    for subset, run in OWN_300.items():
        p, ref = own300_pairs(run, name), own300_pairs(run, reference(name))
        if p is None or ref is None:
            print(f"{subset}: not measured ({run.name} lacks {OWN_300_NLI} or verifier {name}'s scores)")
            continue
        C, esc = cross_fitted(p, budget=0.2)
        out += own_rows(subset, p, ref, C, esc, resamples, name)
    return out


def docs_tables(band: CascadeBand, resamples: int, name: str = SHIPPED) -> list[dict]:
    """The held-out kind of document: the committed scores of the verifier and nli on its claims."""
    v = read_doc_scores(DOCS / f"verifier-{name}.jsonl")
    n = read_doc_scores(DOCS / "nli-qwen2.5-1.5b.jsonl")
    shipped = read_doc_scores(DOCS / f"verifier-{reference(name)}.jsonl")
    ids = [k for k in n if all(x.get(k) is not None and x[k].score is not None for x in (v, n, shipped))]
    V, N = np.array([v[k].score for k in ids]), np.array([n[k].score for k in ids])
    y = np.array([n[k].label for k in ids])
    esc = band.inside(band.calibrate("verifier", V))
    sec = {
        "verifier": np.array([v[k].seconds or 0.0 for k in ids]),
        "nli": np.array([n[k].seconds or 0.0 for k in ids]),
    }
    sec["cascade"] = sec["verifier"] + esc * sec["nli"]
    cols = {"verifier": V, "cascade": band.combine(V, N), "nli": N}
    cols[f"{reference(name)} verifier"] = np.array([shipped[k].score for k in ids])
    sec[f"{reference(name)} verifier"] = np.array([shipped[k].seconds or 0.0 for k in ids])
    groups = [k.rsplit("#", 1)[0] for k in ids]  # the man page
    return table("docs:manpages", y, groups, cols, sec, esc, resamples)


def evidence_judge_shares(files: dict[str, dict[str, Path]] | None = None) -> dict[str, tuple[float, int]]:
    """Per set, nli over the evidence's seconds as a share of nli's over the passages, summed over the
    answers both timed (`files`: nli_evidence.FILES, set -> {arm: rows}), and how many those are."""
    out = {}
    for name, arms in (files or NLI_EVIDENCE_FILES).items():
        evidence, passages = read_timed(arms["evidence"]), read_timed(arms["passages"])
        both = [k for k in evidence if k in passages and evidence[k].get("seconds") and passages[k].get("seconds")]
        if both:
            share = sum(float(evidence[k]["seconds"]) for k in both) / sum(float(passages[k]["seconds"]) for k in both)
            out[name] = (share, len(both))
    return out


def evidence_stack_reason(shares: dict[str, tuple[float, int]]) -> str:
    """Why the stack of the verifier and nli over the evidence does or does not pass the rule's cost test."""
    timed = ", ".join(f"{share:.2f} on {name} ({n} answers)" for name, (share, n) in sorted(shares.items()))
    dear = sorted(name for name, (share, _) in shares.items() if share > CHEAP_SHARE)
    if dear:
        return (
            f"cannot qualify whatever its AUROC: it reads nli over the evidence on every answer, whose seconds "
            f"are this share of nli's: {timed}; over {CHEAP_SHARE:.0%} on {', '.join(dear)}"
        )
    return f"within {CHEAP_SHARE:.0%} of nli's seconds where timed ({timed}): measure its AUROC"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--verifier", default=SHIPPED, help="the verifier whose committed scores are read (NAME)")
    ap.add_argument("--band", type=Path, default=None, help="its cascade band (default: the shipped band)")
    a = ap.parse_args(argv)
    band = CascadeBand.load(a.band or shipped_cascade_path())
    p = own_pairs(a.verifier)
    costs = {"verifier": float(p.verifier_seconds.mean()), "nli": float(p.judge_seconds.mean())}
    rows = (
        dev_tables(band, costs, a.resamples, a.verifier)
        + own_tables(a.resamples, a.verifier)
        + own300_tables(a.resamples, a.verifier)
        + docs_tables(band, a.resamples, a.verifier)
    )
    timed = costs.get("nli_measured", False)  # dev_tables says whether it found every dev answer timed
    print(
        f"band [{band.band_[0]:.3f}, {band.band_[1]:.3f}] (budget {band.budget:.0%}); dev seconds: verifier "
        f"{costs['verifier']:.3f} s an answer (modelled), nli "
        + (
            f"measured per answer ({DEV_NLI.parent.name}/{DEV_NLI.name})"
            if timed
            else f"{costs['nli']:.2f} s an answer (modelled)"
        )
    )

    def ci(x):
        return "" if x is None else f"{x[0]:+.3f} [{x[1]:+.3f}, {x[2]:+.3f}]"

    print(
        "| set | judge | n | AUROC [95%] | minus nli | minus verifier | mean s | median s | to LLM | AUROC/s |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    for r in rows:
        s = "" if r["mean_s"] is None else f"{r['mean_s']:.3f} | {r['median_s']:.3f}"
        print(
            f"| {r['set']} | {r['judge']} | {r['n']} | {r['auroc']:.3f} [{r['low']:.3f}, {r['high']:.3f}] | "
            f"{ci(r['minus_nli'])} | {ci(r['minus_verifier'])} | {s or ' | '} | {r['to_llm']:.1%} | "
            f"{r.get('auroc_per_s', float('nan')):.3g} |"
        )
    # the own-answer sets of the rule: the sets of 300 (issue 47, item 6), the 150 held-out answers
    # where a set of 300 is not measured
    own = [s300 if any(r["set"] == s300 for r in rows) else s150 for s300, s150 in OWN_SETS]
    own = [s for s in own if s is not None]  # the conversational set has no smaller stand-in
    sets = ("dev:hotpot_qa", "dev:topiocqa", *own, "docs:manpages")
    measured = [
        Measured(r["judge"], r["set"], r["auroc"], r["mean_s"], None if r["minus_nli"] is None else r["minus_nli"][1])
        for r in rows
        if r["set"] in sets and r["judge"] in ("vanilla+verifier", *JUDGES)
    ]
    measured = [
        Measured(
            {"verifier": "vanilla+verifier", "cascade": "vanilla+cascade", "nli": "vanilla+nli"}[m.method],
            m.dataset,
            m.auroc,
            m.seconds,
            m.minus_reference_low,
        )
        for m in measured
    ]
    best, why = pick_verify_default(measured)
    why[EVIDENCE_STACK] = evidence_stack_reason(evidence_judge_shares())
    print(f"\nthe rule picks {best} on {', '.join(sets)} (verifier: {a.verifier})")
    for k, w in why.items():
        print(f"  {k}: {w}")
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "default": best, "why": why}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
