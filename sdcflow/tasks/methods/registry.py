"""The registry of masking methods: one entry per method, keyed by its spec name.

A method is a pydantic parameter model (the ``method:`` block of the release spec, with a
``name`` literal as discriminator) and an adapter ``mask(X, columns, params, rng, constraints)``
that calls the method's numerical core and returns a :class:`MaskResult`. Adding a method is
one new core module plus one entry in :data:`METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator

from sdcflow.tasks.box.release import BoxTarget, box_release, check_box_params
from sdcflow.tasks.fuzzy.microaggregation import fuzzy_microaggregation
from sdcflow.tasks.linear.constraints import LinearConstraints
from sdcflow.tasks.microaggregation.mdav import group_means, mdav
from sdcflow.tasks.microaggregation.ps import ps


class MethodParams(BaseModel):
    """Base of every method's parameters; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str


@dataclass
class MaskResult:
    """What a masking method hands to the checks and to publication.

    Attributes
    ----------
    masked : DataFrame with n rows
        The published columns that replace the quasi-identifiers, in the input row order
        (point methods: the quasi-identifier columns; box: ``<q>_lo``, ``<q>_hi``, ...).
    points : ndarray of shape (n, d)
        The released point value of every quasi-identifier (box: the box centre), on which
        information loss and linkage risk are measured.
    groups : ndarray of shape (n,), int, or None
        The crisp group / cell / centre each record was released as, when there is one.
    details : dict
        Figures for the manifest (sizes, parameters actually used...). Never raw values.
    identifying : list of str or None
        The columns of ``masked`` an intruder can link on (k-anonymity is measured on them);
        None means all of them. Box anonymization excludes its per-record ``weight``.
    """

    masked: pd.DataFrame
    points: np.ndarray
    groups: np.ndarray | None = None
    details: dict[str, Any] = field(default_factory=dict)
    identifying: list[str] | None = None

    @property
    def released_identifiers(self) -> pd.DataFrame:
        return self.masked if self.identifying is None else self.masked[self.identifying]


MaskFn = Callable[
    [np.ndarray, list[str], Any, np.random.Generator, LinearConstraints | None], MaskResult
]


def _k_gate(params: Any) -> dict[str, float]:
    """Every method with a k promises k-anonymity of its release: check it by default."""
    k = getattr(params, "k", None)
    return {"k_anonymity": float(k)} if k is not None else {}


@dataclass(frozen=True)
class Method:
    params: type[MethodParams]
    mask: MaskFn
    edits_while_masking: bool = False  # True: satisfies the linear edit rules by itself
    summary: str = ""
    # The gates a release with this method always gets (the spec may tighten or add more):
    # what the method promises is verified on what it actually released.
    default_checks: Callable[[Any], dict[str, float]] = _k_gate


# --- MDAV ------------------------------------------------------------------------------------


class MdavParams(MethodParams):
    name: Literal["mdav"] = "mdav"
    k: int = Field(ge=2, description="minimum group size")


def _crisp_result(X: np.ndarray, columns: list[str], labels: np.ndarray) -> MaskResult:
    """Release of a crisp microaggregation: every record replaced by its group's mean."""
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


