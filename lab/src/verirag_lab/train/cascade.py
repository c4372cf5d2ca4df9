"""What `verirag train cascade RUN` runs: fit the cascade's band and calibrations
(`verirag.learned.cascade`) on an eval run whose answers both the trained verifier and the LLM
judge scored (e.g. `configs/verifier-held-out-nli.yaml`: the default model's own answers to
held-out questions, each judged by `vanilla+verifier` and `vanilla+nli`).

    pairs = paired_scores(["data/verifier/own_answers/held-out-nli-qwen2.5-1.5b"])
    band = fit_cascade(pairs, budget=0.2)
    band.save("cascade.json", **provenance)

Answers are paired by generation (the records' `details.generation`: one text judged by both),
labelled by the records' `faithful`. The run is read by the one reader of results.jsonl
(`ResultStore`: a torn line skipped, the latest record of a slot kept). Both columns are the records'
`raw_score`, the judges' scores before the answer rules (a declined answer's is not zeroed): what
the cascade routes on at answer time, where the rules apply after it. The dev set (instruct_qa_human) is evaluation data: a run
holding it is refused. The verifier records must be the current verifier's (their predictor
digest equals the digest of the verifier the cascade will run), or the band would sit on another
scale; the judge's digest becomes the `judge` fingerprint. A retrained verifier's scores of the same
answers, made without an LLM call (`benchmarks/rescore_own_answers.py`: a header naming the verifier,
then one {key, score, seconds} row per answer, with `raw_score` where an answer rule changed the
score), stand in for the run's verifier records (`read_verifier_scores`, `paired_scores(verifier_scores=...)`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.cascade import DEFAULT_BUDGET, DEFAULT_JUDGE, CascadeBand
from verirag.learned.threshold import kfold_indices
from verirag.metrics.calibration import auroc
from verirag.records import RESULTS_FILE, ResultStore
from verirag_lab.train.guard import refuse_evaluation_run
from verirag_lab.train.stack_features import answer_key


@dataclass
class PairedScores:
    """One row per answer scored by both: raw scores (before the answer rules), label, question
    group, each judge's seconds."""

    verifier: np.ndarray
    judge: np.ndarray
    labels: np.ndarray
    groups: list[str]
    datasets: list[str]
    verifier_seconds: np.ndarray
    judge_seconds: np.ndarray
    judge_calls: np.ndarray
    verifier_digest: str = ""
    judge_digest: str = ""
    runs: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, mask: np.ndarray) -> PairedScores:
        m = np.asarray(mask, dtype=bool)
        return PairedScores(
            self.verifier[m],
            self.judge[m],
            self.labels[m],
            [g for g, k in zip(self.groups, m) if k],
            [d for d, k in zip(self.datasets, m) if k],
            self.verifier_seconds[m],
            self.judge_seconds[m],
            self.judge_calls[m],
            self.verifier_digest,
            self.judge_digest,
            self.runs,
        )


def run_records(run: str | Path) -> list[dict[str, Any]]:
    """An eval run's records as dicts, read by `ResultStore` (a run folder, or its results.jsonl)."""
    run = Path(run)
    store = ResultStore(run.parent if run.name == RESULTS_FILE else run)
    if not store.path.is_file():
        raise InputError(f"no eval run at {run} (no {RESULTS_FILE})")
    return [r.to_dict() for r in store.load()]


@dataclass(frozen=True)
class VerifierScores:
    """Another verifier's scores of a run's answers: {generation key: (score, seconds)}, the
    predictor digest of the verifier that made them and its network's fingerprint (adapter and
    encoder: the same network named by another folder has another digest and the same fingerprint)."""

    scores: dict[str, tuple[float, float]]
    digest: str
    model_fingerprint: str = ""


def generation_key(record: Mapping[str, Any]) -> str:
    """The generated answer a record (a results.jsonl line) judged (`stack_features.answer_key`)."""
    return answer_key(record["dataset"], record.get("model"), record["example_id"], record.get("details") or {})


def read_verifier_scores(paths: Sequence[str | Path]) -> VerifierScores:
    """The rows of one or more rescored files (one verifier: their headers must name one digest)."""
    scores: dict[str, tuple[float, float]] = {}
    digests, networks = set(), set()
    for path in paths:
        try:
            lines = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read the verifier scores {path}: {e}") from None
        if not lines or not lines[0].get("header"):
            raise InputError(f"{path} has no header naming its verifier: not a rescored file")
        header = lines[0].get("verifier") or {}
        digests.add(str(header.get("predictor_digest", "")))
        networks.add(str(header.get("model_fingerprint", "")))
        for row in lines[1:]:  # the score before the answer rules, as the cascade routes on it
            raw = row["score"] if row.get("raw_score") is None else row["raw_score"]
            scores[row["key"]] = (float(raw), float(row["seconds"]))
    if len(digests) != 1:
        raise InputError(f"the verifier scores were made by {len(digests)} verifiers ({', '.join(sorted(digests))})")
    return VerifierScores(scores, digests.pop(), networks.pop() if len(networks) == 1 else "")


