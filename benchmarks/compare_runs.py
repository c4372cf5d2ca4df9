"""Compare two eval runs record by record: which fields differ, and where.

    python benchmarks/compare_runs.py runs/eq-old runs/eq-new

Records are matched by (dataset, method, example id). Wall-clock fields (`seconds`,
`details.timings`) are left out: they differ from run to run. Prints the number of records, then
each field that differs with how many records and the first few keys; a score that changed is
printed with its answer and the answer rules that changed it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

WALL_CLOCK = {"seconds"}


def load(run: Path) -> dict[tuple[str, str, str], dict]:
    with open(run / "results.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {(r["dataset"], r["method"], r["example_id"]): r for r in rows}


def differences(old: dict, new: dict) -> dict[str, list]:
    found: dict[str, list] = {}
    for key in sorted(old.keys() & new.keys()):
        a, b = old[key], new[key]
        for f in sorted(a.keys() | b.keys()):
            if f in WALL_CLOCK:
                continue
            if f == "details":
                for g in sorted(a[f].keys() | b[f].keys()):
                    if g != "timings" and a[f].get(g) != b[f].get(g):
                        found.setdefault(f"details.{g}", []).append(key)
            elif a.get(f) != b.get(f):
                found.setdefault(f, []).append(key)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    args = ap.parse_args()
    old, new = load(args.old), load(args.new)
    print(f"records: {len(old)} old, {len(new)} new, {len(old.keys() & new.keys())} in both")
    found = differences(old, new)
    if not found:
        print("every field identical (wall-clock fields left out)")
    for field, keys in found.items():
        print(f"{field}: {len(keys)} records differ, e.g. {keys[:3]}")
    for key in found.get("score", []):
        rules = new[key]["details"].get("answer_rules")
        print(f"  {key}: {old[key]['score']} -> {new[key]['score']} {new[key]['answer'][:60]!r} {rules}")


if __name__ == "__main__":
    main()