def _mask_mdav(
    X: np.ndarray,
    columns: list[str],
    params: MdavParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    return _crisp_result(X, columns, mdav(X, params.k, columns=columns))


# --- Pairwise systematic (PS) microaggregation ----------------------------------------------


class PsParams(MethodParams):
    name: Literal["ps"] = "ps"
    k: int = Field(ge=2, description="minimum group size")


def _mask_ps(
    X: np.ndarray,
    columns: list[str],
    params: PsParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    return _crisp_result(X, columns, ps(X, params.k, columns=columns))


# --- Box anonymization (tasks/box_*.py) -----------------------------------------------------


class BoxParams(MethodParams):
    name: Literal["box"] = "box"
    k: int = Field(ge=2, description="minimum records per box")
    l: int | None = Field(None, ge=2, description="min distinct values per variable per box")  # noqa: E741
    epsilon: dict[str, float] = Field(
        default_factory=dict, description="per quasi-identifier: closer values count as equal"
    )
    targets: list[BoxTarget] = Field(
        default_factory=list, description="statistics to keep accurate (default: all means)"
    )
    weights: Literal["equal", "crisp", "fuzzy"] = "equal"
    partition: Literal["targets", "standardized"] = "targets"
    grid: dict[str, PositiveFloat] = Field(
        default_factory=dict,
        description="per quasi-identifier: bounds move outward onto this grid "
        "(default: a power of ten near sd/100)",
    )
    exact_bounds: bool = Field(
        False, description="publish the cells' exact min/max (each is a record's value)"
    )

    _cross_fields = model_validator(mode="after")(check_box_params)


def _mask_box(
    X: np.ndarray,
    columns: list[str],
    params: BoxParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    return MaskResult(**box_release(X, columns, params))


def _box_gates(params: BoxParams) -> dict[str, float]:
    gates = {
        **_k_gate(params),
        "box_max_records_outside": 0.0,  # every original record lies in its box
        "box_max_targets_outside": 0.0,  # every guaranteed interval holds its statistic
    }
    if params.l is not None:
        gates["box_l_diversity"] = float(params.l)
    return gates


# --- Fuzzy and constrained fuzzy microaggregation (tasks/fuzzy_microaggregation.py) ---------


class FuzzyParams(MethodParams):
    """Algorithm 1 of the constrained-fuzzy paper: FCM with m1 (or entropy FCM with lambda1),
    draw memberships with m2 (lambda2), and the anonymity guarantee made exact.

    Choosing m2: with c = n/k centres the membership mass a record puts on far centres is
    summable only for m < 1 + 2/d, and heavy-tailed data need less. Measured on 1000 records
    of the business survey (d = 6, k = 5, m1 = 1.1, seed 0), IL for m2 = 1.1 / 1.2 / 1.3 / 1.5:
    probabilistic guarantee 17.2 / 19.1 / 20.6 / 43.1; crisp guarantee 20.1 / 20.1 / 20.5 / 36.0.
    Keep m2 close to m1 unless the data are light-tailed; a larger m2 buys resistance to the
    transparency attack at a steep price in utility.
    """

    name: Literal["fuzzy"] = "fuzzy"
    k: int = Field(ge=2, description="anonymity parameter; c starts at floor(n/k)")
    m1: float | None = Field(None, gt=1, description="FCM fuzzifier for clustering")
    m2: float | None = Field(None, gt=1, description="FCM fuzzifier of the draw")
    lambda1: float | None = Field(
        None, gt=0, description="entropy FCM lambda for clustering (per standardized unit^2)"
    )
    lambda2: float | None = Field(
        None, gt=0, description="entropy FCM lambda of the draw (per standardized unit^2)"
    )
    restarts: int = Field(5, ge=1, le=100, description="FCM restarts, lowest objective kept")
    # Raising m2 for the whole file until an outlying cluster fills flattens every record's
    # draw: on 600 survey records (k = 5, m1 = 1.1, m2 = 1.5) three escalations gave IL 401
    # (ordinary records drawn to a centre 32 sd away) against IL 32.6 with none, where the
    # under-filled centres are dropped instead (lower c), as in Domingo-Ferrer & Torra.
    escalations: int = Field(
        0, ge=0, le=10, description="times m2 may be raised before c is lowered (0: never)"
    )
    guarantee: Literal["probabilistic_k_anonymity", "k_anonymity", "both"] = Field(
        "probabilistic_k_anonymity",
        description="every expected centre size >= k, every used centre >= k records, or both",
    )

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
        if all(v is None for v in fcm + efcm):
            raise ValueError(
                "set m1 and m2 (fuzzy c-means, both > 1, e.g. m1: 1.1, m2: 1.1) or "
                "lambda1 and lambda2 (entropy fuzzy c-means, both > 0)"
            )
        return self


class ConstrainedFuzzyParams(FuzzyParams):
    name: Literal["constrained_fuzzy"] = "constrained_fuzzy"  # type: ignore[assignment]


def _fuzzy_gates(params: FuzzyParams) -> dict[str, float]:
    """Gate on the guarantee the spec names (the method makes exactly that one hold)."""
    gates: dict[str, float] = {}
    if params.guarantee in ("probabilistic_k_anonymity", "both"):
        gates["probabilistic_k_anonymity"] = float(params.k)
    if params.guarantee in ("k_anonymity", "both"):
        gates["k_anonymity"] = float(params.k)
    return gates


def _mask_fuzzy(
    X: np.ndarray,
    columns: list[str],
    params: FuzzyParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    edit = isinstance(params, ConstrainedFuzzyParams)
    res = fuzzy_microaggregation(
        X,
        params.k,
        m1=params.m1,
        m2=params.m2,
        lambda1=params.lambda1,
        lambda2=params.lambda2,
        guarantee=params.guarantee,
        constraints=constraints if edit else None,
        columns=columns,
        restarts=params.restarts,
        escalations=params.escalations,
        random_state=rng,
    )
    details = dict(res.details)
    if not edit:
        details["constraints"] = "not applied by method fuzzy (constrained_fuzzy edits them)"
    elif constraints is None or constraints.is_empty:
        details["constraints"] = "no linear edit rules given: constrained_fuzzy behaves as fuzzy"
    return MaskResult(
        masked=pd.DataFrame(res.masked, columns=columns),
        points=res.masked,
        groups=res.labels,
        details=details,
    )


METHODS: dict[str, Method] = {
    "mdav": Method(MdavParams, _mask_mdav, summary="MDAV-generic microaggregation"),
    "ps": Method(PsParams, _mask_ps, summary="pairwise systematic microaggregation"),
    "box": Method(
        BoxParams,
        _mask_box,
        summary="box anonymization shaped for target statistics",
        default_checks=_box_gates,
    ),
    "fuzzy": Method(
        FuzzyParams,
        _mask_fuzzy,
        summary="fuzzy microaggregation (FCM / entropy FCM, random draw of centres)",
        default_checks=_fuzzy_gates,
    ),
    "constrained_fuzzy": Method(
        ConstrainedFuzzyParams,
        _mask_fuzzy,
        edits_while_masking=True,
        summary="constrained fuzzy microaggregation: centres satisfy the linear edit rules",
        default_checks=_fuzzy_gates,
    ),
}


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(
            f"unknown method {name!r}; choose one of {', '.join(sorted(METHODS))}"
        ) from None
