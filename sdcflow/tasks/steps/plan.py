"""Checks on the inputs of a release, before any flow run or warehouse write.

Every problem a user can fix (missing file, unknown column, non-numeric or missing values,
k larger than the file...) is reported here as one ``InputError`` naming the field, file or
column and the fix, so that the command line exits 2 with one line and nothing is written.
"""

from __future__ import annotations

from typing import Any

from sdcflow.errors import InputError, Reason
from sdcflow.spec import ReleaseSpec
from sdcflow.warehouse.warehouse import ROW_ID, is_numeric_type, profile_source


def preflight(spec: ReleaseSpec) -> dict[str, Any]:
    """Validate the source against the spec; return its profile (counts and types only)."""
    named = [*spec.quasi_identifiers, *spec.keep, *spec.sensitive]
    if spec.id_column:
        named.append(spec.id_column)
    profile = profile_source(spec.source_path, named)
    types = profile["types"]
    src = spec.source
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
    missing = {c: m for c, m in profile["missing"].items() if m and c in spec.quasi_identifiers}
    infinite = {c: m for c, m in profile["nonfinite"].items() if m and c in spec.quasi_identifiers}
    if infinite:
        shown = ", ".join(f"{c} ({m} infinite or NaN)" for c, m in infinite.items())
        raise InputError(
            f"{src}: quasi-identifier(s) {shown}; replace or drop those records before release",
            code=Reason.VALUES_NONFINITE,
        )
    if missing:
        shown = ", ".join(f"{c} ({m} missing)" for c, m in missing.items())
        raise InputError(
            f"{src}: quasi-identifier(s) {shown} have missing values; impute or drop those "
            "records before release",
            code=Reason.VALUES_MISSING,
        )
    k = getattr(spec.method, "k", None)
    if k is not None and k > profile["rows"]:
        raise InputError(
            f"method.k = {k} is larger than the number of records in {src} "
            f"({profile['rows']}); lower k or release more records",
            code=Reason.TOO_FEW_RECORDS,
        )
    if spec.edits or spec.rules_file is not None:
        # Parse, type-check and feasibility-check the edit rules (RuleError: exit 2).
        from sdcflow.tasks.steps.edits import load_edit_rules

        profile["edit_rules"] = len(load_edit_rules(spec, types))
    return profile
