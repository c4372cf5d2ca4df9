"""Statistics: bootstrap confidence intervals, rank correlations, conformal helpers.

Bootstrap protocol
------------------
`resample_indices(n, n_resamples, seed)` draws every resample in verirag: (B, n) index arrays,
idx[b, i] ~ Uniform{0..n-1} (arrays are resampled jointly, by example), in chunks that bound
memory without changing a row. Where examples come in groups that are not independent (a
HotpotQA question's two twins), `group_resample_indices` draws the groups with
`resample_indices` and expands each draw into its examples. One seed thus gives one set of
resamples everywhere: a figure's band and the interval in the table beside it come from the same
draws. `bootstrap_intervals`
evaluates several statistics, `statistic(indices) -> {name: B values}`, on one set of resamples;
`bootstrap_ci(statistic, *arrays, n_resamples, confidence, seed, vectorized=...)` evaluates one
statistic of arrays in one of three ways:

- vectorized=False: `statistic(*[a[idx[b]] for a in arrays]) -> float`, once per resample.
- vectorized=True: `statistic(*[a[idx[batch]] ...])` receives arrays with a leading resample
  axis (shape (B, n, ...)) and returns B values. The full-sample estimate is computed with
  B = 1 (arrays of shape (1, n, ...)).
- vectorized="indices": `statistic(*arrays, indices=idx[batch])` receives the original arrays
  and the (B, n) integer resample indices, and returns B values. A statistic that depends on an
  ordering of the examples (AwF curves) sorts the n examples once and counts each resample's
  draws per position with one `bincount`, instead of sorting every resample.
  (`resample_weights(indices, n)` turns indices into draw counts W[b, i] for weighted statistics.)
  The estimate uses indices = arange(n)[None].

All three give the same bootstrap distribution for the same seed. A statistic may declare its
mode in a `vectorized` attribute (the AwF statistics declare "indices"). Intervals are
percentile intervals [q_{(1-c)/2}, q_{(1+c)/2}] of the resampled statistics; resamples where the
statistic is NaN (e.g. an undefined ratio) are left out and counted in `n_invalid`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "BootstrapResult",
    "CorrelationRow",
    "CorrelationTable",
    "bootstrap_ci",
    "bootstrap_intervals",
    "conformal_quantile",
    "group_bootstrap_intervals",
    "group_resample_indices",
    "kendall_tau_b",
    "metric_human_correlation",
    "percentile_interval",
    "rankdata",
    "resample_indices",
    "resample_weights",
    "spearman",
]


# --------------------------------------------------------------------------- bootstrap
@dataclass(frozen=True)
class BootstrapResult:
    """A statistic on the full sample with its percentile bootstrap interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    n_resamples: int
    standard_error: float
    n_invalid: int = 0
    distribution: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "distribution"}
        return d


