"""Information-loss gates: IL = 100 SSE/SST, generic and probabilistic loss on the moments,
and cluster-specific loss (fuzzy partitions of the original and released files).

Figures are computed on the numeric keys that went into masking (``ctx.original``) and their
released point values (``ctx.result.points``), on the records that have every numeric key
(:meth:`~sdcflow.gates.GateContext.numeric_pair`); percentages are in [0, 100]. The
exception is IL, over every value present in both files (a record missing one key counts with
its others), and gated against the records as ingested, before any repair (``as_ingested``),
so that it is comparable across methods on one source (a repair moves records too);
:func:`information_loss_figures` gives it beside the IL against the repaired records when a
repair changed them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Literal

import numpy as np
from pydantic import ConfigDict, Field

from sdcflow.core.measures.cluster_loss import ClusterLoss, cluster_loss
from sdcflow.core.measures.information_loss import (
    Statistic,
    generic_loss,
    probabilistic_loss_table,
    sse_sst_loss_present,
)
from sdcflow.gates.base import Gate, GateContext, GateOption, complete_records
from sdcflow.spec_model import SpecModel


class ClusterLossOptions(SpecModel):
    """Settings of the cluster-specific loss gates (fuzzy c-means on both files)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    c: int = Field(10, ge=2, description="clusters (at most the number of records)")
    m: float = Field(1.5, gt=1, description="fuzziness")
    restarts: int = Field(20, ge=1, description="best of this many runs by objective")
    alpha: float = Field(0.5, gt=0, le=1, description="alpha-cut of the index gates")
    random_state: int = Field(0, description="the measure's own seed (not a secret)")


CLUSTER_LOSS = GateOption(
    "cluster_loss", ClusterLossOptions, ClusterLossOptions(), "cluster-specific loss"
)


def _information_loss(ctx: GateContext) -> float:
    return sse_sst_loss_present(ctx.as_ingested, ctx.result.points)


def information_loss_figures(ctx: GateContext) -> dict[str, float]:
    """IL = 100 SSE/SST of the release against the records as ingested (``raw``, the gated
    figure) and, when a repair changed records before masking, against the repaired records
    (``repaired``); none when no key is numeric (``local_suppression`` on categorical keys
    only: there is no SSE/SST to measure)."""
    if ctx.original is None or np.asarray(ctx.original).ndim < 2 or np.shape(ctx.original)[1] == 0:
        return {}
    figures = {"raw": float(ctx.cached("information_loss", lambda: _information_loss(ctx)))}
    if ctx.raw is not None and not np.array_equal(ctx.raw, ctx.original, equal_nan=True):
        figures["repaired"] = sse_sst_loss_present(ctx.original, ctx.result.points)
    return figures


def _generic(statistic: Statistic, kind: Literal["absolute", "relative"]) -> Callable[..., float]:
    def compute(ctx: GateContext) -> float:
        return generic_loss(*ctx.numeric_pair(), statistic, kind=kind)

    return compute


def _pil(statistic: str) -> Callable[..., float]:
    def compute(ctx: GateContext) -> float:
        table = ctx.cached("pil", lambda: probabilistic_loss_table(*ctx.numeric_pair()))
        return float(table[statistic])

    return compute


def _blanked(ctx: GateContext) -> str:
    """IL counts the values present in both files: the values the release blanked (a key
    published missing for a whole group that mixes records having it with records missing
    it) are said beside the figure, which does not count them."""
    blanked = (ctx.result.details or {}).get("numeric_values_blanked") or {}
    total = sum(blanked.values())
    if not total:
        return ""
    return (
        f"over the values published in both files; the release blanked {total} values the "
        "file has, which IL does not count (method_details.numeric_values_blanked)"
    )


def _cluster(ctx: GateContext) -> ClusterLoss:
    def compute() -> ClusterLoss:
        opts = ctx.option(CLUSTER_LOSS)
        original, points = ctx.numeric_pair()
        return cluster_loss(
            original,
            points,
            c=min(opts.c, original.shape[0]),
            m=opts.m,
            restarts=opts.restarts,
            alphas=(opts.alpha,),
            random_state=opts.random_state,
        )

    return ctx.cached("cluster_loss", compute)


def _cluster_distance(name: str) -> Callable[..., float]:
    def compute(ctx: GateContext) -> float:
        return float(getattr(_cluster(ctx), name))

    return compute


def _cluster_index(name: str) -> Callable[..., float]:
    def compute(ctx: GateContext) -> float:
        (indices,) = _cluster(ctx).alpha.values()
        return float(indices[name])

    return compute


GATES = [
    Gate("max_information_loss", "max",
         lambda ctx: ctx.cached("information_loss", lambda: _information_loss(ctx)),
         "IL = 100*SSE/SST on standardized quasi-identifiers, against the records as "
         "ingested (before any repair)", "%", reading=_blanked),
    Gate("max_generic_loss_means", "max", _generic("means", "relative"),
         "mean relative difference of the means", "%"),
    Gate("max_generic_loss_variances", "max", _generic("variances", "relative"),
         "mean relative difference of the variances", "%"),
    Gate("max_generic_loss_covariances", "max", _generic("covariances", "relative"),
         "mean relative difference of the covariances (upper triangle with diagonal)", "%"),
    Gate("max_generic_loss_correlations", "max", _generic("correlations", "absolute"),
         "mean absolute difference of the correlations", "correlation units"),
    Gate("max_pil_means", "max", _pil("means"), "probabilistic information loss of the means",
         "%", upper=100.0),
    Gate("max_pil_variances", "max", _pil("variances"), "PIL of the variances", "%",
         upper=100.0),
    Gate("max_pil_covariances", "max", _pil("covariances"), "PIL of the covariances", "%",
         upper=100.0),
    Gate("max_pil_correlations", "max", _pil("correlations"), "PIL of the correlations", "%",
         upper=100.0),
    Gate("max_pil", "max", _pil("average"),
         "average PIL of means, variances, covariances, correlations", "%", upper=100.0),
    Gate("max_cluster_loss_d1", "max", _cluster_distance("d1"),
         "fuzzy c-means centre distance d1, original vs released", "standardized units",
         option=CLUSTER_LOSS),
    Gate("max_cluster_loss_d2", "max", _cluster_distance("d2"),
         "fuzzy c-means membership distance d2, summed over records", "membership units",
         option=CLUSTER_LOSS),
    Gate("min_cluster_rand", "min", _cluster_index("rand"), "Rand index of the FCM alpha-cuts",
         "index (0..1)", option=CLUSTER_LOSS, upper=1.0),
    Gate("min_cluster_adjusted_rand", "min", _cluster_index("adjusted_rand"),
         "adjusted Rand index of the FCM alpha-cuts", "index (-1..1)", option=CLUSTER_LOSS,
         upper=1.0),
    Gate("min_cluster_jaccard", "min", _cluster_index("jaccard"),
         "Jaccard index of the FCM alpha-cuts", "index (0..1)", option=CLUSTER_LOSS,
         upper=1.0),
]  # fmt: skip
# every figure but IL is measured on the records that have every numeric key (moments and
# clusters on two at least); IL on every value present, of the numeric keys too
GATES = [
    replace(g, measures="numeric_keys")
    if g.key == "max_information_loss"
    else replace(g, measures="numeric_keys", not_checked=complete_records(2))
    for g in GATES
]
