"""The CalibRAG study (Jang et al., "Calibrated Decision-Making through LLM-Assisted Retrieval"):
Table 1 (calibration baselines) and Table 2 (rerankers).

    verirag eval configs/calibrag-small.yaml --out runs/calibrag-small

A config with `study: calibrag` (see configs/calibrag-small.yaml) runs:
1. Training data. `train.n` questions of `train.dataset` (split by group from that dataset's test
   questions, so no test question is trained on); every dataset's passages are pooled into one
   corpus per dataset and indexed (`retrieval`); the top `train.k` (default `k`) documents of each
   training question are labelled (`verirag_lab.train.forecaster_labels`, mode `train.mode`) into DIR/labels.jsonl.
2. Forecasters, all trained on those pairs, validated on held-out training questions: CalibRAG's
   cross-encoder on the labels of `train.mode` (DIR/forecaster): `decision` is the paper's (U's
   decision is right), `answer` (the shipped config's, a third of the cost) asks only whether the
   guidance itself is right, so Table 1 grades every confidence against both; the same
   cross-encoder on relevance labels (the document contains a reference answer) as the reranking
   baseline (DIR/relevance);
   the probe over the LLM's hidden states on the first `train.probe_pairs` pairs (DIR/probe). A
   folder already trained on the same pairs is loaded, not trained again.
3. Evaluation, zero-shot on each test dataset (one question per group): the surrogate user U
   decides from the guidance z and the stated confidence, and a judge (the match rule) grades
   the decision. Table 1 rows: Base (top-1 document, no confidence), Number and Linguistic
   (verbalized confidence on the top-1 document), Probe (the probe's f on the top-1 document),
   CalibRAG (f-reranked best document, f shown), CalibRAG-requery (stage 3 below `epsilon`).
   Metrics with bootstrap intervals over questions: accuracy, AUROC, ECE, Brier, NLL, %NA, and
   the paired difference of each row's ECE and AUROC to CalibRAG's on the same questions. NLL
   reads confidences clipped to [0.01, 0.99]: a stated 0 or 10 that is wrong would otherwise cost
   log(1e12) = 27.6 nats and the column would measure the clipping constant. An unreadable verbal
   confidence counts as 0.5 (uninformative) and is counted in its own column.
   Table 2 rows (which document the answer is built from): Base, LLM-rerank, the relevance
   cross-encoder, CalibRAG; the guidance's own accuracy and U's accuracy without a stated
   confidence, each with its paired difference to Base.

Everything the LLM computes goes through the request cache, so a killed study resumes where it
stopped; DIR/study.json holds every number and per-question record, DIR/report.html the tables
and reliability diagrams.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from verirag.errors import InputError
from verirag.learned.splits import split_by_group
from verirag_lab.experiments.schema import StrictModel, validate_config
from verirag_lab.experiments.studies.common import one_per_group, write_study

TABLE1_ROWS = ("base", "verbal_number", "verbal_linguistic", "probe", "calibrag", "calibrag_requery")
TABLE2_ROWS = ("base", "llm_rerank", "relevance_ce", "calibrag")
NOT_STATED = "not stated"
NLL_CLIP = 0.01


class TestDataset(StrictModel):
    name: str
    n: int = Field(50, ge=1)
    seed: int = 0
    path: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class TrainSpec(StrictModel):
    dataset: str = "nq"
    n: int = Field(100, ge=2)
    seed: int = 0
    path: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    mode: Literal["answer", "decision"] = "answer"
    k: int | None = Field(None, ge=1)  # documents labelled per training question (default: the study's k)
    epochs: int = Field(3, ge=1)
    batch_size: int = Field(16, ge=1)
    learning_rate: float = Field(3e-5, gt=0)
    val_share: float = Field(0.2, gt=0, lt=1)
    probe_pairs: int = Field(400, ge=0)  # 0: no probe row


class BootstrapSpec(StrictModel):
    n_resamples: int = Field(1000, ge=10)
    confidence: float = Field(0.95, gt=0, lt=1)
    seed: int = 0


class CalibragStudyConfig(StrictModel):
    study: Literal["calibrag"]
    name: str = "calibrag"
    model: str = "qwen2.5-0.5b"
    user_model: str | None = None  # the surrogate user (default: model)
    n_ctx: int = Field(4096, ge=512)
    retrieval: Literal["bm25", "dense", "hybrid"] = "bm25"
    k: int = Field(20, ge=2)
    epsilon: float = Field(0.3, ge=0, le=1)
    max_tokens: int = Field(48, ge=1)
    match: Literal["recall_or_substring", "recall", "substring", "em"] = "recall_or_substring"
    llm_rerank: bool = True
    train: TrainSpec = Field(default_factory=TrainSpec)
    test: list[TestDataset]
    bootstrap: BootstrapSpec = Field(default_factory=BootstrapSpec)

    @model_validator(mode="after")
    def _test_of_the_training_dataset(self):
        # its test questions are the training pool's held-out rows: loaded with train's seed and options
        for d in self.test:
            if d.name == self.train.dataset and d.path == self.train.path:
                for key in ("seed", "options"):
                    if key in d.model_fields_set and getattr(d, key) != getattr(self.train, key):
                        raise ValueError(
                            f"test entry {d.name!r} is the training dataset: its questions are held "
                            f"out of train's pool, so its {key} must be train's "
                            f"({getattr(self.train, key)!r}), not {getattr(d, key)!r}"
                        )
        return self


def parse_calibrag_study(raw: Any, source_name: str = "config") -> CalibragStudyConfig:
    return validate_config(CalibragStudyConfig, raw, source_name)


# ------------------------------------------------------------------------------------ data
def _load(name: str, n: int | None, seed: int, path: str | None, options: dict) -> list:
    from verirag_lab.datasets import load_dataset

    return load_dataset(name, path, n=n, seed=seed, **options)


def split_train_test(examples: list, n_train: int, seed: int) -> tuple[list, list]:
    """(train, test) by group: `n_train` groups for training, the rest for testing."""
    groups = [ex.group or ex.id for ex in examples]
    if len(set(groups)) <= n_train:
        raise InputError(f"{len(set(groups))} questions cannot give {n_train} training questions and a test split")
    test, train = split_by_group(groups, seed=seed, count=n_train)
    return [ex for ex, t in zip(examples, train) if t], [ex for ex, t in zip(examples, test) if t]


def relevance_label(doc_text: str, references: list[str]) -> int:
    """The relevance cross-encoder's label: the document contains a reference answer as whole
    words after normalisation (a character test would find "2" in "2012" in most documents)."""
    from verirag.metrics.qa import normalize_answer

    doc = f" {normalize_answer(doc_text)} "
    return int(any(ref and f" {ref} " in doc for ref in (normalize_answer(r) for r in references)))


# ------------------------------------------------------------------------------------ the run
def run_calibrag_study(
    cfg: CalibragStudyConfig, out_dir: str | Path, *, on_stage: Callable[[str], None] | None = None
) -> dict[str, Any]:
    from verirag.llm.factory import load_llm
    from verirag.retrieval.index import index_or_pooled
    from verirag_lab.train.forecaster_labels import label_pairs

    stage = on_stage or (lambda _s: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    stage("loading data")
    t = cfg.train
    same = [d for d in cfg.test if d.name == t.dataset and d.path == t.path]
    n_extra = max((d.n for d in same), default=0)
    train_pool = _load(t.dataset, t.n + n_extra, t.seed, t.path, t.options)
    train_ex, held = split_train_test(train_pool, t.n, t.seed)
    corpora = {t.dataset: train_pool}
    tests: dict[str, list] = {}
    for d in cfg.test:
        if d.name == t.dataset and d.path == t.path:
            tests[d.name] = one_per_group(held)[: d.n]
            if len(tests[d.name]) < d.n:
                stage(f"{d.name}: only {len(tests[d.name])} held-out test questions (asked for {d.n})")
        else:
            exs = _load(d.name, d.n, d.seed, d.path, d.options)
            corpora[d.name] = exs
            tests[d.name] = one_per_group(exs)[: d.n]
    indexes = {}
    for name, exs in corpora.items():
        stage(f"indexing {name} ({cfg.retrieval})")
        indexes[name] = index_or_pooled(exs, kind=cfg.retrieval, source=name)

    stage(f"loading {cfg.model}")
    llm = load_llm(cfg.model, n_ctx=cfg.n_ctx)
    user = load_llm(cfg.user_model, n_ctx=cfg.n_ctx) if cfg.user_model else llm

    labels = label_pairs(
        train_ex,
        indexes[t.dataset],
        llm,
        k=t.k or cfg.k,
        mode=t.mode,
        user_llm=user,
        match=cfg.match,
        max_tokens=cfg.max_tokens,
        out=out_dir / "labels.jsonl",
        progress=_every(stage, f"labelling {t.dataset} training pairs ({t.mode})", 20),
    )
    forecasters = train_all(cfg, labels, llm, out_dir, stage)

    stage("evaluating")
    per_dataset = {}
    for name, exs in tests.items():
        records = []
        tell = _every(stage, f"evaluating {name}", 20)
        for i, ex in enumerate(exs):
            records.append(evaluate_question(cfg, ex, indexes[name], llm, user, forecasters))
            tell(i + 1, len(exs))
        per_dataset[name] = records
    result = {
        "name": cfg.name,
        "config": cfg.model_dump(),
        "labels": labels.summary(),
        "forecasters": {k: _describe(f) for k, f in forecasters.items() if f is not None},
        "table1": [],
        "table2": [],
        "questions": per_dataset,
        "excluded": {name: _excluded(records) for name, records in per_dataset.items()},
        "llm_rerank_failures": sum(
            r["rows"].get("t2_llm_rerank", {}).get("failures", 0) for records in per_dataset.values() for r in records
        ),
    }
    retable(result, cfg)
    write_study(out_dir, result)
    from verirag_lab.experiments.report.calibrag import build_calibrag_report

    result["report"] = str(build_calibrag_report(out_dir, result))
    return result


def retable(result: dict[str, Any], cfg: CalibragStudyConfig | None = None) -> dict[str, Any]:
    """Fill result's Table 1 and Table 2 from its per-question records (`questions`), so that
    `verirag report DIR` recomputes the tables of a finished study without running anything."""
    if cfg is not None:
        boot, llm_rerank = cfg.bootstrap, cfg.llm_rerank
    else:  # only what the tables read: the stored config is a full dump, not what the user wrote
        stored = result.get("config") or {}
        boot = validate_config(BootstrapSpec, stored.get("bootstrap") or {}, "study.json config: bootstrap")
        llm_rerank = bool(stored.get("llm_rerank", True))
    result["table1"], result["table2"] = [], []
    for name, records in (result.get("questions") or {}).items():
        result["table1"] += table1(name, records, boot)
        result["table2"] += table2(name, records, boot, llm_rerank=llm_rerank)
    return result


def train_all(cfg: CalibragStudyConfig, labels, llm, out_dir: Path, stage) -> dict[str, Any]:
    """CalibRAG's forecaster, the relevance cross-encoder and the probe (loaded when a folder
    holds one trained on the same pairs)."""
    from verirag.learned.forecaster import Forecaster, data_fingerprint, load_forecaster
    from verirag_lab.train.forecaster import pairs, training_records
    from verirag_lab.train.guard import TrainingGuard

    t = cfg.train
    guard = TrainingGuard.for_training()  # one guard: the evaluation questions are read once
    kept = training_records(labels.records, guard)  # without evaluation data
    q, d, y, g = pairs(kept, guard)
    if len(set(y)) < 2:
        raise InputError(
            f"every labelled training pair has label {y[0] if y else None}: nothing to learn "
            "(more training questions, a larger k, or the other labelling mode)"
        )
    rel = [relevance_label(r.doc_text, r.references) for r in kept]

    def trained(folder: str, labels_: list[int], make, q_=q, d_=d, g_=g):
        path = out_dir / folder
        # reused only when trained on these pairs with these settings
        want = f"{data_fingerprint(q_, d_, labels_)}|{json.dumps(t.model_dump(), sort_keys=True)}"
        if (path / "forecaster.json").is_file():
            try:
                f = load_forecaster(path, llm=llm)
                if f.provenance.get("study_digest") == want:
                    stage(f"loaded {folder} (trained on these pairs with these settings)")
                    return f
            except InputError:
                pass
        if len(set(labels_)) < 2:
            stage(f"{folder}: one class only, not trained")
            return None
        try:
            f = make().fit(q_, d_, labels_, g_, progress=_every(stage, f"training {folder}"))
        except InputError as e:  # e.g. the training questions hold one class: that row is left out
            stage(f"{folder}: not trained ({e})")
            return None
        f.save(
            path, labels=str(out_dir / "labels.jsonl"), study=cfg.name, study_digest=want, k=t.k or cfg.k
        )  # the depth it was trained at (ForecastRerankStage warns beyond it)
        return f

    kw = {
        "epochs": t.epochs,
        "batch_size": t.batch_size,
        "learning_rate": t.learning_rate,
        "val_share": t.val_share,
        "seed": t.seed,
    }
    out: dict[str, Any] = {
        "calibrag": trained("forecaster", y, lambda: Forecaster(**kw)),
        "relevance_ce": trained("relevance", rel, lambda: Forecaster(**kw)),
    }
    out["probe"] = None
    if t.probe_pairs:
        from verirag.learned.forecaster import ProbeForecaster

        ranks = [r.rank for r in labels.records if r.label is not None]
        order = sorted(range(len(y)), key=lambda i: (ranks[i], i))  # the top ranks of every question first
        keep = sorted(order[: t.probe_pairs])
        out["probe"] = trained(
            "probe",
            [y[i] for i in keep],
            lambda: ProbeForecaster(llm, val_share=t.val_share, seed=t.seed),
            q_=[q[i] for i in keep],
            d_=[d[i] for i in keep],
            g_=[g[i] for i in keep],
        )
    return out


def _excluded(records: list[dict]) -> dict[str, int]:
    """Test questions that got no rows, by reason (nothing retrieved, no reference answer)."""
    out: dict[str, int] = {}
    for r in records:
        if r.get("error"):
            out[r["error"]] = out.get(r["error"], 0) + 1
    return out


def _every(stage, what: str, parts: int = 10):
    """A progress callback telling `stage` "what: i/total" about `parts` times in all."""
    last = [-1]

    def tell(i: int, total: int) -> None:
        step = max(1, total // parts)
        if i == total or i // step != last[0]:
            last[0] = i // step
            stage(f"{what}: {i}/{total}")

    return tell


def _describe(f) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "n_train": f.n_train_,
        "n_val": f.n_val_,
        "label_balance": f.label_balance_,
        "temperature": f.temperature_,
        "best_epoch": getattr(f, "best_epoch_", None),
        "validation": f.metrics_,
        "history": getattr(f, "history_", []),
    }  # the probe is one closed fit: no epochs


# ------------------------------------------------------------------------------------ one question
def _pct(p: float) -> str:
    return f"{100 * p:.0f}%"


def evaluate_question(cfg: CalibragStudyConfig, ex, index, llm, user, forecasters: dict) -> dict[str, Any]:
    """Every Table 1 and Table 2 row for one test question."""
    from verirag.awf.calibrag import generate_guidance, reformulate_query, user_decision, verbal_confidence
    from verirag.awf.llm_rerank import LLMRerank
    from verirag.awf.stages import ForecastRerankStage, run_stages
    from verirag.evaluation.ground_truth import matches
    from verirag.learned.forecaster import pair_text
    from verirag.metrics.abstention import is_abstention

    q = ex.question_with_history()
    refs = [r for r in ex.references if r.strip()]
    hits = index.search(q, k=cfg.k)
    rec: dict[str, Any] = {"id": ex.id, "question": q, "references": refs, "n_retrieved": len(hits), "rows": {}}
    if not hits or not refs:
        rec["error"] = "nothing retrieved" if refs else "no reference answer"
        return rec
    guidances: dict[str, Any] = {}

    def guidance(hit):
        if hit.passage.id not in guidances:
            guidances[hit.passage.id] = generate_guidance(llm, q, hit.passage, max_tokens=cfg.max_tokens)
        return guidances[hit.passage.id]

    def correct(text: str) -> int:
        return 0 if is_abstention(text) else int(matches(text, refs, cfg.match))

    def row(hit, confidence: float | None, shown: str, **extra) -> dict[str, Any]:
        g = guidance(hit)
        decision, error = user_decision(user, q, g, shown)
        out = {
            "doc": hit.passage.id,
            "retrieval_rank": hit.rank,
            "guidance": g.text,
            "guidance_correct": correct(g.text),
            "decision": decision,
            "correct": correct(decision),
            "na": int(is_abstention(decision)),
            "confidence": confidence,
            "shown": shown,
            **extra,
        }
        if error or g.error:
            out["error"] = "; ".join(e for e in (g.error, error) if e)
        return out

    top = hits[0]
    rows = rec["rows"]
    rows["base"] = row(top, None, NOT_STATED)
    for scale in ("number", "linguistic"):
        c = verbal_confidence(llm, guidance(top), scale=scale)
        shown = c.shown()  # "8/10", or the certainty term read ("Probable"), or "not stated"
        # an unreadable confidence is uninformative: 0.5 in the metrics, counted in `unreadable`
        rows[f"verbal_{scale}"] = row(
            top, 0.5 if c.value is None else c.value, shown, raw_confidence=c.raw, unreadable=int(c.value is None)
        )
    if forecasters.get("probe") is not None:
        p = float(forecasters["probe"].predict_proba([q], [pair_text(top.passage.title, top.passage.text)])[0])
        rows["probe"] = row(top, p, _pct(p))
    f = forecasters["calibrag"]
    if f is None:
        raise InputError("CalibRAG's forecaster could not be trained (see the stage log)")
    quiet = lambda _stage: None  # noqa: E731
    r = ForecastRerankStage(f, epsilon=0.0).run(q, hits, quiet)
    rows["calibrag"] = row(r.kept[0], r.confidence, _pct(r.confidence))
    rows["calibrag"]["reranked"] = r.info["reranked"][:5]
    # the pipeline's loop: below epsilon, one reformulated retrieval, the better pass kept
    r2 = run_stages(
        q,
        lambda query: index.search(query, k=cfg.k),
        [ForecastRerankStage(f, epsilon=cfg.epsilon)],
        quiet,
        reformulate=lambda question: reformulate_query(llm, question),
    )
    c2, requery = r2.results["forecast"].confidence, r2.requery or {}
    rows["calibrag_requery"] = row(
        r2.hits[0],
        c2,
        _pct(c2),
        reformulated=r2.requery is not None,
        query=requery.get("query"),
        used=requery.get("used"),
    )
    # Table 2: which document; U is told no confidence, so only the choice of document differs
    rows["t2_base"] = row(top, None, NOT_STATED)
    rows["t2_calibrag"] = row(r.kept[0], None, NOT_STATED)
    if forecasters.get("relevance_ce") is not None:
        ranked = ForecastRerankStage(forecasters["relevance_ce"], epsilon=0.0).score(q, hits)
        rows["t2_relevance_ce"] = row(ranked[0][0], None, NOT_STATED)
    if cfg.llm_rerank:
        rr = LLMRerank(llm)
        ranked = rr.rerank(q, hits)
        rows["t2_llm_rerank"] = row(ranked[0][0], None, NOT_STATED, relevance=ranked[0][1], failures=rr.failures)
    return rec


# ------------------------------------------------------------------------------------ tables
def _ci(statistic, *arrays, boot: BootstrapSpec) -> dict[str, float]:
    from verirag.metrics.stats import bootstrap_ci

    r = bootstrap_ci(statistic, *arrays, n_resamples=boot.n_resamples, confidence=boot.confidence, seed=boot.seed)
    out = {"value": r.estimate, "low": r.low, "high": r.high}
    if r.n_invalid:  # resamples where the statistic is undefined (e.g. AUROC of one class) are left out: say so
        out["invalid_resamples"] = r.n_invalid
    return out


def _auroc_or_nan(confidence: np.ndarray, correct: np.ndarray) -> float:
    """AUROC, undefined (NaN) when the sample holds one class."""
    from verirag.metrics.calibration import auroc

    return auroc(confidence, correct) if 0 < correct.sum() < len(correct) else math.nan


def _safe(fn):
    def wrapped(*a):
        try:
            v = fn(*a)
        except ValueError:
            return math.nan
        return float(v)

    return wrapped


def table1(dataset: str, records: list[dict], boot: BootstrapSpec) -> list[dict[str, Any]]:
    from verirag.metrics.calibration import brier, ece, nll

    out = []
    for name in TABLE1_ROWS:
        rows = [r["rows"][name] for r in records if name in r.get("rows", {})]
        if not rows:
            continue
        y = np.array([x["correct"] for x in rows], dtype=float)
        na = np.array([x["na"] for x in rows], dtype=float)
        entry: dict[str, Any] = {
            "dataset": dataset,
            "method": name,
            "n": len(rows),
            "accuracy": _ci(np.mean, y, boot=boot),
            "na": _ci(np.mean, na, boot=boot),
            "errors": sum(1 for x in rows if x.get("error")),
            "unreadable_confidence": sum(x.get("unreadable", 0) for x in rows),
        }
        if name != "base":
            c = np.array([x["confidence"] for x in rows], dtype=float)
            both = np.column_stack([c, y])
            entry["auroc"] = _ci(_safe(lambda a: _auroc_or_nan(a[:, 0], a[:, 1])), both, boot=boot)
            entry["ece"] = _ci(_safe(lambda a: ece(a[:, 0], a[:, 1], n_bins=10)), both, boot=boot)
            entry["brier"] = _ci(_safe(lambda a: brier(a[:, 0], a[:, 1])), both, boot=boot)
            entry["nll"] = _ci(_safe(lambda a: nll(np.clip(a[:, 0], NLL_CLIP, 1 - NLL_CLIP), a[:, 1])), both, boot=boot)
            # against the guidance's own correctness too: what an `answer`-mode forecaster learned
            g = np.array([x["guidance_correct"] for x in rows], dtype=float)
            both_g = np.column_stack([c, g])
            entry["auroc_answer"] = _ci(_safe(lambda a: _auroc_or_nan(a[:, 0], a[:, 1])), both_g, boot=boot)
            entry["ece_answer"] = _ci(_safe(lambda a: ece(a[:, 0], a[:, 1], n_bins=10)), both_g, boot=boot)
            entry["answer_accuracy"] = float(g.mean())
            entry["mean_confidence"] = float(c.mean())
            entry["confidences"] = c.tolist()
            entry["labels"] = y.astype(int).tolist()
        if name not in ("base", "calibrag"):
            entry.update(_paired_to_calibrag(records, name, boot))
        if name == "calibrag_requery":
            entry["reformulated"] = sum(int(x.get("reformulated", False)) for x in rows)
            entry["reformulated_used"] = sum(int(x.get("used") == "reformulated") for x in rows)
        out.append(entry)
    return out


def _paired_to_calibrag(records: list[dict], name: str, boot: BootstrapSpec) -> dict[str, Any]:
    """ECE and AUROC of row `name` minus CalibRAG's, resampling the questions both rows answered."""
    from verirag.metrics.calibration import ece

    pairs = [
        (r["rows"][name], r["rows"]["calibrag"])
        for r in records
        if name in r.get("rows", {}) and "calibrag" in r.get("rows", {})
    ]
    if not pairs:
        return {}
    a = np.array([[x["confidence"], x["correct"], c["confidence"], c["correct"]] for x, c in pairs], dtype=float)
    return {
        "ece_vs_calibrag": _ci(
            _safe(lambda m: ece(m[:, 0], m[:, 1], n_bins=10) - ece(m[:, 2], m[:, 3], n_bins=10)), a, boot=boot
        ),
        "auroc_vs_calibrag": _ci(
            _safe(lambda m: _auroc_or_nan(m[:, 0], m[:, 1]) - _auroc_or_nan(m[:, 2], m[:, 3])), a, boot=boot
        ),
    }


