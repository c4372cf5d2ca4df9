"""Report figures as PNG bytes (matplotlib's Agg canvas; pyplot is never imported, so no window
opens and no global backend is changed).

- `awf_pr_figure`: AwF precision-recall curves per method (the paper's Figures 1 / 5) beside the
  QPP curves (Figures 2 / 6), each with a bootstrap band; hard-label methods are one point
  with bootstrap error bars.
- `fallback_figure`: accuracy vs No-RAG fallback rate with the cross-validated point (Figure 3).
- `switch_figure`: accuracy vs switch rate to a larger model, random baselines, marker at the
  configured rate (Figure 4).
- `reliability_figure`: reliability diagram of scores vs faithfulness, with score histograms.

Bands (`pr_band`): for each bootstrap resample b, its step-wise curve gives the precision at
recall level r as P_b at the first (highest) threshold whose recall reaches r (the same steps
PR-AUC sums); the band is the (1-c)/2 and (1+c)/2 percentiles over resamples, drawn where at least
half of the resamples reach that recall (AwF recall tops out at Faithful / Answerable < 1).
Bands and error bars resample question groups when given them (`verirag.metrics.stats`,
`group_resample_indices`; HotpotQA's twins go together): with the run's seed they use the very
resamples of the summary's intervals (the first `n_resamples` of them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from verirag.evaluation.page import to_png
from verirag.metrics.awf import awf_counts, awf_curve, awf_curve_counts, awf_scores
from verirag.metrics.calibration import reliability_diagram
from verirag.metrics.stats import (
    bootstrap_intervals,
    group_bootstrap_intervals,
    group_resample_indices,
    percentile_interval,
    resample_indices,
)

__all__ = [
    "awf_pr_figure",
    "fallback_figure",
    "method_colors",
    "point_interval",
    "pr_band",
    "reliability_figure",
    "switch_figure",
]

# fixed margins rather than tight_layout, which measures every text artist (a third of the time)
_ONE_PANEL = {"left": 0.11, "right": 0.97, "bottom": 0.12, "top": 0.92}


def method_colors(methods: Sequence[str]) -> dict[str, tuple]:
    """One stable colour per method (sorted names over tab10 / tab20), shared by every figure."""
    from matplotlib import colormaps

    names = sorted(set(methods))
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {m: cmap(i % cmap.N) for i, m in enumerate(names)}


# --------------------------------------------------------------------------- bootstrap curve data
def pr_band(
    scores,
    V,
    answerable,
    *,
    recall_grid=None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    groups=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(recall grid, low, high): percentile band of the precision at each recall level (module doc).

    NaN where fewer than half of the resamples reach that recall. Each chunk of resamples is
    counted by `awf_curve_counts` (the examples are sorted once). `groups`: each example's
    question group, resampled whole (None: examples)."""
    s = np.asarray(scores, dtype=np.float64)
    V = np.asarray(V, dtype=np.int64)
    A = np.asarray(answerable, dtype=np.int64) | V
    grid = np.linspace(0.01, 1.0, 100) if recall_grid is None else np.asarray(recall_grid, dtype=np.float64)

    def precision_at(ix: np.ndarray) -> np.ndarray:
        _, c = awf_curve_counts(s, V, A, indices=ix)
        b, G = c.true_pos.shape
        rec = np.where(c.answerable > 0, c.recall(), -1.0)  # nothing answerable: no level reached
        # first group whose recall reaches r, per row: one searchsorted over rows offset by 3
        off = (np.arange(b) * 3.0)[:, None]
        pos = np.searchsorted((rec + off).ravel(), (grid[None, :] + off).ravel(), side="left")
        k = pos.reshape(b, len(grid)) - (np.arange(b) * G)[:, None]
        prec = np.take_along_axis(c.precision(), np.minimum(k, G - 1), axis=1)
        return np.where(k < G, prec, np.nan)

    draws = (
        resample_indices(len(s), n_resamples, seed)
        if groups is None
        else group_resample_indices(groups, n_resamples, seed)
    )
    P = np.concatenate([precision_at(ix) for ix in draws])
    enough = np.mean(~np.isnan(P), axis=0) >= 0.5
    lo, hi = percentile_interval(np.where(enough, P, np.nan), confidence)
    return grid, lo, hi


