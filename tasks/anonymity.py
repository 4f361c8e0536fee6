"""Anonymity of a released file: crisp k-anonymity and friends."""

from __future__ import annotations

import numpy as np
import pandas as pd


def equivalence_class_sizes(released: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Sizes of the groups of identical released quasi-identifier rows.

    Shapes: released (n, d) -> (g,) with sum n.
    """
    frame = pd.DataFrame(released)
    if frame.empty:
        return np.zeros(0, dtype=np.int64)
    return frame.groupby(list(frame.columns), dropna=False, sort=False).size().to_numpy()


def k_anonymity(released: pd.DataFrame | np.ndarray) -> int:
    """The k the released file achieves: the size of its smallest equivalence class."""
    sizes = equivalence_class_sizes(released)
    return int(sizes.min()) if sizes.size else 0
