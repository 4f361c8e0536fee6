"""The edit-rule steps of a release: validate a table, repair (rules are loaded and checked
by the preflight, :mod:`sdcflow.preflight.plan`).

* :func:`validate_edits` (task): DuckDB evaluates the rules on a warehouse table, violating row
  ids go to ``audit.violations``, Great Expectations validates the check columns and writes
  Data Docs into the run's report folder, and a Prefect Markdown artifact gets the per-rule
  counts (rule names and counts only, never values or rule constants).
* :func:`repair_edits` (task): the minimal adjustment of :mod:`sdcflow.core.linear.repair` before a
  method that does not edit while it masks, onto the linear rules and, on the records where
  the condition of a conditional rule holds (found by DuckDB), its linear consequent; the
  result is stored in the ``edited`` schema.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from sdcflow.core.distinct import distinct_rows
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.group_values import Condition
from sdcflow.core.linear.repair import merge_magnitudes, minimal_adjustment, repair_magnitudes
from sdcflow.expectations.compile import CompiledRule, compile_rule, condition_sql
from sdcflow.expectations.rules import (
    Conditional,
    Rule,
    is_linear_node,
    numeric_columns,
)
from sdcflow.gates import GateOutcome
from sdcflow.methods import get_method
from sdcflow.preflight.plan import linear_constraints
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP, artifact_key
from sdcflow.tasks.retry import IO_RETRY
from sdcflow.warehouse.edits import evaluate_rules, matching_row_ids, record_violations
from sdcflow.warehouse.repairs import numeric_ranges, store_edited
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

if TYPE_CHECKING:
    from sdcflow.expectations.outcomes import RuleReport


def conditional_consequents(
    spec: ReleaseSpec, rules: Sequence[Rule], columns: Sequence[str] | None = None
) -> list[tuple[Rule, LinearConstraints]]:
    """Error rules ``if C then D`` whose consequent ``D`` is linear over the (numeric)
    quasi-identifiers ``columns`` (default: all of them), with ``D``'s rows: repair enforces
    them on the records where ``C`` holds."""
    columns = list(spec.quasi_identifiers if columns is None else columns)
    out = []
    for rule in rules:
        node = rule.node
        if rule.severity != "error" or not isinstance(node, Conditional):
            continue
        if not is_linear_node(node.consequent):
            continue
        consequent = Rule(
            name=rule.name,
            text=rule.text,
            node=node.consequent,
            tolerance=rule.tolerance,
            columns=node.consequent.columns,
        )
        rows = linear_constraints([consequent], columns)
        if not rows.is_empty:
            out.append((rule, rows))
    return out


def group_conditions(
    spec: ReleaseSpec,
    rules: Sequence[Rule],
    constraints: LinearConstraints | None,
    numeric: Sequence[str],
) -> list[tuple[Condition, LinearConstraints]]:
    """The conditional rules masking with missing numbers keeps on each group's values
    (:func:`~sdcflow.core.linear.group_values.group_values_on_rules`): error rules
    ``if C then D`` with ``D`` linear over the constraints' columns and ``C`` reading only
    keys released as numbers (``numeric``: not binned by ``recode:``), as (C evaluated by
    DuckDB with the validation's SQL, D's rows over the constraints' columns)."""
    if constraints is None:
        return []
    columns = list(constraints.columns)
    allowed = set(columns) & set(numeric)
    out: list[tuple[Condition, LinearConstraints]] = []
    for rule, rows in conditional_consequents(spec, rules, columns):
        assert isinstance(rule.node, Conditional)
        if set(rule.node.condition.columns) <= allowed:
            out.append((SqlCondition(condition_sql(rule)), rows))
    return out


class SqlCondition:
    """A condition ``C`` of ``if C then D`` as DuckDB's SQL, a function of column -> values
    (c,) giving (c,) bool, True where it holds; a NaN is NULL (DuckDB orders NaN above every
    number), so a condition on a missing value is undetermined, not true.

    Pickled as its text alone, so that a piece of the streamed mask on a Dask worker reads
    the condition the flow's process found; each process opens its own in-memory connection
    on the first call (opening one costs far more than a query on it, and the condition is
    read per pattern of gaps and per round). One call at a time: the connection's
    registered table is the call's, and threads sharing the condition would read each
    other's."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, str]:
        return {"sql": self.sql}

    def __setstate__(self, state: dict[str, str]) -> None:
        self.__init__(state["sql"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"SqlCondition({self.sql!r})"

    def __call__(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        columns = {
            c: pa.array(np.asarray(v, dtype=np.float64), from_pandas=True)
            for c, v in values.items()
        }
        n = len(next(iter(columns.values()))) if columns else 0
        table = pa.table({**columns, "__sdc_i": pa.array(np.arange(n))})
        with self._lock:
            if self._con is None:
                self._con = duckdb.connect()
            self._con.register("sdc_groups", table)
            got = self._con.sql(
                f"SELECT coalesce({self.sql}, false) AS c FROM sdc_groups ORDER BY __sdc_i"
            ).fetchnumpy()["c"]
        return np.asarray(got, dtype=bool)


def needs_repair(spec: ReleaseSpec, constraints: LinearConstraints) -> bool:
    """Repair before masking: ``on_violation: repair``, linear rules over the quasi-identifiers,
    and a method that does not satisfy them by itself while masking."""
    return (
        spec.on_violation == "repair"
        and not constraints.is_empty
        and not get_method(spec.method.name).edits_while_masking
    )


def released_rules(
    rules: Sequence[Rule], columns: Sequence[str], labelled: Sequence[str] = ()
) -> tuple[list[Rule], list[str]]:
    """The rules that can be checked on a table with ``columns``, and the names of the others:
    those reading a column it lacks, or reading as a number a column of ``labelled`` (keys
    that ``recode:`` bins publish as bin labels)."""
    have, text = set(columns), set(labelled)

    def checkable(rule: Rule) -> bool:
        return set(rule.columns) <= have and not numeric_columns(rule.node) & text

    return [r for r in rules if checkable(r)], [r.name for r in rules if not checkable(r)]


def rule_failures(report: RuleReport) -> list[GateOutcome]:
    """One failed :class:`GateOutcome` per violated error rule (figure = violating records)."""
    return [
        GateOutcome(
            key=f"edit_rule:{o.name}",
            figure=float(o.violations),
            threshold=0.0,
            direction="max",
            passed=False,
            description=f"{report.stage} records violating edit rule {o.name}",
        )
        for o in report.failed
    ]


# --- tasks -------------------------------------------------------------------------------------


def _validation_name(parameters: dict[str, Any]) -> str:
    """``validate-edits-raw`` before masking, ``validate-edits-released`` after (the
    ``masked`` table): the two task runs told apart in the Prefect UI."""
    stage = parameters.get("stage")
    return f"validate-edits-{'released' if stage == 'masked' else stage}"


@task(name="validate-edits", task_run_name=_validation_name, **IO_RETRY, **STEP)
def validate_edits(
    warehouse: Warehouse,
    run_id: str,
    stage: str,
    rules: Sequence[Rule],
    docs_dir: Path | None,
    release: str,
    skipped: Sequence[str] = (),
    sql_only: bool = False,
) -> RuleReport:
    """Validate ``rules`` on the ``stage`` table of the run; see the module docstring.

    ``sql_only``: the counts DuckDB's SQL gives (the same :func:`record_violations` that
    checks Great Expectations' counts otherwise), without reading the check columns into
    this process and without Great Expectations or its Data Docs: the path of a release
    whose table stays in the warehouse (:mod:`sdcflow.flows.streamed`)."""
    compiled = [compile_rule(r) for r in rules]
    if sql_only:
        report = _sql_report(warehouse, stage, run_id, compiled)
    else:
        report = _ge_report(warehouse, stage, run_id, compiled, docs_dir)
    _publish_counts(report, stage, run_id, release, skipped)
    return report


def _sql_report(
    warehouse: Warehouse, stage: str, run_id: str, compiled: Sequence[CompiledRule]
) -> RuleReport:
    """The per-rule counts of DuckDB's SQL alone (a FALSE is a violation, a NULL
    undetermined: the rule language's semantics, which Great Expectations reproduces)."""
    from sdcflow.expectations.outcomes import RuleOutcome, RuleReport

    t0 = time.perf_counter()
    counts = record_violations(warehouse, stage, run_id, compiled)
    report = RuleReport(stage=stage, records=warehouse.count_rows(stage, run_id))
    report.outcomes = [
        RuleOutcome(
            name=c.name,
            text=c.rule.text,
            severity=c.rule.severity,
            expectation="sql",
            violations=counts[c.name]["violations"],
            undetermined=counts[c.name]["undetermined"],
        )
        for c in compiled
    ]
    report.seconds = time.perf_counter() - t0
    return report


def _ge_report(
    warehouse: Warehouse,
    stage: str,
    run_id: str,
    compiled: Sequence[CompiledRule],
    docs_dir: Path | None,
) -> RuleReport:
    """Great Expectations' validation of the check columns, its counts held against SQL's."""
    from sdcflow.expectations.suite import validate_frame  # GE is slow to import

    checks = evaluate_rules(warehouse, stage, run_id, compiled)
    counts = record_violations(warehouse, stage, run_id, compiled)
    report = validate_frame(checks, compiled, stage=stage, docs_dir=docs_dir)
    del checks
    for outcome in report.outcomes:
        sql = counts[outcome.name]["violations"]
        if sql != outcome.violations:
            raise RuntimeError(
                f"edit rule {outcome.name!r}: DuckDB counts {sql} violating records but Great "
                f"Expectations {outcome.violations}; report this as a bug"
            )
    return report


def _publish_counts(
    report: RuleReport, stage: str, run_id: str, release: str, skipped: Sequence[str]
) -> None:
    """The per-rule counts as the run's Markdown artifact and log lines (never values)."""
    markdown = report.as_markdown(f"Edit rules on the {stage} table")
    if skipped:
        markdown += (
            f"\n\nNot checked here (their columns are not in this table): {', '.join(skipped)}"
        )
    create_markdown_artifact(
        markdown=markdown,
        key=f"{artifact_key(release)}-edits-{stage}",
        description=f"edit-rule validation of the {stage} table, run {run_id}",
    )
    logger = get_run_logger()
    for o in report.outcomes:
        logger.info(
            "edit rule %s (%s) on %s: %d violating, %d undetermined",
            o.name,
            o.severity,
            stage,
            o.violations,
            o.undetermined,
        )
    how = "SQL" if all(o.expectation == "sql" for o in report.outcomes) else "GE"
    logger.info("%s validation of %d rules took %.2f s", how, len(report.outcomes), report.seconds)


@task(name="repair-edits", **IO_RETRY, **STEP)
def repair_edits(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    frame: pd.DataFrame,
    rules: Sequence[Rule],
    constraints: LinearConstraints,
) -> tuple[pd.DataFrame, int]:
    """Project the records that violate the linear rules onto them (least squares, as
    ``rspa``) and store the edited table; returns it and the number of records moved.
    A record missing some values is projected onto the rules it can be checked against:
    those that read only values it has (the others are undetermined on it), its missing
    values staying missing."""
    qis = list(constraints.columns)
    X = frame[qis].to_numpy(dtype=np.float64, na_value=np.nan)
    conditional = []
    for rule, rows in conditional_consequents(spec, rules, qis):
        ids = matching_row_ids(warehouse, "raw", run_id, condition_sql(rule))
        mask = frame[ROW_ID].isin(ids).to_numpy()
        if mask.any():
            conditional.append((mask, rows))
    repaired, moved = _repaired(X, constraints, _row_tolerances(rules), conditional)
    edited = frame.copy()
    for j, column in enumerate(qis):
        edited[column] = repaired[:, j]
    warehouse.write_frame("edited", run_id, edited)
    count = int(moved.sum())
    _log_repair(count, len(frame), constraints, len(conditional))
    return edited, count


#: Records of one range of the streamed repair: the repaired columns of a million records
#: are tens of megabytes.
REPAIR_RANGE = 1_000_000


@dataclass(frozen=True)
class StreamedRepair:
    """What :func:`repair_streamed` leaves: the records moved, and whether any value changed
    (the in-memory path's test for IL against the repaired records)."""

    moved: int
    changed: bool


@task(name="repair-edits-streamed", **IO_RETRY, **STEP)
def repair_streamed(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    rules: Sequence[Rule],
    constraints: LinearConstraints,
    rows: int | None = None,
) -> StreamedRepair:
    """:func:`repair_edits` on a release whose records stay in the warehouse: the repaired
    columns of ``raw`` are read in row-id ranges of ``rows`` records (default
    :data:`REPAIR_RANGE`) and repaired, and ``edited.run_<id>`` is created from ``raw`` and
    the moved records (:mod:`sdcflow.warehouse.repairs`); nothing else is read into this
    process.

    The repair is the in-memory one record for record, bit for bit: every step of it works
    on a record alone but for the margin of the strict rows (``<``, ``>``), which takes
    the largest values of the violating records of each decade over the whole file, so a
    first pass over the ranges gathers those
    (:func:`~sdcflow.core.linear.repair.repair_magnitudes`) when the rules have a strict
    row. Conditional rules are not repaired here: the streamed path refuses them
    (:func:`~sdcflow.tasks.cells.streamed_path`)."""
    qis = list(constraints.columns)
    if conditional_consequents(spec, rules, qis):
        raise ValueError(
            "conditional rules are repaired in memory: release without the streamed path"
        )
    rows = rows or REPAIR_RANGE
    row_tol = _row_tolerances(rules)
    counts = {"moved": 0, "changed": 0, "records": 0}
    with warehouse.connect() as con:
        magnitudes: dict[tuple[bool, ...], dict[int, np.ndarray]] | None = None
        if any(constraints.ineq_strict):
            magnitudes = {}
            for _, X in numeric_ranges(con, run_id, qis, rows):
                for gap, these, on in _patterns(X, qis, constraints):
                    if on.is_empty:  # no rule reads only values these records have
                        continue
                    found = repair_magnitudes(X[these][:, ~gap], on, row_tol=row_tol)
                    merge_magnitudes(magnitudes.setdefault(tuple(gap), {}), found)

        def moved_records() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for ids, X in numeric_ranges(con, run_id, qis, rows):
                repaired, moved = _repaired(X, constraints, row_tol, (), magnitudes)
                counts["records"] += len(X)
                counts["moved"] += int(moved.sum())
                same = (repaired == X) | (np.isnan(repaired) & np.isnan(X))
                counts["changed"] += int((~same.all(axis=1)).sum())
                yield ids[moved], repaired[moved]

        store_edited(warehouse, con, run_id, qis, moved_records())
    _log_repair(counts["moved"], counts["records"], constraints, 0)
    return StreamedRepair(counts["moved"], counts["changed"] > 0)


def _row_tolerances(rules: Sequence[Rule]) -> dict[str, float]:
    return {rule.name: rule.tolerance for rule in rules}


def _patterns(
    X: np.ndarray, qis: Sequence[str], constraints: LinearConstraints
) -> Iterator[tuple[np.ndarray, np.ndarray, LinearConstraints]]:
    """Per pattern of missing values among the records of ``X`` (m, d): the pattern (d,)
    bool, its records (p,) and the rows of ``constraints`` that read only values they have."""
    gaps, which = distinct_rows(np.isnan(X).view(np.int8))
    for p, gap in enumerate(gaps.astype(bool)):
        have = [c for c, missing in zip(qis, gap, strict=True) if not missing]
        on = constraints.restrict(have) if len(have) < len(qis) else constraints
        yield gap, np.flatnonzero(which == p), on


def _repaired(
    X: np.ndarray,
    constraints: LinearConstraints,
    row_tol: Mapping[str, float],
    conditional: Sequence[tuple[np.ndarray, LinearConstraints]] = (),
    magnitudes: Mapping[tuple[bool, ...], Mapping[int, np.ndarray]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The records of ``X`` (n, d), over ``constraints.columns``, repaired pattern of
    missing values by pattern; ``conditional``: (mask (n,), consequent rows) of the rules
    whose condition holds there; ``magnitudes``: per pattern, the whole file's
    (:func:`repair_streamed`). Returns the repaired records (n, d) and the moved (n,)."""
    qis = list(constraints.columns)
    repaired = X.copy()
    moved = np.zeros(X.shape[0], dtype=bool)
    for gap, these, on in _patterns(X, qis, constraints):
        have = [c for c, missing in zip(qis, gap, strict=True) if not missing]
        # a consequent reading a value the record lacks is undetermined there
        extra = [
            (mask[these], rows.restrict(have))
            for mask, rows in conditional
            if mask[these].any() and rows.restrict(have).n_rows == rows.n_rows
        ]
        if on.is_empty and not extra:
            continue
        cols = np.flatnonzero(~gap)
        repaired[np.ix_(these, cols)], moved[these] = minimal_adjustment(
            X[np.ix_(these, cols)],
            on,
            row_tol=row_tol,
            conditional=extra,
            magnitudes=None if magnitudes is None else magnitudes.get(tuple(gap), {}),
        )
    return repaired, moved


def _log_repair(count: int, records: int, constraints: LinearConstraints, conditional: int) -> None:
    get_run_logger().info(
        "minimal adjustment moved %d of %d records onto %d linear rule row(s) and %d "
        "conditional consequent(s)",
        count,
        records,
        constraints.A.shape[0] + constraints.G.shape[0],
        conditional,
    )
