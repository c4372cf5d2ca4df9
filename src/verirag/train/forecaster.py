"""Train CalibRAG's forecaster f(q, d) from labelled pairs (`verirag.train.forecaster_labels`):
the pairs with a label, validation on held-out questions, what it was fitted for in the saved
forecaster's fingerprints and provenance."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from verirag.errors import InputError
from verirag.learned.forecaster import Forecaster, ForecasterBase, pair_text
from verirag.train.forecaster_labels import LabelRecord


def pairs(records: Sequence[LabelRecord]) -> tuple[list[str], list[str], list[int], list[str]]:
    """(queries, documents, labels, groups) of the labelled records (failed ones have no label)."""
    rs = [r for r in records if r.label is not None]
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
    q, d, y, g = pairs(records)
    if not y:
        raise InputError("no labelled pair to train on (every pair failed: see the label file's errors)")
    if len(set(y)) < 2:
        raise InputError(
            f"every labelled pair has label {y[0]}: a forecaster needs both correct and incorrect "
            "decisions (label more questions, raise k, or use the other labelling mode)"
        )
    f = forecaster or Forecaster()
    f.fingerprints.update({k: v for k, v in (fingerprints or {}).items() if v})
    f.provenance = dict(provenance or {})
    return f.fit(q, d, y, g, progress=progress)
