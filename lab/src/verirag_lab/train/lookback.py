"""Train and evaluate the lookback factuality classifier from an eval run's records.

    records = ResultStore("runs/dependable-small").load()      # verirag.records
    samples = collect_samples("runs/dependable-small", records, method="vanilla", attention_model="hf:qwen2.5-0.5b")
    result = train_lookback(samples, variant="cw", k=10)          # fit on 60% of the groups
    result.classifier.save("clf.json", **result.meta)
    matrix = cross_dataset_auroc(samples, variant="fc", k=10)      # Figure 6 shape

For each record of one generator in a run, the answer is produced again through the request
cache (the same generator, model and options, so the cache answers at no cost and the raw
generation, not only the recorded answer, is available), and the attention model reads the
generator's conversation and reply in one teacher-forced pass (`LookbackPredictor.ratios`, the
very code the predictor runs at inference). Lookback ratios go through the request cache too, so
a killed run resumes.

Labels: `faithful` (the run's V: correct and answerable), `correct`, or `judge` (answer
consistency, the paper's label: the LLM faithfulness judge of `verirag.evaluation.judges` reads the
passages and the answer). A sample whose features or label could not be computed is kept with its
error and counted, never silently left out.

Splits are by example group (twin HotpotQA examples stay together), 3:2 train:test as the paper.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError, VeriragError
from verirag.learned.lookback_classifier import LookbackClassifier
from verirag.learned.splits import split_by_group
from verirag.llm.base import ATTENTIONS
from verirag.llm.lookback import LookbackRatios
from verirag_lab.train.guard import TrainingGuard

LABELS = ("faithful", "correct", "judge")
TEST_SHARE = 0.4  # the paper's 3:2 train:validation split


@dataclass
class LookbackSample:
    dataset: str
    example_id: str
    group: str
    label: int | None
    ratios: LookbackRatios | None
    error: str | None = None


@dataclass
class Samples:
    """The samples of one run's generator, and the attention model that read them."""

    samples: list[LookbackSample]
    model: str
    attention_model: str
    model_fingerprint: str

    @property
    def failed(self) -> list[LookbackSample]:
        return [s for s in self.samples if s.error]


@dataclass
class TrainResult:
    classifier: LookbackClassifier
    train_auroc: float
    test_auroc: float
    test_interval: tuple[float, float]
    n_train: int
    n_test: int
    meta: dict[str, Any] = field(default_factory=dict)


def split_groups(
    samples: Sequence[LookbackSample], test_share: float = TEST_SHARE, seed: int = 0
) -> tuple[list[LookbackSample], list[LookbackSample]]:
    """(train, test) with every group wholly on one side; about `test_share` of the groups test."""
    if not 0 < test_share < 1:
        raise InputError(f"the test share must lie in (0, 1), got {test_share}")
    train, test = split_by_group([s.group for s in samples], test_share, seed)
    return [s for s, t in zip(samples, train) if t], [s for s, t in zip(samples, test) if t]


def usable(samples: Sequence[LookbackSample]) -> list[LookbackSample]:
    return [s for s in samples if s.ratios is not None and s.label is not None]