def with_verifier_scores(records: list[dict], verifier_scores: VerifierScores) -> list[dict]:
    """`records` with another verifier's scores (as their raw score), seconds and digest in place of
    their own; every record must have one."""
    missing = [generation_key(r) for r in records if generation_key(r) not in verifier_scores.scores]
    if missing:
        raise InputError(f"the verifier scores lack {len(missing)} of the runs' answers, e.g. {missing[0]}")
    out = []
    for r in records:
        score, seconds = verifier_scores.scores[generation_key(r)]
        details = {
            **(r.get("details") or {}),
            "predictor_digest": verifier_scores.digest,
            "timings": {"verify": seconds},
        }
        out.append({**r, "raw_score": score, "details": details})
    return out


def one_digest(records: list[dict], what: str) -> str:
    """The predictor digest every record names (an InputError when they name several set-ups)."""
    found = {(r.get("details") or {}).get("predictor_digest", "") for r in records}
    if len(found) > 1:
        raise InputError(f"the {what} records were made by {len(found)} set-ups ({', '.join(sorted(found))})")
    return found.pop()


def verify_seconds(record: dict) -> float:
    return float(((record.get("details") or {}).get("timings") or {}).get("verify", record.get("seconds") or 0.0))


def paired_scores(
    runs: Sequence[str | Path],
    *,
    verifier_method: str = "vanilla+verifier",
    judge_method: str = "vanilla+nli",
    verifier_scores: VerifierScores | None = None,
) -> PairedScores:
    """The answers of `runs` that both methods scored without error, paired by generation; with
    `verifier_scores`, those scores (and seconds) in place of the verifier records' (every paired
    answer must have one)."""
    by_method: dict[str, dict[tuple, dict]] = {verifier_method: {}, judge_method: {}}
    for run in runs:
        records = run_records(run)
        refuse_evaluation_run(run, records, part="a cascade")
        for r in records:
            table = by_method.get(r.get("method"))
            if table is None or r.get("error") or r.get("score") is None or r.get("faithful") is None:
                continue
            d = r.get("details") or {}
            table[(r["dataset"], r.get("model"), d.get("generation"), str(r.get("example_id")))] = r
    common = sorted(set(by_method[verifier_method]) & set(by_method[judge_method]), key=str)
    if not common:
        raise InputError(
            f"no answer in {', '.join(map(str, runs))} was scored by both {verifier_method} and {judge_method}"
        )
    v = [by_method[verifier_method][k] for k in common]
    j = [by_method[judge_method][k] for k in common]
    if verifier_scores is not None:
        v = with_verifier_scores(v, verifier_scores)

    return PairedScores(
        verifier=np.array([float(r["raw_score"]) for r in v]),
        judge=np.array([float(r["raw_score"]) for r in j]),
        labels=np.array([int(r["faithful"]) for r in v]),
        groups=[f"{r['dataset']}:{r.get('group') or r.get('example_id')}" for r in v],
        datasets=[r["dataset"] for r in v],
        verifier_seconds=np.array([verify_seconds(r) for r in v]),
        judge_seconds=np.array([verify_seconds(r) for r in j]),
        judge_calls=np.array([int((r.get("spent") or {}).get("calls", r.get("calls") or 0)) for r in j]),
        verifier_digest=one_digest(v, verifier_method),
        judge_digest=one_digest(j, judge_method),
        runs=[str(r) for r in runs],
    )


