"""The `verirag` command. Thin: parses, calls the library, prints.

User errors (VeriragError) print one clear line and exit non-zero, never a traceback.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from verirag.errors import InputError, VeriragError

app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, help="Retrieval-augmented QA that verifies its answers."
)
models_app = typer.Typer(add_completion=False, help="Model presets: list, fetch.")
app.add_typer(models_app, name="models")
train_app = typer.Typer(add_completion=False, help="Train learned components from an eval run.")
app.add_typer(train_app, name="train")
label_app = typer.Typer(add_completion=False, help="Make labelled training data from the benchmarks.")
app.add_typer(label_app, name="label")

out = Console()
err = Console(stderr=True)

PRESET_HELP = "Pipeline preset: local (qwen2.5-1.5b), fast (qwen2.5-0.5b), tiny (smollm2-135m)."
MODEL_HELP = (
    "Generator (and, by default, judge) model: a preset name, a .gguf path, "
    "openai:MODEL, http://host:port/v1#MODEL, or hf:ID."
)


def _pipeline(
    preset: str,
    model: str | None,
    judge: str | None,
    judge_model: str | None,
    threshold: float | None,
    k: int | None,
    fallback: str | None,
    retrieval: str | None = None,
    method: str | None = None,
    escalate_model: str | None = None,
    trust: str | None = None,
    on_untrusted: str | None = None,
    forecaster: str | None = None,
    epsilon: float | None = None,
):
    from verirag.awf.pipeline import Pipeline

    p = Pipeline.from_preset(
        preset,
        model=model,
        judge=judge,
        judge_model=judge_model,
        threshold=threshold,
        k=k,
        fallback=fallback,
        retrieval=retrieval,
        method=method,
        escalate_model=escalate_model,
        trust=trust,
        on_untrusted=on_untrusted,
        forecaster=forecaster,
        epsilon=epsilon,
    )
    return p


def _print_result(r, *, show_question: bool = True) -> None:
    colour = {"answered": "green", "abstained": "yellow", "fallback": "cyan", "escalated": "magenta"}[r.action]
    lines = []
    if show_question:
        lines.append(f"[bold]Q:[/bold] {escape(r.question)}")
    lines.append(f"[bold]A:[/bold] {escape(r.answer)}")
    verdict = "supported" if r.faithful else "not supported"
    at = (
        f" at threshold {r.threshold:.2f}"
        if r.threshold is not None
        else ": no threshold is certified, every answer acts"
    )
    lines.append(f"[bold]faithfulness[/bold] {r.score:.3f} ({verdict}{at}) -> [{colour}]{r.action}[/{colour}]")
    if r.action != "answered" and r.retrieved_answer:
        lines.append(f"[dim]answer from the passages was: {escape(r.retrieved_answer)}[/dim]")
    if r.supporting_passage is not None:
        sp = r.supporting_passage
        flat = " ".join(sp.text.split())
        excerpt = flat if len(flat) < 240 else flat[:240] + "…"
        label = "evidence" if r.faithful else "closest passage"
        lines.append(f"[bold]{label}[/bold] {escape(sp.id)} (support {sp.support_score:.3f}): {escape(excerpt)}")
    if r.forecast is not None:
        fc = r.forecast
        requery = (
            f"; below {fc['epsilon']:.2f} at first, so the query was reformulated to {escape(repr(fc['query']))}"
            if fc.get("reformulated")
            else ""
        )
        lines.append(
            f"[bold]forecast[/bold] {fc['confidence']:.3f} that an answer from {escape(', '.join(fc['kept']))} "
            f"is right (best of {len(fc['reranked'])} reranked){requery}"
        )
    if r.error:
        lines.append(f"[red]note:[/red] {escape(r.error)}")
    t = r.timings
    lines.append(
        "[dim]"
        + "  ".join(f"{k} {v:.2f}s" for k, v in t.items())
        + f"  model {escape(r.model)}  method {escape(r.method)}[/dim]"
    )
    out.print(Panel("\n".join(lines), border_style=colour))


def _threshold_option(text: str | None):
    """--threshold: (a float or a fitted ThresholdController, the threshold file's controller or None).
    An uncertified file gives a controller that makes every answer act; `_warn_fitted_mismatch`
    says so once the fallback is known."""
    from verirag.learned.threshold import parse_threshold

    return parse_threshold(text)


def _warn_fitted_mismatch(_fitted, p) -> None:
    for msg in p.threshold_warnings():
        err.print(f"[yellow]warning:[/yellow] {escape(msg)}")


@app.command()
def ask(
    question: str = typer.Argument(..., help="The question."),
    corpus: Path | None = typer.Option(None, help="Folder of .txt/.md files, a file, or a JSONL of passages."),
    index: Path | None = typer.Option(None, help="An index built by `verirag index`."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
    preset: str = typer.Option("local", help=PRESET_HELP),
    model: str | None = typer.Option(None, help=MODEL_HELP),
    judge: str | None = typer.Option(
        None,
        help="Entailment model of methods that use one (+nli): llm (default) or "
        "hf:NLI_MODEL; an error for methods without one.",
    ),
    judge_model: str | None = typer.Option(None, help="Model of the LLM judge (default: --model)."),
    threshold: str | None = typer.Option(
        None, help="Verdict threshold on the score (default 0.5), or a threshold file written by `verirag calibrate`."
    ),
    k: int | None = typer.Option(None, help="Passages to retrieve (default 5)."),
    fallback: str | None = typer.Option(None, help="Below the threshold: abstain (default), no-rag or escalate."),
    escalate_model: str | None = typer.Option(None, help="The larger model for --fallback escalate."),
    method: str | None = typer.Option(
        None,
        help="AwF method: vanilla+verifier (default: the shipped trained "
        "verifier; vanilla+nli when --judge is given), vanilla+self_check, vanilla+nli, instructrag+pre_answering, intrinsic, ... (`verirag methods`).",
    ),
    retrieval: str | None = typer.Option(None, help="hybrid (default), bm25 or dense."),
    trust: Path | None = typer.Option(
        None, help="A conformal trust filter (`verirag calibrate-retrieval`): only trusted chunks reach the model."
    ),
    on_untrusted: str | None = typer.Option(
        None, help="When no chunk is trusted: abstain (default), no-context or keep-top."
    ),
    forecaster: Path | None = typer.Option(
        None,
        help="CalibRAG's forecaster (`verirag train forecaster`): "
        "rerank 20 documents by the forecast that an answer from each is "
        "right, answer from the best, and report that forecast.",
    ),
    epsilon: float | None = typer.Option(
        None,
        help="With --forecaster: below this forecast (default 0.3) the "
        "query is reformulated and retrieval runs once more.",
    ),
):
    """Answer QUESTION from a corpus, verify the answer, and act on the verdict."""
    if (corpus is None) == (index is None):
        raise InputError("give exactly one of --corpus PATH or --index DIR")
    if not question.strip():
        raise InputError("the question is empty")
    if epsilon is not None and forecaster is None:
        raise InputError("--epsilon is the forecaster's re-query threshold: give --forecaster DIR too")
    threshold, fitted = _threshold_option(threshold)
    p = _pipeline(
        preset,
        model,
        judge,
        judge_model,
        threshold,
        k,
        fallback,
        retrieval,
        method,
        escalate_model,
        trust=str(trust) if trust else None,
        on_untrusted=on_untrusted,
        forecaster=str(forecaster) if forecaster else None,
        epsilon=epsilon,
    )
    with err.status("indexing…" if corpus else "loading index…"):
        p.index(corpus) if corpus is not None else p.load_index(index)
    for path, reason in getattr(p, "skipped", []):
        err.print(f"[yellow]skipped[/yellow] {escape(str(path))}: {escape(reason)}")
    if fitted is not None:
        _warn_fitted_mismatch(fitted, p)
    with err.status("answering and verifying…") as status:
        r = p.ask(question, on_stage=lambda stage: status.update(f"{stage}…"))
    if json_out:
        print(json.dumps(r.to_dict(), ensure_ascii=False))
    else:
        _print_result(r)


def _print_verified(v) -> None:
    colour = "green" if v.faithful else ("red" if v.error is None else "yellow")
    verdict = "supported" if v.faithful else ("not verified" if v.score is None else "not supported")
    lines = [f"[bold]Q:[/bold] {escape(v.question)}", f"[bold]A:[/bold] {escape(v.answer)}"]
    for s in v.sentences or []:  # a sentence-level verifier: each sentence, the unsupported ones marked
        weak = v.threshold is not None and s.score < v.threshold
        mark = "[red]unsupported[/red]" if weak else "[green]supported[/green]"
        lines.append(f"  {mark} {s.score:.3f} ({escape(str(s.supporting_passage))}): {escape(s.text)}")
    lines.append(
        f"[bold]faithfulness[/bold] {'–' if v.score is None else f'{v.score:.3f}'} "
        f"([{colour}]{verdict}[/{colour}]"
        + (f" at threshold {v.threshold:.2f})" if v.threshold is not None else ": no threshold is certified)")
    )
    if v.supporting_passage is not None:
        sp = v.supporting_passage
        flat = " ".join(sp.text.split())
        label = "evidence" if v.faithful else "closest passage"
        support = "–" if sp.support_score is None else f"{sp.support_score:.3f}"
        lines.append(
            f"[bold]{label}[/bold] {escape(sp.id)} (support {support}): "
            f"{escape(flat if len(flat) < 240 else flat[:240] + '…')}"
        )
    for note in ([v.error] if v.error else []) + v.warnings:
        lines.append(f"[red]note:[/red] {escape(note)}")
    lines.append(
        "[dim]"
        + "  ".join(f"{k} {t:.2f}s" for k, t in v.timings.items())
        + f"  method {escape(v.method)}  judge {escape(v.judge)}[/dim]"
    )
    out.print(Panel("\n".join(lines), border_style=colour))


@app.command()
def verify(
    log: Path | None = typer.Argument(
        None,
        help="A JSONL log of your system's questions, answers and "
        "retrieved contexts, in RAGAS or DeepEval field names (or mapped).",
    ),
    out_dir: Path | None = typer.Option(
        None, "--out", help="With LOG: results.jsonl (one line per answer, resumable), summary.json, report.html."
    ),
    question: str | None = typer.Option(None, help="One answer's question (with --answer, --passages)."),
    answer: str | None = typer.Option(None, help="The answer to verify."),
    passages: list[Path] = typer.Option(
        [],
        "--passages",
        help="The answer's passages: a text file per passage (repeatable), a folder of them, or a JSONL of passages.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object (the result, or the summary)."),
    preset: str = typer.Option("local", help=PRESET_HELP),
    model: str | None = typer.Option(None, help=MODEL_HELP),
    method: str | None = typer.Option(
        None,
        help="A GENERATOR+PREDICTOR method whose predictor verifies "
        "(default: vanilla+verifier, the shipped trained verifier, as everywhere; `verirag methods`).",
    ),
    judge: str | None = typer.Option(None, help="Entailment model of +nli: llm (default) or hf:NLI_MODEL."),
    threshold: str | None = typer.Option(
        None, help="Verdict threshold on the score (default 0.5), or a threshold file written by `verirag calibrate`."
    ),
    question_field: str | None = typer.Option(None, help="The log's question field (default: detected)."),
    answer_field: str | None = typer.Option(None, help="The log's answer field."),
    contexts_field: str | None = typer.Option(None, help="The log's retrieved contexts field."),
    reference_field: str | None = typer.Option(None, help="The log's reference (gold) answer field."),
    label_field: str | None = typer.Option(
        None,
        help="A human label field (true/false, 0/1, supported/unsupported): AUROC and precision/recall against it.",
    ),
    limit: int | None = typer.Option(None, help="Only the first N lines of the log (a quick look)."),
):
    """Verify another system's answers: one (--question, --answer, --passages) or a whole log
    (LOG --out DIR), against the contexts each was answered from."""
    from verirag import answer_log as al
    from verirag.awf.defaults import DEFAULT_METHOD
    from verirag.errors import BackendError
    from verirag.jsonio import strict_json

    single = question is not None or answer is not None or bool(passages)
    if (log is None) == (not single):
        raise InputError("give a LOG.jsonl (with --out DIR), or one answer with --question, --answer and --passages")
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    threshold, fitted = _threshold_option(threshold)
    if single:
        if not (question and answer and passages):
            raise InputError("one answer needs --question, --answer and --passages FILE")
        if out_dir is not None:
            raise InputError("--out is where a log's results go; one answer is printed (--json for JSON)")
        found, skipped = al.read_passages(passages)
        for path, reason in skipped:
            err.print(f"[yellow]skipped[/yellow] {escape(str(path))}: {escape(reason)}")
    else:
        if out_dir is None:
            raise InputError("give --out DIR: where the results, summary and report of the log go")
        logged = al.read_answer_log(
            log,
            question_field=question_field,
            answer_field=answer_field,
            contexts_field=contexts_field,
            reference_field=reference_field,
            label_field=label_field,
        )
    method = method or DEFAULT_METHOD
    p = _pipeline(preset, model, judge, None, threshold, None, None, method=method)
    if fitted is not None:
        _warn_fitted_mismatch(fitted, p)
    if single:
        with err.status("verifying…") as status:
            v = p.verify(question, answer, found, on_stage=lambda stage: status.update(f"{stage}…"))
        if json_out:
            print(json.dumps(strict_json(v.to_dict()), ensure_ascii=False))
        else:
            _print_verified(v)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    n = len(logged.entries) if limit is None else min(limit, len(logged.entries))
    try:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task("loading the model…", total=n)
            run = al.run_log(
                p,
                logged,
                out_dir,
                limit=limit,
                on_progress=lambda i, _n, _r: bar.update(task, completed=i, description="verifying"),
            )
    except BackendError:
        err.print(
            f"the answers verified so far are kept in {escape(str(out_dir / al.RESULTS_FILE))}: "
            "the same command resumes"
        )
        raise
    summary, report = al.write_summary(logged, run.records, out_dir)
    if json_out:
        print(json.dumps(strict_json(summary), ensure_ascii=False))
        return
    out.print(
        f"{run.written} answers verified now, {run.already_done} already done"
        + (f", {run.unreadable_lines} torn lines of a killed run ignored" if run.unreadable_lines else "")
        + f" (format {escape(logged.fields.format)})."
    )
    for line in al.summary_lines(summary):
        out.print(escape(line))
    out.print(f"results: {escape(str(out_dir / al.RESULTS_FILE))}; report: {escape(str(report))}")


@app.command("calibrate-retrieval")
def calibrate_retrieval_cmd(
    data: str = typer.Argument(
        ...,
        help="A dataset name (`verirag.datasets`: nq, hotpotqa, ...) or a JSONL with "
        "question, references and source (the reference's document).",
    ),
    out_file: Path = typer.Option(..., "--out", help="Where to write the trust filter (JSON)."),
    index: Path | None = typer.Option(
        None,
        help="The index to calibrate (`verirag index`); without it, the "
        "dataset's own passages are pooled into one index.",
    ),
    retrieval: str = typer.Option("bm25", help="Without --index: the pooled index's kind (bm25, dense, hybrid)."),
    alpha: float = typer.Option(0.1, help="Error rate: a correct chunk is trusted with probability >= 1 - alpha."),
    beta: float = typer.Option(
        0.0,
        help="Chunk ground truth: 0 = by source only; else the beta-quantile of "
        "wrong-source ROUGE-L a right-source chunk must reach (the paper: 0.99 on NQ).",
    ),
    k: int = typer.Option(10, help="Chunks retrieved per question (use the same k when asking)."),
    n: int | None = typer.Option(None, help="At most this many calibration questions."),
    seed: int = typer.Option(0, help="Sampling seed with --n and --holdout."),
    holdout: float = typer.Option(
        0.0, help="Keep this share of the questions (by group) out of the fit and check the guarantee on them."
    ),
):
    """Fit a conformal trust filter for a retriever (Geissler et al., section 3.2) and save it."""
    from verirag.retrieval.index import index_or_pooled
    from verirag.train.trust_calibration import calibrate_retrieval, split_holdout

    examples = _calibration_examples(data, n, seed)
    with err.status("indexing the pooled passages…" if index is None else "loading the index…"):
        idx = index_or_pooled(examples, index, kind=retrieval, source=str(data))  # held-out questions' too
    examples, held = split_holdout(examples, holdout, seed)
    with err.status(f"retrieving the top {k} for {len(examples)} questions…"):
        cal = calibrate_retrieval(examples, idx, k=k, alpha=alpha, beta=beta)
    cal.filter.save(out_file)
    s = cal.summary()
    out.print(
        f"trust filter -> {escape(str(out_file))}: {idx.kind}, K={k}, alpha={alpha:g}, beta={beta:g}; "
        f"{s['n_questions']} questions, {s['n_correct_chunks']} correct chunks; trusted iff normalised "
        f"score >= {s['threshold']:.4f}; on calibration m1 = {s['calibration_m1']:.3f} "
        f"(SE {s['calibration_m1_se']:.3f}), m2 = {s['calibration_m2']:.3f}"
    )
    for reason, count in s["skipped"].items():
        err.print(f"[yellow]skipped[/yellow] {count} questions: {escape(reason)}")
    if cal.warning:
        err.print(f"[yellow]warning:[/yellow] {escape(cal.warning)}")
    if held:
        from verirag.train.trust_calibration import held_out_check

        h = held_out_check(cal, held, idx)
        verdict = "holds" if h.holds(alpha) else "does NOT hold"
        out.print(
            f"held out ({h.n_questions} questions, {h.n_correct} correct chunks): {h.coverage:.3f} of correct "
            f"chunks trusted [95% CI {h.low:.3f}, {h.high:.3f}] against 1 - alpha = {1 - alpha:.3f}: the "
            f"guarantee {verdict}; m1 = {h.m1:.3f} (SE {h.m1_se:.3f}), m2 = {h.m2:.3f} (SE {h.m2_se:.3f})"
        )


def _calibration_examples(data: str, n: int | None, seed: int):
    from verirag.datasets import load_dataset
    from verirag.datasets.registry import dataset_names

    if data in dataset_names():
        return load_dataset(data, n=n, seed=seed)
    path = Path(data)
    if not path.is_file():
        raise InputError(f"{data!r} is neither a dataset name ({', '.join(dataset_names())}) nor a file")
    return load_dataset("jsonl", path, n=n, seed=seed)


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@app.command()
def serve(
    index: Path | None = typer.Option(
        None, help="An index built by `verirag index` (needed by /v1/ask and /v1/retrieve; /v1/verify needs none)."
    ),
    preset: str = typer.Option("local", help=PRESET_HELP),
    model: str | None = typer.Option(None, help=MODEL_HELP),
    method: str | None = typer.Option(None, help="Default AwF method of /v1/ask (requests may name another)."),
    verify_method: str | None = typer.Option(
        None,
        help="Default method of /v1/verify: its predictor judges answers other systems produced "
        "(default: vanilla+verifier, the shipped trained verifier, as everywhere).",
    ),
    judge: str | None = typer.Option(None, help="Entailment model of +nli methods: llm or hf:NLI_MODEL."),
    judge_model: str | None = typer.Option(None, help="Model of the LLM judge (default: --model)."),
    threshold: str | None = typer.Option(None, help="Default verdict threshold, or a threshold file."),
    k: int | None = typer.Option(None, help="Passages to retrieve (default 5)."),
    fallback: str | None = typer.Option(None, help="Below the threshold: abstain, no-rag or escalate."),
    escalate_model: str | None = typer.Option(None, help="The larger model for --fallback escalate."),
    retrieval: str | None = typer.Option(None, help="hybrid (default), bm25 or dense (for a new index)."),
    max_answer_tokens: int | None = typer.Option(
        None, help="Longest answer in tokens (default: each method's own); a cap bounds each request's time."
    ),
    host: str = typer.Option("127.0.0.1", help="Address to bind; anything but loopback needs --api-key."),
    port: int = typer.Option(8000, help="Port to bind."),
    api_key: str | None = typer.Option(
        None, envvar="VERIRAG_API_KEY", show_envvar=True, help="Bearer token every data route requires."
    ),
    queue_size: int = typer.Option(16, help="Requests that may wait for the model; more get 429."),
    queue_timeout: float = typer.Option(120.0, help="Seconds a request may wait for the model (then 503)."),
    timeout: float = typer.Option(300.0, help="Seconds a request may run (then 504)."),
    max_body: int = typer.Option(1 << 20, help="Largest request body in bytes (then 413)."),
    log_level: str = typer.Option("info", help="uvicorn log level."),
):
    """Run verirag as an HTTP service (FastAPI + uvicorn): ask, verify, retrieve, a web page at /."""
    for name, value in (("--queue-timeout", queue_timeout), ("--timeout", timeout), ("--max-body", max_body)):
        if value <= 0:
            raise InputError(f"{name} must be positive, got {value:g}")
    if queue_size < 0:
        raise InputError(f"--queue-size must be 0 or more, got {queue_size}")
    if not 0 < port < 65536:
        raise InputError(f"--port must be in 1..65535, got {port}")
    if host not in LOOPBACK and not api_key:
        raise InputError(
            f"binding {host} exposes the service beyond this machine: set a token with --api-key or VERIRAG_API_KEY"
        )
    if index is not None and not index.is_dir():
        raise InputError(f"no index at {index}: build one with `verirag index PATH --out DIR`")
    threshold_value, fitted = _threshold_option(threshold)
    # an OpenAI-compatible backend gives up (and is retried twice) within the request's timeout,
    # so a stalled backend frees the model thread soon after the client got its 504
    os.environ.setdefault("VERIRAG_OPENAI_TIMEOUT", f"{max(5.0, timeout / 3):g}")
    import uvicorn

    from verirag.server import ServiceConfig, VeriragService, create_app

    overrides = {
        "model": model,
        "method": method,
        "judge": judge,
        "judge_model": judge_model,
        "k": k,
        "fallback": fallback,
        "retrieval": retrieval,
        "escalate_model": escalate_model,
        "max_answer_tokens": max_answer_tokens,
    }
    cfg = ServiceConfig(
        preset=preset,
        index=index,
        overrides={a: b for a, b in overrides.items() if b is not None},
        threshold=threshold_value,
        api_key=api_key,
        queue_size=queue_size,
        verify_method=verify_method,
        queue_timeout=queue_timeout,
        request_timeout=timeout,
        max_body_bytes=max_body,
    )
    service = VeriragService(cfg)
    if fitted is not None:
        _warn_fitted_mismatch(fitted, service.pipeline)
    err.print(
        f"verirag serving on http://{host}:{port}  (web page /, API docs /docs, "
        f"{'token required' if api_key else 'no token'}; loading {escape(service.model_id)}…)"
    )
    # on SIGTERM a request admitted last may still wait and run its full time: let it finish
    uvicorn.run(
        create_app(service),
        host=host,
        port=port,
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=queue_timeout + timeout + 10,
    )


@app.command("index")
def index_cmd(
    path: Path = typer.Argument(..., help="Folder of .txt/.md files, a file, or a JSONL of passages."),
    out_dir: Path = typer.Option(..., "--out", help="Where to write the index."),
    retrieval: str = typer.Option("hybrid", help="hybrid, bm25 or dense."),
    chunk_words: int = typer.Option(200, help="Words per chunk."),
    overlap_words: int = typer.Option(20, help="Words shared by consecutive chunks."),
):
    """Build a reusable index; `verirag ask --index DIR` uses it."""
    from verirag.retrieval import Index, load_corpus

    loaded = load_corpus(path)
    for p, reason in loaded.skipped:
        err.print(f"[yellow]skipped[/yellow] {escape(str(p))}: {escape(reason)}")
    with err.status(f"indexing {len(loaded.passages)} documents…"):
        idx = Index.build(loaded.passages, kind=retrieval, chunk_words=chunk_words, overlap_words=overlap_words)
        idx.save(out_dir)
    out.print(f"indexed {len(loaded.passages)} documents as {len(idx)} passages ({retrieval}) -> {out_dir}")


@app.command()
def methods():
    """List the AwF methods `--method` accepts (unified methods, generators, GENERATOR+PREDICTOR)."""
    from verirag.awf.spec import method_names

    for name in method_names():
        out.print(name)


@models_app.command("list")
def models_list(json_out: bool = typer.Option(False, "--json", help="Print JSON.")):
    """Show presets, where each would be loaded from, and whether it is present."""
    from verirag.models import list_models

    rows = list_models()
    if json_out:
        print(json.dumps(rows, indent=2, default=str))
        return
    table = Table("preset", "present", "loads from", "path", "note")
    for r in rows:
        present = "[green]yes[/green]" if r.get("present") else "[red]no[/red]"
        note = r.get("detail") or ""
        if not r.get("available", r.get("present")) and r.get("pip_hint"):
            note = f"{note}; get it with: {r['pip_hint']}" if note else f"get it with: {r['pip_hint']}"
        table.add_row(
            str(r["name"]), present, str(r.get("location") or ""), escape(str(r.get("path") or "")), escape(note)
        )
    out.print(table)


@models_app.command("fetch")
def models_fetch(name: str = typer.Argument(..., help="Preset name.")):
    """Resolve a preset now (assemble PyPI parts / download), and verify its sha256."""
    from verirag.models import resolve_model

    with err.status(f"resolving {name}…"):
        r = resolve_model(name)
    out.print(f"{r.name}: {r.path} (sha256 {r.sha256[:12]}…, from {r.source})")


@app.command()
def demo(
    preset: str = typer.Option("local", help=PRESET_HELP),
    model: str | None = typer.Option(None, help=MODEL_HELP),
    threshold: float | None = typer.Option(None, help="Verdict threshold (default 0.5)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object per question."),
):
    """Index the shipped demo corpus and answer its questions, one answerable from it, one not."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from verirag import demo as demo_data

    p = _pipeline(preset, model, None, None, threshold, None, None)
    questions = demo_data.questions()
    with err.status("indexing the demo corpus…"):
        p.index(demo_data.corpus_path())
    err.print(
        f"[dim]corpus: {demo_data.corpus_path()}  model: {p.config.model}  "
        f"method: {p.config.method}  threshold: {p.config.threshold}[/dim]"
    )
    results = []
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("loading the model…", total=len(questions))
        for q in questions:
            head = q["question"][:40]
            r = p.ask(q["question"], on_stage=lambda stage: bar.update(task, description=f"{head}: {stage}…"))  # noqa: B023
            results.append(r)
            bar.update(task, advance=1, description=q["question"][:50])
            if json_out:
                print(json.dumps(r.to_dict(), ensure_ascii=False))
            else:
                _print_result(r)
    if not json_out:
        answered = sum(r.action == "answered" for r in results)
        n = len(results)
        mean = {k: sum(r.timings.get(k, 0.0) for r in results) / n for k in ("generate", "verify")}
        out.print(
            f"{answered} answered, {n - answered} not, of {n} questions, in "
            f"{time.perf_counter() - started:.0f} s (per question: generate {mean['generate']:.1f} s, "
            f"verify {mean['verify']:.{2 if mean['verify'] < 0.1 else 1}f} s; model loading included in the total)."
        )


@app.command("eval")
def eval_cmd(
    config: Path = typer.Argument(..., help="Experiment config (YAML); see configs/awf-small.yaml."),
    out_dir: Path = typer.Option(..., "--out", help="Run directory: results.jsonl, report, figures."),
    executor: str = typer.Option("local", help="local (default) or ray (RAY_ADDRESS, or a local cluster)."),
    limit: int | None = typer.Option(None, help="At most this many examples per dataset (a quick look)."),
    report: bool = typer.Option(True, help="Build the report when the run ends."),
):
    """Run (or resume) an experiment grid, or a paper study (a config with `study:`); every grid record
    lands in OUT/results.jsonl as it completes."""
    from verirag.experiments.commands import load_study, run_study, study_summary
    from verirag.experiments.grid.config import load_config
    from verirag.experiments.grid.runner import run_experiment
    from verirag.experiments.report.awf import build_report

    study = load_study(config)
    if study is not None:
        started = time.perf_counter()
        with err.status("starting…") as status:

            def stage(text: str) -> None:
                status.update(escape(text) + "…")
                if not err.is_terminal:  # a log file gets one line per stage instead of a spinner
                    err.print(f"[{time.perf_counter() - started:6.0f} s] {escape(text)}")

            result = run_study(study, out_dir, on_stage=stage)
        for line in study_summary(result):
            out.print(escape(line))
        out.print(f"study done in {time.perf_counter() - started:.0f} s; report: {result['report']}")
        return
    cfg = load_config(config)
    outcome = run_experiment(cfg, out_dir, executor=executor, limit=limit, progress=True)
    out.print(
        f"{outcome.written} records written, {outcome.skipped} already done, "
        f"{outcome.record_errors} with an error (kept, counted as unsupported)."
    )
    if outcome.recomputed:
        out.print(
            f"{outcome.recomputed} records recomputed: their method's identity changed since they were "
            "written (an option, a default, a prompt's text or the model)."
        )
    for f in outcome.failures:
        err.print(
            f"[red]failed:[/red] {escape(f['dataset'])} / {escape(f['model'])} / {escape(f['method'])}: "
            f"{escape(f['error'])}"
        )
    if report:
        out.print(f"report: {build_report(out_dir)}")
    if outcome.failures:
        raise typer.Exit(1)


@app.command("report")
def report_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory written by `verirag eval`."),
    compare: list[str] = typer.Option(
        [],
        "--compare",
        help="BASELINE:METHOD, repeatable: the "
        "method minus the baseline, paired over the same examples "
        "(beside the AwF paper's questions, compared by default).",
    ),
):
    """Rebuild summary, tables, figures and report.html from OUT/results.jsonl (or a study's OUT/study.json),
    without rerunning."""
    from verirag.experiments.commands import rebuild_report

    out.print(f"report: {rebuild_report(run_dir, compare)}")