def table2(dataset: str, records: list[dict], boot: BootstrapSpec, *, llm_rerank: bool) -> list[dict[str, Any]]:
    out = []
    base = {r["id"]: r["rows"]["t2_base"] for r in records if "t2_base" in r.get("rows", {})}
    for name in TABLE2_ROWS:
        if name == "llm_rerank" and not llm_rerank:
            continue
        key = f"t2_{name}"
        pairs = [(r["rows"][key], base[r["id"]]) for r in records if key in r.get("rows", {}) and r["id"] in base]
        if not pairs:
            continue
        g = np.array([[a["guidance_correct"], b["guidance_correct"]] for a, b in pairs], dtype=float)
        d = np.array([[a["correct"], b["correct"]] for a, b in pairs], dtype=float)
        entry = {
            "dataset": dataset,
            "reranker": name,
            "n": len(pairs),
            "guidance_accuracy": _ci(lambda a: a[:, 0].mean(), g, boot=boot),
            "decision_accuracy": _ci(lambda a: a[:, 0].mean(), d, boot=boot),
            "na": float(np.mean([a["na"] for a, _ in pairs])),
            "top1_changed": float(np.mean([a["doc"] != b["doc"] for a, b in pairs])),
        }
        if name != "base":
            entry["guidance_vs_base"] = _ci(lambda a: (a[:, 0] - a[:, 1]).mean(), g, boot=boot)
            entry["decision_vs_base"] = _ci(lambda a: (a[:, 0] - a[:, 1]).mean(), d, boot=boot)
        out.append(entry)
    return out
