"""Disclosure-risk gates: distance-based record linkage, rank-based interval disclosure, the
share of records the transparency intruder re-identifies, and the re-identification risk per
record from key frequencies and sampling weights (individual and global risk, as sdcMicro's
``measure_risk``; :mod:`sdcflow.core.measures.risk`), and the magnitude dominance of the
released groups (the p % and (n, k) rules of tabular protection, :mod:`sdcflow.core.risk.\
dominance`): a group mean published beside knowledge of the group's other members gives its
largest contribution away when that contribution dominates the total."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from sdcflow.core.measures.disclosure_risk import interval_disclosure, record_linkage
from sdcflow.core.measures.risk import RiskSummary, risk_summary
from sdcflow.core.risk.dominance import DominanceResult, dominance
from sdcflow.gates.anonymity import TRANSPARENCY, reidentification
from sdcflow.gates.base import Gate, GateContext, GateOption, no_complete_record

INTERVAL_P = GateOption(
    "interval_disclosure_p",
    float | list[float] | None,
    tuple(range(1, 11)),
    "rank-interval width(s) in %; default 1..10 averaged",
)


DOMINANCE_P = GateOption(
    "dominance_p",
    Annotated[float, Field(gt=0)],
    10.0,
    "p of the p % rule: a released group fails on a numeric key when its total less its two "
    "largest contributions is below p % of the largest",
)
DOMINANCE_NK = GateOption(
    "dominance_nk",
    tuple[Annotated[int, Field(ge=1)], Annotated[float, Field(gt=0, le=100)]],
    (2, 85.0),
    "[n, k] of the (n, k) rule: a released group fails on a numeric key when its n largest "
    "contributions hold more than k % of its total",
)


def _dominance(ctx: GateContext) -> DominanceResult | None:
    """The rules over the released groups on the non-negative numeric keys, records holding
    every numeric key; None when no key is a non-negative magnitude."""

    def compute() -> DominanceResult | None:
        X = np.asarray(ctx.original, dtype=np.float64)
        complete = ~np.isnan(X).any(axis=1)
        X = X[complete]
        magnitudes = (X >= 0).all(axis=0)
        if not complete.any() or not magnitudes.any():
            return None
        n, k = ctx.option(DOMINANCE_NK)
        return dominance(
            ctx.result.group_labels()[complete],
            X[:, magnitudes],
            n=int(n),
            k=float(k),
            p=float(ctx.option(DOMINANCE_P)),
        )

    return ctx.cached("dominance", compute)


def _no_magnitude(ctx: GateContext) -> tuple[str, bool] | None:
    if _dominance(ctx) is None:
        return (
            "no numeric key holds non-negative magnitudes on the records that have every "
            "numeric key (the dominance rules apply to contributions such as turnover)",
            False,
        )
    return None


def _p_dominated(ctx: GateContext) -> float:
    done = _dominance(ctx)
    return float(done.n_groups_p_fail) if done is not None else float("nan")


def _nk_dominated(ctx: GateContext) -> float:
    done = _dominance(ctx)
    return float(done.nk_fail.any(axis=1).sum()) if done is not None else float("nan")


def _record_linkage(ctx: GateContext) -> float:
    return record_linkage(*ctx.numeric_pair())


def _interval_disclosure(ctx: GateContext) -> float:
    return interval_disclosure(*ctx.numeric_pair(), ctx.option(INTERVAL_P))


def key_risk(ctx: GateContext) -> RiskSummary:
    """Individual risk of every record over the released keys (weighted when the spec names
    a weight column), shared by two gates."""
    return ctx.cached(
        "key_risk", lambda: risk_summary(ctx.result.released_identifiers, ctx.weights)
    )


def _max_individual_risk(ctx: GateContext) -> float:
    return key_risk(ctx).max_risk


def _global_risk(ctx: GateContext) -> float:
    return key_risk(ctx).global_risk_percent


def _transparency(ctx: GateContext) -> float:
    return float(100.0 * reidentification(ctx).mean())


GATES = [
    Gate(
        "max_record_linkage",
        "max",
        _record_linkage,
        "distance-based record linkage: released records linked to their own original",
        "%",
        not_checked=no_complete_record,
        measures="numeric_keys",
        upper=100.0,
    ),
    Gate(
        "max_interval_disclosure",
        "max",
        _interval_disclosure,
        "rank-based interval disclosure: original values inside the released rank interval",
        "%",
        option=INTERVAL_P,
        not_checked=no_complete_record,
        measures="numeric_keys",
        upper=100.0,
    ),
    Gate(
        "max_p_dominated_groups",
        "max",
        _p_dominated,
        "released groups whose largest contribution the others estimate within p % on some "
        "non-negative numeric key (the p % rule)",
        "groups",
        option=DOMINANCE_P,
        not_checked=_no_magnitude,
        measures="numeric_keys",
    ),
    Gate(
        "max_nk_dominated_groups",
        "max",
        _nk_dominated,
        "released groups whose n largest contributions hold more than k % of the total on "
        "some non-negative numeric key (the (n, k) rule)",
        "groups",
        option=DOMINANCE_NK,
        not_checked=_no_magnitude,
        measures="numeric_keys",
    ),
    Gate(
        "max_individual_risk",
        "max",
        _max_individual_risk,
        "largest individual re-identification risk over the released keys (sdcMicro's "
        "individual risk from sample frequencies and sampling weights)",
        "probability (0..1)",
        upper=1.0,
    ),
    Gate(
        "max_global_risk",
        "max",
        _global_risk,
        "expected re-identifications (sum of individual risks) as a share of the records",
        "% of records",
        upper=100.0,
    ),
    Gate(
        "max_transparency_reidentification",
        "max",
        _transparency,
        "records re-identified by an intruder who knows the method and its parameters",
        "%",
        option=TRANSPARENCY,
        upper=100.0,
    ),
]
