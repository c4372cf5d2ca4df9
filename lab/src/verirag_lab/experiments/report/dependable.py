"""The dependable-RAG study's report (Geissler et al.): Table 1a/1b and Figures 4-6 from DIR/study.json.

Figures (PNG in DIR/figures/): `figure4_<dataset>.png` (m1 and m2 against alpha per retriever, the
line 1 - alpha on m1), `figure5.png` (change of answer quality with the filter against
mean m1 - (1 - alpha), one point per dataset x retriever), `figure6.png` (held-out AUROC of the
lookback classifiers trained on one dataset and tested on each, CW and FC heatmaps).
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from verirag.evaluation.page import DPI, REPORT_FILE, html_table, num, save_figure, to_png, write_page


def figure4(rows: list[dict[str, Any]], dataset: str) -> Figure:
    fig = Figure(figsize=(8, 3.4), dpi=DPI)
    axes = fig.subplots(1, 2)
    mine = [r for r in rows if r["dataset"] == dataset]
    for kind in sorted({r["retriever"] for r in mine}):
        pts = sorted((r for r in mine if r["retriever"] == kind), key=lambda r: r["alpha"])
        a = [r["alpha"] for r in pts]
        for ax, m in zip(axes, ("m1", "m2")):
            ax.errorbar(
                a, [r[m] for r in pts], yerr=[_se(r[f"{m}_se"]) for r in pts], marker="o", ms=3, capsize=2, label=kind
            )
    alphas = sorted({r["alpha"] for r in mine})
    axes[0].plot(alphas, [1 - a for a in alphas], "k--", lw=1, label="1 - alpha")
    for ax, m in zip(axes, ("mean m1 (some chunk trusted)", "mean m2 (share of K trusted)")):
        ax.set_xlabel("alpha")
        ax.set_ylabel(m)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{dataset}: trusted chunks against the error rate (calibration questions)", fontsize=10)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.15, top=0.88, wspace=0.25)
    return fig


def figure5(rows: list[dict[str, Any]]) -> Figure:
    metrics = [m for m in ("correct", "consistency") if any(f"{m}_delta" in r for r in rows)]
    fig = Figure(figsize=(4.2 * max(1, len(metrics)), 3.6), dpi=DPI)
    axes = fig.subplots(1, max(1, len(metrics)), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        for r in rows:
            if f"{metric}_delta" not in r:
                continue
            lo, hi = r.get(f"{metric}_delta_low"), r.get(f"{metric}_delta_high")
            d = r[f"{metric}_delta"]
            yerr = [[d - lo], [hi - d]] if lo is not None and hi is not None else None
            ax.errorbar([r["m1_gap"]], [d], yerr=yerr, marker="o", capsize=2)
            ax.annotate(
                f"{r['dataset']}/{r['retriever']}",
                (r["m1_gap"], d),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
        ax.axhline(0, color="k", lw=0.8)
        ax.axvline(0, color="k", lw=0.8, ls="--")
        ax.set_xlabel("mean m1 - (1 - alpha)")
        ax.set_ylabel(
            {"correct": "accuracy change with the filter", "consistency": "consistency score change with the filter"}[
                metric
            ]
        )
        ax.grid(alpha=0.3)
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.15, top=0.95, wspace=0.35)
    return fig


def figure6(lookback: dict[str, Any]) -> Figure:
    fig = Figure(figsize=(8, 3.6), dpi=DPI)
    axes = fig.subplots(1, 2)
    for ax, variant in zip(axes, ("cw", "fc")):
        grid = lookback.get(variant) or {}
        names = sorted(grid)
        values = [[_nan(grid[s].get(t)) for t in names] for s in names]
        im = ax.imshow(values, vmin=0.3, vmax=1.0, cmap="viridis")
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set_xlabel("tested on")
        ax.set_ylabel("trained on")
        for i, row in enumerate(values):
            for j, v in enumerate(row):
                ax.text(
                    j,
                    i,
                    "n/a" if math.isnan(v) else f"{v:.2f}",
                    ha="center",
                    va="center",
                    color="w" if not math.isnan(v) and v < 0.7 else "k",
                    fontsize=9,
                )
        ax.set_title(
            {"cw": "chunk-wise (CW) lookback ratios", "fc": "full-context (FC) lookback ratios"}[variant], fontsize=9
        )
    fig.colorbar(im, ax=list(axes), shrink=0.8, label="held-out AUROC")
    return fig


def _nan(v: Any) -> float:
    return math.nan if v is None else float(v)


def _se(v: float) -> float:
    return 0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v


# (header, key) of each table's columns; a key missing from a row reads as None
TABLE1A = (
    ("dataset", "dataset"),
    ("retriever", "retriever"),
    ("cal. questions", "n_calibration"),
    ("m1 (cal)", "cal_m1"),
    ("SE", "cal_m1_se"),
    ("m2 (cal)", "cal_m2"),
    ("SE", "cal_m2_se"),
    ("test questions", "n_test"),
    ("m1 (test)", "test_m1"),
    ("SE", "test_m1_se"),
    ("m2 (test)", "test_m2"),
    ("SE", "test_m2_se"),
    ("coverage (test)", "coverage"),
    ("95% CI low", "coverage_low"),
    ("high", "coverage_high"),
)
TABLE1B = (
    ("dataset", "dataset"),
    ("retriever", "retriever"),
    ("questions", "n"),
    ("mean trusted", "mean_trusted"),
    ("none trusted", "empty_trusted"),
    ("accuracy (top K)", "correct_all"),
    ("accuracy (trusted)", "correct_filtered"),
    ("change", "correct_delta"),
    ("95% CI low", "correct_delta_low"),
    ("high", "correct_delta_high"),
    ("consistent (top K)", "consistent_all"),
    ("consistent (trusted)", "consistent_filtered"),
    ("consistency score (top K)", "consistency_all"),
    ("consistency score (trusted)", "consistency_filtered"),
    ("change", "consistency_delta"),
    ("95% CI low", "consistency_delta_low"),
    ("high", "consistency_delta_high"),
    ("m1 - (1 - alpha)", "m1_gap"),
)
LOOKBACK_CELLS = (
    ("trained on", "train"),
    ("tested on", "test"),
    ("train answers", "n_train"),
    ("test answers", "n_test"),
    ("test positives", "test_positives"),
    ("CW AUROC", "cw"),
    ("95% CI low", "cw_low"),
    ("high", "cw_high"),
    ("FC AUROC", "fc"),
    ("95% CI low", "fc_low"),
    ("high", "fc_high"),
    ("FC - CW", "fc_minus_cw"),
    ("95% CI low", "fc_minus_cw_low"),
    ("high", "fc_minus_cw_high"),
)


def keyed_table(columns: tuple[tuple[str, str], ...], rows: list[dict[str, Any]], *extra: tuple[str, Any]) -> str:
    """`html_table` of `rows` read by `columns`' keys; each `extra` (header, function of a row) is appended."""
    headers = [h for h, _ in columns] + [h for h, _ in extra]
    return html_table(headers, [[r.get(k) for _, k in columns] + [f(r) for _, f in extra] for r in rows])


