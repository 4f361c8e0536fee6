"""MDAV-generic under the partial distance written as numpy steps: the independent reference
of the compiled kernels (``sdcflow.core.microaggregation.generic_kernels``). Every step is
a numpy call over the remaining rows, through ``_Distances.to`` and :func:`centroid` (numpy's
own sums, ``argsort`` and ``argmax``), so the kernels' sums and ties are checked against
numpy's, not against themselves."""

from __future__ import annotations

import numpy as np

from sdcflow.core.microaggregation.heterogeneous import MixedKeys, _Distances
from sdcflow.core.validation import safe_mean


def centroid(dist: _Distances, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the scaled numeric keys, lower median of the scaled ordinal ranks, mode of the
    nominal codes (ties to the lowest), over the values present of ``rows``."""
    block = dist.cont[rows]
    cont = np.full(block.shape[1], np.nan)
    for j in range(block.shape[1]):
        col = block[:, j][~np.isnan(block[:, j])]
        if col.size:
            cont[j] = safe_mean(col) if j < dist.numeric else np.sort(col)[(col.size - 1) // 2]
    nom = np.full(dist.nom.shape[1], -1, dtype=np.int64)
    for j in range(dist.nom.shape[1]):
        present = dist.nom[rows, j][dist.nom[rows, j] >= 0]
        if present.size:
            nom[j] = np.bincount(present).argmax()
    return cont, nom


def record(dist: _Distances, i: int) -> tuple[np.ndarray, np.ndarray]:
    return dist.cont[i], dist.nom[i]


def numpy_mdav_generic(dist: _Distances, k: int) -> np.ndarray:
    """MDAV-generic as numpy steps over the remaining rows (``_Distances.to`` and
    ``_Distances.centroid``): the reference the kernel must equal."""
    n = dist.cont.shape[0] if dist.cont.shape[1] else dist.nom.shape[0]
    labels = -np.ones(n, dtype=np.int64)
    remaining = np.arange(n)
    group = 0

    def take(center_row: int) -> None:
        nonlocal remaining, group
        d2 = dist.to(remaining, *record(dist, center_row))
        nearest = np.argsort(d2, kind="stable")[:k]
        labels[remaining[nearest]] = group
        group += 1
        remaining = np.delete(remaining, nearest)

    while remaining.size >= 3 * k:
        r = remaining[int(np.argmax(dist.to(remaining, *centroid(dist, remaining))))]
        take(r)
        take(remaining[int(np.argmax(dist.to(remaining, *record(dist, r))))])
    if remaining.size >= 2 * k:
        take(remaining[int(np.argmax(dist.to(remaining, *centroid(dist, remaining))))])
    labels[remaining] = group
    return labels


def numpy_group_means(keys: MixedKeys, labels: np.ndarray) -> np.ndarray:
    """Every group's mean of each numeric key over its holders (``safe_mean``), a loop."""
    out = np.full(keys.numeric.shape, np.nan)
    for g in np.unique(labels):
        rows = np.flatnonzero(labels == g)
        for j in range(keys.numeric.shape[1]):
            col = keys.numeric[rows, j]
            has = ~np.isnan(col)
            if has.any():
                out[rows[has], j] = safe_mean(col[has])
    return out
