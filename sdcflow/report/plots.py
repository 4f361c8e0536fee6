"""The report's plots: matplotlib Figures on the Agg canvas (no pyplot state, safe in worker
threads), each drawn from aggregates only.

Every builder returns ``None`` when it has nothing to show (no rule violated, one variable,
too few records for a safe histogram...): the caller then writes a sentence instead of an
empty box (:func:`sdcflow.report.sections.plot_or_text`).

A histogram of a confidential column is itself a release: its bins are chosen by
:func:`safe_bins` so that every bin holds at least ``min_count`` original records, interior
edges are quantiles rounded to a power of ten, strictly between the column's minimum and
maximum, and the outer bins are open (neither the minimum nor the maximum is shown).
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

PASS, FAIL, ORIGINAL, RELEASED = "#2e7d32", "#c0392b", "#4a6fa5", "#e69f00"


def figure_png(fig: Figure, *, dpi: int = 110) -> bytes:
    """Render a matplotlib Figure to PNG bytes with the Agg canvas."""
    FigureCanvasAgg(fig)  # attach an Agg canvas: no pyplot, no global backend
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def check_usage(row: Mapping[str, Any]) -> float:
    """Share of the allowed limit a check uses: <= 1 passes.

    ``figure / threshold`` for ``<=`` checks and ``threshold / figure`` for ``>=`` checks; a
    zero denominator gives 0 when the numerator is 0 too and infinity otherwise; a check
    without a figure (not checked) gives infinity.
    """
    if row.get("figure") is None:
        return math.inf
    fig, thr = float(row["figure"]), float(row["threshold"])
    num, den = (fig, thr) if row["rule"] == "<=" else (thr, fig)
    if not math.isfinite(num) or not math.isfinite(den):
        return math.inf
    if den == 0:
        return 0.0 if num == 0 else math.inf
    return num / den


def checks_figure(checks: Sequence[Mapping[str, Any]]) -> Figure | None:
    """Horizontal bars: the share of its limit each check uses (red past 1 = failed)."""
    if not checks:
        return None
    fig = Figure(figsize=(7.5, 0.45 * len(checks) + 1.3))
    ax = fig.add_subplot()
    usage = [check_usage(r) for r in checks]
    shown = [min(u, 2.0) for u in usage]
    colors = [PASS if r["verdict"] == "pass" else FAIL for r in checks]
    ax.barh(range(len(checks)), shown, color=colors)
    ax.set_yticks(range(len(checks)), [str(r["check"]) for r in checks])
    ax.invert_yaxis()
    ax.axvline(1.0, color="#333", linestyle="--", linewidth=1)
    for i, u in enumerate(usage):
        if u > 2.0:
            ax.text(2.0, i, " >2", va="center", fontsize=8)
    ax.set_xlim(0, 2.15)
    ax.set_xlabel("share of the limit used (figure/threshold for <=, threshold/figure for >=)")
    fig.tight_layout()
    return fig


def edit_figure(raw: Mapping[str, int], released: Mapping[str, int | None]) -> Figure | None:
    """Bars per rule: records violating it before masking (raw) and after (released).

    None when no rule is violated anywhere (the table says so).
    """
    names = list(dict.fromkeys([*raw, *released]))
    before = [int(raw.get(n) or 0) for n in names]
    after = [int(released.get(n) or 0) for n in names]
    if not any(before) and not any(after):
        return None
    fig = Figure(figsize=(7.5, 0.5 * len(names) + 1.4))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    ax.barh(y - 0.2, before, height=0.4, color=ORIGINAL, label="raw records")
    ax.barh(y + 0.2, after, height=0.4, color=FAIL, label="released records")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("records violating the rule")
    ax.set_xlim(0, max(1, *before, *after) * 1.1)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def class_size_figure(
    sizes: Sequence[int],
    k: int | None = None,
    *,
    xlabel: str = "records in the group",
    ylabel: str = "groups",
) -> Figure | None:
    """Histogram of group sizes (records per group of identical released rows, per box, or
    records matching each record), with the required k as a dashed line: a figure of counts,
    safe for the report."""
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if not sizes.size:
        return None
    fig = Figure(figsize=(7.5, 3.2))
    ax = fig.add_subplot()
    low, high = int(sizes.min()), int(sizes.max())
    # one bar per size from the counts: matplotlib would bin a million values itself
    counts = np.bincount(sizes - low, minlength=high - low + 1)
    values = np.arange(low, high + 1)
    ax.hist(values, bins=np.arange(low, high + 2) - 0.5, weights=counts, color=ORIGINAL)
    if k is not None:
        ax.axvline(k, color=FAIL, linestyle="--", linewidth=1, label=f"k = {k}")
        ax.legend()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    return fig


def risk_figure(probabilities: np.ndarray, k: int | None = None) -> Figure | None:
    """Histogram of per-record re-identification probabilities (records per bin of 0.02,
    or finer when every probability is small), with 1/k dashed when k is given."""
    p = np.asarray(probabilities, dtype=np.float64)
    if p.size == 0:
        return None
    top = float(p.max())
    upper = 1.0 if top > 0.5 else max(0.05, math.ceil(top * 20 + 1e-9) / 20)
    fig = Figure(figsize=(7.5, 3.2))
    ax = fig.add_subplot()
    ax.hist(p, bins=np.linspace(0.0, upper, 51), color=ORIGINAL)
    if k:
        ax.axvline(1.0 / k, color=FAIL, linestyle="--", linewidth=1, label=f"1/k = 1/{k}")
        ax.legend()
    ax.set_xlim(0, upper)
    ax.set_xlabel("probability that the intruder re-identifies the record")
    ax.set_ylabel("records")
    fig.tight_layout()
    return fig


def individual_risk_figure(edges: Sequence[float], records: Sequence[int]) -> Figure | None:
    """Bars of the records per band of individual re-identification risk (counts only)."""
    if not len(records) or not any(int(r) for r in records):
        return None
    fig = Figure(figsize=(7.5, 3.2))
    ax = fig.add_subplot()
    labels = [f"{a:g}-{b:g}" for a, b in itertools.pairwise(edges)]
    ax.bar(range(len(records)), [int(r) for r in records], color=ORIGINAL)
    ax.set_xticks(range(len(records)), labels)
    ax.set_xlabel("individual risk")
    ax.set_ylabel("records")
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class Bins:
    """Histogram bins that are safe to publish for one column.

    Attributes
    ----------
    edges : ndarray of shape (b - 1,)
        Interior edges, rounded; bin 0 is ``(-inf, edges[0]]``, bin i is
        ``(edges[i-1], edges[i]]``, the last bin ``(edges[-1], inf)``.
    original : ndarray of shape (b,)
        Original records per bin (every entry >= ``min_count``).
    released : ndarray of shape (b,)
        Released records per bin.
    """

    edges: np.ndarray
    original: np.ndarray
    released: np.ndarray

    def labels(self) -> list[str]:
        e = [_short(v) for v in self.edges]
        inner = [f"{e[i - 1]} – {e[i]}" for i in range(1, len(e))]
        return [f"≤ {e[0]}", *inner, f"> {e[-1]}"]


def _short(value: float) -> str:
    return f"{value:.4g}"


def _nice_step(spread: float, bins: int) -> float:
    """The largest power of ten no larger than the typical bin width."""
    width = spread / max(bins, 1)
    return 10.0 ** math.floor(math.log10(width)) if width > 0 else 0.0


def _counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    return np.bincount(np.searchsorted(edges, values, side="left"), minlength=edges.size + 1)


def safe_bins(
    original: np.ndarray, released: np.ndarray, min_count: int, *, max_bins: int = 12
) -> Bins | None:
    """Bins for an original-against-released histogram of one confidential column.

    Interior edges start at the original's quantiles (``max_bins`` bins at most, each of
    about ``n / max_bins >= min_count`` records), are rounded to the largest power of ten
    no larger than the typical bin width, edges at or below the minimum are dropped, and
    adjacent bins are merged until every bin holds at least ``min_count`` original
    records. Every edge then lies strictly between the minimum and the maximum, and the
    outer bins are open, so neither extreme is shown.

    Parameters
    ----------
    original, released : ndarray of shape (n,) and (m,)
        Missing values (NaN) are left out of the bins.
    min_count : int >= 1
    max_bins : int >= 2

    Returns
    -------
    Bins, or None when fewer than two bins can hold ``min_count`` records each (or the
    column is constant): no histogram is safe then.
    """
    x = np.asarray(original, dtype=np.float64)
    y = np.asarray(released, dtype=np.float64)
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]  # missing values are not binned
    bins = min(max_bins, x.size // max(1, min_count))
    if bins < 2:
        return None
    quantiles = np.quantile(x, np.arange(1, bins) / bins)
    spread = float(np.quantile(x, 1 - 1 / bins) - np.quantile(x, 1 / bins))
    if spread <= 0:
        spread = float(np.ptp(x))
    step = _nice_step(spread, bins)
    if step <= 0:
        return None
    edges = np.unique(np.round(quantiles / step) * step)
    lowest = float(x.min())
    while True:
        edges = edges[edges > lowest]  # an edge at the minimum would show it (ties there)
        if edges.size == 0:
            return None
        counts = _counts(x, edges)
        if counts.min() >= min_count:
            # every edge lies strictly between the minimum and the maximum: the last bin
            # holds records above the last edge
            return Bins(edges, counts, _counts(y, edges))
        i = int(np.argmin(counts))
        # merge bin i with its smaller neighbour: drop the edge between them
        if i == 0:
            drop = 0
        elif i == counts.size - 1:
            drop = i - 1
        else:
            drop = i - 1 if counts[i - 1] <= counts[i + 1] else i
        edges = np.delete(edges, drop)


def distribution_figure(columns: Sequence[str], bins: Sequence[Bins | None]) -> Figure | None:
    """One panel per column with safe bins: original and released records per bin."""
    shown = [(c, b) for c, b in zip(columns, bins, strict=True) if b is not None]
    if not shown:
        return None
    ncols = 2 if len(shown) > 1 else 1
    nrows = math.ceil(len(shown) / ncols)
    fig = Figure(figsize=(7.5 * ncols / 1.4, 2.9 * nrows))
    for i, (name, b) in enumerate(shown):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        x = np.arange(b.original.size)
        ax.bar(x - 0.2, b.original, width=0.4, color=ORIGINAL, label="original")
        ax.bar(x + 0.2, b.released, width=0.4, color=RELEASED, label="released")
        ax.set_xticks(x, b.labels(), rotation=45, ha="right", fontsize=7)
        ax.set_title(name, fontsize=10)
        ax.set_ylabel("records", fontsize=8)
        if i == 0:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def correlation_figure(
    columns: Sequence[str], original: np.ndarray, released: np.ndarray
) -> Figure | None:
    """Three heatmaps side by side: original, released and released - original correlations
    (d >= 2 variables; entries of constant columns are blank). None for fewer than two."""
    d = len(columns)
    if d < 2:
        return None
    diff = released - original
    fig = Figure(figsize=(min(15.0, 4.2 * 3 + 0.2 * d), 3.6 + 0.18 * d))
    panels = [
        (original, "original", "RdBu_r", (-1, 1)),
        (released, "released", "RdBu_r", (-1, 1)),
        (diff, "released − original", "PuOr_r", _symmetric(diff)),
    ]
    for i, (matrix, title, cmap, (lo, hi)) in enumerate(panels):
        ax = fig.add_subplot(1, 3, i + 1)
        image = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, vmin=lo, vmax=hi)
        ax.set_xticks(range(d), columns, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(d), columns if i == 0 else [""] * d, fontsize=7)
        ax.set_title(title, fontsize=10)
        if d <= 10:
            for (r, c), v in np.ndenumerate(matrix):
                if np.isfinite(v):
                    ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=6)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    return fig


def _symmetric(matrix: np.ndarray) -> tuple[float, float]:
    finite = matrix[np.isfinite(matrix)]
    top = float(np.abs(finite).max()) if finite.size else 0.0
    top = top if top > 0 else 0.01
    return -top, top
