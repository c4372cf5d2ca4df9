"""Train CalibRAG's forecaster f(q, d) from labelled pairs (`verirag_lab.train.forecaster_labels`):
the pairs with a label, validation on held-out questions, what it was fitted for in the saved
forecaster's fingerprints and provenance."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.learned.forecaster import Forecaster, ForecasterBase, pair_text
from verirag_lab.train.forecaster_labels import MODES, LabelRecord, LabelSet
from verirag_lab.train.guard import TrainingGuard, refused_line


def training_records(records: Sequence[LabelRecord], guard: TrainingGuard | None = None) -> list[LabelRecord]:
    """The records a forecaster may learn from: those with a label (failed ones have none), without
    any the training guard refuses (an instruct_qa_human question, a licence text), counted in
    `guard.refused`."""
    guard = guard if guard is not None else TrainingGuard.for_training()
    return guard.keep([r for r in records if r.label is not None], lambda r: r.question, lambda r: [r.doc_text])


def pairs(
    records: Sequence[LabelRecord], guard: TrainingGuard | None = None
) -> tuple[list[str], list[str], list[int], list[str]]:
    """(queries, documents, labels, groups) of the `training_records`."""
    rs = training_records(records, guard)
    return (
        [r.question for r in rs],
        [pair_text(r.doc_title, r.doc_text) for r in rs],
        [int(r.label) for r in rs],
        [r.group for r in rs],
    )


def train_forecaster(
    records: Sequence[LabelRecord],
    *,
    forecaster: ForecasterBase | None = None,
    fingerprints: dict[str, Any] | None = None,
    provenance: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ForecasterBase:
    """Fit `forecaster` (default settings when None) on the records' labelled pairs. One class
    only, or fewer than two questions, is an InputError that says what to do."""
    guard = TrainingGuard.for_training()
    q, d, y, g = pairs(records, guard)
    if not y:
        raise InputError(
            f"no labelled pair to train on (failed pairs: see the label file's errors; {refused_line(guard)})"
        )
    if len(set(y)) < 2:
        raise InputError(
            f"every labelled pair has label {y[0]}: a forecaster needs both correct and incorrect "
            "decisions (label more questions, raise k, or use the other labelling mode)"
        )
    f = forecaster or Forecaster()
    f.fingerprints.update({k: v for k, v in (fingerprints or {}).items() if v})
    f.provenance = {**(provenance or {}), "refused_as_evaluation_data": dict(sorted(guard.refused.items()))}
    return f.fit(q, d, y, g, progress=progress)


KINDS = ("cross_encoder", "probe")


@dataclass
class ForecasterRun:
    """What `train_forecaster_from_data` did: the labelled pairs, where they are, the forecaster (saved)."""

    labels: LabelSet
    label_file: Path
    forecaster: ForecasterBase


def _load_models(model: str, user_model: str | None, judge_model: str | None, *, mode: str, match: str, n_ctx: int):
    """(the RAG model, the surrogate user (mode "decision" with a user model, else None), the judge
    (match "llm", else None))."""
    from verirag.llm.factory import load_llm

    llm = load_llm(model, n_ctx=n_ctx)
    user_llm = load_llm(user_model, n_ctx=n_ctx) if user_model and mode == "decision" else None
    judge_llm = load_llm(judge_model or model, n_ctx=n_ctx) if match == "llm" else None
    return llm, user_llm, judge_llm


def _new_forecaster(
    kind: str, llm: Any, encoder: str, *, val_share: float, temperature: bool, seed: int, **train
) -> ForecasterBase:
    """An untrained forecaster of `kind`: a probe over `llm`'s hidden states, or a cross-encoder
    over `encoder` (`train`: its epochs, batch size and learning rate)."""
    from verirag.learned.forecaster import ProbeForecaster

    if kind == "probe":
        return ProbeForecaster(llm, val_share=val_share, temperature=temperature, seed=seed)
    return Forecaster(encoder, val_share=val_share, temperature=temperature, seed=seed, **train)


def train_forecaster_from_data(
    data: str,
    out_dir: str | Path,
    *,
    index: str | Path | None = None,
    retrieval: str = "bm25",
    k: int = 20,
    n: int | None = None,
    seed: int = 0,
    model: str = "qwen2.5-0.5b",
    mode: str = "answer",
    user_model: str | None = None,
    match: str = "recall_or_substring",
    judge_model: str | None = None,
    labels: str | Path | None = None,
    kind: str = "cross_encoder",
    encoder: str = "all-MiniLM-L6-v2",
    epochs: int = 3,
    batch_size: int = 16,
    learning_rate: float = 3e-5,
    val_share: float = 0.2,
    temperature: bool = True,
    n_ctx: int = 4096,
    on_stage: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> ForecasterRun:
    """What `verirag train forecaster` runs (CalibRAG, Jang et al.): load the questions and the
    index (or pool their passages), load the RAG model (and the surrogate user with mode
    "decision", the judge with match "llm"), label the top-k (q, d) pairs into the append-only
    label file (default OUT/labels.jsonl; a rerun resumes), fit a forecaster of `kind` on them and
    save it to `out_dir` with the fingerprints of the model and index and the run's provenance.
    `on_stage(text)` announces each step; `progress(step, done, total)` counts within
    "labelling" and "training"."""
    from verirag.retrieval.index import index_or_pooled
    from verirag_lab.train.data import load_questions
    from verirag_lab.train.forecaster_labels import label_pairs

    if mode not in MODES:
        raise InputError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    if kind not in KINDS:
        raise InputError(f"--kind must be cross_encoder or probe, got {kind!r}")
    stage, tick = on_stage or (lambda _text: None), progress or (lambda _step, _done, _total: None)
    examples = load_questions(data, n, seed)
    stage("indexing the pooled passages" if index is None else "loading the index")
    idx = index_or_pooled(examples, index, kind=retrieval, source=str(data))
    stage(f"loading {model}")
    llm, user_llm, judge_llm = _load_models(model, user_model, judge_model, mode=mode, match=match, n_ctx=n_ctx)
    forecaster = _new_forecaster(
        kind,
        llm,
        encoder,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        val_share=val_share,
        temperature=temperature,
        seed=seed,
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    label_file = Path(labels) if labels else out_dir / "labels.jsonl"
    stage(f"labelling pairs ({mode})")
    ls = label_pairs(
        examples, idx, llm, k=k, mode=mode, user_llm=user_llm, match=match, judge_llm=judge_llm, out=label_file,
        progress=lambda i, t: tick("labelling", i, t),
    )  # fmt: skip
    provenance = {"command": "verirag train forecaster", "data": data, "labels": str(label_file), "mode": mode}
    provenance |= {"match": match, "k": k, "model": model, "user_model": user_model or model}
    provenance["label_summary"] = ls.summary()
    fingerprints = {"model": getattr(llm, "fingerprint", ""), "retriever": idx.kind, "corpus": idx.fingerprint}
    stage("reading hidden states" if kind == "probe" else "training the forecaster")
    f = train_forecaster(
        ls.records,
        forecaster=forecaster,
        fingerprints=fingerprints,
        provenance=provenance,
        progress=lambda i, t: tick("training", i, t),
    )
    f.save(out_dir)
    return ForecasterRun(ls, label_file, f)
