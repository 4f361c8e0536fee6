"""Charts as SVG text: bars, dashed reference lines and heatmaps, laid out in panels.

The report draws a handful of bar charts and heatmaps from aggregates. Written as SVG here they
take milliseconds; a plotting library's import, layout and raster drawing take the best part of
every ``sdcflow check``. A :class:`Chart` is data first (its marks in data units, which tests
read by hand) and SVG second (:meth:`Chart.svg`), so the figure a test checks is the figure
drawn. Every text is XML-escaped; the document has no script and no external reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

import numpy as np

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
CHAR = 0.6  # width of an average character, in units of the font size
INK, GRID = "#333333", "#e6e6e6"

# Diverging colour scales from ColorBrewer (11 classes), low end first: RdBu reversed (blue
# for -1, red for +1) for correlations, PuOr reversed (purple low, orange high) for changes.
RDBU_R = (
    "#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7",
    "#fddbc7", "#f4a582", "#d6604d", "#b2182b", "#67001f",
)  # fmt: skip
PUOR_R = (
    "#2d004b", "#542788", "#8073ac", "#b2abd2", "#d8daeb", "#f7f7f7",
    "#fee0b6", "#fdb863", "#e08214", "#b35806", "#7f3b08",
)  # fmt: skip


@dataclass(frozen=True)
class Bar:
    """One bar: centred at ``at`` on the position axis, ``width`` wide, ``value`` long."""

    at: float
    width: float
    value: float
    color: str
    series: str = ""


@dataclass(frozen=True)
class Rule:
    """A dashed line across the panel at ``at`` on the position axis."""

    at: float
    color: str = INK
    label: str = ""


@dataclass(frozen=True)
class Note:
    """A short text at (``at`` on the position axis, ``value`` on the value axis)."""

    at: float
    value: float
    text: str


@dataclass
class Heatmap:
    """A matrix drawn cell by cell on a diverging scale, with a colour bar.

    Attributes
    ----------
    matrix : ndarray of shape (d, d)
        NaN cells are left blank.
    low, high : float
        The ends of the colour scale.
    colors : sequence of str
        The scale's anchors, low end first, interpolated linearly.
    labels : list of str, of length d
    row_labels : bool
        Whether the rows are labelled (the first of panels side by side only).
    values : bool
        Whether each cell prints its value (two decimals).
    """

    matrix: np.ndarray
    low: float
    high: float
    colors: Sequence[str]
    labels: list[str]
    row_labels: bool = True
    values: bool = True


@dataclass
class Panel:
    """One pair of axes.

    Bars rise from the position axis (``horizontal=False``: positions along x, values up y) or
    extend right from it (``horizontal=True``: positions down y, the first at the top, values
    along x). ``categories`` names positions 0, 1, ...; without it the position axis gets
    numeric ticks (whole numbers when ``whole_positions``).
    """

    bars: list[Bar] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    heatmap: Heatmap | None = None
    horizontal: bool = False
    categories: list[str] | None = None
    slanted: bool = False
    whole_positions: bool = False
    position_limits: tuple[float, float] | None = None
    value_limits: tuple[float, float] | None = None
    title: str = ""
    position_label: str = ""
    value_label: str = ""
    legend: bool = False
    font: float = 11.0

    def series(self) -> dict[str, str]:
        """Legend entries, in order: series name -> colour (bars), then rule labels."""
        entries = {b.series: b.color for b in self.bars if b.series}
        entries.update({r.label: r.color for r in self.rules if r.label})
        return entries

    def limits(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """(position, value) limits: given, or spanning every bar, rule and note."""
        if self.position_limits is not None:
            pos = self.position_limits
        elif self.categories is not None:
            pos = (-0.5, len(self.categories) - 0.5)
        else:
            ends = [b.at - b.width / 2 for b in self.bars] + [b.at + b.width / 2 for b in self.bars]
            ends += [r.at for r in self.rules]
            pos = (min(ends), max(ends)) if ends else (0.0, 1.0)
            pad = 0.03 * (pos[1] - pos[0] or 1.0)
            pos = (pos[0] - pad, pos[1] + pad)
        if self.value_limits is not None:
            val = self.value_limits
        else:
            top = max([b.value for b in self.bars] + [0.0])
            val = (0.0, top * 1.05 if top > 0 else 1.0)
        return pos, val


@dataclass
class Chart:
    """Panels in a grid, ``columns`` across, each ``panel_height`` pixels high, the whole
    ``width`` pixels wide."""

    panels: list[Panel]
    columns: int = 1
    width: float = 720.0
    panel_height: float = 300.0

    def svg(self) -> str:
        """The chart as a standalone SVG document."""
        rows = math.ceil(len(self.panels) / self.columns)
        cell_w = self.width / self.columns
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:.0f}" '
            f'height="{rows * self.panel_height:.0f}" '
            f'viewBox="0 0 {self.width:.0f} {rows * self.panel_height:.0f}" '
            f"font-family={quoteattr(FONT)}>",
            '<rect width="100%" height="100%" fill="#ffffff"/>',
        ]
        for i, panel in enumerate(self.panels):
            r, c = divmod(i, self.columns)
            frame = (c * cell_w, r * self.panel_height, cell_w, self.panel_height)
            parts.extend(_draw_panel(panel, frame, f"p{i}"))
        parts.append("</svg>")
        return "\n".join(parts)


# --- ticks and scales ------------------------------------------------------------------------


def nice_ticks(low: float, high: float, count: int = 5, *, whole: bool = False) -> list[float]:
    """Round tick positions within [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten
    (whole numbers only when ``whole``), about ``count`` of them."""
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return [low]
    raw = span / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    if whole:
        step = max(1.0, float(math.ceil(step)))
    first = math.ceil(low / step - 1e-9) * step
    ticks = np.arange(first, high + step * 1e-9, step)
    return [float(round(t, 12)) + 0.0 for t in ticks]


def tick_label(value: float) -> str:
    """A tick's text: whole numbers with thousands separators, others with 4 digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


def _scale(lo: float, hi: float, a: float, b: float):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _width(text: str, size: float) -> float:
    return len(text) * CHAR * size


def interpolate(colors: Sequence[str], t: float) -> str:
    """The colour at ``t`` in [0, 1] along ``colors`` (linear between anchors)."""
    t = min(1.0, max(0.0, t)) * (len(colors) - 1)
    i = min(int(t), len(colors) - 2)
    f = t - i
    a, b = _rgb(colors[i]), _rgb(colors[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b, strict=True))


def _cell_label(value: float) -> str:
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def _scale_label(value: float) -> str:
    return f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.2g}"


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _dark(color: str) -> bool:
    r, g, b = _rgb(color)
    return 0.299 * r + 0.587 * g + 0.114 * b < 110


