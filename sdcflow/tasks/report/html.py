"""The run report: one self-contained ``report.html`` with the checks, the edit rules and plots.

The page has no external resource: plots are PNGs inlined as base64 data URIs (matplotlib with
the Agg canvas, no pyplot state, safe in worker threads), styles are inline. It holds figures
only — check figures and thresholds, counts of violating records, summary entries the caller
passes — never a record value: callers must not pass raw data in ``summary`` or ``tables``.

The file is written atomically (a temporary file in the same folder, then ``os.replace``), so a
crashed run never leaves a half-written report.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

REPORT_NAME = "report.html"

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 62em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.fail td { background: #fde2e2; } tr.pass td.verdict { color: #176117; }
img { max-width: 100%; } .muted { color: #666; font-size: 0.9em; }
"""


def figure_png(fig: Figure, *, dpi: int = 110) -> bytes:
    """Render a matplotlib Figure to PNG bytes with the Agg canvas."""
    FigureCanvasAgg(fig)  # attach an Agg canvas: no pyplot, no global backend
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:d}"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _table(frame: pd.DataFrame, row_class: Sequence[str] | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for i, (_, row) in enumerate(frame.iterrows()):
        cells = "".join(
            f'<td class="{"num" if _is_num(v) else html.escape(str(c))}">'
            f"{html.escape(_fmt(v))}</td>"
            for c, v in row.items()
        )
        cls = f' class="{row_class[i]}"' if row_class is not None else ""
        rows.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def check_usage(row: Mapping[str, Any]) -> float:
    """Share of the allowed limit a check uses: <= 1 passes.

    ``figure / threshold`` for ``<=`` checks and ``threshold / figure`` for ``>=`` checks; a
    zero denominator gives 0 when the numerator is 0 too and infinity otherwise.
    """
    if row["figure"] is None:  # not checked
        return math.inf
    fig, thr = float(row["figure"]), float(row["threshold"])
    num, den = (fig, thr) if row["rule"] == "<=" else (thr, fig)
    if not math.isfinite(num) or not math.isfinite(den):
        return math.inf
    if den == 0:
        return 0.0 if num == 0 else math.inf
    return num / den


def checks_figure(checks: Sequence[Mapping[str, Any]]) -> Figure:
    """Horizontal bars: the share of its limit each check uses (red past 1 = failed)."""
    fig = Figure(figsize=(7.5, 0.45 * len(checks) + 1.3))
    ax = fig.add_subplot()
    usage = [check_usage(r) for r in checks]
    shown = [min(u, 2.0) for u in usage]
    colors = ["#c0392b" if r["verdict"] != "pass" else "#2e7d32" for r in checks]
    labels = [str(r["check"]) for r in checks]
    ax.barh(range(len(checks)), shown, color=colors)
    ax.set_yticks(range(len(checks)), labels)
    ax.invert_yaxis()
    ax.axvline(1.0, color="#333", linestyle="--", linewidth=1)
    for i, u in enumerate(usage):
        if u > 2.0:
            ax.text(2.0, i, " >2", va="center", fontsize=8)
    ax.set_xlim(0, 2.15)
    ax.set_xlabel("share of the limit used (figure/threshold for <=, threshold/figure for >=)")
    fig.tight_layout()
    return fig


def edit_figure(edit_results: Mapping[str, int]) -> Figure:
    """Bars: released records violating each edit rule."""
    fig = Figure(figsize=(7.5, 0.45 * len(edit_results) + 1.3))
    ax = fig.add_subplot()
    names = list(edit_results)
    counts = [int(edit_results[k]) for k in names]
    ax.barh(range(len(names)), counts, color=["#c0392b" if c else "#2e7d32" for c in counts])
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("released records violating the rule")
    ax.set_xlim(0, max(1, *counts) * 1.1)
    fig.tight_layout()
    return fig


def class_size_figure(sizes: Sequence[int], k: int | None = None) -> Figure:
    """Histogram of equivalence-class sizes (records per group of identical released rows),
    with the required k as a dashed line: a figure of counts, safe for the report."""
    fig = Figure(figsize=(7.5, 3.2))
    ax = fig.add_subplot()
    sizes = [int(x) for x in sizes]
    if sizes:
        edges = [x - 0.5 for x in range(min(sizes), max(sizes) + 2)]
        ax.hist(sizes, bins=edges, color="#4a6fa5")
    if k is not None:
        ax.axvline(k, color="#c0392b", linestyle="--", linewidth=1, label=f"k = {k}")
        ax.legend()
    ax.set_xlabel("records in the class")
    ax.set_ylabel("classes")
    fig.tight_layout()
    return fig


