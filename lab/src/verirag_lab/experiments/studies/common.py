"""What both paper studies share: their result file and the one-question-per-group sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verirag.jsonio import write_json

STUDY_FILE = "study.json"


def write_study(out_dir: Path, result: dict[str, Any]) -> None:
    """DIR/study.json as strict JSON (undefined AUROCs as null), replaced in one step (a killed
    write leaves the old file)."""
    write_json(Path(out_dir) / STUDY_FILE, result)


def one_per_group(examples: list) -> list:
    """The first question of each group, in order (HotpotQA's twins ask the same question of the
    same pooled corpus)."""
    seen, out = set(), []
    for ex in examples:
        g = ex.group or ex.id
        if g not in seen:
            seen.add(g)
            out.append(ex)
    return out