def resample_weights(idx: np.ndarray, n: int) -> np.ndarray:
    """W[b, i] = how many times example i occurs in resample b (rows of `idx`)."""
    idx = np.asarray(idx)
    b = idx.shape[0]
    flat = (idx.astype(np.int64) + (np.arange(b, dtype=np.int64) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n)


def resample_indices(
    n: int, n_resamples: int, seed: int | np.random.Generator | None = 0, *, chunk_rows: int | None = None
) -> Iterator[np.ndarray]:
    """The bootstrap resamples of n examples in chunks of rows; row b = the examples drawn
    (uniformly, with replacement) in resample b. The rows are drawn in order from one generator
    (`default_rng(seed)`, or `seed` if a Generator), so they depend on (seed, n) only: `chunk_rows`
    (default: about 2 million indices a chunk) bounds memory without changing a row, and the
    first k of n_resamples resamples are the k resamples of the same seed."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    rows = chunk_rows or max(1, 2_000_000 // max(n, 1))
    dtype = np.int64 if n >= 2**31 else np.int32
    return (rng.integers(0, n, size=(min(rows, n_resamples - s), n), dtype=dtype) for s in range(0, n_resamples, rows))


def percentile_interval(dist, confidence: float = 0.95, axis: int = 0) -> tuple[Any, Any]:
    """(low, high) = the (1-c)/2 and (1+c)/2 quantiles (numpy's linear interpolation) of the
    resampled values along `axis`; NaN values are left out, NaN where none is left."""
    d = np.asarray(dist, dtype=np.float64)
    some = ~np.isnan(d).all(axis=axis)
    alpha = 1.0 - confidence
    q = np.nanquantile(np.where(np.expand_dims(some, axis), d, 0.0), [alpha / 2, 1 - alpha / 2], axis=axis)
    low, high = np.where(some, q, np.nan)
    return (float(low), float(high)) if low.ndim == 0 else (low, high)


def _results(
    est: Mapping[str, Any],
    parts: Mapping[str, list[np.ndarray]],
    confidence: float,
    n_resamples: int,
    keep_distribution: bool = False,
) -> dict[str, BootstrapResult]:
    """{name: BootstrapResult} from the sample's estimates and the resampled values (NaN left out
    of the interval and counted)."""
    out = {}
    for k, p in parts.items():
        d = np.concatenate(p)
        valid = d[~np.isnan(d)]
        se = float(valid.std(ddof=1)) if valid.size > 1 else (0.0 if valid.size else math.nan)
        out[k] = BootstrapResult(
            float(np.asarray(est[k]).ravel()[0]),
            *percentile_interval(d, confidence),
            confidence=confidence,
            n_resamples=n_resamples,
            standard_error=se,
            n_invalid=int(d.size - valid.size),
            distribution=d if keep_distribution else None,
        )
    return out


def bootstrap_intervals(
    statistic: Callable[[np.ndarray], Mapping[str, Any]],
    n: int,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    chunk_rows: int | None = None,
    keep_distribution: bool = False,
) -> dict[str, BootstrapResult]:
    """{name: BootstrapResult} of several statistics on ONE set of resamples.

    `statistic(indices)` maps a (B, n) index array (row b = the examples of resample b) to
    {name: B values}; the estimates are its values on the sample (indices = arange(n)[None]),
    the distributions its values on `resample_indices(n, n_resamples, seed, chunk_rows=...)`.
    NaN values are left out of the percentile interval and counted in `n_invalid`.
    """
    return _evaluate(
        statistic,
        n,
        resample_indices(n, n_resamples, seed, chunk_rows=chunk_rows),
        confidence,
        n_resamples,
        keep_distribution,
    )


def _evaluate(
    statistic: Callable[[np.ndarray], Mapping[str, Any]],
    n: int,
    draws: Iterable[np.ndarray],
    confidence: float,
    n_resamples: int,
    keep_distribution: bool = False,
) -> dict[str, BootstrapResult]:
    """The statistic on the sample (its n examples) and on every chunk of `draws`, as results."""
    est = statistic(np.arange(n)[None])
    parts: dict[str, list[np.ndarray]] = {k: [] for k in est}
    for ix in draws:
        for k, v in statistic(ix).items():
            v = np.asarray(v, dtype=np.float64)
            if v.shape != ix.shape[:1]:
                raise ValueError(
                    f"a vectorised statistic must return one value per resample "
                    f"({ix.shape[0]}), got shape {v.shape} for {k!r}"
                )
            parts[k].append(v)
    return _results(est, parts, confidence, n_resamples, keep_distribution)


def group_resample_indices(
    groups: Sequence[Any], n_resamples: int, seed: int | np.random.Generator | None = 0
) -> Iterator[np.ndarray]:
    """The bootstrap resamples of whole groups (clusters), as example indices in chunks of rows.

    `groups[i]` is example i's group; a resample draws len(set(groups)) groups with replacement
    (`resample_indices` over the groups, numbered in the sorted order of str(group)) and takes
    every example of each. When all groups have one size, a chunk is (B, examples); otherwise each
    resample is a (1, m) chunk of its own, m being the number of examples it drew. Groups of one
    give the example bootstrap's draws when the examples are in that sorted order (else another,
    equally valid, set of draws)."""
    keys = np.asarray([str(g) for g in groups], dtype=object)
    if not len(keys):
        raise ValueError("a group bootstrap needs at least one example")
    _, inverse = np.unique(keys, return_inverse=True)  # numbered in sorted order, as sorted(key=str)
    sizes = np.bincount(inverse)
    members = np.split(np.argsort(inverse, kind="stable"), np.cumsum(sizes)[:-1])
    return _group_draws(members, len(keys), n_resamples, seed)


def _group_draws(members: list[np.ndarray], n_examples: int, n_resamples: int, seed) -> Iterator[np.ndarray]:
    if len({len(m) for m in members}) == 1:  # (B, groups) -> (B, examples) in one step
        table = np.stack(members)
        rows = max(1, 2_000_000 // n_examples)  # bound a chunk by its examples, not its groups
        for ix in resample_indices(len(members), n_resamples, seed, chunk_rows=rows):
            yield table[ix].reshape(len(ix), -1)
        return
    for ix in resample_indices(len(members), n_resamples, seed):
        for row in ix:
            yield np.concatenate([members[g] for g in row])[None]


def group_bootstrap_intervals(
    statistic: Callable[[np.ndarray], Mapping[str, Any]],
    groups: Sequence[Any],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> dict[str, BootstrapResult]:
    """`bootstrap_intervals` resampling whole groups (clusters) instead of examples
    (`group_resample_indices`), so examples that are not independent (a question's two HotpotQA
    twins, one question answered under two retrievers) go in and out together.
    `statistic(indices)` as in `bootstrap_intervals`."""
    if not len(groups):
        raise ValueError("group_bootstrap_intervals needs at least one example")
    return _evaluate(statistic, len(groups), group_resample_indices(groups, n_resamples, seed), confidence, n_resamples)


def bootstrap_ci(
    statistic: Callable[..., Any],
    *arrays,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    vectorized: bool | str | None = None,
    batch_size: int | None = None,
    keep_distribution: bool = False,
) -> BootstrapResult:
    """Percentile bootstrap confidence interval of `statistic(*arrays)` (see the module doc).

    Args:
        statistic: function of the arrays (resampled jointly along their first axis).
        arrays: one or more arrays with the same first dimension n >= 1.
        n_resamples: number of bootstrap resamples B.
        confidence: coverage of the interval, e.g. 0.95.
        seed: seed or numpy Generator; the same seed gives the same resamples in every mode.
        vectorized: False, True or "indices"; default: `statistic.vectorized` if set, else False.
        batch_size: resamples evaluated per call in the vectorised modes (bounds memory;
            default: about 4 million array elements per batch). Does not change the result.
        keep_distribution: keep the B resampled values in the result.
    """
    if not arrays:
        raise ValueError("bootstrap_ci needs at least one array")
    arrays = tuple(np.asarray(a) for a in arrays)
    n = arrays[0].shape[0] if arrays[0].ndim else 0
    if n == 0 or any(a.ndim == 0 or a.shape[0] != n for a in arrays):
        raise ValueError("arrays must be non-empty and of one length (first axis)")
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie in (0, 1)")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    mode = getattr(statistic, "vectorized", False) if vectorized is None else vectorized
    if mode not in (False, True, "indices"):
        raise ValueError("vectorized must be False, True or 'indices'")

    def of_indices(ix):  # the statistic of each resample (row of ix), in its own mode
        if mode == "indices":
            return statistic(*arrays, indices=ix)
        if mode is True:
            return statistic(*(a[ix] for a in arrays))
        return [statistic(*(a[i] for a in arrays)) for i in ix]

    per_row = n * max(1, sum(int(np.prod(a.shape[1:], dtype=np.int64)) for a in arrays))
    return bootstrap_intervals(
        lambda ix: {"": np.asarray(of_indices(ix), dtype=np.float64).ravel()},
        n,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        chunk_rows=batch_size or max(1, 4_000_000 // per_row),
        keep_distribution=keep_distribution,
    )[""]


# --------------------------------------------------------------------------- ranks and correlation
def rankdata(a, axis: int = -1) -> np.ndarray:
    """Ranks 1..n along `axis`, ties given the average of their ranks (scipy's "average")."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return a.copy()
    moved = np.moveaxis(a, axis, -1)
    shape = moved.shape
    x = moved.reshape(-1, shape[-1])
    rows, n = x.shape
    order = np.argsort(x, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)
    start = np.ones((rows, n), dtype=bool)
    start[:, 1:] = xs[:, 1:] != xs[:, :-1]
    flat_start = np.flatnonzero(start.ravel())
    sizes = np.diff(np.r_[flat_start, rows * n])
    col0 = flat_start % n
    avg = col0 + (sizes - 1) / 2.0 + 1.0
    ranks_sorted = np.repeat(avg, sizes).reshape(rows, n)
    ranks = np.empty_like(ranks_sorted)
    np.put_along_axis(ranks, order, ranks_sorted, axis=1)
    return np.moveaxis(ranks.reshape(shape), -1, axis)


def spearman(x, y) -> float | np.ndarray:
    """Spearman's rho = Pearson correlation of the mid-ranks of x and y (ties averaged).
    NaN when either is constant. 2-D input: one value per row (resamples)."""
    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    if rx.shape != ry.shape:
        raise ValueError("x and y differ in shape")
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, (rx * ry).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)
    r = np.clip(r, -1.0, 1.0)
    return float(r) if np.ndim(r) == 0 else r


