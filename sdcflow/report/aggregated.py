"""The release report's sections from aggregates (the streamed path, issue 45): the sections
of :func:`~sdcflow.report.release.release_sections` whose figures the warehouse computes
(moments, safe bins, correlations of the complete records, class sizes, the 1 / f risk)
instead of reading the records.

Every figure here arrives as an aggregate (:class:`AggregateFacts`); like the in-memory
report, nothing here holds or shows a record value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdcflow.methods import get_method
from sdcflow.report import plots
from sdcflow.report.release import (
    ReleaseFacts,
    _all_keys,
    checks_section,
    compared_correlations,
    compared_histograms,
    edits_section,
    keys_sections,
    loss_section,
    method_section,
    missing_numbers_note,
)
from sdcflow.report.sections import Section, Table


@dataclass
class AggregateFacts:
    """What the streamed report draws, every entry an aggregate.

    Attributes
    ----------
    records : int
        Records masked.
    records_missing_a_number : int
        Records missing at least one numeric key.
    moments : mapping column -> (mean raw, mean released, variance raw, variance released)
        Over the values present; sample variances (divisor n - 1), None where undefined.
    bins : mapping column -> Bins or None
        Safe bins (:func:`~sdcflow.report.plots.safe_bins`), None where none is safe.
    complete_records : int
        Records with every numeric key in both tables.
    correlations : (ndarray (d, d), ndarray (d, d))
        Pearson correlations of the raw and released numeric keys over those records.
    class_sizes : ndarray of shape (s, 2)
        Every distinct size f of a class of identical released rows and its classes.
    """

    records: int
    records_missing_a_number: int = 0
    moments: Mapping[str, tuple[Any, Any, Any, Any]] = field(default_factory=dict)
    bins: Mapping[str, plots.Bins | None] = field(default_factory=dict)
    complete_records: int = 0
    correlations: tuple[np.ndarray, np.ndarray] = (np.eye(0), np.eye(0))
    class_sizes: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))


NOT_DRAWN = (
    "This report was drawn from aggregates computed by the warehouse (the streamed path: the "
    "records never entered the report's process)."
)


def streamed_sections(facts: ReleaseFacts, agg: AggregateFacts) -> list[Section]:
    """The report's sections in the in-memory report's order (see the module docstring)."""
    details = facts.result.details if facts.result is not None else {}
    sections = [
        summary_section(facts, agg),
        checks_section(facts.checks),
        edits_section(facts),
        _loss(facts, agg),
        moments_section(facts, agg),
        correlation_section(facts, agg),
        groups_section(facts, agg),
        risk_section(facts, agg),
        *keys_sections(_computed(details)),
        method_section(facts),
    ]
    return sections


def summary_section(facts: ReleaseFacts, agg: AggregateFacts) -> Section:
    rows: dict[str, Any] = {
        "release": facts.release,
        "run id": facts.run_id,
        "method": f"{facts.method.name}: {get_method(facts.method.name).summary}",
        "records": agg.records,
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
        .text(NOT_DRAWN, "note")
    )


def _computed(details: Mapping[str, Any]) -> dict[str, Any]:
    """The method's details with the disclosure figures the streamed path did not compute
    left out (their reason is said in the risk section)."""
    disclosure = details.get("disclosure") if isinstance(details, Mapping) else None
    if not isinstance(disclosure, Mapping):
        return dict(details)
    kept = {k: v for k, v in disclosure.items() if not _not_computed(v)}
    return {**details, "disclosure": kept}


def _not_computed(value: Any) -> bool:
    return isinstance(value, Mapping) and "not_computed" in value


def _loss(facts: ReleaseFacts, agg: AggregateFacts) -> Section:
    section = loss_section(facts)
    il = facts.evidence.information_loss if facts.evidence else {}
    if agg.records_missing_a_number and il:
        details = facts.result.details if facts.result is not None else {}
        section.text(missing_numbers_note(agg.records_missing_a_number, details), "note")
    return section


def _change(before: Any, after: Any) -> float | None:
    if before is None or after is None or not np.isfinite(before) or before == 0:
        return None
    return 100.0 * (after - before) / abs(before)


def moments_section(facts: ReleaseFacts, agg: AggregateFacts) -> Section:
    section = Section("Original and released quasi-identifiers")
    if not facts.columns:
        return section.text("No key is numeric: there are no moments or histograms to compare.")
    rows = []
    for name in facts.columns:
        mx, my, vx, vy = agg.moments[name]
        nan = float("nan")
        rows.append(
            [
                name,
                nan if mx is None else float(mx),
                nan if my is None else float(my),
                _change(mx, my),
                nan if vx is None else float(vx),
                nan if vy is None else float(vy),
                _change(vx, vy),
            ]
        )
    section.table(
        Table(
            [
                "quasi-identifier",
                "original mean",
                "released mean",
                "change of mean %",
                "original variance",
                "released variance",
                "change of variance %",
            ],
            rows,
        )
    )
    min_count = facts.k or 5
    bins = [agg.bins.get(c) for c in facts.columns]
    return compared_histograms(section, facts.columns, bins, min_count)


def correlation_section(facts: ReleaseFacts, agg: AggregateFacts) -> Section:
    section = Section("Correlations")
    d = len(facts.columns)
    if d < 2:
        return section.text("One quasi-identifier: there is no correlation to compare.")
    kept = agg.complete_records
    if kept < 2:
        return section.text(
            f"{kept} record(s) have every numeric key (at least 2 are needed): there is no "
            "correlation to compare."
        )
    original, released = agg.correlations
    return compared_correlations(section, facts.columns, original, released, kept, agg.records)


def _records_per_size(agg: AggregateFacts) -> tuple[np.ndarray, np.ndarray]:
    """(f, records in classes of size f): every record counted once."""
    f = agg.class_sizes[:, 0].astype(np.int64)
    return f, f * agg.class_sizes[:, 1].astype(np.int64)


def groups_section(facts: ReleaseFacts, agg: AggregateFacts) -> Section:
    section = Section("Records sharing each released row")
    f, records = _records_per_size(agg)
    n = int(records.sum())
    if n:
        mean = float((f * records).sum() / n)
        section.text(
            f"Over every released key (a missing value is a value of its own), each released "
            f"row is shared by at least {int(f.min())} and at most {int(f.max())} records "
            f"(mean {mean:.3g})."
        )
    return section.plot(
        plots.class_size_figure(
            f,
            facts.k,
            weights=records,
            xlabel="records sharing the released row",
            ylabel="records",
        ),
        "histogram of the number of records sharing each released row",
        "No released record to count.",
    )


def risk_section(facts: ReleaseFacts, agg: AggregateFacts) -> Section:
    section = Section("Per-record risk")
    f, records = _records_per_size(agg)
    section.text(
        "Intruder: deterministic release: an intruder who reruns the method finds every "
        "record's group, so a record's probability is 1 / the records in its released group "
        "(a class of identical released rows)."
    )
    n = int(records.sum())
    p = 1.0 / f.astype(np.float64) if f.size else np.zeros(0)
    if n:
        k = facts.k
        above = int(records[p > 1.0 / k + 1e-12].sum()) if k else None
        rows = {
            "largest re-identification probability": float(p.max()),
            "mean (expected share re-identified)": float(agg.class_sizes[:, 1].sum() / n),
            f"records above 1/k = 1/{k}": above,
        }
        section.table(
            Table(["figure", "value"], [[a, b] for a, b in rows.items() if b is not None])
        )
    details = facts.result.details if facts.result is not None else {}
    disclosure = details.get("disclosure") if isinstance(details, Mapping) else None
    for name, value in (disclosure or {}).items():
        if _not_computed(value):
            section.text(f"{name}: {value['not_computed']}.", "note")
    return section.plot(
        plots.risk_figure(p, facts.k, weights=records) if records.sum() else None,
        "histogram of per-record re-identification probabilities",
        "No record to show.",
        "Records per bin of re-identification probability.",
    )
