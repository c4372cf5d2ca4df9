"""Report tables shaped like the AwF paper's, rendered as Markdown, LaTeX (booktabs) and HTML.

- `awf_tables`: per model, methods (rows, grouped by answer generator) x datasets (best F1 and
  PR-AUC with 95% bootstrap intervals): the paper's Table 2 with the per-dataset detail of its
  Tables 6-7. With several datasets an "Avg F1" column follows Table 2's definition: the harmonic
  mean of the precision and of the recall at each dataset's best-F1 point, averaged over datasets.
- `fallback_table`: No-RAG fallback (the paper's Tables 3-4): accuracy gains of the
  cross-validated fallback over RAG-only answers, on all / answerable / unanswerable questions.
- `switch_table`: switching to a larger model (the paper's Table 5): accuracy at the switch rate
  against the random-switch baseline.
- `summary_table`: every summary column at the configured threshold, one row per cell; in a run
  that pruned its passages, the tokens the context pruner kept and saved per answer beside the costs.

Numbers are shown x100 (percent / percentage points) with one decimal; missing or undefined
values as an em dash (LaTeX "--"). Every text cell is escaped for its target format.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.metrics.awf import harmonic_f1

__all__ = [
    "Num",
    "Section",
    "Table",
    "awf_tables",
    "fallback_table",
    "generator_of",
    "latex_escape",
    "method_label",
    "slug",
    "summary_table",
    "switch_table",
    "write_tables",
]

UNIFIED_METHODS = ("intrinsic", "cot_hybrid", "dual_generation")


# --------------------------------------------------------------------------- cells
@dataclass(frozen=True)
class Num:
    """A number, optionally with an interval: shown as value x scale, e.g. "63.1 [61.0, 65.2]"."""

    value: float | None
    low: float | None = None
    high: float | None = None
    scale: float = 100.0
    digits: int = 1
    sign: bool = False  # "+1.2" for gains

    def _f(self, x: float | None) -> str | None:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{x * self.scale:{'+' if self.sign else ''}.{self.digits}f}"

    def parts(self) -> tuple[str | None, str | None]:
        v = self._f(self.value)
        lo, hi = self._f(self.low), self._f(self.high)
        ci = f"[{lo}, {hi}]" if lo is not None and hi is not None else None
        return v, ci


@dataclass(frozen=True)
class Section:
    """A row that starts a group of rows (e.g. one answer generator)."""

    label: str


Cell = str | int | float | Num | None
Row = Sequence[Cell] | Section

_LATEX_SPECIALS = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "→": r"$\rightarrow$",
    "Δ": r"$\Delta$",
    "—": "---",
    "×": r"$\times$",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIALS))


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters (& % $ # _ { } ~ ^ \\ < >) so the text prints as is;
    the few non-ASCII symbols the tables use (→ — ×) become their LaTeX commands."""
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group(0)], str(text))


def _plain(c: Cell) -> tuple[str | None, str | None]:
    if isinstance(c, Num):
        return c.parts()
    if c is None or (isinstance(c, float) and math.isnan(c)):
        return None, None
    if isinstance(c, float):
        return f"{c:.3g}", None
    return str(c), None


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


