"""The stacked verifier's feature table from `distill` labels (issue 47): the pipeline's own answers
to TRAINING questions, so a stack of the trained verifier with what the generator knows of its own
answer can be fitted without touching an evaluation set.

    table = label_table(read_records("distill.jsonl"), data_root, model_fingerprint=llm.fingerprint)
    result = train_stack(table)                                  # verirag_lab.train.stack

Each made `distill` record that carries the answer's no-cost signals (`meta.signals`: token log-prob
min / mean / sum and K-Precision, written since 2026-11-28) is a row; older records lack them and are
counted in `without_signals`, never imputed. The `verifier` column is the trained verifier (the
shipped one, or `verifier=DIR`) over the record's passages, scored here: the same predictor and
options `vanilla+stacked(stack=FILE)` rebuilds at answer time, its identity kept in `sources` so a
retrained verifier is refused there. The label is the record's gold grade (right, with the evidence
among the passages: AwF's V); `answerable` is whether the evidence was among them. Groups are the
question groups, so the cross-validation never splits a question's two answers.

The records are resolved with `verirag_lab.train.verifier_labels.resolve` (the guard against
evaluation questions applies), so the data they name must be present; `verirag train stack` also
leaves out what the verifier's training guard refuses (held-out questions and documents, licence
texts), counted in the stack's provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from verirag.awf.signals import LOGPROB_SIGNALS
from verirag.errors import InputError
from verirag.types import Passage
from verirag_lab.train.cross_fit import FoldVerifiers, fold_of, fold_verifiers, saved_provenance
from verirag_lab.train.stack_features import StackTable

RECIPE = "distill"
DEFAULT_FEATURES = ("verifier", *LOGPROB_SIGNALS, "k_precision")
# The LLM judges' scores the distillation recorded beside the answers, as features: a stack that
# reads one rebuilds that predictor at answer time and pays its LLM call. Not among the defaults
# (they cost no model call). {feature: (its score's key in `meta.judge`, its digest's key, source)}:
# nli over the verifier's evidence (every answer), and `vanilla+llm_judge`'s judge over the passages
# the generator read (answers made since 2026-11-29; rows without it are left out, and counted).
JUDGE_FEATURE = "nli_evidence"
JUDGE_FEATURES = {
    JUDGE_FEATURE: (
        "evidence",
        "digest",
        {"predictor": "nli", "options": {"premise": "evidence"}, "method": "vanilla+nli(premise=evidence)"},
    ),
    "llm_judge": (
        "llm_judge",
        "llm_judge_digest",
        {"predictor": "llm_judge", "options": {}, "method": "vanilla+llm_judge"},
    ),
}


def _rows(records: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """(the made distill records with signals, how many made ones have none)."""
    made = [r for r in records if r.get("recipe") == RECIPE and "skip" not in r and "label" in r]
    rows = [r for r in made if (r.get("meta") or {}).get("signals")]
    return rows, len(made) - len(rows)


def label_table(
    records: Sequence[dict[str, Any]],
    data_root=None,
    *,
    model_fingerprint: str,
    features: Sequence[str] | None = None,
    verifier: str | None = None,
    cross_fit: FoldVerifiers | None = None,
    batch: int = 32,
    say=lambda _done, _total: None,
    guard=None,
) -> StackTable:
    """The feature table of the `distill` records (module doc). `model_fingerprint`: the answering
    model's full fingerprint (the records keep its first 16 characters, checked against it); a selected
    signal some row lacks is an InputError naming it (a backend without log-probabilities). `guard`
    (a `TrainingGuard`): the records it refuses, by what they name or by their texts, are left out
    and counted in its `refused`."""
    from verirag_lab.train.verifier_labels.resolve import resolve

    rows, without = _rows(records)
    if guard is not None:
        rows = guard.keep_by(rows, guard.record_refusal)
    if not rows:
        raise InputError(
            f"no {RECIPE} record with the answer's signals (meta.signals) among {len(records)} records"
            + (f" ({without} made before signals were kept)" if without else "")
            + ": make some with `make distill-labels`"
        )
    models = {r.get("model") for r in rows}
    if len(models) != 1:
        raise InputError(f"the records come from several models ({', '.join(sorted(map(str, models)))}): one per stack")
    prints = {str(r.get("fingerprint") or "") for r in rows}
    if len(prints) != 1 or not model_fingerprint.startswith(prints.pop()):
        raise InputError(
            f"the records were made by a model build with fingerprint(s) {sorted(prints)}, not "
            f"{model_fingerprint[:16]}: a stack's log-probabilities belong to one build"
        )
    features = list(features or DEFAULT_FEATURES)
    rows, unjudged = _judged_rows(rows, [f for f in features if f in JUDGE_FEATURES])
    signal_features = [f for f in features if f != "verifier" and f not in JUDGE_FEATURES]
    for f in signal_features:
        lacking = [r for r in rows if f not in r["meta"]["signals"]]
        if lacking:
            why = (lacking[0]["meta"].get("signals_missing") or {}).get(f, "not recorded")
            raise InputError(f"{len(lacking)} of {len(rows)} answers have no {f} (first: {lacking[0]['id']}: {why})")
    examples = resolve(rows, data_root)
    if guard is not None:  # by text too: a held-out question's passage under another key, a licence
        kept = guard.keep_by(list(zip(rows, examples, strict=True)), lambda pair: guard.example_refusal(pair[1]))
        rows, examples = [r for r, _ in kept], [e for _, e in kept]
        if not rows:
            raise InputError(f"the guard refuses every {RECIPE} record ({guard.refused})")
    X = np.full((len(rows), len(features)), np.nan)
    for f in signal_features:
        X[:, features.index(f)] = [float(r["meta"]["signals"][f]) for r in rows]
    sources: dict[str, dict[str, Any]] = {}
    for f in features:
        if f in JUDGE_FEATURES:
            X[:, features.index(f)], sources[f] = judge_column(rows, f)
    if "verifier" in features:
        X[:, features.index("verifier")], sources["verifier"] = _verifier_column(
            examples, verifier, batch, say, cross_fit
        )
    return StackTable(
        features=features,
        X=X,
        y=np.array([int(r["label"]) for r in rows]),
        answerable=np.array([int(bool(r["meta"].get("evidence"))) for r in rows]),
        groups=[f"{r['dataset']}:{e.group}" for r, e in zip(rows, examples)],
        keys=[str(r["id"]) for r in rows],
        label="faithful",
        sources=sources,
        model=str(models.pop()),
        model_fingerprint=model_fingerprint,
        absent=({"without_signals": f"{without} {RECIPE} records made before signals were kept"} if without else {})
        | {f"without_{f}": f"{n} {RECIPE} records made before {f} was recorded" for f, n in unjudged.items() if n},
    )


def _verifier_column(
    examples, verifier: str | None, batch: int, say, folds: FoldVerifiers | None = None
) -> tuple[list[float], dict[str, Any]]:
    """(the trained verifier's score of each example's answer over its passages, the feature's source).
    With `folds`, each answer is scored by the fold verifier that never saw its question (cross-fitted,
    `verirag_lab.train.cross_fit`); the source still names `verifier`, the one read at answer time."""
    from verirag.awf.compose import build_predictor

    options = {"verifier": verifier} if verifier else {}
    predictor = build_predictor("verifier", None, options=options)
    source = {"predictor": "verifier", "options": options, "method": "vanilla+verifier", "digest": predictor.digest}
    if folds is None:
        return _scores(predictor, examples, batch, say, 0, len(examples)), source
    scores = [0.0] * len(examples)
    done, fitted = 0, []
    for k, folder in enumerate(folds.dirs):
        idx = [i for i, e in enumerate(examples) if fold_of(e.group, folds.folds) == k]
        fold_predictor = build_predictor("verifier", None, options={"verifier": folder})
        for i, score in zip(idx, _scores(fold_predictor, [examples[i] for i in idx], batch, say, done, len(examples))):
            scores[i] = score
        done += len(idx)
        fitted.append({"fold": k, "verifier": folder, "digest": fold_predictor.digest, "answers": len(idx)})
    return scores, source | {"cross_fit": fitted}


def _scores(predictor, examples, batch: int, say, done: int, total: int) -> list[float]:
    """`predictor`'s score of each example's answer, in batches (`say(done + scored, total)` after each)."""
    from verirag.conversation import in_context

    scores: list[float] = []
    for start in range(0, len(examples), batch):
        part = examples[start : start + batch]
        # a follow-up is verified in its conversation, as `ask` verifies it
        items = [
            (in_context(e.question, e.history), e.answer, [Passage(str(i), t) for i, t in enumerate(e.passages)])
            for e in part
        ]
        # a failure counts 0, as an eval run's records count it (and the stacked predictor does)
        scores += [float(v.score) if v.ok else 0.0 for v in predictor.verify_batch(items)]
        say(done + min(start + batch, len(examples)), total)
    return scores


def _judged_rows(rows: Sequence[dict[str, Any]], judges: Sequence[str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """(the rows on which every judge feature in `judges` was asked, {feature: rows left out for it}):
    a judge added to the recipe later was never asked about the answers made before it."""
    kept, left = list(rows), {}
    for f in judges:
        digest_key = JUDGE_FEATURES[f][1]
        asked = [r for r in kept if digest_key in ((r.get("meta") or {}).get("judge") or {})]
        left[f], kept = len(kept) - len(asked), asked
    if judges and not kept:
        raise InputError(
            f"no {RECIPE} record was judged by {', '.join(judges)}: make some with the recipe as it is now"
        )
    return kept, left


def judge_column(rows: Sequence[dict[str, Any]], feature: str = JUDGE_FEATURE) -> tuple[list[float], dict[str, Any]]:
    """(the judge's score of each answer, the feature's source): a judge the distillation recorded
    (`JUDGE_FEATURES`). An answer it could not score counts 0, as a failed predictor counts at answer
    time; the rows must share one judge (its digest), which the stacked predictor checks again when it
    rebuilds it."""
    score_key, digest_key, source = JUDGE_FEATURES[feature]
    judged = [(r.get("meta") or {}).get("judge") or {} for r in rows]
    digests = {j.get(digest_key) for j in judged}
    if len(digests) != 1 or None in digests:
        raise InputError(
            f"the {feature} feature needs one judge for every answer; the records name "
            f"{sorted(map(str, digests))}: make them with one set-up"
        )
    scores = [0.0 if j.get(score_key) is None else float(j[score_key]) for j in judged]
    return scores, source | {"digest": digests.pop()}


def verifier_learned_from_distillation(verifier: str | None) -> int:
    """How many `distill` examples the verifier (`verifier=DIR`, or the shipped one) was trained on,
    from its saved provenance (0 when none, or when it records no label summary)."""
    recipes = (saved_provenance(verifier).get("label_summary") or {}).get("recipes") or {}
    return int((recipes.get(RECIPE) or {}).get("examples", 0))


def train_stack_from_labels(
    labels_file,
    out_file,
    *,
    data_root=None,
    features: Sequence[str] | None = None,
    verifier: str | None = None,
    cross_fit: Sequence[str] = (),
    folds: int = 5,
    seed: int = 0,
    resamples: int = 2000,
    C: float = 1.0,
    llm_loader=None,
    say=lambda _done, _total: None,
    guard=None,
):
    """What `verirag train stack LABELS.jsonl` runs: the table of a distill labels file (its model's
    full fingerprint read from the model itself, `llm_loader(model)`), cross-validated and fitted
    (`verirag_lab.train.stack.train_stack`), saved to `out_file` with its report. `cross_fit`: the
    fold verifiers (one per fold, `verirag train verifier --distill-fold K`) whose out-of-sample
    scores make the verifier column, so that `verifier` may be one that learned from these answers.
    `guard`: the `TrainingGuard` whose refusals are left out (default: the verifier's, of `data_root`)."""
    from verirag_lab.datasets import data_dir
    from verirag_lab.train.guard import TrainingGuard
    from verirag_lab.train.stack import train_stack
    from verirag_lab.train.verifier_labels import read_records

    folds_given = fold_verifiers(cross_fit) if cross_fit else None
    learned = 0 if folds_given else verifier_learned_from_distillation(verifier)
    if learned:
        # its scores over these records would be in-sample: a stack fitted on them trusts it too much
        raise InputError(
            f"the verifier {verifier or '(the shipped one)'} was trained on {learned} distillation answers, "
            "and the stack's table is distillation answers: its verifier column would be scored in-sample. "
            "Fit the stack with a verifier that did not learn from them, or cross-fit it (--cross-fit: one "
            "verifier per fold of the question groups, each trained with --distill-fold K)."
        )
    records = read_records(labels_file)
    rows, _ = _rows(records)
    if llm_loader is None:
        from verirag.llm.factory import load_llm

        def llm_loader(spec):
            return load_llm(spec, cache=False, n_ctx=512)

    # no rows: label_table says why; the model is loaded only to read its full fingerprint
    fingerprint = getattr(llm_loader(str(rows[0].get("model"))), "fingerprint", "") if rows else ""
    # the verifier's guard: evaluation questions, held-out questions and documents, licence texts
    guard = guard if guard is not None else TrainingGuard.for_verifier(data_dir(data_root))
    table = label_table(
        records,
        data_root,
        model_fingerprint=fingerprint,
        features=features,
        verifier=verifier,
        cross_fit=folds_given,
        say=say,
        guard=guard,
    )
    result = train_stack(table, folds=folds, seed=seed, C=C, n_resamples=resamples)  # reports table.absent
    result.stack.save(
        out_file,
        command="verirag train stack",
        labels=str(labels_file),
        methods=["vanilla+verifier"],
        refused_as_evaluation_data=dict(sorted(guard.refused.items())),
        **result.provenance,
    )
    return result
