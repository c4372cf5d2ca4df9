"""The AwF grid's report of one run directory, rebuilt from DIR/results.jsonl and DIR/run.json alone.

`build_report(DIR)` writes into DIR:
- summary.csv, summary.json: one row per dataset x model x method (`grid.summary`);
- spent.json: what the run spent per dataset x model (`grid.summary.spent_by_unit`);
- applications.json: No-RAG fallback and switch-to-larger results with their curves, when
  run.json configures them (`grid.applications`);
- comparisons.json: paired differences between methods (`grid.comparisons`: the AwF
  paper's questions by default, and the pairs of `verirag report --compare BASELINE:METHOD`);
- tables/*.md and tables/*.tex: the tables of `report.tables`;
- figures/*.png: the figures of `report.plots`;
- report.html: one self-contained page (`verirag.evaluation.page`: inline CSS, images as data URIs,
  no external URL) with the run name, counts, an error summary, the tables and the figures.

run.json keys, all optional (defaults in brackets): name [the directory name], threshold
[{"value": 0.5}], bootstrap [1000 resamples, 0.95, seed 0], applications [none]:
  no_rag_fallback: {models: [...], fallback_method: "no_context", folds: 5}
  escalate: {small: M, large: M, large_method: "vanilla", rate: 0.2}
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.evaluation.page import REPORT_FILE, save_figure, write_page
from verirag.jsonio import write_json
from verirag.records import RESULTS_FILE, ResultRecord, ResultStore
from verirag_lab.experiments.grid.applications import no_rag_fallback, switch_to_larger
from verirag_lab.experiments.grid.comparisons import DEFAULT_PAIRS, compare_methods
from verirag_lab.experiments.grid.summary import (
    bootstrap_settings,
    group_records,
    is_hard,
    record_arrays,
    spent_by_unit,
    summarize,
    write_summary,
)
from verirag_lab.experiments.report import plots
from verirag_lab.experiments.report.tables import (
    Table,
    awf_tables,
    comparison_table,
    cost_table,
    fallback_table,
    method_label,
    slug,
    summary_table,
    switch_table,
    write_tables,
)

__all__ = ["REPORT_FILE", "RUN_FILE", "build_report", "load_run"]

RUN_FILE = "run.json"
# bootstrap resamples behind the figures' bands: enough for a visual 95% band, and it keeps a
# report of ~20k records within seconds (the tables use the configured number)
FIGURE_RESAMPLES = 200

Cells = dict[tuple[str, str, str], list[ResultRecord]]


# --------------------------------------------------------------------------- input
def load_run(run_dir) -> tuple[list[ResultRecord], dict[str, Any], int]:
    """(records, run config, skipped truncated lines) of a run directory; InputError when the
    directory, its results or its run.json are missing, empty or unreadable."""
    d = Path(run_dir)
    if not d.is_dir():
        raise InputError(f"run directory {d} does not exist")
    store = ResultStore(d)
    if not store.path.exists():
        raise InputError(f"no {RESULTS_FILE} in {d}: run an experiment into this directory first")
    records = store.load()
    if not records:
        raise InputError(
            f"{store.path} holds no result records"
            + (f" ({store.skipped_lines} unreadable lines)" if store.skipped_lines else "")
        )
    cfg: dict[str, Any] = {}
    run_json = d / RUN_FILE
    if run_json.exists():
        try:
            cfg = json.loads(run_json.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise InputError(f"{run_json} is not valid JSON: {e}") from None
        if not isinstance(cfg, dict):
            raise InputError(f"{run_json} must hold a JSON object")
    cfg.setdefault("name", d.resolve().name)
    return records, cfg, store.skipped_lines


# --------------------------------------------------------------------------- applications
def _fallbacks(
    cells: Cells, spec: Mapping[str, Any], seed: int, boot: Mapping[str, Any], warnings: list[str]
) -> list[tuple[str, str, str, Any]]:
    fb_method = spec.get("fallback_method", "no_context")
    folds = int(spec.get("folds", 5))
    models = spec.get("models") or sorted({m for _, m, _ in cells})
    out = []
    for ds in sorted({d for d, _, _ in cells}):
        for model in models:
            rag = [meth for d, m, meth in cells if d == ds and m == model and meth != fb_method]
            if not rag:
                continue
            norag = cells.get((ds, model, fb_method))
            if norag is None:
                warnings.append(f"No-RAG fallback: no {fb_method!r} records for {model} on {ds}")
                continue
            for meth in sorted(rag):
                try:
                    r = no_rag_fallback(
                        cells[(ds, model, meth)],
                        norag,
                        folds=folds,
                        seed=seed,
                        n_resamples=boot["n_resamples"],
                        confidence=boot["confidence"],
                    )
                except ValueError as e:
                    warnings.append(f"No-RAG fallback, {meth} / {model} / {ds}: {e}")
                    continue
                out.append((ds, model, meth, r))
    return out


def _switches(cells: Cells, spec: Mapping[str, Any], warnings: list[str]) -> list[tuple[str, str, str, str, Any]]:
    small, large = spec.get("small"), spec.get("large")
    large_method = spec.get("large_method", "vanilla")
    rate = float(spec.get("rate", 0.2))
    if not small or not large:
        warnings.append("escalate: run.json names no small and large model")
        return []
    out = []
    for ds in sorted({d for d, _, _ in cells}):
        methods = sorted(meth for d, m, meth in cells if d == ds and m == small)
        if not methods:
            continue
        big = cells.get((ds, large, large_method))
        if big is None:
            warnings.append(f"escalate: no {large_method!r} records of {large} on {ds}")
            continue
        for meth in methods:
            try:
                out.append((ds, small, large, meth, switch_to_larger(cells[(ds, small, meth)], big, rate)))
            except ValueError as e:
                warnings.append(f"escalate, {meth} / {ds}: {e}")
    return out


# --------------------------------------------------------------------------- figures
def _figures(cells: Cells, fallbacks, switches, rate: float, boot: Mapping[str, Any]) -> list[tuple[str, str, bytes]]:
    """[(file name, caption, png)] in page order."""
    # figures label methods as the tables do (a bare generator is "+trivial")
    colors = plots.method_colors([method_label(meth) for _, _, meth in cells])
    figs = []
    fb_boot = {
        "n_resamples": min(FIGURE_RESAMPLES, boot["n_resamples"]),
        "confidence": boot["confidence"],
        "seed": boot["seed"],
    }
    for ds, model in sorted({(d, m) for d, m, _ in cells}):
        pr, rel = {}, {}
        for (d, m, meth), recs in cells.items():
            if (d, m) != (ds, model):
                continue
            a = record_arrays(recs)
            hard = is_hard(recs)
            pr[method_label(meth)] = (a["score"], a["faithful"], a["answerable"], hard, list(a["group"]))
            if not hard:
                rel[method_label(meth)] = (a["score"], a["faithful"])
        figs.append(
            (
                f"awf_pr_{slug(ds, model)}.png",
                f"AwF and QPP precision-recall, {ds}, {model}",
                plots.awf_pr_figure(pr, f"{ds} · {model}", colors=colors, **fb_boot),
            )
        )
        if rel:
            figs.append(
                (
                    f"reliability_{slug(ds, model)}.png",
                    f"Reliability of the scores, {ds}, {model}",
                    plots.reliability_figure(rel, f"Reliability · {ds} · {model}", colors=colors),
                )
            )
    for ds, model in sorted({(d, m) for d, m, _, _ in fallbacks}):
        res = {method_label(meth): r for d, m, meth, r in fallbacks if (d, m) == (ds, model)}
        figs.append(
            (
                f"fallback_{slug(ds, model)}.png",
                f"No-RAG fallback, {ds}, {model}",
                plots.fallback_figure(res, f"No-RAG fallback · {ds} · {model}", colors=colors),
            )
        )
    for ds in sorted({d for d, *_ in switches}):
        res = {method_label(meth): r for d, _, _, meth, r in switches if d == ds}
        small, large = next((s, lg) for d, s, lg, _, _ in switches if d == ds)
        figs.append(
            (
                f"switch_{slug(ds)}.png",
                f"Switch {small} → {large}, {ds}",
                plots.switch_figure(res, rate, f"Switch {small} → {large} · {ds}", colors=colors),
            )
        )
    return figs


# --------------------------------------------------------------------------- HTML
def _error_summary(records: list[ResultRecord], n_first: int = 3) -> Table:
    by: dict[tuple[str, str], list[ResultRecord]] = defaultdict(list)
    for r in records:
        by[(r.model, r.method)].append(r)
    rows = []
    for (model, method), recs in sorted(by.items()):
        errs = [r.error for r in recs if r.error]
        if not errs:
            continue
        first = list(dict.fromkeys(e if len(e) <= 160 else e[:157] + "..." for e in errs))[:n_first]
        rows.append([model, method, len(errs), len(recs), " | ".join(first)])
    return Table(
        name="errors",
        title="Records with errors",
        columns=["Model", "Method", "Errors", "Records", f"First reasons (up to {n_first})"],
        rows=rows,
        caption="A record with an error keeps score 0 and stays in every denominator.",
    )


def _page_parts(cfg, records, skipped, tables: list[Table], figs, warnings: list[str], fig_dir: Path) -> list[str]:
    esc = html.escape
    name = str(cfg.get("name", "run"))
    datasets = defaultdict(set)
    for r in records:
        datasets[r.dataset].add(r.example_id)
    models = sorted({r.model for r in records})
    methods = sorted({r.method for r in records})
    n_err = sum(1 for r in records if r.error)
    parts = [
        f"<h1>verirag report: {esc(name)}</h1>",
        "<h2>Run</h2><ul>",
        f"<li>{len(records)} result records; {len(datasets)} dataset(s): "
        + ", ".join(f"{esc(d)} ({len(ids)} examples)" for d, ids in sorted(datasets.items()))
        + "</li>",
        f"<li>models: {', '.join(esc(m) for m in models)}</li>",
        f"<li>methods: {', '.join(esc(m) for m in methods)}</li>",
        f"<li>threshold: <code>{esc(json.dumps(cfg.get('threshold', {'value': 0.5})))}</code>; "
        f"bootstrap: <code>{esc(json.dumps(bootstrap_settings(cfg)))}</code></li>",
        f"<li>records with an error: {n_err} of {len(records)}"
        + (f"; {skipped} unreadable line(s) in {RESULTS_FILE} were skipped" if skipped else "")
        + "</li>",
        "</ul>",
    ]
    for w in warnings:
        parts.append(f'<p class="warn">{esc(w)}</p>')
    if n_err:
        parts += ["<h2>Errors</h2>", _error_summary(records).to_html()]
    parts.append("<h2>Tables</h2>")
    parts += [t.to_html() for t in tables]
    parts.append("<h2>Figures</h2>")
    parts += [save_figure(fig_dir, fname, caption, png) for fname, caption, png in figs]
    return parts


# --------------------------------------------------------------------------- entry point
def _run_failures(run_dir: Path) -> list[str]:
    """Run-level failures the runner logged (a model that did not load, a method its backend
    cannot serve): their records are missing, so the report says why."""
    path = run_dir / "failures.jsonl"
    if not path.exists():
        return []
    seen, out = set(), []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            f = json.loads(line)
        except json.JSONDecodeError:
            continue
        key = (f.get("dataset"), f.get("model"), f.get("method"), f.get("error"))
        if key not in seen:
            seen.add(key)
            out.append(f"not run: {f.get('dataset')} / {f.get('model')} / {f.get('method')}: {f.get('error')}")
    return out


def build_report(run_dir, compare: Sequence[tuple[str, str]] = ()) -> Path:
    """Rebuild every report file of `run_dir` (module docstring) and return report.html's path.
    `compare`: (baseline, method) pairs for the paired comparisons, beside DEFAULT_PAIRS."""
    d = Path(run_dir)
    records, cfg, skipped = load_run(d)
    boot = bootstrap_settings(cfg)
    rows = summarize(records, cfg)
    write_summary(rows, d)

    cells = group_records(records)
    apps = cfg.get("applications") or {}
    warnings: list[str] = _run_failures(d)
    fallbacks = (
        _fallbacks(cells, apps["no_rag_fallback"], boot["seed"], boot, warnings) if apps.get("no_rag_fallback") else []
    )
    switches = _switches(cells, apps["escalate"], warnings) if apps.get("escalate") else []
    rate = float((apps.get("escalate") or {}).get("rate", 0.2))
    for ds, model, meth, r in fallbacks:
        if r.unpaired_rag or r.unpaired_norag:
            warnings.append(
                f"No-RAG fallback, {meth} / {model} / {ds}: {len(r.unpaired_rag)} examples "
                f"without a no-RAG answer and {len(r.unpaired_norag)} without a RAG record "
                "were left out"
            )
    for ds, small, large, meth, r in switches:
        if r.unpaired_small or r.unpaired_large:
            warnings.append(
                f"escalate, {meth} / {ds}: {len(r.unpaired_small)} examples without a "
                f"{large} answer and {len(r.unpaired_large)} without a {small} record were left out"
            )
    if apps:
        (d / "applications.json").write_text(
            json.dumps(
                {
                    "no_rag_fallback": [
                        {"dataset": ds, "model": m, "method": meth, **r.to_dict()} for ds, m, meth, r in fallbacks
                    ],
                    "escalate": [
                        {"dataset": ds, "small": s, "large": lg, "method": meth, **r.to_dict()}
                        for ds, s, lg, meth, r in switches
                    ],
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )

    units = spent_by_unit(records)
    (d / "spent.json").write_text(json.dumps(units, indent=1) + "\n", encoding="utf-8")
    pairs = list(dict.fromkeys([*DEFAULT_PAIRS, *compare]))
    comparisons = compare_methods(records, pairs, boot)
    write_json(d / "comparisons.json", comparisons)
    tables = awf_tables(rows) + [summary_table(rows), cost_table(units)]
    if any(c["n"] for c in comparisons):
        tables.insert(len(tables) - 1, comparison_table(comparisons, boot["confidence"]))
    made = {(c["baseline"], c["method"]) for c in comparisons if c["n"]}
    missing = [f"{a}:{b}" for a, b in compare if (a, b) not in made]
    if missing:
        warnings.append(
            f"comparisons not made (a method is not in the run, or the two share no example): {', '.join(missing)}"
        )
    if fallbacks:
        tables.append(fallback_table([(ds, m, meth, r.to_dict()) for ds, m, meth, r in fallbacks]))
    if switches:
        tables.append(switch_table([(ds, s, lg, meth, r.to_dict()) for ds, s, lg, meth, r in switches]))
    write_tables(d, tables)

    figs = _figures(cells, fallbacks, switches, rate, boot)

    return write_page(
        d / REPORT_FILE,
        f"verirag report: {cfg.get('name', 'run')}",
        _page_parts(cfg, records, skipped, tables, figs, warnings, d / "figures"),
    )
