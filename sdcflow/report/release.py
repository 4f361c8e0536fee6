"""The sections of a release run's report, built from what the run decided and measured.

:func:`release_sections` turns a :class:`ReleaseFacts` into the report's sections: the
decision, every gate with its unit, the edit rules (text, raw and released violations), the
information loss (against the raw file, against the repaired records where a repair ran,
beside a lower bound where the method proves one), original against released per
quasi-identifier (moments and a safe histogram), the correlation matrices, the group sizes,
the per-record risk, and the method's parameters and figures. Each part is one function
returning one :class:`~sdcflow.report.sections.Section`; a new figure is a new
function and one line in :func:`release_sections`.

Lower bounds on IL: a method that proves one reports it among its details as
``information_loss_lower_bound`` (IL's units, %: no partition into groups of >= k records of
the records it masked loses less; with ``lower_bound.scope``, no partition within that scope,
e.g. groups inside the strata of the categorical keys), with its own ``information_loss`` on
those records and their ratio ``information_loss_over_bound``, and ``lower_bound.status``
when no bound was computed (crisp microaggregation,
:mod:`sdcflow.methods.microaggregation`); the report shows them beside IL.

Nothing here reads or shows a record value: moments, correlations, counts per safe bin
(:func:`~sdcflow.report.plots.safe_bins`), group sizes and the distribution of
per-record probabilities only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from sdcflow.core.measures.anonymity import match_counts
from sdcflow.core.validation import pow2_exponents
from sdcflow.gates import Evidence
from sdcflow.gates.base import distinct_digits
from sdcflow.methods import MaskResult, MethodParams, get_method
from sdcflow.report import plots
from sdcflow.report.sections import Section, Table, Text, fmt


@dataclass(frozen=True)
class RuleFacts:
    """An edit rule as the report shows it: name, text and severity."""

    name: str
    text: str
    severity: str = "error"


@dataclass
class ReleaseFacts:
    """Everything a release report shows.

    Attributes
    ----------
    release, run_id, decision : str
    passed : bool
        The decision is a publication (or a check that passed).
    method : MethodParams
    checks : sequence of mappings
        ``GateOutcome.as_dict()`` rows.
    rules : sequence of RuleFacts
    edit_rules : mapping or None
        The flow's edit-rule summary: ``raw`` and ``masked`` counts per rule (every
        severity), ``repaired_records``, ``not_checked_after_masking``.
    columns : list of str, length d
        The numeric keys (``MaskResult.point_columns``, or every quasi-identifier).
    original : ndarray of shape (n, d) or None
        Those keys as ingested (before any repair; NaN where missing), for moments, safe
        histograms and correlations; None when nothing was masked.
    result : MaskResult or None
    evidence : Evidence or None
    tables : mapping title -> DataFrame
        Further sections of one table each (e.g. the fuzzy mapping's figures).
    """

    release: str
    run_id: str
    decision: str
    passed: bool
    method: MethodParams
    checks: Sequence[Mapping[str, Any]] = ()
    rules: Sequence[RuleFacts] = ()
    edit_rules: Mapping[str, Any] | None = None
    columns: list[str] = field(default_factory=list)
    original: np.ndarray | None = None
    result: MaskResult | None = None
    evidence: Evidence | None = None
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def k(self) -> int | None:
        return getattr(self.method, "k", None)


def release_sections(facts: ReleaseFacts) -> list[Section]:
    """The report's sections, in reading order (see the module docstring)."""
    sections = [summary_section(facts), checks_section(facts.checks), edits_section(facts)]
    if facts.result is not None and facts.original is not None:
        sections += [
            loss_section(facts),
            moments_section(facts),
            correlation_section(facts),
            groups_section(facts),
            risk_section(facts),
            *keys_sections(facts.result.details),
        ]
    else:
        sections.append(
            Section("Masking").text(
                "Nothing was masked: the run stopped before masking, so there is no released "
                "file to compare, no group and no risk to show."
            )
        )
    sections.append(method_section(facts))
    for title, frame in facts.tables.items():
        sections.append(Section(title).table(Table.from_frame(frame)))
    return sections


def summary_section(facts: ReleaseFacts) -> Section:
    rows: dict[str, Any] = {
        "release": facts.release,
        "run id": facts.run_id,
        "method": f"{facts.method.name}: {get_method(facts.method.name).summary}",
        "records": int(facts.original.shape[0]) if facts.original is not None else None,
        "quasi-identifiers": ", ".join(_all_keys(facts)) or None,
        "decision": facts.decision,
    }
    return (
        Section("Summary")
        .table(Table(["item", "value"], [[k, v] for k, v in rows.items() if v is not None]))
        .text(
            "This report holds figures only (counts, shares, moments, thresholds) and the "
            "spec's own text; no record value appears in it.",
            "note",
        )
    )


def _all_keys(facts: ReleaseFacts) -> list[str]:
    """Every quasi-identifier as released: with categorical or missing keys the release's
    ``details['disclosure']['keys']`` (numeric and categorical), else the numeric keys
    (``facts.columns``, which alone would leave the categorical keys out of the summary)."""
    details = facts.result.details if facts.result is not None else None
    disclosure = details.get("disclosure") if isinstance(details, Mapping) else None
    keys = disclosure.get("keys") if isinstance(disclosure, Mapping) else None
    return list(keys) if keys else list(facts.columns)


def checks_section(checks: Sequence[Mapping[str, Any]]) -> Section:
    section = Section("Checks")
    if not checks:
        return section.text("No check was run.")
    failed = [r for r in checks if r["verdict"] != "pass"]
    section.text(
        f"{len(checks) - len(failed)} of {len(checks)} checks passed"
        + (
            f"; {len(failed)} failed: {', '.join(str(r['check']) for r in failed)}."
            if failed
            else "."
        )
    )
    columns = ["check", "figure", "rule", "threshold", "unit", "verdict", "description"]
    rows = [
        [r["check"], *_figure_and_threshold(r), r.get("unit", ""), r["verdict"],
         r.get("description", "")]
        for r in checks
    ]  # fmt: skip
    classes = ["pass" if r["verdict"] == "pass" else "fail" for r in checks]
    section.table(Table(columns, rows, classes))
    return section.plot(
        plots.checks_figure(checks),
        "bars: the share of its limit each check uses; past 1 it failed",
        "No check has a figure to draw.",
        "Share of the limit each check uses: the figure over the threshold for <= checks, "
        "the threshold over the figure for >= checks; past the dashed line it failed.",
    )


def _figure_and_threshold(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """(figure, rule, threshold) as the table shows them: digits enough to tell the figure
    from the threshold."""
    figure, threshold = row.get("figure"), row["threshold"]
    if figure is None:
        return "not checked", row["rule"], fmt(threshold)
    shown, limit = distinct_digits(figure, threshold)
    return shown, row["rule"], limit


def edits_section(facts: ReleaseFacts) -> Section:
    section = Section("Edit rules")
    if not facts.rules:
        return section.text("The spec has no edit rules.")
    summary = facts.edit_rules or {}
    raw = summary.get("raw") or {}
    masked = summary.get("masked")
    skipped = set(summary.get("not_checked_after_masking") or ())
    rows, classes = [], []
    for rule in facts.rules:
        if masked is None:
            after: Any = "not evaluated"
        elif rule.name in skipped:
            after = "not checked (columns not released as they are)"
        else:
            after = masked.get(rule.name)
        rows.append([rule.name, rule.text, rule.severity, raw.get(rule.name), after])
        bad = isinstance(after, int) and after > 0 and rule.severity == "error"
        classes.append("fail" if bad else "pass")
    section.table(
        Table(
            ["rule", "text", "severity", "raw records violating", "released records violating"],
            rows,
            classes,
        )
    )
    repaired = summary.get("repaired_records")
    if get_method(facts.method.name).edits_while_masking:
        section.text(f"Method {facts.method.name} edits while it masks: no repair step ran.")
    elif repaired is not None:
        section.text(f"Records repaired before masking (moved onto the linear rules): {repaired}.")
    released = {
        name: v for name, v in (masked or {}).items() if name not in skipped and v is not None
    }
    return section.plot(
        plots.edit_figure(raw, released),
        "bars: records violating each rule, raw and released",
        "No rule is violated by a raw or a released record: there is nothing to plot.",
    )


def _records_missing_a_number(original: np.ndarray | None) -> int:
    """Records with a missing numeric key (NaN): IL counts their other keys, the other loss
    and linkage measures leave them out."""
    if original is None or np.size(original) == 0:
        return 0
    return int(np.isnan(np.asarray(original, dtype=np.float64)).any(axis=1).sum())


def loss_section(facts: ReleaseFacts) -> Section:
    section = Section("Information loss")
    il = facts.evidence.information_loss if facts.evidence else {}
    rows = []
    if "raw" in il:
        rows.append(
            ["IL against the raw file (as ingested; gated by max_information_loss)", il["raw"], "%"]
        )
    if "repaired" in il:
        rows.append(
            ["IL against the repaired records (what the method masked)", il["repaired"], "%"]
        )
    bound_rows, bound_note = lower_bound_rows(facts.result.details if facts.result else {})
    rows += bound_rows
    if not rows:
        return section.text("No information loss was measured.")
    section.table(Table(["measure", "value", "unit"], rows))
    section.text(
        "IL = 100·SSE/SST on the quasi-identifiers standardized with the original means and "
        "standard deviations: 0 publishes the file as it is, 100 loses as much as replacing "
        "every record by the mean.",
        "note",
    )
    gaps = _records_missing_a_number(facts.original)
    if gaps and il:
        details = facts.result.details if facts.result else {}
        section.text(missing_numbers_note(gaps, details), "note")
    if "repaired" in il:
        section.text(
            "A repair moved records onto the edit rules before masking: the first figure "
            "compares the release with the file as collected (comparable across methods on "
            "this source), the second with the records the method masked.",
            "note",
        )
    if bound_note:
        section.text(bound_note, "note")
    return section


def missing_numbers_note(records: int, details: Mapping[str, Any]) -> str:
    """What IL counts when ``records`` miss a numeric key, and the values the release blanked
    (``details["numeric_values_blanked"]``), which it does not count: a low IL beside many
    blanked values is read with them."""
    text = (
        f"{records} records miss a numeric key: IL counts every value present in both files "
        "(a record missing one key counts with its others; each column standardized over its "
        "values present)."
    )
    blanked = {k: v for k, v in (details.get("numeric_values_blanked") or {}).items() if v}
    if blanked:
        each = ", ".join(f"{k} {v}" for k, v in blanked.items())
        text += (
            f" The release also blanks {sum(blanked.values())} values the file has ({each}): "
            "where a group mixes records that have a key with records that miss it, the key is "
            "published missing for the whole group. IL does not count those values; read it "
            "beside them."
        )
    else:
        text += " Their missing values stay missing in the release, which blanks no other."
    return text + (
        " The other loss and linkage measures use the records that have every numeric key."
    )


def lower_bound_rows(details: Mapping[str, Any]) -> tuple[list[list[Any]], str]:
    """Rows of the method's lower bound on IL (module docstring) for the loss table, and a
    note: what the bound bounds, or why there is none."""
    bound = details.get("information_loss_lower_bound")
    own = details.get("information_loss")
    status = details.get("lower_bound")
    if not _number(bound):
        if isinstance(status, Mapping) and status.get("status") and _number(own):
            return [], f"No lower bound on IL: {status['status']}."
        return [], ""
    rows: list[list[Any]] = []
    # stratified releases: the bound holds for partitions inside the strata only (a partition
    # whose groups cross strata can lose far less), and the manifest names that scope
    scope = status.get("scope") if isinstance(status, Mapping) else None
    if _number(own):
        rows.append(["IL of the release against the records the method masked", own, "%"])
    if scope:
        rows.append([f"lower bound on IL for {scope}", bound, "%"])
    else:
        rows.append(["lower bound on IL for any partition into groups of >= k records", bound, "%"])
    ratio = details.get("information_loss_over_bound")
    if _number(ratio):
        among = f" among {scope}" if scope else ""
        rows.append([f"IL / bound (1 would be provably optimal{among})", ratio, "ratio"])
    if scope:
        note = (
            f"The bound is proved on the records the method masked for {scope} only: no such "
            "partition loses less, so the best of them lies between the bound and the "
            "method's own figure. A partition outside that scope (groups across strata) is "
            "not bounded by it and may lose less."
        )
    else:
        note = (
            "The bound is proved on the records the method masked: no partition of them into "
            "groups of at least k records loses less, so the optimum's IL lies between the "
            "bound and the method's own figure."
        )
    return rows, note


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def moments_section(facts: ReleaseFacts) -> Section:
    X, Y = facts.original, facts.result.points
    released = "released box centres" if _is_box(facts) else "released"
    section = Section("Original and released quasi-identifiers")
    rows = []
    if not facts.columns:
        return section.text("No key is numeric: there are no moments or histograms to compare.")
    for j, name in enumerate(facts.columns):
        rows.append([name, *compared_moments(X[:, j], Y[:, j])])
    section.table(
        Table(
            [
                "quasi-identifier",
                "original mean",
                f"{released} mean",
                "change of mean %",
                "original variance",
                f"{released} variance",
                "change of variance %",
            ],
            rows,
        )
    )
    min_count = facts.k or 5
    bins = [plots.safe_bins(X[:, j], Y[:, j], min_count) for j in range(len(facts.columns))]
    return compared_histograms(section, facts.columns, bins, min_count, released)


def compared_histograms(
    section: Section,
    columns: Sequence[str],
    bins: Sequence[plots.Bins | None],
    min_count: int,
    released: str = "released",
) -> Section:
    """The safe histograms of every column (``bins``: None where none is safe) and what
    makes them safe, for the in-memory and the streamed reports alike."""
    skipped = [c for c, b in zip(columns, bins, strict=True) if b is None]
    section.plot(
        plots.distribution_figure(columns, bins),
        "bars per quasi-identifier: original and released records per bin",
        f"No histogram is safe to show: fewer than {2 * min_count} records, or constant "
        f"columns, leave no two bins of at least {min_count} records.",
        "Records per bin, original against " + released + ".",
    )
    section.text(
        f"Histogram bins hold at least {min_count} original records each (k of the method); "
        "bin edges are quantiles of the original rounded to a power of ten, strictly between "
        "a column's minimum and maximum, and the outer bins are open, so neither extreme is "
        "shown.",
        "note",
    )
    if skipped and len(skipped) < len(columns):
        section.text(
            f"No safe histogram for {', '.join(skipped)} (too few records per bin).", "note"
        )
    return section


def compared_moments(x: np.ndarray, y: np.ndarray) -> list[Any]:
    """Mean and sample variance of an original column ``x`` (n,) and its released ``y`` (m,)
    (values present; NaN: missing), and the change of each in per cent of the original's:
    ``[mean_x, mean_y, change %, var_x, var_y, change %]``.

    Computed on one exact power-of-two scale for both columns
    (:func:`~sdcflow.core.validation.pow2_exponents`): bit for bit the plain figures where
    nothing overflows or underflows, and true where the plain ones would be ``inf`` (the mean
    of two values of 1e308) or 0. A mean is a float (it lies within the values). A variance
    outside the normal floats (values near 1e308, or near 1e-160) is given as its decimal
    text, e.g. ``"3.33333e+615"``; the changes are ratios, computed on the scale, so they are
    finite whenever the original's figure is not zero.
    """
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    both = np.concatenate([x, y])
    e = int(pow2_exponents(both, axis=None)) if both.size else 0
    xs, ys = np.ldexp(x, -e), np.ldexp(y, -e)
    mean_x, mean_y = (float(v.mean()) if v.size else float("nan") for v in (xs, ys))
    var_x, var_y = (float(v.var(ddof=1)) if v.size > 1 else float("nan") for v in (xs, ys))
    return [
        float(np.ldexp(mean_x, e)),
        float(np.ldexp(mean_y, e)),
        _change(mean_x, mean_y),
        _unscaled_variance(var_x, e),
        _unscaled_variance(var_y, e),
        _change(var_x, var_y),
    ]


def _unscaled_variance(scaled: float, e: int) -> float | str:
    """``scaled * 4**e``, the variance of values that were multiplied by ``2**-e``: a float
    when a normal one holds it (exponent within [-1021, 1024] for ``frexp``), else its
    decimal text to 6 significant digits (``Decimal``, exact to 28 digits)."""
    if not np.isfinite(scaled) or scaled == 0 or -1021 <= 2 * e + math.frexp(scaled)[1] <= 1024:
        return float(np.ldexp(scaled, 2 * e))
    return f"{Decimal(scaled) * Decimal(2) ** (2 * e):.6g}"


def _is_box(facts: ReleaseFacts) -> bool:
    """Whether the method released boxes (``Method.output``), whose centres are the points."""
    return facts.result is not None and get_method(facts.method.name).output == "boxes"


def _change(before: float, after: float) -> float | None:
    if not np.isfinite(before) or before == 0:
        return None
    return 100.0 * (after - before) / abs(before)


def _correlations(X: np.ndarray) -> np.ndarray:
    """Pearson correlations (d, d) of the columns of X (n, d), each column first multiplied by
    the exact power of two that puts its largest magnitude in [0.5, 1)
    (:func:`~sdcflow.core.validation.pow2_exponents`): a correlation does not change under a
    positive scale, the scaling is exact, so the figures are bit for bit those of
    ``np.corrcoef(X)`` where it does not overflow, and finite where it would (keys near
    1e308). NaN for a constant column."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.corrcoef(np.ldexp(X, -pow2_exponents(X, axis=0)), rowvar=False)


def correlation_section(facts: ReleaseFacts) -> Section:
    section = Section("Correlations")
    d = len(facts.columns)
    if d < 2:
        return section.text("One quasi-identifier: there is no correlation to compare.")
    X, Y = facts.original, np.asarray(facts.result.points, dtype=np.float64)
    complete = ~(np.isnan(X).any(axis=1) | np.isnan(Y).any(axis=1))  # as linkage and PIL
    kept = int(complete.sum())
    if kept < 2:
        return section.text(
            f"{kept} record(s) have every numeric key (at least 2 are needed): there is no "
            "correlation to compare."
        )
    original = _correlations(X[complete])
    released = _correlations(Y[complete])
    return compared_correlations(section, facts.columns, original, released, kept, complete.size)


def compared_correlations(
    section: Section,
    columns: Sequence[str],
    original: np.ndarray,
    released: np.ndarray,
    kept: int,
    records: int,
) -> Section:
    """The correlations' sentence and heatmaps, from the original and released matrices
    (d, d) over the ``kept`` of ``records`` records that have every numeric key: the
    in-memory and the streamed reports alike."""
    d = len(columns)
    upper = np.triu_indices(d, 1)
    diff = np.abs(released - original)[upper]
    finite = diff[np.isfinite(diff)]
    if finite.size:
        section.text(
            f"Mean absolute change of the {finite.size} correlations: {finite.mean():.3g}; "
            f"largest: {finite.max():.3g}."
        )
    if kept < records:
        section.text(f"Over the {kept} records that have every numeric key.", "note")
    section.plot(
        plots.correlation_figure(columns, original, released),
        "heatmaps: original, released and their difference",
        "There are no correlations to draw.",
        "Pearson correlations of the original and the released quasi-identifiers, and their "
        "difference (blank: a constant column has none).",
    )
    return section


def groups_section(facts: ReleaseFacts) -> Section:
    result = facts.result
    box = _is_box(facts)
    section = Section("Records sharing each released row")
    f, _ = match_counts(result.released_identifiers)
    if f.size:
        section.text(
            f"Over every released key (a missing value is a value of its own), each released "
            f"row is shared by at least {int(f.min())} and at most {int(f.max())} records "
            f"(mean {float(f.mean()):.3g})"
            + ("; a box's records share its bounds." if box else ".")
        )
    if result.blocks and f.size:
        joint, k = int(f.min()), facts.k
        if k is not None and joint < k:
            note = (
                f"Blocks were masked separately: every block is k-anonymous, but over every key "
                f"jointly a record's combination of the blocks' groups is shared by as few as "
                f"{joint} records, below k = {k}."
            )
        else:
            note = (
                "Blocks were masked separately: each block is k-anonymous, and the figures "
                "above count every key jointly (the combination of the blocks' groups)."
            )
        section.text(note, "note")
    section.plot(
        plots.class_size_figure(
            f, facts.k, xlabel="records sharing the released row", ylabel="records"
        ),
        "histogram of the number of records sharing each released row",
        "No released record to count.",
    )
    expected = result.details.get("expected_size") if isinstance(result.details, Mapping) else None
    if isinstance(expected, Mapping) and "min" in expected:
        section.text(
            f"Expected records per centre under the random draw: smallest {fmt(expected['min'])}, "
            f"mean {fmt(expected.get('mean'))}, largest {fmt(expected.get('max'))} "
            f"({result.details.get('expected_size_definition', 'see the method figures')}).",
            "note",
        )
    return section


def risk_section(facts: ReleaseFacts) -> Section:
    section = Section("Per-record risk")
    risk = facts.evidence.record_risk if facts.evidence else None
    if risk is None:
        return section.text(
            "The per-record risk was not computed: the release was masked by blocks with a "
            "randomized method, whose intruder over blocks is costly, or it is a randomized "
            "release of more than 2e8 records x released groups, whose memberships the "
            "report does not hold; gate max_transparency_reidentification to compute it."
        )
    p = np.asarray(risk.probabilities, dtype=np.float64)
    section.text(f"Intruder: {risk.intruder}.")
    if p.size:
        k = facts.k
        above = int((p > 1.0 / k + 1e-12).sum()) if k else None
        rows = {
            "largest re-identification probability": float(p.max()),
            "mean (expected share re-identified)": float(p.mean()),
            f"records above 1/k = 1/{k}": above,
        }
        section.table(
            Table(["figure", "value"], [[a, b] for a, b in rows.items() if b is not None])
        )
    return section.plot(
        plots.risk_figure(p, facts.k),
        "histogram of per-record re-identification probabilities",
        "No record to show.",
        "Records per bin of re-identification probability.",
    )


def keys_sections(details: Mapping[str, Any]) -> list[Section]:
    """The keys' figures of a release with categorical or missing keys (``details
    ['disclosure']``): k over all keys and with the keep columns, the individual and global
    risk before and after, the risk histogram, and the values changed and suppressed."""
    disclosure = details.get("disclosure") if isinstance(details, Mapping) else None
    if not disclosure:
        return []
    rows = [
        (
            "k over all keys: smallest class of identical released rows (a blank is a value)",
            disclosure["k_anonymity"],
        ),
    ]
    loose = disclosure.get("missing_matches_any")
    if loose:
        rows.append(
            (
                "for comparison, k under sdcMicro's convention (a blank matches any value; "
                "not what an intruder faces)",
                loose["k_anonymity"],
            )
        )
    keep = disclosure.get("keep")
    if keep:
        rows.append(
            (f"k if the intruder also knew the keep columns {keep['columns']}", keep["k_with_keep"])
        )
    suda = disclosure.get("suda")
    if suda and "max_dis_score" in suda:
        rows += [
            (
                f"largest DIS-SUDA score (special uniques, sampling fraction "
                f"{suda['dis_fraction']:g})",
                suda["max_dis_score"],
            ),
            ("records with a DIS-SUDA score above 0", suda["records_with_dis_score"]),
        ]
    risk = disclosure["risk"]
    for when in ("before", "after"):
        r = risk[when]
        rows += [
            # the manifest's figures as they are (shown with 6 significant digits): rounding
            # them to 4 first printed 16410 for 16414.7 expected re-identifications
            (f"global risk {when}: expected re-identifications", r["expected_reidentifications"]),
            (f"global risk {when} (% of records)", r["global_risk_percent"]),
            (f"largest individual risk {when}", r["max"]),
            (f"sample uniques {when}", r["sample_uniques"]),
        ]
    suppressed_total = sum(details.get("categorical_values_suppressed", {}).values())
    below = details.get("records_in_classes_below_k")
    if below is not None:
        # every record of a class below k needs a suppression unless others join its row:
        # the reader weighs the total against these two figures
        rows += [
            ("values suppressed in all", suppressed_total),
            ("records in classes of identical rows below k before suppression", below),
            ("proven lower bound on the suppressions", details.get("suppression_lower_bound")),
        ]
    section = Section("Keys: anonymity and re-identification risk")
    section.table(Table(["figure", "value"], [list(r) for r in rows if r[1] is not None]))
    histogram = risk.get("histogram_after")
    if histogram:
        section.plot(
            plots.individual_risk_figure(histogram["edges"], histogram["records"]),
            "bars: released records per band of individual re-identification risk",
            "No released record to count.",
            "Individual re-identification risk of the released records (key frequencies and "
            "sampling weights).",
        )
    kinds = disclosure.get("keys", {})
    # a numeric key's values blanked for a whole group are its suppressions
    suppressed = {
        **details.get("numeric_values_blanked", {}),
        **details.get("categorical_values_suppressed", {}),
    }
    changed = details.get("categorical_values_changed", {})
    values = Section("Keys: kind, values changed and suppressed").table(
        Table(
            ["key", "kind", "values changed", "values suppressed"],
            [[c, kind, changed.get(c, ""), suppressed.get(c, "")] for c, kind in kinds.items()],
        )
    )
    return [section, values]


def method_section(facts: ReleaseFacts) -> Section:
    section = Section("Method and parameters")
    params = facts.method
    fields = type(params).model_fields
    rows = []
    for key, value in params.model_dump(mode="json", exclude={"name"}).items():
        if value is None or value == {} or value == []:
            continue
        rows.append([key, value, fields[key].description or ""])
    section.text(f"{params.name}: {get_method(params.name).summary}.")
    section.table(Table(["parameter", "value", "meaning"], rows))
    unset = [k for k, v in params.model_dump(exclude={"name"}).items() if v is None]
    if unset:
        section.text(f"Not set (not used by this run): {', '.join(unset)}.", "note")
    details = facts.result.details if facts.result is not None else {}
    # the keys' figures have their own sections (keys_sections)
    scalars, lists = _flatten({k: v for k, v in details.items() if k != "disclosure"})
    if scalars:
        section.table(Table(["figure", "value"], scalars, caption="What the method reports"))
    for title, records in lists:
        section.blocks += _records_table(title, records)
    return section


def _flatten(
    details: Mapping[str, Any], prefix: str = ""
) -> tuple[list[list[Any]], list[tuple[str, list[Mapping[str, Any]]]]]:
    """Scalar entries as ``[dotted key, value]`` rows; lists of mappings apart, by title."""
    scalars: list[list[Any]] = []
    lists: list[tuple[str, list[Mapping[str, Any]]]] = []
    for key, value in details.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            more, nested = _flatten(value, name + ".")
            scalars += more
            lists += nested
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            lists.append((name, value))
        elif isinstance(value, list) and len(value) > 12:
            scalars.append([name, f"{len(value)} values"])
        else:
            scalars.append([name, value])
    return scalars, lists


def _records_table(title: str, records: list[Mapping[str, Any]]) -> list[Any]:
    """A list of mappings (box estimates, blocks...) as one table; a text column with one
    value on every row is said once below it instead."""
    columns = list(dict.fromkeys(k for r in records for k in r))
    common = {
        c: records[0].get(c)
        for c in columns
        if isinstance(records[0].get(c), str)
        and len(records) > 1
        and all(r.get(c) == records[0].get(c) for r in records)
    }
    shown = [c for c in columns if c not in common]
    rows = [[_cell(r.get(c)) for c in shown] for r in records]
    blocks: list[Any] = [Table(shown, rows, caption=title)]
    blocks += [Text(f"{c} (every row): {v}", "note") for c, v in common.items()]
    return blocks


def _cell(value: Any) -> Any:
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, (int, float)) for v in value)
    ):
        return f"[{fmt(float(value[0]))}, {fmt(float(value[1]))}]"
    if isinstance(value, Mapping):
        return fmt(value)
    return value
