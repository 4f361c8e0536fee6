"""Box anonymization end to end: cells, boxes, weights and interval estimates.

1. Sensitivities a_i(x) of the target statistics at the records (eq. 10-15, 63).
2. Cells: the a-weighted median partition (``box_partition``), >= k records and >= l distinct
   values per variable; each record is released as the bounding box of its cell.
3. Privacy contribution of every record, n c(x) = sum_i a_i(x~) Delta_i(x) with the
   sensitivities at the box centres x~ (the expansion point of eq. 8), and the sampling scale
   A (eq. 42) from the centres too: the weights are a function of the released boxes only and
   equal within a box, so the ``weight`` column cannot locate a record inside its box.
4. Weights (equal, crisp eq. 25-26, fuzzy eq. 51-56) and interval estimates (eq. 9, 37-38).
5. Manifest figures: the estimates table, half-widths, the ratio of each record's box cost
   sum_i a_i Delta_i to the eq. 21 / eq. 33-36 optimum at its local density, the balance
   max_i a_i Delta_i / min_i a_i Delta_i of eq. 19, and eq. 43 under the three weightings.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.spatial import cKDTree

from sdcflow.core.box.estimates import LINEARIZED_NOTE, IntervalEstimate, interval_estimates
from sdcflow.core.box.optimum import optimal_half_widths
from sdcflow.core.box.partition import bounding_boxes, box_partition, round_outward
from sdcflow.core.box.sensitivity import (
    Target,
    check_targets,
    combined_influence_scale,
    combined_sensitivity,
)
from sdcflow.core.box.weights import Weights, equal_weights, make_weights
from sdcflow.core.box.weights import crisp_weights as _crisp
from sdcflow.core.box.weights import fuzzy_weights as _fuzzy
from sdcflow.core.validation import check_k, check_matrix
from sdcflow.errors import ParameterError

Scheme = Literal["equal", "crisp", "fuzzy"]


@dataclass(frozen=True)
class BoxRelease:
    """What :func:`box_anonymize` produces.

    Attributes
    ----------
    labels : ndarray of shape (n,), int
        Box of every record.
    lo, hi : ndarray of shape (n, d)
        The released box of every record.
    weights : Weights
        The weights used for the estimates (``weights.w`` has shape (n,)).
    c : ndarray of shape (n,)
        Privacy contribution c(x) of every record (eq. 22: n c(x) = sum_i a_i Delta_i).
    A : float
        Sampling scale of eq. 42.
    estimates : list of IntervalEstimate
    details : dict
        Manifest figures (aggregates of the release only; no record values).
    """

    labels: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    weights: Weights
    c: np.ndarray
    A: float
    estimates: list[IntervalEstimate]
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def centres(self) -> np.ndarray:
        return (self.lo + self.hi) / 2


def _summary(x: np.ndarray) -> dict[str, float]:
    if x.size == 0:
        return {}
    q = np.quantile(x, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {
        "min": float(q[0]),
        "p10": float(q[1]),
        "median": float(q[2]),
        "mean": float(x.mean()),
        "p90": float(q[3]),
        "max": float(q[4]),
    }


def optimum_ratios(
    X: np.ndarray,
    labels: np.ndarray,
    a: np.ndarray,
    half: np.ndarray,
    k: int,
    ell: int | None,
    eps: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """How far the boxes are from the eq. 21 optimum (eq. 33-36 with l), and the eq. 19 balance.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The records (only the local density is taken from them).
    labels : ndarray of shape (n,)
        Box of every record, 0..B-1.
    a : ndarray of shape (n, d)
        Sensitivities a_i used for the box of every record (at its centre).
    half : ndarray of shape (n, d)
        Half-widths of the box of every record.
    k, ell, eps
        As in the partition.

    Returns
    -------
    ratio : ndarray of shape (n,)
        sum_i a_i Delta_i of the record's box over the optimum sum_i a_i Delta_i* of the box
        that holds k records at the record's local density (eq. 21, or eq. 33-36 with l).
        The density is k over the volume of the smallest cube (sup norm on the standardized
        active variables) around the record that holds k records. NaN where no variable is
        active or k records coincide in the active variables.
    balance : ndarray of shape (B,)
        max_i / min_i of a_i Delta_i over the box's sides with a_i Delta_i > 0 (eq. 19: 1).

    A variable is active when a_i > 0; the others cost nothing, their side is free and the
    density is the marginal one of the active variables.
    """
    n, d = X.shape
    active = a > 0
    codes = (active * (1 << np.arange(d, dtype=np.int64))).sum(axis=1)
    sd = X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    ratio = np.full(n, np.nan)
    for code in np.unique(codes):
        rows = np.flatnonzero(codes == code)
        cols = np.flatnonzero(active[rows[0]])
        if cols.size == 0:
            continue
        Z = X[:, cols] / sd[cols]
        radius = cKDTree(Z).query(Z[rows], k=k, p=np.inf)[0][:, -1]
        ok = radius > 0
        rows = rows[ok]
        rho = k / np.prod(2 * radius[ok, None] * sd[cols], axis=1)  # records per unit volume
        a_r = a[np.ix_(rows, cols)]
        opt = optimal_half_widths(a_r, rho, k, ell=ell, eps=eps[cols])  # [1] eq. 21, 33-36
        ratio[rows] = (a_r * half[np.ix_(rows, cols)]).sum(axis=1) / opt.cost
    terms = a * half
    first = np.unique(labels, return_index=True)[1]
    t = terms[first]
    positive = t > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        big = np.where(positive, t, -np.inf).max(axis=1)
        small = np.where(positive, t, np.inf).min(axis=1)
        balance = np.where(positive.any(axis=1), big / small, np.nan)  # [1] eq. 19: equal terms
    return ratio, balance


def box_anonymize(
    X: np.ndarray,
    targets: Sequence[Target],
    k: int,
    *,
    ell: int | None = None,
    eps: np.ndarray | float | None = None,
    weights: Scheme = "equal",
    partition: Literal["targets", "standardized"] = "targets",
    columns: Sequence[str] | None = None,
    grid: np.ndarray | None = None,
) -> BoxRelease:
    """Release every record as a box of >= k records shaped for the target statistics.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Quasi-identifiers, original units.
    targets : sequence of Target
        Statistics to keep accurate (column indices into X), with p_C and delta0_C.
    k : int
        Minimum records per box.
    ell : int or None
        Minimum distinct values of every variable per box (eq. 29-32).
    eps : float or ndarray of shape (d,) or None
        Resolution of "distinct" per variable.
    weights : {"equal", "crisp", "fuzzy"}
        Weights of the estimates (eq. 40, eq. 25-26, section III). Crisp and fuzzy weights
        minimize eq. 43, which counts box width and sampling error but not bias: they estimate
        the statistic of the re-weighted records, which can differ much from the file's (an
        example in ``docs/benchmarks/``, "Box anonymization"), so the equal-weight
        intervals are always published too (``estimates_equal_weights``).
    partition : {"targets", "standardized"}
        "targets" splits the side with the largest a-weighted width; "standardized" the side
        with the largest width in standard deviations (the unweighted baseline).
    columns : sequence of str or None
        Names for the manifest (default x0, x1, ...).
    grid : ndarray of shape (d,) or None
        When given, box bounds move strictly outward onto this grid (``round_outward``), so
        that no published bound is a record's exact value; None keeps the exact cell bounds.

    Returns
    -------
    BoxRelease
    """
    X = check_matrix(X, columns=columns)
    n, d = X.shape
    k = check_k(k, n)
    names = list(columns) if columns is not None else [f"x{j}" for j in range(d)]
    targets = check_targets(targets, d)
    constant = X.min(axis=0) == X.max(axis=0)
    for t in targets:
        if t.stat in ("std", "correlation") and constant[list(t.vars)].any():
            bad = [names[v] for v in t.vars if constant[v]]
            raise ParameterError(
                f"target {t.stat} of {[names[v] for v in t.vars]}: {bad} is constant, so the "
                "statistic is undefined; drop the target or the variable",
                field="targets",
            )
    eps_arr = np.broadcast_to(np.asarray(0.0 if eps is None else eps, float), (d,)).copy()
    if weights not in ("equal", "crisp", "fuzzy"):
        raise ParameterError(f"weights must be 'equal', 'crisp' or 'fuzzy', got {weights!r}")
    if partition == "targets":
        a = combined_sensitivity(X, targets)  # [1] eq. 63 at the records
    elif partition == "standardized":
        sd = X.std(axis=0)
        a = np.broadcast_to(np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0), X.shape)
    else:
        raise ParameterError(f"partition must be 'targets' or 'standardized', got {partition!r}")
    labels = box_partition(X, np.ascontiguousarray(a), k, ell=ell, eps=eps_arr, columns=names)
    lo_b, hi_b = bounding_boxes(X, labels)
    if grid is not None:
        lo_b, hi_b = round_outward(lo_b, hi_b, np.broadcast_to(grid, (d,)))
    lo, hi = lo_b[labels], hi_b[labels]
    centres, half = (lo + hi) / 2, (hi - lo) / 2
    a_c = combined_sensitivity(centres, targets)  # [1] eq. 8: derivatives at the centres
    cost = (a_c * half).sum(axis=1)  # sum_i a_i Delta_i = n c(x), [1] eq. 16, 22
    c = cost / d
    A = combined_influence_scale(centres, targets)
    chosen = make_weights(weights, c, A, d)
    estimates = interval_estimates(lo, hi, chosen.w, targets)

    sizes = np.bincount(labels)
    first = np.unique(labels, return_index=True)[1]
    ratio, balance = optimum_ratios(X, labels, a_c, half, k, ell, eps_arr)
    all_u = {
        "equal": equal_weights(c, A, d).uncertainty,
        "crisp": _crisp(c, A, d).uncertainty,
        "fuzzy": _fuzzy(c, A, d).uncertainty,
    }
    details: dict[str, Any] = {
        "k": k,
        "l": ell,
        "epsilon": dict(zip(names, map(float, eps_arr), strict=True)),
        "partition": partition,
        "boxes": int(sizes.size),
        "records_per_box": _summary(sizes.astype(float)),
        "estimates": [_estimate_row(e, names, chosen.scheme) for e in estimates],
        "estimates_weights": chosen.scheme,
        "q_eq58": float(sum(e.target.p * e.delta / e.target.delta0 for e in estimates)),
        "half_widths": {names[j]: _summary(half[first, j]) for j in range(d)},
        "optimum": {
            "what": "ratio, per record: sum_i a_i Delta_i of its box / the same for the eq. 21 "
            "(with l: eq. 33-36) box of k records at the record's local density (k-th nearest "
            "neighbour); balance, per box: max_i a_i Delta_i / min_i a_i Delta_i (eq. 19: 1)",
            "ratio": _summary(ratio[np.isfinite(ratio)]),
            "balance": _summary(balance[np.isfinite(balance)]),
            "records_without_ratio": int((~np.isfinite(ratio)).sum()),
        },
        "weights": {
            "scheme": chosen.scheme,
            "kept_records": chosen.kept,
            "status": chosen.status,
            "message": chosen.message,
            **{key: float(v) for key, v in chosen.info.items()},
            "uncertainty_eq43": all_u,
            "A": A,
        },
        "sensitivity_at": "records for the partition; box centres for weights and estimates",
    }
    if chosen.scheme != "equal":
        # Weighted estimates (eq. 37-38) estimate the statistic of the re-weighted population,
        # not of the file; the equal-weight intervals are published beside them.
        uniform = np.full(n, 1.0 / n)
        details["estimates_equal_weights"] = [
            _estimate_row(e, names, "equal") for e in interval_estimates(lo, hi, uniform, targets)
        ]
    return BoxRelease(labels, lo, hi, chosen, c, A, estimates, details)


ESTIMANDS = {
    "equal": "the file's statistic (every record weighted equally)",
    "weighted": "the statistic of the original records re-weighted by the published weights "
    "([1] eq. 37-38), not the file's statistic: see estimates_equal_weights for that",
}


def _estimate_row(e: IntervalEstimate, names: list[str], scheme: str) -> dict[str, Any]:
    t = e.target
    return {
        "stat": t.stat,
        "vars": [names[v] for v in t.vars],
        "estimand": ESTIMANDS["equal" if scheme == "equal" else "weighted"],
        "p": t.p,
        "delta0": t.delta0,
        "centre_value": e.centre_value,
        "delta_eq9": e.delta,
        "q_eq57": e.delta / t.delta0,
        "linearized": list(e.linearized),
        "linearized_note": LINEARIZED_NOTE,
        "guaranteed": list(e.guaranteed),
        "lower_bound": e.lower_kind,
        "upper_bound": e.upper_kind,
        "attained": list(e.attained),
    }