@app.command()
def calibrate(
    run_dir: Path = typer.Argument(..., help="A run directory written by `verirag eval`."),
    model: str = typer.Option(..., help="The model as named in the run."),
    method: str = typer.Option(..., help="The AwF method as named in the run."),
    dataset: str | None = typer.Option(None, help="Fit on one dataset only (default: all)."),
    precision: float | None = typer.Option(None, help="Target precision of answered questions."),
    delta: float = typer.Option(0.1, help="With --precision: the guarantee holds with prob. 1-delta."),
    action_rate: float | None = typer.Option(
        None, help="Act (abstain/fall back/escalate) on at most this share of questions."
    ),
    save: Path | None = typer.Option(None, help="Write the fitted threshold here, for `verirag ask --threshold FILE`."),
):
    """Fit the faithfulness threshold for a target precision or action rate on an eval run's labels."""
    from verirag.experiments.grid.records import ResultStore
    from verirag.learned.threshold import ThresholdController
    from verirag.train.threshold import fit_threshold

    if (precision is None) == (action_rate is None):
        raise InputError("give exactly one of --precision P or --action-rate R")
    try:
        target = (
            ThresholdController(precision=precision, delta=delta)
            if precision is not None
            else ThresholdController(action_rate=action_rate)
        )
    except ValueError as e:
        raise InputError(str(e)) from None
    fitted = fit_threshold(
        ResultStore(run_dir).load(), model=model, method=method, dataset=dataset, target=target, run=str(run_dir)
    )
    if fitted.certified_:
        out.print(f"threshold {fitted.threshold_:.4g} for {fitted.target_text()} on {fitted.n_fit_} examples")
    else:
        out.print(
            f"not certified: no threshold reaches the target {fitted.target_text()} on {fitted.n_fit_} "
            "examples, so with this file every answer acts (abstain / fall back / escalate)"
        )
    if save is not None:
        out.print(f"saved: {fitted.save(save, command='verirag calibrate')}")


