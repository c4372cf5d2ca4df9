"""`verirag train lookback|forecaster|verifier|stack|cascade`: fit the learned parts."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from verirag.cli._shared import MODEL_HELP, err, names, out, progress
from verirag.errors import InputError


def _ci(row: dict, key: str, sign: str = "") -> str:
    """A value with its 95% interval (`key_low`, `key_high`), or a dash."""
    if key not in row or row[key] is None or math.isnan(row[key]):
        return "–"
    return f"{row[key]:{sign}.3f} [{row[f'{key}_low']:{sign}.3f}, {row[f'{key}_high']:{sign}.3f}]"


def lookback(
    run_dir: Path = typer.Argument(..., help="A run directory written by `verirag eval`."),
    out_file: Path = typer.Option(..., "--out", help="Where to write the classifier (JSON)."),
    method: str = typer.Option("vanilla", help="The run's method whose generator's answers are read."),
    model: str | None = typer.Option(None, help="The run's model (needed when the method ran with several)."),
    attention_model: str | None = typer.Option(
        None, help="The model whose attention is read (default: hf: + the run's model, the same weights)."
    ),
    variant: str = typer.Option(
        "cw", help="cw (chunk-wise lookback ratios, the paper) or fc (full context, Lookback Lens)."
    ),
    k: int = typer.Option(10, help="Passages in the feature layout (fewer are zero-padded)."),
    label: str = typer.Option(
        "faithful",
        help="faithful (the run's V), correct, or judge (answer consistency from the LLM faithfulness judge).",
    ),
    judge_model: str | None = typer.Option(None, help="With --label judge: the judge's model."),
    test_share: float = typer.Option(0.4, help="Share of example groups held out for the test AUROC."),
    seed: int = typer.Option(0, help="Split seed."),
    dataset: list[str] | None = typer.Option(None, help="Only this dataset of the run (repeatable)."),
    matrix: bool = typer.Option(
        False,
        help="Also print Figure 6: CW and FC held-out AUROC with intervals, trained on one "
        "dataset and tested on each, and FC - CW paired.",
    ),
):
    """Train the lookback-ratio factuality classifier (predictor `lookback`) on a run's answers."""
    from verirag_lab.train.lookback import train_lookback_from_run

    with progress() as bar:
        task = bar.add_task("loading models…", total=None)
        run = train_lookback_from_run(
            run_dir,
            out_file,
            method=method,
            model=model,
            attention_model=attention_model,
            variant=variant,
            k=k,
            label=label,
            judge_model=judge_model,
            test_share=test_share,
            seed=seed,
            datasets=dataset,
            matrix=matrix,
            on_start=lambda total: bar.update(task, total=total or None),
            on_sample=lambda _s: bar.update(task, advance=1, description="reading attention"),
        )
    samples, failed, usable = run.collected.samples, run.collected.failed, run.usable
    for s in failed[:5]:
        err.print(f"[yellow]skipped[/yellow] {escape(s.dataset)}/{escape(s.example_id)}: {escape(s.error or '')}")
    if len(failed) > 5:
        err.print(f"[yellow]… and {len(failed) - 5} more without features or label[/yellow]")
    positives = sum(s.label for s in usable)
    out.print(
        f"{len(samples)} answers: {len(usable)} with features and a label ({positives} factual, "
        f"{len(usable) - positives} not)" + (f", {len(failed)} without (listed above)." if failed else ".")
    )
    result = run.result
    lo, hi = result.test_interval
    interval = "" if math.isnan(lo) else f" [{lo:.3f}, {hi:.3f}]"
    out.print(
        f"{variant} classifier: AUROC train {result.train_auroc:.3f} ({result.n_train}), held out "
        f"{result.test_auroc:.3f}{interval} ({result.n_test}) -> {out_file}"
    )
    if run.cells is not None:  # Figure 6: both variants, each cell with its interval and FC - CW paired
        table = Table(
            "train -> test",
            "train / test answers",
            "CW AUROC",
            "FC AUROC",
            "FC - CW",
            title="held-out AUROC, 95% intervals resampling question groups",
        )
        for c in run.cells:
            table.add_row(
                f"{c['train']} -> {c['test']}",
                f"{c['n_train']} / {c['n_test']}",
                _ci(c, "cw"),
                _ci(c, "fc"),
                _ci(c, "fc_minus_cw", "+"),
            )
        out.print(table)


