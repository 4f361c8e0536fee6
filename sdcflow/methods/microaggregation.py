"""Methods ``mdav``, ``ps`` and ``univariate``: crisp microaggregation, every record replaced
by its group mean.

Options of every crisp method:

* ``standardize`` (default true): form the groups on standardized columns; false: on the
  centred values (units kept, large variables dominate).
* ``refine``: ``true`` or ``{seconds: 30, rounds: ...}``: local search and iterated local
  search (:mod:`sdcflow.core.microaggregation.refine`) from the method's partition; the
  SSE never goes up.
* ``dominance``: ``true`` or ``{p: 10}``: groups formed so that no record dominates: after
  grouping (and refining), every group failing the p % rule on a non-negative numeric key
  (its total less its two largest values below p % of the largest) is merged with its
  nearest group, until none fails (:mod:`sdcflow.core.microaggregation.dominance_repair`).
  Groups only grow, so k holds; within strata (categorical keys) and blocks, inside each.

A block of one variable (the whole file, or one of the spec's ``blocks``) is always grouped by
the optimal univariate algorithm, whatever crisp method is named: it is exact there.
Every release records, beside the sizes, the information loss, a provable lower bound on the
information loss of *any* partition into groups of at least k (the optimum included) and
their ratio (:mod:`sdcflow.core.microaggregation.bound`).

The release is a deterministic function of the file given the parameters (with ``refine``,
of the secret seed too when ``rounds`` is set; under a CPU-seconds budget alone the number of
rounds, and so the partition, varies from run to run: on EIA, k = 3, one second gave three
different partitions with one seed). The transparency intruder is credited with every
record's group either way (:class:`~sdcflow.methods.base.CrispIntruder`, the worst
case), so its figure does not depend on that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.measures.information_loss import sse_sst_loss, sse_sst_loss_present
from sdcflow.core.microaggregation.blocked import blocked_groups, blocked_mdav
from sdcflow.core.microaggregation.bound import sse_lower_bound
from sdcflow.core.microaggregation.dominance_repair import repair_dominance
from sdcflow.core.microaggregation.mdav import group_means, mdav_groups
from sdcflow.core.microaggregation.ps import ps_groups
from sdcflow.core.microaggregation.refine import refine_groups
from sdcflow.core.microaggregation.scaling import working_scale
from sdcflow.core.microaggregation.univariate import univariate_groups
from sdcflow.core.validation import check_k
from sdcflow.errors import ParameterError
from sdcflow.methods.base import MaskResult, Method, MethodParams, ReleaseView, refuse
from sdcflow.methods.keys import Key, masked_as
from sdcflow.spec_model import SpecModel

BOUND_SECONDS = 60.0  # CPU budget of the lower bound's nearest-neighbour search per block


class RefineOptions(SpecModel):
    """``refine:`` of a crisp method: ``true`` (these defaults) or a mapping."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    seconds: float = Field(
        10.0, gt=0, le=86400, description="CPU seconds for refinement (local search always ends)"
    )
    rounds: int | None = Field(
        None,
        ge=0,
        description="iterated-local-search rounds; with a seed, a reproducible result",
    )


class DominanceOptions(SpecModel):
    """``dominance:`` of a crisp method: ``true`` (p = 10) or ``{p: ...}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    p: float = Field(
        10.0,
        gt=0,
        le=100,
        description="p of the p % rule: a group whose total less its two largest values is "
        "below p % of the largest is merged with its nearest group",
    )


def _boolean_switches(schema: dict[str, Any]) -> None:
    """``refine`` and ``dominance`` also take ``true`` / ``false`` (the validator below reads
    them), which their annotations do not say: the JSON Schema lists a boolean beside the
    mapping, so editors do not flag ``dominance: true``."""
    for name in ("refine", "dominance"):
        options = schema.get("properties", {}).get(name, {}).get("anyOf")
        if options is not None and {"type": "boolean"} not in options:
            options.insert(1, {"type": "boolean"})


class CrispParams(MethodParams):
    """Parameters shared by the crisp microaggregation methods."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_boolean_switches)

    k: int = Field(ge=2, description="minimum group size")
    standardize: bool = Field(
        True, description="group on standardized columns (false: centred values only)"
    )
    refine: RefineOptions | None = Field(
        None, description="true or {seconds, rounds}: refine the partition (SSE never rises)"
    )
    dominance: DominanceOptions | None = Field(
        None,
        description="true or {p}: merge every group failing the p % rule on a non-negative "
        "numeric key with its nearest group, until none fails",
        json_schema_extra={"added": True},
    )

    @field_validator("refine", "dominance", mode="before")
    @classmethod
    def _switch(cls, value: Any, info: ValidationInfo) -> Any:
        """``true`` takes the option's defaults, ``false`` turns it off."""
        if value is True:
            return {"refine": RefineOptions, "dominance": DominanceOptions}[info.field_name]()
        if value is False:
            return None
        return value


