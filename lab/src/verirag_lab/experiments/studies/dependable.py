"""The dependable-RAG study (Geissler et al., "Towards Dependable RAG Using Factual Confidence
Prediction": the conformal trust filter of retrieved chunks and the lookback-ratio factuality
classifiers): Table 1a, Figure 4, Table 1b, Figure 5, Figure 6.

    verirag eval configs/dependable-small.yaml --out runs/dependable-small

A config with `study: dependable` (see configs/dependable-small.yaml) runs, per dataset:
1. Retrieval certificates. The dataset's questions are split by group into calibration and test
   halves; all their passages are pooled into one corpus; for each retriever (bm25, dense, hybrid)
   the conformal trust filter is fitted on the calibration half at `alpha` (`calibrate_retrieval`)
   and checked on the test half (`held_out_check`): m1, m2 with standard errors and the coverage
   of correct chunks with its Clopper-Pearson interval (Table 1a); m1 and m2 on the calibration
   half for every alpha of `alphas` (Figure 4).
2. Answers with and without the filter. The first `generation.n` test questions are answered by
   Vanilla from the top K, and from the trusted chunks only (an empty trusted set: the top chunk,
   or as `on_untrusted` says); accuracy by the run's match rule, and answer consistency with the
   passages the answer was given (Table 1b), for the retrievers of `generation.retrievers`
   (default: all); the change against the retriever's m1 - (1 - alpha) (Figure 5). Consistency
   (`generation.consistency`) is K-Precision >= `consistency_threshold` (the instruct-qa paper's
   faithfulness metric, closest to human judgement after GPT-4 there; free, and a 0.5B model's
   own yes/no judgement does not separate right from wrong answers), or the LLM faithfulness
   judge `judge_model` (the paper's; worth it from ~1.5B up).
3. Answer certificates. The lookback ratios (attention model `lookback.attention_model`) of the
   filtered answers (Table 1b's, and up to `lookback.n` test questions per dataset answered from
   `lookback.retriever`'s trusted chunks) train the CW and FC classifiers on each dataset's
   training questions, tested on each dataset's test questions (Figure 6); labels = answer
   consistency (the paper's) or correctness (`lookback.label`).

Everything the models compute goes through the request cache, so a killed study resumes where it
stopped; DIR/study.json holds every number, DIR/report.html the tables and figures.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from verirag.errors import InputError
from verirag_lab.experiments.schema import StrictModel, validate_config
from verirag_lab.experiments.studies.common import one_per_group, write_study

# what a refusal says, read as one more passage by the K-Precision consistency
ABSTENTION_WORDS = (
    "I don't know. __DONT_KNOW__ No answer. The passages, documents, context or information "
    "provided do not contain, mention, give, provide or state the answer to this question; "
    "it cannot be determined."
)
RETRIEVERS = ("bm25", "dense", "hybrid")


class StudyDataset(StrictModel):
    name: str
    n: int | None = Field(None, ge=1)
    seed: int = 0
    path: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class StudyGeneration(StrictModel):
    model: str = "qwen2.5-0.5b"
    n: int = Field(40, ge=0)
    retrievers: list[Literal["bm25", "dense", "hybrid"]] | None = None  # default: every study retriever
    max_tokens: int = Field(48, ge=1)
    on_untrusted: Literal["keep-top", "no-context", "abstain"] = "keep-top"
    # answer consistency: k_precision (token overlap with the given passages), judge (the LLM
    # faithfulness judge `judge_model`) or none; unset: judge when a judge_model is named
    consistency: Literal["k_precision", "judge", "none"] | None = None
    consistency_threshold: float = Field(0.8, gt=0, le=1)  # K-Precision at which an answer is consistent
    judge_model: str | None = None
    match: Literal["recall_or_substring", "recall", "substring", "em"] = "recall_or_substring"
    n_ctx: int = Field(4096, ge=512)

    @model_validator(mode="after")
    def _consistency_by(self):
        if self.consistency is None:
            self.consistency = "judge" if self.judge_model else "k_precision"
        if self.consistency == "judge" and not self.judge_model:
            raise ValueError("consistency: judge needs a judge_model")
        if self.judge_model and self.consistency != "judge":
            raise ValueError(f"judge_model is only used with consistency: judge (not {self.consistency})")
        return self


class StudyLookback(StrictModel):
    attention_model: str | None = None  # default: hf: + the generation model
    # the classifiers' label: answer consistency (the paper's), correctness, or auto (consistency
    # when it is measured, else correctness)
    label: Literal["auto", "consistent", "correct"] = "auto"
    # test questions per dataset answered from `retriever`'s trusted chunks for the classifiers,
    # beyond Table 1b's (0: only Table 1b's filtered answers)
    n: int = Field(0, ge=0)
    retriever: Literal["bm25", "dense", "hybrid"] = "bm25"
    k: int = Field(10, ge=1)
    test_share: float = Field(0.4, gt=0, lt=1)


class DependableStudyConfig(StrictModel):
    study: Literal["dependable"]
    name: str = "dependable"
    datasets: list[StudyDataset]
    retrievers: list[Literal["bm25", "dense", "hybrid"]] = list(RETRIEVERS)
    k: int = Field(10, ge=1)
    alpha: float = Field(0.1, gt=0, lt=1)
    alphas: list[float] = Field(default_factory=lambda: [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5])
    beta: float = Field(0.0, ge=0, lt=1)
    holdout: float = Field(0.5, gt=0, lt=1)
    seed: int = 0
    generation: StudyGeneration = Field(default_factory=StudyGeneration)
    lookback: StudyLookback | None = Field(default_factory=StudyLookback)


def parse_dependable_study(raw: Any, source_name: str = "config") -> DependableStudyConfig:
    cfg = validate_config(DependableStudyConfig, raw, source_name)
    if any(not 0 < a < 1 for a in cfg.alphas):
        raise InputError(f"{source_name}: alphas must lie in (0, 1)")
    if cfg.lookback is not None and cfg.lookback.label == "consistent" and cfg.generation.consistency == "none":
        raise InputError(
            f"{source_name}: lookback.label: consistent needs generation.consistency (k_precision or judge)"
        )
    if cfg.lookback is not None and cfg.lookback.n and cfg.lookback.retriever not in cfg.retrievers:
        raise InputError(
            f"{source_name}: lookback.retriever {cfg.lookback.retriever!r} is not one of the "
            f"study's retrievers ({', '.join(cfg.retrievers)})"
        )
    return cfg


# ---------------------------------------------------------------------------------- the run
def run_dependable_study(
    cfg: DependableStudyConfig, out_dir: str | Path, *, on_stage: Callable[[str], None] | None = None
) -> dict[str, Any]:
    from verirag.retrieval.index import index_or_pooled
    from verirag_lab.datasets import load_dataset
    from verirag_lab.train.trust_calibration import calibrate_retrieval, held_out_check, split_holdout

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = on_stage or (lambda s: None)
    result: dict[str, Any] = {
        "name": cfg.name,
        "config": cfg.model_dump(),
        "table1a": [],
        "figure4": [],
        "table1b": [],
        "answers": [],
        "lookback_answers": [],
        "figure6": {},
        "seconds": {},
    }
    # this run's wall time per stage (a rerun reads the request cache: its seconds are small)
    seconds = result["seconds"]
    timed = partial(_timed, seconds)
    started = time.perf_counter()
    answerer = _Answerer(cfg) if cfg.generation.n else None
    for d in cfg.datasets:
        say(f"{d.name}: loading")
        examples = load_dataset(d.name, d.path, n=d.n, seed=d.seed, **d.options)
        cal, test = split_holdout(examples, cfg.holdout, cfg.seed)
        for kind in cfg.retrievers:
            say(f"{d.name}: indexing the pooled passages ({kind})")
            with timed(f"{d.name}/{kind}/index"):
                idx = index_or_pooled(examples, kind=kind, source=d.name)
            say(f"{d.name}: calibrating {kind} on {len(cal)} questions")
            with timed(f"{d.name}/{kind}/calibrate"):
                calib = calibrate_retrieval(cal, idx, k=cfg.k, alpha=cfg.alpha, beta=cfg.beta)
                held = held_out_check(calib, test, idx)
            result["table1a"].append(table1a_row(d.name, kind, cfg, calib, held))
            result["figure4"].extend(figure4_rows(d.name, kind, cfg.alphas, calib))
            if answerer is not None and kind in (cfg.generation.retrievers or cfg.retrievers):
                with timed(f"{d.name}/{kind}/answers"):
                    rows = answerer.answer_all(
                        questions_with_references(test, cfg.generation.n), idx, calib.filter, d.name, kind, say
                    )
                result["answers"].extend(rows)
                result["table1b"].append(
                    quality_row(rows, d.name, kind, calib.filter.calibration_.m1, cfg.alpha, cfg.seed)
                )
            lb = cfg.lookback
            if answerer is not None and lb is not None and lb.n and kind == lb.retriever:
                # more filtered answers for the classifiers only (Figure 6 needs hundreds)
                done = {r["example_id"] for r in result["answers"] if r["dataset"] == d.name and r["retriever"] == kind}
                extra = [ex for ex in questions_with_references(test, lb.n) if ex.id not in done]
                with timed(f"{d.name}/{kind}/lookback_answers"):
                    result["lookback_answers"].extend(
                        answerer.answer_all(extra, idx, calib.filter, d.name, kind, say, unfiltered_too=False)
                    )
        write_study(out_dir, result)
    if answerer is not None and cfg.lookback is not None:
        say("lookback: reading attention, training the classifiers")
        with timed("lookback/features_and_classifiers"):
            result["figure6"] = answerer.lookback_study(result["answers"] + result["lookback_answers"], cfg, say)
    seconds["total"] = round(time.perf_counter() - started, 1)
    write_study(out_dir, result)
    from verirag_lab.experiments.report.dependable import build_dependable_report

    result["report"] = str(build_dependable_report(out_dir, result))
    return result


@contextmanager
def _timed(seconds: dict[str, float], stage: str):
    """Add the block's wall time to `seconds[stage]`."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds[stage] = round(seconds.get(stage, 0.0) + time.perf_counter() - start, 1)


