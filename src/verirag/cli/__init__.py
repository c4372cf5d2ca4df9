"""The `verirag` command. Thin: each command parses its options, calls one library function and
prints; one module per command group:

    ask.py        ask, demo, methods          verify.py     verify
    serve.py      serve                       index.py      index
    models.py     models list|fetch           calibrate.py  calibrate

The lab's commands (eval, report, train, label, calibrate-retrieval) join when the lab is installed
(`pip install -e lab`): its package names them under the entry point group `verirag.commands`.

User errors (VeriragError) print one clear line and exit with the error's code, never a traceback.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer
from rich.markup import escape

from verirag.cli import ask, calibrate, index, models, serve, verify
from verirag.cli._shared import err, out
from verirag.errors import VeriragError

app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, help="Retrieval-augmented QA that verifies its answers."
)
models_app = typer.Typer(add_completion=False, help="Model presets: list, fetch.")
app.add_typer(models_app, name="models")

app.command("ask")(ask.ask)
app.command("verify")(verify.verify)
app.command("serve")(serve.serve)
app.command("index")(index.index)
app.command("methods")(ask.methods)
app.command("demo")(ask.demo)
app.command("calibrate")(calibrate.calibrate)
models_app.command("list")(models.models_list)
models_app.command("fetch")(models.models_fetch)

# What the lab adds when it is installed (its package's entry point): named here so that the product
# alone says how to get them instead of "no such command".
LAB_COMMANDS = ("eval", "report", "calibrate-retrieval", "train", "label")
LAB_MISSING = (
    "`verirag {name}` is the lab's command, and the lab is not installed: `pip install -e lab` in a "
    "checkout of verirag (or `make dev`) adds eval, report, train, label and calibrate-retrieval"
)


PLUGIN_ERRORS: dict[str, str] = {}  # a plugin that failed to load: the product's commands still run


def _add_plugins() -> None:
    for plugin in entry_points(group="verirag.commands"):
        try:
            plugin.load()(app)
        except Exception as e:  # a broken lab install must not take `ask` and `serve` down with it
            PLUGIN_ERRORS[plugin.value] = f"{type(e).__name__}: {e}"


_add_plugins()

_print_result = ask.print_result  # the name older tests and notebooks use

__all__ = ["app", "err", "main", "out"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    if args and args[0] in LAB_COMMANDS and args[0] not in names:
        broken = "".join(f"; {name} failed to load ({why})" for name, why in PLUGIN_ERRORS.items())
        err.print(f"[red]error:[/red] {escape(LAB_MISSING.format(name=args[0]) + broken)}")
        return 2
    try:
        app(args=args, standalone_mode=True)
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
