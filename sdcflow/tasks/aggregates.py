"""The steps between the mask and the decision on the streamed path (issue 45, step 2 of
``docs/concepts/scale.md``): the gates, the disclosure figures and the report, computed by
DuckDB over ``raw.run_<id>`` and ``masked.run_<id>`` (:mod:`sdcflow.warehouse.aggregates`),
never reading either table into this process.

The figures are those of the in-memory steps (:func:`~sdcflow.tasks.checks.check_release`,
:func:`~sdcflow.tasks.mask.disclosure_summary`, :func:`~sdcflow.tasks.report.run_report`)
on the same release; the gates' verdicts, notes and remedies come from the registry itself
(:func:`~sdcflow.gates.run_gates` given the figures). :func:`aggregate_gates` says which
releases this path serves: a crisp microaggregation (group means, no group labels: a
released group is a class of identical released rows) without weights, households, blocks,
``keep`` columns or fuzzy mapping, gated on figures that are aggregates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import get_run_logger, task

from sdcflow.expectations.rules import Rule
from sdcflow.gates import (
    GATES,
    Evidence,
    GateContext,
    GateOutcome,
    run_gates,
    wanted_gates,
)
from sdcflow.gates.risk import DOMINANCE_NK, DOMINANCE_P, _Dominated
from sdcflow.methods import MaskResult
from sdcflow.methods.keys import Key
from sdcflow.methods.microaggregation import MdavParams, PsParams
from sdcflow.report.aggregated import AggregateFacts, streamed_sections
from sdcflow.report.html import write_report
from sdcflow.report.plots import Bins, _nice_step
from sdcflow.report.release import ReleaseFacts, RuleFacts
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP
from sdcflow.tasks.checks import loss_line
from sdcflow.tasks.mask import _released_kind, _risk_histogram
from sdcflow.warehouse import aggregates as sql
from sdcflow.warehouse.warehouse import Warehouse

#: The gates this path computes from aggregates (the others need record-level matrices:
#: linkage, moments of complete records, clusters, l-diversity, the transparency intruder).
AGGREGATE_GATES = frozenset(
    {
        "k_anonymity",
        "k_anonymity_missing_matches_any",
        "max_information_loss",
        "max_edit_violations",
        "max_p_dominated_groups",
        "max_nk_dominated_groups",
        "max_individual_risk",
        "max_global_risk",
    }
)

#: Patterns of missing keys above which sdcMicro's count (a blank matches any value) is not
#: computed: it takes one join per pair of patterns, M^2 of them.
MAX_PATTERNS = 64

#: The method types whose releases this path serves (crisp group means, no group labels).
_SERVED = (MdavParams, PsParams)


def aggregate_gates(spec: ReleaseSpec, point_columns: Sequence[str] | None) -> str | None:
    """None when every gate this release runs (the spec's, the method's, the defaults the
    in-memory path would add) can be computed from aggregates; else the reason (one line)."""
    if not isinstance(spec.method, _SERVED):
        return (
            f"method {spec.method.name} is not a crisp microaggregation releasing group means "
            "(its gates read record-level matrices)"
        )
    refused = {
        "weight_column": spec.weight_column,
        "household_column": spec.household_column,
        "blocks": spec.blocks,
        "keep": spec.keep,
        "fuzzy_map": spec.fuzzy_map,
    }
    for field, set_ in refused.items():
        if set_:
            return f"{field} is set: its figures are computed in memory only"
    ctx = _thin_context(spec, point_columns or [], np.zeros(len(point_columns or [])), None, ())
    # the magnitude default (p % rule) is computed here too, so the defaults with it are the
    # widest set the release can run
    wanted = set(wanted_gates(ctx, spec.checks)) | set(spec.checks)
    other = sorted(wanted - AGGREGATE_GATES)
    if other:
        return f"gate(s) {', '.join(other)} need the records in memory"
    return None


def _thin_context(
    spec: ReleaseSpec,
    point_columns: Sequence[str],
    minima: np.ndarray,
    edit_violations: Mapping[str, int] | None,
    unchecked_rules: Sequence[str],
    details: Mapping[str, Any] | None = None,
) -> GateContext:
    """A :class:`GateContext` without records: ``original`` is one row of every numeric
    key's minimum over the raw table (NaN where it has no value), which is what the default
    gates read of it (:func:`~sdcflow.gates.any_magnitude`: present and never negative);
    every figure comes from the aggregates."""
    columns = list(point_columns)
    result = MaskResult(
        masked=pd.DataFrame(columns=list(spec.quasi_identifiers)),
        points=np.empty((0, len(columns))),
        details=dict(details or {}),
        point_columns=columns,
    )
    return GateContext(
        original=np.asarray(minima, dtype=np.float64).reshape(1, -1),
        columns=columns,
        result=result,
        method=spec.method,
        options=spec.measures,
        edit_violations=edit_violations,
        unchecked_rules=tuple(unchecked_rules),
        accepted_unchecked=frozenset(spec.accept.unchecked_rules),
        accept_looser=frozenset(spec.accept.looser_checks),
    )


class _Figures:
    """The release's aggregates, each queried once when first asked for."""

    def __init__(
        self,
        spec: ReleaseSpec,
        warehouse: Warehouse,
        run_id: str,
        point_columns: Sequence[str],
    ) -> None:
        self.spec, self.warehouse, self.run_id = spec, warehouse, run_id
        self.keys = list(spec.quasi_identifiers)
        self.numeric = list(point_columns or [])
        self._cache: dict[str, Any] = {}

    def _once(self, key: str, compute: Any) -> Any:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def raw_profiles(self) -> dict[str, sql.ColumnProfile]:
        return self._once(
            "raw", lambda: sql.profiles(self.warehouse, "raw", self.run_id, self.numeric)
        )

    def masked_profiles(self) -> dict[str, sql.ColumnProfile]:
        return self._once(
            "masked", lambda: sql.profiles(self.warehouse, "masked", self.run_id, self.numeric)
        )

    def minima(self) -> np.ndarray:
        p = self.raw_profiles()
        return np.array(
            [np.nan if p[c].minimum is None else float(p[c].minimum) for c in self.numeric]
        )

    def magnitudes(self) -> list[str]:
        """The numeric keys the dominance rules judge: present and never negative as
        ingested, the contributions they judge (``sdcflow.gates.risk``)."""
        p = self.raw_profiles()
        return [c for c in self.numeric if p[c].present and p[c].minimum >= 0]

    def sizes(self, schema: str = "masked") -> np.ndarray:
        return self._once(
            f"sizes-{schema}",
            lambda: sql.class_sizes(self.warehouse, schema, self.run_id, self.keys, self.numeric),
        )

    def loose_sizes(self) -> np.ndarray | None:
        """sdcMicro's match counts, or None past :data:`MAX_PATTERNS` patterns."""

        def compute() -> np.ndarray | None:
            m = sql.missing_patterns(self.warehouse, "masked", self.run_id, self.keys, self.numeric)
            if m > MAX_PATTERNS:
                return None
            return sql.loose_match_sizes(
                self.warehouse, "masked", self.run_id, self.keys, self.numeric
            )

        return self._once("loose", compute)

    def information_loss(self, against: str = "raw") -> float:
        return self._once(
            f"il-{against}",
            lambda: self.warehouse.information_loss(against, "masked", self.run_id, self.numeric),
        )

    def dominance(self, ctx: GateContext) -> _Dominated | None:
        def compute() -> _Dominated | None:
            judged = self.magnitudes()
            if not judged:
                return None
            n, k = ctx.option(DOMINANCE_NK)
            p, nk = sql.dominated_groups(
                self.warehouse,
                self.run_id,
                self.keys,
                self.numeric,
                judged,
                schema="raw",
                n=int(n),
                k=float(k),
                p=float(ctx.option(DOMINANCE_P)),
            )
            return _Dominated(p, nk)

        return self._once("dominance", compute)


