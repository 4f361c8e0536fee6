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
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .box_method import BoxTarget, box_release, check_box_params
from .constraints import LinearConstraints
from .mdav import group_means, mdav


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


def _mask_mdav(
    X: np.ndarray,
    columns: list[str],
    params: MdavParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    labels = mdav(X, params.k, columns=columns)
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


METHODS: dict[str, Method] = {
    "mdav": Method(MdavParams, _mask_mdav, summary="MDAV-generic microaggregation"),
    "box": Method(
        BoxParams,
        _mask_box,
        summary="box anonymization shaped for target statistics",
        default_checks=_box_gates,
    ),
}


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(
            f"unknown method {name!r}; choose one of {', '.join(sorted(METHODS))}"
        ) from None