def table1a_row(dataset: str, kind: str, cfg: DependableStudyConfig, calib, held) -> dict[str, Any]:
    """Table 1a's row: the calibration's m1/m2 and the held-out check of one dataset x retriever."""
    c = calib.filter.calibration_
    return {
        "dataset": dataset,
        "retriever": kind,
        "alpha": cfg.alpha,
        "k": cfg.k,
        "n_calibration": c.n_questions,
        "cal_m1": c.m1,
        "cal_m1_se": c.m1_se,
        "cal_m2": c.m2,
        "cal_m2_se": c.m2_se,
        "n_test": held.n_questions,
        "test_m1": held.m1,
        "test_m1_se": held.m1_se,
        "test_m2": held.m2,
        "test_m2_se": held.m2_se,
        "coverage": held.coverage,
        "coverage_low": held.low,
        "coverage_high": held.high,
        "holds": held.holds(cfg.alpha),
        "threshold": calib.filter.threshold_,
        "s_thres": calib.s_thres,
        "warning": calib.warning,
        "skipped": calib.skipped,
    }


def figure4_rows(dataset: str, kind: str, alphas, calib) -> list[dict[str, Any]]:
    """Figure 4's points: m1 and m2 of the calibration refitted at each alpha."""
    rows = []
    for a in alphas:
        cov = calib.refit(a).calibration_
        point = {"dataset": dataset, "retriever": kind, "alpha": a}
        rows.append(point | {"m1": cov.m1, "m1_se": cov.m1_se, "m2": cov.m2, "m2_se": cov.m2_se})
    return rows