def point_interval(
    v, V, answerable, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0, groups=None
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Percentile intervals ((p_low, p_high), (r_low, r_high)) of the AwF precision and recall
    of hard decisions v (precision 1 when nothing is answered, recall 1 when nothing is answerable);
    `groups` as in `pr_band`."""
    V = np.asarray(V, dtype=np.int64)
    A = np.asarray(answerable, dtype=np.int64) | V

    def rates(ix: np.ndarray) -> dict[str, np.ndarray]:
        c = awf_counts(v, V, A, indices=ix)
        return {"precision": c.precision(), "recall": c.recall()}

    boot = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    r = (
        bootstrap_intervals(rates, len(V), **boot)
        if groups is None
        else group_bootstrap_intervals(rates, list(groups), **boot)
    )
    return (r["precision"].low, r["precision"].high), (r["recall"].low, r["recall"].high)


# --------------------------------------------------------------------------- figures
def _pr_panel(ax, cells, colors, qpp: bool, boot: Mapping) -> None:
    for method, (s, V, A, hard, *rest) in cells.items():
        V, groups = (A if qpp else V), (rest[0] if rest else None)
        col = colors[method]
        if hard:
            sc = awf_scores(np.asarray(s, dtype=np.int64), V, A, strict=False)
            (plo, phi), (rlo, rhi) = point_interval(s, V, A, groups=groups, **boot)
            ax.errorbar(
                [sc.recall],
                [sc.precision],
                xerr=[[sc.recall - rlo], [rhi - sc.recall]],
                yerr=[[sc.precision - plo], [phi - sc.precision]],
                fmt="s",
                color=col,
                ms=5,
                capsize=2,
                label=method,
            )
            continue
        c = awf_curve(s, V, A, strict=False)
        ax.step(np.r_[0.0, c.recall], np.r_[1.0, c.precision], where="pre", color=col, lw=1.4, label=method)
        grid, lo, hi = pr_band(s, V, A, groups=groups, **boot)
        ax.fill_between(grid, lo, hi, color=col, alpha=0.15, lw=0, step="pre")
    kind = "QPP" if qpp else "AwF"
    ax.set_xlabel(f"{kind}-Recall")
    ax.set_ylabel(f"{kind}-Precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)


def awf_pr_figure(
    cells: Mapping[str, tuple],
    title: str,
    *,
    colors: Mapping[str, tuple] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> bytes:
    """AwF (left) and QPP (right) precision-recall curves; `cells`: {method: (scores, V, A, hard)}
    or (scores, V, A, hard, groups) to resample question groups."""
    colors = colors or method_colors(list(cells))
    boot = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    fig = Figure(figsize=(10, 4.2))
    a1, a2 = fig.subplots(1, 2)
    _pr_panel(a1, cells, colors, False, boot)
    _pr_panel(a2, cells, colors, True, boot)
    a1.set_title("AwF", fontsize=10)
    a2.set_title("QPP (label: answerable)", fontsize=10)
    a2.legend(fontsize=7, loc="lower left")
    fig.suptitle(title, fontsize=11)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.12, top=0.86, wspace=0.22)
    return to_png(fig)


def fallback_figure(results: Mapping[str, object], title: str, *, colors: Mapping[str, tuple] | None = None) -> bytes:
    """Accuracy vs No-RAG fallback rate per method (`FallbackResult`s), CV operating points as dots."""
    colors = colors or method_colors(list(results))
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    for method, r in results.items():
        ax.plot(r.fallback_rate, r.accuracy, color=colors[method], lw=1.4, label=method)
        if not np.isnan(r.cv_accuracy):
            ax.plot([r.cv_fallback_rate], [r.cv_accuracy], "o", color=colors[method], ms=6, mec="k")
    ax.set_xlabel("fallback rate (share of questions answered without RAG)")
    ax.set_ylabel("accuracy")
    ax.set_xlim(-0.01, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, title="dots: cross-validated threshold", title_fontsize=7)
    ax.set_title(title, fontsize=10)
    fig.subplots_adjust(**_ONE_PANEL)
    return to_png(fig)


def switch_figure(
    results: Mapping[str, object], rate: float, title: str, *, colors: Mapping[str, tuple] | None = None
) -> bytes:
    """Accuracy vs switch rate per method (`SwitchResult`s), dotted random baselines, markers at
    the configured rate."""
    colors = colors or method_colors(list(results))
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    for method, r in results.items():
        ax.plot(r.switch_rate, r.accuracy, color=colors[method], lw=1.4, label=method)
        ax.plot(r.switch_rate, r.random_curve(), ":", color=colors[method], lw=1)
        ax.plot([r.achieved_rate], [r.accuracy_at_rate], "o", color=colors[method], ms=6, mec="k")
    ax.axvline(rate, color="0.4", ls="--", lw=0.8)
    ax.set_xlabel("switch rate (share of questions sent to the larger model)")
    ax.set_ylabel("accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, title="dotted: random switch", title_fontsize=7)
    ax.set_title(title, fontsize=10)
    fig.subplots_adjust(**_ONE_PANEL)
    return to_png(fig)


def reliability_figure(
    cells: Mapping[str, tuple], title: str, *, n_bins: int = 10, colors: Mapping[str, tuple] | None = None
) -> bytes:
    """Reliability diagram (mean faithfulness vs mean score per equal-width bin, ECE in the
    legend) over a histogram of the scores; `cells`: {method: (scores, faithful)}."""
    colors = colors or method_colors(list(cells))
    fig = Figure(figsize=(6.4, 5.6))
    ax, hx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], color="0.5", ls="--", lw=0.8)
    edges = np.linspace(0, 1, n_bins + 1)
    for method, (s, y) in cells.items():
        d = reliability_diagram(np.clip(np.asarray(s, dtype=np.float64), 0, 1), y, n_bins=n_bins)
        ok = d.count > 0
        ax.plot(
            d.confidence[ok],
            d.accuracy[ok],
            "o-",
            color=colors[method],
            ms=4,
            lw=1.2,
            label=f"{method} (ECE {d.ece:.3f})",
        )
        hx.stairs(d.count / max(d.count.sum(), 1), edges, color=colors[method], lw=1.2)
    ax.set_ylabel("share faithful")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=10)
    hx.set_xlabel("score")
    hx.set_ylabel("share")
    hx.grid(alpha=0.3)
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.09, top=0.94, hspace=0.08)
    return to_png(fig)