# --------------------------------------------------------------------------- table
@dataclass
class Table:
    """A titled table: header `columns`, `rows` (cell lists or Section markers), a `caption`."""

    name: str
    title: str
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    caption: str = ""

    def _body(self) -> list[Sequence[Cell]]:
        return [r for r in self.rows if not isinstance(r, Section)]

    def to_markdown(self) -> str:
        def esc(s: str) -> str:
            return s.replace("|", r"\|")

        def cell(c: Cell) -> str:
            v, ci = _plain(c)
            return "—" if v is None else esc(v + (f" {ci}" if ci else ""))

        out = [f"### {esc(self.title)}", ""]
        out.append("| " + " | ".join(esc(c) for c in self.columns) + " |")
        out.append(
            "|"
            + "|".join("---" if i == 0 else "---:" if self._numeric(i) else "---" for i in range(len(self.columns)))
            + "|"
        )
        for r in self.rows:
            if isinstance(r, Section):
                out.append("| **" + esc(r.label) + "** |" + " |" * (len(self.columns) - 1))
            else:
                out.append("| " + " | ".join(cell(c) for c in r) + " |")
        if self.caption:
            out += ["", esc(self.caption)]
        return "\n".join(out) + "\n"

    def to_latex(self) -> str:
        def cell(c: Cell) -> str:
            v, ci = _plain(c)
            if v is None:
                return "--"
            v = latex_escape(v)
            return v + (r"\,{\scriptsize " + latex_escape(ci) + "}" if ci else "")

        spec = "".join("r" if self._numeric(i) else "l" for i in range(len(self.columns)))
        k = len(self.columns)
        out = [
            r"\begin{table}[t]",
            r"\centering",
            r"\small",
            rf"\begin{{tabular}}{{{spec}}}",
            r"\toprule",
            " & ".join(latex_escape(c) for c in self.columns) + r" \\",
            r"\midrule",
        ]
        first = True
        for r in self.rows:
            if isinstance(r, Section):
                if not first:
                    out.append(r"\midrule")
                out.append(rf"\multicolumn{{{k}}}{{l}}{{\textit{{{latex_escape(r.label)}}}}} \\")
            else:
                out.append(" & ".join(cell(c) for c in r) + r" \\")
            first = False
        out += [r"\bottomrule", r"\end{tabular}"]
        cap = latex_escape(self.title + (". " + self.caption if self.caption else ""))
        out += [rf"\caption{{{cap}}}", rf"\label{{tab:{re.sub(r'[^A-Za-z0-9:-]+', '-', self.name)}}}", r"\end{table}"]
        return "\n".join(out) + "\n"

    def to_html(self) -> str:
        def cell(c: Cell) -> str:
            v, ci = _plain(c)
            if v is None:
                return "—"
            return html.escape(v) + (f' <span class="ci">{html.escape(ci)}</span>' if ci else "")

        k = len(self.columns)
        out = [f"<h3>{html.escape(self.title)}</h3>", '<table class="t">', "<thead><tr>"]
        out += [f"<th>{html.escape(c)}</th>" for c in self.columns]
        out.append("</tr></thead><tbody>")
        for r in self.rows:
            if isinstance(r, Section):
                out.append(f'<tr class="sec"><td colspan="{k}">{html.escape(r.label)}</td></tr>')
            else:
                out.append(
                    "<tr>"
                    + "".join(
                        f'<td class="{"n" if isinstance(c, (Num, int, float)) else "s"}">{cell(c)}</td>' for c in r
                    )
                    + "</tr>"
                )
        out.append("</tbody></table>")
        if self.caption:
            out.append(f'<p class="cap">{html.escape(self.caption)}</p>')
        return "\n".join(out) + "\n"

    def _numeric(self, i: int) -> bool:
        body = self._body()
        return bool(body) and all(isinstance(r[i], (Num, int, float)) or r[i] is None for r in body)


def slug(*parts: str) -> str:
    """A file name from its parts: "nq", "qwen2.5-0.5b" -> "nq_qwen2.5-0.5b"."""
    return "_".join(re.sub(r"[^A-Za-z0-9.+-]+", "-", p).strip("-") or "x" for p in parts)


def write_tables(out_dir: str | Path, tables: Sequence[Table]) -> None:
    """Each table as DIR/tables/NAME.md and NAME.tex (names are file names: `slug`)."""
    tdir = Path(out_dir) / "tables"
    tdir.mkdir(exist_ok=True)
    for t in tables:
        (tdir / f"{t.name}.md").write_text(t.to_markdown(), encoding="utf-8")
        (tdir / f"{t.name}.tex").write_text(t.to_latex(), encoding="utf-8")


# --------------------------------------------------------------------------- method names
def generator_of(method: str) -> str:
    """The answer generator of a method name: "vanilla+nli" -> "vanilla"; unified methods
    (intrinsic, cot_hybrid, dual_generation) -> "unified"; a bare generator is itself."""
    base = method.split("+", 1)[0]
    return "unified" if base in UNIFIED_METHODS else base


def method_label(method: str) -> str:
    """A bare generator is composed with the Trivial predictor: "vanilla" -> "vanilla+trivial"."""
    if "+" in method or method in UNIFIED_METHODS:
        return method
    return f"{method}+trivial"


