"""The edit-rule steps of a release: load and check the rules, validate a table, repair.

* :func:`load_edit_rules` (plain function, called by preflight so that a bad rule is an exit-2
  error before any flow run): parses the spec's ``edits`` and ``rules_file`` against the
  source's columns, checks column types, feasibility (:mod:`sdcflow.expectations.feasibility`)
  and that masking can keep every linear rule (no rule mixing masked and unmasked columns, or
  spanning two blocks).
* :func:`validate_edits` (task): DuckDB evaluates the rules on a warehouse table, violating row
  ids go to ``audit.violations``, Great Expectations validates the check columns and writes
  Data Docs into the run's report folder, and a Prefect Markdown artifact gets the per-rule
  counts (rule names and counts only, never values or rule constants).
* :func:`repair_edits` (task): the minimal adjustment of :mod:`sdcflow.tasks.linear.repair` before a
  method that does not edit while it masks, onto the linear rules and, on the records where
  the condition of a conditional rule holds (found by DuckDB), its linear consequent; the
  result is stored in the ``edited`` schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from sdcflow.errors import Reason, RuleError
from sdcflow.expectations.compile import compile_rule, condition_sql, linear_constraints
from sdcflow.expectations.feasibility import check_feasible
from sdcflow.expectations.rules import (
    Chain,
    Comparison,
    Conditional,
    InSet,
    Node,
    Rule,
    TextComparison,
    is_linear_node,
    load_rules_file,
    parse_rules,
)
from sdcflow.spec import ReleaseSpec
from sdcflow.tasks.gates.registry import CheckOutcome
from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.linear.repair import minimal_adjustment
from sdcflow.tasks.methods.registry import get_method
from sdcflow.tasks.steps.release_steps import STEP, artifact_key
from sdcflow.warehouse.edits import evaluate_rules, matching_row_ids, record_violations
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse, is_numeric_type

if TYPE_CHECKING:
    from sdcflow.expectations.suite import RuleReport

__all__ = [
    "conditional_consequents",
    "edit_constraints",
    "load_edit_rules",
    "needs_repair",
    "released_rules",
    "repair_edits",
    "rule_failures",
    "spec_rules",
    "validate_edits",
]


# --- loading (plain functions: preflight calls them before any flow run) --------------------


def _column_uses(node: Node) -> Iterator[tuple[str, str]]:
    """``(column, "numeric" | "text")`` for every column a rule reads, by how it is used."""
    if isinstance(node, Conditional):
        yield from _column_uses(node.condition)
        yield from _column_uses(node.consequent)
    elif isinstance(node, (Comparison, Chain)):
        for column in node.columns:
            yield column, "numeric"
    elif isinstance(node, TextComparison):
        yield node.column, "text"
    elif isinstance(node, InSet):
        yield node.column, "text" if isinstance(node.values[0], str) else "numeric"


def load_edit_rules(spec: ReleaseSpec, types: Mapping[str, str]) -> list[Rule]:
    """Parse and check the spec's edit rules against the source's columns.

    Parameters
    ----------
    spec : ReleaseSpec
    types : mapping column -> DuckDB type
        Every column of the source (``profile_source(...)["types"]``).

    Returns
    -------
    list of Rule
        ``edits`` first, then the rules file; unnamed rules are ``R<i>`` by position in that
        combined list.

    Raises
    ------
    RuleError, InfeasibleRulesError (both InputError, exit 2)
        A malformed rule, an unknown column, a type mismatch, a rule set no record can satisfy,
        or a linear rule masking could not keep.
    """
    known = list(types)
    rules = parse_rules(spec.edits, known_columns=known, source="edits")
    if spec.rules_file is not None:
        path = spec.path(spec.rules_file)
        more = parse_rules(
            load_rules_file(path),
            known_columns=known,
            source=str(spec.rules_file),
            first_index=len(rules) + 1,
        )
        clash = sorted({r.name for r in rules} & {r.name for r in more})
        if clash:
            raise RuleError(
                f"rule name(s) {', '.join(clash)} are used both in edits and in "
                f"{spec.rules_file}; give every rule its own name",
                code=Reason.RULE_OPTION,
            )
        rules += more
    for rule in rules:
        for column, use in _column_uses(rule.node):
            numeric = is_numeric_type(types[column])
            if use == "numeric" and not numeric:
                raise RuleError(
                    f"column {column!r} is {types[column]}, but the rule uses it as a number",
                    rule=rule.text,
                    name=rule.name,
                    hint="compare a text column with quoted values (region == 'N', "
                    "region in ['N', 'S']) or fix the column's values",
                    code=Reason.RULE_TYPE,
                )
            if use == "text" and numeric:
                raise RuleError(
                    f"column {column!r} is {types[column]}, but the rule compares it with text",
                    rule=rule.text,
                    name=rule.name,
                    hint="write the values without quotes",
                    code=Reason.RULE_TYPE,
                )
    numeric_columns = [c for c, t in types.items() if is_numeric_type(t)]
    check_feasible(rules, numeric_columns)
    _check_maskable(spec, rules)
    return rules


def _check_maskable(spec: ReleaseSpec, rules: Sequence[Rule]) -> None:
    """Linear error rules must be keepable by masking: all their columns masked together or
    all released unchanged."""
    qis = set(spec.quasi_identifiers)
    kept = set(spec.keep) | set(spec.sensitive)
    for rule in rules:
        if not rule.is_linear or rule.severity != "error":
            continue
        cols = set(rule.columns)
        masked, unmasked = sorted(cols & qis), sorted(cols & kept)
        if masked and unmasked:
            raise RuleError(
                f"the rule ties masked column(s) {', '.join(masked)} to column(s) released "
                f"unchanged ({', '.join(unmasked)}), so masking cannot keep it",
                rule=rule.text,
                name=rule.name,
                hint="add those columns to quasi_identifiers, or give the rule severity: warning",
                code=Reason.RULE_NOT_KEEPABLE,
            )
        if spec.blocks and masked:
            spanned = [b for b in spec.blocks if cols & set(b)]
            if len(spanned) > 1:
                raise RuleError(
                    "the rule spans several blocks, which are averaged over different groups, "
                    "so masking cannot keep it",
                    rule=rule.text,
                    name=rule.name,
                    hint=f"put {', '.join(sorted(cols))} in one block",
                    code=Reason.RULE_NOT_KEEPABLE,
                )


def spec_rules(spec: ReleaseSpec, columns: Sequence[str]) -> list[Rule]:
    """The spec's rules parsed against ``columns``, without the load-time checks (for a flow
    run after preflight has accepted them)."""
    rules = parse_rules(spec.edits, known_columns=list(columns), source="edits")
    if spec.rules_file is not None:
        rules += parse_rules(
            load_rules_file(spec.path(spec.rules_file)),
            known_columns=list(columns),
            source=str(spec.rules_file),
            first_index=len(rules) + 1,
        )
    return rules


def edit_constraints(spec: ReleaseSpec, rules: Sequence[Rule]) -> LinearConstraints:
    """``A x = b``, ``G x <= h`` of the linear error rules over the quasi-identifiers."""
    hard = [r for r in rules if r.severity == "error"]
    return linear_constraints(hard, spec.quasi_identifiers)


def conditional_consequents(
    spec: ReleaseSpec, rules: Sequence[Rule]
) -> list[tuple[Rule, LinearConstraints]]:
    """Error rules ``if C then D`` whose consequent ``D`` is linear over the quasi-identifiers,
    with ``D``'s rows: repair enforces them on the records where ``C`` holds."""
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
        rows = linear_constraints([consequent], spec.quasi_identifiers)
        if not rows.is_empty:
            out.append((rule, rows))
    return out