def auroc_with_interval(
    clf: LookbackClassifier, samples: Sequence[LookbackSample], *, n_resamples: int = 1000, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """Held-out AUROC and its 95% percentile bootstrap interval (resampling samples)."""
    from verirag.metrics.calibration import auroc
    from verirag.metrics.stats import bootstrap_ci

    samples = usable(samples)
    if not samples:
        return math.nan, (math.nan, math.nan)
    p = clf.predict_proba([s.ratios for s in samples])
    y = np.asarray([s.label for s in samples])
    if len(set(y.tolist())) < 2:
        return math.nan, (math.nan, math.nan)
    ci = bootstrap_ci(lambda a, b: auroc(a, b), p, y, n_resamples=n_resamples, seed=seed)
    return float(auroc(p, y)), (ci.low, ci.high)


def train_lookback(
    samples: Sequence[LookbackSample],
    *,
    variant: str = "cw",
    k: int = 10,
    test_share: float = TEST_SHARE,
    seed: int = 0,
) -> TrainResult:
    """Fit on the training groups, report AUROC on them and on the held-out groups."""
    from verirag.metrics.calibration import auroc

    train, test = split_groups(usable(samples), test_share, seed)
    if not train:
        raise InputError("no sample with features and a label to train on")
    clf = LookbackClassifier(variant, k).fit([s.ratios for s in train], [s.label for s in train])
    train_auc = float(auroc(clf.predict_proba([s.ratios for s in train]), [s.label for s in train]))
    test_auc, interval = auroc_with_interval(clf, test, seed=seed)
    return TrainResult(clf, train_auc, test_auc, interval, len(train), len(test))


def cross_dataset_auroc(
    samples: Sequence[LookbackSample], *, variant: str, k: int = 10, test_share: float = TEST_SHARE, seed: int = 0
) -> dict[str, dict[str, float]]:
    """{train dataset: {test dataset: held-out AUROC}}: fit on one dataset's training groups,
    test on every dataset's test groups (the diagonal is the in-dataset held-out AUROC)."""
    by_ds: dict[str, tuple[list, list]] = {}
    for ds in sorted({s.dataset for s in samples}):
        by_ds[ds] = split_groups(usable([s for s in samples if s.dataset == ds]), test_share, seed)
    out: dict[str, dict[str, float]] = {}
    for src, (train, _) in by_ds.items():
        row: dict[str, float] = {}
        labels = {s.label for s in train}
        if len(labels) < 2:
            out[src] = dict.fromkeys(by_ds, math.nan)
            continue
        clf = LookbackClassifier(variant, k).fit([s.ratios for s in train], [s.label for s in train])
        for dst, (_, test) in by_ds.items():
            row[dst] = auroc_with_interval(clf, test, n_resamples=1, seed=seed)[0]
        out[src] = row
    return out


def cross_dataset_cells(
    samples: Sequence[LookbackSample],
    *,
    k: int = 10,
    test_share: float = TEST_SHARE,
    seed: int = 0,
    n_resamples: int = 1000,
) -> list[dict[str, Any]]:
    """Figure 6 with intervals: per (train dataset, test dataset), the held-out AUROC of the CW and
    the FC classifier with 95% bootstrap intervals over the test answers' question groups, and
    FC - CW paired (one resample scores both), so "FC beats CW" can be told from noise.
    `cross_dataset_auroc`'s grids are these cells' point values."""
    from verirag.metrics.calibration import auroc
    from verirag.metrics.stats import group_bootstrap_intervals

    by_ds = {
        ds: split_groups(usable([s for s in samples if s.dataset == ds]), test_share, seed)
        for ds in sorted({s.dataset for s in samples})
    }
    fitted = {}
    for src, (train, _) in by_ds.items():
        if len({s.label for s in train}) == 2:
            fitted[src] = {
                v: LookbackClassifier(v, k).fit([s.ratios for s in train], [s.label for s in train])
                for v in ("cw", "fc")
            }
    cells = []
    for src, (train, _) in by_ds.items():
        for dst, (_, test) in by_ds.items():
            y = np.asarray([s.label for s in test], dtype=int)
            cell: dict[str, Any] = {
                "train": src,
                "test": dst,
                "n_train": len(train),
                "n_test": len(test),
                "test_positives": int(y.sum()),
            }
            cells.append(cell)
            if src not in fitted or len(set(y.tolist())) < 2:
                continue
            p = {v: np.asarray(fitted[src][v].predict_proba([s.ratios for s in test])) for v in ("cw", "fc")}

            def statistic(ix: np.ndarray) -> dict[str, np.ndarray]:
                cw, fc = auroc(p["cw"][ix], y[ix]), auroc(p["fc"][ix], y[ix])  # noqa: B023
                return {"cw": cw, "fc": fc, "fc_minus_cw": np.asarray(fc) - np.asarray(cw)}

            # resampling whole question groups: one question's answers under several retrievers
            # are not independent (and one resample scores both classifiers: FC - CW is paired)
            res = group_bootstrap_intervals(statistic, [s.group for s in test], n_resamples=n_resamples, seed=seed)
            for name, r in res.items():
                cell.update({name: r.estimate, f"{name}_low": r.low, f"{name}_high": r.high})
            cell["undefined_resamples"] = res["cw"].n_invalid
    return cells


# ---------------------------------------------------------------------------------- collection
def _run_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "run.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{run_dir} is not a run directory (no run.json); run `verirag eval` first") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path} is not readable JSON: {e}") from None


