"""OUT/report.html of a verified log: the summary, a score histogram, then every answer, the flagged
ones first (failed verifications, unverified answers, unsupported answers lowest score first, then
malformed lines),
each with the passage that supports it best (the closest one when it is unsupported).
Written by the reports' one page writer (`verirag.evaluation.page`): one self-contained file."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from verirag.evaluation.page import REPORT_FILE, html_table, num, save_figure, to_png, write_page

FIGURES_DIR = "figures"
# the two numbers of a row, named as the service's web page names them
NUMBERS_NOTE = (
    "answer score: how well the passages, together, support the whole answer (the verdict compares it with "
    "the threshold); passage support: how well the one passage shown supports the answer on its own."
)
EXCERPT_CHARS = 600
ROW_CSS = """
.badge{display:inline-block;padding:0 .5em;border-radius:.6em;font-size:.8em;color:#fff}
.bad{background:#c0392b}.ok{background:#27ae60}.err{background:#7f8c8d}.unv{background:#8e44ad}
table.answers td{vertical-align:top;font-size:.85em;border-bottom:1px solid #e3e3e3;padding:.35em .5em}
table.answers{border-collapse:collapse;width:100%}
.pass{color:#444;font-size:.92em}
"""


def score_histogram(scores: Sequence[float], labels: Sequence[int | None], threshold: float | None) -> bytes:
    """The verified answers' scores in 20 bins on [0, 1], split by label where there are labels,
    with the threshold as a vertical line."""
    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.add_subplot()
    bins = np.linspace(0.0, 1.0, 21)
    s = np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
    y = np.asarray([np.nan if v is None else v for v in labels], dtype=np.float64)
    if np.isfinite(y).any():
        parts = [s[y == 1], s[y == 0], s[np.isnan(y)]]
        names = ["labelled supported", "labelled unsupported", "unlabelled"]
        keep = [i for i, p in enumerate(parts) if p.size]
        ax.hist(
            [parts[i] for i in keep],
            bins=bins,
            stacked=True,
            label=[names[i] for i in keep],
            color=[("#27ae60", "#c0392b", "#95a5a6")[i] for i in keep],
        )
        ax.legend(fontsize=8)
    else:
        ax.hist(s, bins=bins, color="#34495e")
    if threshold is not None and np.isfinite(threshold):
        ax.axvline(threshold, color="#e67e22", linestyle="--", linewidth=1.5)
        ax.text(
            threshold, ax.get_ylim()[1] * 0.95, f" threshold {threshold:.2f}", color="#e67e22", fontsize=8, va="top"
        )
    ax.set_xlim(0, 1)
    ax.set_xlabel("faithfulness score")
    ax.set_ylabel("answers")
    ax.set_title(f"{len(s)} verified answers")
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.15, top=0.9)
    return to_png(fig)


def flagged_first(records: Sequence[dict[str, Any]]) -> list[int]:
    """Positions of `records` in report order: failed, then unverified, then unsupported by rising
    score, then malformed lines, then supported by rising score."""

    def rank(i: int) -> tuple:
        r = records[i]
        group = {"failed": 0, "unverified": 1, "malformed": 3}.get(r["status"], 2 if not r["supported"] else 4)
        return group, r["score"] if r["score"] is not None else -1.0, r["line"]

    return sorted(range(len(records)), key=rank)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "…"


def _verdict(r: dict[str, Any]) -> str:
    if r["status"] == "malformed":
        return '<span class="badge err">malformed</span>'
    if r["status"] == "failed":
        return '<span class="badge err">failed</span>'
    if r["status"] == "unverified":
        return '<span class="badge unv">unverified</span>'
    return '<span class="badge ok">supported</span>' if r["supported"] else '<span class="badge bad">unsupported</span>'


def _texts(r: dict[str, Any]) -> str:
    qa = [f"<b>{name}:</b> {html.escape(r[key])}" for name, key in (("Q", "question"), ("A", "answer")) if r.get(key)]
    if r["status"] == "malformed":  # what parsed of the line, then its start as written
        qa.append(f"<code>{html.escape(r.get('line_text') or '')}</code>")
    return "<br>".join(qa)


def _row(r: dict[str, Any], label: int | None, labelled: bool) -> str:
    e = html.escape
    sp = r.get("supporting_passage")
    if sp:
        kind = "evidence" if r["supported"] else "closest passage"
        name = e(sp["id"]) + (f" ({e(sp['title'])})" if sp.get("title") else "")
        passage = (
            f'<div class="pass"><b>{kind}</b> {name}, passage support {num(sp.get("support_score"))}: '
            f"{e(_excerpt(sp['text']))}</div>"
        )
    else:
        passage = ""
    notes = [f'<div class="warn">{e(r["error"])}</div>'] if r.get("error") else []
    if r.get("unverified"):
        notes.append(f'<div class="warn">unverified: {e(r["unverified"].get("message", ""))}</div>')
    notes += [f'<div class="cap">{e(w)}</div>' for w in r.get("warnings") or []]
    # a label column only where the log has labels: no column of dashes for a field it lacks
    label_text = {1: "supported", 0: "unsupported"}.get(label, "–")
    label_cell = f"<td>{e(label_text)}</td>" if labelled else ""
    return (
        f'<tr><td>{e(str(r["id"]))}<br><span class="cap">line {r["line"]}</span></td>'
        f"<td>{_verdict(r)}<br>{num(r['score'])}</td>{label_cell}"
        f"<td>{_texts(r)}{passage}{''.join(notes)}</td></tr>"
    )


def _fields_text(fields: dict[str, Any]) -> str:
    named = ", ".join(f"{k} {fields[k]!r}" for k in ("question", "answer", "contexts") if fields.get(k))
    extra = [f"references {' | '.join(fields['references'])!r}"] if fields.get("references") else []
    extra += [f"label {fields['label']!r}"] if fields.get("label") else []
    extra += [f"history {fields['history']!r}"] if fields.get("history") else []
    return f"format {fields['format']}: " + ", ".join([named, *extra])


def _summary_table(summary: dict[str, Any]) -> str:
    s = summary
    v = s["verifier"]
    rows = [
        ("lines", s["lines"]),
        ("answers (verified + unverified + failed)", s["answers"]),
        ("supported", s["supported"]),
        ("unsupported", s.get("unsupported")),
        ("unverified (the judge cannot judge them)", s.get("unverified")),
        ("share supported", s["share_supported"]),
        ("share unverified", s.get("share_unverified")),
        ("failed to verify", s["failed"]),
        ("malformed lines", s["malformed"]),
        ("method", v.get("method")),
        ("judge", v.get("judge")),
        *([("model", v["model"])] if v.get("model") else []),  # only where an LLM judged
        ("threshold", v.get("threshold")),
    ]
    rows += [(f"score {k}", q) for k, q in s["scores"]["quantiles"].items()]
    body = "".join(f'<tr><td>{html.escape(k)}</td><td class="n">{html.escape(num(x))}</td></tr>' for k, x in rows)
    return f'<table class="t"><tr><th>summary</th><th></th></tr>{body}</table>'


def _labels_table(lab: dict[str, Any]) -> str:
    if not lab.get("auroc"):
        return f"<p>Labels ({html.escape(lab['meaning'])}): none on a verified answer.</p>"
    rows = [
        [name, lab[key]["estimate"], lab[key]["low"], lab[key]["high"]]
        for name, key in (
            ("AUROC of the score", "auroc"),
            ("PR-AUC of the score", "pr_auc"),
            ("precision of the verdict", "precision"),
            ("recall of the verdict", "recall"),
        )
    ]
    cap = (
        f"{lab['labelled']} labelled answers, {lab['positives']} labelled supported; labels: "
        f"{lab['meaning']}. {lab['confidence']:.0%} percentile bootstrap intervals over "
        f"{lab['n_resamples']} resamples of the answers; PR-AUC by chance {num(lab['chance_pr_auc'])}; "
        f"{lab['note']}."
    )
    return html_table(["", "estimate", "low", "high"], rows) + f'<p class="cap">{html.escape(cap)}</p>'


def write_report(
    out_dir: str | Path, summary: dict[str, Any], records: Sequence[dict[str, Any]], labels: Sequence[int | None]
) -> Path:
    """OUT/report.html (and OUT/figures/score_histogram.png); `labels[i]` is records[i]'s label."""
    out_dir = Path(out_dir)
    verified = [(r, y) for r, y in zip(records, labels) if r["status"] == "verified"]
    cut = summary["verifier"].get("threshold")
    png = score_histogram([r["score"] for r, _ in verified], [y for _, y in verified], cut)
    parts = [
        f"<style>{ROW_CSS}</style>",
        f"<h1>verirag verify: {html.escape(Path(summary['log']).name)}</h1>",
        f'<p class="cap">Log {html.escape(summary["log"])}; {html.escape(_fields_text(summary["fields"]))}.</p>',
        *(f'<p class="warn">warning: {html.escape(w)}</p>' for w in summary.get("warnings") or []),
        _summary_table(summary),
        save_figure(out_dir / FIGURES_DIR, "score_histogram.png", "Faithfulness scores of the verified answers", png),
    ]
    if summary.get("labels"):
        parts += ["<h2>Against the labels</h2>", _labels_table(summary["labels"])]
    order = flagged_first(records)
    flagged = sum(1 for r in records if r["status"] != "verified" or not r["supported"])
    labelled = bool(summary["fields"].get("label"))
    parts += [
        f"<h2>Answers, flagged first ({flagged} flagged of {len(records)})</h2>",
        f'<p class="cap">{html.escape(NUMBERS_NOTE)}</p>',
        (
            '<table class="answers"><tr><th>id</th><th>verdict, answer score</th>'
            + ("<th>label</th>" if labelled else "")
            + "<th>question, answer, passage</th></tr>"
        ),
        *(_row(records[i], labels[i], labelled) for i in order),
        "</table>",
    ]
    return write_page(out_dir / REPORT_FILE, "verirag verify report", parts)
