"""Global recoding: coarser categories for a whole key column, applied before masking.

Four kinds, after sdcMicro's ``globalRecode`` and ``topBotCoding`` and ARX's generalization
hierarchies [1], [2]:

* **bins** of a numeric key: ``edges`` e_0 < e_1 < ... < e_m give m intervals, each
  published under its label; ``-.inf`` / ``.inf`` as outer edges top- and bottom-code. The
  key becomes ordinal, ordered by its bins. ``closed="right"`` (the default) gives
  [e_0, e_1], (e_1, e_2], ..., (e_{m-1}, e_m], labelled ``"(a, b]"``: the intervals of
  sdcMicro's ``globalRecode``, which is R's ``cut`` [3], and of pandas' ``cut``, except that
  the first is closed on the left too (``cut(include.lowest = TRUE)``), where ``cut`` makes a
  value equal to e_0 missing. ``closed="left"`` gives [e_0, e_1), ..., [e_{m-1}, e_m], the
  last one closed. A present value outside [e_0, e_m] is refused, never dropped.
* **top and bottom coding** of a numeric key (sdcMicro's ``topBotCoding`` [1]): values
  strictly above ``top`` are published as ``top_value``, values strictly below ``bottom`` as
  ``bottom_value`` (by default the threshold itself), as ``x[x > value] <- replacement``
  in sdcMicro's ``topBotCodingWORK``. The key stays numeric and is masked by the method
  afterwards (top-coding before microaggregation keeps an outlier out of its group's mean).
* **map** of a categorical key: each listed level is replaced by its target; levels not
  listed stay as they are. A listed level that the column does not hold is an error (the spec
  names a level the data do not have: a typo, or a recoding meant for another file).
* **hierarchy**: every level of the column has a row ``leaf, level 1, level 2, ...`` (ARX's
  CSV format, ``;`` or ``,`` separated), and the column is replaced by its ancestors at
  ``level``. Rows for levels the column lacks are allowed (a hierarchy describes a domain); a
  level of the column without a row is an error.

A missing value stays missing. Error messages name the spec's levels and counts, never a value
of the data.

References
----------
[1] M. Templ, A. Kowarik, B. Meindl, "Statistical disclosure control for micro-data using the
    R package sdcMicro", Journal of Statistical Software 67(4) (2015) 1-36,
    doi:10.18637/jss.v067.i04 (``globalRecode``).
[2] F. Prasser, F. Kohlmayer, "Putting statistical disclosure control into practice: the ARX
    data anonymization tool", in: A. Gkoulalas-Divanis, G. Loukides (eds.), Medical Data
    Privacy Handbook, Springer, Cham, 2015, 111-148, doi:10.1007/978-3-319-23633-9_6
    (generalization hierarchies).
[3] R Core Team, "cut: Convert Numeric to Factor", R documentation, package base (intervals
    ``(a, b]`` by default, ``right = TRUE``; ``include.lowest``).
"""

from __future__ import annotations

import csv
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from sdcflow.core.perturbation.topbottom import top_bottom_code
from sdcflow.errors import InputError, Reason
from sdcflow.limits import MAX_RULES_FILE_BYTES, read_bounded

Kind = Literal["bins", "map", "hierarchy", "top_bottom"]
#: The recodings of numeric keys: ``bins`` makes them ordinal, ``top_bottom`` keeps them
#: numeric.
NUMERIC_KINDS = ("bins", "top_bottom")
Closed = Literal["right", "left"]


@dataclass(frozen=True)
class Recoding:
    """One key's global recoding (see the module docstring).

    Attributes
    ----------
    kind : {"bins", "map", "hierarchy", "top_bottom"}
    edges : tuple of float
        ``bins``: strictly increasing, at least two.
    labels : tuple of str or None
        ``bins``: one per interval (default ``"(a, b]"``, or ``"[a, b)"`` closed left).
    mapping : mapping str -> str
        ``map``: level -> new level.
    hierarchy : mapping str -> tuple of str
        ``hierarchy``: leaf -> its ancestors, level 1 first.
    level : int
        ``hierarchy``: which ancestor (1 = the first generalization).
    closed : {"right", "left"}
        ``bins``: which end of an interval holds its edge; "right" as sdcMicro's
        ``globalRecode`` (see the module docstring).
    top, bottom : float or None
        ``top_bottom``: values strictly above ``top`` (below ``bottom``) are replaced.
    top_value, bottom_value : float or None
        ``top_bottom``: what replaces them; None is the threshold itself.
    """

    kind: Kind
    edges: tuple[float, ...] = ()
    labels: tuple[str, ...] | None = None
    mapping: Mapping[str, str] = field(default_factory=dict)
    hierarchy: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    level: int = 1
    closed: Closed = "right"
    top: float | None = None
    bottom: float | None = None
    top_value: float | None = None
    bottom_value: float | None = None


