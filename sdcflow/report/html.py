"""Render a report — a list of :class:`~sdcflow.report.sections.Section` — to one
self-contained HTML page, with Jinja2 (autoescaped) and one template for every section.

The page has no external resource: plots are SVG charts inlined as base64 ``data:`` URIs, styles
are inline, there is no script. It holds what the sections hold: figures and text, never a
record value.

The file is written atomically (a temporary file in the same folder, then ``os.replace``), so a
crashed run never leaves a half-written report.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from sdcflow.report.plots import check_usage, class_size_figure
from sdcflow.report.sections import Section

REPORT_NAME = "report.html"

__all__ = [
    "REPORT_NAME",
    "check_usage",
    "class_size_figure",
    "render_report",
    "write_report",
]


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("sdcflow.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_report(
    sections: Sequence[Section],
    *,
    title: str = "sdcflow release report",
    decision: str | None = None,
    passed: bool = True,
) -> str:
    """The report page as a string (see :func:`write_report`)."""
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        sections=list(sections),
        decision=decision,
        decision_passed=passed,
        written=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def write_report(
    folder: str | Path,
    sections: Sequence[Section],
    *,
    title: str = "sdcflow release report",
    decision: str | None = None,
    passed: bool = True,
) -> Path:
    """Write ``<folder>/report.html`` and return its path.

    Parameters
    ----------
    folder : path
        The run's report folder (created if missing), not the published release.
    sections : sequence of Section
        The page's content, in order.
    title : str
        Page title.
    decision : str, optional
        One line shown first, highlighted (green when ``passed``, red otherwise).
    passed : bool
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    page = render_report(sections, title=title, decision=decision, passed=passed)
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
