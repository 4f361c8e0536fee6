"""Methods ``fuzzy`` and ``constrained_fuzzy``: fuzzy microaggregation and its constrained form.

Algorithm 1 of [1]: fuzzy c-means with ``m1`` (or entropy FCM with ``lambda1``) clusters the
records, every record is replaced by a centre drawn from its memberships computed with ``m2``
(``lambda2``), and the anonymity guarantee the spec names is made exact. ``constrained_fuzzy``
projects the centres onto the linear edit rules, so the release satisfies them: editing and
masking in one step ([1] Prop. 4 and 6).

The method's intruder (the transparency principle of [1] Sec. 1) knows the method and its
parameters: he refits the partition on the original records (``refit``, the gate's intruder,
as expensive as masking) or, more cheaply, computes memberships to the released centres with
the draw fuzziness the manifest records (``manifest``).

Large files (``cell_size``): the records are cut into spatial cells of at most ``cell_size``
records (recursive median cuts of the standardized keys, the cells of blocked MDAV) and each
cell is fuzzy-microaggregated on its own (:func:`fit_in_cells`); a record is released as a
centre of its own cell. The cells depend only on the data and ``cell_size`` (in the
manifest), so the ``refit`` intruder recomputes them and refits cell by cell, exactly as the
release was made; every guarantee is checked on the assembled release.

References
----------
.. [1] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic
   k-anonymity for data with constraints", Journal of Intelligent & Fuzzy Systems, 2020,
   doi:10.3233/JIFS-189074.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator
from scipy import sparse
from scipy.spatial import cKDTree

from sdcflow.core.fuzzy.microaggregation import (
    Fit,
    FitSettings,
    StandardizedFit,
    fit_standardized,
    fuzzy_microaggregation,
    fuzzy_partition,
)
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.projection import PolyhedronProjector
from sdcflow.core.measures.disclosure_risk import fuzzy_membership_rows
from sdcflow.core.microaggregation.neighbours import spatial_cells
from sdcflow.core.parallel import map_parts
from sdcflow.core.validation import (
    check_cell_size,
    check_resolution,
    standardize,
    standardize_with,
)
from sdcflow.methods.base import MaskResult, Method, MethodParams, ReleaseView, refuse
from sdcflow.methods.keys import Key, key_numbers, masked_as, numeric_keys

Guarantee = Literal["probabilistic_k_anonymity", "k_anonymity", "both"]

# m1 = m2 = 1.1: the draw nearly as crisp as the clustering (see FuzzyParams), which keeps
# the far-centre membership mass summable for up to d = 20 variables (m < 1 + 2/d).
DEFAULT_FUZZINESS: dict[str, float] = {"m1": 1.1, "m2": 1.1}


class FuzzyParams(MethodParams):
    """Parameters of fuzzy microaggregation ([1] Algorithm 1).

    Without ``m1``/``m2`` and ``lambda1``/``lambda2``, fuzzy c-means with
    ``m1 = m2 = 1.1`` (``DEFAULT_FUZZINESS``); a spec that gives one of ``m1``, ``m2``
    gets the other from there. Keep ``m2`` close to ``m1``: with c = n/k centres the
    membership mass a record puts on far centres is summable only for m < 1 + 2/d, and
    heavy-tailed data need less (figures in docs/benchmarks/).
    """

    name: Literal["fuzzy"] = "fuzzy"
    k: int = Field(ge=2, description="anonymity parameter; c starts at floor(n/k)")
    m1: float | None = Field(None, gt=1, description="FCM fuzzifier for clustering (default 1.1)")
    m2: float | None = Field(None, gt=1, description="FCM fuzzifier of the draw (default 1.1)")
    lambda1: float | None = Field(
        None, gt=0, description="entropy FCM lambda for clustering (per standardized unit^2)"
    )
    lambda2: float | None = Field(
        None, gt=0, description="entropy FCM lambda of the draw (per standardized unit^2)"
    )
    restarts: int = Field(5, ge=1, le=100, description="FCM restarts, lowest objective kept")
    # Raising m2 for the whole file flattens every record's draw; lowering c instead (as in
    # Domingo-Ferrer & Torra) keeps utility, so escalations are off by default.
    escalations: int = Field(
        0, ge=0, le=10, description="times m2 may be raised before c is lowered (0: never)"
    )
    guarantee: Guarantee = Field(
        "probabilistic_k_anonymity",
        description="every expected centre size >= k, every used centre >= k records, or both",
    )
    cell_size: int | None = Field(
        None,
        ge=2,
        description="records per spatial cell (at least 2k): each cell fuzzy-microaggregated "
        "on its own, cost linear in n (large files; runs under runner: dask); none: the "
        "whole file at once",
    )

    def fit_arguments(self) -> dict[str, Any]:
        """The keyword arguments of the fit (the masking's and the intruder's rerun): the
        spec's fit parameters and, with ``cell_size``, the fit within spatial cells."""
        args = self.model_dump(
            include={"m1", "m2", "lambda1", "lambda2", "guarantee", "restarts", "escalations"}
        )
        if self.cell_size is not None:
            args["fit"] = in_cells(check_cell_size(self.cell_size, self.k))
        return args

    @model_validator(mode="before")
    @classmethod
    def _default_fuzziness(cls, data: Any) -> Any:
        """Fuzzy c-means with ``m1`` / ``m2`` of ``DEFAULT_FUZZINESS`` where the spec
        names neither them nor the entropy family (one place for the defaults: a release
        and ``sdcflow compare`` read the same)."""
        if not isinstance(data, dict):
            return data
        if data.get("lambda1") is not None or data.get("lambda2") is not None:
            return data
        return {**data, **{k: v for k, v in DEFAULT_FUZZINESS.items() if data.get(k) is None}}

    @model_validator(mode="after")
    def _one_family(self) -> FuzzyParams:
        fcm = (self.m1, self.m2)
        efcm = (self.lambda1, self.lambda2)
        if any(v is not None for v in fcm) and any(v is not None for v in efcm):
            raise ValueError(
                "give m1 and m2 (fuzzy c-means) or lambda1 and lambda2 (entropy fuzzy "
                "c-means), not both families; remove one pair"
            )
        for pair, names in ((fcm, ("m1", "m2")), (efcm, ("lambda1", "lambda2"))):
            if (pair[0] is None) != (pair[1] is None):
                missing = names[0] if pair[0] is None else names[1]
                raise ValueError(f"{missing} is missing; {names[0]} and {names[1]} go together")
        return self


