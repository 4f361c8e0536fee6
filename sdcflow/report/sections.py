"""What a report page is made of: sections of paragraphs, tables and plots.

A report is a list of :class:`Section`; one template (``templates/report.html.j2``) renders
every section the same way, so a new figure or table is one more section (or one more block
of a section), never a change of the template. Blocks are plain data: text is escaped by the
template, plots are SVG charts (or a PNG a caller drew) inlined as ``data:`` URIs.

Nothing here may hold a record value: tables carry figures (counts, shares, moments,
thresholds), plots are drawn from aggregates.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from sdcflow.report.svg import Chart


def fmt(value: Any) -> str:
    """A value as a person reads it: no ``None``, no Python reprs.

    ``None`` -> ``—``; booleans -> ``yes`` / ``no``; floats with 6 significant digits;
    lists joined by commas (lists of mappings by semicolons); mappings as
    ``key = value`` pairs, leaving out the unset ones.
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:d}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return f"{value:.6g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} = {fmt(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, Mapping) for v in value) and value:
            return "; ".join(fmt(v) for v in value)
        return ", ".join(fmt(v) for v in value)
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class Text:
    """A paragraph (``note`` renders small and muted)."""

    text: str
    style: Literal["normal", "note", "warning"] = "normal"
    kind: str = field(default="text", init=False)


@dataclass
class Table:
    """A table of figures.

    Attributes
    ----------
    columns : list of str
    rows : list of lists, each of len(columns)
        Cells are formatted with :func:`fmt`; numbers are right-aligned.
    row_classes : list of str or None
        CSS class per row (``pass``, ``fail``).
    caption : str
    """

    columns: list[str]
    rows: list[list[Any]]
    row_classes: list[str] | None = None
    caption: str = ""
    kind: str = field(default="table", init=False)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, caption: str = "") -> Table:
        rows = [list(r) for r in frame.itertuples(index=False, name=None)]
        return cls([str(c) for c in frame.columns], rows, caption=caption)

    def cells(self) -> list[list[tuple[str, bool]]]:
        """Every cell as ``(text, is_number)``, for the template."""
        return [[(fmt(v), _is_number(v)) for v in row] for row in self.rows]

    def row_class(self, i: int) -> str:
        return self.row_classes[i] if self.row_classes else ""


@dataclass
class Plot:
    """A plot: an image's bytes and their media type (an SVG chart, or a PNG a caller drew);
    ``alt`` says in words what it shows."""

    image: bytes
    alt: str
    caption: str = ""
    media_type: str = "image/svg+xml"
    kind: str = field(default="plot", init=False)

    @classmethod
    def of(cls, fig: Chart | bytes, alt: str, caption: str = "") -> Plot:
        if isinstance(fig, bytes):
            media = "image/png" if fig.startswith(b"\x89PNG") else "image/svg+xml"
            return cls(fig, alt, caption, media)
        return cls(fig.svg().encode("utf-8"), alt, caption)

    @property
    def data_uri(self) -> str:
        return f"data:{self.media_type};base64," + base64.b64encode(self.image).decode("ascii")


Block = Text | Table | Plot


@dataclass
class Section:
    """One titled part of the report; its blocks render in order."""

    title: str
    blocks: list[Block] = field(default_factory=list)
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            self.key = re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-") or "section"

    def text(self, text: str, style: Literal["normal", "note", "warning"] = "normal") -> Section:
        self.blocks.append(Text(text, style))
        return self

    def table(self, table: Table) -> Section:
        self.blocks.append(table)
        return self

    def plot(self, fig: Chart | bytes | None, alt: str, empty: str, caption: str = "") -> Section:
        """Add the plot, or the sentence ``empty`` when there is nothing to draw (never an
        empty box)."""
        self.blocks.append(Plot.of(fig, alt, caption) if fig is not None else Text(empty))
        return self


def table_of(mapping: Mapping[str, Any], headers: Sequence[str] = ("item", "value")) -> Table:
    """A two-column table of a mapping, leaving out unset (None) entries."""
    return Table(list(headers), [[k, v] for k, v in mapping.items() if v is not None])
