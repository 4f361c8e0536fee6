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

from sdcflow.tasks.methods.base import MaskResult, MethodParams

Direction = Literal["min", "max"]


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
    keep : DataFrame with n rows or None
        The ``keep`` columns, released unchanged (an intruder may know them too).
    weights : ndarray of shape (n,) or None
        Sampling weights (``weight_column:``), for the risk per record.
    """

    original: np.ndarray
    columns: list[str]
    result: MaskResult
    method: MethodParams | None = None
    options: Any = None
    edit_violations: Mapping[str, int] | None = None
    sensitive: pd.DataFrame | None = None
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    keep: pd.DataFrame | None = None
    weights: np.ndarray | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def option(self, option: GateOption) -> Any:
        """The value of ``measures.<option.key>``, its declared default when unset."""
        value = getattr(self.options, option.key, None) if self.options is not None else None
        return option.default if value is None else value

    def numeric_pair(self) -> tuple[np.ndarray, np.ndarray]:
        """``(original, released points)`` of the numeric keys on the records that have every
        numeric key (a missing value stays missing in the release and is left out of loss
        and linkage measures). Shapes: (m, d), (m, d)."""

        def compute() -> tuple[np.ndarray, np.ndarray]:
            X = np.asarray(self.original, dtype=np.float64)
            P = np.asarray(self.result.points, dtype=np.float64)
            complete = ~(np.isnan(X).any(axis=1) | np.isnan(P).any(axis=1))
            return (X, P) if complete.all() else (X[complete], P[complete])

        return self.cached("numeric_pair", compute)

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """Compute once per release (several gates share one clustering or one table)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


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
    """

    key: str
    direction: Direction
    compute: Callable[[GateContext], float]
    description: str
    unit: str = ""
    option: GateOption | None = None
    requires: frozenset[str] = frozenset()

    def passes(self, figure: float, threshold: float) -> bool:
        if not np.isfinite(figure):
            return False
        return figure >= threshold if self.direction == "min" else figure <= threshold


@dataclass(frozen=True)
class GateOutcome:
    """A gate's figure, threshold and verdict."""

    key: str
    figure: float
    threshold: float
    direction: Direction
    passed: bool
    description: str
    unit: str = ""

    @property
    def rule(self) -> str:
        return ">=" if self.direction == "min" else "<="

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.key,
            "figure": self.figure,
            "threshold": self.threshold,
            "rule": self.rule,
            "verdict": "pass" if self.passed else "FAIL",
            "unit": self.unit,
            "description": self.description,
        }