def _edits_section(edit_results: Mapping[str, int] | None) -> list[str]:
    parts = ["<h2>Edit rules</h2>"]
    if edit_results is None:
        return [*parts, "<p>The spec has no edit rules.</p>"]
    if not edit_results:
        return [*parts, "<p>No edit rule was evaluated.</p>"]
    frame = pd.DataFrame(
        {
            "rule": list(edit_results),
            "violating records": [int(v) for v in edit_results.values()],
        }
    )
    row_class = ["fail" if int(v) else "pass" for v in edit_results.values()]
    return [*parts, _table(frame, row_class), _img(figure_png(edit_figure(edit_results)), "edits")]


def render_report(
    *,
    summary: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]] | None,
    edit_results: Mapping[str, int] | None,
    figures: Mapping[str, Figure | bytes] | None = None,
    tables: Mapping[str, pd.DataFrame] | None = None,
    title: str = "sdcflow release report",
    show_edits: bool = True,
) -> str:
    """The report page as a string (see :func:`write_report` for the arguments)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="muted">written {datetime.now(UTC).isoformat(timespec="seconds")}</p>',
    ]
    if summary:
        frame = pd.DataFrame({"item": list(summary), "value": [_fmt(v) for v in summary.values()]})
        parts += ["<h2>Summary</h2>", _table(frame)]

    if checks is not None:
        parts.append("<h2>Checks</h2>")
    if checks:
        cols = ["check", "figure", "rule", "threshold", "verdict", "description"]
        frame = pd.DataFrame([{c: r.get(c, "") for c in cols} for r in checks])
        row_class = ["pass" if r["verdict"] == "pass" else "fail" for r in checks]
        n_fail = row_class.count("fail")
        parts.append(
            f"<p>{len(checks) - n_fail} of {len(checks)} checks passed"
            + (f"; <strong>{n_fail} failed</strong>" if n_fail else "")
            + ".</p>"
        )
        parts.append(_table(frame, row_class))
        parts.append(_img(figure_png(checks_figure(checks)), "checks against their limits"))
    elif checks is not None:
        parts.append("<p>No checks were run.</p>")

    if show_edits:
        parts += _edits_section(edit_results)

    for name, frame in (tables or {}).items():
        parts += [f"<h2>{html.escape(name)}</h2>", _table(frame)]
    for name, fig in (figures or {}).items():
        png = fig if isinstance(fig, bytes) else figure_png(fig)
        parts += [f"<h2>{html.escape(name)}</h2>", _img(png, name)]
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(
    folder: str | Path,
    *,
    summary: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]] | None,
    edit_results: Mapping[str, int] | None,
    figures: Mapping[str, Figure | bytes] | None = None,
    tables: Mapping[str, pd.DataFrame] | None = None,
    title: str = "sdcflow release report",
    show_edits: bool = True,
) -> Path:
    """Write ``<folder>/report.html`` and return its path.

    Parameters
    ----------
    folder : path
        The run's report folder (created if missing), not the published release.
    summary : mapping
        Scalar items shown first (release, run id, method and parameters, decision...).
    checks : sequence of mappings, or None
        Check rows as ``CheckOutcome.as_dict()`` gives them (check, figure, rule, threshold,
        verdict, description); drawn as a table and as bars of the share of each limit used.
        None leaves the section out.
    edit_results : mapping rule -> number of violating released records, or None
        None means the spec has no edit rules.
    figures : mapping title -> matplotlib Figure or PNG bytes, optional
        Further plots, each under its title.
    tables : mapping title -> DataFrame, optional
        Further tables of figures (for instance the risk-utility comparison).
    title : str
        Page title.
    show_edits : bool
        False leaves the edit-rule section out (pages that are not about one run).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    page = render_report(
        summary=summary,
        checks=checks,
        edit_results=edit_results,
        figures=figures,
        tables=tables,
        title=title,
        show_edits=show_edits,
    )
    target = folder / REPORT_NAME
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