def build_dependable_report(out_dir: str | Path, result: dict[str, Any]) -> Path:
    out_dir = Path(out_dir)
    figs = out_dir / "figures"
    parts = [f"<h1>{html.escape(result.get('name', 'dependable'))}: dependable RAG (Geissler et al.)</h1>"]
    parts += _table1a(result.get("table1a", []))
    parts += _figure4(figs, result.get("figure4", []))
    parts += _table1b(figs, result.get("table1b", []), result.get("config", {}).get("generation", {}))
    parts += _figure6(figs, result.get("figure6") or {})
    secs = result.get("seconds") or {}
    if secs:
        parts.append("<h2>Wall time of this run (seconds)</h2>")
        parts.append(html_table(["stage", "seconds"], [[k, v] for k, v in secs.items()]))
    return write_page(out_dir / REPORT_FILE, result.get("name", ""), parts)


def _table1a(t1a: list[dict[str, Any]]) -> list[str]:
    alpha, k = (num(t1a[0]["alpha"], 2), t1a[0]["k"]) if t1a else ("–", "–")
    parts = [
        f"<h2>Table 1a: trusted chunks at alpha = {alpha}, K = {k}</h2>",
        keyed_table(TABLE1A, t1a, ("guarantee", lambda r: "holds" if r["holds"] else "fails")),
    ]
    for r in t1a:
        if r.get("warning"):
            parts.append(
                f'<p class="warn">{html.escape(r["dataset"])}/{html.escape(r["retriever"])}: '
                f"{html.escape(r['warning'])}</p>"
            )
    return parts


