"""`verirag calibrate`: the faithfulness threshold fitted on the labels of an eval run or of a verified
answer log."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from verirag.cli._shared import out


def calibrate(
    run_dir: Path = typer.Argument(
        ...,
        help="A run directory written by `verirag eval`, or the --out folder of `verirag verify LOG "
        "--label-field F` (its labels calibrate --precision).",
    ),
    model: str | None = typer.Option(None, help="The model as named in the run (a verified log: read from it)."),
    method: str | None = typer.Option(
        None, help="The AwF method as named in the run (a verified log: read from it, checked when given)."
    ),
    dataset: str | None = typer.Option(None, help="Fit on one dataset only (default: all)."),
    precision: float | None = typer.Option(None, help="Target precision of answered questions."),
    delta: float = typer.Option(0.1, help="With --precision: the guarantee holds with prob. 1-delta."),
    action_rate: float | None = typer.Option(
        None, help="Act (abstain/fall back/escalate) on at most this share of questions."
    ),
    save: Path | None = typer.Option(
        None,
        help="Write the fitted threshold here, for `verirag ask --threshold FILE` (a verified log: "
        "default DIR/threshold.json).",
    ),
):
    """Fit the faithfulness threshold for a target precision or action rate on the labels of an eval
    run or of a verified answer log."""
    from verirag.calibrate_run import calibrate_run

    fitted, saved = calibrate_run(
        run_dir,
        model=model,
        method=method,
        dataset=dataset,
        precision=precision,
        delta=delta,
        action_rate=action_rate,
        save=save,
    )
    print_fitted(fitted, saved)


def print_fitted(fitted, saved: Path | None) -> None:
    """A fitted threshold in a line (what it was fitted for), or the warning that it is not certified."""
    made_by = ", ".join(f"{k} {fitted.fingerprints[k]}" for k in ("method", "model") if fitted.fingerprints.get(k))
    if fitted.certified_:
        out.print(
            f"threshold {fitted.threshold_:.4g} for {fitted.target_text()} on {fitted.n_fit_} examples"
            + (f" ({escape(made_by)})" if made_by else "")
        )
    else:
        out.print(  # on stdout with the result it replaces
            f"[yellow]warning:[/yellow] not certified: no threshold reaches the target {fitted.target_text()} on "
            f"{fitted.n_fit_} examples, so with this file every answer acts (abstain / fall back / escalate; "
            "verify: not supported)"
        )
    if saved is not None:
        out.print(f"saved: {escape(str(saved))}")