class MdavParams(CrispParams):
    name: Literal["mdav"] = "mdav"
    cell_size: int | None = Field(
        None,
        ge=2,
        description="records per spatial cell: MDAV within cells, refined across their "
        "borders (large files; numeric keys with missing values: MDAV-generic within cells, "
        "not refined across them); none: exact MDAV on the whole file",
    )


class PsParams(CrispParams):
    name: Literal["ps"] = "ps"
    cell_size: int | None = Field(
        None,
        ge=2,
        description="records per spatial cell: PS within cells, refined across their "
        "borders (large files); none: PS on the whole file",
    )


class UnivariateParams(CrispParams):
    name: Literal["univariate"] = "univariate"


def crisp_result(X: np.ndarray, columns: list[str], labels: np.ndarray) -> MaskResult:
    """The release of a crisp partition: every record replaced by its group's mean.

    Shapes: X (n, d), labels (n,) with values 0..g-1.
    """
    points = group_means(X, labels)
    sizes = np.bincount(labels)
    return MaskResult(
        masked=pd.DataFrame(points, columns=columns),
        points=points,
        groups=labels,
        details={
            "groups": int(sizes.size),
            "min_group_size": int(sizes.min()),
            "max_group_size": int(sizes.max()),
        },
    )


def loss_bound_details(X: np.ndarray, points: np.ndarray, k: int) -> dict[str, Any]:
    """Information loss of a release, a lower bound for any partition with groups >= k, and
    their ratio (figures for the manifest; never a record value).

    Shapes: X (n, d) original, points (n, d) released.
    """
    Z = working_scale(X, True)  # the gate's scale: IL = 100 SSE / SST on standardized data
    sst = float(np.einsum("ij,ij->", Z, Z))
    il = sse_sst_loss(X, points)
    bound = sse_lower_bound(Z, k, seconds=BOUND_SECONDS)
    il_bound = 100.0 * bound.sse / sst if bound.sse is not None and sst > 0 else None
    return {
        "information_loss": il,
        "information_loss_lower_bound": il_bound,
        "information_loss_over_bound": il / il_bound if il_bound else None,
        "lower_bound": {
            "sse": bound.sse,
            "sst": sst,
            # 0.0 is a figure (records that coincide in groups of k), not "not computed"
            "nearest_neighbour_il": (
                100.0 * bound.nearest_neighbour / sst
                if bound.nearest_neighbour is not None and sst > 0
                else None
            ),
            "dual_il": 100.0 * bound.dual / sst if bound.dual is not None and sst > 0 else None,
            "neighbours": bound.neighbours,
            "seconds": bound.seconds,
            "status": bound.status,
        },
    }


def stratified_bound_details(
    X: np.ndarray, points: np.ndarray, strata: list[np.ndarray], k: int
) -> dict[str, Any]:
    """The loss of a release whose groups never cross strata (categorical keys agree within
    a stratum, the numeric keys microaggregated inside each), and a lower bound on the loss of
    any such partition: groups of at least k inside each stratum.

    On the gate's scale (columns standardized over the whole file) the SSE is the sum of the
    strata's SSEs, and each stratum's is at least its own bound
    (:func:`~sdcflow.core.microaggregation.bound.sse_lower_bound` on the stratum's rows,
    same scale), so the sum of the strata's bounds bounds the release. It does not bound
    partitions that ignore the strata. Shapes: X (n, p) numeric keys, no missing value;
    points (n, p) released; strata: row indices of each stratum.
    """
    Z = working_scale(X, True)
    sst = float(np.einsum("ij,ij->", Z, Z))
    il = sse_sst_loss(X, points)
    total = 0.0
    left = BOUND_SECONDS
    for rows in strata:
        bound = sse_lower_bound(Z[rows], k, seconds=left)
        left -= bound.seconds
        if bound.sse is None or left <= 0:
            status = bound.status if bound.sse is None else "not computed: over the CPU budget"
            return {"information_loss": il, "lower_bound": {"status": status}}
        total += bound.sse
    il_bound = 100.0 * total / sst if sst > 0 else None
    return {
        "information_loss": il,
        "information_loss_lower_bound": il_bound,
        "information_loss_over_bound": il / il_bound if il_bound else None,
        "lower_bound": {
            "sse": total,
            "sst": sst,
            "scope": "partitions into groups of at least k within the strata",
            "seconds": BOUND_SECONDS - left,
            "status": "ok",
        },
    }