def forecaster(
    data: str = typer.Argument(
        ...,
        help="Questions with reference answers: a dataset name (`verirag_lab.datasets`: "
        "nq, hotpotqa, ...) or a JSONL (question, references, passages).",
    ),
    out_dir: Path = typer.Option(..., "--out", help="Where to write the forecaster (a folder)."),
    index: Path | None = typer.Option(
        None,
        help="The index to retrieve from (`verirag index`); without it, "
        "the data's own passages are pooled into one index.",
    ),
    retrieval: str = typer.Option("bm25", help="Without --index: the pooled index's kind (bm25, dense, hybrid)."),
    k: int = typer.Option(20, help="Documents retrieved (and labelled) per question (the paper: 20)."),
    n: int | None = typer.Option(None, help="At most this many questions."),
    seed: int = typer.Option(0, help="Sampling seed (--n) and validation split seed."),
    model: str = typer.Option("qwen2.5-0.5b", help="The RAG model that writes the guidance: " + MODEL_HELP),
    mode: str = typer.Option(
        "answer",
        help="answer (the guidance itself is correct) or decision (the paper: a "
        "surrogate user decides from guidance + confidence).",
    ),
    user_model: str | None = typer.Option(None, help="With --mode decision: the surrogate user (default --model)."),
    match: str = typer.Option(
        "recall_or_substring",
        help="How a decision is judged: recall_or_substring, "
        "recall, substring, em, or llm (the correctness judge, --judge-model).",
    ),
    judge_model: str | None = typer.Option(None, help="With --match llm: the judge's model (default --model)."),
    labels: Path | None = typer.Option(
        None, help="The append-only label file (default OUT/labels.jsonl); a rerun resumes from it."
    ),
    kind: str = typer.Option(
        "cross_encoder",
        help="cross_encoder (fine-tuned MiniLM, the default) or probe "
        "(a logistic head over --model's own hidden states).",
    ),
    encoder: str = typer.Option("all-MiniLM-L6-v2", help="The cross-encoder's base model (a local folder)."),
    epochs: int = typer.Option(3, help="Training epochs at most (early stopping on the validation NLL)."),
    batch_size: int = typer.Option(16, help="Pairs per optimiser step."),
    learning_rate: float = typer.Option(3e-5, help="AdamW learning rate."),
    val_share: float = typer.Option(0.2, help="Share of the questions held out for validation."),
    temperature: bool = typer.Option(True, help="Fit a temperature on the validation split."),
    n_ctx: int = typer.Option(4096, help="Context window of the RAG model."),
):
    """Train CalibRAG's forecaster f(q, d) (Jang et al.): label (q, d) pairs with the RAG model, then
    fine-tune a cross-encoder to predict them; `verirag ask --forecaster DIR` uses it."""
    from verirag_lab.train.forecaster import train_forecaster_from_data

    with progress(remaining=True) as bar:
        task = bar.add_task("loading the questions", total=None)
        run = train_forecaster_from_data(
            data,
            out_dir,
            index=index,
            retrieval=retrieval,
            k=k,
            n=n,
            seed=seed,
            model=model,
            mode=mode,
            user_model=user_model,
            match=match,
            judge_model=judge_model,
            labels=labels,
            kind=kind,
            encoder=encoder,
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=learning_rate,
            val_share=val_share,
            temperature=temperature,
            n_ctx=n_ctx,
            on_stage=lambda text: bar.reset(task, total=None, description=text),
            progress=lambda _step, i, t: bar.update(task, completed=i, total=t),
        )
    s, f = run.labels.summary(), run.forecaster
    out.print(
        f"{s['pairs']} pairs from {s['questions']} questions ({s['computed']} labelled now, the rest from "
        f"{escape(str(run.label_file))}): {s['positive_share']:.1%} positive, {s['top1_positive_share']:.1%} "
        f"of the top-1 documents; {s['failed']} failed (label null, reasons in the file)"
    )
    for reason, count in s["skipped"].items():
        err.print(f"[yellow]skipped[/yellow] {count} questions: {escape(reason)}")
    if run.labels.unreadable_lines:
        err.print(
            f"[yellow]warning:[/yellow] {run.labels.unreadable_lines} unreadable lines in "
            f"{escape(str(run.label_file))} (a killed run's torn line): their pairs were labelled again"
        )
    m = f.metrics_
    out.print(
        f"forecaster -> {escape(str(out_dir))}: {f.n_train_} training pairs, {f.n_val_} validation pairs "
        f"(held-out questions); "
        + (f"best epoch {f.best_epoch_} of {len(f.history_)}, " if kind != "probe" else "")
        + f"temperature {f.temperature_:.3f}; validation AUROC {m['auroc']:.3f}, ECE {m['ece']:.3f}, "
        f"Brier {m['brier']:.3f}"
    )