def _figure(key: str, figures: _Figures, ctx: GateContext) -> float | None:
    """The figure of gate ``key`` from the aggregates; None for a gate whose figure the
    registry takes from the context (the edit rules, the dominance counts seeded in its
    cache)."""
    if key == "k_anonymity":
        return float(_smallest(figures.sizes()))
    if key == "k_anonymity_missing_matches_any":
        loose = figures.loose_sizes()
        if loose is None:
            raise ValueError(
                f"more than {MAX_PATTERNS} patterns of missing keys: sdcMicro's count is not "
                "computed on the streamed path; remove k_anonymity_missing_matches_any from "
                "checks or release in memory"
            )
        return float(_smallest(loose))
    if key == "max_information_loss":
        return figures.information_loss()
    if key == "max_individual_risk":
        return float(ClassRisk.of_classes(figures.sizes()).max_risk)
    if key == "max_global_risk":
        return float(ClassRisk.of_classes(figures.sizes()).global_risk_percent)
    return None


def _smallest(sizes: np.ndarray) -> int:
    return int(sizes[0, 0]) if sizes.size else 0


@task(name="checks-streamed", **STEP)
def check_streamed(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    point_columns: Sequence[str] | None,
    method_details: Mapping[str, Any] | None,
    edit_violations: Mapping[str, int] | None,
    unchecked_rules: Sequence[str],
    figures: Sequence[str] = (),
    source: str = "raw",
    *,
    repaired: bool = False,
) -> tuple[list[GateOutcome], dict[str, float], Evidence]:
    """:func:`~sdcflow.tasks.checks.check_release` from DuckDB aggregates over the raw and
    the released tables of ``run_id``: the same outcomes (key, figure, threshold, verdict,
    note), the figures of the gates ``figures`` without thresholds, and the
    :class:`~sdcflow.gates.Evidence` (IL against the raw records and, when ``repaired``
    -- a repair changed a value of the records masked, ``source`` ``edited`` -- against
    the repaired ones; no per-record risk: the report draws its distribution from the class
    sizes). Raises ``ValueError`` for a gate :func:`aggregate_gates` refuses."""
    agg = _Figures(spec, warehouse, run_id, point_columns or [])
    ctx = _thin_context(
        spec, agg.numeric, agg.minima(), edit_violations, unchecked_rules, method_details
    )
    wanted = [*wanted_gates(ctx, spec.checks), *(k for k in figures if k not in spec.checks)]
    refused = sorted(set(wanted) - AGGREGATE_GATES)
    if refused:
        raise ValueError(
            f"gate(s) {', '.join(refused)} are not computed on the streamed path; release in "
            "memory (aggregate_gates names the reason)"
        )
    if any(GATES[k].option in (DOMINANCE_P, DOMINANCE_NK) for k in wanted):
        # the registry's own not_checked and figure read the counts from the cache
        ctx._cache["dominance"] = agg.dominance(ctx)
    computed = {}
    for key in wanted:
        value = _figure(key, agg, ctx)
        if value is not None:
            computed[key] = value
    outcomes = run_gates(ctx, spec.checks, computed)
    logger = get_run_logger()
    for o in outcomes:
        if not o.checked:
            logger.info("check %s: %s -> %s", o.key, o.note, o.verdict)
            continue
        shown, threshold = o.shown
        logger.info(
            "check %s: %s %s %s %s -> %s", o.key, shown, o.rule, threshold, o.unit, o.verdict
        )
    done = {o.key for o in outcomes}
    extra = {}
    for key in figures:
        if key in done:
            continue
        gate = GATES[key]
        unchecked = gate.not_checked(ctx) if gate.not_checked is not None else None
        extra[key] = (
            float("nan")
            if unchecked is not None
            else float(computed[key] if key in computed else gate.compute(ctx))
        )
    loss = {"raw": agg.information_loss()} if agg.numeric else {}
    if loss and repaired:
        loss["repaired"] = agg.information_loss(source)
    evidence = Evidence(loss, None)
    logger.info("information loss: %s", loss_line(evidence.information_loss))
    return outcomes, {**{o.key: o.figure for o in outcomes}, **extra}, evidence


