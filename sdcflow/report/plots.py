"""The report's plots, each drawn from aggregates only as an SVG chart
(:mod:`sdcflow.report.svg`).

Every builder returns ``None`` when it has nothing to show (no rule violated, one variable,
too few records for a safe histogram...): the caller then writes a sentence instead of an
empty box (:func:`sdcflow.report.sections.plot_or_text`).

A histogram of a confidential column is itself a release: its bins are chosen by
:func:`safe_bins` so that every bin holds at least ``min_count`` original records, interior
edges are quantiles rounded to a power of ten, strictly between the column's minimum and
maximum, and the outer bins are open (neither the minimum nor the maximum is shown).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sdcflow.report.svg import PUOR_R, RDBU_R, Bar, Chart, Heatmap, Note, Panel, Rule

PASS, FAIL, ORIGINAL, RELEASED = "#2e7d32", "#c0392b", "#4a6fa5", "#e69f00"


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


def checks_figure(checks: Sequence[Mapping[str, Any]]) -> Chart | None:
    """Horizontal bars: the share of its limit each check uses (red past 1 = failed)."""
    if not checks:
        return None
    usage = [check_usage(r) for r in checks]
    panel = Panel(
        bars=[
            Bar(i, 0.8, min(u, 2.0), PASS if r["verdict"] == "pass" else FAIL)
            for i, (r, u) in enumerate(zip(checks, usage, strict=True))
        ],
        rules=[Rule(1.0)],
        notes=[Note(i, 2.0, ">2") for i, u in enumerate(usage) if u > 2.0],
        horizontal=True,
        categories=[str(r["check"]) for r in checks],
        value_limits=(0.0, 2.15),
        value_label="share of the limit used (figure/threshold for <=, threshold/figure for >=)",
    )
    return Chart([panel], panel_height=30 * len(checks) + 70)


def edit_figure(raw: Mapping[str, int], released: Mapping[str, int | None]) -> Chart | None:
    """Bars per rule: records violating it before masking (raw) and after (released).

    None when no rule is violated anywhere (the table says so).
    """
    names = list(dict.fromkeys([*raw, *released]))
    before = [int(raw.get(n) or 0) for n in names]
    after = [int(released.get(n) or 0) for n in names]
    if not any(before) and not any(after):
        return None
    bars = [Bar(i - 0.2, 0.4, b, ORIGINAL, "raw records") for i, b in enumerate(before)]
    bars += [Bar(i + 0.2, 0.4, a, FAIL, "released records") for i, a in enumerate(after)]
    panel = Panel(
        bars=bars,
        horizontal=True,
        categories=names,
        value_limits=(0.0, max(1, *before, *after) * 1.1),
        value_label="records violating the rule",
        legend=True,
    )
    return Chart([panel], panel_height=36 * len(names) + 120)


def class_size_figure(
    sizes: Sequence[int],
    k: int | None = None,
    *,
    weights: Sequence[int] | None = None,
    xlabel: str = "records in the group",
    ylabel: str = "groups",
) -> Chart | None:
    """Histogram of group sizes (records per group of identical released rows, per box, or
    records matching each record), one bar per size, with the required k as a dashed line: a
    figure of counts, safe for the report.

    Parameters
    ----------
    sizes : array-like of int, shape (m,)
    k : int, optional
    weights : array-like of int, shape (m,), optional
        What each size counts for (default 1 each): the records in the classes of that size
        when the sizes come from aggregates.
    """
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if not sizes.size:
        return None
    low, high = int(sizes.min()), int(sizes.max())
    counts = np.bincount(sizes - low, weights=weights, minlength=high - low + 1)
    panel = Panel(
        bars=[Bar(low + i, 1.0, float(c), ORIGINAL) for i, c in enumerate(counts)],
        rules=[Rule(k, FAIL, f"k = {k}")] if k is not None else [],
        whole_positions=True,
        position_label=xlabel,
        value_label=ylabel,
        legend=k is not None,
    )
    return Chart([panel])


def risk_figure(
    probabilities: np.ndarray, k: int | None = None, *, weights: np.ndarray | None = None
) -> Chart | None:
    """Histogram of per-record re-identification probabilities (records per bin of 0.02,
    or finer when every probability is small), with 1/k dashed when k is given.

    ``weights`` (shape of ``probabilities``) counts each probability that many records, for
    probabilities taken from aggregates.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if p.size == 0 or (weights is not None and not np.sum(weights)):
        return None
    top = float(p.max())
    upper = 1.0 if top > 0.5 else max(0.05, math.ceil(top * 20 + 1e-9) / 20)
    edges = np.linspace(0.0, upper, 51)
    counts, _ = np.histogram(p, bins=edges, weights=weights)
    width = upper / 50
    panel = Panel(
        bars=[
            Bar(e + width / 2, width, float(c), ORIGINAL)
            for e, c in zip(edges[:-1], counts, strict=True)
        ],
        rules=[Rule(1.0 / k, FAIL, f"1/k = 1/{k}")] if k else [],
        position_limits=(0.0, upper),
        position_label="probability that the intruder re-identifies the record",
        value_label="records",
        legend=bool(k),
    )
    return Chart([panel])