def questions_with_references(examples, n: int) -> list:
    """The first n questions with references, one per group."""
    return one_per_group([ex for ex in examples if ex.references])[:n]


def quality_row(
    rows: list[dict[str, Any]], dataset: str, retriever: str, cal_m1: float, alpha: float, seed: int
) -> dict[str, Any]:
    """Table 1b: accuracy and consistency without and with the filter, paired differences with
    95% bootstrap intervals over questions."""
    from verirag.metrics.stats import bootstrap_ci

    out: dict[str, Any] = {
        "dataset": dataset,
        "retriever": retriever,
        "n": len(rows),
        "m1_gap": cal_m1 - (1 - alpha),
        "mean_trusted": float(np.mean([r["n_trusted"] for r in rows])) if rows else math.nan,
        "empty_trusted": int(sum(r["n_trusted"] == 0 for r in rows)),
    }
    for metric in ("correct", "consistent", "consistency"):
        pairs = [
            (r["all"][metric], r["filtered"][metric])
            for r in rows
            if r["all"].get(metric) is not None and r["filtered"].get(metric) is not None
        ]
        if not pairs:
            continue
        a, f = (np.asarray(x, dtype=float) for x in zip(*pairs))
        out[f"{metric}_all"], out[f"{metric}_filtered"] = float(a.mean()), float(f.mean())
        out[f"{metric}_delta"] = float((f - a).mean())
        if len(pairs) > 1:
            ci = bootstrap_ci(lambda x, y: np.mean(y - x), a, f, n_resamples=1000, seed=seed)
            out[f"{metric}_delta_low"], out[f"{metric}_delta_high"] = ci.low, ci.high
        out[f"{metric}_n"] = len(pairs)
    return out