def verifier(
    labels: list[Path] | None = typer.Argument(
        None,
        help="Labelled examples, one file or several: the compact "
        "records of `verirag label verifier`, or JSONL of resolved "
        "examples (question, answer, passages, label, recipe, group, "
        "sentence_labels; see verirag_lab.train.verifier).",
    ),
    out_dir: Path = typer.Option(..., "--out", help="Where to write the verifier (a folder)."),
    stack: Path | None = typer.Option(None, "--stack", hidden=True),  # moved: `verirag train stack RUN`
    encoder: str = typer.Option("all-MiniLM-L6-v2", help="The packaged encoder to fine-tune, or a model folder."),
    epochs: int = typer.Option(2, help="Training epochs at most (the best validation AUROC is kept)."),
    max_examples: int | None = typer.Option(None, help="Train on a seeded sample of at most this many examples."),
    train_layers: int = typer.Option(1, help="Top encoder layers fine-tuned (the saved adapter holds them)."),
    lora_rank: int = typer.Option(
        0,
        help="Train LoRA updates of this rank in those layers instead of their "
        "weights (0: off): a far smaller adapter, so every layer can learn.",
    ),
    balance: bool = typer.Option(
        True,
        "--balance/--no-balance",
        help="Weight each recipe's supported and "
        "unsupported examples equally, so a recipe's label balance is no shortcut.",
    ),
    compress_rank: int = typer.Option(
        0,
        help="Fine-tune those layers in full, then store their update as its best "
        "approximation of this rank (0: off): a small adapter that keeps most of "
        "full fine-tuning's quality.",
    ),
    batch_size: int = typer.Option(8, help="Examples per optimiser step."),
    learning_rate: float = typer.Option(1e-4, help="AdamW learning rate of the encoder layers."),
    max_length: int | None = typer.Option(None, help="Tokens of a (claim, chunk) pair (default: the encoder's)."),
    candidates: int = typer.Option(2, help="Chunks each claim reads in training: its lexically closest."),
    read_top: int | None = typer.Option(
        None,
        help="Chunks each claim reads when scoring (default: the "
        "--candidates it was trained and validated with; 0: every chunk).",
    ),
    val_share: float = typer.Option(0.2, help="Share of the question groups held out for validation."),
    seed: int = typer.Option(0, help="Sampling, split and initialisation seed."),
    joint: bool = typer.Option(
        False,
        help="Also read each claim's closest chunk together with the chunk of another passage that holds "
        "most of what it lacks, as one premise (support that spans two passages: multi-hop answers).",
    ),
    exclude_groups: Path | None = typer.Option(
        None,
        help="A file of question groups (DATASET:ID lines) no example of which trains or validates: "
        "questions kept for an evaluation (e.g. the local model's own answers).",
    ),
    value_swaps: float = typer.Option(
        0.0,
        help="Share of the supported examples that also give a negative with one number or date, party or "
        "negation changed against their passages (verirag_lab.train.value_swaps; 0: none).",
    ),
    value_swap_kinds: list[str] = typer.Option(
        ["number,party,negation"],
        "--value-swap-kinds",
        help="Which changes --value-swaps makes, taken in turn (comma-separated: number, party, negation; a "
        "kind named twice is taught about twice as often).",
    ),
    contrast: float = typer.Option(
        0.0,
        help="Weight of a pairwise term that ranks each supported answer above its --value-swaps copy, the "
        "two trained in one batch (0: off; the copies still train as negatives).",
    ),
    distill_target: str = typer.Option(
        "gold",
        help="What the distilled answers (the distill recipe's) teach: gold (their gold grade), judge (the "
        "LLM judge's verdict), agree (only those where the two agree) or soft (the judge's score as the "
        "target, validated against the gold grade); see verirag_lab.train.distill_targets.",
    ),
    distill_fold: int | None = typer.Option(
        None,
        help="Hold this fold of the distillation's question groups out (0..--distill-folds minus 1): a "
        "fold verifier, whose scores over that fold are out of sample, to cross-fit the stack "
        "(given to `verirag train stack` beside the full verifier; verirag_lab.train.cross_fit).",
    ),
    distill_folds: int = typer.Option(2, help="How many folds --distill-fold counts."),
    init_from: Path | None = typer.Option(
        None,
        help="Start from a saved verifier's layers and head (a folder, e.g. the shipped one: "
        "src/verirag/learned/shipped/verifier) instead of the packaged encoder: teaches it new kinds of "
        "question without starting over. Train at least as many layers as it did.",
    ),
):
    """Train the verifier (predictor `verifier`): a cross-encoder over a packaged sentence encoder
    that judges each answer sentence against the passages' chunks. (Stacking an eval run's signals
    is `verirag train stack`.) A killed training run again with the same --out resumes where it
    stopped (OUT/checkpoint)."""
    from verirag.learned.verifier import TrainedVerifier
    from verirag_lab.train.verifier import read_groups, train_verifier

    if stack is not None:
        raise InputError(f"stacking is its own command now: verirag train stack {stack} --out FILE")
    if not labels:
        raise InputError("give LABELS: the labelled examples to train on (`verirag label verifier --out FILE`)")
    v = TrainedVerifier(
        encoder,
        epochs=epochs,
        train_layers=train_layers,
        lora_rank=lora_rank,
        compress_rank=compress_rank,
        balance=balance,
        batch_size=batch_size,
        learning_rate=learning_rate,
        max_length=max_length,
        val_share=val_share,
        seed=seed,
        candidates=candidates,
        read_top=candidates if read_top is None else (read_top or None),
        joint=joint,
        init_from=init_from,
        contrast=contrast,
    )

    def epoch_line(h: dict) -> None:
        out.print(
            f"epoch {h['epoch']}: training loss {h['train_loss']:.4f}, validation loss {h['val_loss']:.4f}, "
            f"validation AUROC {h['val_auroc']:.3f}"
        )

    if (out_dir / "checkpoint" / "checkpoint.json").exists():
        out.print(
            f"{escape(str(out_dir / 'checkpoint'))} holds a killed run: resumed if it trained on these data and settings"
        )
    with progress(remaining=True) as bar:
        task = bar.add_task("reading the examples and the encoder", total=None)
        v = train_verifier(
            labels,
            verifier=v,
            max_examples=max_examples,
            exclude_groups=read_groups(exclude_groups) if exclude_groups else None,
            value_swaps=value_swaps,
            value_swap_kinds=names(value_swap_kinds),
            distill_target=distill_target,
            distill_fold=distill_fold,
            distill_folds=distill_folds,
            on_epoch=epoch_line,
            progress=lambda i, t: bar.update(task, completed=i, total=t, description="training"),
            provenance={"command": "verirag train verifier"},
            # a killed training resumes from OUT/checkpoint when run again with the same data and settings
            checkpoint=out_dir / "checkpoint",
        )
    v.save(out_dir)
    s, m = v.provenance["label_summary"], v.metrics_
    held = v.provenance.get("distill_held_out")
    if held:
        out.print(
            f"held out fold {held['fold']} of {held['folds']} of the distillation: {held['groups']} question "
            f"groups, {held['examples']} examples of any recipe"
        )
    refused = v.provenance["refused_as_evaluation_data"]
    out.print(
        "refused as evaluation data (held out whatever the options): "
        + (", ".join(f"{n} ({escape(why)})" for why, n in refused.items()) or "none")
        + "".join(f"; {escape(note)}" for note in v.provenance["guard_notes"])
    )
    out.print(
        f"{s['examples']} examples from {s['groups']} question groups, {s['supported_share']:.1%} supported; "
        "recipes: " + ", ".join(f"{k} {r['examples']}" for k, r in sorted(s["recipes"].items()))
    )
    out.print(
        f"verifier -> {escape(str(out_dir))} ({v.adapter_bytes_ / 1e6:.1f} MB over {escape(encoder)}): "
        f"{v.n_train_} training / {v.n_val_} validation examples; best epoch {v.best_epoch_} of "
        f"{len(v.history_)}, temperature {v.temperature_:.3f}; validation AUROC {m['auroc']:.3f}, "
        f"ECE {m['ece']:.3f}, Brier {m['brier']:.3f}"
    )