def _method_order(methods: Sequence[str]) -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for m in methods:
        groups.setdefault(generator_of(m), []).append(m)
    keys = sorted(groups, key=lambda g: (g != "unified", g))
    # within a generator: the bare generator (Trivial) first, then its predictors
    return [(g, sorted(set(groups[g]), key=lambda m: ("+" in m, m))) for g in keys]


# --------------------------------------------------------------------------- AwF (Table 2 / 6-7)
def _avg_f1(rows: Sequence[Mapping[str, Any]]) -> float:
    p = [r["best_f1_precision"] for r in rows]
    q = [r["best_f1_recall"] for r in rows]
    if not rows or any(x is None or math.isnan(x) for x in p + q):
        return math.nan
    return harmonic_f1(sum(p) / len(p), sum(q) / len(q))


def _chance(cell: Mapping[tuple[str, str], Mapping[str, Any]], dataset: str, methods: Sequence[str]) -> float:
    """The random-score PR-AUC of a generator's answers on `dataset`, from the first of its methods
    with a row there (NaN if none has one)."""
    for m in methods:
        x = (cell.get((dataset, m)) or {}).get("pr_auc_random")
        if x is not None and not math.isnan(x):
            return float(x)
    return math.nan


def awf_tables(summary: Sequence[Mapping[str, Any]]) -> list[Table]:
    """One table per model: rows = methods grouped by generator, columns = per dataset best F1
    and PR-AUC (x100, 95% CI), plus Avg F1 when there are several datasets."""
    tables = []
    for model in sorted({r["model"] for r in summary}):
        rows_m = [r for r in summary if r["model"] == model]
        datasets = sorted({r["dataset"] for r in rows_m})
        cell = {(r["dataset"], r["method"]): r for r in rows_m}
        cols = ["Method"] + [f"{d} {k}" for d in datasets for k in ("best F1", "PR-AUC")]
        if len(datasets) > 1:
            cols.append("Avg F1")
        body: list[Row] = []
        for gen, methods in _method_order([r["method"] for r in rows_m]):
            # the PR-AUC of a random score: the chance level each of this generator's verifiers is
            # to be judged against (its methods share its answers, hence V and A; unified methods
            # each answer for themselves, so they have no common one)
            chance = (
                []
                if gen == "unified"
                else [f"{d} {100 * x:.1f}" for d in datasets if not math.isnan(x := _chance(cell, d, methods))]
            )
            body.append(Section(gen + (f" (random-score PR-AUC: {', '.join(chance)})" if chance else "")))
            for m in methods:
                line: list[Cell] = [method_label(m)]
                for d in datasets:
                    r = cell.get((d, m))
                    if r is None:
                        line += [None, None]
                        continue
                    line += [
                        Num(r["best_f1"], r["best_f1_low"], r["best_f1_high"]),
                        Num(r["pr_auc"], r["pr_auc_low"], r["pr_auc_high"]),
                    ]
                if len(datasets) > 1:
                    present = [cell[(d, m)] for d in datasets if (d, m) in cell]
                    line.append(Num(_avg_f1(present) if len(present) == len(datasets) else None))
                body.append(line)
        tables.append(
            Table(
                name=slug(f"awf-{model}"),
                title=f"AwF best F1 and PR-AUC, model {model}",
                columns=cols,
                rows=body,
                caption="x100, 95% bootstrap intervals in brackets. Best F1: maximum over thresholds "
                "(hard-label methods: the F1 of their label). PR-AUC of hard-label methods: "
                "precision x recall. Avg F1: harmonic mean of the mean precision and mean recall "
                "at each dataset's best-F1 point. Random-score PR-AUC: the expected PR-AUC of a score "
                "that knows nothing about that generator's answers, the chance level its "
                "verifiers are to be judged against (a unified method's own is in summary.json).",
            )
        )
    return tables


