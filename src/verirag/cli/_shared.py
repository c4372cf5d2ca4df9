"""What every command module shares: the two consoles, help texts, small printers."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

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
STAGE_HELP = (
    "A stage you wrote, run after retrieval and before verirag's own stages: module:Class or "
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
StageOpt = Annotated[list[str] | None, typer.Option("--stage", metavar="MODULE:CLASS[,KEY=VALUE...]", help=STAGE_HELP)]


def stage_overrides(values: list[str] | None) -> dict:
    """The spec's `stages` from repeated --stage values (none given: the preset's, i.e. none)."""
    from verirag.awf.user_stages import parse_stage

    return {"stages": tuple(parse_stage(v) for v in values)} if values else {}


def with_stage_options(command: Callable) -> Callable:
    """`command` with the options of every built-in stage kind (`verirag.awf.stage_kinds`) after
    its own; their values reach it as one keyword, `stage_settings`: the answer spec's fields of
    the stages set on the command line (none given: the preset's or the service's own stand)."""
    from verirag.awf.stage_kinds import kinds

    own = inspect.signature(command, eval_str=True)
    added = [
        inspect.Parameter(
            o.param,
            inspect.Parameter.KEYWORD_ONLY,
            default=False if o.type is bool else None,
            annotation=Annotated[
                o.type if o.type is bool else o.type | None, typer.Option(o.flag, help=o.help, metavar=o.metavar)
            ],
        )
        for kind in kinds()
        for o in kind.cli
    ]
    params = [p for p in own.parameters.values() if p.name != "stage_settings"] + added

    @functools.wraps(command)
    def run(*args: Any, **values: Any) -> Any:
        settings = {}
        for kind in kinds():
            given = {o.param: values.pop(o.param) for o in kind.cli if o.param in values}
            value = kind.from_cli(**given)
            if value is not None:
                settings[kind.name] = value
        return command(*args, **values, stage_settings=settings)

    run.__signature__ = own.replace(parameters=params)  # what typer reads
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {escape(message)}")


def warn_all(messages: Iterable[str]) -> None:
    for message in messages:
        warn(message)


def print_skipped(skipped: Iterable[tuple[object, str]]) -> None:
    for what, reason in skipped:
        err.print(f"[yellow]skipped[/yellow] {escape(str(what))}: {escape(reason)}")


LOG_EVERY_SECONDS = 60.0


class LoggedProgress(Progress):
    """A progress bar that, where stderr is not a terminal (a run in the background, its output
    to a log), writes each unfinished task's state as a plain line at most every `log_every`
    seconds: rich draws nothing there, and an hours-long run would otherwise say nothing."""

    def __init__(self, *columns, log_every: float = LOG_EVERY_SECONDS, **kwargs):
        self.log_every = log_every
        self._logged = time.monotonic()
        super().__init__(*columns, **kwargs)  # it renders once, so the above come first

    def get_renderable(self):
        renderable = super().get_renderable()
        now = time.monotonic()
        live = getattr(self, "live", None)  # absent during the first render
        if live is not None and not live.console.is_terminal and now - self._logged >= self.log_every:
            self._logged = now
            for task in self.tasks:
                if not task.finished:
                    done = f"{task.completed:.0f}/{task.total:.0f}" if task.total else f"{task.completed:.0f}"
                    minutes = (task.elapsed or 0.0) / 60
                    what = Text.from_markup(task.description).plain
                    live.console.print(f"{what}: {done} ({minutes:.1f} min)", markup=False, highlight=False)
        return renderable


def progress(*, remaining: bool = False) -> Progress:
    """A transient progress bar on stderr (stdout stays for results); a line a minute where stderr
    is not a terminal (`LoggedProgress`)."""
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    if remaining:
        columns.append(TimeRemainingColumn())
    return LoggedProgress(*columns, console=err, transient=True)


def names(values: list[str]) -> list[str]:
    """Comma-separated and repeated option values as one list ("none" gives none)."""
    found = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return [] if found == ["none"] else found


def print_panel(lines: list[str], timings: dict[str, float], tail: str, colour: str, notes: Iterable = ()) -> None:
    """A result's panel (ask, verify): its lines, each of `notes` that is set (an error, a
    warning), then a dim line of the stages' seconds and `tail`."""
    from rich.panel import Panel

    lines += [f"[red]note:[/red] {escape(note)}" for note in notes if note]
    lines.append("[dim]" + "  ".join(f"{k} {t:.2f}s" for k, t in timings.items()) + f"  {tail}[/dim]")
    out.print(Panel("\n".join(lines), border_style=colour))