class ConstrainedFuzzyParams(FuzzyParams):
    name: Literal["constrained_fuzzy"] = "constrained_fuzzy"  # type: ignore[assignment]


def _promises(params: FuzzyParams) -> dict[str, float]:
    """Gate on the guarantee the spec names (the method makes exactly that one hold)."""
    gates: dict[str, float] = {}
    if params.guarantee in ("probabilistic_k_anonymity", "both"):
        gates["probabilistic_k_anonymity"] = float(params.k)
    if params.guarantee in ("k_anonymity", "both"):
        gates["k_anonymity"] = float(params.k)
    return gates


def _conflicts(params: FuzzyParams, checks: Mapping[str, float]) -> list[str]:
    """A crisp k gate under the probabilistic guarantee only: the method makes every expected
    group size >= k, not every released group, so the gate fails after the whole run."""
    if params.guarantee != "probabilistic_k_anonymity":
        return []
    return [
        f"checks.{key}: method {params.name} under guarantee: probabilistic_k_anonymity "
        f"(the default) promises an expected group size of k, not {key}; set method.guarantee: "
        f"both (or k_anonymity), or gate probabilistic_k_anonymity instead"
        for key in ("k_anonymity", "block_k_anonymity")
        if checks.get(key, 0) > 1
    ]


@dataclass(frozen=True)
class FuzzyIntruder:
    """The transparency intruder of fuzzy microaggregation.

    ``mode='refit'`` reruns the fit (same k, fuzziness, guarantee, restarts, edit rules and,
    with ``cell_size``, the same spatial cells, each refitted on its own; his own seed) and
    maps his centres to the nearest released ones; ``mode='manifest'`` takes the
    memberships of every record to the released centres with the draw fuzziness the manifest
    records (cheap, but blind to the recursion into sub-clusters). Under ``guarantee:
    k_anonymity`` / ``both`` the released draw is the constrained redraw; his model is the
    free draw.
    """

    params: FuzzyParams
    constraints: LinearConstraints | None
    draw_fuzziness: dict[str, float]
    mode: Literal["refit", "manifest"] = "refit"

    def with_mode(self, mode: Literal["refit", "manifest"]) -> FuzzyIntruder:
        return FuzzyIntruder(self.params, self.constraints, self.draw_fuzziness, mode)

    def draw_distributions(
        self, X: np.ndarray, result: MaskResult, *, random_state: int = 0
    ) -> sparse.csr_matrix:
        """Shapes: X (n, d) original quasi-identifiers -> (n, G) over ``result.groups``."""
        groups = result.group_labels()
        Z, mean, scale = standardize(X)
        labels, first = np.unique(groups, return_index=True)
        released = np.zeros((int(labels.max()) + 1, X.shape[1]))
        released[labels] = standardize_with(result.points[first], mean, scale)
        if self.mode == "manifest":
            m = self.draw_fuzziness.get("m", self.params.m2)
            lam = self.draw_fuzziness.get("lambda", self.params.lambda2)
            return fuzzy_membership_rows(
                Z, released, labels, m=None if lam is not None else m, lam=lam
            )
        part = fuzzy_partition(
            X,
            self.params.k,
            constraints=self.constraints,
            random_state=random_state,
            **self.params.fit_arguments(),
        )
        # Each of his centres lands on the nearest released centre; probabilities landing on
        # the same released centre add up.
        _, nearest = cKDTree(released[labels]).query(part.centers_std, k=1)
        n = X.shape[0]
        rows = np.repeat(np.arange(n), np.diff(part.indptr))
        U = sparse.csr_matrix(
            (part.prob, (rows, labels[nearest[part.leaf]])), shape=(n, released.shape[0])
        )
        U.sum_duplicates()
        return U


