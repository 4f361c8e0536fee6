"""The quasi-identifiers of a release as the methods see them: name, kind, order, precision.

A key is **numeric** (masked by a numeric method, published as numbers), **nominal**
(categories without order: sex, race) or **ordinal** (categories in a declared order:
education levels, age bands). The preflight resolves every key's kind from the file's column
types and the spec's declarations (``sdcflow.preflight.keys``); the methods receive
:class:`Key` objects and never look at the spec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from sdcflow.errors import ParameterError
from sdcflow.methods.recoding import Recoding

KeyKind = Literal["numeric", "nominal", "ordinal"]


@dataclass(frozen=True)
class Key:
    """One quasi-identifier.

    Attributes
    ----------
    name : str
    kind : {"numeric", "nominal", "ordinal"}
    order : tuple of str or None
        Ordinal keys: the categories from lowest to highest (as text).
    decimals : int or None
        Numeric keys: publication precision in decimal places (0: integers; negative: tens,
        hundreds...); None publishes full precision.
    integer : bool
        Numeric keys stored as integers in the source: published with an integer type.
    recoding : Recoding or None
        Global recoding applied before masking.
    """

    name: str
    kind: KeyKind
    order: tuple[str, ...] | None = None
    decimals: int | None = None
    integer: bool = False
    recoding: Recoding | None = None

    @property
    def categorical(self) -> bool:
        return self.kind != "numeric"


def numeric_keys(keys: Sequence[Key]) -> list[str]:
    return [k.name for k in keys if k.kind == "numeric"]


def binned(keys: Sequence[Key]) -> set[str]:
    """The numeric keys ``recode:`` bins: masked and published as categories."""
    return {k.name for k in keys if k.recoding is not None and k.recoding.kind == "bins"}


def masked_as(keys: Sequence[Key]) -> tuple[list[str], list[str]]:
    """``(numbers, categories)``: the keys masked as numbers and as categories, after
    recoding (a binned numeric key is categorical)."""
    bins = binned(keys)
    numbers = [k.name for k in keys if k.kind == "numeric" and k.name not in bins]
    categories = [k.name for k in keys if k.kind != "numeric" or k.name in bins]
    return numbers, categories


def key_numbers(data: Any, columns: Sequence[str]) -> np.ndarray:
    """The ``columns`` of a source table (Arrow) as floats, missing as NaN, for a method's
    data checks. Shape (n, len(columns))."""
    return np.column_stack(
        [data.column(c).to_pandas().to_numpy(dtype=np.float64, na_value=np.nan) for c in columns]
    )


def categorical_keys(keys: Sequence[Key]) -> list[str]:
    return [k.name for k in keys if k.kind != "numeric"]


def as_text(values: pd.Series) -> pd.Series:
    """Category labels as text, missing as None: integral floats print without ``.0``."""

    def label(v: object) -> str | None:
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            return None
        if isinstance(v, float | np.floating) and float(v).is_integer():
            return str(int(v))
        return str(v)

    out = np.empty(len(values), dtype=object)
    out[:] = [label(v) for v in values.astype(object)]
    return pd.Series(out, index=values.index, dtype=object)


def encode(values: pd.Series, key: Key) -> tuple[np.ndarray, list[str]]:
    """Codes of a categorical key: -1 for missing; ordinal codes are ranks in ``key.order``,
    nominal codes index the sorted levels.

    Shapes: values (n,) -> codes (n,) int64, levels (L,) text.
    """
    text = as_text(values)
    if key.kind == "ordinal":
        if key.order is None:
            raise ParameterError(f"ordinal key {key.name} needs its categories in order")
        levels = list(key.order)
        rank = {v: i for i, v in enumerate(levels)}
        unknown = sum(1 for v in text if v is not None and v not in rank)
        if unknown:
            raise ParameterError(
                f"ordinal key {key.name}: {unknown} value(s) are not among its declared "
                "categories; list every category in `order:`"
            )
        codes = np.array([rank[v] if v is not None else -1 for v in text], dtype=np.int64)
        return codes, levels
    levels = sorted({v for v in text if v is not None})
    index = {v: i for i, v in enumerate(levels)}
    codes = np.array([index[v] if v is not None else -1 for v in text], dtype=np.int64)
    return codes, levels


def decode(codes: np.ndarray, levels: Sequence[str]) -> pd.Series:
    """Labels of ``codes`` (-1 -> None) as an object Series."""
    lookup = np.empty(len(levels) + 1, dtype=object)
    lookup[:-1] = list(levels)
    lookup[-1] = None
    return pd.Series(lookup[np.where(codes >= 0, codes, len(levels))], dtype=object)


@dataclass(frozen=True)
class SuppressionSettings:
    """The spec's ``suppression:`` block.

    Attributes
    ----------
    importance : tuple of str
        Categorical keys from the most important (suppressed last) to the least.
    algorithm : {"greedy", "exact"}
        Local suppression of categorical-only releases.
    """

    importance: tuple[str, ...] = ()
    algorithm: Literal["greedy", "exact"] = "greedy"

    def indices(self, names: Sequence[str]) -> list[int] | None:
        listed = [names.index(c) for c in self.importance if c in names]
        return listed or None


@dataclass
class EncodedKeys:
    """The keys after recoding, as arrays.

    Attributes
    ----------
    numeric : ndarray of shape (n, p), float64, NaN = missing
    numeric_keys : list of Key, length p
    codes : ndarray of shape (n, c), int64, -1 = missing
    categorical_keys : list of Key, length c
    levels : list of list of str
        The categories of every categorical key (ordinal: in order).
    """

    numeric: np.ndarray
    numeric_keys: list[Key]
    codes: np.ndarray
    categorical_keys: list[Key]
    levels: list[list[str]]

    @property
    def n(self) -> int:
        return self.numeric.shape[0]

    @property
    def numeric_names(self) -> list[str]:
        return [k.name for k in self.numeric_keys]

    @property
    def categorical_names(self) -> list[str]:
        return [k.name for k in self.categorical_keys]


@dataclass
class EncodedRelease:
    """What a method that masks all keys returns (``Method.mask_keys``).

    Attributes
    ----------
    numeric : ndarray of shape (n, p)
        Released numeric keys (NaN = missing).
    codes : ndarray of shape (n, c)
        Released categorical codes (-1 = missing or suppressed).
    promises : dict
        The gates the release guarantees (default: k-anonymity over all keys).
    details : dict
        Figures for the manifest.
    final_rows : ndarray of shape (n,) bool, or None
        Records whose ``final_columns`` were rounded per group keeping the edit rules
        (missing numbers: :func:`~sdcflow.core.linear.group_values.group_values_on_rules`):
        rounding them again record by record would break the rules.
    final_columns : tuple of str
    final_derived : tuple of str
        Among ``final_columns``, those solved from the equalities.
    strata : ndarray of shape (n,) int, or None
        Each record's stratum (the categorical keys' classes the numeric keys were masked
        within), when there are strata.
    """

    numeric: np.ndarray
    codes: np.ndarray
    promises: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    final_rows: np.ndarray | None = None
    final_columns: tuple[str, ...] = ()
    final_derived: tuple[str, ...] = ()
    strata: np.ndarray | None = None


MaskKeysFn = Callable[[EncodedKeys, Any, np.random.Generator, SuppressionSettings], EncodedRelease]


def encode_keys(frame: pd.DataFrame, keys: Sequence[Key]) -> EncodedKeys:
    """Arrays of the (recoded) keys: numeric as float with NaN, categorical as codes."""
    num = [k for k in keys if k.kind == "numeric"]
    cat = [k for k in keys if k.kind != "numeric"]
    n = len(frame)
    X = (
        frame[[k.name for k in num]].apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
        if num
        else np.zeros((n, 0))
    )
    codes = np.zeros((n, len(cat)), dtype=np.int64)
    levels = []
    for j, key in enumerate(cat):
        codes[:, j], lev = encode(frame[key.name], key)
        levels.append(lev)
    return EncodedKeys(X, num, codes, cat, levels)
