"""What a gate is, what it sees, and what it decides.

A gate compares one figure of the release with a threshold from the spec (``checks:``):
the figure must be at least (``min``) or at most (``max``) the threshold. A gate that reads
settings declares them as one :class:`GateOption` (the ``measures:`` block of the spec is
assembled from those declarations), and a gate that needs a spec field names it in
``requires`` so that the spec is refused at load time when the field is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from sdcflow.core.measures.complete import on_complete_records
from sdcflow.methods.base import MaskResult, MethodParams

Direction = Literal["min", "max"]
Measures = Literal["numeric_keys", "keys", "sensitive", "edit_rules"]


@dataclass(frozen=True)
class GateOption:
    """A setting some gates read: its key under ``measures:``, its type and default."""

    key: str
    annotation: Any
    default: Any
    description: str = ""


@dataclass
class GateContext:
    """Everything a gate may look at.

    Attributes
    ----------
    original : ndarray of shape (n, d)
        The quasi-identifiers that went into masking (after any repair), original units.
    columns : list of str, length d
        Quasi-identifier names.
    result : MaskResult
        What the method released.
    method : MethodParams
        The method parameters from the spec.
    options : pydantic model or None
        The ``measures:`` settings of the spec; None takes every default.
    edit_violations : mapping rule name -> violating released records, or None when no edit
        rule could be evaluated on the release.
    sensitive : DataFrame with n rows or None
        The confidential attributes (``sensitive:``), released unchanged.
    rng : numpy.random.Generator
        For measures that draw.
    raw : ndarray of shape (n, d) or None
        The quasi-identifiers as ingested, before any repair (same rows as ``original``);
        None means they are ``original``. Information loss is gated against these.
    keep : DataFrame with n rows or None
        The ``keep`` columns, released unchanged (an intruder may know them too).
    weights : ndarray of shape (n,) or None
        Sampling weights (``weight_column:``), for the risk per record.
    households : ndarray of shape (n,) or None
        The household (cluster) of every record (``household_column:``), for the household
        risk.
    unchecked_rules : tuple of str
        Error rules that could not be evaluated on the released records (their columns are
        not released).
    accepted_unchecked : frozenset of str
        Those of them the spec accepts unchecked (``accept: unchecked_rules``).
    accept_looser : frozenset of str
        Gate keys whose spec threshold may be looser than the default or what the method
        promises (``accept: looser_checks``).
    """

    original: np.ndarray
    columns: list[str]
    result: MaskResult
    method: MethodParams | None = None
    options: Any = None
    edit_violations: Mapping[str, int] | None = None
    sensitive: pd.DataFrame | None = None
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    raw: np.ndarray | None = None
    keep: pd.DataFrame | None = None
    weights: np.ndarray | None = None
    households: np.ndarray | None = None
    unchecked_rules: tuple[str, ...] = ()
    accepted_unchecked: frozenset[str] = frozenset()
    accept_looser: frozenset[str] = frozenset()
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def as_ingested(self) -> np.ndarray:
        """The quasi-identifiers as ingested (``raw``, or ``original`` when no repair ran)."""
        return self.original if self.raw is None else self.raw

    def option(self, option: GateOption) -> Any:
        """The value of ``measures.<option.key>``, its declared default when unset."""
        value = getattr(self.options, option.key, None) if self.options is not None else None
        return option.default if value is None else value

    def computed(self, key: str) -> bool:
        """Whether a gate already computed ``key`` (see :meth:`cached`)."""
        return key in self._cache

    def numeric_pair(self, *, as_ingested: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(original, released points)`` of the numeric keys on the records that have every
        numeric key (a missing value stays missing in the release and is left out of loss
        and linkage measures); ``as_ingested``: the original as ingested, before any repair
        (:attr:`as_ingested`). Shapes: (m, d), (m, d)."""

        def compute() -> tuple[np.ndarray, np.ndarray]:
            X = np.asarray(self.as_ingested if as_ingested else self.original, dtype=np.float64)
            P = np.asarray(self.result.points, dtype=np.float64)
            return on_complete_records(X, P)

        return self.cached("numeric_pair_raw" if as_ingested else "numeric_pair", compute)

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """Compute once per release (several gates share one clustering or one table)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


def complete_records(minimum: int) -> Callable[[GateContext], tuple[str, bool] | None]:
    """A ``Gate.not_checked`` for a figure measured on the records that have every numeric
    key (:meth:`GateContext.numeric_pair`): not established when fewer than ``minimum``
    records have them all (a survey whose records each skip a question has none; moments
    and clusters need 2). The gate is then "not checked" and fails."""

    def why(ctx: GateContext) -> tuple[str, bool] | None:
        X, _ = ctx.numeric_pair()
        if X.ndim == 2 and X.shape[1] > 0 and X.shape[0] < minimum:
            return (
                f"{X.shape[0]} record(s) have every numeric key and this figure is measured "
                f"on those records (at least {minimum} needed)",
                False,
            )
        return None

    return why


no_complete_record = complete_records(1)


@dataclass(frozen=True)
class Gate:
    """One registry entry.

    Attributes
    ----------
    key : the spec key under ``checks:``.
    direction : ``min`` (figure >= threshold passes) or ``max`` (figure <= threshold).
    compute : the figure, from a :class:`GateContext`.
    description : one line for reports.
    unit : unit of the figure and of its threshold (``records``, ``%``...).
    option : the ``measures:`` setting it reads, if any.
    requires : spec fields it needs (``sensitive``), checked when the spec is loaded.
    only_for : the method parameter types whose releases it applies to (empty: every
        method); the preflight refuses it under any other method.
    not_checked : when the figure cannot be established on the release, returns why and
        whether the spec accepts that (the outcome is then "not checked", never a figure).
    upper : the largest value the figure can take when it is a probability or an index (1)
        or a share in percent (100), else None; a ``checks:`` threshold above it is refused
        when the spec is loaded (a ``max`` gate would always pass, a ``min`` one never).
    measures : what the figure is measured on: ``numeric_keys`` (the records holding every
        numeric key: loss, linkage, boxes; the preflight refuses such a gate for a release
        without numeric keys), ``keys`` (the released keys, any kind), ``sensitive`` (the
        sensitive columns within classes of keys) or ``edit_rules`` (the edit rules on the
        released records).
    per_block : the key of the gate measuring the same per block, which a release masked by
        blocks gets at this gate's promised threshold.
    with_keep : the key of the gate measuring the same with the ``keep`` columns known to
        the intruder, which a release with ``keep`` columns gets at this gate's threshold.
    with_edit_rules : the threshold every release with error rules gets this gate at
        (None: only when promised or asked).
    on_groups : the figure is measured on the released groups (``Method.groups``): the
        preflight refuses the gate under a method that releases records rather than group
        aggregates, and its figure is "not applicable" there.
    with_group_means : the threshold every release of group means (``Method.groups`` is
        ``"means"``) with a numeric key that is never negative in the source (a magnitude)
        gets this gate at (None: only when asked).
    remedy : what to change in the spec when the gate fails, one clause the outcome's note
        carries, from the release's context (None: the figure and threshold say it).
    reading : what a reader needs beside the figure, pass or fail, one clause the outcome's
        note carries ("" when nothing): what the figure leaves out of this release.
    """

    key: str
    direction: Direction
    compute: Callable[[GateContext], float]
    description: str
    unit: str = ""
    option: GateOption | None = None
    requires: frozenset[str] = frozenset()
    only_for: tuple[type[MethodParams], ...] = ()
    not_checked: Callable[[GateContext], tuple[str, bool] | None] | None = None
    upper: float | None = None
    measures: Measures = "keys"
    per_block: str | None = None
    with_keep: str | None = None
    with_edit_rules: float | None = None
    on_groups: bool = False
    with_group_means: float | None = None
    remedy: Callable[[GateContext], str] | None = None
    reading: Callable[[GateContext], str] | None = None

    def passes(self, figure: float, threshold: float) -> bool:
        if not np.isfinite(figure):
            return False
        return figure >= threshold if self.direction == "min" else figure <= threshold


def distinct_digits(figure: float, threshold: float, digits: int = 6) -> tuple[str, str]:
    """``figure`` and ``threshold`` as text with ``digits`` significant digits, or with as
    many more (up to 17) as tell them apart: a figure is never shown equal to a threshold it
    differs from ("0.00449944 <= 0.00449944 FAIL" was a true verdict that read as false)."""
    for p in range(digits, 18):
        a, b = f"{figure:.{p}g}", f"{threshold:.{p}g}"
        if a != b or figure == threshold:
            return a, b
    return repr(float(figure)), repr(float(threshold))


@dataclass(frozen=True)
class GateOutcome:
    """A gate's figure, threshold and verdict.

    ``checked`` is False when the figure could not be established on the release (``figure``
    is then NaN and ``note`` says why); such a gate passes only when the spec accepts it.
    """

    key: str
    figure: float
    threshold: float
    direction: Direction
    passed: bool
    description: str
    unit: str = ""
    checked: bool = True
    note: str = ""

    @property
    def rule(self) -> str:
        return ">=" if self.direction == "min" else "<="

    @property
    def shown(self) -> tuple[str, str]:
        """The figure and the threshold as printed: digits enough to tell them apart."""
        return distinct_digits(self.figure, self.threshold)

    @property
    def verdict(self) -> str:
        if not self.checked:
            # a gate not checked fails unless the spec accepts it: the verdict says so, as
            # the refusal does
            return "not checked (accepted)" if self.passed else "FAIL (not checked)"
        return "pass" if self.passed else "FAIL"

    def as_dict(self) -> dict[str, Any]:
        out = {
            "check": self.key,
            "figure": self.figure if self.checked else None,
            "threshold": self.threshold,
            "rule": self.rule,
            "verdict": self.verdict,
            "unit": self.unit,
            "description": self.description,
        }
        if self.note:
            out["note"] = self.note
        return out