@dataclass(frozen=True)
class Recoded:
    """A recoded column.

    Attributes
    ----------
    values : Series
        The recoded column (object dtype for categories; missing stays missing).
    order : list of str or None
        The levels in order when the recoding defines one (bins), else None.
    changed : int
        Records whose value changed.
    coded : mapping str -> int
        ``top_bottom``: the values above ``top`` (``"top_coded"``) and below ``bottom``
        (``"bottom_coded"``), for each side the spec gives; empty for other kinds.
    """

    values: pd.Series
    order: list[str] | None
    changed: int
    coded: Mapping[str, int] = field(default_factory=dict)


def _bin_labels(edges: Sequence[float], closed: Closed = "right") -> list[str]:
    def num(x: float) -> str:
        # the edge exactly: the shortest text that reads back as it (repr), without a
        # trailing ".0" -- f"{x:g}" kept 6 digits, and 1234567 was labelled 1.23457e+06
        if np.isinf(x):
            return "inf" if x > 0 else "-inf"
        text = repr(float(x))
        return text[:-2] if text.endswith(".0") else text

    if closed == "right":  # (a, b], the first [a, b]
        out = [f"({num(a)}, {num(b)}]" for a, b in pairwise(edges)]
        out[0] = "[" + out[0][1:]
    else:  # [a, b), the last [a, b]
        out = [f"[{num(a)}, {num(b)})" for a, b in pairwise(edges)]
        out[-1] = out[-1][:-1] + "]"
    return out


def check_recoding(column: str, rule: Recoding) -> None:
    """Validate a recoding on its own (no data): raise ``InputError`` (SPEC_FIELD)."""
    where = f"recode.{column}"
    if rule.kind == "bins":
        e = np.asarray(rule.edges, dtype=np.float64)
        if e.size < 2 or np.any(np.isnan(e)) or np.any(np.diff(e) <= 0):
            raise InputError(
                f"{where}.bins: give at least two strictly increasing edges, e.g. "
                "[0, 18, 65, .inf]",
                code=Reason.SPEC_FIELD,
            )
        if rule.labels is not None and len(rule.labels) != e.size - 1:
            raise InputError(
                f"{where}.labels: {len(rule.labels)} labels for {e.size - 1} bins; give one "
                "label per bin",
                code=Reason.SPEC_FIELD,
            )
        labels = rule.labels or _bin_labels(rule.edges, rule.closed)
        if len(set(labels)) != len(labels):
            raise InputError(f"{where}.labels: labels must differ", code=Reason.SPEC_FIELD)
    elif rule.kind == "hierarchy" and rule.level < 1:
        raise InputError(f"{where}.level must be >= 1", code=Reason.SPEC_FIELD)
    elif rule.kind == "top_bottom":
        _check_top_bottom(where, rule)


def _check_top_bottom(where: str, rule: Recoding) -> None:
    """Thresholds and replacements finite, at least one side, bottom not above top."""
    sides = {"top": rule.top, "bottom": rule.bottom}
    values = {"top_value": rule.top_value, "bottom_value": rule.bottom_value}
    for name, value in {**sides, **values}.items():
        if value is not None and not np.isfinite(value):
            raise InputError(
                f"{where}.{name} must be a finite number; give the value in the key's unit",
                code=Reason.SPEC_FIELD,
            )
    if rule.top is None and rule.bottom is None:
        raise InputError(
            f"{where}: top and bottom coding needs `top`, `bottom` or both", code=Reason.SPEC_FIELD
        )
    for side in ("top", "bottom"):
        if values[f"{side}_value"] is not None and sides[side] is None:
            raise InputError(
                f"{where}.{side}_value replaces the values beyond `{side}`; give `{side}` too",
                code=Reason.SPEC_FIELD,
            )
    if rule.top is not None and rule.bottom is not None and rule.bottom > rule.top:
        raise InputError(
            f"{where}: bottom ({rule.bottom:g}) is above top ({rule.top:g}); swap them",
            code=Reason.SPEC_FIELD,
        )