def individual_risk_figure(edges: Sequence[float], records: Sequence[int]) -> Chart | None:
    """Bars of the records per band of individual re-identification risk (counts only)."""
    if not len(records) or not any(int(r) for r in records):
        return None
    panel = Panel(
        bars=[Bar(i, 0.8, int(r), ORIGINAL) for i, r in enumerate(records)],
        categories=[f"{a:g}-{b:g}" for a, b in itertools.pairwise(edges)],
        position_label="individual risk",
        value_label="records",
    )
    return Chart([panel])


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


def distribution_figure(columns: Sequence[str], bins: Sequence[Bins | None]) -> Chart | None:
    """One panel per column with safe bins: original and released records per bin."""
    shown = [(c, b) for c, b in zip(columns, bins, strict=True) if b is not None]
    if not shown:
        return None
    panels = []
    for i, (name, b) in enumerate(shown):
        bars = [Bar(j - 0.2, 0.4, int(v), ORIGINAL, "original") for j, v in enumerate(b.original)]
        bars += [Bar(j + 0.2, 0.4, int(v), RELEASED, "released") for j, v in enumerate(b.released)]
        panels.append(
            Panel(
                bars=bars,
                categories=b.labels(),
                slanted=True,
                title=name,
                value_label="records",
                legend=i == 0,
                font=9.0,
            )
        )
    columns_across = 2 if len(shown) > 1 else 1
    return Chart(panels, columns=columns_across, width=720.0 if columns_across == 1 else 960.0)


def correlation_figure(
    columns: Sequence[str], original: np.ndarray, released: np.ndarray
) -> Chart | None:
    """Three heatmaps side by side: original, released and released - original correlations
    (d >= 2 variables; entries of constant columns are blank). None for fewer than two."""
    d = len(columns)
    if d < 2:
        return None
    diff = released - original
    low, high = _symmetric(diff)
    names = [str(c) for c in columns]
    panels = [
        Panel(
            heatmap=Heatmap(matrix, lo, hi, colors, names, row_labels=i == 0, values=d <= 10),
            title=title,
            font=9.0,
        )
        for i, (matrix, title, colors, (lo, hi)) in enumerate(
            [
                (original, "original", RDBU_R, (-1.0, 1.0)),
                (released, "released", RDBU_R, (-1.0, 1.0)),
                (diff, "released − original", PUOR_R, (low, high)),
            ]
        )
    ]
    width = min(1440.0, 400.0 * 3 + 20.0 * d)
    return Chart(panels, columns=3, width=width, panel_height=width / 3 + 40)


def _symmetric(matrix: np.ndarray) -> tuple[float, float]:
    finite = matrix[np.isfinite(matrix)]
    top = float(np.abs(finite).max()) if finite.size else 0.0
    top = top if top > 0 else 0.01
    return -top, top