# --- drawing ---------------------------------------------------------------------------------


def _text(
    x: float,
    y: float,
    text: str,
    size: float,
    *,
    anchor: str = "middle",
    rotate: float = 0.0,
    fill: str = INK,
    baseline: str = "central",
) -> str:
    turn = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" text-anchor="{anchor}" '
        f'dominant-baseline="{baseline}" fill="{fill}"{turn}>{escape(text)}</text>'
    )


def _rect(x: float, y: float, w: float, h: float, fill: str) -> str:
    return (
        f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(w, 0):.2f}" height="{max(h, 0):.2f}" '
        f'fill="{fill}"/>'
    )


def _line(x1: float, y1: float, x2: float, y2: float, color: str, dashed: bool = False) -> str:
    dash = ' stroke-dasharray="5 3"' if dashed else ""
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
        f'stroke-width="1"{dash}/>'
    )


def _draw_panel(panel: Panel, frame: tuple[float, float, float, float], uid: str) -> list[str]:
    if panel.heatmap is not None:
        return _draw_heatmap(panel, panel.heatmap, frame, uid)
    fs = panel.font
    (p_lo, p_hi), (v_lo, v_hi) = panel.limits()
    v_ticks = nice_ticks(v_lo, v_hi)
    if panel.categories is not None:
        p_ticks = [float(i) for i in range(len(panel.categories))]
        p_labels = list(panel.categories)
    else:
        p_ticks = nice_ticks(p_lo, p_hi, whole=panel.whole_positions)
        p_labels = [tick_label(t) for t in p_ticks]
    v_labels = [tick_label(t) for t in v_ticks]
    fx, fy, fw, fh = frame
    # margins: the labels of the axis on the left and of the axis at the bottom
    left_labels, bottom_labels = (p_labels, v_labels) if panel.horizontal else (v_labels, p_labels)
    left_label, bottom_label = (
        (panel.position_label, panel.value_label)
        if panel.horizontal
        else (panel.value_label, panel.position_label)
    )
    left = 8 + max((_width(s, fs) for s in left_labels), default=0) + (18 if left_label else 0)
    slant = panel.slanted and not panel.horizontal
    longest = max((_width(s, fs) for s in bottom_labels), default=0)
    bottom = 8 + (longest * 0.72 + fs if slant else fs + 4) + (fs + 8 if bottom_label else 0)
    top = 12 + (fs + 10 if panel.title else 0)
    right = 14
    x0, y0 = fx + left, fy + top
    w, h = max(fw - left - right, 10.0), max(fh - top - bottom, 10.0)
    out: list[str] = []
    if panel.title:
        out.append(_text(x0 + w / 2, fy + 8 + fs / 2 + 2, panel.title, fs + 1))
    if panel.horizontal:
        pos = _scale(p_lo, p_hi, y0, y0 + h)  # first position at the top
        val = _scale(v_lo, v_hi, x0, x0 + w)
    else:
        pos = _scale(p_lo, p_hi, x0, x0 + w)
        val = _scale(v_lo, v_hi, y0 + h, y0)
    # value grid and ticks
    for t, s in zip(v_ticks, v_labels, strict=True):
        if panel.horizontal:
            x = val(t)
            out.append(_line(x, y0, x, y0 + h, GRID))
            out.append(_text(x, y0 + h + 4 + fs / 2, s, fs))
        else:
            y = val(t)
            out.append(_line(x0, y, x0 + w, y, GRID))
            out.append(_text(x0 - 6, y, s, fs, anchor="end"))
    for b in panel.bars:
        a, z = pos(b.at - b.width / 2), pos(b.at + b.width / 2)
        v0, v1 = val(max(v_lo, 0.0)), val(min(b.value, v_hi))
        if panel.horizontal:
            out.append(_rect(v0, min(a, z), v1 - v0, abs(z - a), b.color))
        else:
            out.append(_rect(min(a, z), v1, abs(z - a), v0 - v1, b.color))
    for r in panel.rules:
        if panel.horizontal:
            out.append(_line(val(r.at), y0, val(r.at), y0 + h, r.color, dashed=True))
        else:
            out.append(_line(pos(r.at), y0, pos(r.at), y0 + h, r.color, dashed=True))
    for n in panel.notes:
        if panel.horizontal:
            out.append(_text(val(n.value) + 3, pos(n.at), n.text, fs - 2, anchor="start"))
        else:
            out.append(_text(pos(n.at), val(n.value) - 6, n.text, fs - 2))
    # position ticks
    for t, s in zip(p_ticks, p_labels, strict=True):
        if not p_lo - 1e-9 <= t <= p_hi + 1e-9:
            continue
        if panel.horizontal:
            out.append(_text(x0 - 6, pos(t), s, fs, anchor="end"))
        elif slant:
            x, y = pos(t), y0 + h + 6
            out.append(_text(x, y, s, fs, anchor="end", rotate=-45, baseline="hanging"))
        else:
            out.append(_text(pos(t), y0 + h + 4 + fs / 2, s, fs))
    out.append(
        f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}" fill="none" '
        f'stroke="{INK}" stroke-width="1"/>'
    )
    if bottom_label:
        out.append(_text(x0 + w / 2, fy + fh - 4 - fs / 2, bottom_label, fs))
    if left_label:
        out.append(_text(fx + 4 + fs / 2, y0 + h / 2, left_label, fs, rotate=-90))
    if panel.legend:
        # bars extending right leave the lower right free; rising bars the upper right
        out.extend(_legend(panel, x0 + w, y0 + h if panel.horizontal else y0, fs))
    return out


