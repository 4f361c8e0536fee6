"""The run report: sections rendered by one template, self-contained, figures only; looked at
in a headless browser that may not reach the network."""

from __future__ import annotations

import base64
import math
import re
from fractions import Fraction
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest
from browser import IMAGES, REFERENCES, Chromium

from sdcflow.gates import GateContext, gather_evidence, run_gates
from sdcflow.methods import METHODS
from sdcflow.methods.blocks import mask_quasi_identifiers
from sdcflow.report.html import check_usage, write_report
from sdcflow.report.plots import class_size_figure, safe_bins
from sdcflow.report.release import (
    ReleaseFacts,
    RuleFacts,
    _correlations,
    compared_moments,
    loss_section,
    release_sections,
    summary_section,
)
from sdcflow.report.sections import Section, Table, fmt

GATES = [
    {"check": "k_anonymity", "figure": 5.0, "rule": ">=", "threshold": 5.0, "verdict": "pass",
     "description": "smallest group"},
    {"check": "max_information_loss", "figure": 12.5, "rule": "<=", "threshold": 10.0,
     "verdict": "FAIL", "description": "IL <b>"},
    {"check": "max_edit_violations", "figure": 0.0, "rule": "<=", "threshold": 0.0,
     "verdict": "pass", "description": "edits"},
]  # fmt: skip
COLUMNS = ["a", "b", "c"]
RULES = [RuleFacts("R1", "c == a + b"), RuleFacts("R2", "a >= 0", "warning")]


def test_check_usage_by_hand():
    # <=: figure/threshold = 12.5/10; >=: threshold/figure = 5/5; 0/0 -> 0; 3 vs 0 -> inf
    assert check_usage(GATES[1]) == pytest.approx(1.25)
    assert check_usage(GATES[0]) == pytest.approx(1.0)
    assert check_usage(GATES[2]) == 0.0
    assert math.isinf(check_usage({**GATES[2], "figure": 3.0}))
    assert math.isinf(check_usage({**GATES[2], "figure": None}))  # not checked


def test_values_read_as_a_person_reads_them():
    assert fmt(None) == "—" and fmt(True) == "yes" and fmt(3) == "3" and fmt(0.1 + 0.2) == "0.3"
    assert fmt({"m": 1.1, "lambda": None}) == "m = 1.1"
    assert fmt([{"stat": "mean", "vars": ["x"]}, {"stat": "std", "vars": ["y"]}]) == (
        "stat = mean, vars = x; stat = std, vars = y"
    )


def test_class_size_histogram_has_one_bar_per_size_with_its_count():
    """By hand: sizes 3, 3, 4, 6 -> bars at 3, 4, 5, 6 of heights 2, 1, 0, 1, each one wide."""
    (panel,) = class_size_figure([3, 3, 4, 6], 5).panels
    bars = [(b.at, b.width, b.value) for b in panel.bars]
    assert bars == [(3.0, 1.0, 2.0), (4.0, 1.0, 1.0), (5.0, 1.0, 0.0), (6.0, 1.0, 1.0)]
    assert [(r.at, r.label) for r in panel.rules] == [(5, "k = 5")]
    assert class_size_figure([]) is None


def test_class_sizes_from_aggregates_draw_the_same_bars_as_per_record_sizes():
    """Sizes 3 (two records) and 6 (one) weighted by records equal the per-record list."""
    weighted = class_size_figure([3, 6], 5, weights=[2, 1]).panels[0].bars
    assert weighted == class_size_figure([3, 3, 6], 5).panels[0].bars


def test_sections_render_escaped_and_self_contained(tmp_path):
    fig_section = Section("A plot").plot(class_size_figure([3, 3, 4]), "sizes", "nothing")
    empty = Section("An empty plot").plot(None, "never drawn", "Nothing to draw here.")
    table = Section("A table <b>").table(
        Table(["x", "y"], [["<i>", 5.69], ["b", None]], ["fail", ""])
    )
    path = write_report(
        tmp_path / "r", [fig_section, empty, table], decision="REFUSED", passed=False
    )
    assert path.name == "report.html" and [p.name for p in path.parent.iterdir()] == ["report.html"]
    page = path.read_text(encoding="utf-8")
    assert not re.search(r'(src|href)="(?!data:|#)', page)  # nothing outside the page
    (image,) = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    svg = ElementTree.fromstring(base64.b64decode(image))  # a well-formed document
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    assert not svg.findall(".//{http://www.w3.org/2000/svg}script")
    assert "Nothing to draw here." in page and "never drawn" not in page  # a sentence, no box
    assert "&lt;i&gt;" in page and "A table &lt;b&gt;" in page and "<i>" not in page
    assert '<td class="num">5.69</td>' in page and "<td>—</td>" in page
    assert 'class="decision fail"' in page and '<tr class="fail">' in page


