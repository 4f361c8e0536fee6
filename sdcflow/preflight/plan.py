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

import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, model_serializer

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.suppression.local import EXACT_MAX_VARIABLES
from sdcflow.core.validation import check_cell_size, check_resolution
from sdcflow.errors import InputError, Reason, RuleError
from sdcflow.expectations.compile import compile_rule, linear_rows, strict_rows
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
    numeric_columns,
    parse_rules,
)
from sdcflow.gates import GATES, contradictions
from sdcflow.limits import MAX_RULES, MAX_SOURCE_COLUMNS, check_count
from sdcflow.methods import get_method
from sdcflow.methods.box import check_box_columns, check_box_values
from sdcflow.methods.keys import Key, as_text, numeric_keys
from sdcflow.methods.mixed import check_relations
from sdcflow.methods.recoding import (
    Recoding,
    hierarchy_from_rows,
    load_hierarchy,
    recode,
    recoded_levels,
)
from sdcflow.preflight.runner import check_cluster, check_runner
from sdcflow.spec.schema import RecodeSpec, ReleaseSpec
from sdcflow.warehouse.edits import check_evaluable
from sdcflow.warehouse.publish import (
    check_release_paths,
    check_release_target,
    check_writable_folder,
    enclosing_release,
)
from sdcflow.warehouse.sources import (
    csv_unwritable,
    first_record,
    inexact_csv_numbers,
    is_integer_type,
    is_numeric_type,
    key_kind,
    looks_like_a_number,
    plain_number,
    profile_table,
    read_source_hashed,
    record_place,
)
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
    numeric_text : column -> values that read as numbers, for the text ones among them.
    formatted_numbers : column -> values written as numbers with a decimal comma, thousands
        separators or a percent sign, for the text ones among them.
    inexact_decimals : column -> values a float64 does not hold, for the DECIMAL ones.
    """

    rows: int
    types: dict[str, str]
    missing: dict[str, int]
    nonfinite: dict[str, int]
    numeric_text: dict[str, int] = field(default_factory=dict)
    formatted_numbers: dict[str, int] = field(default_factory=dict)
    inexact_decimals: dict[str, int] = field(default_factory=dict)


class ReleasePlan(BaseModel):
    """What the preflight established, handed to the flow so nothing is read twice.

    Attributes
    ----------
    spec : the validated release spec.
    profile : the source's counts and types.
    data : the source as read (an Arrow table); ingest stores it in the warehouse.
    rules : every edit rule, parsed and checked against the source's columns.
    constraints : ``A x = b``, ``G x <= h`` of the linear error rules over the
        numeric quasi-identifiers (None without rules).
    feasibility : what the feasibility check established (None without rules).
    resolved_keys : every quasi-identifier with its kind (numeric, nominal, ordinal), order,
        precision and recoding, resolved from the file and the spec (:func:`resolve_keys`).

    Serialized (as a Prefect flow-run parameter, for instance) it shows counts only.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    spec: ReleaseSpec
    profile: SourceProfile
    data: pa.Table
    rules: list[Rule] = []
    constraints: LinearConstraints | None = None
    feasibility: FeasibilityReport | None = None
    resolved_keys: list[Key] = []
    source_sha256: str = ""  # of the source file's bytes, as read (``audit.runs``)

    def variant(
        self, method: dict[str, Any] | None = None, measures: dict[str, Any] | None = None
    ) -> ReleasePlan:
        """The same plan with another ``method`` block or ``measures`` settings (see
        :meth:`ReleaseSpec.variant`)."""
        spec = self.spec.variant(method, measures)
        _check_columns(spec, self.profile)
        check_keys_fit_method(spec, self.resolved_keys, self.profile.rows)
        check_missing_numbers_fit_method(spec, self.resolved_keys, self.profile.missing)
        check_box_data(spec, self.data)
        check_runner(spec)  # a variant runs on the spec's runner too (runner: dask)
        return self.model_copy(update={"spec": spec})

    def release_sha256(self) -> str:
        """Hash of what decides the published files, for "the same release"
        (``flows.release.already_published``): :meth:`ReleaseSpec.sha256`'s fields without
        where the reports go, how the source is named (its bytes are ``source_sha256``) and
        how the output folder and the warehouse are written (their real paths count),
        with every edit rule as parsed (name, severity, tolerance, syntax tree), so that
        spacing a rule differently, or moving it to the rules file, is the same release."""
        spec = self.spec
        skip = {"retention", "runner", "dask", "reports", "source", "edits", "rules_file"}
        public = spec.hashed_dict(skip)
        # the folders by where they are, not how they are written (else `output:` given as
        # an absolute path would publish a second masking of the same file into the same
        # folder); a symbolic link counts as the folder it names
        public["output"] = os.path.realpath(spec.output_dir)
        public["warehouse"] = os.path.realpath(spec.warehouse_path)
        public["files_sha256"] = {
            k: v for k, v in spec.named_files_sha256().items() if k != "rules_file"
        }
        public["rules"] = [[r.name, r.severity, r.tolerance, repr(r.node)] for r in self.rules]
        blob = json.dumps(public, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()

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


def plan_release(spec: ReleaseSpec, *, force: bool = False) -> ReleasePlan:
    """Validate the source and the rules against the spec; see the module docstring.

    Raises
    ------
    InputError
        With a :class:`~sdcflow.errors.Reason`: unknown or reserved column, a key that is
        not numeric, missing or non-finite key values, k larger than the file, a bad rule,
        a gate the method cannot meet (:func:`check_contradictions`).

    ``force`` (``--force``): a live release whose files were edited may be replaced.
    """
    check_contradictions(spec)
    check_runner(spec)
    check_cluster(spec)
    check_destinations(spec, force=force)
    named = [*spec.quasi_identifiers, *spec.keep, *spec.sensitive]
    if spec.id_column:
        named.append(spec.id_column)
    if spec.weight_column and spec.weight_column not in named:
        named.append(spec.weight_column)
    # an ambiguous date column is refused only if the release uses it (a rule may use any)
    used = None if spec.edits or spec.rules_file is not None else named
    # kept and sensitive columns are published as the file writes them; not a key (masked
    # anyway), nor one given noise (fuzzy_map), nor the weight or a column an edit rule
    # uses as a number: those are computed with, so they stay numbers even where the file
    # writes one otherwise than data.csv will (1.50 is published 1.5)
    as_written = set(spec.keep) | set(spec.sensitive)
    as_written -= {*spec.quasi_identifiers, spec.weight_column, *spec.fuzzy_map}
    as_written -= _rule_numbers(spec)
    data, source_sha256 = read_source_hashed(
        spec.source_path, spec.missing_values, used, as_written
    )
    check_count(
        data.num_columns, MAX_SOURCE_COLUMNS, where=str(spec.source), what="columns in the file"
    )
    profile = SourceProfile(**profile_table(data, named))
    # a CSV's numbers are read as floats: a kept one with more digits would be published rounded
    unchanged = [c for c in (*spec.keep, *spec.sensitive) if profile.types.get(c) == "DOUBLE"]
    profile.inexact_decimals.update(inexact_csv_numbers(spec.source_path, unchanged))
    _check_columns(spec, profile, data)
    check_fuzzy_map(spec, data, profile)
    check_missing_tokens(spec)
    keys = resolve_keys(spec, profile, data)
    check_keys_fit_method(spec, keys, profile.rows)
    check_missing_numbers_fit_method(spec, keys, profile.missing)
    check_box_data(spec, data)
    check_fuzzy_data(spec, data, keys)
    check_weights(spec, profile, data)
    rules: list[Rule] = []
    constraints = feasibility = None
    if spec.edits or spec.rules_file is not None:
        rules, feasibility = load_edit_rules(
            spec, profile.types, profile.formatted_numbers, published_decimals(profile.types, keys)
        )
        hard = [r for r in rules if r.severity == "error"]
        constraints = linear_constraints(hard, numeric_keys(keys))
        check_rules_checkable(spec, rules)
        # what DuckDB meets only on reading rows (a text constant cast to a date column)
        check_evaluable(data, [compile_rule(r) for r in rules])
    check_undeclared_relations(spec, data, keys, constraints)
    return ReleasePlan(
        spec=spec,
        profile=profile,
        data=data,
        rules=rules,
        constraints=constraints,
        feasibility=feasibility,
        resolved_keys=keys,
        source_sha256=source_sha256,
    )


def check_undeclared_relations(
    spec: ReleaseSpec, data: pa.Table, keys: Sequence[Key], constraints: LinearConstraints | None
) -> None:
    """Refuse (``undeclared-relation``, exit 2) numeric keys with missing values, or columns
    published as they are, that a linear relation no error rule declares ties to the masked
    keys: found on the records as read, before a run exists. The mask step makes the same
    check on the records after repair, which moves only the records that break a rule."""
    numbers = [k.name for k in keys if k.kind == "numeric"]
    weight = [spec.weight_column] if spec.weight_column else []
    as_is = [c for c in (*spec.keep, *spec.sensitive) if c not in spec.fuzzy_map]
    published = [c for c in dict.fromkeys([*as_is, *weight]) if c in data.column_names]
    if not numbers or (not published and not any(data.column(c).null_count for c in numbers)):
        return
    frame = data.select(list(dict.fromkeys([*numbers, *published]))).to_pandas()
    check_relations(frame[numbers], keys, constraints, frame[published] if published else None)


def check_contradictions(spec: ReleaseSpec) -> None:
    """Refuse a spec whose gates its method cannot meet by construction (a box-only gate
    under another method, a crisp k gate under a probabilistic-only guarantee...), before
    anything is read: one line, reason ``SPEC_CONTRADICTION``."""
    found = contradictions(spec.method, spec.checks)
    if found:
        raise InputError(found[0], code=Reason.SPEC_CONTRADICTION)


def check_destinations(spec: ReleaseSpec, *, force: bool = False) -> None:
    """Where the run writes, checked before it starts (``InputError``, exit 2): the output
    folder can take the release (a previous sdcflow release or nothing at ``<output>/<release>``),
    the release target holds neither the source, the warehouse, the rules nor the spec's folder
    and does not overlap the run reports, the warehouse is a DuckDB file or a new path, and
    neither the output folder, the reports nor the warehouse lies inside a published release
    (another spec's: a `check` must not write its report into a live release), and
    neither the output nor the reports folder is the root of the file system."""
    roots = (("output", spec.output_dir, "releases", "published/"),
             ("reports", spec.reports_dir, "run reports", "reports/"))  # fmt: skip
    for field_name, folder, what, example in roots:
        if folder.resolve() == Path(folder.resolve().anchor):
            raise InputError(
                f"`{field_name}:` is the root of the file system; name a folder for {what} "
                f"(`{field_name}: {example}`)",
                code=Reason.OUTPUT,
                field=field_name,
            )
    target = spec.release_dir
    check_release_paths(
        target,
        {
            "the source file": spec.source_path,
            "the warehouse": spec.warehouse_path,
            # DuckDB's write-ahead log and sdcflow's writer lock, beside the warehouse as
            # named and beside the file a symbolic link names (where they are written)
            **_companions(spec.warehouse_path),
            "the rules file": spec.path(spec.rules_file) if spec.rules_file else None,
            "the folder of the spec": spec.base_dir,
            "reports": spec.reports_dir / spec.release,
        },
    )
    check_release_target(spec.output_dir, spec.release, force=force)
    # before the run starts: a read-only reports folder failed the run after the mask (exit 3)
    check_writable_folder(spec.reports_dir / spec.release, "reports", "the run reports")
    check_warehouse_file(spec.warehouse_path)
    written = (
        ("output", spec.output_dir),
        ("reports", spec.reports_dir),
        # the run's reports go to <reports>/<release>/<run id>: that folder may be another
        # spec's live release of the same name (`reports:` set to its output folder)
        ("reports", spec.reports_dir / spec.release),
        ("warehouse", spec.warehouse_path),
    )
    for field_name, path in written:
        inside = enclosing_release(path)
        if inside is not None:  # its next publication would refuse the files it did not list
            raise InputError(
                f"`{field_name}:` {path} lies inside the published release {inside}; point "
                f"`{field_name}:` outside every release folder",
                code=Reason.OUTPUT,
                field=field_name,
            )


def _companions(warehouse: Path) -> dict[str, Path]:
    """The files written beside a warehouse: DuckDB's ``.wal`` and ``.tmp`` (its spill folder)
    and sdcflow's ``.lock``, next to the path as named and next to the file it resolves to."""
    real = Path(os.path.realpath(warehouse))
    return {
        f"the warehouse's {what}{' (beside its file)' if i else ''}": at.with_name(at.name + suffix)
        for i, at in enumerate((warehouse, real))
        for what, suffix in (("log", ".wal"), ("lock", ".lock"), ("spill folder", ".tmp"))
    }


def binned_keys(spec: ReleaseSpec) -> list[str]:
    """The keys ``recode:`` bins: published as bin labels, not numbers."""
    return [name for name, rule in spec.recode.items() if rule.bins is not None]


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
    # a fuzzy-mapped column holds mapped values: rules on it cannot be checked after mapping
    # the weight column is published too (unchanged unless a key)
    weight = {spec.weight_column} if spec.weight_column else set()
    released = {*spec.quasi_identifiers, *spec.keep, *spec.sensitive, *weight} - set(spec.fuzzy_map)
    binned = set(binned_keys(spec))
    for rule in rules:
        if rule.severity != "error" or rule.name in spec.accept.unchecked_rules:
            continue
        labels = sorted(numeric_columns(rule.node) & binned)
        if labels:
            raise RuleError(
                f"the rule reads {', '.join(labels)} as a number, and `recode:` bins publish "
                "it as bin labels, so the rule cannot be checked on the released records",
                rule=rule.text,
                name=rule.name,
                hint="remove the bins, give the rule severity: warning, or accept it "
                f"unchecked with `accept: {{unchecked_rules: [{rule.name}]}}`",
                code=Reason.RULE_NOT_CHECKABLE,
            )
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
    are negated; strict inequalities are flagged (``ineq_strict``). Rules that read any other
    column, conditional rules and non-linear rules are left out.

    Shapes: ``A`` (p, d), ``b`` (p,), ``G`` (q, d), ``h`` (q,) with d = len(columns), and the
    rule name of every row.
    """
    allowed = set(columns)
    rows = [
        (rule.name, *linear_rows(rule), strict_rows(rule))
        for rule in rules
        if rule.is_linear and set(rule.columns) <= allowed
    ]
    return LinearConstraints.from_rows(rows, columns)


def _check_columns(spec: ReleaseSpec, profile: SourceProfile, data: pa.Table | None = None) -> None:
    named = [*spec.quasi_identifiers, *spec.keep, *spec.sensitive]
    if spec.id_column:
        named.append(spec.id_column)
    if spec.weight_column:
        named.append(spec.weight_column)
    types, src = profile.types, spec.source
    absent = [c for c in named if c not in types]
    if absent:
        raise InputError(
            f"{src}: column(s) {absent} named in the spec are not in the file "
            f"(it has {sorted(types)}); fix the spec or the file",
            code=Reason.COLUMN_UNKNOWN,
            field=str(absent[0]),
        )
    if ROW_ID in types:
        raise InputError(
            f"{src}: column name {ROW_ID!r} is reserved by sdcflow; rename it",
            code=Reason.SOURCE_COLUMNS,
            field=ROW_ID,
        )
    unchanged = [*spec.keep, *spec.sensitive]
    nested = [c for c in unchanged if csv_unwritable(types[c])]
    if nested:  # published unchanged, it would reach data.csv as a Python repr
        name = nested[0]
        role = "keep" if name in spec.keep else "sensitive"
        kind = types[name].split("(")[0]
        raise InputError(
            f"{src}: column {name} (`{role}:`) is of type {kind}, which a CSV field "
            f"cannot hold, and the release writes data.csv beside data.parquet; drop it from "
            f"`{role}:`, or store it in the source as text (JSON, hex)",
            code=Reason.COLUMN_TYPE,
            field=name,
        )
    inexact = {c: profile.inexact_decimals[c] for c in unchanged if profile.inexact_decimals.get(c)}
    if inexact:  # published "unchanged", they would be published as the nearest floats
        name, count = next(iter(inexact.items()))
        raise InputError(
            f"{src}: column {name} is published unchanged but {count} of its decimals have more "
            "digits than a float holds (about 15); round it in the source (or store it as "
            "text in a Parquet source)",
            code=Reason.COLUMN_TYPE,
            field=name,
        )
    qis = set(spec.quasi_identifiers)
    infinite = {c: m for c, m in profile.nonfinite.items() if m and c in qis}
    if infinite:
        shown = ", ".join(f"{c} ({m} infinite or NaN)" for c, m in infinite.items())
        if data is not None:
            first = next(iter(infinite))
            index = first_record(data, first, "NOT isfinite(TRY_CAST(v AS DOUBLE))")
            shown += f", the first on {record_place(spec.source_path, index or 0)}"
        raise InputError(
            f"{src}: quasi-identifier(s) {shown}; replace or drop those records before release "
            "(or declare the token in `missing_values:` if it means missing)",
            code=Reason.VALUES_NONFINITE,
            field=str(next(iter(infinite))),
        )
    missing = {c: m for c, m in profile.missing.items() if m and c in qis}
    if missing and spec.missing_values is None:
        shown = ", ".join(f"{c} ({m} missing)" for c, m in missing.items())
        raise InputError(
            f"{src}: quasi-identifier(s) {shown} have missing values; declare "
            "`missing_values:` (e.g. ['']) to release them as missing (a missing value "
            "is a value of its own when k is counted), or drop those records",
            code=Reason.VALUES_MISSING,
            field=str(next(iter(missing))),
        )
    k = getattr(spec.method, "k", None)
    if k is not None and k > profile.rows:
        raise InputError(
            f"method.k = {k} is larger than the number of records in {src} "
            f"({profile.rows}); lower k or release more records",
            code=Reason.TOO_FEW_RECORDS,
        )


def _rule_numbers(spec: ReleaseSpec) -> set[str]:
    """The columns the spec's edit rules (and rules file) use as numbers, parsed before the
    source is read; empty when a rule cannot be parsed (:func:`load_edit_rules` names it,
    after the source's own checks)."""
    if not spec.edits and spec.rules_file is None:
        return set()
    try:
        items = list(spec.edits)
        if spec.rules_file is not None:
            items += load_rules_file(spec.path(spec.rules_file))
        rules = parse_rules(items, source="edits")
    except (InputError, OSError, ValueError):
        return set()
    return {c for r in rules for c, use in _column_uses(r.node) if use == "numeric"}


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


def formatted_note(count: int) -> str:
    """Why a column of numbers reads as text, when ``count`` of its values say why."""
    if not count:
        return ""
    return (
        f" ({count} of its values are numbers written with a decimal comma, thousands "
        "separators or a percent sign: write them with a decimal point and no separators, "
        "1234.56)"
    )


def published_decimals(types: Mapping[str, str], keys: Sequence[Key]) -> dict[str, int | None]:
    """The decimals each column is published with, where it has them: a numeric key's
    precision, 0 for a column of integers published unchanged."""
    decimals: dict[str, int | None] = {c: 0 for c, t in types.items() if is_integer_type(t)}
    decimals.update({k.name: k.decimals for k in keys if k.kind == "numeric"})
    return decimals


def load_edit_rules(
    spec: ReleaseSpec,
    types: Mapping[str, str],
    formatted: Mapping[str, int] | None = None,
    decimals: Mapping[str, int | None] | None = None,
) -> tuple[list[Rule], FeasibilityReport]:
    """Parse and check the spec's edit rules against the source's columns.

    Parameters
    ----------
    spec : ReleaseSpec
    types : mapping column -> DuckDB type
        Every column of the source (``profile_source(...)["types"]``).
    formatted : mapping column -> count, optional
        Values written as numbers with a decimal comma or separators, for text columns
        (``SourceProfile.formatted_numbers``): named when such a column is used as a number.
    decimals : mapping column -> int or None, optional
        The decimals columns are published with (:func:`published_decimals`): a strict rule
        over them must leave room for a value on their grid.

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
                note = formatted_note((formatted or {}).get(column, 0))
                raise RuleError(
                    f"column {column!r} is {types[column]}{note}, but the rule uses it as a number",
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
    feasibility = check_feasible(rules, numeric_columns, decimals)
    _check_maskable(spec, rules)
    return rules, feasibility


def _check_maskable(spec: ReleaseSpec, rules: Sequence[Rule]) -> None:
    """Linear error rules must be keepable by masking: all their columns masked together or
    all released unchanged."""
    qis = set(spec.quasi_identifiers)
    kept = set(spec.keep) | set(spec.sensitive)
    if spec.weight_column and spec.weight_column not in qis:
        kept.add(spec.weight_column)  # published unchanged
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


# --- keys: kinds, orders, precision, recoding, weights (mixed keys) ---------------------------


def _core_recoding(spec: ReleaseSpec, name: str, rule: RecodeSpec) -> Recoding:
    if rule.bins is not None:
        labels = tuple(rule.labels) if rule.labels is not None else None
        return Recoding("bins", edges=tuple(rule.bins), labels=labels, closed=rule.closed)
    if rule.map is not None:
        return Recoding("map", mapping=dict(rule.map))
    if isinstance(rule.hierarchy, list):
        table = hierarchy_from_rows(rule.hierarchy, f"recode.{name}.hierarchy")
    else:
        assert rule.hierarchy is not None
        table = load_hierarchy(spec.path(rule.hierarchy))
    return Recoding("hierarchy", hierarchy=table, level=rule.level)


def check_missing_tokens(spec: ReleaseSpec) -> None:
    """A missing-value token must not also be a category the spec declares (in a key's
    ``order``, or named by a recoding: map levels, bin labels, hierarchy cells, inline or in
    its file): it would be read as missing and the category lost. Raises ``InputError``
    (MISSING_TOKEN)."""
    tokens = set(spec.missing_values or ())
    if not tokens:
        return
    declared = {name: {str(v) for v in decl.order or []} for name, decl in spec.key_types.items()}
    for name, rule in spec.recode.items():
        levels = recoded_levels(_core_recoding(spec, name, rule))
        declared[name] = declared.get(name, set()) | levels
    for name, levels in declared.items():
        clash = sorted(tokens & levels)
        if clash:
            raise InputError(
                f"missing_values {clash} are also categories of key {name} (its `order` or "
                "recoding): a token cannot be both missing and a category; remove it from one",
                code=Reason.MISSING_TOKEN,
                field=str(name),
            )


def resolve_keys(spec: ReleaseSpec, profile: SourceProfile, data: pa.Table) -> list[Key]:
    """Every quasi-identifier's kind, order, precision and recoding, from the file's column
    types and the spec's declarations; the recodings and orders are checked on the data.

    Kinds by default: numbers (signed or unsigned integers, floats, decimals) are numeric;
    text, booleans and enums nominal; a column of nothing but missing values nominal. A
    declared ``type`` overrides; dates and times are keys only when declared (ordinal: in
    time order). A key is read as what it is, or refused: text any of whose values reads as a
    number (``0444``, ``0x0007``, a 23-digit integer, ``inf``, ``N/A`` among numbers, Parquet
    digit strings) is not taken for categories unless declared so.

    Raises
    ------
    InputError
        COLUMN_TYPE: a type no key can have (lists, blobs...), text declared numeric, an
        undeclared text column any of whose values reads as a number (naming the line or row
        of the first value to fix), an undeclared date or time, an ordinal text key without
        ``order``, a recoding of the wrong kind; SPEC_CONTRADICTION:
        values outside a declared order; RECODING: a recoding naming levels the column lacks.
        Messages name columns and counts, never a value of the data.
    """
    src = spec.source
    keys: list[Key] = []
    for name in spec.quasi_identifiers:
        decl = spec.key_types.get(name)
        dtype = profile.types[name]
        detected = key_kind(dtype)
        if detected is None:
            raise InputError(
                f"{src}: quasi-identifier {name} has type {dtype}, which cannot be a key; "
                "convert the column to numbers or text in the source",
                code=Reason.COLUMN_TYPE,
                field=str(name),
            )
        declared = decl.type if decl is not None else None
        present = profile.rows - profile.missing.get(name, 0)
        if present == 0 and profile.rows:  # every value a declared token: its text type
            detected = "missing"  # says nothing, e.g. a column of '?' declared numeric
        numeric_text = profile.numeric_text.get(name, 0)
        formatted = profile.formatted_numbers.get(name, 0)
        if detected == "nominal" and declared is None and formatted >= 0.5 * present > 0:
            # 12,5 or 1.234 or 12 % read as text: the key would be masked as categories and
            # its unsuppressed values published exactly
            raise InputError(
                f"{src}: quasi-identifier {name} reads as text, but {formatted} of its "
                f"{present} values are numbers written with a decimal comma, thousands "
                "separators or a percent sign; write them with a decimal point and no "
                f"separators (1234.56) in the source, or declare it categorical ({{name: "
                f"{name}, type: nominal}})",
                code=Reason.COLUMN_TYPE,
                field=name,
            )
        text = dtype == "VARCHAR" or dtype.startswith("ENUM")
        if text and present and (declared == "numeric" or (declared is None and numeric_text)):
            _refuse_numbers_as_text(spec, data, name, numeric_text, present)
        if detected == "ordinal" and declared is None:
            # a date or time masked as categories publishes its unsuppressed values exactly
            raise InputError(
                f"{src}: quasi-identifier {name} holds dates or times ({dtype}); declare it "
                f"ordinal ({{name: {name}, type: ordinal}}) to mask it as categories in time "
                "order, or write it as numbers in the source (a year, days since a date) to "
                "mask it as a number",
                code=Reason.COLUMN_TYPE,
                field=str(name),
            )
        if declared == "numeric" and detected not in ("numeric", "missing"):
            raise InputError(
                f"{src}: quasi-identifier {name} is declared numeric but reads as {dtype}; "
                "fix its values (or declare its missing-value tokens) or declare it nominal",
                code=Reason.COLUMN_TYPE,
                field=str(name),
            )
        kind = declared or ("nominal" if detected == "missing" else detected)
        column = data.column(name).to_pandas()
        rule = spec.recode.get(name)
        recoding = _core_recoding(spec, name, rule) if rule is not None else None
        if recoding is not None:
            if (recoding.kind == "bins") != (kind == "numeric"):
                want = "numeric" if recoding.kind == "bins" else "categorical"
                raise InputError(
                    f"recode.{name}: {recoding.kind} apply to {want} keys and {name} is {kind}; "
                    f"use bins for numbers, map or hierarchy for categories (or declare its type)",
                    code=Reason.COLUMN_TYPE,
                    field=f"recode.{name}",
                )
            column = recode(name, column, recoding).values
        order = None
        if kind == "ordinal":
            if decl is not None and decl.order is not None:
                order = tuple(str(v) for v in decl.order)
                levels = {v for v in as_text(column) if v is not None}
                outside = len(levels - set(order))
                if outside:
                    raise InputError(
                        f"{src}: {outside} categor(y/ies) of ordinal key {name} are not in its "
                        "`order`; list every category from lowest to highest",
                        code=Reason.SPEC_CONTRADICTION,
                        field=str(name),
                    )
            elif detected in ("numeric", "ordinal") and recoding is None:
                values = pd.Series(column).dropna().unique()
                order = tuple(as_text(pd.Series(np.sort(values))))
            else:
                raise InputError(
                    f"quasi-identifier {name} is ordinal: give its categories from lowest to "
                    f"highest, {{name: {name}, type: ordinal, order: [...]}}",
                    code=Reason.COLUMN_TYPE,
                    field=str(name),
                )
        precision = decl.precision if decl is not None else None
        integer = kind == "numeric" and is_integer_type(dtype)
        if kind == "numeric" and precision is None and integer:
            precision = 0
        keys.append(
            Key(
                name=name,
                kind=kind,  # type: ignore[arg-type]
                order=order,
                decimals=precision if kind == "numeric" else None,
                integer=integer,
                recoding=recoding,
            )
        )
    return keys


def _refuse_numbers_as_text(
    spec: ReleaseSpec, data: pa.Table, name: str, numbers: int, present: int
) -> None:
    """Refuse a text key whose values read as numbers (``numbers`` of ``present``), or that
    is declared numeric: as text it would be masked as categories and its unsuppressed
    values published exactly. The message names the line (CSV) or row (Parquet) of the
    first value to fix, never the value: where most values are numbers, the first that is
    not a number written plainly (a missing-value token, a zero-padded, hex or over-long
    number, ``inf``); where few are, the first that reads as a number."""
    src = spec.source
    categorical = (
        f"declare it categorical ({{name: {name}, type: nominal}}, or type: ordinal with its order)"
    )
    if numbers * 2 >= present:
        index = first_record(data, name, f"NOT {plain_number('v')}")
        if index is None:  # every value a plain number, stored as text (Parquet strings)
            where = record_place(spec.source_path, first_record(data, name, "true") or 0)
            message = (
                f"quasi-identifier {name} holds numbers stored as text (from {where}); store "
                f"them as numbers in the source, or {categorical}"
            )
        else:
            message = (
                f"quasi-identifier {name} reads as text, but {numbers} of its {present} values "
                f"are numbers; {record_place(spec.source_path, index)} holds the first that is "
                "not a plain number (a missing-value token, a zero-padded, hex or over-long "
                "number, digits other than 0-9, inf or nan): declare the tokens in "
                "`missing_values:`, rewrite those values as plain numbers, or "
                f"{categorical}"
            )
    else:
        index = first_record(data, name, looks_like_a_number("v"))
        message = (
            f"quasi-identifier {name} is declared numeric but reads as text"
            if numbers == 0
            else f"quasi-identifier {name} reads as text, but {numbers} of its {present} values "
            f"read as numbers (the first on {record_place(spec.source_path, index or 0)})"
        )
        message += f"; {categorical} if it is, or rewrite the column as numbers"
    raise InputError(f"{src}: {message}", code=Reason.COLUMN_TYPE, field=str(name))


_LOSS_FAMILIES = ("max_information_loss", "max_generic", "max_pil", "max_cluster", "min_cluster")
_LOSS_GATES = {g for g in GATES if g.startswith(_LOSS_FAMILIES)} | {
    "max_record_linkage",
    "max_interval_disclosure",
}


def check_keys_fit_method(spec: ReleaseSpec, keys: Sequence[Key], rows: int = 0) -> None:
    """The method, blocks and checks can handle the keys' kinds (after recoding: binned
    numeric keys are categorical). Raises ``InputError`` (SPEC_CONTRADICTION)."""
    binned = {k.name for k in keys if k.recoding is not None and k.recoding.kind == "bins"}
    numeric = [k.name for k in keys if k.kind == "numeric" and k.name not in binned]
    categorical = [k.name for k in keys if k.kind != "numeric" or k.name in binned]
    name = spec.method.name
    own_keys = get_method(name).mask_keys is not None

    def refuse(message: str) -> None:
        raise InputError(message, code=Reason.SPEC_CONTRADICTION)

    if name == "local_suppression" and numeric:
        refuse(
            f"method local_suppression masks categorical keys, and {', '.join(numeric)} are "
            "numeric: bin them with `recode:` or choose mdav, ps, fuzzy or heterogeneous"
        )
    if categorical and not own_keys:
        if not numeric:
            refuse(
                f"every key is categorical and method {name} masks numeric keys; use "
                "`method: {name: local_suppression, k: ...}` (or heterogeneous)"
            )
        if name == "box":
            refuse(
                "method box masks numeric keys and this release has categorical ones "
                f"({', '.join(categorical)}); use mdav, ps, fuzzy or heterogeneous, which "
                "handle them"
            )
        if spec.blocks:
            refuse("blocks split numeric keys; with categorical keys remove `blocks:`")
        guarantee = getattr(spec.method, "guarantee", None)
        if guarantee == "probabilistic_k_anonymity":
            refuse(
                f"with categorical keys, {name} needs a crisp guarantee inside each stratum; "
                "set `guarantee: k_anonymity` or `both`"
            )
    if name == "heterogeneous" and getattr(spec.method, "cell_size", None) is not None:
        ordered = [k for k in keys if k.kind == "ordinal" or k.name in binned]
        if not numeric and not ordered:
            refuse(
                "cell_size cuts cells along numeric or ordinal keys and every key is nominal; "
                "remove cell_size (or use local_suppression for categorical keys)"
            )
    if name == "univariate":  # one numeric variable per mask call (per block with blocks)
        groups = [list(b) for b in spec.blocks] if spec.blocks else [numeric]
        wide = [g for g in groups if len([c for c in g if c in numeric]) > 1]
        if wide:
            refuse(
                f"method univariate microaggregates one variable and {', '.join(wide[0])} "
                "would be masked together; give each numeric key its own block (blocks: "
                "[[a], [b], ...]) or use mdav for several"
            )
    if name == "box":  # what the mask step refused only after the run had started
        if spec.blocks:
            refuse(
                "method box publishes one box per record over every quasi-identifier (its "
                "box_id, weight and interval estimates); remove `blocks:`"
            )
        check_box_columns(spec.method, spec.quasi_identifiers)
        box_columns = {f"{q}_{end}" for q in spec.quasi_identifiers for end in ("lo", "hi")}
        box_columns |= {"box_id", "weight"}
        passed = [*spec.keep, *spec.sensitive]
        if spec.weight_column and spec.weight_column not in spec.quasi_identifiers:
            passed.append(spec.weight_column)
        clash = [c for c in passed if c in box_columns]
        if clash:
            raise InputError(
                f"column {clash[0]} is published unchanged and method box publishes a column "
                "of that name (<key>_lo, <key>_hi, box_id, weight), so one would overwrite the "
                f"other; rename {clash[0]} in the source",
                code=Reason.SPEC_CONTRADICTION,
                field=str(clash[0]),
            )
    cell_size = getattr(spec.method, "cell_size", None)
    if cell_size is not None:
        try:
            check_cell_size(cell_size, spec.method.k)
        except InputError as e:
            raise InputError(str(e), code=Reason.SPEC_FIELD, field="method.cell_size") from None
    if spec.suppression.algorithm == "exact" and name == "local_suppression":
        bound = rows * 2 ** len(categorical)
        if bound > EXACT_MAX_VARIABLES:
            refuse(
                f"suppression.algorithm exact would need up to {bound} variables for "
                f"{rows} records and {len(categorical)} keys (at most {EXACT_MAX_VARIABLES}); "
                "use algorithm greedy"
            )
    if not numeric:
        wrong = sorted(set(spec.checks) & _LOSS_GATES)
        if wrong:
            refuse(f"check(s) {wrong} measure numeric keys and this release has none; remove them")


def check_box_data(spec: ReleaseSpec, data: pa.Table) -> None:
    """Method ``box``: the values it cannot release (magnitudes, a key with fewer than ``l``
    distinct values) are refused here, before the run starts, rather than in the mask step
    (see :func:`~sdcflow.methods.box.check_box_values`). Keys are numeric and complete
    by then (:func:`check_keys_fit_method`, :func:`check_missing_numbers_fit_method`)."""
    if spec.method.name != "box" or not data.num_rows:
        return
    cols = list(spec.quasi_identifiers)
    check_box_values(_numbers(data, cols), cols, spec.method)


def check_fuzzy_map(spec: ReleaseSpec, data: pa.Table, profile: Any) -> None:
    """Preflight: every mapped column is numeric, complete, finite and inside its domain.

    ``profile``: the preflight's ``SourceProfile`` (``types``, ``missing``, ``nonfinite``).
    """
    for column, params in spec.fuzzy_map.items():
        kind = profile.types[column]
        if not is_numeric_type(kind):
            raise InputError(
                f"{spec.source}: fuzzy_map column {column} ({kind}) is not numeric; fuzzy "
                "mapping needs numbers (clean the column or remove it from fuzzy_map)",
                code=Reason.COLUMN_TYPE,
            )
        bad = profile.missing.get(column, 0) + profile.nonfinite.get(column, 0)
        if bad:
            raise InputError(
                f"{spec.source}: fuzzy_map column {column} has {bad} missing or non-finite "
                "value(s); impute or drop those records before release",
                code=Reason.VALUES_MISSING,
            )
        values = pc.cast(data.column(column), pa.float64()).to_numpy(zero_copy_only=False)
        params.build(values, column=column)  # DataError when values leave the domain


def check_fuzzy_data(spec: ReleaseSpec, data: pa.Table, keys: Sequence[Key]) -> None:
    """Methods ``fuzzy`` and ``constrained_fuzzy`` work in standardized units: a numeric key
    whose other values they would lose to the rounding of its largest ones (one turnover of
    1e40 among thousands) is refused here, before the run starts
    (:func:`~sdcflow.core.validation.check_resolution`), not in the mask step."""
    if spec.method.name not in ("fuzzy", "constrained_fuzzy") or not data.num_rows:
        return
    cols = numeric_keys(keys)
    if not cols:
        return
    X = _numbers(data, cols)
    check_resolution(X[~np.isnan(X).any(axis=1)], cols, what="fuzzy microaggregation")


def _numbers(data: pa.Table, cols: Sequence[str]) -> np.ndarray:
    """The ``cols`` of ``data`` as floats, missing as NaN. Shape (n, len(cols))."""
    return np.column_stack(
        [data.column(c).to_pandas().to_numpy(dtype=np.float64, na_value=np.nan) for c in cols]
    )


def check_missing_numbers_fit_method(
    spec: ReleaseSpec, keys: Sequence[Key], missing: Mapping[str, int]
) -> None:
    """Numeric keys with missing values: the release groups those records with MDAV-generic
    on the values they have (``mixed.mask_keys``; with categorical keys, in every stratum
    where a number is missing; within spatial cells with mdav's ``cell_size``), whatever
    the method, so a method or an option that would not be applied is refused rather than
    named in the manifest and the report (``box`` published points, not boxes). Raises
    ``InputError`` (SPEC_CONTRADICTION)."""
    binned = {k.name for k in keys if k.recoding is not None and k.recoding.kind == "bins"}
    numeric = [k.name for k in keys if k.kind == "numeric" and k.name not in binned]
    if get_method(spec.method.name).mask_keys is not None:
        return  # a method that masks the keys itself (heterogeneous)
    gaps = [f"{c} ({missing[c]} missing)" for c in numeric if missing.get(c)]
    if not gaps:
        return
    method = spec.method
    unused = [
        option
        for option, off in (("refine", None), ("standardize", True))
        if getattr(method, option, off) != off
    ]
    if method.name == "mdav" and not unused:
        return
    what = f"method {method.name}" if method.name != "mdav" else f"mdav's {', '.join(unused)}"
    raise InputError(
        f"numeric key(s) {', '.join(gaps)} have missing values, which sdcflow masks with "
        f"MDAV-generic on the values each record has; {what} would not be applied: use "
        "`method: {name: mdav, k: ...}` (with cell_size: N for a large file) without those "
        "options, or heterogeneous",
        code=Reason.SPEC_CONTRADICTION,
    )


def check_weights(spec: ReleaseSpec, profile: SourceProfile, data: pa.Table) -> None:
    """The weight column is numeric, complete and positive, with a finite total. Raises
    ``InputError`` (WEIGHTS)."""
    w = spec.weight_column
    if w is None:
        return
    if not is_numeric_type(profile.types[w]):
        raise InputError(
            f"{spec.source}: weight_column {w} is {profile.types[w]}"
            f"{' (a duration)' if profile.types[w] == 'INTERVAL' else ''}, not numbers"
            f"{formatted_note(profile.formatted_numbers.get(w, 0))}; give sampling weights as "
            "positive numbers",
            code=Reason.WEIGHTS,
            field=str(w),
        )
    inexact = profile.inexact_decimals.get(w, 0)
    if inexact and w not in set(spec.quasi_identifiers):
        # Published unchanged (as keep and sensitive columns): not as the nearest floats.
        raise InputError(
            f"{spec.source}: weight_column {w} is published unchanged but {inexact} of its "
            "decimals have more digits than a float holds (about 15); round them in the source",
            code=Reason.WEIGHTS,
            field=str(w),
        )
    values = data.column(w).to_pandas().to_numpy(dtype=np.float64, na_value=np.nan)
    missing = int(np.isnan(values).sum())
    bad = int((~np.isnan(values) & ~(np.isfinite(values) & (values > 0))).sum())
    if missing or bad:
        raise InputError(
            f"{spec.source}: weight_column {w} has {missing} missing and {bad} non-positive or "
            "infinite value(s); every record needs a positive sampling weight",
            code=Reason.WEIGHTS,
            field=str(w),
        )
    with np.errstate(over="ignore"):  # an infinite total is what is tested
        total = values.sum()
    if not np.isfinite(total):
        # Each weight is finite but their total is not: F (a sum of weights) would overflow.
        raise InputError(
            f"{spec.source}: weight_column {w} adds up to more than the largest number a "
            "float holds, so the population estimates (sums of weights) would be infinite; "
            "give sampling weights on a smaller scale",
            code=Reason.WEIGHTS,
            field=str(w),
        )
