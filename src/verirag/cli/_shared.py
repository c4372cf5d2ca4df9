"""What every command module shares: the two consoles, help texts, small printers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

out = Console()
err = Console(stderr=True)

PRESET_HELP = "Pipeline preset: local (qwen2.5-1.5b), fast (qwen2.5-0.5b), tiny (smollm2-135m)."
MODEL_HELP = (
    "Generator (and, by default, judge) model: a preset name, a .gguf path, "
    "openai:MODEL, http://host:port/v1#MODEL, or hf:ID."
)
THRESHOLD_HELP = "Verdict threshold on the score (default 0.5), or a threshold file written by `verirag calibrate`."
# --judge means one thing at every door (`verirag.awf.defaults.judged_method`): ask, verify and serve.
JudgeOpt = Annotated[
    str | None,
    typer.Option(
        help="Entailment model of the methods that use one (nli): llm (default) or hf:NLI_MODEL; with no method "
        "named it selects nli (vanilla+nli); an error for a method without one."
    ),
]
PRUNE_HELP = (
    "Prune the retrieved passages before the model reads them, at the shipped pruner's own "
    "(conservative) threshold: only the sentences that matter to the question are read."
)
PRUNE_THRESHOLD_HELP = "Prune at this threshold instead (0-1; higher keeps fewer sentences); implies --prune."
NO_PRUNE_HELP = "Read every retrieved sentence: no context pruning (the default today)."
STAGE_HELP = (
    "A stage you wrote, run after retrieval and before pruning: module:Class or "
    "module:Class,key=value,... (its options); repeat for several, in order. See the guide 'Write your own stage'."
)


# Options several commands share, declared once (typer reads `Annotated`).
PresetOpt = Annotated[str, typer.Option(help=PRESET_HELP)]
ModelOpt = Annotated[str | None, typer.Option(help=MODEL_HELP)]
JudgeModelOpt = Annotated[str | None, typer.Option(help="Model of the LLM judge (default: --model).")]
KOpt = Annotated[int | None, typer.Option(help="Passages to retrieve (default 5).")]
FallbackOpt = Annotated[str | None, typer.Option(help="Below the threshold: abstain (default), no-rag or escalate.")]
EscalateModelOpt = Annotated[str | None, typer.Option(help="The larger model for --fallback escalate.")]
RetrievalOpt = Annotated[str | None, typer.Option(help="hybrid (default), bm25 or dense (for a new index).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
PruneFlag = Annotated[bool, typer.Option("--prune", help=PRUNE_HELP)]
PruneThresholdOpt = Annotated[float | None, typer.Option("--prune-threshold", metavar="X", help=PRUNE_THRESHOLD_HELP)]
NoPruneFlag = Annotated[bool, typer.Option("--no-prune", help=NO_PRUNE_HELP)]
StageOpt = Annotated[list[str] | None, typer.Option("--stage", metavar="MODULE:CLASS[,KEY=VALUE...]", help=STAGE_HELP)]


def stage_overrides(values: list[str] | None) -> dict:
    """The spec's `stages` from repeated --stage values (none given: the preset's, i.e. none)."""
    from verirag.awf.user_stages import parse_stage

    return {"stages": tuple(parse_stage(v) for v in values)} if values else {}


def prune_overrides(prune: bool, threshold: float | None, no_prune: bool) -> dict:
    """The PipelineConfig field of --prune / --prune-threshold X / --no-prune (none: the preset's),
    read by the one parser every door uses (`verirag.awf.prune_setting`)."""
    from verirag.awf.prune_setting import cli_prune

    setting = cli_prune(prune, threshold, no_prune)
    return {} if setting is None else {"prune": setting}


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {escape(message)}")


def warn_all(messages: Iterable[str]) -> None:
    for message in messages:
        warn(message)


def print_skipped(skipped: Iterable[tuple[object, str]]) -> None:
    for what, reason in skipped:
        err.print(f"[yellow]skipped[/yellow] {escape(str(what))}: {escape(reason)}")


def progress(*, remaining: bool = False) -> Progress:
    """A transient progress bar on stderr (stdout stays for results)."""
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    if remaining:
        columns.append(TimeRemainingColumn())
    return Progress(*columns, console=err, transient=True)


def names(values: list[str]) -> list[str]:
    """Comma-separated and repeated option values as one list ("none" gives none)."""
    found = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return [] if found == ["none"] else found


def print_panel(lines: list[str], timings: dict[str, float], tail: str, colour: str) -> None:
    """A result's panel (ask, verify): its lines, then a dim line of the stages' seconds and `tail`."""
    from rich.panel import Panel

    lines.append("[dim]" + "  ".join(f"{k} {t:.2f}s" for k, t in timings.items()) + f"  {tail}[/dim]")
    out.print(Panel("\n".join(lines), border_style=colour))