def load_hierarchy(path: str | Path) -> dict[str, tuple[str, ...]]:
    """Read an ARX-style hierarchy file: one row per leaf, ``leaf;level 1;level 2;...``.

    Raises ``InputError`` (SPEC_FIELD) for a missing or unreadable file, a ragged file or a
    leaf listed twice.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:  # a link loop, a path through a file, no permission on a folder
        raise InputError(
            f"hierarchy file {path} cannot be opened ({e.strerror}); check `recode:` in the spec",
            code=Reason.SPEC_FIELD,
        ) from None
    if mode is None or not stat.S_ISREG(mode):
        # a folder or a device (/dev/zero) is there, but it is not a file to read
        what = (
            "does not exist" if mode is None
            else "is a folder" if stat.S_ISDIR(mode)
            else "is not a regular file (a device, pipe or socket)"
        )  # fmt: skip
        raise InputError(
            f"hierarchy file {path} {what}; name an ARX hierarchy file (CSV) in `recode:`",
            code=Reason.SPEC_FIELD,
        )
    try:
        text = read_bounded(path, MAX_RULES_FILE_BYTES, what="hierarchy file")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(
            f"hierarchy file {path} is not readable UTF-8 text", code=Reason.SPEC_FIELD
        ) from e
    lines = [line for line in text.splitlines() if line.strip()]
    delimiter = ";" if lines and ";" in lines[0] else ","
    rows = [[cell.strip() for cell in row] for row in csv.reader(lines, delimiter=delimiter)]
    return hierarchy_from_rows(rows, str(path))


def hierarchy_from_rows(rows: Sequence[Sequence[Any]], source: str) -> dict[str, tuple[str, ...]]:
    """Leaf -> ancestors from rows ``[leaf, level 1, ...]`` (a file or inline in the spec)."""
    if not rows:
        raise InputError(f"hierarchy {source} has no rows", code=Reason.SPEC_FIELD)
    width = len(rows[0])
    out: dict[str, tuple[str, ...]] = {}
    for i, row in enumerate(rows, start=1):
        if len(row) != width or width < 2:
            raise InputError(
                f"hierarchy {source}: row {i} has {len(row)} cells, the first row {width}; "
                "give every leaf the same number of levels (at least one)",
                code=Reason.SPEC_FIELD,
            )
        leaf = str(row[0])
        if leaf in out:
            raise InputError(
                f"hierarchy {source}: leaf {leaf!r} is listed twice (row {i}); list each once",
                code=Reason.SPEC_FIELD,
            )
        out[leaf] = tuple(str(c) for c in row[1:])
    return out


def recode(column: str, values: pd.Series, rule: Recoding) -> Recoded:
    """Apply ``rule`` to one key column (see the module docstring).

    Parameters
    ----------
    column : str
        The key's name (for messages).
    values : Series of length n
        Numeric for ``bins``; categorical (text) for ``map`` and ``hierarchy``.
    rule : Recoding

    Returns
    -------
    Recoded

    Raises
    ------
    InputError
        SPEC_FIELD for a bad rule, COLUMN_TYPE for bins on a non-numeric column, RECODING
        for a level the column does not hold (map), a level of the column the hierarchy
        lacks, and values outside every bin.
    """
    check_recoding(column, rule)
    where = f"recode.{column}"
    missing = values.isna().to_numpy()
    if rule.kind == "top_bottom":
        return _top_bottom(column, values, missing, rule)
    if rule.kind == "bins":
        x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
        if np.any(np.isnan(x) & ~missing):
            raise InputError(
                f"{where}.bins: column {column} is not numeric; bin numeric keys, map or "
                "generalize categorical ones",
                code=Reason.COLUMN_TYPE,
            )
        edges = np.asarray(rule.edges, dtype=np.float64)
        labels = list(rule.labels or _bin_labels(rule.edges, rule.closed))
        if rule.closed == "right":  # (e_i, e_i+1]: the first edge not below x closes it
            idx = np.searchsorted(edges, x, side="left") - 1
            idx[x == edges[0]] = 0  # the first bin is closed on the left too
        else:  # [e_i, e_i+1)
            idx = np.searchsorted(edges, x, side="right") - 1
            idx[x == edges[-1]] = edges.size - 2  # the last bin is closed
        outside = ~missing & ((idx < 0) | (idx >= edges.size - 1))
        if outside.any():  # refused, never dropped: a value silently blanked changes the file
            raise InputError(
                f"{where}.bins: {int(outside.sum())} value(s) of {column} fall outside the "
                "bins; widen the outer edges (-.inf and .inf code the tails)",
                code=Reason.RECODING,
                field=f"recode.{column}",
            )
        out = np.empty(x.size, dtype=object)
        out[:] = None
        out[~missing] = np.asarray(labels, dtype=object)[idx[~missing]]
        return Recoded(
            pd.Series(out, index=values.index, dtype=object), labels, int((~missing).sum())
        )
    text = pd.Series(
        [None if m else v for v, m in zip(values.astype(object), missing, strict=True)],
        index=values.index,
        dtype=object,
    )
    present = set(text[~missing].astype(str))
    if rule.kind == "map":
        unknown = sorted(set(rule.mapping) - present)
        if unknown:
            raise InputError(
                f"{where}.map names level(s) {unknown} that column {column} does not hold; "
                "fix the spelling or remove them",
                code=Reason.RECODING,
            )
        mapped = _objects(text, lambda v: rule.mapping.get(str(v), v))
        changed = int(sum(1 for v in text[~missing] if str(v) in rule.mapping))
        return Recoded(mapped, None, changed)
    lacking = present - set(rule.hierarchy)
    if lacking:
        raise InputError(
            f"{where}.hierarchy has no row for {len(lacking)} level(s) of column {column}; "
            "add a row for every level of the column",
            code=Reason.RECODING,
        )
    depth = min(len(v) for v in rule.hierarchy.values())
    if rule.level > depth:
        raise InputError(
            f"{where}.level = {rule.level} but the hierarchy has {depth} level(s); lower it",
            code=Reason.SPEC_FIELD,
        )
    up = {leaf: anc[rule.level - 1] for leaf, anc in rule.hierarchy.items()}
    mapped = _objects(text, lambda v: up[str(v)])
    changed = int(sum(1 for v in text[~missing] if up[str(v)] != str(v)))
    return Recoded(mapped, None, changed)


def _top_bottom(column: str, values: pd.Series, missing: np.ndarray, rule: Recoding) -> Recoded:
    """Top and bottom coding of a numeric key: the core's ``top_bottom_code`` (sdcMicro's
    ``topBotCodingWORK``: ``x[x > value] <- replacement``, ``x[x < value] <- replacement``),
    the replacement the threshold itself unless the rule gives one."""
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    if np.any(np.isnan(x) & ~missing):
        raise InputError(
            f"recode.{column}: top and bottom coding apply to numeric keys and column "
            f"{column} is not numeric; map or generalize categorical keys",
            code=Reason.COLUMN_TYPE,
        )
    high = rule.top if rule.top_value is None else rule.top_value
    low = rule.bottom if rule.bottom_value is None else rule.bottom_value
    replacement: Any = (
        (low, high)
        if rule.top is not None and rule.bottom is not None
        else (high if rule.top is not None else low)
    )
    coded = top_bottom_code(x, top=rule.top, bottom=rule.bottom, replacement=replacement)
    counts: dict[str, int] = {}
    if rule.top is not None:
        counts["top_coded"] = int((x > rule.top).sum())  # NaN compares False
    if rule.bottom is not None:
        counts["bottom_coded"] = int((x < rule.bottom).sum())
    changed = int((~missing & (coded != x)).sum())
    return Recoded(pd.Series(coded, index=values.index), None, changed, counts)


def _objects(values: pd.Series, fn: Any) -> pd.Series:
    """``fn`` of every present value, None where missing (an object Series)."""
    out = np.empty(len(values), dtype=object)
    out[:] = [None if v is None else fn(v) for v in values]
    return pd.Series(out, index=values.index, dtype=object)


def recoded_levels(rule: Recoding) -> set[str]:
    """Every level a recoding names (its inputs and outputs), for clash checks with the
    missing-value tokens."""
    if rule.kind == "bins":
        return set(rule.labels or _bin_labels(rule.edges, rule.closed))
    if rule.kind == "map":
        return set(rule.mapping) | set(rule.mapping.values())
    if rule.kind == "top_bottom":
        return set()  # numbers stay numbers: no level to clash with a token
    return set(rule.hierarchy) | {a for anc in rule.hierarchy.values() for a in anc}