def _figure4(figs: Path, rows: list[dict[str, Any]]) -> list[str]:
    parts = []
    for ds in sorted({r["dataset"] for r in rows}):
        png = to_png(figure4(rows, ds))
        caption = f"m1 and m2 against alpha, {ds}"
        parts.append(f"<h3>Figure 4 ({html.escape(ds)})</h3>" + save_figure(figs, f"figure4_{ds}.png", caption, png))
    return parts


def _table1b(figs: Path, t1b: list[dict[str, Any]], generation: dict[str, Any]) -> list[str]:
    if not t1b:
        return []
    parts = ["<h2>Table 1b: answers without and with the filter (paired over questions)</h2>"]
    by = generation.get("consistency") or ("judge" if generation.get("judge_model") else None)
    if by == "k_precision":
        parts.append(
            f"<p>Consistency: K-Precision of the answer against the passages it was given, "
            f"consistent from {generation.get('consistency_threshold', 0.8)}.</p>"
        )
    elif by == "judge":
        parts.append(
            f"<p>Consistency: the LLM faithfulness judge {html.escape(str(generation.get('judge_model')))}"
            f" (score: its P(yes)).</p>"
        )
    parts.append(keyed_table(TABLE1B, t1b))
    caption = "answer quality change against m1 - (1 - alpha)"
    parts.append("<h3>Figure 5</h3>" + save_figure(figs, "figure5.png", caption, to_png(figure5(t1b))))
    return parts


def _figure6(figs: Path, lb: dict[str, Any]) -> list[str]:
    if not (lb.get("cw") or lb.get("fc")):
        return []
    parts = [
        f"<h2>Figure 6: lookback classifiers ({html.escape(lb['attention_model'])}, label "
        f"{html.escape(lb['label'])}, {lb['n_samples']} answers, {lb['positives']} positive, "
        f"{lb['errors']} without features)</h2>",
        save_figure(figs, "figure6.png", "held-out AUROC of the CW and FC classifiers", to_png(figure6(lb))),
    ]
    if lb.get("cells"):
        parts.append(
            "<p>Held-out AUROC with 95% bootstrap intervals over the test answers; FC - CW is "
            "paired (one resample scores both classifiers).</p>"
        )
        parts.append(keyed_table(LOOKBACK_CELLS, lb["cells"]))
    return parts


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Tables 1a and 1b in a few lines, for the terminal when a study ends."""
    lines = [
        f"{r['dataset']}/{r['retriever']}: m1 {r['test_m1']:.3f} (SE {r['test_m1_se']:.3f}), m2 "
        f"{r['test_m2']:.3f}; held-out coverage {r['coverage']:.3f} [{r['coverage_low']:.3f}, "
        f"{r['coverage_high']:.3f}]"
        for r in result["table1a"]
    ]
    return lines + [
        f"{r['dataset']}/{r['retriever']}: accuracy {r['correct_all']:.3f} -> "
        f"{r['correct_filtered']:.3f} with the filter ({r['n']} questions)"
        for r in result["table1b"]
        if "correct_delta" in r
    ]