@train_app.command("lookback")
def train_lookback_cmd(
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
    import math

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from verirag.experiments.grid.records import ResultStore
    from verirag.train import lookback as lt

    if variant not in ("cw", "fc"):
        raise InputError(f"--variant must be cw or fc, got {variant!r}")
    records = ResultStore(run_dir).load()
    total = sum(
        1
        for r in records
        if r.method == method and (model is None or r.model == model) and (not dataset or r.dataset in dataset)
    )
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("loading models…", total=total or None)
        collected = lt.collect_samples(
            run_dir,
            records,
            method=method,
            model=model,
            attention_model=attention_model,
            label=label,
            judge_model=judge_model,
            datasets=dataset,
            on_sample=lambda s: bar.update(task, advance=1, description="reading attention"),
        )
    samples, failed = collected.samples, collected.failed
    for s in failed[:5]:
        err.print(f"[yellow]skipped[/yellow] {escape(s.dataset)}/{escape(s.example_id)}: {escape(s.error or '')}")
    if len(failed) > 5:
        err.print(f"[yellow]… and {len(failed) - 5} more without features or label[/yellow]")
    usable = lt.usable(samples)
    positives = sum(s.label for s in usable)
    out.print(
        f"{len(samples)} answers: {len(usable)} with features and a label ({positives} factual, "
        f"{len(usable) - positives} not)" + (f", {len(failed)} without (listed above)." if failed else ".")
    )
    result = lt.train_lookback(samples, variant=variant, k=k, test_share=test_share, seed=seed)
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
            "datasets": sorted({s.dataset for s in usable}),
            "test_share": test_share,
            "seed": seed,
        },
        metrics={
            "train_auroc": result.train_auroc,
            "test_auroc": result.test_auroc,
            "test_auroc_interval": list(result.test_interval),
            "n_train": result.n_train,
            "n_test": result.n_test,
            "not_usable": len(failed),
        },
    )
    lo, hi = result.test_interval
    interval = "" if math.isnan(lo) else f" [{lo:.3f}, {hi:.3f}]"
    out.print(
        f"{variant} classifier: AUROC train {result.train_auroc:.3f} ({result.n_train}), held out "
        f"{result.test_auroc:.3f}{interval} ({result.n_test}) -> {out_file}"
    )
    if matrix:  # Figure 6: both variants, each cell with its interval and FC - CW paired

        def ci(c: dict, name: str) -> str:
            if name not in c or math.isnan(c[name]):
                return "–"
            f = "+.3f" if name == "fc_minus_cw" else ".3f"
            return f"{c[name]:{f}} [{c[f'{name}_low']:{f}}, {c[f'{name}_high']:{f}}]"

        cells = lt.cross_dataset_cells(samples, k=k, test_share=test_share, seed=seed)
        table = Table(
            "train -> test",
            "train / test answers",
            "CW AUROC",
            "FC AUROC",
            "FC - CW",
            title="held-out AUROC, 95% intervals resampling question groups",
        )
        for c in cells:
            table.add_row(
                f"{c['train']} -> {c['test']}",
                f"{c['n_train']} / {c['n_test']}",
                ci(c, "cw"),
                ci(c, "fc"),
                ci(c, "fc_minus_cw"),
            )
        out.print(table)


