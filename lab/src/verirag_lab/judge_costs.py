"""What each LLM judge costs after an answer, as a share of the answer's own generation time, read
from the distillation's records (issue 47's goal weighs a judge of the default model's answers by
its seconds after the answer, where the pipeline's prefix reuse applies; rescoring a committed
answer reads the whole prompt again, so its seconds are not that cost).

Each `distill` record times its parts in `meta.seconds`: `generate`, `llm_judge` (asked first, right
after the answer), `judge` (nli over the verifier's evidence) and, on a seeded sample,
`judge_full` (nli over every passage). The cost of a judge is the median over the records that
timed it of its seconds over that answer's generation seconds: one figure per judge, from the same
machine and run for every judge.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import median
from typing import Any

# {judge's column name in the benchmarks: its key in a distill record's `meta.seconds`}
TIMED_JUDGES = {"llm_judge": "llm_judge", "nli_evidence": "judge", "nli": "judge_full"}


def judge_costs(records: Iterable[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """{judge: (median seconds after an answer / that answer's generation seconds, answers timed)}
    over the records that timed both; a judge no record timed is absent."""
    shares: dict[str, list[float]] = {name: [] for name in TIMED_JUDGES}
    for record in records:
        seconds = (record.get("meta") or {}).get("seconds") or {}
        generate = seconds.get("generate")
        if not generate or generate <= 0:
            continue
        for name, key in TIMED_JUDGES.items():
            if seconds.get(key) is not None:
                shares[name].append(seconds[key] / generate)
    return {name: (median(v), len(v)) for name, v in shares.items() if v}


def paired_judge_costs(records: Iterable[dict[str, Any]], judges: Iterable[str]) -> dict[str, tuple[float, int]]:
    """As `judge_costs`, over only the records that timed every one of `judges` (so their shares are
    compared on the same answers)."""
    keys = [TIMED_JUDGES[j] for j in judges]
    both = [r for r in records if all(((r.get("meta") or {}).get("seconds") or {}).get(k) is not None for k in keys)]
    return {j: c for j, c in judge_costs(both).items() if j in set(judges)}
