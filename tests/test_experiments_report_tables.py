"""Report tables: shape like the paper's, number formatting, escaping in Markdown / LaTeX / HTML."""

from __future__ import annotations

import math
import re

from verirag_lab.experiments.report.tables import (
    Num,
    Section,
    Table,
    awf_tables,
    fallback_table,
    generator_of,
    latex_escape,
    method_label,
    summary_table,
    switch_table,
)


def srow(dataset, method, f1=0.5, model="m", **kw):
    r = {
        "dataset": dataset,
        "model": model,
        "method": method,
        "n": 10,
        "n_errors": 0,
        "best_f1": f1,
        "best_f1_low": f1 - 0.1,
        "best_f1_high": f1 + 0.1,
        "pr_auc": 0.4,
        "pr_auc_low": 0.3,
        "pr_auc_high": 0.5,
        "best_f1_precision": 0.6,
        "best_f1_recall": 0.4,
        "threshold_rule": "s >= 0.5",
        "threshold_cross_fitted": False,
    }
    for m in ("accuracy", "awf_precision", "awf_recall", "awf_f1", "qpp_precision", "qpp_recall"):
        r.update({m: 0.5, f"{m}_low": 0.4, f"{m}_high": 0.6})
    r.update(answer_rate=0.5, abstention_rate=0.0, seconds_per_question=1.234, tokens_per_question=321.0)
    r.update(kw)
    return r


def test_method_names():
    assert generator_of("vanilla+nli") == "vanilla" and generator_of("instructrag") == "instructrag"
    assert generator_of("dual_generation") == "unified" and generator_of("cot_hybrid") == "unified"
    assert method_label("vanilla") == "vanilla+trivial" and method_label("vanilla+nli") == "vanilla+nli"
    assert method_label("intrinsic") == "intrinsic"


def test_num_formatting():
    assert Num(0.6312, 0.61, 0.65).parts() == ("63.1", "[61.0, 65.0]")
    assert Num(0.012, sign=True).parts() == ("+1.2", None)
    assert Num(float("nan")).parts() == (None, None)
    assert Num(1.234, scale=1, digits=2).parts() == ("1.23", None)


def test_awf_table_shape():
    rows = [
        srow(d, m, f1=0.5 + 0.01 * i)
        for i, (d, m) in enumerate(
            (d, m) for d in ("nq", "hotpot") for m in ("vanilla", "vanilla+nli", "intrinsic", "instructrag+nli")
        )
    ]
    rows.append(srow("nq", "vanilla", model="big"))
    tables = awf_tables(rows)
    assert [t.name for t in tables] == ["awf-big", "awf-m"]
    t = tables[1]
    assert t.columns == ["Method", "hotpot best F1", "hotpot PR-AUC", "nq best F1", "nq PR-AUC", "Avg F1"]
    sections = [r.label for r in t.rows if isinstance(r, Section)]
    assert sections == ["unified", "instructrag", "vanilla"]
    labels = [r[0] for r in t.rows if not isinstance(r, Section)]
    assert labels == ["intrinsic", "instructrag+nli", "vanilla+trivial", "vanilla+nli"]
    md = t.to_markdown()
    # columns: hotpot (f1 0.54 for vanilla, rows 4..7), then nq (0.50, rows 0..3)
    assert "| vanilla+trivial | 54.0 [44.0, 64.0] | 40.0 [30.0, 50.0] | 50.0 [40.0, 60.0] |" in md
    assert "| **vanilla** |" in md
    # Avg F1 = harmonic mean of the mean precision (0.6) and mean recall (0.4) = 0.48
    assert md.count("| 48.0 |") == 4
    # the single-dataset model has no Avg column; a method missing on a dataset shows a dash
    assert tables[0].columns == ["Method", "nq best F1", "nq PR-AUC"]
    t2 = awf_tables([srow("nq", "vanilla"), srow("hq", "vanilla+nli")])[0]
    assert "—" in t2.to_markdown()
    # a generator's section names the no-skill PR-AUC of its answers, per dataset
    # (from the first of its methods with a row there; none for the unified methods)
    t3 = awf_tables(
        [
            srow("nq", "vanilla", pr_auc_random=0.123),
            srow("nq", "vanilla+nli", pr_auc_random=0.123),
            srow("hq", "vanilla", pr_auc_random=float("nan")),
            srow("xq", "vanilla+nli", pr_auc_random=0.05),
            srow("nq", "intrinsic", pr_auc_random=0.2),
        ]
    )[0]
    assert [r.label for r in t3.rows if isinstance(r, Section)] == [
        "unified",
        "vanilla (random-score PR-AUC: nq 12.3, xq 5.0)",
    ]


def _unescaped(tex: str, ch: str) -> list[str]:
    return re.findall(r"(?<!\\)" + re.escape(ch), tex)


