"""SPSS, Stata and SAS data files as a release's source, read with pyreadstat (the ``stats``
extra) into the Arrow table :func:`~sdcflow.warehouse.sources.read_source` returns.

A column with value labels (``1 = "North"``) is read as its labels, text: the category
levels an office publishes and an intruder knows, never the codes behind them. A code the
labels do not name is read as the code's own text (``9``), so no record loses its value.
Numbers stored as integers (a Stata integer type, an SPSS ``F<w>.0`` format) with integral
values are integers; other numbers are floats; system- and user-defined missing values are
missing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from sdcflow.errors import InputError, Reason

#: The file suffixes read here, and what each is (for messages).
FORMATS = {
    ".sav": "SPSS",
    ".zsav": "SPSS",
    ".dta": "Stata",
    ".sas7bdat": "SAS",
}
_INTEGER_TYPES = {"int8", "int16", "int32", "int64"}
_SPSS_INTEGER = re.compile(r"^[A-Z]+\d+\.0$")  # F8.0, N5.0 (no decimals)


def _reader(suffix: str) -> Callable[..., Any]:
    try:
        import pyreadstat
    except ImportError as e:
        raise InputError(
            f"reading {FORMATS[suffix]} files ({suffix}) needs pyreadstat, which is not "
            "installed here: pip install 'sdcflow[stats]', or export the file as CSV",
            code=Reason.SOURCE_FORMAT,
        ) from e
    if suffix in (".sav", ".zsav"):
        return pyreadstat.read_sav
    return pyreadstat.read_dta if suffix == ".dta" else pyreadstat.read_sas7bdat


def read_statistical(source: Path) -> pa.Table:
    """The records of an SPSS, Stata or SAS file, value labels applied.

    Raises ``InputError`` (reason ``source-format``) when pyreadstat is missing or cannot
    read the file (it is not such a file, or it is damaged)."""
    suffix = source.suffix.lower()
    read = _reader(suffix)
    try:
        frame, meta = read(str(source))
    except Exception as e:  # pyreadstat's ReadstatError, PyreadstatError, OSError...
        first = (str(e).splitlines() or [type(e).__name__])[0][:200]
        raise InputError(
            f"cannot read {source}: not a valid {FORMATS[suffix]} file ({first})",
            code=Reason.SOURCE_FORMAT,
        ) from e
    labels: dict[str, dict[Any, str]] = meta.variable_value_labels or {}
    kinds: dict[str, str] = meta.readstat_variable_types or {}
    formats: dict[str, str] = meta.original_variable_types or {}
    columns: dict[str, pa.Array] = {}
    for name in frame.columns:
        values = frame[name]
        if name in labels:
            columns[name] = _labelled(values, labels[name])
        elif kinds.get(name) in _INTEGER_TYPES or _SPSS_INTEGER.match(formats.get(name) or ""):
            columns[name] = _integers(values)
        else:
            columns[name] = _plain(values)
    try:
        return pa.table(columns)
    except (pa.ArrowException, ValueError) as e:  # pragma: no cover - a column of mixed types
        raise InputError(f"cannot read {source}: {str(e)[:200]}", code=Reason.SOURCE_FORMAT) from e


def _code_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _labelled(values: pd.Series, labels: dict[Any, str]) -> pa.Array:
    """The labels of the codes; a code without a label as its text; missing stays missing."""
    by_code = {_code_text(code): str(label) for code, label in labels.items()}
    out = [
        None if _missing(v) else by_code.get(_code_text(v), _code_text(v)) for v in values.tolist()
    ]
    return pa.array(out, type=pa.string())


def _integers(values: pd.Series) -> pa.Array:
    numbers = pd.to_numeric(values, errors="coerce")
    present = numbers.dropna()
    if len(present) and not (present == present.round()).all():
        return pa.array(numbers, type=pa.float64(), from_pandas=True)
    return pa.array(numbers.astype("Int64"), type=pa.int64(), from_pandas=True)


def _plain(values: pd.Series) -> pa.Array:
    if pd.api.types.is_string_dtype(values.dtype) or values.dtype == object:
        # an empty string is SPSS's and Stata's blank, read as missing as an empty CSV cell
        text = [None if _missing(v) or v == "" else v for v in values.tolist()]
        try:
            return pa.array(text)
        except (pa.ArrowException, ValueError):
            return pa.array([None if v is None else str(v) for v in text], type=pa.string())
    return pa.array(values, from_pandas=True)
