"""Gates on special uniques, households and sensitive distributions (issue 44): the largest
DIS-SUDA score over the released keys, the largest household risk, and t-closeness.

* ``max_suda_dis``: SUDA2's DIS score of every record (:func:`sdcflow.core.risk.suda2`) on
  the codes of the released keys, a missing or suppressed value a category of its own (as
  every k of sdcflow counts identical rows); the figure is the largest score. A record is
  scored only when it is unique on every released key, so a release whose every class of
  identical rows holds two records or more scores 0 everywhere without a search.
* ``max_household_risk``: a household's risk is the probability that at least one of its
  members is re-identified, ``1 - prod (1 - r_i)`` over the members' individual risks
  (:func:`sdcflow.core.risk.household_risk`; the risks of ``max_individual_risk``, weighted
  when the spec names a weight column); every member of the household carries it. The
  households come from ``household_column:``.
* ``max_t_closeness``: the Earth Mover's Distance between a sensitive column's distribution in a
  class of identical released key rows and in the whole file
  (:func:`sdcflow.core.risk.t_closeness`), largest over the classes and the ``sensitive:``
  columns. A numeric column is measured with the ordered distance on the records that hold a
  value (a class whose members all lack it discloses no value); any other column with the
  equal distance, a missing value a category of its own (as l-diversity counts it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import Field

from sdcflow.core.measures.anonymity import key_codes
from sdcflow.core.risk.household import household_risk
from sdcflow.core.risk.suda import suda2
from sdcflow.core.risk.tcloseness import t_closeness
from sdcflow.errors import InputError, Reason
from sdcflow.gates.base import Gate, GateContext, GateOption
from sdcflow.gates.risk import key_risk

SUDA_DIS_FRACTION = GateOption(
    "suda_dis_fraction",
    Annotated[float, Field(gt=0, lt=1)],
    0.01,
    "sampling fraction of the DIS-SUDA scores (sdcMicro's DisFraction), 0 < f < 1",
)


@dataclass(frozen=True)
class DisFigures:
    """The DIS-SUDA figures of a release (figures only, never a record's score).

    Attributes
    ----------
    max_dis_score : float
        The largest DIS score, 0 when no record is unique on the released keys.
    records_with_dis_score : int
        Records with a DIS score above 0 (each is unique on every released key).
    dis_fraction : float
        The sampling fraction the scores assume.
    """

    max_dis_score: float
    records_with_dis_score: int
    dis_fraction: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "max_dis_score": self.max_dis_score,
            "records_with_dis_score": self.records_with_dis_score,
            "dis_fraction": self.dis_fraction,
        }


def dis_scores(released: pd.DataFrame, dis_fraction: float) -> np.ndarray:
    """The DIS-SUDA score of every released record, shape (n,), on the codes of the released
    keys (:func:`~sdcflow.core.measures.anonymity.key_codes`; the missing code -1 is a
    value: ``missing=None``). Without a record unique on every key there is no minimal
    sample unique (a record unique on a subset of keys is unique on all of them), so the
    scores are 0 without a search."""
    codes = key_codes(released)
    _, counts = np.unique(codes, axis=0, return_counts=True)
    if codes.shape[0] == 0 or counts.min() >= 2:
        return np.zeros(codes.shape[0])
    return suda2(codes, missing=None, dis_fraction=dis_fraction).dis_score


def dis_figures(released: pd.DataFrame, dis_fraction: float) -> DisFigures:
    """:class:`DisFigures` of the released keys ``released`` (n rows, one column per key)."""
    scores = dis_scores(released, dis_fraction)
    return DisFigures(
        float(scores.max()) if scores.size else 0.0,
        int((scores > 0).sum()),
        float(dis_fraction),
    )


#: Keys above which the manifest's disclosure summary leaves the DIS figures out when some
#: record is unique: SUDA2 may search every subset of the keys (2^m of them); the gate
#: ``max_suda_dis`` computes them whatever the number of keys when a spec asks for it.
SUMMARY_MAX_KEYS = 12


def summary_dis_figures(released: pd.DataFrame, options: object) -> dict[str, object]:
    """The DIS figures of the manifest's disclosure summary (:class:`DisFigures`), at the
    spec's ``measures:`` fraction; with more than :data:`SUMMARY_MAX_KEYS` keys and a record
    unique on them, a note in place of the figures."""
    value = getattr(options, SUDA_DIS_FRACTION.key, None)
    fraction = float(SUDA_DIS_FRACTION.default if value is None else value)
    codes = key_codes(released)
    _, counts = np.unique(codes, axis=0, return_counts=True)
    if codes.shape[1] > SUMMARY_MAX_KEYS and counts.size and counts.min() == 1:
        return {
            "dis_fraction": fraction,
            "note": f"not computed for {codes.shape[1]} keys (more than {SUMMARY_MAX_KEYS}); "
            "gate max_suda_dis computes it",
        }
    return dis_figures(released, fraction).as_dict()


def _dis(ctx: GateContext) -> np.ndarray:
    return ctx.cached(
        "dis_scores",
        lambda: dis_scores(ctx.result.released_identifiers, float(ctx.option(SUDA_DIS_FRACTION))),
    )


def _max_suda_dis(ctx: GateContext) -> float:
    scores = _dis(ctx)
    return float(scores.max()) if scores.size else 0.0


def _households(ctx: GateContext) -> np.ndarray:
    if ctx.households is None:
        raise InputError(
            "the household risk needs the household of every record: add "
            "`household_column: <column>` to the release spec",
            code=Reason.SPEC_CONTRADICTION,
        )
    return ctx.households


def _max_household_risk(ctx: GateContext) -> float:
    def compute() -> float:
        risk = np.clip(key_risk(ctx).risk, 0.0, 1.0)
        return float(household_risk(risk, _households(ctx)).record_risk.max())

    return ctx.cached("max_household_risk", compute)


def _sensitive(ctx: GateContext) -> pd.DataFrame:
    if ctx.sensitive is None or ctx.sensitive.shape[1] == 0:
        raise InputError(
            "t-closeness needs the sensitive columns: add `sensitive: [column, ...]` to the "
            "release spec",
            code=Reason.SPEC_CONTRADICTION,
        )
    return ctx.sensitive.reset_index(drop=True)


def t_closeness_by_column(ctx: GateContext) -> dict[str, float]:
    """The largest class distance (EMD, 0..1) of every sensitive column that holds a value;
    a numeric column all missing is left out."""

    def compute() -> dict[str, float]:
        codes = key_codes(ctx.result.released_identifiers)
        out: dict[str, float] = {}
        for column, values in _sensitive(ctx).items():
            if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
                held = values.notna().to_numpy()
                if not held.any():
                    continue
                numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)[held]
                out[str(column)] = t_closeness(codes[held], numbers, distance="ordered").t
            else:
                labels = pd.factorize(values, use_na_sentinel=False)[0]
                out[str(column)] = t_closeness(codes, labels, distance="equal").t
        return out

    return ctx.cached("t_closeness", compute)


def _t_closeness(ctx: GateContext) -> float:
    figures = t_closeness_by_column(ctx)
    return max(figures.values()) if figures else float("nan")


def _no_sensitive_value(ctx: GateContext) -> tuple[str, bool] | None:
    if ctx.sensitive is not None and ctx.sensitive.shape[1] and not t_closeness_by_column(ctx):
        return ("every sensitive column is numeric and missing on every record", False)
    return None


GATES = [
    Gate(
        "max_suda_dis",
        "max",
        _max_suda_dis,
        "largest DIS-SUDA score over the released keys (special uniques: the estimated "
        "probability that a record unique in the file is unique in the population, spread "
        "by its minimal sample uniques)",
        "DIS score (0..1)",
        option=SUDA_DIS_FRACTION,
        upper=1.0,
    ),
    Gate(
        "max_household_risk",
        "max",
        _max_household_risk,
        "largest household risk: the probability that at least one member of a household is "
        "re-identified, from the individual risks over the released keys",
        "probability (0..1)",
        requires=frozenset({"household_column"}),
        upper=1.0,
    ),
    Gate(
        "max_t_closeness",
        "max",
        _t_closeness,
        "largest Earth Mover's Distance between a sensitive column's distribution in a class "
        "of identical released rows and in the whole file (ordered for numbers, equal for text)",
        "EMD (0..1)",
        requires=frozenset({"sensitive"}),
        not_checked=_no_sensitive_value,
        upper=1.0,
        measures="sensitive",
    ),
]
