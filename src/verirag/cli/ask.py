"""`verirag ask`, `verirag demo`, `verirag methods`: answer, verify, act."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verirag.cli._shared import (
    THRESHOLD_HELP,
    EscalateModelOpt,
    FallbackOpt,
    JsonFlag,
    JudgeModelOpt,
    JudgeOpt,
    KOpt,
    ModelOpt,
    PresetOpt,
    RetrievalOpt,
    StageOpt,
    err,
    out,
    print_panel,
    print_skipped,
    progress,
    stage_overrides,
    warn_all,
    with_stage_options,
)
from verirag.errors import InputError

COLOURS = {"answered": "green", "abstained": "yellow", "fallback": "cyan", "escalated": "magenta"}


def stage_summaries(reports: dict | None) -> list[tuple[str, str]]:
    """(label, text) of each built-in stage kind's report the answer carries (`verirag.awf.stage_kinds`)."""
    from verirag.awf.stage_kinds import kinds

    found = [kind.summary(reports[kind.name]) for kind in kinds() if reports and reports.get(kind.name)]
    return [line for line in found if line is not None]


def print_result(r, *, show_question: bool = True) -> None:
    """An AskResult as a panel: the answer, the verdict and action, the evidence, the forecast."""
    colour = COLOURS[r.action]
    lines = [f"[bold]Q:[/bold] {escape(r.question)}"] if show_question else []
    lines.append(f"[bold]A:[/bold] {escape(r.answer)}")
    verdict = "supported" if r.faithful else "not supported"
    if r.unverified:
        verdict = f"unverified: {r.unverified['message']}; the score is not trusted"
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
    for label, text in stage_summaries(r.stages):
        lines.append(f"[bold]{escape(label)}[/bold] {escape(text)}")
    print_panel(
        lines, r.timings, f"model {escape(r.model)}  method {escape(r.method)}", colour, notes=[r.error, *r.warnings]
    )


MethodOpt = Annotated[
    str | None,
    typer.Option(
        help="AwF method (default: for qwen2.5-1.5b vanilla+stacked(fallback=verifier), the shipped verifier "
        "with the generation's log-probabilities and the model's llm_judge; for another model vanilla+verifier, the shipped trained verifier; "
        "vanilla+nli when --judge is given), vanilla+verifier, vanilla+self_check, vanilla+nli, instructrag+pre_answering, intrinsic, ... (`verirag methods`)."
    ),
]
TrustOpt = Annotated[
    Path | None,
    typer.Option(help="A conformal trust filter (`verirag calibrate-retrieval`): only trusted chunks reach the model."),
]
OnUntrustedOpt = Annotated[
    str | None, typer.Option(help="When no chunk is trusted: abstain (default), no-context or keep-top.")
]
ForecasterOpt = Annotated[
    Path | None,
    typer.Option(
        help="CalibRAG's forecaster (`verirag train forecaster`): rerank 20 documents by the forecast that an "
        "answer from each is right, answer from the best, and report that forecast."
    ),
]
EpsilonOpt = Annotated[
    float | None,
    typer.Option(
        help="With --forecaster: below this forecast (default 0.3) the query is reformulated and retrieval runs "
        "once more."
    ),
]


