"""Post-release checks: each compares one figure with a threshold from the spec.

A check is a registry entry: the spec key under ``checks:``, whether the figure must be at
least (``min``) or at most (``max``) the threshold, and a function of the :class:`CheckContext`.
Adding a measure as a publication gate is one entry in :data:`CHECKS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from sdcflow.tasks.box.checks import (
    check_min_distinct,
    check_records_outside,
    check_targets_outside,
)
from sdcflow.tasks.gates.measures import MEASURE_CHECKS
from sdcflow.tasks.measures.anonymity import k_anonymity
from sdcflow.tasks.measures.information_loss import sse_sst_loss
from sdcflow.tasks.methods.registry import MaskResult


@dataclass
class CheckContext:
    """Everything a check may look at.

    Attributes
    ----------
    original : ndarray of shape (n, d)
        The quasi-identifiers that went into masking (after any repair), original units.
    columns : list of str, length d
        Quasi-identifier names.
    result : MaskResult
        What the method released.
    method : pydantic model
        The method parameters from the spec.
    edit_violations : mapping rule name -> number of violating released records, or None
        when the spec has no edit rules.
    extra : dict
        Anything else a check needs (sensitive columns, random generator...).
    """

    original: np.ndarray
    columns: list[str]
    result: MaskResult
    method: Any
    edit_violations: Mapping[str, int] | None = None
    kept: pd.DataFrame | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    key: str
    direction: Literal["min", "max"]
    compute: Callable[[CheckContext], float]
    description: str

    def passes(self, figure: float, threshold: float) -> bool:
        if not np.isfinite(figure):
            return False
        return figure >= threshold if self.direction == "min" else figure <= threshold


@dataclass(frozen=True)
class CheckOutcome:
    key: str
    figure: float
    threshold: float
    direction: Literal["min", "max"]
    passed: bool
    description: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.key,
            "figure": self.figure,
            "threshold": self.threshold,
            "rule": ">=" if self.direction == "min" else "<=",
            "verdict": "pass" if self.passed else "FAIL",
            "description": self.description,
        }


def _k_anonymity(ctx: CheckContext) -> float:
    return float(k_anonymity(ctx.result.released_identifiers))


def _block_k_anonymity(ctx: CheckContext) -> float:
    """Smallest k over the blocks masked separately (the whole file when there are none)."""
    blocks = ctx.result.details.get("blocks")
    if not blocks:
        return _k_anonymity(ctx)
    return float(min(k_anonymity(ctx.result.masked[b["released_columns"]]) for b in blocks))


def _probabilistic_k_anonymity(ctx: CheckContext) -> float:
    """Smallest expected number of records per published centre (fuzzy methods report it in
    ``details['expected_size']['min']``, per block under ``details['blocks']``); for crisp
    methods the expected sizes are the group sizes themselves."""
    details = ctx.result.details
    blocks = details.get("blocks") or []
    mins = [b["expected_size"]["min"] for b in blocks if isinstance(b.get("expected_size"), dict)]
    if isinstance(details.get("expected_size"), dict):
        mins.append(details["expected_size"]["min"])
    if mins:
        return float(min(mins))
    if ctx.result.groups is not None:
        sizes = np.bincount(np.asarray(ctx.result.groups, dtype=np.int64))
        return float(sizes[sizes > 0].min())
    return _k_anonymity(ctx)


def _information_loss(ctx: CheckContext) -> float:
    return sse_sst_loss(ctx.original, ctx.result.points)


def _edit_violations(ctx: CheckContext) -> float:
    if ctx.edit_violations is None:
        return 0.0
    return float(sum(ctx.edit_violations.values()))


CHECKS: dict[str, Check] = {
    c.key: c
    for c in [
        Check(
            "k_anonymity",
            "min",
            _k_anonymity,
            "smallest group of identical released quasi-identifier rows",
        ),
        Check(
            "block_k_anonymity",
            "min",
            _block_k_anonymity,
            "smallest k-anonymity among blocks of quasi-identifiers masked separately",
        ),
        Check(
            "probabilistic_k_anonymity",
            "min",
            _probabilistic_k_anonymity,
            "smallest expected records per published centre (fuzzy draw; crisp: group size)",
        ),
        Check(
            "max_information_loss",
            "max",
            _information_loss,
            "IL = 100*SSE/SST on standardized quasi-identifiers",
        ),
        Check(
            "max_edit_violations",
            "max",
            _edit_violations,
            "released records that violate an edit rule",
        ),
        Check(
            "box_l_diversity",
            "min",
            check_min_distinct,
            "box: fewest distinct values (closer than epsilon count as one) of a variable in a box",
        ),
        Check(
            "box_max_records_outside",
            "max",
            check_records_outside,
            "box: original records outside their released box",
        ),
        Check(
            "box_max_targets_outside",
            "max",
            check_targets_outside,
            "box: target statistics outside their guaranteed published interval",
        ),
        *(Check(*spec) for spec in MEASURE_CHECKS),  # loss, risk, l-diversity gates
    ]
}

# Checks that run on every release even when the spec does not name them, with this threshold.
DEFAULT_CHECKS: dict[str, float] = {"max_edit_violations": 0}


def run_checks(ctx: CheckContext, thresholds: Mapping[str, float]) -> list[CheckOutcome]:
    """Evaluate every check named in ``thresholds`` on ``ctx``, plus the defaults: the
    checks every release gets and those the method's registry entry adds (what it promises,
    e.g. k-anonymity for its k). A threshold in the spec overrides a default."""
    from sdcflow.tasks.methods.registry import get_method

    method_gates = get_method(ctx.method.name).default_checks(ctx.method) if ctx.method else {}
    if ctx.result.details.get("blocks") and "k_anonymity" in method_gates:
        # Blocks masked separately promise k per block, not for the joint tuple (a record's
        # combination of block groups may be unique); the spec can still ask for the joint k.
        method_gates["block_k_anonymity"] = method_gates.pop("k_anonymity")
    defaults = dict(DEFAULT_CHECKS)
    if ctx.edit_violations is None:
        # No edit rule could be evaluated on the release (none given, or none applies to
        # the released columns, as with box intervals): the gate would pass vacuously.
        defaults.pop("max_edit_violations")
    wanted = {**defaults, **method_gates, **thresholds}
    outcomes = []
    for key, threshold in wanted.items():
        check = CHECKS[key]
        figure = float(check.compute(ctx))
        outcomes.append(
            CheckOutcome(
                key,
                figure,
                float(threshold),
                check.direction,
                check.passes(figure, float(threshold)),
                check.description,
            )
        )
    return outcomes