def needs_repair(spec: ReleaseSpec, constraints: LinearConstraints) -> bool:
    """Repair before masking: ``on_violation: repair``, linear rules over the quasi-identifiers,
    and a method that does not satisfy them by itself while masking."""
    return (
        spec.on_violation == "repair"
        and not constraints.is_empty
        and not get_method(spec.method.name).edits_while_masking
    )


def released_rules(rules: Sequence[Rule], columns: Sequence[str]) -> tuple[list[Rule], list[str]]:
    """The rules that can be checked on a table with ``columns``, and the names of the others."""
    have = set(columns)
    ok = [r for r in rules if set(r.columns) <= have]
    return ok, [r.name for r in rules if not set(r.columns) <= have]


def rule_failures(report: RuleReport) -> list[CheckOutcome]:
    """One failed :class:`CheckOutcome` per violated error rule (figure = violating records)."""
    return [
        CheckOutcome(
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


@task(name="validate-edits", **STEP)
def validate_edits(
    warehouse: Warehouse,
    run_id: str,
    stage: str,
    rules: Sequence[Rule],
    docs_dir: Path | None,
    release: str,
    skipped: Sequence[str] = (),
) -> RuleReport:
    """Validate ``rules`` on the ``stage`` table of the run; see the module docstring."""
    from sdcflow.expectations.suite import validate_frame  # GE takes ~2.5 s to import

    compiled = [compile_rule(r) for r in rules]
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
    logger.info("GE validation of %d rules took %.2f s", len(compiled), report.seconds)
    return report


@task(name="repair-edits", **STEP)
def repair_edits(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    frame: pd.DataFrame,
    constraints: LinearConstraints,
) -> tuple[pd.DataFrame, int]:
    """Project the records that violate the linear rules onto them (least squares, as
    ``rspa``) and store the edited table; returns it and the number of records moved."""
    qis = list(spec.quasi_identifiers)
    X = frame[qis].to_numpy(dtype=np.float64)
    conditional = []
    for rule, rows in conditional_consequents(spec, spec_rules(spec, list(frame.columns))):
        ids = matching_row_ids(warehouse, "raw", run_id, condition_sql(rule))
        mask = frame[ROW_ID].isin(ids).to_numpy()
        if mask.any():
            conditional.append((mask, rows))
    repaired, moved = minimal_adjustment(X, constraints, conditional=conditional)
    edited = frame.copy()
    for j, column in enumerate(qis):
        edited[column] = repaired[:, j]
    warehouse.write_frame("edited", run_id, edited)
    count = int(moved.sum())
    get_run_logger().info(
        "minimal adjustment moved %d of %d records onto %d linear rule row(s) and %d "
        "conditional consequent(s)",
        count,
        len(frame),
        constraints.A.shape[0] + constraints.G.shape[0],
        len(conditional),
    )
    return edited, count
