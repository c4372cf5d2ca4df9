"""The context pruner as a post-retrieval stage kind (issue 37; the model is `verirag.learned.pruner`):
its one setting, read the same way at every door, the stage, and its kind (what the doors offer;
the answer spec's options model is `verirag.awf.answer_spec.PruneOptions`).

    parse_prune(True)                                # on, at the pruner's own fitted threshold_
    parse_prune(0.3)                                 # on, keeping sentences scoring at least 0.3
    parse_prune(False)                               # off: every sentence is read
    parse_prune({"threshold": 0.3, "pruner": DIR})   # on, with a pruner `verirag train pruner` saved
    parse_prune(None)                                # PRUNE_DEFAULT

Python (`PipelineConfig.prune`, `Pipeline.ask(prune=...)`, `AnswerSpec(prune=...)`), the CLI
(`--prune`, `--prune-threshold X`, `--no-prune`, declared by KIND), HTTP (`/v1/ask`'s `prune: true |
false | number`) and the experiment grid's YAML (`prune:`) all read it with `parse_prune`. The
threshold is a parameter of each pruning call, not of the pruner: every setting over one pruner
folder shares one loaded pruner (`verirag.learned.pruner_store`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from verirag.awf.stage_kinds import CliOption, StageKind, register
from verirag.awf.stages import Say, StageResult
from verirag.errors import InputError
from verirag.types import ScoredPassage

ACCEPTED = "true, false, a threshold in [0, 1] or a mapping {threshold: T, pruner: DIR}"


class PruneValueError(InputError):
    """A prune value that is none of the accepted ones: `place` is the key it is at ("threshold",
    "pruner"; "" for the value itself) and `problem` what is wrong, so the YAML config can place it."""

    def __init__(self, what: str, place: str, problem: str):
        self.place, self.problem = place, problem
        super().__init__(f"{what}{'.' + place if place else ''}: {problem}")


def _shown(v: Any) -> str:
    return json.dumps(v) if v is None or isinstance(v, bool) else repr(v)


@dataclass(frozen=True)
class PruneSetting:
    """`on`: whether the retrieved passages are pruned; `threshold`: the score a sentence needs to be
    kept (None: the pruner's fitted `threshold_`, the shipped conservative one); `pruner`: a saved
    pruner's folder (None: the shipped pruner). Off carries neither."""

    on: bool = False
    threshold: float | None = None
    pruner: str | None = None

    def __post_init__(self):
        if not isinstance(self.on, bool):
            raise PruneValueError("prune", "on", f"must be true or false, got {_shown(self.on)}")
        if self.threshold is not None:
            object.__setattr__(self, "threshold", _threshold(self.threshold, "prune", "threshold"))
        if self.pruner is not None and (not isinstance(self.pruner, str) or not self.pruner.strip()):
            raise PruneValueError("prune", "pruner", f"must name a folder, got {_shown(self.pruner)}")
        if not self.on and (self.threshold is not None or self.pruner is not None):
            raise PruneValueError("prune", "", "a threshold or a pruner was given with pruning off")

    def to_json(self) -> dict[str, Any] | None:
        """What a record or run.json says: None when off, else {threshold, pruner}."""
        return {"threshold": self.threshold, "pruner": self.pruner} if self.on else None

    def __str__(self) -> str:
        if not self.on:
            return "off"
        at = "the pruner's own threshold" if self.threshold is None else f"threshold {self.threshold:g}"
        return f"on at {at}" + (f" ({self.pruner})" if self.pruner else "")


OFF = PruneSetting()
SHIPPED = PruneSetting(on=True)  # the pruner at its own fitted threshold

# Whether pruning is on when nobody says: the one place to flip. On at the shipped pruner's own
# (conservative) threshold since issue 48's rule held: 1,200+ held-out questions pooled, both arms on
# one build, pruned minus unpruned accuracy's lower bound above -2 points and no dataset below -1
# (data/bench_prune/issue48-all-layers-retrieved-docs). Python, the CLI and HTTP read it through
# parse_prune(None); the experiment grid keeps its own default (off: a config says what it measures).
PRUNE_DEFAULT: PruneSetting = SHIPPED


def _threshold(value: Any, what: str, place: str = "") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PruneValueError(what, place, f"must be a number in [0, 1], got {_shown(value)}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise PruneValueError(what, place, f"must be a number in [0, 1], got {value}")
    return float(value)


def parse_prune(value: Any, *, what: str = "prune") -> PruneSetting:
    """The one reading of a prune value (module doc); anything else is a PruneValueError (an
    InputError) naming `what`. Text ("yes", "0.3") is refused, not guessed at."""
    if value is None:
        return PRUNE_DEFAULT
    if isinstance(value, PruneSetting):
        return value
    if isinstance(value, bool):
        return SHIPPED if value else OFF
    if isinstance(value, (int, float)):
        return PruneSetting(on=True, threshold=_threshold(value, what))
    if isinstance(value, dict):
        for key in value:
            if key not in ("threshold", "pruner"):
                raise PruneValueError(what, str(key), "unknown key (expected one of: pruner, threshold)")
        threshold, pruner = value.get("threshold"), value.get("pruner")
        if pruner is not None and (not isinstance(pruner, str) or not pruner.strip()):
            raise PruneValueError(what, "pruner", f"must name a folder, got {_shown(pruner)}")
        return PruneSetting(
            on=True, threshold=None if threshold is None else _threshold(threshold, what, "threshold"), pruner=pruner
        )
    raise PruneValueError(what, "", f"must be {ACCEPTED}, got {_shown(value)}")


def cli_prune(prune: bool, threshold: float | None, no_prune: bool) -> PruneSetting | None:
    """The setting of `--prune` / `--prune-threshold X` / `--no-prune` (None: none given, the
    preset's or the service's own setting stands). `--prune` alone is on at the pruner's own threshold."""
    if no_prune and (prune or threshold is not None):
        raise InputError("give --prune / --prune-threshold X or --no-prune, not both")
    if no_prune:
        return OFF
    if threshold is not None:
        return parse_prune(threshold, what="--prune-threshold")
    return SHIPPED if prune else None


class PruneStage:
    """The context pruner (issue 37; `verirag.learned.pruner`): each passage keeps only the
    sentences whose score passes `threshold` (None: the pruner's fitted one), in their order; a
    passage with none kept is not read at all, unless the question or another passage's kept text
    names its title: then its best sentence is kept (`hop` in the report; a multi-hop question's
    second passage). When nothing passes anywhere, the best sentence of the best passage is kept
    (`fallback` in the report), so the reader never gets an empty context.
    `count_tokens` (the reader's tokenizer) measures the prompt tokens read and saved. The hits it
    was given stay whole beside the pruned ones (`StageResult.whole`): a corrective second
    answer (the escalate fallback) reads those, since the pruner may have dropped what it needed.

    Inputs at the edges (tests/test_prune_setting.py): a blank passage has no sentence and is not
    read; when every passage is blank the stage raises InputError (never an empty prompt). A
    passage of any length is read to its end, in windows. A text in another script is split where
    `verirag.retrieval.sentences` finds sentence ends (".", "!", "?", line breaks); one without
    them (e.g. Chinese or Japanese without line breaks) is a single sentence, kept or dropped whole."""

    name = "prune"
    RULE = "threshold+hop"  # what decides the kept sentences beside the scores (ContextPruner.prune with titles)

    def __init__(self, pruner, threshold: float | None = None, count_tokens: Callable[[str], int] | None = None):
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise InputError(f"the pruning threshold must be in [0, 1], got {threshold}")
        self.pruner, self.threshold = pruner, threshold
        self.count_tokens = count_tokens or (lambda text: len(text.split()))

    @property
    def digest(self) -> str:
        """The identity of this pruning: the threshold it uses (None: the pruner's fitted one,
        resolved), what decides the pruner's scores (its settings, fingerprints, adapter weights,
        temperature) and the rule that keeps sentences by them (`RULE`): a grid record's key names
        it, so records pruned otherwise are not reused."""
        parts = {
            "threshold": self.pruner.threshold_ if self.threshold is None else float(self.threshold),
            "settings": self.pruner.settings(),
            "fingerprints": self.pruner.fingerprints,
            "adapter": getattr(self.pruner, "adapter_sha256_", None),
            "temperature": self.pruner.temperature_,
            "rule": self.RULE,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def run(self, question: str, hits: list[ScoredPassage], say: Say) -> StageResult:
        say(f"pruning {len(hits)} passages")
        threshold = self.pruner.threshold_ if self.threshold is None else self.threshold
        texts, titles = [h.passage.text for h in hits], [h.passage.title for h in hits]
        if not any(t.strip() for t in texts):
            raise InputError(f"all {len(hits)} passages are blank: there is no sentence to prune or to read")
        pruned, fallback = self.pruner.prune(question, texts, threshold, titles=titles)
        kept, passages = [], []
        for h, p in zip(hits, pruned):
            full, read = self.count_tokens(h.passage.text), self.count_tokens(p.text) if p.kept else 0
            passages.append(
                {
                    "id": h.passage.id,
                    "title": h.passage.title,
                    "sentences": p.sentences,
                    "kept": p.kept,
                    "hop": p.hop,
                    "scores": [round(s, 4) for s in p.scores],
                    "tokens_read": read,
                    "tokens_saved": full - read,
                }
            )
            if p.kept:
                kept.append(replace(h, passage=replace(h.passage, text=p.text)))
        info = {
            "threshold": threshold,
            "fallback": fallback,
            "passages": passages,
            "tokens_read": sum(p["tokens_read"] for p in passages),
            "tokens_saved": sum(p["tokens_saved"] for p in passages),
        }
        return StageResult(kept, info, whole=list(hits))


# ---- what the doors offer (`verirag.awf.stage_kinds`) ---------------------------------------------
def _request_field() -> Any:
    """The HTTP request's `prune`: a strict true/false (JSON's 0 is no flag) or a threshold in [0, 1],
    each bad value with the message every door gives ("must be a number in [0, 1], got 1.5")."""
    from typing import Annotated

    from pydantic import BeforeValidator, Field
    from pydantic_core import PydanticCustomError

    def threshold(v: Any) -> Any:
        if isinstance(v, bool) or v is None:
            return v
        try:
            return _threshold(v, "prune")
        except PruneValueError as e:
            raise PydanticCustomError("verirag", e.problem) from None

    unit = Annotated[float, BeforeValidator(threshold), Field(json_schema_extra={"minimum": 0, "maximum": 1})]
    return Annotated[bool, Field(strict=True)] | unit | None


def _summary(report: dict[str, Any]) -> tuple[str, str]:
    kept = sum(len(p["kept"]) for p in report["passages"])
    total = sum(len(p["sentences"]) for p in report["passages"])
    text = (
        f"kept {kept} of {total} sentences at {report['threshold']:.2f}: "
        f"{report['tokens_read']} prompt tokens read, {report['tokens_saved']} saved"
        + (" (none passed: the best sentence was kept)" if report["fallback"] else "")
        + "".join(
            f"; {p['title']}: its best sentence kept, named by the question or the kept text"
            for p in report["passages"]
            if p.get("hop")
        )
    )
    return "pruned", text


KIND = register(
    StageKind(
        name="prune",
        cli=(
            CliOption(
                "prune",
                "--prune",
                bool,
                "Prune the retrieved passages before the model reads them, at the shipped pruner's own "
                "(conservative) threshold: only the sentences that matter to the question are read"
                + (" (the default)." if PRUNE_DEFAULT.on else "."),
            ),
            CliOption(
                "prune_threshold",
                "--prune-threshold",
                float,
                "Prune at this threshold instead (0-1; higher keeps fewer sentences); implies --prune.",
                metavar="X",
            ),
            CliOption(
                "no_prune",
                "--no-prune",
                bool,
                "Read every retrieved sentence: no context pruning" + ("." if PRUNE_DEFAULT.on else " (the default)."),
            ),
        ),
        from_cli=lambda prune=False, prune_threshold=None, no_prune=False: cli_prune(prune, prune_threshold, no_prune),
        http=_request_field,
        http_help="context pruning before the model reads the passages: true (on at the pruner's own "
        "fitted threshold), a threshold in [0, 1] (higher keeps fewer sentences), or false (every sentence "
        "is read); absent: the service's setting (`verirag serve --prune | --prune-threshold X | --no-prune`). "
        "Every value prunes with the one pruner the service loaded",
        summary=_summary,
    )
)