@train_app.command("forecaster")
def train_forecaster_cmd(
    data: str = typer.Argument(
        ...,
        help="Questions with reference answers: a dataset name (`verirag.datasets`: "
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
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from verirag.learned.forecaster import Forecaster
    from verirag.llm.factory import load_llm
    from verirag.retrieval.index import index_or_pooled
    from verirag.train.forecaster import train_forecaster
    from verirag.train.forecaster_labels import MODES, label_pairs

    if mode not in MODES:
        raise InputError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    if kind not in ("cross_encoder", "probe"):
        raise InputError(f"--kind must be cross_encoder or probe, got {kind!r}")
    examples = _calibration_examples(data, n, seed)
    with err.status("indexing the pooled passages…" if index is None else "loading the index…"):
        idx = index_or_pooled(examples, index, kind=retrieval, source=str(data))
    with err.status(f"loading {model}…"):
        llm = load_llm(model, n_ctx=n_ctx)
        user_llm = load_llm(user_model, n_ctx=n_ctx) if user_model and mode == "decision" else None
        judge_llm = load_llm(judge_model or model, n_ctx=n_ctx) if match == "llm" else None
    if kind == "probe":
        from verirag.learned.forecaster import ProbeForecaster

        forecaster = ProbeForecaster(llm, val_share=val_share, temperature=temperature, seed=seed)
    else:
        forecaster = Forecaster(
            encoder,
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=learning_rate,
            val_share=val_share,
            temperature=temperature,
            seed=seed,
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    label_file = labels or out_dir / "labels.jsonl"
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(f"labelling pairs ({mode})", total=None)
        ls = label_pairs(
            examples,
            idx,
            llm,
            k=k,
            mode=mode,
            user_llm=user_llm,
            match=match,
            judge_llm=judge_llm,
            out=label_file,
            progress=lambda i, t: bar.update(task, completed=i, total=t),
        )
    s = ls.summary()
    out.print(
        f"{s['pairs']} pairs from {s['questions']} questions ({s['computed']} labelled now, the rest from "
        f"{escape(str(label_file))}): {s['positive_share']:.1%} positive, {s['top1_positive_share']:.1%} "
        f"of the top-1 documents; {s['failed']} failed (label null, reasons in the file)"
    )
    for reason, count in s["skipped"].items():
        err.print(f"[yellow]skipped[/yellow] {count} questions: {escape(reason)}")
    if ls.unreadable_lines:
        err.print(
            f"[yellow]warning:[/yellow] {ls.unreadable_lines} unreadable lines in {escape(str(label_file))} "
            "(a killed run's torn line): their pairs were labelled again"
        )
    provenance = {
        "command": "verirag train forecaster",
        "data": data,
        "labels": str(label_file),
        "mode": mode,
        "match": match,
        "k": k,
        "model": model,
        "user_model": user_model or model,
        "label_summary": s,
    }
    fingerprints = {"model": getattr(llm, "fingerprint", ""), "retriever": idx.kind, "corpus": idx.fingerprint}
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("reading hidden states" if kind == "probe" else "training the forecaster", total=None)
        f = train_forecaster(
            ls.records,
            forecaster=forecaster,
            fingerprints=fingerprints,
            provenance=provenance,
            progress=lambda i, t: bar.update(task, completed=i, total=t),
        )
    f.save(out_dir)
    m = f.metrics_
    out.print(
        f"forecaster -> {escape(str(out_dir))}: {f.n_train_} training pairs, {f.n_val_} validation pairs "
        f"(held-out questions); "
        + (f"best epoch {f.best_epoch_} of {len(f.history_)}, " if kind != "probe" else "")
        + f"temperature "
        f"{f.temperature_:.3f}; validation AUROC {m['auroc']:.3f}, ECE {m['ece']:.3f}, Brier {m['brier']:.3f}"
    )


@train_app.command("verifier")
def train_verifier_cmd(
    labels: list[Path] | None = typer.Argument(
        None,
        help="Labelled examples, one file or several: the compact "
        "records of `verirag label verifier`, or JSONL of resolved "
        "examples (question, answer, passages, label, recipe, group, "
        "sentence_labels; see verirag.train.verifier). Not with --stack.",
    ),
    out_dir: Path = typer.Option(
        ..., "--out", help="Where to write the verifier (a folder); with --stack, the stacked verifier (one JSON file)."
    ),
    stack: Path | None = typer.Option(
        None,
        "--stack",
        help="Instead: stack what an eval run knows about its "
        "answers (a run folder of `verirag eval` whose answers several predictors "
        "scored, e.g. vanilla+verifier(verifier=DIR) and vanilla+self_check) "
        "into one learned score; predictor `stacked(stack=FILE)` applies it.",
    ),
    methods: list[str] = typer.Option(
        [], "--methods", help="With --stack: only this method's records (its label in the run; repeatable)."
    ),
    features: list[str] = typer.Option(
        [],
        "--features",
        help="With --stack: only these features (predictor "
        "names and signals, comma-separated; default: all the run has).",
    ),
    impute: bool = typer.Option(
        False,
        "--impute",
        help="With --stack: fill a missing feature value with the "
        "training mean (counted in the report) instead of refusing.",
    ),
    folds: int = typer.Option(5, help="With --stack: cross-validation folds (split by question group)."),
    label: str = typer.Option("faithful", help="With --stack: faithful (AwF's V) or correct."),
    model: str | None = typer.Option(None, help="With --stack: the run's model (needed when it has several)."),
    resamples: int = typer.Option(2000, help="With --stack: bootstrap resamples of the question groups."),
    c: float = typer.Option(
        1.0,
        "--c",
        help="With --stack: the logistic regression's C (inverse L2 strength; smaller is stronger, for small runs).",
    ),
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
):
    """Train the verifier (predictor `verifier`): a cross-encoder over a packaged sentence encoder
    that judges each answer sentence against the passages' chunks. With --stack RUN: fit the stacked
    verifier (predictor `stacked`) on an eval run's answers and report it beside each signal alone."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    labels = labels or None
    if (labels is None) == (stack is None):
        raise InputError(
            "give either LABELS (train the cross-encoder) or --stack RUN (stack an eval run's signals), not both"
        )
    if stack is not None:
        _train_stack(
            stack,
            out_dir,
            methods=[m.strip() for m in methods if m.strip()],
            features=_names(features),
            impute=impute,
            folds=folds,
            label=label,
            model=model,
            seed=seed,
            resamples=resamples,
            C=c,
        )
        return

    from verirag.learned.verifier import TrainedVerifier
    from verirag.train.verifier import train_verifier

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
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )

    def epoch_line(h: dict) -> None:
        out.print(
            f"epoch {h['epoch']}: training loss {h['train_loss']:.4f}, validation loss {h['val_loss']:.4f}, "
            f"validation AUROC {h['val_auroc']:.3f}"
        )

    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("reading the examples and the encoder", total=None)
        v = train_verifier(
            labels,
            verifier=v,
            max_examples=max_examples,
            on_epoch=epoch_line,
            progress=lambda i, t: bar.update(task, completed=i, total=t, description="training"),
            provenance={"command": "verirag train verifier"},
        )
    s = v.provenance["label_summary"]
    v.save(out_dir)
    m = v.metrics_
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


def _train_stack(
    run_dir: Path,
    out_file: Path,
    *,
    methods: list[str],
    features: list[str],
    impute: bool,
    folds: int,
    label: str,
    model: str | None,
    seed: int,
    resamples: int,
    C: float,
) -> None:
    from verirag.experiments.grid.records import ResultStore
    from verirag.train.stack import BOOSTED, STACKED, train_stack
    from verirag.train.stack_features import feature_table

    store = ResultStore(run_dir)
    if not store.path.exists():
        raise InputError(
            f"{run_dir} holds no eval records ({store.path.name}): run `verirag eval CONFIG --out {run_dir}` first"
        )
    table = feature_table(
        store.load(), methods=methods or None, features=features or None, label=label, impute=impute, model=model
    )
    with err.status("cross-validating the stack…"):
        result = train_stack(table, folds=folds, seed=seed, C=C, impute=impute, n_resamples=resamples)
    r = result.report
    result.stack.save(
        out_file, command="verirag train verifier --stack", run=str(run_dir), methods=methods, **result.provenance
    )
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

    def ci(row: dict, key: str, sign: str = "") -> str:
        if key not in row or row[key] is None or math.isnan(row[key]):
            return "-"
        return f"{row[key]:{sign}.3f} [{row[f'{key}_low']:{sign}.3f}, {row[f'{key}_high']:{sign}.3f}]"

    table_out = Table(
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
        table_out.add_row(
            shown, ci(row, "auroc"), ci(row, "gain_auroc", "+"), ci(row, "pr_auc"), ci(row, "gain_pr_auc", "+"), w
        )
    out.print(table_out)
    if r["gradient_boosting_better"]:
        out.print(
            "[yellow]gradient boosting ranks better than the logistic stack here (paired interval above 0);"
            "[/yellow] the saved stack is the logistic regression: scikit-learn gives gradient boosting no "
            "saved form but pickle"
        )
    out.print(f"stacked verifier -> {escape(str(out_file))}; use it as vanilla+stacked(stack={escape(str(out_file))})")


def _names(values: list[str]) -> list[str]:
    """Comma-separated and repeated option values as one list ("none" gives none)."""
    names = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return [] if names == ["none"] else names


@label_app.command("verifier")
def label_verifier_cmd(
    out_file: Path = typer.Option(
        ..., "--out", help="The labels JSONL (resumed when it exists); a <name>.summary.json is written beside it."
    ),
    datasets: list[str] = typer.Option(["nq,hotpotqa"], "--datasets", help="nq, hotpotqa, nomiracl (comma-separated)."),
    recipes: list[str] = typer.Option(
        ["real,swap,evidence_removal,local_edit,evidence_sentence"],
        "--recipes",
        help="real, swap, evidence_removal, local_edit, evidence_sentence (comma-separated).",
    ),
    n: int | None = typer.Option(100, help="Questions per dataset, drawn with --seed (0: all)."),
    models: list[str] = typer.Option(
        ["qwen2.5-1.5b,qwen2.5-0.5b,smollm2-135m"],
        "--models",
        help="Models that answer (presets, comma-separated); none: no LLM.",
    ),
    seed: int = typer.Option(0, help="Seed of the question draw and of every choice of a recipe."),
    limit: int | None = typer.Option(None, help="Make at most this many new items in this run."),
    per_question: int = typer.Option(3, help="Answers per question and model of the real recipe."),
    swap_from: list[str] = typer.Option(
        [],
        "--swap-from",
        help="Origins the swap recipe draws a wrong answer "
        "from, the first that has one (passage, answer, made_up; comma-separated; "
        "passage: a wrong span of the same passages, the hardest). Default: any.",
    ),
    threads: int | None = typer.Option(
        None, help="llama.cpp threads (default: every core; on a busy machine 1 can be much faster)."
    ),
    data: Path | None = typer.Option(
        None, help="The benchmark data folder (default: $VERIRAG_DATA_DIR, else ../shared/data)."
    ),
):
    """Label (question, answer, passages) examples for the trained verifier: real answers of the local
    models graded against gold answers, swaps, evidence removal and local edits. One JSON line per
    example as it is made (ids and generated text, never benchmark text); the same command resumes."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from verirag.train.verifier_labels import label_verifier

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("reading the data…", total=None)
        run = label_verifier(
            out_file,
            data_root=data,
            datasets=_names(datasets),
            recipes=_names(recipes),
            n=n or None,
            models=_names(models),
            seed=seed,
            limit=limit,
            real_per_question=per_question,
            swap_from=_names(swap_from) or None,
            n_threads=threads,
            on_start=lambda total: bar.update(task, total=total, description="labelling"),
            on_progress=lambda i, total, _r: bar.update(task, completed=i),
        )
    s, last = run.summary, run.summary["last_run"]
    table = Table("recipe", "supported", "unsupported", "skipped")
    for recipe, c in s["by_recipe"].items():
        table.add_row(recipe, str(c["supported"]), str(c["unsupported"]), str(c["skipped"]))
    out.print(table)
    balance = s["label_balance"]
    share = f"{balance['share_supported']:.1%}" if balance["share_supported"] is not None else "-"
    out.print(
        f"{s['examples']} examples in {escape(str(out_file))} ({share} supported); this run: {run.written} made, "
        f"{run.already_done} already there, {len(run.failed)} failed, {run.seconds:.1f} s"
        + ("; stopped at --limit" if run.stopped_at_limit else "")
    )
    out.print(
        "questions left out as instruct_qa_human (evaluation) questions: "
        + ", ".join(f"{k} {v}" for k, v in last["excluded_as_evaluation_questions"].items())
    )
    for failure in run.failed[:5]:
        err.print(f"[yellow]failed (tried again next run):[/yellow] {escape(failure)}")
    if run.unreadable_lines:
        err.print(
            f"[yellow]warning:[/yellow] {run.unreadable_lines} unreadable line(s) in {escape(str(out_file))} "
            "(a killed run's torn line): their items were made again"
        )
    out.print(f"summary: {escape(str(run.summary_path))}")


def main(argv: list[str] | None = None) -> int:
    try:
        app(args=argv, standalone_mode=True)
    except VeriragError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}")
        return e.exit_code
    except SystemExit as e:  # typer/click exit codes (usage errors = 2)
        return int(e.code or 0) if not isinstance(e.code, str) else 1
    except KeyboardInterrupt:
        err.print("[red]interrupted[/red]")
        return 130
    return 0


def _entry() -> None:  # pragma: no cover - used by `python -m verirag.cli`
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    _entry()