# --------------------------------------------------------------------------- applications
def fallback_table(results: Sequence[tuple[str, str, str, Mapping[str, Any]]]) -> Table:
    """No-RAG fallback: one row per (dataset, model, method, FallbackResult.to_dict())."""
    cols = [
        "Dataset",
        "Model",
        "Method",
        "n",
        "RAG acc",
        "No-RAG acc",
        "CV fallback rate",
        "CV acc",
        "Gain (all)",
        "Gain (answerable)",
        "Gain (unanswerable)",
        "Best acc (in-sample)",
        "Oracle acc",
        "Unpaired",
    ]
    body: list[Row] = []
    for ds, model, method, r in results:
        body.append(
            [
                ds,
                model,
                method_label(method),
                r["n"],
                Num(r["rag_accuracy"]),
                Num(r["norag_accuracy"]),
                Num(r["cv_fallback_rate"]),
                Num(r["cv_accuracy"]),
                Num(r["cv_gain"], r["cv_gain_low"], r["cv_gain_high"], sign=True),
                Num(r["cv_gain_answerable"], sign=True),
                Num(r["cv_gain_unanswerable"], sign=True),
                Num(r["best_accuracy"]),
                Num(r["oracle_accuracy"]),
                len(r["unpaired_rag"]) + len(r["unpaired_norag"]),
            ]
        )
    return Table(
        name="fallback",
        title="No-RAG fallback",
        columns=cols,
        rows=body,
        caption="Percent. The RAG answer is kept when its score reaches a threshold chosen by "
        "cross-validation, else the same model's no-RAG answer is used. Gain: CV accuracy "
        "minus RAG-only accuracy (percentage points, 95% bootstrap interval), also on "
        "answerable and unanswerable questions. Best acc: the in-sample maximum over "
        "thresholds (optimistic). Unpaired: examples present in only one run.",
    )


def switch_table(results: Sequence[tuple[str, str, str, str, Mapping[str, Any]]]) -> Table:
    """Switch to a larger model: one row per (dataset, small, large, method, SwitchResult.to_dict())."""
    cols = [
        "Dataset",
        "Small → large",
        "Method",
        "n",
        "Small acc",
        "Acc @ rate",
        "Random @ rate",
        "Gain vs random",
        "Oracle @ rate",
        "Large acc",
        "Rate",
        "Unpaired",
    ]
    body: list[Row] = []
    for ds, small, large, method, r in results:
        body.append(
            [
                ds,
                f"{small} → {large}",
                method_label(method),
                r["n"],
                Num(r["small_accuracy"]),
                Num(r["accuracy_at_rate"]),
                Num(r["random_at_rate"]),
                Num(r["gain_over_random"], sign=True),
                Num(r["oracle_at_rate"]),
                Num(r["large_accuracy"]),
                Num(r["achieved_rate"]),
                len(r["unpaired_small"]) + len(r["unpaired_large"]),
            ]
        )
    return Table(
        name="switch",
        title="Switch to a larger model",
        columns=cols,
        rows=body,
        caption="Percent. The lowest-scoring answers of the small model (a share `Rate` of "
        "the questions) are replaced by the larger model's answers. Random: the expected "
        "accuracy of switching the same share at random. Oracle: the best possible "
        "choice of that many questions.",
    )


def cost_table(units: Sequence[Mapping[str, Any]]) -> Table:
    """What the run spent per dataset x model (`grid.summary.spent_by_unit`)."""
    cols = ["Dataset", "Model", "Records", "Calls", "Cache hits", "Tokens read", "Tokens from cache", "Seconds"]
    body: list[Row] = [
        [
            u["dataset"],
            u["model"],
            u["records"],
            u["calls"],
            u["cache_hits"],
            Num(u["tokens_read"], scale=1, digits=0),
            Num(u["tokens_from_cache"], scale=1, digits=0),
            Num(u["seconds"], scale=1, digits=1),
        ]
        for u in units
    ]
    return Table(
        name="cost",
        title="What the run spent",
        columns=cols,
        rows=body,
        caption="Summed over methods and examples: each request counted once, by the method that "
        "made it. Tokens read: prompt and completion tokens of the requests the request "
        "cache did not answer. The per-method cost columns of the summary count, instead, "
        "everything a method used, shared with other methods or not.",
    )


