"""The summary of a verified log (OUT/summary.json): how many answers are supported, how the scores
spread, what failed, and - where the log says which answers are right - how well the score and the
verdict agree with that.

- answers = verified + unverified + failed (a malformed line is no answer), and answers = supported
  + unsupported + unverified + failed; share_supported = supported / answers, share_unverified =
  unverified / answers. An unverified answer (the judge cannot judge it: `verirag.awf.unverified`)
  is never supported; `unverified_reasons` counts its reasons. A failed or unverified answer counts
  as unsupported, with score 0, in the labelled metrics (as `ask` and `eval` count it).
- scores: quantiles and a 10-bin histogram on [0, 1] of the verified answers' scores (an unverified
  answer's score is not trusted: it is left out).
- labels: a human label field (`--label-field`) when the log has one; otherwise, when it has
  reference answers, the AwF paper's faithfulness label V computed by verirag's ground truth
  (`verirag.evaluation.ground_truth`, rule recall_or_substring: every token of a reference is in the
  answer, or a reference is in it as a normalised substring; and some context contains a
  reference; an abstention is never right). On the labelled answers: AUROC of the score, PR-AUC
  (step-wise average precision; `verirag.metrics.awf.pr_auc` with answerable = label), and the
  precision and recall of the verdict (precision: of the answers called supported, the share
  labelled supported; recall: of those labelled supported, the share called supported), each with
  a percentile bootstrap interval (`verirag.metrics.stats.bootstrap_intervals`: one set of
  resamples, by answer, for all four).
- verifier: method, judge and threshold of the verdicts, and `model` only when an LLM judged (a
  record names one); warnings: what a user must hear about the threshold (not certified: every
  answer is judged not supported; fitted for another method or model); keys: the results.jsonl
  keys of the records summarised, in log order (what `verirag calibrate OUT` fits on).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verirag.answer_log.formats import AnswerLog, LogEntry
from verirag.answer_log.report import write_report
from verirag.evaluation.ground_truth import GroundTruth
from verirag.jsonio import write_json
from verirag.metrics.awf import awf_counts, pr_auc_statistic
from verirag.metrics.calibration import auroc
from verirag.metrics.stats import bootstrap_intervals
from verirag.types import UNVERIFIED, Example

REFERENCE_RULE = "recall_or_substring"
REFERENCE_LABEL = (
    "faithful (the AwF paper's V): the answer matches a reference (token recall 1 or normalised "
    "substring, verirag.evaluation.ground_truth rule recall_or_substring; abstentions never do) and "
    "a context contains a reference"
)
QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9, "max": 1.0}
HISTOGRAM_EDGES = np.linspace(0.0, 1.0, 11)
SUMMARY_FILE = "summary.json"


def entry_labels(log: AnswerLog, entries: Sequence[LogEntry]) -> tuple[dict[str, Any] | None, list[int | None]]:
    """(where the labels come from, one label per entry: 1 supported, 0 not, None unlabelled)."""
    if log.fields.label:
        return (
            {"source": "label", "field": log.fields.label, "meaning": f"the log's field {log.fields.label!r}"},
            [e.label for e in entries],
        )
    if not any(e.ok and e.references for e in entries):
        return None, [None] * len(entries)
    truth = GroundTruth(REFERENCE_RULE)
    labels = [
        truth.label(
            Example(id=e.id, question=e.question, passages=e.passages, references=e.references), e.answer
        ).faithful
        if e.ok and e.references
        else None
        for e in entries
    ]
    return (
        {
            "source": "reference",
            "field": " | ".join(log.fields.references),
            "rule": REFERENCE_RULE,
            "meaning": REFERENCE_LABEL,
        },
        labels,
    )


def score_distribution(scores: Sequence[float]) -> dict[str, Any]:
    s = np.asarray(scores, dtype=np.float64)
    counts = np.histogram(np.clip(s, 0.0, 1.0), bins=HISTOGRAM_EDGES)[0] if s.size else np.zeros(10, int)
    return {
        "n": int(s.size),
        "mean": float(s.mean()) if s.size else None,
        "quantiles": {k: float(np.quantile(s, q)) for k, q in QUANTILES.items()} if s.size else {},
        "histogram": {"edges": HISTOGRAM_EDGES.round(2).tolist(), "counts": counts.tolist()},
    }


def labelled_metrics(
    scores, verdicts, labels, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """AUROC and PR-AUC of `scores`, precision and recall of `verdicts`, against `labels` (1 =
    supported), each {estimate, low, high, ...} (NaN -> null where undefined, e.g. one class)."""
    s = np.asarray(scores, dtype=np.float64)
    v = np.asarray(verdicts, dtype=bool)
    y = np.asarray(labels, dtype=bool)

    def statistic(ix: np.ndarray) -> dict[str, np.ndarray]:
        counts = awf_counts(v, y, y, indices=ix)
        return {
            "auroc": auroc(s[ix], y[ix]),
            "pr_auc": pr_auc_statistic(s, y, y, indices=ix),
            "precision": counts.precision(np.nan),
            "recall": counts.recall(np.nan),
        }

    results = bootstrap_intervals(statistic, len(s), n_resamples=n_resamples, confidence=confidence, seed=seed)
    out: dict[str, Any] = {name: r.to_dict() for name, r in results.items()}
    out.update(
        n=len(s),
        positives=int(y.sum()),
        confidence=confidence,
        n_resamples=n_resamples,
        chance_pr_auc=float(y.mean()) if len(y) else None,
    )
    return out


def summarize(
    log: AnswerLog,
    records: Sequence[dict[str, Any]],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """The summary of `records` (one per entry of `log`, in log order, as `run_log` returns them);
    `warnings`: the verifier's threshold warnings (`Pipeline.threshold_warnings`)."""
    entries = log.entries[: len(records)]
    answered = [r for r in records if r["status"] != "malformed"]
    verified = [r for r in records if r["status"] == "verified"]
    unverified = [r for r in records if r["status"] == UNVERIFIED]
    supported = sum(bool(r["supported"]) for r in answered)
    reasons = Counter((r.get("unverified") or {}).get("reason", "?") for r in unverified)
    first = (verified or unverified or [{}])[0]
    verifier = {k: first.get(k) for k in ("method", "judge", "threshold")}
    models = sorted({r["model"] for r in answered if r.get("model")})
    if models:  # only where an LLM judged: the trained verifier calls none
        verifier["model"] = models[0] if len(models) == 1 else models
    summary: dict[str, Any] = {
        "log": str(log.path),
        "fields": log.fields.to_dict(),
        "verifier": verifier,
        "warnings": list(dict.fromkeys(warnings)),
        "lines": len(records),
        "answers": len(answered),
        "verified": len(verified),
        "unverified": len(unverified),
        "failed": len(answered) - len(verified) - len(unverified),
        "malformed": len(records) - len(answered),
        "supported": supported,
        "unsupported": len(verified) - supported,
        "share_supported": supported / len(answered) if answered else None,
        "share_unverified": len(unverified) / len(answered) if answered else None,
        "unverified_reasons": dict(sorted(reasons.items())),
        "scores": score_distribution([r["score"] for r in verified]),
        "failures": [
            {"line": r["line"], "id": r["id"], "error": r.get("error")} for r in records if r["status"] == "failed"
        ],
        "unverified_answers": [{"line": r["line"], "id": r["id"], **(r.get("unverified") or {})} for r in unverified],
        "malformed_lines": [
            {"line": r["line"], "id": r["id"], "reason": r.get("error")} for r in records if r["status"] == "malformed"
        ],
        "labels": None,
        "keys": [r["key"] for r in records],
    }
    source, labels = entry_labels(log, entries)
    rows = [(r, y) for r, y in zip(records, labels) if y is not None and r["status"] != "malformed"]
    if source is not None:
        summary["labels"] = {
            **source,
            "labelled": len(rows),
            "note": "a failed or unverified answer counts as score 0, unsupported",
        }
        if rows:
            summary["labels"].update(
                labelled_metrics(
                    [r["score"] if r["status"] == "verified" else 0.0 for r, _ in rows],
                    [bool(r["supported"]) for r, _ in rows],
                    [y for _, y in rows],
                    confidence=confidence,
                    n_resamples=n_resamples,
                    seed=seed,
                )
            )
    return summary


