"""Paired method comparisons: method B minus method A on the same examples.

The per-method intervals of the summary overlap even when one method is better on nearly every
resample; the question a reader asks ("does post-answering NLI beat pre-answering?", "does
InstructRAG beat Vanilla?", AwF paper section 6) is answered by the difference itself. For each
(dataset, model) and each pair of methods that both ran there, over the examples both have records
for: best F1, PR-AUC and accuracy of B minus those of A, each method scored on its own labels (its
own answer's faithfulness), with a percentile bootstrap interval from ONE set of resamples applied
to both methods (run.json "bootstrap"), so the interval is of the paired difference. Resampling
draws question groups, not examples: a HotpotQA question's two twins go in and out together, as
they are not independent. An interval that excludes 0 tells the methods apart at that confidence;
one that contains it does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from verirag.metrics.stats import group_bootstrap_intervals
from verirag.records import ResultRecord
from verirag_lab.experiments.grid.summary import group_records, is_hard, ranking_statistics, record_arrays

__all__ = ["DEFAULT_PAIRS", "compare_methods", "parse_pair"]

# the AwF paper's questions, asked of whichever of these methods a run has:
# post- vs pre-answering verification, InstructRAG vs Vanilla, in-context self-check vs NLI
DEFAULT_PAIRS: tuple[tuple[str, str], ...] = (
    ("vanilla+pre_answering", "vanilla+nli"),
    ("instructrag+pre_answering", "instructrag+nli"),
    ("vanilla", "instructrag"),
    ("vanilla+nli", "instructrag+nli"),
    ("vanilla+nli", "vanilla+self_check"),
    ("vanilla+llm_judge", "vanilla+nli"),
)
METRICS = ("best_f1", "pr_auc", "accuracy")


def parse_pair(text: str) -> tuple[str, str]:
    """ "A:B" -> (A, B): B is compared against A."""
    a, sep, b = text.partition(":")
    if not sep or not a.strip() or not b.strip():
        raise ValueError(f"a comparison is BASELINE:METHOD, got {text!r}")
    return a.strip(), b.strip()


def compare_methods(
    records: Iterable[ResultRecord], pairs: Sequence[tuple[str, str]], boot: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """One row per (dataset, model, pair) where both methods ran (module docstring). Pairs absent
    from a (dataset, model) are skipped; a pair with no example in common gets n = 0 and no values."""
    cells = group_records(records)
    units = sorted({(ds, m) for ds, m, _ in cells})
    out: list[dict[str, Any]] = []
    for ds, model in units:
        for base, method in pairs:
            ra, rb = cells.get((ds, model, base)), cells.get((ds, model, method))
            if not ra or not rb:
                continue
            by_b = {r.example_id: r for r in rb}
            both = [r.example_id for r in ra if r.example_id in by_b]
            row: dict[str, Any] = {
                "dataset": ds,
                "model": model,
                "baseline": base,
                "method": method,
                "n": len(both),
                "only_one": len(ra) + len(rb) - 2 * len(both),
            }
            out.append(row)
            if not both:
                continue
            by_a = {r.example_id: r for r in ra}
            arrays_a = record_arrays([by_a[e] for e in both])
            fa = ranking_statistics(arrays_a, is_hard(ra))
            fb = ranking_statistics(record_arrays([by_b[e] for e in both]), is_hard(rb))

            def statistic(ix: np.ndarray) -> dict[str, np.ndarray]:
                res = {}
                for m in METRICS:
                    va, vb = np.asarray(fa[m](ix), dtype=np.float64), np.asarray(fb[m](ix), dtype=np.float64)  # noqa: B023
                    res[f"{m}_baseline"], res[f"{m}_method"], res[m] = va, vb, vb - va
                return res

            # the summary's groups (no group: the example's own), so the same draws as its intervals
            res = group_bootstrap_intervals(statistic, list(arrays_a["group"]), **boot)
            for m in METRICS:
                row[f"{m}_baseline"], row[f"{m}_method"] = res[f"{m}_baseline"].estimate, res[f"{m}_method"].estimate
                d = res[m]
                row[f"{m}_diff"], row[f"{m}_diff_low"], row[f"{m}_diff_high"] = d.estimate, d.low, d.high
                row[f"{m}_diff_invalid"] = d.n_invalid
    return out
