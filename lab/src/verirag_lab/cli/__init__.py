"""The lab's commands, added to the `verirag` command when the lab is installed (the entry point
`verirag.commands` in lab/pyproject.toml names `register`):

    eval.py       eval, report               train.py   train lookback|forecaster|verifier|cascade|stack|pruner
    retrieval.py  calibrate-retrieval        label.py   label verifier|llm-judge
"""

from __future__ import annotations

import typer

from verirag_lab.cli import eval, label, retrieval, train


def register(app: typer.Typer) -> None:
    """Add the lab's commands and groups to the product's `verirag` app."""
    train_app = typer.Typer(add_completion=False, help="Train learned components from an eval run.")
    label_app = typer.Typer(add_completion=False, help="Make labelled training data from the benchmarks.")
    app.add_typer(train_app, name="train")
    app.add_typer(label_app, name="label")
    app.command("eval")(eval.eval_cmd)
    app.command("report")(eval.report_cmd)
    app.command("calibrate-retrieval")(retrieval.calibrate_retrieval)
    for name in ("lookback", "forecaster", "verifier", "cascade", "stack", "pruner"):
        train_app.command(name)(getattr(train, name))
    label_app.command("verifier")(label.label_verifier)
    label_app.command("llm-judge")(label.label_llm_judge)
