"""Rewrite `hotpotqa_support` passage keys made before 2026-12-01 into today's (`passage_key`: a hash
of the paragraph's title and text).

The old key, "<question id>:<n>", counted the paragraphs read before it, in the folder's file order,
so a copy of the snapshot with one more file (ECM's `dev.json` beside `train.jsonl` and `test.json`)
gave other keys, and records made on two machines did not resolve on either. Each old key is looked
up under every subset of the folder's files; a record takes the subset under which all its keys
exist, and where several do but disagree, the one under which the question's supporting paragraphs
are among its passages when its `meta` says they were (`evidence`), else the subset of the record
before it (a run writes its records in order, from one folder). A key found nowhere is an error.

    VERIRAG_DATA_DIR=../shared/data VERIRAG_HOTPOTQA_SUPPORT=DIR python scripts/migrate_support_keys.py \\
        FILE [FILE ...] [--check]

FILE: labels (JSONL, or .jsonl.gz written back gzipped) or a run's `results.jsonl`; in each record of
the source, every string shaped as an old key (record passages, text specs, a run's passage ids) is
rewritten in place (with `--run`, every record of a run over the source's questions, whose dataset
is the JSONL benchmark's). `--check` only reports.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag_lab.datasets._io import read_records
from verirag_lab.datasets.hotpotqa import hotpotqa_files
from verirag_lab.train.verifier_labels import hotpotqa_support as hs

OLD_KEY = re.compile(r"^[0-9a-f]{12}:\d+$")


def old_keys(files: list[Path]) -> dict[str, str]:
    """{old key: today's key} as the loader before 2026-12-01 numbered the paragraphs of `files`."""
    seen: dict[tuple[str, str], str] = {}
    out = {}
    for f in files:
        for _, row in read_records(f):
            qid = hs.question_id(str(row.get("question", "")))
            for title, sentences in hs.paragraphs(list(row.get("evidence") or [])):
                body = " ".join(sentences)
                if (title, body) not in seen:
                    seen[(title, body)] = f"{qid}:{len(seen)}"
                    out[seen[(title, body)]] = hs.passage_key(title, body)
    return out


def variants(folder: Path) -> dict[str, dict[str, str]]:
    """Every non-empty subset of the folder's files (by name) -> its old-key map."""
    files = hotpotqa_files(folder)
    return {
        "+".join(f.name for f in subset): old_keys(list(subset))
        for n in range(len(files), 0, -1)
        for subset in itertools.combinations(files, n)
    }


def found_keys(value: Any) -> set[str]:
    """Every string in `value` (nested lists and dicts) shaped as an old key."""
    if isinstance(value, str):
        return {value} if OLD_KEY.match(value) else set()
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return {key for item in items for key in found_keys(item)}


def rewritten(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {k: rewritten(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [rewritten(v, mapping) for v in value]
    return value


def choose(record: dict, keys: set[str], maps: dict[str, dict[str, str]], source, previous: str | None) -> str:
    """The variant whose files the record was made from (module doc)."""
    fits = [name for name, m in maps.items() if keys <= m.keys()]
    if not fits:
        raise InputError(
            f"record {record.get('id')!r}: keys {sorted(keys - set().union(*maps.values()))[:3]} found in no subset of the folder"
        )
    if len({tuple(maps[n][k] for k in sorted(keys)) for n in fits}) == 1:
        return fits[0]
    q = source.questions.get(str(record.get("example"))) if record.get("dataset") == hs.NAME else None
    evidence = (record.get("meta") or {}).get("evidence")
    if q is not None and evidence is not None and record.get("passages"):
        agree = [n for n in fits if (set(q.gold) <= {maps[n].get(k) for k in record["passages"]}) == bool(evidence)]
        if len(agree) == 1:
            return agree[0]
        fits = agree or fits
    if previous in fits:
        return previous
    raise InputError(f"record {record.get('id')!r}: its keys fit {', '.join(fits)} alike")


def migrate(path: Path, maps: dict[str, dict[str, str]], source, check: bool, every: bool = False) -> dict[str, int]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        lines = [line for line in fh.read().splitlines() if line.strip()]
    out, counts, previous = [], {"records": 0, "rewritten": 0}, None
    for line in lines:
        record = json.loads(line)
        counts["records"] += 1
        keys = found_keys(record) if every or record.get("dataset") == hs.NAME else set()
        if not keys:
            out.append(line)
            continue
        previous = choose(record, keys, maps, source, previous)
        counts[previous] = counts.get(previous, 0) + 1
        counts["rewritten"] += 1
        out.append(json.dumps(rewritten(record, maps[previous]), ensure_ascii=False))
    if not check and counts["rewritten"]:
        if path.suffix == ".gz":  # as the committed labels are made: gzip -9n
            with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as fh:
                fh.write(("\n".join(out) + "\n").encode("utf-8"))
        else:
            path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return counts


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="report only, write nothing")
    ap.add_argument(
        "--run",
        action="store_true",
        help="the FILEs are runs over this source's questions (benchmarks/own_answers_support.py): every "
        "record is read, whatever its dataset's name",
    )
    ap.add_argument("--data", type=Path, default=None, help="the benchmark data folder ($VERIRAG_DATA_DIR)")
    args = ap.parse_args(argv)
    data = args.data or Path(os.environ.get("VERIRAG_DATA_DIR", ""))
    folder = hs.support_folder(data)
    maps = variants(folder)
    source = hs.load_hotpotqa_support(data)
    for path in args.files:
        print(f"{path}: {migrate(path, maps, source, args.check, args.run)}", file=sys.stderr)


if __name__ == "__main__":
    main()
