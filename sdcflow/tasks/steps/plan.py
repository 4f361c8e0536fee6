"""The preflight of a release: everything that can be checked before a flow run exists.

:func:`plan_release` reads the source once (into an Arrow table the ingest step reuses),
profiles it (types, counts of missing and non-finite values; counts only, never values),
parses and type-checks the edit rules, checks that some record can satisfy them and that
masking can keep them, and compiles the linear ones. Every problem a user can fix is one
:class:`~sdcflow.errors.InputError` with a reason code, so the command line exits 2 with one
line and nothing is written. The resulting :class:`ReleasePlan` is handed to the flow, which
does not read or parse any of it again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from prefect import get_run_logger, task
from pydantic import BaseModel, ConfigDict, model_serializer

from sdcflow.errors import InputError, Reason, RuleError
from sdcflow.expectations.compile import linear_rows
from sdcflow.expectations.feasibility import FeasibilityReport, check_feasible
from sdcflow.expectations.rules import (
    Chain,
    Comparison,
    Conditional,
    InSet,
    Node,
    Rule,
    TextComparison,
    load_rules_file,
    parse_rules,
)
from sdcflow.limits import MAX_RULES, MAX_SOURCE_COLUMNS, check_count
from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.spec import ReleaseSpec
from sdcflow.tasks.steps import STEP
from sdcflow.warehouse.publish import check_release_paths, check_release_target
from sdcflow.warehouse.sources import is_numeric_type, profile_table, read_source
from sdcflow.warehouse.warehouse import ROW_ID, check_warehouse_file


@dataclass(frozen=True)
class SourceProfile:
    """Counts and types of the source; no value.

    Attributes
    ----------
    rows : number of records.
    types : column -> DuckDB type, every column of the file.
    missing : column -> missing values, for the columns the spec names.
    nonfinite : column -> infinite or NaN values, for the numeric ones among them.
    """

    rows: int
    types: dict[str, str]
    missing: dict[str, int]
    nonfinite: dict[str, int]


class ReleasePlan(BaseModel):
    """What the preflight established, handed to the flow so nothing is read twice.

    Attributes
    ----------
    spec : the validated release spec.
    profile : the source's counts and types.
    data : the source as read (an Arrow table); ingest stores it in the warehouse.
    rules : every edit rule, parsed and checked against the source's columns.
    constraints : ``A x = b``, ``G x <= h`` of the linear error rules over the
        quasi-identifiers (None without rules).
    feasibility : what the feasibility check established (None without rules).

    Serialized (as a Prefect flow-run parameter, for instance) it shows counts only.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    spec: ReleaseSpec
    profile: SourceProfile
    data: pa.Table
    rules: list[Rule] = []
    constraints: LinearConstraints | None = None
    feasibility: FeasibilityReport | None = None

    def variant(
        self, method: dict[str, Any] | None = None, measures: dict[str, Any] | None = None
    ) -> ReleasePlan:
        """The same plan with another ``method`` block or ``measures`` settings (see
        :meth:`ReleaseSpec.variant`)."""
        spec = self.spec.variant(method, measures)
        _check_columns(spec, self.profile)
        return self.model_copy(update={"spec": spec})

    @model_serializer
    def _summary(self) -> dict[str, Any]:
        # Never the data: a flow-run parameter is stored by the Prefect API.
        return {
            "release": self.spec.release,
            "spec_sha256": self.spec.sha256(),
            "records": self.profile.rows,
            "columns": len(self.profile.types),
            "edit_rules": len(self.rules),
        }


def plan_release(spec: ReleaseSpec) -> ReleasePlan:
    """Validate the source and the rules against the spec; see the module docstring.

    Raises
    ------
    InputError
        With a :class:`~sdcflow.errors.Reason`: unknown or reserved column, a key that is
        not numeric, missing or non-finite key values, k larger than the file, a bad rule.
    """
    check_destinations(spec)
    data = read_source(spec.source_path)
    named = [*spec.quasi_identifiers, *spec.keep, *spec.sensitive]
    if spec.id_column:
        named.append(spec.id_column)
    check_count(
        data.num_columns, MAX_SOURCE_COLUMNS, where=str(spec.source), what="columns in the file"
    )
    profile = SourceProfile(**profile_table(data, named))
    _check_columns(spec, profile)
    rules: list[Rule] = []
    constraints = feasibility = None
    if spec.edits or spec.rules_file is not None:
        rules, feasibility = load_edit_rules(spec, profile.types)
        hard = [r for r in rules if r.severity == "error"]
        constraints = linear_constraints(hard, spec.quasi_identifiers)
        check_rules_checkable(spec, rules)
    return ReleasePlan(
        spec=spec,
        profile=profile,
        data=data,
        rules=rules,
        constraints=constraints,
        feasibility=feasibility,
    )


def check_destinations(spec: ReleaseSpec) -> None:
    """Where the run writes, checked before it starts (``InputError``, exit 2): the output
    folder can take the release (a previous sdcflow release or nothing at ``<output>/<release>``),
    the release target holds neither the source, the warehouse, the rules nor the spec's folder
    and does not overlap the run reports, and the warehouse is a DuckDB file or a new path."""
    target = spec.release_dir
    check_release_paths(
        target,
        {
            "the source file": spec.source_path,
            "the warehouse": spec.warehouse_path,
            "the rules file": spec.path(spec.rules_file) if spec.rules_file else None,
            "the folder of the spec": spec.base_dir,
            "reports": spec.reports_dir / spec.release,
        },
    )
    check_release_target(spec.output_dir, spec.release)
    check_warehouse_file(spec.warehouse_path)