def write_summary(
    log: AnswerLog, records: Sequence[dict[str, Any]], out_dir: str | Path, **options: Any
) -> tuple[dict[str, Any], Path]:
    """(summary, report path): OUT/summary.json and OUT/report.html of a run's records."""
    summary = summarize(log, records, **options)
    write_json(Path(out_dir) / SUMMARY_FILE, summary)
    _, labels = entry_labels(log, log.entries[: len(records)])
    return summary, write_report(out_dir, summary, records, labels)


def _defined(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _ci(m: dict[str, Any]) -> str:
    if not _defined(m.get("estimate")):
        return "undefined"
    low, high = m.get("low"), m.get("high")
    return f"{m['estimate']:.3f}" + (f" [{low:.3f}, {high:.3f}]" if _defined(low) and _defined(high) else "")


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as a few plain lines for a terminal."""
    s = summary
    cut = s["verifier"].get("threshold")
    share = s["share_supported"]
    reasons = ", ".join(f"{k} {n}" for k, n in s["unverified_reasons"].items())
    lines = [f"warning: {w}" for w in s.get("warnings") or []]
    lines.append(
        f"{s['lines']} lines: {s['answers']} answers ({s['verified']} verified, {s['unverified']} unverified"
        + (f": {reasons}" if reasons else "")
        + f", {s['failed']} failed to verify) and {s['malformed']} malformed; {s['supported']} supported"
        + (f" ({share:.1%})" if share is not None else "")
        + (f" at threshold {cut:.2f}" if cut is not None else " (no threshold certified)" if s["verified"] else "")
        + f", {s['unsupported']} unsupported."
    )
    q = s["scores"]["quantiles"]
    if q:
        lines.append(
            f"scores: median {q['median']:.3f}, p10 {q['p10']:.3f}, p90 {q['p90']:.3f}, "
            f"mean {s['scores']['mean']:.3f} (n {s['scores']['n']})"
        )
    lab = s["labels"]
    if lab:
        if lab.get("auroc"):
            c = lab["confidence"]
            lines.append(
                f"against {lab['labelled']} labels ({lab['positives']} supported; {lab['meaning']}), "
                f"{c:.0%} intervals: AUROC {_ci(lab['auroc'])}, PR-AUC {_ci(lab['pr_auc'])} "
                f"(chance {lab['chance_pr_auc']:.3f}); verdict precision {_ci(lab['precision'])}, "
                f"recall {_ci(lab['recall'])}"
            )
        else:
            lines.append(f"labels ({lab['meaning']}): none on a verified answer")
    for f in s["malformed_lines"][:10]:
        lines.append(f"malformed line {f['line']} ({f['id']}): {f['reason']}")
    for f in s["failures"][:10]:
        lines.append(f"failed {f['id']} (line {f['line']}): {f['error']}")
    for u in s["unverified_answers"][:10]:
        lines.append(f"unverified {u['id']} (line {u['line']}): {u.get('message')}")
    hidden = sum(max(len(s[k]) - 10, 0) for k in ("malformed_lines", "failures", "unverified_answers"))
    if hidden:
        lines.append(f"… {hidden} more listed in summary.json and the report")
    return lines
