"""Disclosure-risk gates: distance-based record linkage, rank-based interval disclosure and
the share of records the transparency intruder re-identifies."""

from __future__ import annotations

from sdcflow.tasks.gates.anonymity import TRANSPARENCY, reidentification
from sdcflow.tasks.gates.base import Gate, GateContext, GateOption
from sdcflow.tasks.measures.disclosure_risk import interval_disclosure, record_linkage

INTERVAL_P = GateOption(
    "interval_disclosure_p",
    float | list[float] | None,
    tuple(range(1, 11)),
    "rank-interval width(s) in %; default 1..10 averaged",
)


def _record_linkage(ctx: GateContext) -> float:
    return record_linkage(ctx.original, ctx.result.points)


def _interval_disclosure(ctx: GateContext) -> float:
    return interval_disclosure(ctx.original, ctx.result.points, ctx.option(INTERVAL_P))


def _transparency(ctx: GateContext) -> float:
    return float(100.0 * reidentification(ctx).mean())


GATES = [
    Gate(
        "max_record_linkage",
        "max",
        _record_linkage,
        "distance-based record linkage: released records linked to their own original",
        "%",
    ),
    Gate(
        "max_interval_disclosure",
        "max",
        _interval_disclosure,
        "rank-based interval disclosure: original values inside the released rank interval",
        "%",
        option=INTERVAL_P,
    ),
    Gate(
        "max_transparency_reidentification",
        "max",
        _transparency,
        "records re-identified by an intruder who knows the method and its parameters",
        "%",
        option=TRANSPARENCY,
    ),
]
