"""One result record per (dataset, model, method, example), appended to DIR/results.jsonl.

The records are the experiment's single source of truth and its resume cache (a rerun skips every
key already present); summaries, tables, figures and the HTML report are rebuilt from them alone.

Fields:
- key: "dataset|model|method|example_id", unique within a run.
- answer, score (in [0, 1]; for hard-label methods 0 or 1), hard.
- answerable (A): the passages support a reference answer (relevance labels when the dataset has
  them, otherwise a normalised reference substring in some passage).
- correct: the answer matches a reference under the configured judge (abstentions never do).
- faithful (V): correct and answerable, the AwF paper's definition.
- abstained: the answer is an abstention (e.g. Intrinsic's __DONT_KNOW__).
- error: why part of the method failed (unparseable output, backend failure), else None. Such
  records stay in every denominator with score 0 (MethodOutput's convention).
- seconds: wall time of this method on this example, marginal to methods that ran before it in
  the same trace (a shared generation is paid by the first method that needs it).
- calls, prompt_tokens, completion_tokens: backend usage (cache hits count 0 tokens).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

RESULTS_FILE = "results.jsonl"


def record_key(dataset: str, model: str, method: str, example_id: str) -> str:
    return f"{dataset}|{model}|{method}|{example_id}"


@dataclass
class ResultRecord:
    dataset: str
    model: str
    method: str
    example_id: str
    question: str
    answer: str
    score: float
    hard: bool
    answerable: int
    correct: int
    faithful: int
    abstained: int = 0
    error: str | None = None
    group: str = ""
    references: list[str] = field(default_factory=list)
    seconds: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return record_key(self.dataset, self.model, self.method, self.example_id)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key"] = self.key
        if isinstance(d["score"], float) and not math.isfinite(d["score"]):
            d["score"] = None  # JSON has no NaN; MethodOutput never produces one anyway
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ResultRecord":
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        if kw.get("score") is None:
            kw["score"] = 0.0
        return cls(**kw)


class ResultStore:
    """Append-only JSONL of ResultRecords; each line is flushed and fsynced as it completes.

    A run killed mid-line leaves a truncated last line: `load` ignores it (and reports how many
    lines it skipped in `skipped_lines`), and the next append starts on a fresh line.
    """

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.path = self.dir / RESULTS_FILE
        self.skipped_lines = 0

    def load(self) -> list[ResultRecord]:
        out: dict[str, ResultRecord] = {}
        self.skipped_lines = 0
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    rec = ResultRecord.from_dict(json.loads(line))
                except (json.JSONDecodeError, TypeError, KeyError):
                    self.skipped_lines += 1
                    continue
                out[rec.key] = rec  # a later record of the same key wins
        return list(out.values())

    def keys(self) -> set[str]:
        return {r.key for r in self.load()}

    def append(self, record: ResultRecord) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record.to_dict(), ensure_ascii=False)
        with open(self.path, "a+b") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # the previous run died mid-line
                    f.write(b"\n")
            f.write(line.encode("utf-8") + b"\n")
            f.flush()
            os.fsync(f.fileno())

    def __iter__(self) -> Iterator[ResultRecord]:
        return iter(self.load())