class ClassRisk:
    """The individual risk ``r = 1 / f`` of every record (no sampling weights: the file is
    the population, [2] of :mod:`sdcflow.core.measures.risk`) from the records per distinct
    f, as :class:`~sdcflow.core.measures.risk.RiskSummary` gives it from the records: the
    values are the distinct 1 / f, each held by its records.

    Shapes: f (s,) ascending, records (s,).
    """

    def __init__(self, f: np.ndarray, records: np.ndarray) -> None:
        self.f = np.asarray(f, dtype=np.int64)
        self.records_of = np.asarray(records, dtype=np.int64)  # records per distinct f
        self.n = int(self.records_of.sum())
        # ascending risk = descending f
        self.values = (1.0 / self.f.astype(np.float64))[::-1]
        self.weights = self.records_of[::-1]

    @classmethod
    def of_classes(cls, sizes: np.ndarray) -> ClassRisk:
        """From a class-size histogram (s, 2): f and the classes of that size."""
        return cls(sizes[:, 0], sizes[:, 0] * sizes[:, 1])

    @classmethod
    def of_matches(cls, sizes: np.ndarray) -> ClassRisk:
        """From a match-count histogram (s, 2): f and the records matched by f records."""
        return cls(sizes[:, 0], sizes[:, 1])

    @property
    def expected_reidentifications(self) -> float:
        """``sum_i r_i`` correctly rounded, as ``math.fsum`` of the records' risks: the
        exact sum of each float 1/f times its records, rounded once."""
        exact = sum(
            (Fraction(float(v)) * int(w) for v, w in zip(self.values, self.weights, strict=True)),
            Fraction(0),
        )
        return float(exact)

    @property
    def global_risk_percent(self) -> float:
        return 100.0 * self.expected_reidentifications / self.n

    @property
    def max_risk(self) -> float:
        return float(self.values[-1])

    def _at(self, i: int) -> float:
        """The value at 0-based position ``i`` of the sorted risks."""
        return float(self.values[np.searchsorted(np.cumsum(self.weights), i, side="right")])

    def quantile(self, q: float) -> float:
        """``np.quantile(r, q)`` (linear): numpy's interpolation between the two values
        around position (n - 1) q, in its own form (``b - (b - a)(1 - t)`` from t = 0.5)."""
        h = (self.n - 1) * q
        lo = math.floor(h)
        a, b = self._at(lo), self._at(min(lo + 1, self.n - 1))
        t = h - lo
        return float(b - (b - a) * (1 - t)) if t >= 0.5 else float(a + (b - a) * t)

    def median(self) -> float:
        """``np.median(r)``: the middle value, or the mean of the two middle ones."""
        if self.n % 2:
            return self._at(self.n // 2)
        return float(np.mean([self._at(self.n // 2 - 1), self._at(self.n // 2)]))

    def over(self, threshold: float) -> int:
        return int(self.weights[self.values > threshold].sum())

    def distribution(self) -> dict[str, float]:
        """:meth:`~sdcflow.core.measures.risk.RiskSummary.distribution` from the classes."""
        return {
            "records": self.n,
            "max": self.max_risk,
            "p99": self.quantile(0.99),
            "p95": self.quantile(0.95),
            "median": self.median(),
            "mean": self.expected_reidentifications / self.n,
            "records_over_0.5": self.over(0.5),
            "records_over_0.1": self.over(0.1),
            "records_over_0.01": self.over(0.01),
            "sample_uniques": int(self.records_of[self.f == 1].sum()),
            "expected_reidentifications": self.expected_reidentifications,
            "global_risk_percent": self.global_risk_percent,
        }

    def histogram(self) -> dict[str, list[float]]:
        """:func:`~sdcflow.tasks.mask.disclosure_summary`'s ``histogram_after``."""
        edges = _risk_histogram(np.zeros(0))["edges"]
        counts = np.histogram(
            np.clip(self.values, 0.0, 1.0), bins=edges, weights=self.weights.astype(np.float64)
        )[0]
        return {"edges": edges, "records": [round(c) for c in counts]}

    def below(self, k: int | None) -> int | None:
        return int(self.records_of[self.f < k].sum()) if k else None


def disclosure_streamed(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    keys: Sequence[Key],
    source: str = "raw",
) -> dict[str, Any]:
    """:func:`~sdcflow.tasks.mask.disclosure_summary` from DuckDB aggregates: k, the records
    below k before and after, the risk distributions (1 / f per record: no weights on this
    path), the risk histogram, sdcMicro's count when the patterns of missing keys are few
    (:data:`MAX_PATTERNS`); SUDA2 is not computed (it searches every record's minimal
    unique subsets of keys: the records themselves). ``source``: the records masked, whose
    classes are the figures "before" (``raw``, or ``edited`` after a repair)."""
    if spec.weight_column is not None:
        raise ValueError(
            "weight_column is set: the weighted risk is computed in memory only; release "
            "without the streamed path"
        )
    resolved = list(keys) or [Key(c, "numeric") for c in spec.quasi_identifiers]
    numeric = [k.name for k in resolved if _released_kind(k) == "numeric"]
    names = [k.name for k in resolved]
    agg = _Figures(spec, warehouse, run_id, numeric)
    agg.keys = names
    after = ClassRisk.of_classes(agg.sizes("masked"))
    before = ClassRisk.of_classes(agg.sizes(source))
    k = getattr(spec.method, "k", None)
    out: dict[str, Any] = {
        "convention": "identical released rows (a missing or suppressed value is a value of "
        "its own)",
        "keys": {key.name: _released_kind(key) for key in resolved},
        "k_anonymity": _smallest(agg.sizes("masked")),
        "records_below_k": {"before": before.below(k), "after": after.below(k)},
        "risk": {
            "weighted": False,
            "before": before.distribution(),
            "after": after.distribution(),
            "histogram_after": after.histogram(),
        },
    }
    loose_sizes = agg.loose_sizes()
    if loose_sizes is None:
        out["missing_matches_any"] = {
            "not_computed": f"more than {MAX_PATTERNS} patterns of missing keys: sdcMicro's "
            "count takes one join per pair of patterns on the streamed path"
        }
    else:
        # (count, records matched by that many) -> the risk of each record is 1 / count
        # (count f, records matched by f records): each such record's risk is 1 / f
        loose = ClassRisk.of_matches(loose_sizes)
        out["missing_matches_any"] = {
            "convention": "a missing or suppressed value matches any value (sdcMicro's "
            "freqCalc), for comparison: never gated unless the spec accepts it",
            "k_anonymity": _smallest(loose_sizes),
            "records_below_k_after": loose.below(k),
            "expected_reidentifications_after": loose.expected_reidentifications,
        }
    out["suda"] = {
        "not_computed": "special uniques (SUDA2) are not computed on the streamed path: the "
        "search reads every record's keys in memory"
    }
    return out


def safe_bins(figures: _Figures, min_count: int, max_bins: int = 12) -> dict[str, Bins | None]:
    """:func:`~sdcflow.report.plots.safe_bins` of every numeric key from aggregates: the same
    quantiles (``quantile_cont`` is numpy's linear quantile; a scan a key) and rounding, then
    the counts of the first edges in both tables (a scan each), and the merging of adjacent
    bins on those counts (dropping an edge adds the two bins' counts: what a recount gives)."""
    profiles = figures.raw_profiles()
    wanted: dict[str, list[float]] = {}
    for column in figures.numeric:
        bins = min(max_bins, profiles[column].present // max(1, min_count))
        if bins >= 2:
            wanted[column] = [*(np.arange(1, bins) / bins), 1 / bins, 1 - 1 / bins]
    quantiles = sql.quantiles(figures.warehouse, "raw", figures.run_id, wanted)
    edges: dict[str, np.ndarray] = {}
    for column, q in quantiles.items():
        profile, bins = profiles[column], len(wanted[column]) - 1
        spread = float(q[bins] - q[bins - 1])
        if spread <= 0:
            spread = float(profile.maximum - profile.minimum)
        step = _nice_step(spread, bins)
        if step <= 0:
            continue
        cuts = np.unique(np.round(q[: bins - 1] / step) * step)
        cuts = cuts[cuts > float(profile.minimum)]  # an edge at the minimum would show it
        if cuts.size:
            edges[column] = cuts
    raw = sql.bin_counts(figures.warehouse, "raw", figures.run_id, edges)
    released = sql.bin_counts(figures.warehouse, "masked", figures.run_id, edges)
    out: dict[str, Bins | None] = dict.fromkeys(figures.numeric)
    for column, cuts in edges.items():
        out[column] = _merged(cuts, raw[column], released[column], min_count)
    return out


def _merged(edges: np.ndarray, x: np.ndarray, y: np.ndarray, min_count: int) -> Bins | None:
    """The merging loop of :func:`~sdcflow.report.plots.safe_bins` on counts."""
    while True:
        if x.min() >= min_count:
            return Bins(edges, x, y)
        i = int(np.argmin(x))
        if i == 0:
            drop = 0
        elif i == x.size - 1:
            drop = i - 1
        else:
            drop = i - 1 if x[i - 1] <= x[i + 1] else i
        # dropping edge ``drop`` merges bins drop and drop + 1
        x = np.r_[x[:drop], x[drop] + x[drop + 1], x[drop + 2 :]]
        y = np.r_[y[:drop], y[drop] + y[drop + 1], y[drop + 2 :]]
        edges = np.delete(edges, drop)
        if edges.size == 0:
            return None


@task(name="run-report-streamed", **STEP)
def report_streamed(
    spec: ReleaseSpec,
    report_dir: Path,
    run_id: str,
    decision: str,
    checks: Sequence[GateOutcome],
    edit_rules: Mapping[str, Any] | None,
    rules: Sequence[Rule],
    warehouse: Warehouse,
    point_columns: Sequence[str] | None,
    method_details: Mapping[str, Any] | None,
    evidence: Evidence | None,
) -> Path:
    """:func:`~sdcflow.tasks.report.run_report` from DuckDB aggregates: the sections the
    in-memory report shows, their figures from the raw and released tables' moments, safe
    bins, correlations of the complete records, class sizes and the 1 / f risk; what needs
    the records (a method's per-record intruder beyond 1 / f) is said to be left out."""
    agg = _Figures(spec, warehouse, run_id, point_columns or [])
    k = getattr(spec.method, "k", None)
    min_count = k or 5
    raw, masked = agg.raw_profiles(), agg.masked_profiles()
    records = sql.count_rows(warehouse, "raw", run_id)
    kept, corr_raw, corr_released = (
        sql.complete_correlations(warehouse, run_id, agg.numeric)
        if len(agg.numeric) > 1
        else (0, np.eye(len(agg.numeric)), np.eye(len(agg.numeric)))
    )
    facts = AggregateFacts(
        records=records,
        records_missing_a_number=sql.records_missing(warehouse, "raw", run_id, agg.numeric),
        moments={
            c: (raw[c].mean, masked[c].mean, raw[c].variance, masked[c].variance)
            for c in agg.numeric
        },
        bins=safe_bins(agg, min_count),
        complete_records=kept,
        correlations=(corr_raw, corr_released),
        class_sizes=agg.sizes(),
    )
    result = MaskResult(
        masked=pd.DataFrame(columns=list(spec.quasi_identifiers)),
        points=np.empty((0, len(agg.numeric))),
        details=dict(method_details or {}),
        point_columns=agg.numeric,
    )
    release = ReleaseFacts(
        release=spec.release,
        run_id=run_id,
        decision=decision,
        passed=all(o.passed for o in checks),
        method=spec.method,
        checks=[o.as_dict() for o in checks],
        rules=[RuleFacts(r.name, r.text, r.severity) for r in rules],
        edit_rules=edit_rules,
        columns=agg.numeric,
        original=None,
        result=result,
        evidence=replace(evidence, record_risk=None) if evidence is not None else None,
    )
    path = write_report(
        report_dir,
        streamed_sections(release, facts),
        title=f"sdcflow release report: {spec.release}",
        decision=decision,
        passed=release.passed,
    )
    get_run_logger().info("run report written to %s", path)
    return path