def _count_inversions(a: np.ndarray) -> int:
    """#{i < j : a_i > a_j} for non-negative integers, by a bottom-up merge sort whose levels
    are vectorised (each level: one searchsorted over all block pairs). O(n log^2 n)."""
    a = np.asarray(a, dtype=np.int64)
    n = len(a)
    if n < 2:
        return 0
    size = 1 << (n - 1).bit_length()
    big = int(a.max()) + 1
    x = np.full(size, big, dtype=np.int64)
    x[:n] = a
    inv = 0
    w = 1
    while w < size:
        blocks = x.reshape(-1, 2, w)
        k = blocks.shape[0]
        off = (np.arange(k, dtype=np.int64) * (big + 1))[:, None]
        left = (blocks[:, 0, :] + off).ravel()
        right = (blocks[:, 1, :] + off).ravel()
        pos = np.searchsorted(left, right, side="right")
        le = pos - np.repeat(np.arange(k, dtype=np.int64) * w, w)
        inv += int((w - le).sum())
        x = np.sort(blocks.reshape(k, 2 * w), axis=1).ravel()
        w *= 2
    return inv


def _tie_pairs(v: np.ndarray) -> int:
    _, c = np.unique(v, return_counts=True)
    return int((c * (c - 1) // 2).sum())


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b (Kendall 1945), corrected for ties:

        tau_b = (n_c - n_d) / sqrt((n0 - n1) (n0 - n2))

    n0 = n(n-1)/2, n1 / n2 = pairs tied in x / in y, n_c / n_d = concordant / discordant pairs.
    O(n log^2 n): after sorting by (x, y), n_d is the number of inversions of y, and
    n_c + n_d = n0 - n1 - n2 + n3 (n3 = pairs tied in both). NaN when x or y is constant.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError("x and y differ in length")
    n = len(x)
    if n < 2:
        return float("nan")
    n0 = n * (n - 1) // 2
    n1, n2 = _tie_pairs(x), _tie_pairs(y)
    xy = np.stack([x, y], axis=1)
    _, c = np.unique(xy, axis=0, return_counts=True)
    n3 = int((c * (c - 1) // 2).sum())
    order = np.lexsort((y, x))
    y_rank = np.unique(y, return_inverse=True)[1].ravel()
    nd = _count_inversions(y_rank[order])
    s = (n0 - n1 - n2 + n3) - 2 * nd
    den = math.sqrt(float(n0 - n1) * float(n0 - n2))
    return float(min(1.0, max(-1.0, s / den))) if den > 0 else float("nan")


@dataclass(frozen=True)
class CorrelationRow:
    metric: str
    spearman: float
    kendall_tau_b: float
    n: int
    spearman_ci: tuple[float, float] | None = None
    kendall_ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class CorrelationTable:
    """Rank correlation of each metric with the human judgement (one row per metric)."""

    rows: list[CorrelationRow]
    human_key: str

    def best(self, by: str = "kendall_tau_b") -> CorrelationRow:
        """The row with the highest correlation (`by`: "spearman" or "kendall_tau_b")."""
        ok = [r for r in self.rows if not math.isnan(getattr(r, by))]
        if not ok:
            raise ValueError("no metric has a defined correlation")
        return max(ok, key=lambda r: getattr(r, by))

    def to_dicts(self) -> list[dict[str, Any]]:
        return [dict(r.__dict__) for r in self.rows]

    def to_text(self, scale: float = 100.0, digits: int = 2) -> str:
        """A plain-text table; coefficients multiplied by `scale` (x100 as in Adlakha et al.)."""

        def fmt(v: float) -> str:
            return "nan" if math.isnan(v) else f"{v * scale:.{digits}f}"

        def ci(c) -> str:
            return "" if c is None else f"[{fmt(c[0])}, {fmt(c[1])}]"

        with_ci = any(r.spearman_ci is not None for r in self.rows)
        head = ["metric", "Spearman rho", "Kendall tau-b", "n"]
        if with_ci:
            head[1:3] = ["Spearman rho", "95% CI", "Kendall tau-b", "95% CI"]
        body = []
        for r in self.rows:
            cells = [r.metric, fmt(r.spearman), fmt(r.kendall_tau_b), str(r.n)]
            if with_ci:
                cells = [r.metric, fmt(r.spearman), ci(r.spearman_ci), fmt(r.kendall_tau_b), ci(r.kendall_ci), str(r.n)]
            body.append(cells)
        widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]

        def line(cells):
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        out = [line(head), line(["-" * w for w in widths])] + [line(b) for b in body]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.to_text()


def _get(rec: Any, key: str) -> Any:
    if isinstance(rec, Mapping):
        return rec.get(key)
    return getattr(rec, key, None)


def metric_human_correlation(
    records: Sequence[Any],
    metric_names: Sequence[str],
    human_key: str = "label_correct",
    *,
    n_resamples: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> CorrelationTable:
    """Spearman's rho and Kendall's tau-b between each metric and the human judgement.

    `records` are dicts (or objects) holding each metric's value under its name and the human
    judgement under `human_key`. Records where either value is missing (None / NaN) are left
    out for that metric (`n` says how many were used). With `n_resamples` > 0, percentile
    bootstrap intervals are added (records resampled jointly).
    """
    rows = []
    for name in metric_names:
        pairs = [(_get(r, name), _get(r, human_key)) for r in records]
        pairs = [
            (float(m), float(h))
            for m, h in pairs
            if m is not None
            and h is not None
            and not (isinstance(m, float) and math.isnan(m))
            and not (isinstance(h, float) and math.isnan(h))
        ]
        if not pairs:
            rows.append(CorrelationRow(name, float("nan"), float("nan"), 0))
            continue
        m = np.array([p[0] for p in pairs])
        h = np.array([p[1] for p in pairs])
        rho, tau = spearman(m, h), kendall_tau_b(m, h)
        s_ci = k_ci = None
        if n_resamples > 0:
            bs = bootstrap_ci(
                spearman, m, h, n_resamples=n_resamples, confidence=confidence, seed=seed, vectorized=True
            )
            bk = bootstrap_ci(kendall_tau_b, m, h, n_resamples=n_resamples, confidence=confidence, seed=seed)
            s_ci, k_ci = (bs.low, bs.high), (bk.low, bk.high)
        rows.append(CorrelationRow(name, float(rho), float(tau), len(pairs), s_ci, k_ci))
    return CorrelationTable(rows=rows, human_key=human_key)


# --------------------------------------------------------------------------- conformal
def conformal_quantile(scores, alpha: float) -> float:
    """Split-conformal quantile of n calibration scores at level ceil((n+1)(1-alpha))/n:

        q_hat = the k-th smallest score, k = ceil((n+1)(1-alpha))   (+inf when k > n)

    For a new score exchangeable with the calibration scores, P(s_new <= q_hat) >= 1 - alpha
    (and < 1 - alpha + 1/(n+1) without ties). A tolerance of 1e-9 absorbs floating-point error
    in (n+1)(1-alpha) (so that n = 99, alpha = 0.1 gives k = 90, not 91).
    """
    s = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie in (0, 1)")
    n = len(s)
    if n == 0:
        raise ValueError("no calibration scores")
    if np.isnan(s).any():
        raise ValueError("calibration scores contain NaN")
    k = math.ceil((n + 1) * (1 - alpha) - 1e-9)
    return float("inf") if k > n else float(s[max(k, 1) - 1])
