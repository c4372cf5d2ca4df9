"""One result record per (dataset, model, method, example), appended to DIR/results.jsonl.

The records are the experiment's single source of truth and its resume cache (a rerun skips every
key already present); summaries, tables, figures and the HTML report are rebuilt from them alone.

Fields:
- key: "dataset|model|method|example_id|digest", unique within a run; `digest` (`method_digest`) is
  the built method's identity (`Component.digest`: its options with their defaults, the text of its
  prompts, its models' fingerprints), the same digest its trace keys and threshold files name. A
  run resumed after any of those changed recomputes the record (and says how many); the latest
  record of a (dataset, model, method, example) is the one every summary reads.
- method: the method's label (its name unless the config gives a label); `method_spec` its name,
  label and the options the config gave it (defaults of the dataset and the generation settings
  included), and `resolved_options`: every option of the built method and its parts, the
  constructors' defaults included (what a threshold file records and `ask` compares).
- answer, score (in [0, 1]; for hard-label methods 0 or 1), hard. `score` is the score after the
  answer rules (`verirag.awf.core.AnswerRules`: a declined answer scores 0): the one `ask` acts on
  and `calibrate` fits a threshold on. `raw_score` is the method's own score before those rules:
  the one a learned part that reads a predictor's score sees at answer time (the cascade routes on
  it, the stack combines it), so those parts are fitted on it. The two differ only where a rule
  applied (`details["answer_rules"]`). Records written before `raw_score` existed get it from
  `details["raw_score"]` where a rule applied, else from `score`.
- answerable (A): the passages support a reference answer (relevance labels when the dataset has
  them, otherwise a normalised reference substring in some passage).
- correct: the answer matches a reference under the configured judge (abstentions never do).
- faithful (V): correct and answerable, the AwF paper's definition.
- abstained: the answer is an abstention (e.g. Intrinsic's __DONT_KNOW__).
- error: why part of the method failed (unparseable output, backend failure), else None. Such
  records stay in every denominator with score 0 (MethodOutput's convention).
- details: what the method reports beyond its score. A GENERATOR+PREDICTOR method also names the
  answer it judged and what is known of it, the same in every record over that answer:
  `generation` (the generation's trace key: records sharing it judged one answer), `model_fingerprint`,
  `predictor_digest` (the predictor's identity), and `signals` = {"values": {...}, "missing":
  {signal: why}}: the answer's token logprob min / mean / sum, K-Precision and retrieval top / mean
  (`verirag.awf.signals`; what `verirag train stack` combines).
- kind_digests: the identity of each built-in stage kind the run turned on (`verirag.awf.stage_kinds`;
  its stage's `digest`: its settings, its model's weights and the rule it keeps passages by), by
  name, part of the key ("...|digest|NAME:DIGEST"); empty when none is on (the key is then as
  before, and the record does not write it). stages_digest: likewise for the stages a user wrote
  (`verirag.awf.user_stages`; "...|stages:DIGEST" in the key, `details["stages"]` their reports).
  A stage kind's report of the example's passages the method read, shared by the example's
  methods, is in `details` under the kind's name, with `reference_kept` where it cut the passages'
  text: a reference answer still appears in the passages kept (None without references).
  `answerable` stays that of the example's passages before any stage.
- seconds: wall time of this method on this example, marginal to methods that ran before it in
  the same trace (a shared generation is paid by the first method that needs it).
- calls, prompt_tokens, completion_tokens: the full cost of the method on this example: every
  quantity it used, whether computed for it or found in the example's trace (computed for an
  earlier method), and whether or not the request cache answered. They do not depend on the order
  of methods or on the cache; `details["shared"]` is the part found in the trace, and
  `details["cache_hits"]` the calls the request cache answered.
- spent: what running this method added to this run (the quantities it computed itself):
  calls, cache_hits, prompt_tokens, completion_tokens, and the tokens of the calls the cache
  answered (cached_prompt_tokens, cached_completion_tokens), so the tokens the backend really
  read are prompt_tokens - cached_prompt_tokens.

Records written before 2026-11-27 named a stage kind's digest in a field of its own
(`<name>_digest`): they are read into `kind_digests`, so their keys are as before. Records written before 2026-11-24 have a `method_digest` of their explicit options only (before
2026-11-23 none): a resumed run recomputes them. Those before 2026-11-23 count calls and tokens only
for what the method computed itself (0 for a generation shared with an earlier method) and have
no `spent`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULTS_FILE = "results.jsonl"


def record_key(
    dataset: str,
    model: str,
    method: str,
    example_id: str,
    method_digest: str = "",
    kind_digests: dict[str, str] | None = None,
    stages_digest: str = "",
) -> str:
    key = f"{dataset}|{model}|{method}|{example_id}"
    key = f"{key}|{method_digest}" if method_digest else key
    key = f"{key}|stages:{stages_digest}" if stages_digest else key
    return key + "".join(f"|{name}:{digest}" for name, digest in (kind_digests or {}).items() if digest)


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
    method_digest: str = ""
    method_spec: dict[str, Any] = field(default_factory=dict)
    spent: dict[str, Any] = field(default_factory=dict)
    kind_digests: dict[str, str] = field(default_factory=dict)  # module doc; written only when some are on
    raw_score: float | None = None  # before the answer rules (module doc); None: derived from the record
    stages_digest: str = ""  # the stages a user wrote (module doc); written only when there are some

    def __post_init__(self):
        if self.raw_score is None:
            d = self.details or {}
            ruled = d.get("answer_rules") and d.get("raw_score") is not None
            self.raw_score = float(d["raw_score"]) if ruled else self.score

    @property
    def key(self) -> str:
        return record_key(
            self.dataset,
            self.model,
            self.method,
            self.example_id,
            self.method_digest,
            self.kind_digests,
            self.stages_digest,
        )

    @property
    def slot(self) -> str:
        """(dataset, model, method, example): what a record answers, whatever its method's identity."""
        return record_key(self.dataset, self.model, self.method, self.example_id)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key"] = self.key
        for name in ("stages_digest", "kind_digests"):  # records of runs without such stages stay as they were
            if not d[name]:
                del d[name]
        for name in ("score", "raw_score"):
            if isinstance(d[name], float) and not math.isfinite(d[name]):
                d[name] = None  # JSON has no NaN; MethodOutput never produces one anyway
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ResultRecord:
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        if "kind_digests" not in d:  # written before 2026-11-27: a stage kind's digest had a field of its own
            kw["kind_digests"] = {
                k.removesuffix("_digest"): v
                for k, v in d.items()
                if k.endswith("_digest") and k not in cls.__dataclass_fields__ and v
            }
        if kw.get("score") is None:
            kw["score"] = 0.0
        return cls(**kw)


class ResultStore:
    """Append-only JSONL of ResultRecords; each line is flushed and fsynced as it completes.

    A run killed mid-line leaves a truncated last line: `load` ignores it (and reports how many
    lines it skipped in `skipped_lines`), and the next append starts on a fresh line. Of several
    records of one slot (a method recomputed after its identity changed), the last one is loaded.
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
        with open(self.path, "rb") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:  # a line cut by a kill, or not a record at all (bytes, JSON of another shape)
                    rec = ResultRecord.from_dict(json.loads(raw.decode("utf-8")))
                except (ValueError, TypeError, KeyError, AttributeError):
                    self.skipped_lines += 1
                    continue
                out[rec.slot] = rec  # a later record of the same slot wins
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
