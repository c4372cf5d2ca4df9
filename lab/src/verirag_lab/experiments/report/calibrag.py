"""The CalibRAG study's report (Jang et al.): Table 1 (calibration baselines), Table 2 (rerankers) and a
reliability diagram per test dataset (`figures/reliability_<dataset>.png`) from DIR/study.json.
The tables are also written as Markdown and LaTeX (`tables/calibrag_*.md|.tex`) for papers and notes."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from verirag.evaluation.page import REPORT_FILE, html_table, num, save_figure, write_page
from verirag_lab.experiments.report.plots import reliability_figure
from verirag_lab.experiments.report.tables import Table, write_tables

LABELS = {
    "base": "Base",
    "verbal_number": "Number",
    "verbal_linguistic": "Linguistic",
    "probe": "Probe",
    "calibrag": "CalibRAG",
    "calibrag_requery": "CalibRAG (re-query)",
    "llm_rerank": "LLM-rerank",
    "relevance_ce": "Cross-encoder (relevance)",
}


def ci_text(m: dict | None, scale: float = 1.0, digits: int = 3) -> str:
    """A {value, low, high} statistic as "v [low, high]" (x `scale`)."""
    if not m or m.get("value") is None:
        return "–"
    v, lo, hi = (None if m.get(k) is None else m[k] * scale for k in ("value", "low", "high"))
    if lo is None or hi is None:
        return num(v, digits)
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def table1_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            r["dataset"],
            LABELS.get(r["method"], r["method"]),
            r["n"],
            ci_text(r.get("auroc")),
            ci_text(r["accuracy"], 100, 1),
            ci_text(r.get("ece")),
            ci_text(r.get("brier")),
            ci_text(r.get("nll")),
            ci_text(r["na"], 100, 1),
            ci_text(r.get("ece_vs_calibrag")),
            ci_text(r.get("auroc_vs_calibrag")),
            ci_text(r.get("auroc_answer")),
            ci_text(r.get("ece_answer")),
            r.get("unreadable_confidence", 0),
            r.get("errors", 0),
        ]
        for r in rows
    ]


def table2_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            r["dataset"],
            LABELS.get(r["reranker"], r["reranker"]),
            r["n"],
            ci_text(r["guidance_accuracy"], 100, 1),
            ci_text(r.get("guidance_vs_base"), 100, 1),
            ci_text(r["decision_accuracy"], 100, 1),
            ci_text(r.get("decision_vs_base"), 100, 1),
            num(100 * r["top1_changed"], 1),
        ]
        for r in rows
    ]


FORECASTER_COLUMNS = [
    "forecaster",
    "kind",
    "train pairs",
    "val pairs",
    "positive share",
    "temperature",
    "AUROC",
    "ECE",
    "Brier",
]
TABLE1_COLUMNS = [
    "dataset",
    "method",
    "questions",
    "AUROC",
    "accuracy %",
    "ECE",
    "Brier",
    "NLL",
    "%NA",
    "ECE - CalibRAG",
    "AUROC - CalibRAG",
    "AUROC (answer)",
    "ECE (answer)",
    "unreadable confidence",
    "errors",
]
TABLE2_COLUMNS = [
    "dataset",
    "reranker",
    "questions",
    "guidance accuracy %",
    "vs Base",
    "decision accuracy %",
    "vs Base",
    "top-1 changed %",
]


def forecaster_rows(fc: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            name,
            f["kind"],
            f["n_train"],
            f["n_val"],
            f["label_balance"],
            f["temperature"],
            f["validation"].get("auroc"),
            f["validation"].get("ece"),
            f["validation"].get("brier"),
        ]
        for name, f in fc.items()
    ]


def _write_tables(out_dir: Path, result: dict[str, Any]) -> None:
    text = lambda rows: [[num(c) if isinstance(c, float) else c for c in r] for r in rows]  # noqa: E731
    tables = [
        Table(
            "calibrag_forecasters",
            "Forecasters (validation on held-out training questions)",
            FORECASTER_COLUMNS,
            text(forecaster_rows(result.get("forecasters", {}))),
        ),
        Table(
            "calibrag_table1",
            "Table 1: calibration baselines (95% bootstrap CIs)",
            TABLE1_COLUMNS,
            table1_rows(result.get("table1", [])),
        ),
        Table(
            "calibrag_table2",
            "Table 2: rerankers (95% bootstrap CIs; differences paired)",
            TABLE2_COLUMNS,
            table2_rows(result.get("table2", [])),
        ),
    ]
    write_tables(out_dir, tables)


def build_calibrag_report(out_dir: str | Path, result: dict[str, Any]) -> Path:
    out_dir = Path(out_dir)
    figs = out_dir / "figures"
    cfg = result.get("config", {})
    lab = result.get("labels", {})
    parts = [
        f"<h1>{html.escape(result.get('name', 'calibrag'))}: CalibRAG (Jang et al.)</h1>",
        f"<p>RAG model and surrogate user: {html.escape(str(cfg.get('model')))}"
        f"{' / ' + html.escape(str(cfg['user_model'])) if cfg.get('user_model') else ''}; retriever "
        f"{html.escape(str(cfg.get('retrieval')))}, K = {cfg.get('k')}, epsilon = {cfg.get('epsilon')}. "
        f"Training pairs: {lab.get('pairs')} from {lab.get('questions')} questions, "
        f"{num(100 * (lab.get('positive_share') or 0), 1)}% positive "
        f"({num(100 * (lab.get('top1_positive_share') or 0), 1)}% of the top-1 documents), "
        f"{lab.get('failed')} failed.</p>",
    ]
    fc = result.get("forecasters", {})
    mode = (cfg.get("train") or {}).get("mode", "answer")
    if fc:
        parts.append("<h2>Forecasters (validation on held-out training questions)</h2>")
        parts.append(
            "<p>Early stopping and the temperature are fitted on the same validation questions these "
            "figures come from, so ECE and Brier here are optimistic; the test tables below are not.</p>"
        )
        parts.append(html_table(FORECASTER_COLUMNS, forecaster_rows(fc)))
    parts.append("<h2>Table 1: calibration baselines (zero-shot on the test questions; 95% bootstrap CIs)</h2>")
    parts.append(
        "<p>The decision is the surrogate user's, told the confidence. \"- CalibRAG\": the row's ECE "
        'or AUROC minus CalibRAG\'s on the same questions (paired bootstrap). "(answer)" columns grade '
        "the confidence against the guidance's own correctness instead: what a forecaster trained in "
        f"<code>answer</code> mode learned (this one: <code>{html.escape(str(mode))}</code> labels). NLL "
        "reads confidences clipped to [0.01, 0.99]. An unreadable verbal confidence counts as 0.5.</p>"
    )
    parts.append(html_table(TABLE1_COLUMNS, table1_rows(result.get("table1", []))))
    excluded = {ds: e for ds, e in (result.get("excluded") or {}).items() if e}
    if excluded:
        parts.append(
            "<p>Test questions left out: "
            + html.escape(
                "; ".join(f"{ds}: " + ", ".join(f"{n} ({why})" for why, n in e.items()) for ds, e in excluded.items())
            )
            + "</p>"
        )
    parts.append("<h2>Table 2: rerankers (the document the answer is built from; U told no confidence)</h2>")
    parts.append(html_table(TABLE2_COLUMNS, table2_rows(result.get("table2", []))))
    for ds in sorted({r["dataset"] for r in result.get("table1", [])}):
        cells = {
            LABELS.get(r["method"], r["method"]): (r["confidences"], r["labels"])
            for r in result["table1"]
            if r["dataset"] == ds and r.get("confidences")
        }
        if cells:
            title = f"{ds}: decision accuracy against stated confidence"
            parts.append(
                f"<h3>Reliability ({html.escape(ds)})</h3>"
                + save_figure(figs, f"reliability_{ds}.png", title, reliability_figure(cells, title))
            )
    _write_tables(out_dir, result)
    return write_page(out_dir / REPORT_FILE, result.get("name", ""), parts)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Tables 1 and 2 in a few lines, for the terminal when a study ends."""
    lines = [
        f"{r['dataset']} {LABELS.get(r['method'], r['method'])}: accuracy {ci_text(r['accuracy'], 100, 1)}%, "
        f"AUROC {ci_text(r.get('auroc'))}, ECE {ci_text(r.get('ece'))}, Brier {ci_text(r.get('brier'))}, "
        f"NLL {ci_text(r.get('nll'))}, %NA {ci_text(r['na'], 100, 1)}; against the guidance itself: AUROC "
        f"{ci_text(r.get('auroc_answer'))}, ECE {ci_text(r.get('ece_answer'))} ({r['n']} questions)"
        for r in result["table1"]
    ]
    return lines + [
        f"{r['dataset']} rerank {LABELS.get(r['reranker'], r['reranker'])}: guidance accuracy "
        f"{ci_text(r['guidance_accuracy'], 100, 1)}% (vs Base {ci_text(r.get('guidance_vs_base'), 100, 1)}), "
        f"decision accuracy {ci_text(r['decision_accuracy'], 100, 1)}% "
        f"(vs Base {ci_text(r.get('decision_vs_base'), 100, 1)})"
        for r in result["table2"]
    ]