def stack(
    run_dir: Path = typer.Argument(
        ...,
        help="An eval run (a folder of `verirag eval`) whose answers several predictors scored, "
        "e.g. vanilla+verifier(verifier=DIR) and vanilla+self_check; or a `distill` labels file (JSONL: "
        "the pipeline's own answers to training questions with their signals, `make distill-labels`), "
        "scored here by the trained verifier.",
    ),
    out_file: Path = typer.Option(..., "--out", help="Where to write the stacked verifier (one JSON file)."),
    methods: list[str] = typer.Option(
        [], "--methods", help="Only this method's records (its label in the run; repeatable)."
    ),
    features: list[str] = typer.Option(
        [],
        "--features",
        help="Only these features (predictor names and signals, comma-separated; default: all the run has).",
    ),
    impute: bool = typer.Option(
        False,
        "--impute",
        help="Fill a missing feature value with the training mean (counted in the report) instead of refusing.",
    ),
    folds: int = typer.Option(5, help="Cross-validation folds (split by question group)."),
    label: str = typer.Option("faithful", help="faithful (AwF's V) or correct."),
    model: str | None = typer.Option(None, help="The run's model (needed when it has several)."),
    resamples: int = typer.Option(2000, help="Bootstrap resamples of the question groups."),
    c: float = typer.Option(
        1.0, "--c", help="The logistic regression's C (inverse L2 strength; smaller is stronger, for small runs)."
    ),
    seed: int = typer.Option(0, help="Fold and resampling seed."),
    verifier: str | None = typer.Option(
        None, help="With a labels file: the trained verifier folder that scores its answers (default: the shipped one)."
    ),
    cross_fit: list[str] = typer.Option(
        [],
        "--cross-fit",
        help="With a labels file: a fold verifier (repeat, one per fold; each trained by `verirag train "
        "verifier` holding one fold of the distillation out) whose scores of the fold it never saw make the "
        "verifier column, so that --verifier may have learned from these answers (verirag_lab.train.cross_fit).",
    ),
):
    """Stack what an eval run knows about its answers into one learned score (predictor
    `stacked(stack=FILE)`), and report it beside each signal alone, out of fold."""
    from verirag_lab.train.stack import BOOSTED, STACKED, train_stack_from_run

    if run_dir.is_file():
        from verirag_lab.datasets.registry import data_dir
        from verirag_lab.train.stack_labels import train_stack_from_labels

        if methods or impute or model or label != "faithful":
            raise InputError(
                "--methods, --impute, --model and --label are for eval runs; a labels file has one of each"
            )
        with progress() as bar:
            task = bar.add_task("scoring the answers with the verifier", total=None)
            result = train_stack_from_labels(
                run_dir,
                out_file,
                data_root=data_dir(),
                features=names(features) or None,
                verifier=verifier,
                cross_fit=cross_fit,
                folds=folds,
                seed=seed,
                resamples=resamples,
                C=c,
                say=lambda done, total: bar.update(task, completed=done, total=total),
            )
    elif verifier or cross_fit:
        raise InputError("--verifier and --cross-fit are for a labels file; an eval run's verifier is its method's")
    else:
        with err.status("cross-validating the stack…"):
            result = train_stack_from_run(
                run_dir,
                out_file,
                methods=methods,
                features=names(features),
                impute=impute,
                folds=folds,
                label=label,
                model=model,
                seed=seed,
                resamples=resamples,
                C=c,
            )
    r = result.report
    out.print(
        f"{r['answers']} answers to {r['groups']} question groups of {escape(r['model'])}: {r['positives']} "
        f"{label}; {r['folds']}-fold cross-validation by question group"
    )
    for f, why in r["absent"].items():
        out.print(f"[yellow]not in this run:[/yellow] {f} ({escape(why)})")
    for f, n in r["imputed"].items():
        out.print(f"[yellow]imputed:[/yellow] {f} missing for {n} answers (the training mean)")
    for f, n in r["predictor_errors"].items():
        out.print(f"[yellow]{f} failed on {n} answers[/yellow] (scored 0, as the run's records score them)")
    table = Table(
        "score",
        "AUROC",
        "stacked - it",
        "AwF PR-AUC",
        "stacked - it",
        "weight",
        title=f"out-of-fold, 95% intervals over question groups (random PR-AUC {r['pr_auc_random']:.3f})",
    )
    weights = r["weights"]
    for name, row in r["rows"].items():
        shown = {STACKED: "stacked (logistic, saved)", BOOSTED: "gradient boosting"}.get(name, name)
        w = f"{weights[name]:+.3f}" if name in weights else ""
        table.add_row(
            shown, _ci(row, "auroc"), _ci(row, "gain_auroc", "+"), _ci(row, "pr_auc"), _ci(row, "gain_pr_auc", "+"), w
        )
    out.print(table)
    if r["gradient_boosting_better"]:
        out.print(
            "[yellow]gradient boosting ranks better than the logistic stack here (paired interval above 0);"
            "[/yellow] the saved stack is the logistic regression: scikit-learn gives gradient boosting no "
            "saved form but pickle"
        )
    out.print(f"stacked verifier -> {escape(str(out_file))}; use it as vanilla+stacked(stack={escape(str(out_file))})")


