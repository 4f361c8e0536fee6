"""The records a loss or linkage measure is taken on: those holding every numeric key in
both the original and the released file (a missing value stays missing in a release, so
those records are left out of the figures that need every coordinate)."""

from __future__ import annotations

import numpy as np


def complete_records(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Which records hold every column in both ``X`` and ``Y``.

    Shapes: X (n, d), Y (n, d) -> (n,) bool.
    """
    return ~(np.isnan(X).any(axis=1) | np.isnan(Y).any(axis=1))


def on_complete_records(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``X`` and ``Y`` on the records of :func:`complete_records` (unchanged when all are).

    Shapes: (n, d), (n, d) -> (m, d), (m, d).
    """
    complete = complete_records(X, Y)
    return (X, Y) if complete.all() else (X[complete], Y[complete])
