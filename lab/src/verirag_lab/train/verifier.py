"""What `verirag train verifier` runs: read labelled examples, fit the trained verifier
(`verirag.learned.verifier`), record what it was fitted on.

The examples come from a reader, a function LABELS -> VerifierExamples, so the labelling run's
resolver (compact records read back against the benchmark files in $VERIRAG_DATA_DIR) plugs in
beside the plain format read here, a JSONL of resolved examples, one object per line:

    {"question": "...", "answer": "...", "passages": ["...", ...], "label": 1,
     "recipe": "real", "group": "nq:123", "sentence_labels": [1, 0] or null, "source": "...",
     "history": ["User: ...", "Agent: ..."], "judge": 0.8 or null, "target": 0.8 or null}

`label` is 1 (the passages support the whole answer) or 0; `group` names the question (its
dataset and id: validation holds out whole groups); `sentence_labels`, where known, has one
label per answer sentence as `verirag.retrieval.sentences.split_sentences` splits it; `source`
(optional) names the record it came from (default: file:line). Blank lines are skipped; any
other line that is not such an object is an InputError naming the line. `history` (optional) holds
the earlier turns of a conversation, which the verifier reads before the question. `judge`
(optional) is an LLM judge's P(supported) of the answer (`--distill-target` reads it), `target`
(optional) a soft training target in [0, 1] that replaces the label in the loss.

Whatever the files and options, every example passes `verirag_lab.train.guard.TrainingGuard.for_verifier`
(instruct_qa_human questions, licence texts, the held-out split: held-out and own-answer questions,
man pages, the final test's Info manuals, a held-out question's evidence or answers): compact records
by what they name before they are resolved, every example by its group and text; what it refuses
is counted in the provenance (`refused_as_evaluation_data`), never trained or validated on. A
verifier started from another (`init_from`) is refused unless that one's whole line was trained
under the guard (`guard.start_refusal`); what it trains records so (`guard.LINEAGE_KEY`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.verifier import TrainedVerifier
from verirag_lab.datasets import data_dir
from verirag_lab.train.cross_fit import FOLDS, hold_out_fold
from verirag_lab.train.cross_fit import PROVENANCE_KEY as CROSS_FIT_KEY
from verirag_lab.train.distill_targets import check_mode, distill_targets
from verirag_lab.train.guard import LINEAGE_KEY, TrainingGuard, refused_line, start_refusal
from verirag_lab.train.value_swaps import KINDS as VALUE_SWAP_KINDS
from verirag_lab.train.value_swaps import value_swap_negatives
from verirag_lab.train.verifier_examples import SUPPORTED, UNSUPPORTED, VerifierExample
from verirag_lab.train.verifier_labels import read_records, resolve

ExampleReader = Callable[[Path], Iterable[VerifierExample]]


def example_from_json(d: Any, where: str) -> VerifierExample:
    """One resolved example from its JSON object; InputError naming `where` if malformed."""
    if not isinstance(d, dict):
        raise InputError(f"{where}: not a JSON object")
    for key, kind in (("question", str), ("answer", str), ("group", str)):
        if not isinstance(d.get(key), kind) or not d[key].strip():
            raise InputError(f"{where}: `{key}` must be a non-empty string")
    passages = d.get("passages")
    if not isinstance(passages, list) or not passages or not all(isinstance(p, str) for p in passages):
        raise InputError(f"{where}: `passages` must be a non-empty list of strings")
    label = d.get("label")
    if isinstance(label, bool) or label not in (SUPPORTED, UNSUPPORTED):
        raise InputError(f"{where}: `label` must be {SUPPORTED} (supported) or {UNSUPPORTED}, got {label!r}")
    sentence_labels = d.get("sentence_labels")
    if sentence_labels is not None and (
        not isinstance(sentence_labels, list)
        or not sentence_labels
        or any(isinstance(v, bool) or v not in (SUPPORTED, UNSUPPORTED) for v in sentence_labels)
    ):
        raise InputError(f"{where}: `sentence_labels` must be null or a non-empty list of 0 / 1")
    history = d.get("history") or []
    if not isinstance(history, list) or not all(isinstance(t, str) for t in history):
        raise InputError(f"{where}: `history` must be a list of strings (the earlier turns)")
    soft = {}
    for key in ("judge", "target"):
        value = d.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1
        ):
            raise InputError(f"{where}: `{key}` must be null or a number in [0, 1], got {value!r}")
        soft[key] = None if value is None else float(value)
    return VerifierExample(
        question=d["question"],
        answer=d["answer"],
        passages=tuple(passages),
        label=int(label),
        recipe=str(d.get("recipe") or "unknown"),
        group=d["group"],
        sentence_labels=tuple(sentence_labels) if sentence_labels is not None else None,
        source=str(d.get("source") or where),
        history=tuple(history),
        **soft,
    )


def read_examples_jsonl(path: Path) -> Iterator[VerifierExample]:
    """The resolved examples of a JSONL file (the format in the module docstring)."""
    path = Path(path)
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115
    except OSError as e:
        raise InputError(f"cannot read the labels {path}: {e}") from None
    with fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except ValueError as e:
                raise InputError(f"{path}:{n}: not JSON ({e})") from None
            yield example_from_json(d, f"{path}:{n}")


def sample(examples: list[VerifierExample], n: int | None, seed: int) -> list[VerifierExample]:
    """At most `n` examples, drawn with `seed`, in their original order (all when n is None)."""
    if n is None or n >= len(examples):
        return examples
    if n < 1:
        raise InputError(f"--max-examples must be at least 1, got {n}")
    keep = np.sort(np.random.default_rng(seed).choice(len(examples), size=n, replace=False))
    return [examples[i] for i in keep]


def summary(examples: list[VerifierExample]) -> dict[str, Any]:
    """Counts a user checks before training: examples, groups, label balance, recipes."""
    recipes: dict[str, dict[str, int]] = {}
    for e in examples:
        r = recipes.setdefault(e.recipe, {"examples": 0, "supported": 0})
        r["examples"] += 1
        r["supported"] += e.label
    n = len(examples)
    return {
        "examples": n,
        "groups": len({e.group for e in examples}),
        "supported_share": sum(e.label for e in examples) / n if n else float("nan"),
        "with_sentence_labels": sum(e.sentence_labels is not None for e in examples),
        "recipes": recipes,
    }


def read_labels(path: Path, guard: TrainingGuard | None = None) -> Iterator[VerifierExample]:
    """Either file `verirag train verifier` takes: the compact records of `verirag label verifier`
    (resolved by id against the benchmark files in $VERIRAG_DATA_DIR; they carry a question hash "qh",
    or are skip lines; with `guard`, those it refuses by what they name are left unresolved and counted)
    or resolved examples."""
    try:
        with open(path, encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
    except OSError as e:
        raise InputError(f"cannot read the labels {path}: {e}") from None
    try:
        head = json.loads(first)
        compact = "qh" in head or "skip" in head  # a labels file may start with a skip line
    except (ValueError, TypeError):
        compact = False
    if compact:
        records = read_records(path)
        yield from resolve(guard.keep_by(records, guard.record_refusal) if guard is not None else records)
    else:
        yield from read_examples_jsonl(path)


def read_examples(
    paths: Sequence[str | Path],
    max_examples: int | None = None,
    seed: int = 0,
    read: ExampleReader = read_labels,
    exclude_groups: Collection[str] | None = None,
    guard: TrainingGuard | None = None,
    held_out: dict[str, int] | None = None,
) -> list[VerifierExample]:
    """The examples of the labels files, in order, without those `guard` refuses (counted in its
    `refused`) and those of `exclude_groups`, at most `max_examples` of them (a seeded sample): what
    `train_verifier` fits on, so its data fingerprint can be checked again later. `held_out`: a dict
    with "fold" (and "folds") holds that fold of the distillation's groups out before sampling
    (`verirag_lab.train.cross_fit`); it is filled with what was held out."""
    drop = set(exclude_groups or ())
    examples = [e for p in paths for e in read(Path(p))]
    if guard is not None:
        examples = guard.keep_by(examples, guard.example_refusal)
    examples = [e for e in examples if e.group not in drop]
    if held_out is not None:
        examples, record = hold_out_fold(examples, int(held_out["fold"]), int(held_out.get("folds", FOLDS)))
        held_out.update(record)
    return sample(examples, max_examples, seed)


def read_groups(path: str | Path) -> set[str]:
    """The question groups of a groups file: one DATASET:ID per line (blank lines and # comments skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise InputError(f"cannot read the groups file {path}: {e}") from None
    groups = {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}
    if not groups:
        raise InputError(f"the groups file {path} names no question group")
    return groups


def train_verifier(
    labels: str | Path | Sequence[str | Path],
    *,
    read: ExampleReader = read_labels,
    verifier: TrainedVerifier | None = None,
    max_examples: int | None = None,
    exclude_groups: Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_epoch: Callable[[dict[str, Any]], None] | None = None,
    provenance: dict[str, Any] | None = None,
    data_root: str | Path | None = None,
    doc_root: str | Path | None = None,
    value_swaps: float = 0.0,
    value_swap_kinds: Sequence[str] = VALUE_SWAP_KINDS,
    distill_target: str = "gold",
    distill_fold: int | None = None,
    distill_folds: int = FOLDS,
    checkpoint: str | Path | None = None,
) -> TrainedVerifier:
    """Fit `verifier` (default settings when None) on the examples `read` yields from each labels
    file (one path or several: e.g. the LLM-free recipes' file beside each model's), at most
    `max_examples` of them (a seeded sample), without any example of `exclude_groups` (questions kept
    for an evaluation: dropped before sampling, so they neither train nor validate), nor any the
    guard of `data_root` ($VERIRAG_DATA_DIR) and `doc_root` (the installed documentation) refuses
    (module doc; there is no option to turn it off). `value_swaps`: the share of supported examples
    that also give a changed-value negative (`verirag_lab.train.value_swaps`; 0: none), of one of
    `value_swap_kinds` each. `distill_target`: what the distilled answers teach (`verirag_lab.train.distill_targets`).
    `distill_fold`: hold that fold of the distillation's question groups out (of `distill_folds`), to
    cross-fit the stack (`verirag_lab.train.cross_fit`). The provenance saved with it records the
    labels, their summary, what the guard refused, the fold held out and the command. `checkpoint`:
    the folder a killed fit resumes from (`TrainedVerifier.fit`)."""
    check_mode(distill_target)  # before minutes of reading
    v = verifier or TrainedVerifier()
    if v.contrast and not value_swaps:
        raise InputError("contrast ranks each answer above its changed copy: give value_swaps (--value-swaps) too")
    if v.init_from is not None and (why := start_refusal(v.init_from)) is not None:
        raise InputError(f"refusing to start from {v.init_from}: {why}")
    paths = [Path(labels)] if isinstance(labels, (str, Path)) else [Path(p) for p in labels]
    if not paths:
        raise InputError("no labels file given")
    guard = TrainingGuard.for_verifier(data_dir(data_root), doc_root)
    if read is read_labels:
        read = partial(read_labels, guard=guard)
    held_out = None if distill_fold is None else {"fold": distill_fold, "folds": distill_folds}
    examples = read_examples(paths, max_examples, v.seed, read, exclude_groups, guard, held_out)
    examples, distilled = distill_targets(examples, distill_target)
    if value_swaps:
        examples += value_swap_negatives(examples, value_swaps, v.seed, value_swap_kinds)
    guard.check_by(examples, guard.example_refusal, lambda e: e.question)  # the last check before fitting
    if not examples:
        raise InputError(f"{', '.join(map(str, paths))} hold no examples the guard allows ({refused_line(guard)})")
    v.provenance = {
        **(provenance or {}),
        "labels": [str(p) for p in paths] if len(paths) > 1 else str(paths[0]),
        "label_summary": summary(examples),
        **({"value_swaps": value_swaps} if value_swaps else {}),
        **(
            {"value_swap_kinds": list(value_swap_kinds)}
            if value_swaps and tuple(value_swap_kinds) != VALUE_SWAP_KINDS
            else {}
        ),
        **({"distill_target": distilled} if distilled["distilled"] else {}),
        **({CROSS_FIT_KEY: held_out} if held_out is not None else {}),
        "refused_as_evaluation_data": dict(sorted(guard.refused.items())),
        LINEAGE_KEY: True,  # the guard above, and the start's line (checked before reading)
        "guard_notes": list(guard.heldout.notes) if guard.heldout is not None else [],
    }
    return v.fit(examples, progress=progress, on_epoch=on_epoch, checkpoint=checkpoint)
