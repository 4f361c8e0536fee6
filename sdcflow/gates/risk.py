"""Disclosure-risk gates: distance-based record linkage, rank-based interval disclosure, the
share of records the transparency intruder re-identifies, and the re-identification risk per
record from key frequencies and sampling weights (individual and global risk, as sdcMicro's
``measure_risk``; :mod:`sdcflow.core.measures.risk`), and the magnitude dominance of the
released groups (the p % and (n, k) rules of tabular protection, :mod:`sdcflow.core.risk.\
dominance`): a group mean published beside knowledge of the group's other members gives its
largest contribution away when that contribution dominates the total. The dominance gates
judge released groups only (``Method.groups``): under a method that releases records they are
refused at preflight. A release of group means with a numeric key that is never negative in
the source (a magnitude such as turnover) gets the p % rule gate at 0 groups, p = 10, by
default (``Gate.with_group_means``); signed keys (a profit) are left out of the rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from sdcflow.core.measures.disclosure_risk import interval_disclosure, record_linkage
from sdcflow.core.measures.risk import RiskSummary, risk_summary
from sdcflow.core.risk.dominance import dominance
from sdcflow.gates.anonymity import TRANSPARENCY, reidentification
from sdcflow.gates.base import Gate, GateContext, GateOption, no_complete_record
from sdcflow.methods import get_method

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


@dataclass(frozen=True)
class _Dominated:
    """Released groups failing each rule, summed over the blocks masked apart."""

    p_rule: int
    nk_rule: int


def _releases_groups(ctx: GateContext) -> bool:
    """Whether the method releases group aggregates (``Method.groups``)."""
    return ctx.method is not None and get_method(ctx.method.name).groups is not None


def _dominance(ctx: GateContext) -> _Dominated | None:
    """The rules over the released groups on every numeric key that is a magnitude (present
    and never negative), each key on the records that hold it; None when no key is one.

    A released group is a class of identical released rows: two groups the method formed
    apart and released alike are one total to an intruder (the streamed path's ``GROUP BY``
    of the released keys). The contributions are the values as ingested, what each
    respondent gave: a repair moves records onto the edit rules before masking and, where
    the rules do not say a key is never negative, can move a contribution below 0, which
    the rules cannot read (a total of 0 beside a large contribution hides nothing) and
    which took the key out of them."""

    def compute() -> _Dominated | None:
        X = np.asarray(ctx.as_ingested, dtype=np.float64)
        # Blocks masked apart release their own groups: each key is judged in its block's.
        parts = (
            [(list(range(X.shape[1])), ctx.result)]
            if not ctx.result.blocks
            else [
                ([ctx.columns.index(c) for c in b.columns if c in ctx.columns], b.result)
                for b in ctx.result.blocks
            ]
        )
        n, k = ctx.option(DOMINANCE_NK)
        p = float(ctx.option(DOMINANCE_P))
        p_fail = nk_fail = 0
        measured = False
        for idx, part in parts:
            labels = part.released_classes()
            p_groups: set[int] = set()
            nk_groups: set[int] = set()
            for j in idx:
                have = ~np.isnan(X[:, j])
                if not have.any() or (X[have, j] < 0).any():
                    continue  # a signed key is no contribution
                done = dominance(labels[have], X[have, j : j + 1], n=int(n), k=float(k), p=p)
                p_groups.update(done.groups[done.p_fail[:, 0]].tolist())
                nk_groups.update(done.groups[done.nk_fail[:, 0]].tolist())
                measured = True
            p_fail += len(p_groups)
            nk_fail += len(nk_groups)
        return _Dominated(p_fail, nk_fail) if measured else None

    return ctx.cached("dominance", compute)


def _no_magnitude(ctx: GateContext) -> tuple[str, bool] | None:
    if not _releases_groups(ctx):
        name = ctx.method.name if ctx.method is not None else "none"
        return (
            f"not applicable: method {name} releases records, not group aggregates (the "
            "dominance rules measure what a released group's total gives away)",
            False,
        )
    if _dominance(ctx) is None:
        return (
            "no numeric key holds non-negative magnitudes (the dominance rules apply to "
            "contributions such as turnover)",
            False,
        )
    return None


def _p_dominated(ctx: GateContext) -> float:
    done = _dominance(ctx)
    return float(done.p_rule) if done is not None else float("nan")


def _nk_dominated(ctx: GateContext) -> float:
    done = _dominance(ctx)
    return float(done.nk_rule) if done is not None else float("nan")


def _p_remedy(ctx: GateContext) -> str:
    """What to change when a release fails the p % rule: a remedy the release can take.
    Never "publish the key unmasked": every remedy keeps it masked."""
    method = ctx.method
    fixable = method is not None and "dominance" in type(method).model_fields
    details = ctx.result.details or {}
    if "missing_numbers" in details:  # MDAV-generic groups them; `dominance` refuses gaps
        groups = (
            "a larger k (`dominance` does not take numeric keys with missing values, which "
            "this release groups on the values they have)"
        )
    elif fixable and getattr(method, "dominance", None) is not None:
        groups = (
            "`dominance: {p: ...}` at the gate's p, or a larger k (`dominance` is on and "
            "merges groups on its own p)"
        )
    elif fixable:
        groups = "`dominance: true` on the method (its groups merged until no record dominates)"
    else:
        groups = (
            "a crisp microaggregation method with `dominance: true` (groups merged until no "
            "record dominates)"
        )
    return (
        f"remedy: {groups}, or top-coding of the dominating key before grouping "
        "(`recode: {<key>: {top: ...}}`); keys that are not contributions take a threshold "
        "under accept.looser_checks"
    )


def _nk_remedy(ctx: GateContext) -> str:
    """What to change when a release fails the (n, k) rule. ``dominance`` merges groups on
    the p % rule alone, so it is not offered here; every remedy keeps the key masked."""
    return (
        "remedy: a larger k (more contributions in each group), or top-coding of the "
        "dominating key before grouping (`recode: {<key>: {top: ...}}`); keys that are not "
        "contributions take a threshold under accept.looser_checks"
    )


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
        on_groups=True,
        with_group_means=0.0,
        remedy=_p_remedy,
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
        on_groups=True,
        remedy=_nk_remedy,
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