# --- Large files (``cell_size``): the same fit within spatial cells ---------------------------


def fit_in_cells(
    Z: np.ndarray,
    settings: FitSettings,
    proj: PolyhedronProjector | None,
    rng: np.random.Generator,
    *,
    cell_size: int,
) -> StandardizedFit:
    """The fuzzy partition fitted within spatial cells of at most ``cell_size`` records.

    The standardized records are cut by recursive median cuts
    (:func:`~sdcflow.core.microaggregation.neighbours.spatial_cells`, the cells of blocked
    MDAV) into cells of ``cell_size / 2`` to ``cell_size`` records (so at least k each when
    ``cell_size >= 2k``), and every cell is fitted on its own by
    :func:`~sdcflow.core.fuzzy.microaggregation.fit_standardized` -- the unchanged
    algorithm, in the whole file's standardized coordinates and with the same edit rules --
    as one piece of :func:`~sdcflow.core.parallel.map_parts` (a Prefect task run on a Dask
    worker under ``runner: dask``). A record can be drawn only to centres of its own cell.
    At a fixed ``cell_size`` the cost is linear in n (figures: ``docs/benchmarks/``,
    section "Fuzzy microaggregation in cells").

    The guarantees hold for the assembled partition because they hold in every cell: a
    centre's expected size is a sum over the records of its cell only, so every centre's is
    >= k; the constrained draw then runs over the assembled partition (records of different
    cells never share a centre); every centre is projected on the edit rules. Each cell's
    randomness is a seed drawn from ``rng`` in cell order before any cell runs, so the
    partition does not depend on the map that ran the cells, nor on their order.

    Shapes: Z (n, d) standardized records -> a :class:`StandardizedFit` over all n records,
    centres of every cell numbered cell by cell.
    """
    n, d = Z.shape
    order, bounds = spatial_cells(Z, int(cell_size))
    cells = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
    seeds = rng.integers(0, 2**63 - 1, size=len(cells), dtype=np.int64)  # in cell order
    calls = [
        (np.ascontiguousarray(Z[order[lo:hi]]), settings, proj, int(seed))
        for (lo, hi), seed in zip(cells, seeds, strict=True)
    ]
    fits = map_parts(fit_cell, calls, "cell")
    del calls
    rows, leaves, probs, centres, expected = [], [], [], [], []
    offset = 0
    for (lo, hi), fit in zip(cells, fits, strict=True):
        counts = np.diff(fit.indptr)
        rows.append(np.repeat(order[lo:hi], counts))  # global record of every entry
        leaves.append(fit.leaf + offset)
        probs.append(fit.prob)
        centres.append(fit.centers_std)
        expected.append(fit.expected)
        offset += len(fit.expected)
    r = np.concatenate(rows)
    leaf = np.concatenate(leaves)
    prob = np.concatenate(probs)
    by_record = np.lexsort((leaf, r))
    r, leaf, prob = r[by_record], leaf[by_record], prob[by_record]
    logs = [fit.log for fit in fits]
    # the fuzziest draw any cell used (escalations can differ between cells)
    tops = [log["draw_top"] for log in logs]
    if "m" in tops[0]:
        top = max(tops, key=lambda t: t["m"])
    else:
        top = min(tops, key=lambda t: t["lambda"])
    unconverged = [log["fcm_status_top"] for log in logs if not log["converged_top"]]
    log = {
        "fcm_runs": sum(int(x["fcm_runs"]) for x in logs),
        "merged_clusters": sum(int(x["merged_clusters"]) for x in logs),
        "c_initial": sum(int(x["c_initial"]) for x in logs),
        "c_top": sum(int(x["c_top"]) for x in logs),
        "draw_top": top,
        "draw_used": [v for x in logs for v in x["draw_used"]],
        "objective_top": float(sum(x["objective_top"] for x in logs)),  # additive over cells
        "converged_top": not unconverged,
        "fcm_status_top": (
            f"converged in every one of {len(cells)} cells"
            if not unconverged
            else f"not converged in {len(unconverged)} of {len(cells)} cells: {unconverged[0]}"
        ),
        "truncation_top": None,
    }
    return StandardizedFit(
        indptr=np.searchsorted(r, np.arange(n + 1)),
        leaf=leaf,
        prob=prob,
        centers_std=np.concatenate(centres).reshape(offset, d),
        expected=np.concatenate(expected),
        log=log,
        cells=len(cells),
    )