@pytest.mark.parametrize("k", [3, 5, 10])
def test_safe_bins_hold_k_records_and_show_no_value(k):
    x = np.random.default_rng(k).lognormal(8, 1, size=500)
    y = x + np.random.default_rng(1).normal(0, 100, size=500)
    bins = safe_bins(x, y, k)
    assert bins is not None and bins.original.min() >= k and bins.original.sum() == 500
    assert bins.released.sum() == 500 and len(bins.labels()) == bins.original.size <= 12
    assert not set(bins.edges) & set(x)  # rounded quantiles (these values are not round)
    labels = bins.labels()
    assert labels[0].startswith("≤") and labels[-1].startswith(">")  # open ends: no min, max
    # a power of ten at most the typical bin width: edges are multiples of it
    step = 10.0 ** math.floor(math.log10(np.diff(bins.edges).min()))
    assert np.allclose(np.round(bins.edges / step) * step, bins.edges)


def test_safe_bins_never_put_an_edge_on_the_minimum_or_maximum():
    # a quarter of the records tie at the minimum (0), as zero employees would
    x = np.concatenate([np.zeros(100), np.arange(1.0, 301.0)])
    bins = safe_bins(x, x, 5)
    assert bins.edges.min() > x.min() and bins.edges.max() < x.max()
    assert bins.original.min() >= 5 and bins.original.sum() == x.size


def test_safe_bins_refuse_too_few_records_or_a_constant_column():
    assert safe_bins(np.arange(9.0), np.arange(9.0), 5) is None  # 9 < 2k: no two bins of 5
    assert safe_bins(np.full(100, 7.0), np.full(100, 7.0), 5) is None


def _facts(method: str = "mdav", **kw) -> ReleaseFacts:
    rng = np.random.default_rng(0)
    a = rng.lognormal(7, 1, size=300) * 1.0001
    b = rng.lognormal(6, 1, size=300) * 1.0001
    X = np.column_stack([a, b, a + b])
    params = METHODS[method].params.model_validate({"name": method, "k": 5, **kw})
    result = mask_quasi_identifiers(X, COLUMNS, params, np.random.default_rng(1))
    ctx = GateContext(X, COLUMNS, result, params, edit_violations={"R1": 0})
    outcomes = run_gates(ctx, {"max_information_loss": 50})
    return ReleaseFacts(
        release="demo",
        run_id="0" * 32,
        decision="published",
        passed=True,
        method=params,
        checks=[o.as_dict() for o in outcomes],
        rules=RULES,
        edit_rules={
            "raw": {"R1": 0, "R2": 4},
            "masked": {"R1": 0, "R2": 0},
            "repaired_records": 0,
            "not_checked_after_masking": [],
        },
        columns=COLUMNS,
        original=X,
        result=result,
        evidence=gather_evidence(ctx),
    )


def _visible_text(page: str) -> str:
    return re.sub(r'src="data:[^"]+"', "", page)


