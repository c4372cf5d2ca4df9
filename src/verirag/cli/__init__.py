"""The `verirag` command. Thin: each command parses its options, calls one library function and
prints; one module per command group:

    ask.py        ask, demo, methods          verify.py     verify
    serve.py      serve                       index.py      index
    models.py     models list|fetch           eval.py       eval, report, calibrate
    retrieval.py  calibrate-retrieval         label.py      label verifier
    train.py      train lookback|forecaster|verifier|stack

User errors (VeriragError) print one clear line and exit with the error's code, never a traceback.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from verirag.cli import ask, eval, index, label, models, retrieval, serve, train, verify
from verirag.cli._shared import err, out
from verirag.errors import VeriragError

app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, help="Retrieval-augmented QA that verifies its answers."
)
models_app = typer.Typer(add_completion=False, help="Model presets: list, fetch.")
train_app = typer.Typer(add_completion=False, help="Train learned components from an eval run.")
label_app = typer.Typer(add_completion=False, help="Make labelled training data from the benchmarks.")
app.add_typer(models_app, name="models")
app.add_typer(train_app, name="train")
app.add_typer(label_app, name="label")

app.command("ask")(ask.ask)
app.command("verify")(verify.verify)
app.command("calibrate-retrieval")(retrieval.calibrate_retrieval)
app.command("serve")(serve.serve)
app.command("index")(index.index)
app.command("methods")(ask.methods)
app.command("demo")(ask.demo)
app.command("eval")(eval.eval_cmd)
app.command("report")(eval.report_cmd)
app.command("calibrate")(eval.calibrate)
models_app.command("list")(models.models_list)
models_app.command("fetch")(models.models_fetch)
train_app.command("lookback")(train.lookback)
train_app.command("forecaster")(train.forecaster)
train_app.command("verifier")(train.verifier)
train_app.command("cascade")(train.cascade)
train_app.command("stack")(train.stack)
train_app.command("pruner")(train.pruner)
label_app.command("verifier")(label.label_verifier)

_print_result = ask.print_result  # the name older tests and notebooks use

__all__ = ["app", "err", "main", "out"]


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
