"""Disclosure-risk gates: distance-based record linkage, rank-based interval disclosure, the
share of records the transparency intruder re-identifies, and the re-identification risk per
record from key frequencies and sampling weights (individual and global risk, as sdcMicro's
``measure_risk``; :mod:`sdcflow.core.measures.risk`)."""

from __future__ import annotations

from sdcflow.core.measures.disclosure_risk import interval_disclosure, record_linkage
from sdcflow.core.measures.risk import RiskSummary, risk_summary
from sdcflow.gates.anonymity import TRANSPARENCY, reidentification
from sdcflow.gates.base import Gate, GateContext, GateOption, no_complete_record

INTERVAL_P = GateOption(
    "interval_disclosure_p",
    float | list[float] | None,
    tuple(range(1, 11)),
    "rank-interval width(s) in %; default 1..10 averaged",
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