def comparison_table(rows: Sequence[Mapping[str, Any]], confidence: float = 0.95) -> Table:
    """Paired differences method - baseline (grid.comparisons), one row per pair."""
    cols = [
        "Dataset",
        "Model",
        "Method",
        "Baseline",
        "n",
        "Best F1 (method / baseline)",
        "Δ best F1",
        "PR-AUC (method / baseline)",
        "Δ PR-AUC",
        "Δ accuracy",
    ]
    body: list[Row] = []
    for r in rows:
        if not r["n"]:
            continue

        def both(m: str) -> str:
            a, b = Num(r[f"{m}_method"]), Num(r[f"{m}_baseline"])  # noqa: B023
            return f"{_plain(a)[0] or '—'} / {_plain(b)[0] or '—'}"

        body.append(
            [
                r["dataset"],
                r["model"],
                method_label(r["method"]),
                method_label(r["baseline"]),
                r["n"],
                both("best_f1"),
                Num(r["best_f1_diff"], r["best_f1_diff_low"], r["best_f1_diff_high"], sign=True),
                both("pr_auc"),
                Num(r["pr_auc_diff"], r["pr_auc_diff_low"], r["pr_auc_diff_high"], sign=True),
                Num(r["accuracy_diff"], r["accuracy_diff_low"], r["accuracy_diff_high"], sign=True),
            ]
        )
    return Table(
        name="comparisons",
        title="Paired comparisons (method minus baseline, same examples)",
        columns=cols,
        rows=body,
        caption=f"x100. Δ: the method's value minus the baseline's on the examples both methods have "
        f"records for (errors and abstentions included), with a {confidence:.0%} bootstrap "
        f"interval of the difference (one resample of the question groups scores both "
        f"methods). An interval without 0 tells the two apart; with many comparisons, one "
        f"or two such intervals can be chance.",
    )


def summary_table(summary: Sequence[Mapping[str, Any]]) -> Table:
    """Every cell's metrics at the configured threshold, with accuracy and costs."""
    cols = [
        "Dataset",
        "Model",
        "Method",
        "n",
        "Errors",
        "Accuracy",
        "AwF P",
        "AwF R",
        "AwF F1",
        "QPP P",
        "QPP R",
        "Answered",
        "Abstained",
        "s / q",
        "tokens / q",
    ]
    pruned = any(_finite(r.get("prune_tokens_read_per_question")) for r in summary)
    if pruned:  # only a run that pruned has these columns; a cell that did not shows a dash, never 0
        cols += ["pruned: read / q", "saved / q", "saved"]
    body: list[Row] = []
    for r in summary:
        prune_cells: list[Cell] = (
            [
                Num(r.get("prune_tokens_read_per_question"), scale=1, digits=0),
                Num(r.get("prune_tokens_saved_per_question"), scale=1, digits=0),
                Num(r.get("prune_saved_share")),
            ]
            if pruned
            else []
        )
        body.append(
            [
                r["dataset"],
                r["model"],
                method_label(r["method"]),
                r["n"],
                r["n_errors"],
                Num(r["accuracy"], r["accuracy_low"], r["accuracy_high"]),
                Num(r["awf_precision"], r["awf_precision_low"], r["awf_precision_high"]),
                Num(r["awf_recall"], r["awf_recall_low"], r["awf_recall_high"]),
                Num(r["awf_f1"], r["awf_f1_low"], r["awf_f1_high"]),
                Num(r["qpp_precision"]),
                Num(r["qpp_recall"]),
                Num(r["answer_rate"]),
                Num(r["abstention_rate"]),
                Num(r["seconds_per_question"], scale=1, digits=2),
                Num(r["tokens_per_question"], scale=1, digits=0),
                *prune_cells,
            ]
        )
    rule = summary[0]["threshold_rule"] if summary else ""
    fitted = bool(summary) and summary[0]["threshold_cross_fitted"]
    return Table(
        name="summary",
        title=f"Metrics at the threshold ({rule})",
        columns=cols,
        rows=body,
        caption="Percent, 95% bootstrap intervals in brackets. Answered: share of scores at or "
        "above the threshold. Records with errors count in every denominator."
        + (
            " Pruned: the passage tokens the context pruner kept (read) and dropped (saved) per "
            "answer, and the share of them saved; — where the passages were not pruned."
            if pruned
            else ""
        )
        + (
            " The threshold is cross-fitted: each example is decided by a threshold fitted on the other folds."
            if fitted
            else ""
        ),
    )
