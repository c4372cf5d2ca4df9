"""A replay sample for a warm start: a seeded sample of the labelled records of earlier labels files,
trained beside new labels so that fine-tuning on them keeps what the shipped verifier learned
(`make verifier-distill`, issue 47's distillation).

Only records that carry a label are drawn. A labels file also holds skip lines (an item that gave no
example, `verifier_labels.records`), and a sample of lines drew them too: `make verifier-distill`'s
first replay of 4,000 lines held 2,280 skips, so its candidates learned from a replay of 1,720
examples where 4,000 were meant. A record drawn twice (from a file listed twice) is read back as one
example (a labels file keeps one line per id): `make verifier-distill`'s 4,000 hold 3,811 distinct.

    python -m verirag_lab.train.replay --n 4000 --seed 0 LABELS... --out REPLAY.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag_lab.train.verifier_labels.records import is_example, read_records


def labelled_records(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The records of the labels files that carry a label, in file order (skip lines left out)."""
    return [r for p in paths for r in read_records(p) if is_example(r)]


def replay_sample(paths: Sequence[str | Path], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """`n` labelled records of `paths`, a seeded sample: the same files and seed give the same sample."""
    if n < 1:
        raise InputError(f"a replay sample needs n >= 1, got {n}")
    records = labelled_records(paths)
    if len(records) < n:
        raise InputError(f"a replay of {n} records asked for, but the labels files hold {len(records)} labelled ones")
    return random.Random(seed).sample(records, n)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labels", nargs="+", help="labels files (JSON lines) to draw from")
    parser.add_argument("--n", type=int, required=True, help="how many labelled records to draw")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="the replay file to write (JSON lines)")
    args = parser.parse_args(argv)
    try:
        sample = replay_sample(args.labels, args.n, args.seed)
    except InputError as e:
        parser.error(str(e))
    Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sample), encoding="utf-8")
    print(f"replay: {len(sample)} labelled records -> {args.out}")


if __name__ == "__main__":
    main()