def test_release_report_shows_every_part_and_no_record_value(tmp_path):
    facts = _facts()
    sections = release_sections(facts)
    titles = [s.title for s in sections]
    assert titles == [
        "Summary", "Checks", "Edit rules", "Information loss",
        "Original and released quasi-identifiers", "Correlations",
        "Records sharing each released row",
        "Per-record risk", "Method and parameters",
    ]  # fmt: skip
    page = write_report(tmp_path, sections, decision="published").read_text(encoding="utf-8")
    text = _visible_text(page)
    # every gate with its unit; each rule's text with raw and released counts
    assert "max_information_loss" in text and "<td>%</td>" in text and "<td>records</td>" in text
    assert "c == a + b" in text and "a &gt;= 0" in text
    # readable parameters: no Python dict, no None
    assert "None" not in text and "{" not in text.split("<body>")[1]
    # figures only: no original value of any record appears, in any formatting, as a number
    # of the page (whole numbers: a figure such as a step's 0.00343542 seconds holds "354"
    # without showing the value 354)
    numbers = set(re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", text))
    for value in facts.original.ravel():
        for shown in (f"{value:.6g}", f"{value:.10g}", repr(float(value)), f"{value:.2f}"):
            assert shown not in numbers
        assert f"{value:.1f}" not in numbers
    assert (
        page.count("data:image/svg+xml;base64,") == 6
    )  # checks, edits, histograms, corr., sizes, risk


def test_plots_with_nothing_to_show_become_sentences(tmp_path):
    facts = _facts()
    facts.edit_rules = {"raw": {"R1": 0, "R2": 0}, "masked": {"R1": 0, "R2": 0}}
    facts.columns, facts.original = ["a"], facts.original[:, :1]
    facts.result.points = facts.result.points[:, :1]
    text = write_report(tmp_path, release_sections(facts)).read_text(encoding="utf-8")
    assert "No rule is violated by a raw or a released record" in text
    assert "One quasi-identifier: there is no correlation to compare." in text


def test_lower_bound_and_repaired_loss_are_shown_beside_il(tmp_path):
    facts = _facts()
    details = facts.result.details
    assert details["information_loss_lower_bound"] <= details["information_loss"]  # from #15
    facts.evidence.information_loss["repaired"] = 3.5
    (loss,) = [s for s in release_sections(facts) if s.title == "Information loss"]
    rows = {r[0]: r[1] for r in loss.blocks[0].rows}
    bound = "lower bound on IL for any partition into groups of >= k records"
    assert rows[bound] == details["information_loss_lower_bound"]
    assert (
        rows["IL / bound (1 would be provably optimal)"] == details["information_loss_over_bound"]
    )
    assert rows["IL against the repaired records (what the method masked)"] == 3.5
    assert any("raw file" in label for label in rows)
    # a method that reports why it has no bound says so beside IL
    details.pop("information_loss_lower_bound")
    details["lower_bound"] = {"status": "not computed: over the CPU budget"}
    (loss,) = [s for s in release_sections(facts) if s.title == "Information loss"]
    assert "No lower bound on IL: not computed: over the CPU budget." in [
        b.text for b in loss.blocks if b.kind == "text"
    ]


def test_box_report_shows_box_sizes_and_estimates_with_their_estimand(tmp_path):
    facts = _facts("box", weights="fuzzy")
    sections = {s.title: s for s in release_sections(facts)}
    matching = sections["Records sharing each released row"].blocks[0].text
    assert "a box's records share its bounds" in matching
    method = sections["Method and parameters"]
    captions = [b.caption for b in method.blocks if b.kind == "table"]
    assert "estimates" in captions and "estimates_equal_weights" in captions
    notes = [b.text for b in method.blocks if b.kind == "text"]
    assert any(n.startswith("estimand (every row): the statistic of the original") for n in notes)


def test_report_in_a_browser_loads_nothing_from_outside(tmp_path):
    wide = pd.DataFrame({f"variant figure {i}": [1.23456789] for i in range(40)})
    sections = [*release_sections(_facts()), Section("Wide").table(Table.from_frame(wide))]
    page = write_report(tmp_path / "report", sections)
    with Chromium(tmp_path / "profile") as browser:
        visit = browser.visit(page.as_uri())
        assert visit.requests and all(
            u.startswith(("data:", page.as_uri())) for u in visit.requests
        )
        assert not visit.failed
        references = browser.evaluate(REFERENCES)
        assert references and all(ref.startswith(("data:", "#")) for _, ref in references)
        images = browser.evaluate(IMAGES)
        assert len(images) == 6 and all(done and width > 100 for _, done, width in images)
        # a wide table (compare's overflowed at 1400 px) scrolls inside its box, the page not
        assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert browser.evaluate(
            "(() => { const d = document.querySelector('#wide .scroll');"
            " return d.scrollWidth > d.clientWidth; })()"
        )


def test_record_risk_is_the_gates_own_not_recomputed(monkeypatch):
    import sdcflow.gates.anonymity as anonymity
    from sdcflow.gates import MeasureOptions

    facts = _facts("fuzzy")
    calls = []
    real = anonymity.transparency_probabilities
    monkeypatch.setattr(
        anonymity, "transparency_probabilities", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    X, result, params = facts.original, facts.result, facts.method
    options = MeasureOptions(transparency={"intruder": "manifest"})
    gated = GateContext(X, COLUMNS, result, params, options=options)
    (outcome,) = [o for o in run_gates(gated, {"max_transparency_reidentification": 100})
                  if o.key == "max_transparency_reidentification"]  # fmt: skip
    risk = gather_evidence(gated).record_risk
    assert len(calls) == 1  # the gate's computation, reused by the report
    assert 100 * risk.probabilities.mean() == pytest.approx(outcome.figure)
    assert "no transparency gate ran" not in risk.intruder
    calls.clear()
    ungated = GateContext(X, COLUMNS, result, params)
    run_gates(ungated, {})
    risk = gather_evidence(ungated).record_risk
    assert len(calls) == 1 and "no transparency gate ran" in risk.intruder  # the cheap model


def test_randomized_blocks_get_a_risk_sentence_unless_gated(tmp_path):
    X = _facts().original
    params = METHODS["fuzzy"].params(k=5, restarts=1)
    blocks = [["a"], ["b", "c"]]
    result = mask_quasi_identifiers(X, COLUMNS, params, np.random.default_rng(2), None, blocks)
    ctx = GateContext(X, COLUMNS, result, params)
    run_gates(ctx, {})
    assert gather_evidence(ctx).record_risk is None  # not paid for unless gated
    facts = _facts()
    facts.method, facts.result, facts.evidence = params, result, gather_evidence(ctx)
    (risk,) = [s for s in release_sections(facts) if s.title == "Per-record risk"]
    assert [b.kind for b in risk.blocks] == ["text"] and "not computed" in risk.blocks[0].text
    gated = GateContext(X, COLUMNS, result, params)
    run_gates(gated, {"max_transparency_reidentification": 100})
    assert gather_evidence(gated).record_risk.probabilities.shape == (X.shape[0],)


def test_a_run_refused_before_masking_explains_itself(tmp_path):
    facts = _facts()
    facts.result = facts.original = facts.evidence = None
    facts.decision, facts.passed = "REFUSED: raw records violate edit rules", False
    facts.checks = [
        {
            "check": "edit_rule:R1",
            "figure": 4.0,
            "rule": "<=",
            "threshold": 0.0,
            "verdict": "FAIL",
            "unit": "",
            "description": "raw records violating R1",
        }
    ]
    facts.edit_rules = {"raw": {"R1": 4, "R2": 0}, "repaired_records": 0}
    sections = release_sections(facts)
    assert [s.title for s in sections] == [
        "Summary", "Checks", "Edit rules", "Masking", "Method and parameters",
    ]  # fmt: skip
    page = write_report(tmp_path, sections, decision=facts.decision, passed=False).read_text()
    assert "Nothing was masked" in page and "c == a + b" in page and "not evaluated" in page


def test_missing_numeric_values_are_left_out_of_moments_bins_and_correlations(tmp_path):
    facts = _facts()
    facts.original = facts.original.copy()
    facts.original[:7, 0] = np.nan  # missing in the file, and so in the release
    facts.result.points = facts.result.points.copy()
    facts.result.points[:7, 0] = np.nan
    sections = {s.title: s for s in release_sections(facts)}
    moments = sections["Original and released quasi-identifiers"].blocks[0].rows[0]
    assert moments[1] == pytest.approx(np.nanmean(facts.original[:, 0]))
    kinds = [b.kind for b in sections["Original and released quasi-identifiers"].blocks]
    assert kinds.count("plot") == 1  # the histograms are drawn from the values present
    assert "mean absolute change" in sections["Correlations"].blocks[0].text.lower()
    write_report(tmp_path, list(sections.values()))


def test_moments_and_correlations_are_true_at_1e308():
    """With keys near 1e308 the report's moments are finite and its correlations numbers:
    the mean lies within the values and a correlation is a ratio, though a plain sum
    overflows. By hand: x = (1e308, 1e308, 0) has mean 2e308/3, deviations
    (1, 1, -2) 1e308/3 and sample variance (6/9) 1e616 / 2 = 3.33333e615; y = (1e308, 0, 0)
    has mean 1e308/3 (-50 %) and the same variance (0 %)."""
    x, y = np.array([1e308, 1e308, 0.0]), np.array([1e308, 0.0, 0.0])
    with np.errstate(all="raise"):
        got = compared_moments(x, y)
    third = float(Fraction(1e308) / 3)
    assert got[:3] == pytest.approx([2 * third, third, -50.0], rel=1e-15)
    assert got[3:] == ["3.33333e+615", "3.33333e+615", 0.0]
    # where nothing overflows, bit for bit the plain figures (NaN: missing, left out)
    rng = np.random.default_rng(7)
    a = rng.normal(5.0, 2.0, 999)
    b = a + rng.normal(0.0, 0.1, 999)
    a[::50] = np.nan
    p = a[~np.isnan(a)]
    got = compared_moments(a, b)
    assert got[0] == p.mean() and got[1] == b.mean()
    assert got[3] == p.var(ddof=1) and got[4] == b.var(ddof=1)
    assert got[2] == pytest.approx(100 * (b.mean() - p.mean()) / p.mean(), rel=1e-12)
    # and tiny values: a variance below the normal floats is text, not 0
    assert compared_moments(np.array([1e-200, 3e-200]), np.array([2e-200]))[3] == "2.00000e-400"
    # the correlations of columns scaled by 2**1000 are those of the columns
    X = rng.normal(size=(300, 3)) @ np.array([[1, 0.5, 0], [0, 1, 0.3], [0, 0, 1]])
    big = X * np.array([2.0**1000, 1.0, 2.0**-1000])
    with np.errstate(all="raise"):
        assert np.array_equal(_correlations(big), np.corrcoef(X, rowvar=False))


def test_the_summary_names_every_quasi_identifier_categorical_ones_too():
    """With categorical keys the summary's `quasi-identifiers` lists them too, not the
    numeric keys only (``facts.columns``): k and the risk are counted over all of them."""
    facts = _facts()
    assert dict(summary_section(facts).blocks[0].rows)["quasi-identifiers"] == "a, b, c"
    kinds = {"a": "numeric", "b": "numeric", "c": "numeric", "région": "nominal", "size": "ordinal"}
    facts.result.details = {**facts.result.details, "disclosure": {"keys": kinds}}
    rows = dict(summary_section(facts).blocks[0].rows)
    assert rows["quasi-identifiers"] == "a, b, c, région, size"


def test_the_loss_section_says_how_many_records_il_leaves_out():
    """With missing numeric keys, IL counts every value present (a record missing one key
    counts with its others), so the note must not say records are left out of IL."""
    facts = _facts()
    text = lambda: " ".join(getattr(b, "text", "") for b in loss_section(facts).blocks)  # noqa: E731
    assert "miss a numeric key" not in text()
    facts.original = facts.original.copy()
    facts.original[:7, 0] = np.nan
    assert "7 records miss a numeric key" in text()
    assert "293 records" not in text()  # IL is not measured on the complete records only


def test_the_blocks_note_states_the_joint_k_of_this_release():
    """The note said a record's combination of the blocks' groups "may match fewer than k
    records", also on a release whose joint k (gated since d5837fe) holds; it now gives the
    joint figure when it is below k and claims no shortfall otherwise."""
    from sdcflow.core.measures.anonymity import match_counts

    X = _facts().original
    params = METHODS["mdav"].params(k=5)
    result = mask_quasi_identifiers(
        X, COLUMNS, params, np.random.default_rng(2), None, [["a"], ["b", "c"]]
    )
    joint = int(match_counts(result.released_identifiers)[0].min())
    assert joint < 5
    facts = _facts()
    facts.method, facts.result = params, result
    notes = lambda: [  # noqa: E731
        b.text
        for s in release_sections(facts)
        if s.title == "Records sharing each released row"
        for b in s.blocks
        if getattr(b, "style", "") == "note"
    ]
    assert any(f"as few as {joint} records" in " ".join(t.split()) for t in notes())
    facts.method = params.model_copy(update={"k": joint})  # a k the joint figure meets
    assert not any("as few as" in t for t in notes())


def test_correlations_say_on_which_records_they_are_measured():
    """Correlations are computed on the records that have every numeric key; on a survey
    whose records each skip a question there is none, and the report drew blank heatmaps
    captioned "blank: a constant column has none", which no column was."""
    from sdcflow.report.release import correlation_section

    facts = _facts()
    facts.original = facts.original.copy()
    facts.original[:7, 0] = np.nan
    texts = [getattr(b, "text", "") for b in correlation_section(facts).blocks]
    assert any("293 records" in t for t in texts)
    facts.original[::2, 0] = np.nan
    facts.original[1::2, 1] = np.nan
    (block,) = correlation_section(facts).blocks
    assert block.kind == "text" and block.text.startswith("0 record(s)")


def test_a_stratified_bound_is_not_shown_as_a_bound_on_every_partition():
    # With categorical keys the groups stay inside strata and the bound holds for those
    # partitions only; the report called it a bound "for any partition into groups of >= k"
    # although a partition across strata loses far less (Adult, age/hours/education-num in
    # strata of four categorical keys: bound 4.61, MDAV ignoring the strata 0.30).
    import pandas as pd

    from sdcflow.core.measures.information_loss import sse_sst_loss
    from sdcflow.core.microaggregation.mdav import group_means, mdav_groups
    from sdcflow.core.validation import standardize
    from sdcflow.methods import MdavParams
    from sdcflow.methods.keys import Key
    from sdcflow.methods.mixed import mask_keys
    from sdcflow.report.release import lower_bound_rows

    rng = np.random.default_rng(3)
    x = rng.normal(size=60)
    frame = pd.DataFrame({"a": x, "s": np.where(np.arange(60) % 2 == 0, "p", "q")})
    keys = [Key("a", "numeric"), Key("s", "nominal")]
    details = mask_keys(frame, keys, MdavParams(k=3), rng).details
    bound = details["information_loss_lower_bound"]
    X = frame[["a"]].to_numpy()
    across = sse_sst_loss(X, group_means(X, mdav_groups(standardize(X)[0], 3)))
    assert across < bound  # the bound does not hold for partitions across strata
    rows, _ = lower_bound_rows(details)
    (label,) = [r[0] for r in rows if r[1] == bound]
    assert details["lower_bound"]["scope"] in label
    assert lower_bound_rows({k: v for k, v in details.items() if k != "lower_bound"})[0] != rows


def test_the_keys_risk_table_shows_the_manifests_figures():
    # The risk figures were rounded to 4 significant digits before display: Adult's 16414.72
    # expected re-identifications read "16410", a count the manifest does not hold.
    from sdcflow.report.release import keys_sections
    from sdcflow.report.sections import fmt

    def risk(er: float, pct: float, top: float) -> dict:
        return {
            "expected_reidentifications": er,
            "global_risk_percent": pct,
            "max": top,
            "sample_uniques": 3,
        }

    before, after = risk(16414.72185308026, 50.41221661828647, 1.0), risk(4995.87, 15.343, 0.2)
    details = {
        "disclosure": {
            "k_anonymity": 5,
            "k_identical_rows": 1,
            "risk": {"before": before, "after": after},
        }
    }
    (table,) = [b for b in keys_sections(details)[0].blocks if b.kind == "table"]
    shown = [fmt(v) for _, v in table.rows]
    for figures in (before, after):
        for key in ("expected_reidentifications", "global_risk_percent", "max"):
            assert fmt(figures[key]) in shown
    assert "16410" not in shown


def test_the_keys_table_shows_the_suppressions_beside_their_lower_bounds():
    """Every record of a class of identical rows below k needs a suppression unless others
    join its row: the table gives that count and the proven bound beside the total, and
    sdcMicro's count of k beside k, labelled."""
    from sdcflow.report.release import keys_sections

    after = {"expected_reidentifications": 1.0, "global_risk_percent": 1.0, "max": 0.2}
    details = {
        "disclosure": {
            "k_anonymity": 5,
            "missing_matches_any": {"k_anonymity": 9},
            "risk": {
                "before": {**after, "sample_uniques": 7},
                "after": {**after, "sample_uniques": 0},
            },
        },
        "categorical_values_suppressed": {"a": 12, "b": 30},
        "records_in_classes_below_k": 38,
        "suppression_lower_bound": 40,
    }
    (table,) = [b for b in keys_sections(details)[0].blocks if b.kind == "table"]
    rows = dict(table.rows)
    assert rows["values suppressed in all"] == 42
    assert rows["records in classes of identical rows below k before suppression"] == 38
    assert rows["proven lower bound on the suppressions"] == 40
    (loose,) = [v for name, v in table.rows if "sdcMicro" in name]
    assert loose == 9
