"""`verirag calibrate-retrieval`: a conformal trust filter for a retriever."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from verirag.cli._shared import err, out


def calibrate_retrieval(
    data: str = typer.Argument(
        ...,
        help="A dataset name (`verirag_lab.datasets`: nq, hotpotqa, ...) or a JSONL with "
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
    from verirag_lab.train.trust_calibration import calibrate_retrieval_from_data

    with err.status("loading the questions…") as status:
        r = calibrate_retrieval_from_data(
            data,
            out_file,
            index=index,
            retrieval=retrieval,
            alpha=alpha,
            beta=beta,
            k=k,
            n=n,
            seed=seed,
            holdout=holdout,
            on_stage=lambda text: status.update(f"{text}…"),
        )
    s = r.calibration.summary()
    out.print(
        f"trust filter -> {escape(str(out_file))}: {r.retriever}, K={k}, alpha={alpha:g}, beta={beta:g}; "
        f"{s['n_questions']} questions, {s['n_correct_chunks']} correct chunks; trusted iff normalised "
        f"score >= {s['threshold']:.4f}; on calibration m1 = {s['calibration_m1']:.3f} "
        f"(SE {s['calibration_m1_se']:.3f}), m2 = {s['calibration_m2']:.3f}"
    )
    for reason, count in s["skipped"].items():
        err.print(f"[yellow]skipped[/yellow] {count} questions: {escape(reason)}")
    if r.calibration.warning:
        err.print(f"[yellow]warning:[/yellow] {escape(r.calibration.warning)}")
    h = r.held_out
    if h is not None:
        verdict = "holds" if h.holds(alpha) else "does NOT hold"
        out.print(
            f"held out ({h.n_questions} questions, {h.n_correct} correct chunks): {h.coverage:.3f} of correct "
            f"chunks trusted [95% CI {h.low:.3f}, {h.high:.3f}] against 1 - alpha = {1 - alpha:.3f}: the "
            f"guarantee {verdict}; m1 = {h.m1:.3f} (SE {h.m1_se:.3f}), m2 = {h.m2:.3f} (SE {h.m2_se:.3f})"
        )
