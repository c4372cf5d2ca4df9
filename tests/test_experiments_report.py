"""The report of a run directory: files, a self-contained HTML page, figures, input errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from verirag.errors import InputError
from verirag.metrics import stats
from verirag.metrics.awf import awf_curve
from verirag.records import ResultRecord, ResultStore
from verirag_lab.experiments.report import plots
from verirag_lab.experiments.report.awf import build_report

PNG = b"\x89PNG\r\n\x1a\n"
SMALL, LARGE = "tiny-0.5b", "big_1.5b"


def make_records(n=60, seed=0, datasets=("nq", "hotpot_qa")):
    """Per dataset, the small model runs four methods and the no-RAG generator, the large one vanilla."""
    rng = np.random.default_rng(seed)
    recs = []
    for ds in datasets:
        A = rng.random(n) < 0.7
        for model, methods, skill in (
            (SMALL, ("vanilla", "vanilla+nli", "intrinsic", "no_context"), 0.5),
            (LARGE, ("vanilla",), 0.7),
        ):
            for meth in methods:
                hard = meth in ("vanilla", "intrinsic", "no_context")
                for i in range(n):
                    c = bool(rng.random() < (skill if A[i] else 0.2))
                    s = float(np.clip(0.4 * (A[i] and c) + 0.6 * rng.random(), 0, 1))
                    err = "backend failure: HTTP 500" if (meth == "vanilla+nli" and i < 2) else None
                    if hard or err:
                        s = float(s >= 0.5) if not err else 0.0
                    recs.append(
                        ResultRecord(
                            dataset=ds,
                            model=model,
                            method=meth,
                            example_id=f"{ds}-{i}",
                            question="q",
                            answer="a",
                            score=s,
                            hard=hard,
                            answerable=int(A[i]),
                            correct=int(c),
                            faithful=int(A[i] and c),
                            error=err,
                            group=f"{ds}-g{i // 2}",
                            seconds=0.5,
                            prompt_tokens=100,
                            completion_tokens=8,
                        )
                    )
    return recs


RUN = {
    "name": "unit & <test>",
    "threshold": {"value": 0.5},
    "applications": {
        "no_rag_fallback": {"models": [SMALL], "fallback_method": "no_context", "folds": 5},
        "escalate": {"small": SMALL, "large": LARGE, "large_method": "vanilla", "rate": 0.2},
    },
    "bootstrap": {"n_resamples": 200, "confidence": 0.95, "seed": 0},
}


def write_run(d, records, run=RUN):
    store = ResultStore(d)
    for r in records:
        store.append(r)
    if run is not None:
        (d / "run.json").write_text(json.dumps(run))
    return d


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    recs = make_records()
    # an example the small model answered with RAG but not without: unpaired, reported
    recs.append(
        ResultRecord(
            dataset="nq",
            model=SMALL,
            method="vanilla+nli",
            example_id="nq-extra",
            question="q",
            answer="a",
            score=0.7,
            hard=False,
            answerable=1,
            correct=1,
            faithful=1,
        )
    )
    write_run(d, recs)
    return d, build_report(d)


# --------------------------------------------------------------------------- files
def test_report_writes_every_file(built):
    d, html_path = built
    assert html_path == d / "report.html" and html_path.exists()
    for f in ("summary.csv", "summary.json", "applications.json"):
        assert (d / f).exists(), f
    tables = sorted(p.name for p in (d / "tables").iterdir())
    for stem in (f"awf-{SMALL}", "awf-big-1.5b", "summary", "fallback", "switch"):
        assert f"{stem}.md" in tables and f"{stem}.tex" in tables, stem
    figs = sorted(p.name for p in (d / "figures").iterdir())
    assert "awf_pr_nq_tiny-0.5b.png" in figs and "switch_hotpot-qa.png" in figs
    assert any(f.startswith("fallback_") for f in figs) and any(f.startswith("reliability_") for f in figs)
    for f in (d / "figures").iterdir():
        assert f.read_bytes().startswith(PNG)
    summary = json.loads((d / "summary.json").read_text())
    assert len(summary) == 2 * 5  # 2 datasets x (4 small-model methods + 1 large)


def test_html_is_self_contained(built):
    d, html_path = built
    h = html_path.read_text()
    assert not re.search(r"https?://", h)
    for m in re.finditer(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""", h):
        assert m.group(1).startswith("data:"), m.group(1)
    assert "<link" not in h and "<script" not in h and "@import" not in h
    imgs = re.findall(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', h)
    assert len(imgs) == len(list((d / "figures").iterdir()))
    import base64

    assert base64.b64decode(imgs[0]).startswith(PNG)
    assert "<style>" in h


def test_html_content(built):
    _, html_path = built
    h = html_path.read_text()
    assert "unit &amp; &lt;test&gt;" in h  # the run name, escaped
    assert "records with an error: 4 of" in h
    assert "backend failure: HTTP 500" in h  # first reasons, by method
    assert "No-RAG fallback" in h and "Switch to a larger model" in h
    assert "vanilla+trivial" in h
    # the unpaired example is reported, not dropped silently
    assert "1 examples without a no-RAG answer" in h
    assert "without a big_1.5b answer" in h


def test_applications_json_reports_unpaired(built):
    d, _ = built
    apps = json.loads((d / "applications.json").read_text())
    fb = next(a for a in apps["no_rag_fallback"] if a["dataset"] == "nq" and a["method"] == "vanilla+nli")
    assert fb["unpaired_rag"] == ["nq-extra"] and fb["n"] == 60
    assert {a["method"] for a in apps["no_rag_fallback"]} == {"vanilla", "vanilla+nli", "intrinsic"}
    sw = next(a for a in apps["escalate"] if a["dataset"] == "nq" and a["method"] == "vanilla+nli")
    assert sw["unpaired_small"] == ["nq-extra"] and sw["achieved_rate"] == pytest.approx(0.2)


# --------------------------------------------------------------------------- input errors
def test_empty_or_missing_results_raise_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        build_report(tmp_path / "nope")
    with pytest.raises(InputError, match="no results.jsonl"):
        build_report(tmp_path)
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(InputError, match="holds no result records"):
        build_report(tmp_path)
    (tmp_path / "results.jsonl").write_text('{"truncated": \n')
    with pytest.raises(InputError, match="unreadable"):
        build_report(tmp_path)


def test_bad_run_json_raises_input_error(tmp_path):
    write_run(tmp_path, make_records(n=6)[:6], run=None)
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        build_report(tmp_path)


def test_defaults_without_run_json_and_missing_application_inputs(tmp_path):
    recs = [r for r in make_records(n=8, datasets=("nq",)) if r.method != "no_context"]
    write_run(tmp_path, recs, run=None)
    h = build_report(tmp_path).read_text()
    assert tmp_path.name in h  # the name defaults to the directory
    assert not (tmp_path / "applications.json").exists()
    # applications configured, but the no-RAG answers and the large model's method are absent
    run = {
        **RUN,
        "applications": {
            "no_rag_fallback": {"models": [SMALL]},
            "escalate": {"small": SMALL, "large": LARGE, "large_method": "instructrag"},
        },
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    h = build_report(tmp_path).read_text()
    assert "no &#x27;no_context&#x27; records for tiny-0.5b" in h
    assert "no &#x27;instructrag&#x27; records of big_1.5b" in h


def test_tiny_run_builds(tmp_path):
    # 2 examples per cell: bootstrap and CV still run (or say why not)
    write_run(tmp_path, make_records(n=2, datasets=("nq",)))
    h = build_report(tmp_path).read_text()
    assert "report" in h


# --------------------------------------------------------------------------- figures
def test_pr_band_brackets_the_curve():
    rng = np.random.default_rng(0)
    n = 400
    A = (rng.random(n) < 0.7).astype(int)
    V = A * (rng.random(n) < 0.7)
    s = np.clip(0.4 * V + 0.6 * rng.random(n), 0, 1)
    grid, lo, hi = plots.pr_band(s, V, A, n_resamples=300)
    c = awf_curve(s, V, A)
    # the curve's precision at each recall level: the first threshold reaching it
    k = np.searchsorted(c.recall, grid, side="left")
    ok = (k < len(c.recall)) & ~np.isnan(lo)
    p = c.precision[np.minimum(k, len(c.recall) - 1)]
    inside = (lo[ok] <= p[ok] + 1e-12) & (p[ok] <= hi[ok] + 1e-12)
    assert ok.sum() > 40 and inside.mean() > 0.9
    assert np.isnan(lo[grid > c.recall.max() + 0.1]).all()  # beyond the reachable recall: no band
    assert np.all((lo[ok] >= 0) & (hi[ok] <= 1) & (lo[ok] <= hi[ok]))


def test_bands_resample_question_groups():
    """Twins (one question asked twice, one group) are drawn together: the band and the error bars
    of the doubled examples are those of the single copy. Without groups they would be narrower."""
    rng = np.random.default_rng(3)
    n = 120
    A = (rng.random(n) < 0.7).astype(int)
    V = A * (rng.random(n) < 0.7)
    s = np.clip(0.4 * V + 0.6 * rng.random(n), 0, 1)
    groups = [f"q{i:03d}" for i in range(n)]
    two = lambda x: np.repeat(x, 2)  # noqa: E731  (e0, e0, e1, e1, ...: each twin beside its sibling)
    one = plots.pr_band(s, V, A, n_resamples=300, groups=groups)
    twins = plots.pr_band(two(s), two(V), two(A), n_resamples=300, groups=list(np.repeat(groups, 2)))
    for a, b in zip(one, twins):
        np.testing.assert_allclose(a, b)
    flat = plots.pr_band(two(s), two(V), two(A), n_resamples=300)
    ok = ~np.isnan(one[1]) & ~np.isnan(flat[1])
    assert np.mean((flat[2] - flat[1])[ok]) < np.mean((one[2] - one[1])[ok])
    v = (s >= 0.5).astype(int)
    np.testing.assert_allclose(
        plots.point_interval(two(v), two(V), two(A), n_resamples=200, groups=list(np.repeat(groups, 2))),
        plots.point_interval(v, V, A, n_resamples=200, groups=groups),
    )


def test_error_bars_resample_groups_of_any_size():
    """point_interval with groups of 1, 2 and 3 examples (their labels differ) against a
    brute-force cluster bootstrap on the same draws of groups."""
    rng = np.random.default_rng(5)
    sizes = [1, 2, 3] * 20
    groups = [f"q{g:02d}" for g, k in enumerate(sizes) for _ in range(k)]
    n = len(groups)
    A = (rng.random(n) < 0.8).astype(int)
    V = A * (rng.random(n) < 0.6)
    v = (rng.random(n) < np.where(V == 1, 0.8, 0.3)).astype(int)
    (plo, phi), (rlo, rhi) = plots.point_interval(v, V, A, n_resamples=300, seed=2, groups=groups)
    members = [[i for i, g in enumerate(groups) if g == name] for name in sorted(set(groups))]
    P, R = [], []
    for chunk in stats.resample_indices(len(members), 300, 2):
        for draw in chunk:
            ix = [i for g in draw for i in members[g]]
            tp = int((v[ix] * V[ix]).sum())
            P.append(tp / v[ix].sum() if v[ix].sum() else 1.0)
            R.append(tp / A[ix].sum() if A[ix].sum() else 1.0)
    assert (plo, phi) == pytest.approx(stats.percentile_interval(P))
    assert (rlo, rhi) == pytest.approx(stats.percentile_interval(R))


def test_point_interval_contains_estimate():
    v = np.array([1, 1, 0, 1, 0, 1, 1, 0] * 10)
    V = np.array([1, 0, 0, 1, 1, 1, 0, 0] * 10)
    A = np.array([1, 1, 0, 1, 1, 1, 0, 1] * 10)
    (plo, phi), (rlo, rhi) = plots.point_interval(v, V, A, n_resamples=200)
    assert plo <= 30 / 50 <= phi and rlo <= 30 / 60 <= rhi


def test_figures_are_png_and_never_import_pyplot():
    code = (
        "import sys, numpy as np\n"
        "from verirag_lab.experiments.report import plots\n"
        "s = np.linspace(0, 1, 20); y = (s > 0.5).astype(int)\n"
        "b = plots.reliability_figure({'m': (s, y)}, 't')\n"
        "b2 = plots.awf_pr_figure({'m': (s, y, y, False), 'h': ((s > .3).astype(float), y, y, True)}, 't',"
        " n_resamples=50)\n"
        "assert b.startswith(b'\\x89PNG') and b2.startswith(b'\\x89PNG')\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --------------------------------------------------------------------------- shared resamples
def test_resample_indices_do_not_depend_on_chunking():
    rows = [np.concatenate(list(stats.resample_indices(37, 300, 4, chunk_rows=c))) for c in (None, 1, 7, 300)]
    for r in rows[1:]:
        np.testing.assert_array_equal(r, rows[0])
    assert rows[0].shape == (300, 37) and rows[0].min() >= 0 and rows[0].max() < 37
    # the first k resamples of a seed are the k resamples of that seed (figures draw fewer)
    np.testing.assert_array_equal(next(stats.resample_indices(37, 120, 4)), rows[0][:120])
    assert not np.array_equal(next(stats.resample_indices(37, 300, 5)), rows[0])


def test_figure_bands_use_the_summary_intervals_resamples(tmp_path, monkeypatch):
    """build_report: every band / error bar of the PR figures resamples exactly the question groups
    that the summary's intervals of its cell resample (same run settings -> same index sets)."""
    real, drawn = stats.resample_indices, []

    def recording(n, n_resamples, seed=0, **kw):
        f = sys._getframe(1)
        # the caller outside metrics.stats (and outside a comprehension's own frame)
        while f.f_globals["__name__"] == stats.__name__ or f.f_code.co_name.startswith("<"):
            f = f.f_back
        rows = np.concatenate(list(real(n, n_resamples, seed, **kw)))
        drawn.append((f.f_globals["__name__"], f.f_code.co_name, rows))
        return iter([rows])

    monkeypatch.setattr(stats, "resample_indices", recording)
    monkeypatch.setattr(plots, "resample_indices", recording)
    write_run(tmp_path, make_records(n=30, datasets=("nq",)))
    build_report(tmp_path)
    summary = {rows.shape[1]: rows for mod, _, rows in drawn if mod == "verirag_lab.experiments.grid.summary"}
    figure = [(fn, rows) for mod, fn, rows in drawn if mod == "verirag_lab.experiments.report.plots"]
    assert summary and {fn for fn, _ in figure} == {"pr_band", "point_interval"}
    for _, rows in figure:
        assert rows.shape == (RUN["bootstrap"]["n_resamples"], 15)  # 30 examples, two per group
        np.testing.assert_array_equal(rows, summary[rows.shape[1]])