def loss_without_bound(X: np.ndarray, released: np.ndarray, why: str) -> dict[str, Any]:
    """The information loss of a release whose lower bound is not computed, and why: the
    figure the gate reads (over the values present), so that the manifest never leaves the
    method's loss out because its bound is missing. Shapes: X (n, d) the records masked,
    released (n, d), NaN where missing."""
    return {
        "information_loss": sse_sst_loss_present(X, released),
        "lower_bound": {"status": f"not computed: {why}"},
    }


def released_loss_details(
    details: dict[str, Any], X: np.ndarray, released: np.ndarray, columns: list[str]
) -> dict[str, Any]:
    """``details`` with the information loss and ``IL / bound`` of the values as released.

    The method measures its loss on the group means; the precision step then rounds them
    (integer keys, ``precision:``), which moves values away from their group's mean and
    raises the loss. The loss the manifest and the report set beside the bound, and their
    ratio, are those of what is published: ``information_loss`` is recomputed on
    ``released`` (same records, same standardization), the unrounded figure kept as
    ``information_loss_before_rounding`` when it differs, whether the bound was computed or
    not (missing numbers, the bound's CPU budget). The bound is unchanged (it holds
    for any partition, and rounding a group's values away from their mean only adds to its
    SSE). With ``blocks``, each block's own figures are refreshed the same way.

    Shapes: X (n, d) the records masked, released (n, d) their released values, both with
    the columns ``columns`` (names, used to find each block's columns).
    """
    out = dict(details)
    bound = out.get("information_loss_lower_bound")
    if isinstance(out.get("information_loss"), float):  # with its bound or without
        il = sse_sst_loss_present(X, released)
        if il != out["information_loss"]:
            out["information_loss_before_rounding"] = out["information_loss"]
            out["information_loss"] = il
            if isinstance(bound, float):
                out["information_loss_over_bound"] = il / bound if bound > 0 else None
    parts = out.get("blocks")
    at = {c: j for j, c in enumerate(columns)}
    if isinstance(parts, list) and all(
        isinstance(p, dict) and set(p.get("columns", [])) <= at.keys() for p in parts
    ):
        refreshed = []
        for p in parts:
            idx = [at[c] for c in p["columns"]]
            refreshed.append(
                released_loss_details(p, X[:, idx], released[:, idx], list(p["columns"]))
            )
        out["blocks"] = refreshed
    return out


def _mask_crisp(
    X: np.ndarray,
    columns: list[str],
    params: CrispParams,
    rng: np.random.Generator,
    partition: Callable[[np.ndarray, int], np.ndarray] | None,
    algorithm: str,
) -> MaskResult:
    """Group (``partition(Z, k)`` for several variables), refine if asked, release group
    means, and record the figures."""
    k = check_k(params.k, X.shape[0])
    Z = working_scale(X, params.standardize)
    details: dict[str, Any] = {"scale": "standardized" if params.standardize else "centred"}
    if X.shape[1] == 1 or partition is None:  # one variable: the optimum, nothing to refine
        labels = univariate_groups(Z[:, 0], k)
        details["algorithm"] = "univariate (optimal)"
        if params.refine is not None:
            details["refine"] = "skipped: the univariate partition is optimal"
    else:
        labels = partition(Z, k)
        details["algorithm"] = algorithm
        if params.refine is not None:
            labels, report = refine_groups(
                Z,
                labels,
                k,
                seconds=params.refine.seconds,
                rounds=params.refine.rounds,
                rng=rng,
            )
            details["refine"] = {
                "sse_before": report.sse_before,
                "sse_after": report.sse_after,
                "groups_before": report.groups_before,
                "groups_after": report.groups_after,
                "rounds": report.rounds,
                "rounds_kept": report.kept,
                "seconds": report.seconds,
                "neighbours": report.neighbours,
                "exact_neighbours": report.exact_neighbours,
            }
    if params.dominance is not None:
        labels, details["dominance"] = _no_dominant_record(X, Z, labels, columns, params.dominance)
    result = crisp_result(X, columns, labels)
    result.details.update(details)
    result.details.update(loss_bound_details(X, result.points, k))
    return result