def cascade(
    runs: list[Path] = typer.Argument(
        ...,
        help="Eval runs (folders of `verirag eval`, or their results.jsonl) whose answers both the "
        "trained verifier and the LLM judge scored, on held-out questions (never the dev set).",
    ),
    out_file: Path = typer.Option(..., "--out", help="Where to write the band (one JSON file)."),
    budget: float = typer.Option(0.2, help="Share of answers that may reach the LLM judge (the band's width)."),
    judge_method: str = typer.Option("vanilla+nli", "--judge-method", help="The runs' method of the LLM judge."),
    verifier: Path | None = typer.Option(None, help="The verifier the cascade runs (default: the shipped one)."),
    verifier_scores: list[Path] = typer.Option(
        [],
        "--verifier-scores",
        help="That verifier's scores of the runs' answers (files of benchmarks/rescore_own_answers.py), in place "
        "of the runs' verifier records: a retrained verifier's band without running the LLM again.",
    ),
):
    """Fit the cascade's band and calibrations (method `vanilla+cascade`): the verifier decides
    outside the band, the LLM judge inside it."""
    from verirag_lab.train.cascade import train_cascade_from_runs

    band = train_cascade_from_runs(
        runs,
        out_file,
        budget=budget,
        judge_method=judge_method,
        verifier=str(verifier) if verifier else None,
        verifier_scores=verifier_scores,
    )
    a, cf = band.fit_auroc_, band.provenance["cross_fitted"]
    out.print(
        f"{band.n_fit_} held-out answers: band [{band.band_[0]:.3f}, {band.band_[1]:.3f}] holds "
        f"{band.fit_share_:.1%} (budget {band.budget:.0%}); AUROC verifier {a['verifier']:.3f}, "
        f"{escape(band.judge)} {a['judge']:.3f}, cascade {a['cascade']:.3f} (cross-fitted by question "
        f"{cf['auroc']:.3f}, {cf['escalated_share']:.1%} escalated) -> {escape(str(out_file))}"
    )