def check_rules_checkable(spec: ReleaseSpec, rules: Sequence[Rule]) -> None:
    """Every error rule must be checkable on the released records: all its columns released
    (quasi-identifiers, ``keep``, ``sensitive``), unless the spec accepts it unchecked
    (``accept: unchecked_rules``); reason ``RULE_NOT_CHECKABLE``."""
    names = {r.name for r in rules}
    unknown = sorted(set(spec.accept.unchecked_rules) - names)
    if unknown:
        raise RuleError(
            f"accept.unchecked_rules names unknown rule(s) {', '.join(unknown)}; use the rule "
            "names (R1, R2... for unnamed rules)",
            code=Reason.RULE_OPTION,
        )
    released = {*spec.quasi_identifiers, *spec.keep, *spec.sensitive}
    for rule in rules:
        if rule.severity != "error" or rule.name in spec.accept.unchecked_rules:
            continue
        hidden = sorted(set(rule.columns) - released)
        if hidden:
            raise RuleError(
                f"the rule reads column(s) {', '.join(hidden)}, which are not released, so it "
                "cannot be checked on the released records",
                rule=rule.text,
                name=rule.name,
                hint="release the column(s) (quasi_identifiers, keep or sensitive), give the "
                "rule severity: warning, or accept it unchecked with `accept: "
                f"{{unchecked_rules: [{rule.name}]}}`",
                code=Reason.RULE_NOT_CHECKABLE,
            )


def linear_constraints(rules: Sequence[Rule], columns: Sequence[str]) -> LinearConstraints:
    """The feasible set of the linear, unconditional rules that involve only ``columns``.

    Equalities go to ``A x = b``; ``a <= x <= b`` gives two rows of ``G x <= h``; ``>=`` rows
    are negated; strict inequalities enter as their closure. Rules that read any other column,
    conditional rules and non-linear rules are left out.

    Shapes: ``A`` (p, d), ``b`` (p,), ``G`` (q, d), ``h`` (q,) with d = len(columns), and the
    rule name of every row.
    """
    allowed = set(columns)
    rows = [
        (rule.name, *linear_rows(rule))
        for rule in rules
        if rule.is_linear and set(rule.columns) <= allowed
    ]
    return LinearConstraints.from_rows(rows, columns)


@task(name="preflight", **STEP)
def preflight(spec: ReleaseSpec) -> ReleasePlan:
    """:func:`plan_release` as the first step of a flow run started without a plan (from a
    deployment)."""
    plan = plan_release(spec)
    get_run_logger().info(
        "source %s: %d records, %d columns, %d edit rules",
        spec.source,
        plan.profile.rows,
        len(plan.profile.types),
        len(plan.rules),
    )
    return plan


def _check_columns(spec: ReleaseSpec, profile: SourceProfile) -> None:
    named = [*spec.quasi_identifiers, *spec.keep, *spec.sensitive]
    if spec.id_column:
        named.append(spec.id_column)
    types, src = profile.types, spec.source
    absent = [c for c in named if c not in types]
    if absent:
        raise InputError(
            f"{src}: column(s) {absent} named in the spec are not in the file "
            f"(it has {sorted(types)}); fix the spec or the file",
            code=Reason.COLUMN_UNKNOWN,
        )
    if ROW_ID in types:
        raise InputError(
            f"{src}: column name {ROW_ID!r} is reserved by sdcflow; rename it",
            code=Reason.SOURCE_COLUMNS,
        )
    non_numeric = [c for c in spec.quasi_identifiers if not is_numeric_type(types[c])]
    if non_numeric:
        shown = ", ".join(f"{c} ({types[c]})" for c in non_numeric)
        raise InputError(
            f"{src}: quasi-identifier(s) {shown} are not numeric; clean the values so that "
            "the column reads as numbers",
            code=Reason.COLUMN_TYPE,
        )
    qis = set(spec.quasi_identifiers)
    infinite = {c: m for c, m in profile.nonfinite.items() if m and c in qis}
    if infinite:
        shown = ", ".join(f"{c} ({m} infinite or NaN)" for c, m in infinite.items())
        raise InputError(
            f"{src}: quasi-identifier(s) {shown}; replace or drop those records before release",
            code=Reason.VALUES_NONFINITE,
        )
    missing = {c: m for c, m in profile.missing.items() if m and c in qis}
    if missing:
        shown = ", ".join(f"{c} ({m} missing)" for c, m in missing.items())
        raise InputError(
            f"{src}: quasi-identifier(s) {shown} have missing values; impute or drop those "
            "records before release",
            code=Reason.VALUES_MISSING,
        )
    k = getattr(spec.method, "k", None)
    if k is not None and k > profile.rows:
        raise InputError(
            f"method.k = {k} is larger than the number of records in {src} "
            f"({profile.rows}); lower k or release more records",
            code=Reason.TOO_FEW_RECORDS,
        )


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


def load_edit_rules(
    spec: ReleaseSpec, types: Mapping[str, str]
) -> tuple[list[Rule], FeasibilityReport]:
    """Parse and check the spec's edit rules against the source's columns.

    Parameters
    ----------
    spec : ReleaseSpec
    types : mapping column -> DuckDB type
        Every column of the source (``profile_source(...)["types"]``).

    Returns
    -------
    rules : list of Rule
        ``edits`` first, then the rules file; unnamed rules are ``R<i>`` by position in that
        combined list.
    feasibility : FeasibilityReport

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
        items = load_rules_file(path)
        check_count(
            len(spec.edits) + len(items), MAX_RULES, where=str(path), what="edit rules in all"
        )
        more = parse_rules(
            items,
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
    feasibility = check_feasible(rules, numeric_columns)
    _check_maskable(spec, rules)
    return rules, feasibility


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