def test_latex_escaping_and_booktabs():
    assert latex_escape("a_b & 50% $x$ #1 {y} ~ ^ \\") == (
        r"a\_b \& 50\% \$x\$ \#1 \{y\} \textasciitilde{} \textasciicircum{} \textbackslash{}"
    )
    rows = [srow("nq_open & co", "vanilla+nli", model="m_1"), srow("nq_open & co", "intrinsic", model="m_1")]
    tex = awf_tables(rows)[0].to_latex()
    assert r"nq\_open \& co best F1" in tex and r"m\_1" in tex
    assert tex.count(r"\toprule") == tex.count(r"\midrule") - 1 == tex.count(r"\bottomrule") == 1
    assert r"\multicolumn{3}{l}{\textit{unified}}" in tex
    assert r"50.0\,{\scriptsize [40.0, 60.0]}" in tex
    assert r"\label{tab:awf-m-1}" in tex
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule")[0]
    for ch in "_%$#":
        assert not _unescaped(body, ch), ch
    # every data row has as many cells as the column spec
    spec = re.search(r"\\begin\{tabular\}\{(\w+)\}", tex).group(1)
    for line in body.strip().splitlines():
        if line.startswith(("\\multicolumn", "\\midrule")):
            continue
        assert len(re.split(r"(?<!\\)&", line)) == len(spec), line
    assert tex.count("{") - tex.count(r"\{") == tex.count("}") - tex.count(r"\}")


def test_html_and_markdown_escape():
    t = Table(name="x", title="<b>", columns=["a|b", "n"], rows=[["<script>", 1], Section("g&h")])
    h = t.to_html()
    assert "<script>" not in h and "&lt;script&gt;" in h and "g&amp;h" in h
    assert r"a\|b" in t.to_markdown()


def test_fallback_and_switch_tables():
    fb = {
        "n": 20,
        "rag_accuracy": 0.5,
        "norag_accuracy": 0.4,
        "cv_fallback_rate": 0.3,
        "cv_accuracy": 0.56,
        "cv_gain": 0.06,
        "cv_gain_low": 0.01,
        "cv_gain_high": 0.11,
        "cv_gain_answerable": -0.01,
        "cv_gain_unanswerable": 0.2,
        "best_accuracy": 0.6,
        "oracle_accuracy": 0.7,
        "unpaired_rag": ["e1"],
        "unpaired_norag": [],
    }
    t = fallback_table([("nq", "m", "instructrag+nli", fb)])
    md = t.to_markdown()
    assert "| nq | m | instructrag+nli | 20 | 50.0 | 40.0 | 30.0 | 56.0 | +6.0 [+1.0, +11.0] | -1.0 | +20.0 |" in md
    assert md.rstrip().splitlines()[4].endswith("| 1 |")
    sw = {
        "n": 10,
        "small_accuracy": 0.4,
        "accuracy_at_rate": 0.5,
        "random_at_rate": 0.44,
        "gain_over_random": 0.06,
        "oracle_at_rate": 0.6,
        "large_accuracy": 0.7,
        "achieved_rate": 0.2,
        "unpaired_small": [],
        "unpaired_large": ["e3", "e4"],
    }
    t = switch_table([("nq", "s", "l", "vanilla", sw)])
    md = t.to_markdown()
    assert "| nq | s → l | vanilla+trivial | 10 | 40.0 | 50.0 | 44.0 | +6.0 | 60.0 | 70.0 | 20.0 | 2 |" in md
    assert r"s $\rightarrow$ l" in t.to_latex()


def test_summary_table():
    t = summary_table([srow("nq", "vanilla+nli", accuracy=float("nan"))])
    md = t.to_markdown()
    assert "Metrics at the threshold (s >= 0.5)" in md
    assert "| nq | m | vanilla+nli | 10 | 0 | — | 50.0 [40.0, 60.0] |" in md
    assert "1.23 | 321 |" in md
    assert math.isnan(t.rows[0][5].value)


def test_summary_table_shows_tokens_saved_by_pruning_only_in_a_pruned_run():
    plain = summary_table([srow("nq", "vanilla+nli")])
    assert "pruned" not in plain.to_markdown() and len(plain.columns) == 15
    nan = float("nan")
    prune = {
        "prune_tokens_read_per_question": 75.0,
        "prune_tokens_saved_per_question": 325.0,
        "prune_saved_share": 0.8125,
    }
    off = dict.fromkeys(prune, nan)
    t = summary_table([srow("nq", "vanilla+nli", **prune), srow("nq", "vanilla", **off)])
    assert t.columns[-5:] == ["s / q", "tokens / q", "pruned: read / q", "saved / q", "saved"]
    md = t.to_markdown()
    assert "| 1.23 | 321 | 75 | 325 | 81.2 |" in md
    assert "| 1.23 | 321 | — | — | — |" in md  # not pruned: a dash, never 0
    assert "context pruner" in t.caption
