"""The whole file's units of the columns the linear rules read.

:func:`~sdcflow.core.linear.group_values.group_values_on_rules` moves a group onto the rules
in standardized units, ``z = (x - shift) / scale`` per column, the shift and scale taken
over the whole file so that every stratum is moved in the same units. A release masked in
pieces (the streamed path) never holds the whole file: its pieces receive these figures
from the warehouse instead of measuring their own.

For the two paths to move a group alike, bit for bit, the figures must not depend on how
the values are cut or ordered. Each sum here is exactly rounded (:func:`math.fsum`: the
float nearest the exact sum of the values, whatever their order), so the mean
``fsum(x) / n`` and the population standard deviation
``sqrt(fsum((x - mean)^2) / n)`` are the same from one array or from chunks of it in any
order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from sdcflow.errors import ParameterError

__all__ = [
    "FileUnits",
    "exact_moments",
    "file_units",
    "resolution_lost",
    "units_from_moments",
]

# values summed at a time (one chunk's Python floats: 32 MB)
CHUNK = 1 << 20


class FileUnits(NamedTuple):
    """The whole file's units of ``columns``: what the rules' moves standardize by.

    Attributes
    ----------
    columns : tuple of str, length r
    shift : ndarray of shape (r,)
        Each column's mean over the values present (0 for a column of gaps).
    scale : ndarray of shape (r,)
        Its population standard deviation there (1 for a file of at most one record);
        :func:`~sdcflow.core.linear.group_values.group_values_on_rules` replaces a zero or
        infinite one.
    lost : ndarray of shape (r,) bool, or None
        :func:`~sdcflow.core.validation.lost_resolution` of each column over the file; None:
        measured from the records at hand, the first time a group must move.
    """

    columns: tuple[str, ...]
    shift: np.ndarray
    scale: np.ndarray
    lost: np.ndarray | None = None

    def take(self, columns: Sequence[str]) -> FileUnits:
        """These units restricted to ``columns`` (each one of :attr:`columns`), in that
        order."""
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise ParameterError(
                f"the file's units name no column {missing[0]!r}; give the units of every "
                "column the rules read (conditional consequents included)"
            )
        at = [self.columns.index(c) for c in columns]
        return FileUnits(
            tuple(columns),
            self.shift[at],
            self.scale[at],
            None if self.lost is None else self.lost[at],
        )


def exact_moments(chunks: Callable[[], Iterable[np.ndarray]]) -> tuple[int, float, float]:
    """``(count, mean, sd)`` of the values the chunks give, NaN left out: the mean
    ``fsum(x) / count`` and the population standard deviation
    ``sqrt(fsum((x - mean)^2) / count)``, each sum exactly rounded, so that neither depends on
    how the values are cut into chunks or ordered. ``chunks()`` is called once for the mean
    and once for the squares, and yields 1-D float arrays; only one chunk is held at a time.
    ``(0, 0.0, 0.0)`` when no value is present; a sum past the float range is infinite,
    and one of both infinities NaN."""

    def present() -> Iterator[np.ndarray]:
        for chunk in chunks():
            x = np.asarray(chunk, dtype=np.float64).ravel()
            yield x[~np.isnan(x)]

    count = 0

    def counted() -> Iterator[np.ndarray]:  # the mean's pass counts too: no pass of its own
        nonlocal count
        count = 0
        for x in present():
            count += x.size
            yield x

    total = _exact_sum(counted)
    if count == 0:
        return 0, 0.0, 0.0
    mean = total / count
    with np.errstate(over="ignore", invalid="ignore"):
        squares = _exact_sum(lambda: ((x - mean) ** 2 for x in present()))
        sd = math.sqrt(squares / count)
    return count, mean, sd


def _exact_sum(arrays: Callable[[], Iterable[np.ndarray]]) -> float:
    """The exactly rounded sum of the arrays' values, whatever their order. An intermediate
    sum past 1.8e308 stops :func:`math.fsum`: then twice the exactly rounded sum of the
    halves (each half exact there), infinite with the sum's sign past the float range. NaN
    for a sum of both infinities."""

    def scaled(factor: float) -> float:
        parts = (x if factor == 1.0 else x * factor for x in arrays())
        return math.fsum(itertools.chain.from_iterable(x.tolist() for x in parts))

    try:
        return scaled(1.0)
    except OverflowError:
        try:
            return 2.0 * scaled(0.5)  # inf when the sum passes the float range
        except OverflowError:
            return math.copysign(math.inf, scaled(2.0**-1000))
    except ValueError:  # -inf + inf
        return math.nan


def file_units(X: np.ndarray, columns: Sequence[str]) -> FileUnits:
    """The units of the columns of ``X`` (m, r) (NaN: missing), named ``columns``, from the
    records in memory: :func:`exact_moments` of each column, ``lost`` left to be measured
    when needed."""
    X = np.asarray(X, dtype=np.float64)
    m = X.shape[0]
    moments = [  # a chunk at a time: a column whole as Python floats is 32 bytes a value
        exact_moments(lambda j=j: (X[i : i + CHUNK, j] for i in range(0, m, CHUNK)))
        for j in range(X.shape[1])
    ]
    return units_from_moments(columns, len(X), moments, None)


def units_from_moments(
    columns: Sequence[str],
    records: int,
    moments: Sequence[tuple[int, float, float]],
    lost: np.ndarray | None,
) -> FileUnits:
    """:class:`FileUnits` of ``columns`` from each column's :func:`exact_moments` over a
    file of ``records`` records, and its ``lost`` verdicts (:func:`resolution_lost`)."""
    shift = np.array([m for _, m, _ in moments], dtype=np.float64)
    scale = np.array([s for _, _, s in moments], dtype=np.float64)
    if records <= 1:  # no spread to measure: unit steps
        scale = np.ones(len(moments))
    return FileUnits(tuple(columns), shift, scale, lost)


def resolution_lost(size: np.ndarray, top: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """:func:`~sdcflow.core.validation.lost_resolution`'s verdict from a file's figures
    (each (r,)): the columns' ``size``, ``|mean| + sd`` (taken on the values over their
    largest magnitude and multiplied back where the sd itself passes the float range), their
    largest magnitude ``top`` and their typical spread ``spread`` (the mean distance from
    the median of the 95 % of values nearest it, at least 1e-9 of the median; for a column
    nearly all at one value, the distance to the nearest other value, ``inf`` when
    constant). Lost: the rounding of standardized units, ``4 eps size``, passes a thousandth
    of the spread."""
    with np.errstate(over="ignore", invalid="ignore"):
        rounding = 4 * np.finfo(np.float64).eps * np.where(np.isfinite(top), size, np.inf)
        return np.asarray(rounding > 1e-3 * spread, dtype=bool)
