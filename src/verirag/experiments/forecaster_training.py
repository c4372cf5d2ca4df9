"""Train CalibRAG's forecaster f(q, d) from labelled pairs (`forecaster_labels`): the pairs with a
label, validation on held-out questions, provenance in the saved forecaster's `meta`."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from verirag.errors import InputError
from verirag.experiments.forecaster_labels import LabelRecord
from verirag.retrieval.forecaster import Forecaster, pair_text


def pairs(records: Sequence[LabelRecord]) -> tuple[list[str], list[str], list[int], list[str]]:
    """(queries, documents, labels, groups) of the labelled records (failed ones have no label)."""
    rs = [r for r in records if r.label is not None]
    return ([r.question for r in rs], [pair_text(r.doc_title, r.doc_text) for r in rs],
            [int(r.label) for r in rs], [r.group for r in rs])


def train_forecaster(records: Sequence[LabelRecord], *, forecaster: Forecaster | None = None,
                     meta: dict | None = None, progress: Callable[[int, int], None] | None = None) -> Forecaster:
    """Fit `forecaster` (default settings when None) on the records' labelled pairs. One class
    only, or fewer than two questions, is an InputError that says what to do."""
    q, d, y, g = pairs(records)
    if not y:
        raise InputError("no labelled pair to train on (every pair failed: see the label file's errors)")
    if len(set(y)) < 2:
        raise InputError(f"every labelled pair has label {y[0]}: a forecaster needs both correct and incorrect "
                         "decisions (label more questions, raise k, or use the other labelling mode)")
    f = forecaster or Forecaster()
    f.meta = dict(meta or {})
    return f.fit(q, d, y, g, progress=progress)