class _Answerer:
    """Answers with and without the filter, judges them, and reads their lookback ratios."""

    def __init__(self, cfg: DependableStudyConfig):
        from verirag.awf.generators.no_context import NoContextGenerator
        from verirag.awf.generators.vanilla import VanillaGenerator
        from verirag.llm.factory import load_llm

        g = cfg.generation
        self.cfg = cfg
        self.llm = load_llm(g.model, n_ctx=g.n_ctx)
        self.generator = VanillaGenerator(self.llm, max_tokens=g.max_tokens)
        self.no_context = NoContextGenerator(self.llm, max_tokens=g.max_tokens)
        self.judge = None
        if g.consistency == "judge":
            from verirag.evaluation.judges import FaithfulnessJudge

            self.judge = FaithfulnessJudge(load_llm(g.judge_model, n_ctx=g.n_ctx), mode="logprobs")
        self.ratios: dict[str, Any] = {}  # answer id -> LookbackRatios of the filtered answer

    def _one(self, question: str, passages, references, *, no_context: bool = False) -> dict[str, Any]:
        from verirag.awf.trace import Trace
        from verirag.errors import VeriragError
        from verirag.evaluation.ground_truth import matches
        from verirag.metrics.abstention import is_abstention

        if not passages and not no_context:  # abstain on an empty trusted set
            return {"answer": "", "correct": 0, "consistent": None, "error": None, "abstained": True}
        try:
            ans = Trace(question, passages).answer(self.no_context if no_context else self.generator)
        except VeriragError as e:
            return {"answer": "", "correct": 0, "consistent": None, "error": f"{type(e).__name__}: {e}"}
        text = ans.text
        row = {
            "answer": text,
            "error": ans.error,
            "correct": int(not is_abstention(text) and matches(text, list(references), self.cfg.generation.match)),
            "consistent": None,
            "_answer": ans,
        }
        row.update(self._consistency(question, passages, text, ans.error))
        return row

    def _consistency(self, question: str, passages, text: str, error) -> dict[str, Any]:
        """Answer consistency with the passages the answer was given: `consistent` (0/1) and the
        score behind it, `consistency` (K-Precision, or the judge's P(yes))."""
        from verirag.metrics.faithfulness import k_precision

        g = self.cfg.generation
        if g.consistency == "none" or not passages or not text or error:
            return {}
        if g.consistency == "k_precision":
            # declining is consistent: the words of a refusal count as one more passage (the
            # instruct-qa paper's rule), so "I don't know" scores 1 but a refusal that goes on to
            # claim something unsupported does not
            kp = k_precision(text, [p.text for p in passages] + [ABSTENTION_WORDS])
            return {"consistent": int(kp >= g.consistency_threshold), "consistency": kp}
        v = self.judge.judge(passages, text, question)
        # the judge's P(yes): a small judge's verdicts can be all "no"
        return {
            "consistent": None if v.verdict is None else int(v.verdict),
            "consistency": v.score,
            "judge_reason": v.reason,
        }

    def answer_all(self, examples, idx, trust, dataset: str, retriever: str, say, *, unfiltered_too: bool = True):
        """Rows of answers from the trusted chunks (and, with `unfiltered_too`, from the top K)."""
        rows = []
        on_empty = self.cfg.generation.on_untrusted
        for i, ex in enumerate(examples):
            say(f"{dataset}/{retriever}: answering {i + 1}/{len(examples)}")
            question = ex.question_with_history()
            hits = idx.search(question, k=self.cfg.k)
            mask = trust.trusted([h.score for h in hits]) if hits else np.zeros(0, bool)
            everything = [h.passage for h in hits]
            trusted = [h.passage for h, m in zip(hits, mask) if m]
            given = trusted or (everything[:1] if on_empty == "keep-top" else [])
            unfiltered = self._one(question, everything, ex.references) if unfiltered_too else {}
            filtered = self._one(question, given, ex.references, no_context=not given and on_empty == "no-context")
            row_id = f"{dataset}|{retriever}|{ex.id}"
            ans = filtered.pop("_answer", None)
            unfiltered.pop("_answer", None)
            if ans is not None and given and not ans.error:
                self.ratios[row_id] = (ans, given)
            rows.append(
                {
                    "id": row_id,
                    "dataset": dataset,
                    "retriever": retriever,
                    "example_id": ex.id,
                    "group": ex.group or ex.id,
                    "question": ex.question,
                    "references": list(ex.references),
                    "n_trusted": len(trusted),
                    "all": unfiltered,
                    "filtered": filtered,
                }
            )
        return rows

    def lookback_study(
        self, rows: list[dict[str, Any]], cfg: DependableStudyConfig, say: Callable[[str], None] = lambda s: None
    ) -> dict[str, Any]:
        from verirag.awf.predictors.lookback import reply_ratios
        from verirag.errors import VeriragError
        from verirag.llm.base import ATTENTIONS
        from verirag.llm.factory import load_llm
        from verirag_lab.train.lookback import LookbackSample, cross_dataset_cells

        lb = cfg.lookback
        spec = lb.attention_model or f"hf:{cfg.generation.model}"
        measured = cfg.generation.consistency != "none"
        label_of = lb.label if lb.label != "auto" else ("consistent" if measured else "correct")
        att = load_llm(spec, n_ctx=cfg.generation.n_ctx)
        att.require(ATTENTIONS)
        samples, errors = [], 0
        todo = [r for r in rows if r["id"] in self.ratios]
        for i, r in enumerate(todo):
            say(f"lookback: reading the attention of answer {i + 1}/{len(todo)}")
            pair = self.ratios[r["id"]]
            ans, given = pair
            label = r["filtered"].get(label_of)
            try:
                ratios = reply_ratios(att, ans, given)
            except VeriragError as e:
                errors += 1
                r["filtered"]["lookback_error"] = f"{type(e).__name__}: {e}"
                continue
            # one question's answers under several retrievers stay on one side of every split
            samples.append(
                LookbackSample(
                    r["dataset"], r["id"], f"{r['dataset']}|{r['group']}", None if label is None else int(label), ratios
                )
            )
        out = {
            "attention_model": spec,
            "label": label_of,
            "n_samples": len(samples),
            "errors": errors,
            "positives": int(sum(s.label or 0 for s in samples)),
        }
        # every train x test cell with 95% intervals, and FC - CW paired over its test answers;
        # the heatmaps' grids are their point values
        out["cells"] = cross_dataset_cells(samples, k=lb.k, test_share=lb.test_share, seed=cfg.seed)
        for variant in ("cw", "fc"):
            out[variant] = {}
            for c in out["cells"]:
                out[variant].setdefault(c["train"], {})[c["test"]] = c.get(variant, math.nan)
        return out