def _no_dominant_record(
    X: np.ndarray,
    Z: np.ndarray,
    labels: np.ndarray,
    columns: list[str],
    options: DominanceOptions,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The partition with the groups failing the p % rule merged with their nearest (on the
    scale the groups were formed on), and what was done, for the manifest (counts only)."""
    done = repair_dominance(labels, X, options.p, Z=Z)
    return done.labels, {
        "p": options.p,
        "columns": [c for c, on in zip(columns, done.columns, strict=True) if on],
        "groups_failing_before": done.failing_before,
        "groups_merged": done.merged,
        "groups_failing_after": done.failing_after,
        "rounds": done.rounds,
    }


def combined_dominance_details(parts: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``dominance`` details of a release masked in parts (strata), summed; None when no
    part repaired dominance."""
    done = [d["dominance"] for d in parts if isinstance(d.get("dominance"), dict)]
    if not done:
        return None
    counts = ("groups_failing_before", "groups_merged", "groups_failing_after")
    out: dict[str, Any] = {"p": done[0]["p"], "columns": done[0]["columns"]}
    out.update({c: int(sum(d[c] for d in done)) for c in counts})
    out["rounds"] = max(d["rounds"] for d in done)
    out["parts"] = len(done)
    return out


def _mask_mdav(
    X: np.ndarray,
    columns: list[str],
    params: MdavParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    if params.cell_size is None:
        return _mask_crisp(X, columns, params, rng, mdav_groups, "mdav")

    def cells(Z: np.ndarray, k: int) -> np.ndarray:
        return blocked_mdav(Z, k, params.cell_size)

    return _mask_crisp(X, columns, params, rng, cells, f"mdav in cells of {params.cell_size}")


def _mask_ps(
    X: np.ndarray,
    columns: list[str],
    params: PsParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    if params.cell_size is None:
        return _mask_crisp(X, columns, params, rng, ps_groups, "ps")

    def cells(Z: np.ndarray, k: int) -> np.ndarray:
        return blocked_groups(Z, k, params.cell_size, ps_groups)

    return _mask_crisp(X, columns, params, rng, cells, f"ps in cells of {params.cell_size}")


def _mask_univariate(
    X: np.ndarray,
    columns: list[str],
    params: UnivariateParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    if X.shape[1] != 1:
        raise ParameterError(
            f"method univariate microaggregates one variable, got {X.shape[1]}; give each "
            "variable its own block (blocks: [[a], [b], ...]) or use mdav for several"
        )
    return _mask_crisp(X, columns, params, rng, None, "univariate (optimal)")


def _options_lost_to_missing_numbers(params: CrispParams) -> list[str]:
    """Numeric keys with missing values are released by MDAV-generic on the values each
    record has, which neither refines its partition nor groups on centred values only."""
    return [
        option
        for option, off in (("refine", None), ("standardize", True), ("dominance", None))
        if getattr(params, option, off) != off
    ]


def _check_univariate(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """One numeric variable per mask call (per block with blocks)."""
    numeric, _ = masked_as(keys)
    groups = [list(b) for b in spec.blocks] if spec.blocks else [numeric]
    wide = [g for g in groups if len([c for c in g if c in numeric]) > 1]
    if wide:
        refuse(
            f"method univariate microaggregates one variable and {', '.join(wide[0])} "
            "would be masked together; give each numeric key its own block (blocks: "
            "[[a], [b], ...]) or use mdav for several"
        )


MDAV = Method(
    MdavParams,
    _mask_mdav,
    summary="MDAV-generic microaggregation",
    groups="means",
    scale_out="cells",
    missing_numbers=_options_lost_to_missing_numbers,
    cells=True,
)
PS = Method(
    PsParams,
    _mask_ps,
    summary="pairwise systematic microaggregation",
    groups="means",
    scale_out="cells",
    cells=True,
)
UNIVARIATE = Method(
    UnivariateParams,
    _mask_univariate,
    summary="optimal univariate microaggregation",
    groups="means",
    scale_out="one pass",
    check_spec=_check_univariate,
)