def paired_with_judge_file(
    run: str | Path,
    judge_scores: str | Path,
    *,
    verifier_method: str = "vanilla+verifier",
    verifier_scores: VerifierScores | None = None,
) -> PairedScores:
    """A run's `verifier_method` records paired with a judge's scores of the same answers kept apart
    from the run (lines {id: generation key, score, seconds}, as `benchmarks/nli_evidence.py score own`
    writes them). An answer the judge failed on or never scored is left out; the judge's identity is
    its file's name (those lines carry no digest). With `verifier_scores`, those scores and seconds
    in place of the records' (every paired answer must have one)."""
    judged: dict[str, dict] = {}
    for line in Path(judge_scores).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            judged[row["id"]] = row
    v = [
        r
        for r in run_records(run)
        if r.get("method") == verifier_method and not r.get("error") and r.get("score") is not None
    ]
    refuse_evaluation_run(run, v, part="a cascade")
    pairs = [(r, judged[k]) for r in v if (k := generation_key(r)) in judged and judged[k].get("score") is not None]
    if not pairs:
        raise InputError(f"no answer of {run} has a score in {judge_scores}")
    v = [r for r, _ in pairs]
    if verifier_scores is not None:
        v = with_verifier_scores(v, verifier_scores)
    return PairedScores(
        verifier=np.array([float(r["score"] if r.get("raw_score") is None else r["raw_score"]) for r in v]),
        judge=np.array([float(j["score"]) for _, j in pairs]),
        labels=np.array([int(r["faithful"]) for r in v]),
        groups=[f"{r['dataset']}:{r.get('group') or r.get('example_id')}" for r in v],
        datasets=[r["dataset"] for r in v],
        verifier_seconds=np.array([verify_seconds(r) for r in v]),
        judge_seconds=np.array([float(j.get("seconds") or 0.0) for _, j in pairs]),
        judge_calls=np.ones(len(pairs), dtype=int),
        verifier_digest=one_digest(v, verifier_method),
        judge_digest=f"file:{Path(judge_scores).name}",
        runs=[str(run)],
    )


def fit_cascade(
    pairs: PairedScores,
    *,
    budget: float = DEFAULT_BUDGET,
    judge: str = DEFAULT_JUDGE,
    threshold: float = 0.5,
    verifier_fingerprint: str = "",
) -> CascadeBand:
    """The band and calibrations fitted on every paired answer."""
    fingerprints = {"verifier": verifier_fingerprint, "judge": pairs.judge_digest}
    return CascadeBand(budget=budget, threshold=threshold, judge=judge, fingerprints=fingerprints).fit(
        pairs.verifier, pairs.judge, pairs.labels, pairs.groups
    )


def cross_fitted(
    pairs: PairedScores, *, budget: float = DEFAULT_BUDGET, folds: int = 5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(cascade score, escalated) of every answer from a band and calibrations fitted without its
    question (folds by question group): the cascade measured on the data that fits it, honestly."""
    score = np.full(len(pairs), np.nan)
    escalated = np.zeros(len(pairs), dtype=bool)
    for train, test in kfold_indices(len(pairs), folds, groups=pairs.groups, seed=seed):
        mask = np.zeros(len(pairs), dtype=bool)
        mask[train] = True
        band = fit_cascade(pairs.subset(mask), budget=budget)
        pv = band.calibrate("verifier", pairs.verifier[test])
        escalated[test] = band.inside(pv)
        score[test] = band.combine(pairs.verifier[test], pairs.judge[test])
    return score, escalated


def verifier_fingerprint_and_digest(verifier: str | None = None) -> tuple[str, str]:
    """(the `verifier` fingerprint a cascade records, the predictor digest its run records carry)."""
    from verirag.awf.predictors.verifier import TrainedVerifierPredictor

    p = TrainedVerifierPredictor(verifier=verifier)
    return p.model_fingerprint(), p.digest


def train_cascade_from_runs(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    budget: float = DEFAULT_BUDGET,
    judge_method: str = "vanilla+nli",
    verifier: str | None = None,
    verifier_scores: Sequence[str | Path] = (),
) -> CascadeBand:
    """Fit on `runs` and save to `out`: what `verirag train cascade` does. Refuses runs whose
    verifier records (or `verifier_scores` files, which replace them) were made by another verifier
    than the one the cascade will run."""
    fingerprint, digest = verifier_fingerprint_and_digest(verifier)
    rescored = read_verifier_scores(verifier_scores) if verifier_scores else None
    pairs = paired_scores(runs, judge_method=judge_method, verifier_scores=rescored)
    # rescored answers name their network; the shipped verifier rescored from its training folder
    # (`verifier=runs/...`) is the same network under another predictor digest
    same_network = rescored is not None and rescored.model_fingerprint == fingerprint
    if pairs.verifier_digest and pairs.verifier_digest != digest and not same_network:
        raise InputError(
            f"the runs' verifier scores were made by verifier {pairs.verifier_digest}, and the verifier "
            f"the cascade runs is {digest} (retrained?): score the answers with it "
            "(benchmarks/rescore_own_answers.py, then --verifier-scores) or run the eval again, then refit"
        )
    judge = judge_method.split("+", 1)[-1]
    band = fit_cascade(pairs, budget=budget, judge=judge, verifier_fingerprint=fingerprint)
    oof, escalated = cross_fitted(pairs, budget=budget)
    band.save(
        out,
        command="verirag train cascade",
        runs=pairs.runs,
        verifier_scores=[str(p) for p in verifier_scores],
        judge_method=judge_method,
        answers=len(pairs),
        cross_fitted={
            "auroc": auroc(oof, pairs.labels),
            "escalated_share": float(escalated.mean()),
        },
    )
    return band
