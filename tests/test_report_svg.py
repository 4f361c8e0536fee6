"""The report's charts as SVG: marks counted by hand, every text escaped, one well-formed
document without script or external reference, whatever the labels hold."""

from __future__ import annotations

import re
from xml.etree import ElementTree

import numpy as np
import pytest

from sdcflow.report import plots
from sdcflow.report.svg import RDBU_R, interpolate, nice_ticks, tick_label

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = 'x<script>alert("1")</script>&amp;'


def _document(chart) -> ElementTree.Element:
    text = chart.svg()
    assert not re.search(r"(href|src)=", text)  # nothing outside the document
    root = ElementTree.fromstring(text)
    assert root.tag == SVG + "svg" and not root.findall(f".//{SVG}script")
    return root


def _texts(root: ElementTree.Element) -> list[str]:
    return [t.text or "" for t in root.iter(SVG + "text")]


@pytest.mark.parametrize(
    ("low", "high", "whole", "expected"),
    [
        (0.0, 2.15, False, [0.0, 0.5, 1.0, 1.5, 2.0]),
        (0.0, 1.0, False, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (3.0, 6.0, True, [3.0, 4.0, 5.0, 6.0]),
        (2.5, 3.5, True, [3.0]),  # whole numbers only, never 2.5
        (0.0, 1234.0, False, [0.0, 250.0, 500.0, 750.0, 1000.0]),
    ],
)
def test_ticks_are_round_numbers_within_the_limits(low, high, whole, expected):
    assert nice_ticks(low, high, whole=whole) == expected


def test_tick_labels_read_as_people_write_figures():
    assert [tick_label(v) for v in (0.0, 1500000.0, 0.25, 1 / 3)] == [
        "0",
        "1,500,000",
        "0.25",
        "0.3333",
    ]


def test_the_colour_scale_runs_from_its_first_anchor_to_its_last():
    assert interpolate(RDBU_R, 0.0) == RDBU_R[0] and interpolate(RDBU_R, 1.0) == RDBU_R[-1]
    assert interpolate(RDBU_R, 0.5) == "#f7f7f7"  # white at zero correlation
    assert interpolate(RDBU_R, -3.0) == RDBU_R[0]  # beyond the ends: the ends


def test_checks_chart_draws_each_check_as_its_share_of_the_limit_capped_at_two():
    checks = [
        {"check": "k", "figure": 5.0, "rule": ">=", "threshold": 5.0, "verdict": "pass"},
        {"check": "il", "figure": 30.0, "rule": "<=", "threshold": 10.0, "verdict": "FAIL"},
    ]
    (panel,) = plots.checks_figure(checks).panels
    assert [(b.at, b.value, b.color) for b in panel.bars] == [
        (0, 1.0, plots.PASS),
        (1, 2.0, plots.FAIL),
    ]
    assert [(n.at, n.text) for n in panel.notes] == [(1, ">2")]  # 3 shown as past 2
    assert {"k", "il", ">2"} <= set(_texts(_document(plots.checks_figure(checks))))


def test_risk_histogram_from_aggregates_equals_the_one_from_every_record():
    p = np.array([0.2, 0.5, 1.0])
    records = np.array([5, 2, 1])
    weighted = plots.risk_figure(p, 5, weights=records).panels[0]
    flat = plots.risk_figure(np.repeat(p, records), 5).panels[0]
    assert weighted.bars == flat.bars and sum(b.value for b in flat.bars) == 8
    assert plots.risk_figure(p, 5, weights=np.zeros(3)) is None


def test_every_label_is_escaped_in_every_chart():
    names = [HOSTILE, "b & c"]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    bins = [plots.safe_bins(x[:, j], x[:, j] + 0.1, 5) for j in range(2)]
    corr = np.corrcoef(x.T)
    charts = [
        plots.checks_figure(
            [{"check": HOSTILE, "figure": 1.0, "rule": "<=", "threshold": 2.0, "verdict": "pass"}]
        ),
        plots.edit_figure({HOSTILE: 3}, {HOSTILE: 1}),
        plots.distribution_figure(names, bins),
        plots.correlation_figure(names, corr, corr + 0.01),
    ]
    for chart in charts:
        texts = _texts(_document(chart))
        assert HOSTILE in texts  # shown as text, intact
        assert "<script>" not in chart.svg()


def test_correlation_heatmaps_leave_constant_columns_blank_and_print_each_entry():
    original = np.array([[1.0, 0.5, np.nan], [0.5, 1.0, np.nan], [np.nan, np.nan, np.nan]])
    released = np.array([[1.0, 0.25, np.nan], [0.25, 1.0, np.nan], [np.nan, np.nan, np.nan]])
    chart = plots.correlation_figure(["a", "b", "c"], original, released)
    texts = _texts(_document(chart))
    # four finite entries per panel, printed with two decimals; the NaN ones are not drawn:
    # 1.00 twice on each correlation panel's diagonal and at the top of its colour scale
    assert texts.count("1.00") == 2 * 2 + 2
    assert texts.count("0.50") == 2 and texts.count("0.25") == 2 + 1  # released, scale top
    assert texts.count("-0.25") == 2 + 1  # the change, the scale's bottom
    diff = chart.panels[2].heatmap
    assert (diff.low, diff.high) == (-0.25, 0.25)  # symmetric around no change