@with_stage_options
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    corpus: Annotated[
        Path | None, typer.Option(help="Folder of .txt/.md files, a file, or a JSONL of passages.")
    ] = None,
    index: Annotated[Path | None, typer.Option(help="An index built by `verirag index`.")] = None,
    json_out: JsonFlag = False,
    preset: PresetOpt = "local",
    model: ModelOpt = None,
    judge: JudgeOpt = None,
    judge_model: JudgeModelOpt = None,
    threshold: Annotated[str | None, typer.Option(help=THRESHOLD_HELP)] = None,
    k: KOpt = None,
    fallback: FallbackOpt = None,
    escalate_model: EscalateModelOpt = None,
    method: MethodOpt = None,
    retrieval: RetrievalOpt = None,
    trust: TrustOpt = None,
    on_untrusted: OnUntrustedOpt = None,
    forecaster: ForecasterOpt = None,
    epsilon: EpsilonOpt = None,
    stage: StageOpt = None,
    stage_settings: dict | None = None,
):
    """Answer QUESTION from a corpus, verify the answer, and act on the verdict."""
    from verirag.awf.pipeline import Pipeline
    from verirag.learned.threshold import parse_threshold

    if (corpus is None) == (index is None):
        raise InputError("give exactly one of --corpus PATH or --index DIR")
    if not question.strip():
        raise InputError("the question is empty")
    if epsilon is not None and forecaster is None:
        raise InputError("--epsilon is the forecaster's re-query threshold: give --forecaster DIR too")
    p = Pipeline.from_preset(
        preset,
        model=model,
        judge=judge,
        judge_model=judge_model,
        threshold=parse_threshold(threshold)[0],
        k=k,
        fallback=fallback,
        retrieval=retrieval,
        method=method,
        escalate_model=escalate_model,
        trust=str(trust) if trust else None,
        on_untrusted=on_untrusted,
        forecaster=str(forecaster) if forecaster else None,
        epsilon=epsilon,
        **(stage_settings or {}),
        **stage_overrides(stage),
    )
    with err.status("indexing…" if corpus else "loading index…"):
        p.index(corpus) if corpus is not None else p.load_index(index)
    print_skipped(getattr(p, "skipped", []))
    warn_all(p.threshold_warnings())
    with err.status("answering and verifying…") as status:
        r = p.ask(question, on_stage=lambda stage: status.update(f"{stage}…"))
    if json_out:
        print(json.dumps(r.to_dict(), ensure_ascii=False))
    else:
        print_result(r)


@with_stage_options
def demo(
    preset: PresetOpt = "local",
    model: ModelOpt = None,
    threshold: Annotated[float | None, typer.Option(help="Verdict threshold (default 0.5).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object per question.")] = False,
    stage_settings: dict | None = None,
):
    """Index the shipped demo corpus and answer its questions, one answerable from it, one not."""
    from verirag import demo as demo_data
    from verirag.awf.pipeline import Pipeline

    p = Pipeline.from_preset(preset, model=model, threshold=threshold, **(stage_settings or {}))
    questions = demo_data.questions()
    with err.status("indexing the demo corpus…"):
        p.index(demo_data.corpus_path())
    err.print(
        f"[dim]corpus: {demo_data.corpus_path()}  model: {p.config.model}  "
        f"method: {p.config.method}  threshold: {p.config.threshold}[/dim]"
    )
    results = []
    started = time.perf_counter()
    with progress() as bar:
        task = bar.add_task("loading the model…", total=len(questions))
        for q in questions:
            head = q["question"][:40]
            r = p.ask(q["question"], on_stage=lambda stage: bar.update(task, description=f"{head}: {stage}…"))  # noqa: B023
            results.append(r)
            bar.update(task, advance=1, description=q["question"][:50])
            if json_out:
                print(json.dumps(r.to_dict(), ensure_ascii=False))
            else:
                print_result(r)
    if not json_out:
        answered = sum(r.action == "answered" for r in results)
        n = len(results)
        mean = {k: sum(r.timings.get(k, 0.0) for r in results) / n for k in ("generate", "verify")}
        out.print(
            f"{answered} answered, {n - answered} not, of {n} questions, in "
            f"{time.perf_counter() - started:.0f} s (per question: generate {mean['generate']:.1f} s, "
            f"verify {mean['verify']:.{2 if mean['verify'] < 0.1 else 1}f} s; model loading included in the total)."
        )


def methods():
    """List the AwF methods `--method` accepts (unified methods, generators, GENERATOR+PREDICTOR)."""
    from verirag.awf.spec import method_names

    for name in method_names():
        out.print(name)