def _legend(panel: Panel, right: float, edge: float, fs: float) -> list[str]:
    """The legend box in the panel's upper right corner (``edge`` its top) or, for
    horizontal bars, its lower right corner (``edge`` its bottom)."""
    entries = panel.series()
    if not entries:
        return []
    rule_labels = {r.label for r in panel.rules}
    width = 30 + max(_width(s, fs) for s in entries)
    height = len(entries) * (fs + 6) + 6
    x = right - width - 6
    y = edge - height - 6 if panel.horizontal else edge + 6
    out = [
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" '
        f'fill="#ffffff" fill-opacity="0.85" stroke="{GRID}"/>'
    ]
    for i, (label, color) in enumerate(entries.items()):
        cy = y + 6 + i * (fs + 6) + fs / 2
        if label in rule_labels:
            out.append(_line(x + 6, cy, x + 22, cy, color, dashed=True))
        else:
            out.append(_rect(x + 6, cy - fs / 2 + 1, 16, fs - 2, color))
        out.append(_text(x + 26, cy, label, fs, anchor="start"))
    return out


def _draw_heatmap(
    panel: Panel, hm: Heatmap, frame: tuple[float, float, float, float], uid: str
) -> list[str]:
    fs = panel.font
    d = len(hm.labels)
    fx, fy, fw, fh = frame
    longest = max((_width(s, fs) for s in hm.labels), default=0)
    # every panel keeps room for row labels, so heatmaps side by side are the same size
    left = 10 + longest
    bottom = 8 + longest * 0.72 + fs
    top = 8 + (fs + 10 if panel.title else 0)
    bar_labels = [_scale_label(v) for v in (hm.high, (hm.high + hm.low) / 2, hm.low)]
    bar_w = 12 + 6 + max(_width(s, fs - 1) for s in bar_labels) + 10  # colour bar, labels
    side = max(min(fw - left - bar_w - 6, fh - top - bottom), 10.0)
    cell = side / max(d, 1)
    x0, y0 = fx + left, fy + top
    out: list[str] = []
    if panel.title:
        out.append(_text(x0 + side / 2, fy + 8 + fs / 2 + 2, panel.title, fs + 1))
    span = (hm.high - hm.low) or 1.0
    for (r, c), v in np.ndenumerate(np.asarray(hm.matrix, dtype=np.float64)):
        if not math.isfinite(v):
            continue
        color = interpolate(hm.colors, (v - hm.low) / span)
        out.append(_rect(x0 + c * cell, y0 + r * cell, cell, cell, color))
        if hm.values:
            ink = "#ffffff" if _dark(color) else INK
            out.append(
                _text(
                    x0 + (c + 0.5) * cell, y0 + (r + 0.5) * cell, _cell_label(v), fs - 2, fill=ink
                )
            )
    out.append(
        f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{side:.1f}" height="{side:.1f}" fill="none" '
        f'stroke="{INK}" stroke-width="1"/>'
    )
    for i, label in enumerate(hm.labels):
        x = x0 + (i + 0.5) * cell
        out.append(_text(x, y0 + side + 6, label, fs, anchor="end", rotate=-45, baseline="hanging"))
        if hm.row_labels:
            out.append(_text(x0 - 6, y0 + (i + 0.5) * cell, label, fs, anchor="end"))
    # the colour bar: a vertical gradient, high end at the top
    bx = x0 + side + 12
    stops = "".join(
        f'<stop offset="{i / (len(hm.colors) - 1):.3f}" stop-color="{c}"/>'
        for i, c in enumerate(reversed(hm.colors))
    )
    out.append(
        f'<defs><linearGradient id="{uid}" x1="0" y1="0" x2="0" y2="1">{stops}'
        "</linearGradient></defs>"
    )
    out.append(
        f'<rect x="{bx:.1f}" y="{y0:.1f}" width="12" height="{side:.1f}" fill="url(#{uid})" '
        f'stroke="{INK}" stroke-width="0.5"/>'
    )
    for value, label in zip((hm.high, (hm.high + hm.low) / 2, hm.low), bar_labels, strict=True):
        y = y0 + (hm.high - value) / span * side
        out.append(_text(bx + 16, y, label, fs - 1, anchor="start"))
    return out