def fit_cell(
    Zc: np.ndarray, settings: FitSettings, proj: PolyhedronProjector | None, seed: int
) -> StandardizedFit:
    """One cell of :func:`fit_in_cells`: its standardized records (m, d), the settings, the
    rules in standardized coordinates and its own seed -> its partition (m records, its own
    centres numbered from 0)."""
    return fit_standardized(Zc, settings, proj, np.random.default_rng(seed))


def in_cells(cell_size: int) -> Fit:
    """The ``fit`` of :func:`~sdcflow.core.fuzzy.microaggregation.fuzzy_partition` within
    spatial cells of at most ``cell_size`` records (:func:`fit_in_cells`)."""
    return functools.partial(fit_in_cells, cell_size=cell_size)


def _scale_out(params: FuzzyParams) -> Literal["cells"] | None:
    """Under ``runner: dask`` the cells are the pieces; without ``cell_size`` the fit is one
    piece of O(n^2 / k) work and the method is refused there."""
    return "cells" if params.cell_size is not None else None


def _mask(
    X: np.ndarray,
    columns: list[str],
    params: FuzzyParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    edit = isinstance(params, ConstrainedFuzzyParams)
    rules = constraints if edit and constraints is not None and not constraints.is_empty else None
    res = fuzzy_microaggregation(
        X, params.k, constraints=rules, columns=columns, random_state=rng, **params.fit_arguments()
    )
    details: dict[str, Any] = dict(res.details)
    if not edit:
        details["constraints"] = "not applied by method fuzzy (constrained_fuzzy edits them)"
    elif rules is None:
        details["constraints"] = "no linear edit rules given: constrained_fuzzy behaves as fuzzy"
    if params.cell_size is not None:
        details["cell_size"] = int(params.cell_size)
        details["algorithm"] = f"{params.name} in cells of {params.cell_size}"
    top = details.get("fuzziness_draw_top") or {}
    return MaskResult(
        masked=pd.DataFrame(res.masked, columns=columns),
        points=res.masked,
        groups=res.labels,
        intruder=FuzzyIntruder(params, rules, {k: float(v) for k, v in top.items()}),
        expected_sizes=np.asarray(res.expected_sizes, dtype=np.float64),
        draw_probabilities=res.draw_probabilities,
        details=details,
    )


def _check_spec(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """Categorical keys are strata, and inside each the release must be crisply k-anonymous."""
    _, categorical = masked_as(keys)
    if categorical and spec.method.guarantee == "probabilistic_k_anonymity":
        refuse(
            f"with categorical keys, {spec.method.name} needs a crisp guarantee inside each "
            "stratum; set `guarantee: k_anonymity` or `both`"
        )


def _check_data(spec: ReleaseView, data: Any, keys: Sequence[Key]) -> None:
    """The method works in standardized units: a numeric key whose other values it would
    lose to the rounding of its largest ones (one turnover of 1e40 among thousands) is
    refused before the run starts (:func:`~sdcflow.core.validation.check_resolution`), not
    in the mask step."""
    cols = numeric_keys(keys)
    if not data.num_rows or not cols:
        return
    X = key_numbers(data, cols)
    check_resolution(X[~np.isnan(X).any(axis=1)], cols, what="fuzzy microaggregation")


FUZZY = Method(
    FuzzyParams,
    _mask,
    promises=_promises,
    conflicts=_conflicts,
    summary="fuzzy microaggregation (FCM / entropy FCM, random draw of centres)",
    scale_out=_scale_out,
    cells=True,
    groups="centres",
    check_spec=_check_spec,
    check_data=_check_data,
)
CONSTRAINED_FUZZY = Method(
    ConstrainedFuzzyParams,
    _mask,
    edits_while_masking=True,
    promises=_promises,
    conflicts=_conflicts,
    summary="constrained fuzzy microaggregation: centres satisfy the linear edit rules",
    scale_out=_scale_out,
    cells=True,
    groups="centres",
    check_spec=_check_spec,
    check_data=_check_data,
)