def pruner(
    out_dir: Path = typer.Option(..., "--out", help="Where to write the pruner (a folder)."),
    encoder: str = typer.Option("all-MiniLM-L6-v2", help="The packaged encoder to fine-tune, or a model folder."),
    epochs: int = typer.Option(4, help="Training epochs at most (the best validation AUROC is kept)."),
    patience: int = typer.Option(1, help="Stop after this many epochs without a better validation AUROC."),
    train_layers: int = typer.Option(3, help="Top encoder layers fine-tuned (their update is stored compressed)."),
    compress_rank: int = typer.Option(16, help="Rank of the stored update of those layers (0: stored in full)."),
    recall: float = typer.Option(
        0.9,
        help="The fitted (conservative, default) threshold keeps an answering sentence in at least this share "
        "of the validation passages that hold one.",
    ),
    aggressive_recall: float | None = typer.Option(
        None, help="The same share for the published aggressive threshold (at most --recall; none if omitted)."
    ),
    retrieved_negatives: int = typer.Option(
        0,
        help="Per NQ training question, this many of its top-5 BM25 passages besides the gold one, in place of "
        "a random other question's passage "
        "(hard negatives, labelled like the gold passage).",
    ),
    doc_windows: int = typer.Option(
        0,
        help="Also this many paragraphs of the Debian documentation (training packages; make doc-corpus), each "
        "asked about one of its sentences, beside two other paragraphs of its document (issue 48).",
    ),
    same_place: bool = typer.Option(
        False,
        "--same-place",
        help="Also give each training question that names its passage's title another training passage moved "
        "to that title, every sentence a negative (issue 48: a corpus about one place names it everywhere).",
    ),
    max_examples: int | None = typer.Option(None, help="Train on the first this many examples (a smoke run)."),
    seed: int = typer.Option(0, help="Split and initialisation seed."),
):
    """Train the context pruner from NQ's and HotpotQA's training questions (VERIRAG_DATA_DIR):
    sentences that hold the answer or a supporting fact are kept, the others dropped. A killed
    training run again with the same --out resumes where it stopped (OUT/checkpoint)."""
    from verirag.learned.pruner import ContextPruner
    from verirag_lab.datasets.registry import data_dir
    from verirag_lab.train.guard import TrainingGuard
    from verirag_lab.train.pruner_examples import guarded_question, guarded_texts, pruner_examples

    guard = TrainingGuard.for_data(data_dir())
    examples = pruner_examples(
        data_dir(), seed=seed, guard=guard, retrieved=retrieved_negatives, docs=doc_windows, same_place=same_place
    )
    if max_examples is not None:
        examples = examples[:max_examples]
    guard.check(examples, question=guarded_question, texts=guarded_texts)
    refused = ", ".join(f"{n} ({why})" for why, n in sorted(guard.refused.items())) or "none"
    out.print(f"{len(examples)} training examples; refused as evaluation data: {refused}")
    p = ContextPruner(
        encoder,
        epochs=epochs,
        patience=patience,
        train_layers=train_layers,
        compress_rank=compress_rank,
        recall=recall,
        aggressive_recall=aggressive_recall,
        seed=seed,
    )
    with progress() as bar:
        task = bar.add_task("reading the examples and the encoder", total=None)
        # a killed training resumes from OUT/checkpoint when run again with the same data and settings
        p.fit(examples, say=lambda m: bar.update(task, description=escape(m)), checkpoint=out_dir / "checkpoint")
    for h in p.history_:
        out.print(f"epoch {h['epoch']}: training loss {h['train_loss']:.4f}, validation AUROC {h['val_auroc']:.3f}")
    p.save(
        out_dir,
        command="verirag train pruner",
        data="NQ-open oracle + HotpotQA training questions"
        + (f" (+{retrieved_negatives} BM25 hard negatives per NQ question)" if retrieved_negatives else "")
        + (f" + {doc_windows} Debian documentation paragraphs" if doc_windows else "")
        + (" + same-place negatives" if same_place else "")
        + "; instruct_qa_human questions and licence texts refused",
    )
    m = p.metrics_
    out.print(
        f"pruner -> {escape(str(out_dir))} ({p.adapter_bytes_ / 1e6:.1f} MB over {escape(encoder)}): "
        f"{p.n_train_} training / {p.n_val_} validation windows; best epoch {p.best_epoch_}; sentence AUROC "
        f"{m['auroc']:.3f}; threshold {p.threshold_:.3f} keeps an answering sentence in "
        f"{m['passages_keeping_an_answer']:.1%} of the passages holding one, and {m['words_kept']:.1%} of the words"
    )
    if "aggressive" in p.thresholds_:
        out.print(
            f"published thresholds: conservative {p.threshold_:.3f} (default), aggressive {p.thresholds_['aggressive']:.3f}"
        )
