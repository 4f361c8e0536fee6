"""The source as the preflight sees it: its profile (types and counts, never values) and
the checks of the columns the spec names (present, not reserved, writable as published,
complete and finite keys, weights, fuzzy-mapped columns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sdcflow.errors import InputError, Reason
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.warehouse.sources import (
    csv_unwritable,
    first_record,
    is_numeric_type,
    record_place,
)
from sdcflow.warehouse.warehouse import ROW_ID


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


def check_columns(spec: ReleaseSpec, profile: SourceProfile, data: Any = None) -> None:
    named = [*spec.quasi_identifiers, *spec.keep, *spec.sensitive]
    if spec.id_column:
        named.append(spec.id_column)
    if spec.weight_column:
        named.append(spec.weight_column)
    if spec.household_column:
        named.append(spec.household_column)
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


def check_fuzzy_map(spec: ReleaseSpec, data: Any, profile: Any) -> None:
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


def check_weights(spec: ReleaseSpec, profile: SourceProfile, data: Any) -> None:
    """The weight column is numeric, complete and positive, with a finite total. Raises
    ``InputError`` (WEIGHTS). ``data``: an Arrow table or a
    :class:`~sdcflow.warehouse.sources.SourceData`, of which the weight column alone is read
    (8 bytes a record: its total is numpy's, whose overflow is what is checked)."""
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


def formatted_note(count: int) -> str:
    """Why a column of numbers reads as text, when ``count`` of its values say why."""
    if not count:
        return ""
    return (
        f" ({count} of its values are numbers written with a decimal comma, thousands "
        "separators or a percent sign: write them with a decimal point and no separators, "
        "1234.56)"
    )