def collect_samples(
    run_dir: str | Path,
    run_records: Sequence[Any],
    *,
    method: str = "vanilla",
    model: str | None = None,
    attention_model: str | None = None,
    label: str = "faithful",
    judge_model: str | None = None,
    datasets: Sequence[str] | None = None,
    n_ctx: int = 4096,
    on_sample: Callable[[LookbackSample], None] | None = None,
) -> Samples:
    """One LookbackSample per record of `method` (its generator answers) among the run's records
    (`run_records`, the run directory's ResultStore)."""
    from verirag.awf.compose import ComposedMethod, build_method
    from verirag.awf.spec import MethodSpec
    from verirag.llm.factory import load_llm
    from verirag_lab.datasets import load_dataset

    if label not in LABELS:
        raise InputError(f"label must be one of {', '.join(LABELS)}, got {label!r}")
    run_dir = Path(run_dir)
    cfg = _run_config(run_dir)
    records = [
        r
        for r in run_records
        if r.method == method and (model is None or r.model == model) and (not datasets or r.dataset in datasets)
    ]
    if not records:
        known = sorted({r.method for r in run_records})
        raise InputError(
            f"{run_dir} has no records of method {method!r}"
            + (f" and model {model!r}" if model else "")
            + f"; it has: {', '.join(known) or 'none'}"
        )
    models = sorted({r.model for r in records})
    if len(models) > 1:
        raise InputError(f"method {method!r} ran with several models ({', '.join(models)}): pick one with --model")
    llm = load_llm(models[0], n_ctx=n_ctx)
    spec = records[0].method_spec
    built = build_method(MethodSpec(spec["name"], spec.get("options") or {}, spec.get("label", "")), llm)
    if not isinstance(built, ComposedMethod):
        raise InputError(
            f"{method!r} is a unified method; the lookback classifier reads a generator's "
            "answer: train on a generator (e.g. vanilla) or GENERATOR+PREDICTOR"
        )
    generator = built.generator
    att_spec = attention_model or f"hf:{models[0]}"
    att = load_llm(att_spec, n_ctx=n_ctx)
    att.require(ATTENTIONS)
    judge = None
    if label == "judge":
        from verirag.evaluation.judges import FaithfulnessJudge

        judge = FaithfulnessJudge(load_llm(judge_model or models[0], n_ctx=n_ctx), mode="logprobs")

    examples: dict[tuple[str, str], Any] = {}
    for d in cfg.get("datasets", []):
        if d["name"] in {r.dataset for r in records}:
            for ex in load_dataset(
                d["name"], d.get("path"), n=d.get("n"), seed=d.get("seed", 0), **(d.get("options") or {})
            ):
                examples[(d["name"], ex.id)] = ex
    samples = []
    guard = TrainingGuard.for_training()  # a sample of evaluation data is kept, with why it is not fitted on
    for r in records:
        ex = examples.get((r.dataset, r.example_id))
        if ex is None:
            s = LookbackSample(
                r.dataset, r.example_id, r.group, None, None, error="the example is not in the run's dataset any more"
            )
        elif (why := guard.refusal(ex.question, [p.text for p in ex.passages])) is not None:
            s = LookbackSample(
                r.dataset, r.example_id, r.group, None, None, error=f"refused as evaluation data ({why})"
            )
        else:
            s = _sample(r, ex, generator, att, label, judge)
        samples.append(s)
        if on_sample is not None:
            on_sample(s)
    return Samples(samples, models[0], att_spec, att.fingerprint)


