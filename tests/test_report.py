"""The self-contained HTML report."""

from __future__ import annotations

import base64
import math
import re

import pandas as pd
import pytest
from matplotlib.figure import Figure

from sdcflow.tasks.report.html import check_usage, write_report

GATES = [
    {"check": "k_anonymity", "figure": 5.0, "rule": ">=", "threshold": 5.0, "verdict": "pass",
     "description": "smallest group"},
    {"check": "max_information_loss", "figure": 12.5, "rule": "<=", "threshold": 10.0,
     "verdict": "FAIL", "description": "IL <b>"},
    {"check": "max_edit_violations", "figure": 0.0, "rule": "<=", "threshold": 0.0,
     "verdict": "pass", "description": "edits"},
]  # fmt: skip


def test_check_usage_by_hand():
    # <=: figure/threshold = 12.5/10; >=: threshold/figure = 5/5; 0/0 -> 0; 3 vs 0 -> inf
    assert check_usage(GATES[1]) == pytest.approx(1.25)
    assert check_usage(GATES[0]) == pytest.approx(1.0)
    assert check_usage(GATES[2]) == 0.0
    assert math.isinf(check_usage({**GATES[2], "figure": 3.0}))


def test_report_is_self_contained_with_tables_and_plots(tmp_path):
    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    path = write_report(
        tmp_path / "reports" / "run1",
        summary={"release": "demo", "run id": "abc", "decision": "REFUSED"},
        checks=GATES,
        edit_results={"total == a + b": 0, "a >= 0": 3},
        figures={"a plot": fig},
        tables={"figures": pd.DataFrame({"method": ["mdav"], "k": [3], "il": [5.69]})},
    )
    assert path.name == "report.html" and path.is_file()
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]  # no temporary left
    page = path.read_text(encoding="utf-8")
    # self-contained: every image inline, no external src/href
    assert not re.search(r'(src|href)="(?!data:)', page)
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 3  # checks bars, edit-rule bars, the caller's plot
    assert all(base64.b64decode(b)[:8] == b"\x89PNG\r\n\x1a\n" for b in images)
    assert "2 of 3 checks passed" in page and "1 failed" in page
    assert page.count('<tr class="fail">') == 2  # the failed check and the violated rule
    assert "IL &lt;b&gt;" in page  # text is escaped
    assert '<td class="num">5.69</td>' in page


def test_report_without_rules_or_checks(tmp_path):
    page = write_report(tmp_path, summary={}, checks=[], edit_results=None).read_text()
    assert "No checks were run." in page and "The spec has no edit rules." in page


def test_class_size_histogram_goes_into_the_report(tmp_path):
    from sdcflow.tasks.report.html import class_size_figure

    fig = class_size_figure([3, 3, 4, 5, 3], k=3)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == [3, 1, 1]  # sizes 3, 4, 5 seen 3, 1, 1 times
    page = write_report(
        tmp_path, summary={}, checks=None, edit_results=None, show_edits=False,
        figures={"class sizes": fig},
    ).read_text()  # fmt: skip
    assert page.count("data:image/png;base64,") == 1 and "Checks" not in page
