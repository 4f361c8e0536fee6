"""The preflight of a release: everything that can be checked before a flow run exists.

:func:`plan_release` opens the source (a CSV or Parquet file is scanned by DuckDB, its
records never held here; the ingest step reads them with the same reader), profiles it
(types, counts of missing and non-finite values; counts only, never values),
parses and type-checks the edit rules, checks that some record can satisfy them and that
masking can keep them, and compiles the linear ones. Every problem a user can fix is one
:class:`~sdcflow.errors.InputError` with a reason code, so the command line exits 2 with one
line and nothing is written. The resulting :class:`ReleasePlan` is handed to the flow, which
does not read or parse any of it again.

This module assembles the plan; the checks live beside it, one concern each: the source
(:mod:`~sdcflow.preflight.source`), the keys (:mod:`~sdcflow.preflight.keys`), the edit
rules (:mod:`~sdcflow.preflight.rules`), whether the method fits
(:mod:`~sdcflow.preflight.method_fit`, which asks the method and gate registries), where the
run writes (:mod:`~sdcflow.preflight.destinations`) and the runner
(:mod:`~sdcflow.preflight.runner`).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.expectations.compile import compile_rule
from sdcflow.expectations.feasibility import FeasibilityReport
from sdcflow.expectations.rules import (
    Rule,
)
from sdcflow.limits import MAX_SOURCE_COLUMNS, check_count
from sdcflow.methods.keys import Key, numeric_keys
from sdcflow.preflight.destinations import check_destinations
from sdcflow.preflight.keys import binned_keys, check_missing_tokens, resolve_keys
from sdcflow.preflight.method_fit import (
    check_contradictions,
    check_data_fits_method,
    check_keys_fit_method,
    check_missing_numbers_fit_method,
)
from sdcflow.preflight.rules import (
    check_rules_checkable,
    check_undeclared_relations,
    linear_constraints,
    load_edit_rules,
    published_decimals,
    rule_numbers,
)
from sdcflow.preflight.runner import check_cluster, check_runner
from sdcflow.preflight.source import SourceProfile, check_columns, check_fuzzy_map, check_weights
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.warehouse.edits import check_evaluable
from sdcflow.warehouse.sources import (
    SourceData,
    inexact_csv_numbers,
    open_source_hashed,
    profile_table,
)


class ReleasePlan(BaseModel):
    """What the preflight established, handed to the flow so nothing is read twice.

    Attributes
    ----------
    spec : the validated release spec.
    profile : the source's counts and types.
    data : the source as the preflight decided to read it
        (:class:`~sdcflow.warehouse.sources.SourceData`: its reader, types and record
        count; the records themselves only for a statistical file); ingest reads it into
        the warehouse.
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
    data: SourceData
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
        check_columns(spec, self.profile)
        check_keys_fit_method(spec, self.resolved_keys, self.profile.rows)
        check_missing_numbers_fit_method(spec, self.resolved_keys, self.profile.missing)
        check_data_fits_method(spec, self.data, self.resolved_keys)
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
    if spec.household_column and spec.household_column not in named:
        named.append(spec.household_column)
    # an ambiguous date column is refused only if the release uses it (a rule may use any)
    used = None if spec.edits or spec.rules_file is not None else named
    # kept and sensitive columns are published as the file writes them; not a key (masked
    # anyway), nor one given noise (fuzzy_map), nor the weight or a column an edit rule
    # uses as a number: those are computed with, so they stay numbers even where the file
    # writes one otherwise than data.csv will (1.50 is published 1.5)
    as_written = set(spec.keep) | set(spec.sensitive)
    as_written -= {*spec.quasi_identifiers, spec.weight_column, *spec.fuzzy_map}
    as_written -= rule_numbers(spec)
    data, source_sha256 = open_source_hashed(
        spec.source_path, spec.missing_values, used, as_written
    )
    check_count(
        data.num_columns, MAX_SOURCE_COLUMNS, where=str(spec.source), what="columns in the file"
    )
    profile = SourceProfile(**profile_table(data, named))
    # a CSV's numbers are read as floats: a kept one with more digits would be published rounded
    unchanged = [c for c in (*spec.keep, *spec.sensitive) if profile.types.get(c) == "DOUBLE"]
    profile.inexact_decimals.update(inexact_csv_numbers(spec.source_path, unchanged))
    check_columns(spec, profile, data)
    check_fuzzy_map(spec, data, profile)
    check_missing_tokens(spec)
    keys = resolve_keys(spec, profile, data)
    check_keys_fit_method(spec, keys, profile.rows)
    check_missing_numbers_fit_method(spec, keys, profile.missing)
    check_data_fits_method(spec, data, keys)
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
    check_undeclared_relations(spec, data, keys, constraints, profile.missing)
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


__all__ = [
    "ReleasePlan",
    "SourceProfile",
    "binned_keys",
    "check_keys_fit_method",
    "linear_constraints",
    "load_edit_rules",
    "plan_release",
    "resolve_keys",
]