def _sample(r, ex, generator, att, label, judge) -> LookbackSample:
    from verirag.awf.predictors.lookback import reply_ratios
    from verirag.awf.trace import Trace

    s = LookbackSample(r.dataset, r.example_id, r.group, None, None)
    try:
        ans = Trace(ex.question_with_history(), ex.passages).answer(generator)
        if ans.error:
            s.error = f"generation: {ans.error}"
            return s
        if ans.text.strip() != (r.answer or "").strip():
            s.error = "the regenerated answer differs from the recorded one (another model or settings)"
            return s
        s.ratios = reply_ratios(att, ans, ex.passages)
    except VeriragError as e:
        s.error = f"{type(e).__name__}: {e}"
        return s
    if label == "judge":
        v = judge.judge(ex.passages, ans.text, ex.question)
        if v.verdict is None:
            s.error = f"judge: {v.reason}"
        else:
            s.label = int(v.verdict)
    else:
        s.label = int(getattr(r, label))
    return s


# ---------------------------------------------------------------------------------- the command
@dataclass
class LookbackRun:
    """What `train_lookback_from_run` did: the samples read, the fit (saved), Figure 6's cells."""

    collected: Samples
    result: TrainResult
    cells: list[dict[str, Any]] | None = None

    @property
    def usable(self) -> list[LookbackSample]:
        return usable(self.collected.samples)


def train_lookback_from_run(
    run_dir: str | Path,
    out_file: str | Path,
    *,
    method: str = "vanilla",
    model: str | None = None,
    attention_model: str | None = None,
    variant: str = "cw",
    k: int = 10,
    label: str = "faithful",
    judge_model: str | None = None,
    test_share: float = TEST_SHARE,
    seed: int = 0,
    datasets: Sequence[str] | None = None,
    matrix: bool = False,
    on_start: Callable[[int], None] | None = None,
    on_sample: Callable[[LookbackSample], None] | None = None,
) -> LookbackRun:
    """What `verirag train lookback` runs: read the attention of a run's answers (`collect_samples`),
    fit the classifier on a split by question group, save it to `out_file` with what it was fitted
    for (model fingerprint, run, label, metrics), and with `matrix` compute Figure 6's cross-dataset
    cells. `on_start(total)` announces how many answers will be read."""
    from verirag.records import ResultStore

    if variant not in ("cw", "fc"):
        raise InputError(f"--variant must be cw or fc, got {variant!r}")
    run_dir = Path(run_dir)
    records = ResultStore(run_dir).load()
    if on_start is not None:
        on_start(
            sum(
                1
                for r in records
                if r.method == method
                and (model is None or r.model == model)
                and (not datasets or r.dataset in datasets)
            )
        )
    collected = collect_samples(
        run_dir,
        records,
        method=method,
        model=model,
        attention_model=attention_model,
        label=label,
        judge_model=judge_model,
        datasets=datasets,
        on_sample=on_sample,
    )
    samples = collected.samples
    result = train_lookback(samples, variant=variant, k=k, test_share=test_share, seed=seed)
    result.classifier.fingerprints["model"] = collected.model_fingerprint
    result.classifier.save(
        out_file,
        command="verirag train lookback",
        attention_model=collected.attention_model,
        trained_on={
            "run": str(run_dir),
            "model": collected.model,
            "method": method,
            "label": label,
            "datasets": sorted({s.dataset for s in usable(samples)}),
            "test_share": test_share,
            "seed": seed,
        },
        metrics={
            "train_auroc": result.train_auroc,
            "test_auroc": result.test_auroc,
            "test_auroc_interval": list(result.test_interval),
            "n_train": result.n_train,
            "n_test": result.n_test,
            "not_usable": len(collected.failed),
        },
    )
    cells = cross_dataset_cells(samples, k=k, test_share=test_share, seed=seed) if matrix else None
    return LookbackRun(collected, result, cells)
