"""The quasi-identifiers resolved from the file and the spec: each key's kind (numeric,
nominal, ordinal), order, precision and recoding, with numbers written as text refused, and
the missing-value tokens checked against the categories the spec declares."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from sdcflow.errors import InputError, Reason
from sdcflow.methods.keys import Key, as_text
from sdcflow.methods.recoding import (
    NUMERIC_KINDS,
    Recoding,
    hierarchy_from_rows,
    load_hierarchy,
    recode,
    recoded_levels,
)
from sdcflow.preflight.source import SourceProfile
from sdcflow.spec.schema import RecodeSpec, ReleaseSpec
from sdcflow.warehouse.sources import (
    first_record,
    is_integer_type,
    key_kind,
    looks_like_a_number,
    plain_number,
    record_place,
)


def binned_keys(spec: ReleaseSpec) -> list[str]:
    """The keys ``recode:`` bins: published as bin labels, not numbers."""
    return [name for name, rule in spec.recode.items() if rule.bins is not None]


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


def _core_recoding(spec: ReleaseSpec, name: str, rule: RecodeSpec) -> Recoding:
    if rule.bins is not None:
        labels = tuple(rule.labels) if rule.labels is not None else None
        return Recoding("bins", edges=tuple(rule.bins), labels=labels, closed=rule.closed)
    if rule.map is not None:
        return Recoding("map", mapping=dict(rule.map))
    if rule.top is not None or rule.bottom is not None:
        return Recoding(
            "top_bottom",
            top=rule.top,
            bottom=rule.bottom,
            top_value=rule.top_value,
            bottom_value=rule.bottom_value,
        )
    if isinstance(rule.hierarchy, list):
        table = hierarchy_from_rows(rule.hierarchy, f"recode.{name}.hierarchy")
    else:
        assert rule.hierarchy is not None
        table = load_hierarchy(spec.path(rule.hierarchy))
    return Recoding("hierarchy", hierarchy=table, level=rule.level)


def resolve_keys(spec: ReleaseSpec, profile: SourceProfile, data: Any) -> list[Key]:
    """Every quasi-identifier's kind, order, precision and recoding, from the file's column
    types and the spec's declarations; the recodings and orders are checked on the data.
    ``data``: the source (an Arrow table or a :class:`~sdcflow.warehouse.sources.SourceData`,
    of which a key's column is read only when it is recoded or ordinal).

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
        rule = spec.recode.get(name)
        recoding = _core_recoding(spec, name, rule) if rule is not None else None
        # the key's values are read only where a recoding or an order needs them (one
        # column: a key masked as it is needs none)
        needs_values = recoding is not None or kind == "ordinal"
        column = data.column(name).to_pandas() if needs_values else None
        if recoding is not None:
            if (recoding.kind in NUMERIC_KINDS) != (kind == "numeric"):
                want = "numeric" if recoding.kind in NUMERIC_KINDS else "categorical"
                raise InputError(
                    f"recode.{name}: {recoding.kind} apply to {want} keys and {name} is {kind}; "
                    "use bins or top/bottom for numbers, map or hierarchy for categories (or "
                    "declare its type)",
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
    spec: ReleaseSpec, data: Any, name: str, numbers: int, present: int
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
