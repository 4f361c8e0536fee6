"""Method ``box``: box anonymization shaped for target statistics (spec, adapter, result).

Spec (inside ``method:``)::

    method:
      name: box
      k: 5                       # records per box
      l: 2                       # distinct values of every quasi-identifier per box (optional)
      epsilon: {AGI: 100}        # closer values count as equal ([1] eq. 29); default 0
      targets:                   # default: the mean of every quasi-identifier, equal p
        - {stat: mean, vars: [AGI]}
        - {stat: correlation, vars: [AGI, FICA], p: 0.5, delta0: 0.1}
      weights: fuzzy             # equal (default) | crisp ([1] eq. 25-26) | fuzzy ([1] Sec. III)
      partition: targets         # targets (a-weighted) | standardized (unweighted baseline)

``p`` is the probability that users ask for the statistic (all given and summing to 1, or none:
equal); ``delta0`` the desired accuracy in the statistic's units (default 0.1 times its scale:
sd, variance, sd_i sd_j, or 1 for a correlation).

Released columns: ``<q>_lo``, ``<q>_hi`` per quasi-identifier, ``box_id`` and ``weight`` (the
weight is constant within a box and computed from the boxes only; it is not identifying).
Crisp and fuzzy weights estimate the statistics of the re-weighted records, not of the file
([1] eq. 43 has no bias term); the manifest then holds the equal-weight intervals as well.
Each box is the bounding box of its cell moved strictly outward onto a per-variable grid
(``grid``, default a power of ten near sd/100), so no bound is a record's value; with
``exact_bounds: true`` every bound is the value of one of the cell's >= k records (as in
Mondrian generalization), without saying which.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field, PositiveFloat, model_validator

from sdcflow.core.box.anonymize import box_anonymize
from sdcflow.core.box.partition import default_grid, distinct_counts
from sdcflow.core.box.sensitivity import STAT_ARITY, Target, default_delta0
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.validation import check_magnitude, standardize
from sdcflow.errors import DataError, ParameterError, Reason
from sdcflow.methods.base import (
    MaskResult,
    Method,
    MethodParams,
    ReleaseView,
    k_gate,
    refuse,
)
from sdcflow.methods.keys import Key, key_numbers, masked_as
from sdcflow.spec_model import SpecModel

StatName = Literal["mean", "variance", "std", "covariance", "correlation"]


class BoxTarget(SpecModel):
    """One target statistic of the spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    stat: StatName = Field(description="mean, variance, std, covariance or correlation")
    vars: list[str] = Field(min_length=1, max_length=2, description="quasi-identifier names")
    p: float | None = Field(None, gt=0, le=1, description="probability users ask for it")
    delta0: float | None = Field(None, gt=0, description="desired accuracy (statistic's units)")

    @model_validator(mode="after")
    def _arity(self) -> BoxTarget:
        need = STAT_ARITY[self.stat]
        if len(self.vars) != need or len(set(self.vars)) != need:
            example = "[x]" if need == 1 else "[x, y]"
            raise ValueError(
                f"`vars` of a {self.stat} target needs {need} distinct variable(s), got "
                f"{self.vars}; write e.g. {{stat: {self.stat}, vars: {example}}}"
            )
        return self


def check_box_params(params: Any) -> Any:
    """Cross-field rules of the box parameters (used as a pydantic model validator)."""
    given = [t.p for t in params.targets if t.p is not None]
    if given and len(given) != len(params.targets):
        raise ValueError(
            "`targets`: give `p` for every target or for none (none means equal probabilities)"
        )
    if given and abs(sum(given) - 1.0) > 1e-6:
        raise ValueError(
            f"`targets`: the probabilities p sum to {sum(given):.6g}; they must sum to 1 (eq. 58)"
        )
    if any(v < 0 or not np.isfinite(v) for v in params.epsilon.values()):
        raise ValueError("`epsilon`: every resolution must be a finite number >= 0")
    return params


def resolve_targets(
    X: np.ndarray, columns: Sequence[str], targets: Sequence[BoxTarget]
) -> list[Target]:
    """Spec targets -> core targets: names to indices, default p and delta0.

    No targets means the mean of every quasi-identifier.
    """
    cols = list(columns)
    _check_target_columns(targets, cols)
    specs = list(targets) or [BoxTarget(stat="mean", vars=[c]) for c in cols]
    out = []
    for t in specs:
        idx = tuple(cols.index(v) for v in t.vars)
        p = t.p if t.p is not None else 1.0 / len(specs)
        delta0 = t.delta0 if t.delta0 is not None else default_delta0(X, t.stat, idx)
        out.append(Target(t.stat, idx, p, delta0))
    return out


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


@dataclass
class BoxResult(MaskResult):
    """A box release: besides the point fields, the boxes and the interval estimates.

    The boxes and weights are read from the published columns (``masked``), so a gate checks
    what is released.

    Attributes
    ----------
    columns : list of str, length d
        The quasi-identifiers the boxes are over.
    epsilon : ndarray of shape (d,)
        Resolution per quasi-identifier (closer values count as one, [1] eq. 29).
    estimates : list of dict
        The interval estimates the manifest publishes, with the released weights.
    estimates_equal_weights : list of dict or None
        The same with equal weights, published when the weights are crisp or fuzzy.
    """

    columns: list[str] = field(default_factory=list)
    epsilon: np.ndarray = field(default_factory=lambda: np.empty(0))

    @property
    def estimates(self) -> list[dict[str, Any]]:
        return self.details["estimates"]

    @property
    def estimates_equal_weights(self) -> list[dict[str, Any]] | None:
        return self.details.get("estimates_equal_weights")

    @property
    def lo(self) -> np.ndarray:
        """Lower bounds as published; shape (n, d)."""
        return self.masked[[f"{c}_lo" for c in self.columns]].to_numpy(dtype=np.float64)

    @property
    def hi(self) -> np.ndarray:
        """Upper bounds as published; shape (n, d)."""
        return self.masked[[f"{c}_hi" for c in self.columns]].to_numpy(dtype=np.float64)

    @property
    def box_ids(self) -> np.ndarray:
        return self.masked["box_id"].to_numpy()

    @property
    def weights(self) -> np.ndarray:
        return self.masked["weight"].to_numpy(dtype=np.float64)


def check_box_columns(params: Any, columns: Sequence[str]) -> None:
    """Refuse ``targets`` / ``epsilon`` / ``grid`` entries naming a column that is not a
    quasi-identifier (the preflight and the method both ask).

    Raises
    ------
    ParameterError
        Reason ``spec-contradiction``, field ``method.targets[i].vars``, ``method.epsilon``
        or ``method.grid``.
    """
    _check_target_columns(params.targets, columns)
    unknown = sorted((set(params.epsilon) | set(params.grid)) - set(columns))
    if unknown:
        raise ParameterError(
            f"method.epsilon/grid: {unknown} not among the quasi-identifiers "
            f"{list(columns)}; give resolutions for quasi-identifiers only",
            code=Reason.SPEC_CONTRADICTION,
            field="method.epsilon" if set(unknown) & set(params.epsilon) else "method.grid",
        )


def _check_target_columns(targets: Sequence[BoxTarget], columns: Sequence[str]) -> None:
    for i, t in enumerate(targets):
        unknown = [v for v in t.vars if v not in columns]
        if unknown:
            raise ParameterError(
                f"method.targets[{i}].vars: {unknown} not among the quasi-identifiers "
                f"{list(columns)}; name quasi-identifiers only",
                code=Reason.SPEC_CONTRADICTION,
                field=f"method.targets[{i}].vars",
            )


def check_box_values(X: np.ndarray, columns: Sequence[str], params: Any) -> None:
    """Refuse values box anonymization cannot release (the preflight and the method both ask).

    Raises
    ------
    DataError
        Reason ``values-range``: magnitudes whose variances or box volumes overflow, or a
        spread so small that box volumes underflow.
    ParameterError
        Reason ``parameter``, field ``method.l``: a quasi-identifier with fewer than ``l``
        distinct values (closer than its ``epsilon`` count as one) in the whole file, so that
        no box can hold ``l`` of them.
    """
    cols = list(columns)
    # Variances and covariances of boxes multiply the values themselves, summed over the
    # records ((2M)^2 * 4n), and local densities divide by box volumes ((4M)^d): both must
    # stay below the largest double.
    big = np.finfo(np.float64).max
    n, d = X.shape
    limit = float(min(np.sqrt(big / (16.0 * max(n, 1))), big ** (1.0 / max(d, 1)) / 8.0))
    check_magnitude(X, limit, columns=cols, what="box anonymization's variances and box volumes")
    # ... and volumes must not underflow to 0 either (densities would divide by zero).
    spread = standardize(X)[2]
    floor = float(np.finfo(np.float64).tiny ** (1.0 / max(d, 1)) * 8.0)
    small = (spread < floor) & (np.ptp(X, axis=0) > 0)
    if small.any():
        raise DataError(
            f"{cols[int(np.flatnonzero(small)[0])]} varies by less than {floor:.3g}, where "
            "box anonymization's box volumes would underflow; express the column in smaller "
            "units before release",
            code=Reason.VALUES_RANGE,
        )
    if params.l is not None and n:
        eps = np.array([float(params.epsilon.get(c, 0.0)) for c in cols])
        total = distinct_counts(X, np.zeros(n, dtype=np.int64), eps)[0]
        if (total < params.l).any():
            j = int(np.flatnonzero(total < params.l)[0])
            raise ParameterError(
                f"method.l = {params.l}: {cols[j]} has only {int(total[j])} distinct value(s) "
                "in the whole file (closer than its epsilon count as one), so no box can hold "
                f"{params.l}; lower l or {cols[j]}'s epsilon",
                field="method.l",
            )


def box_release(X: np.ndarray, columns: Sequence[str], params: BoxParams) -> BoxResult:
    """Run box anonymization for the spec parameters.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Quasi-identifiers, original units.
    columns : sequence of str, length d
    params : BoxParams

    Returns
    -------
    BoxResult
        ``masked`` holds ``<q>_lo``, ``<q>_hi`` per quasi-identifier, ``box_id`` and
        ``weight``; ``points`` the box centres (n, d); ``groups`` the box ids.
    """
    cols = list(columns)
    check_box_values(X, cols, params)
    check_box_columns(params, cols)
    targets = resolve_targets(X, cols, params.targets)
    eps = np.array([float(params.epsilon.get(c, 0.0)) for c in cols])
    grid = None
    if not params.exact_bounds:
        grid = default_grid(X)
        for j, c in enumerate(cols):
            grid[j] = float(params.grid.get(c, grid[j]))
    rel = box_anonymize(
        X,
        targets,
        params.k,
        ell=params.l,
        eps=eps,
        weights=params.weights,
        partition=params.partition,
        columns=cols,
        grid=grid,
    )
    data: dict[str, np.ndarray] = {}
    for j, c in enumerate(cols):
        data[f"{c}_lo"] = rel.lo[:, j]
        data[f"{c}_hi"] = rel.hi[:, j]
    identifying = [*data, "box_id"]
    data["box_id"] = rel.labels
    data["weight"] = rel.weights.w
    return BoxResult(
        masked=pd.DataFrame(data),
        points=rel.centres,
        groups=rel.labels,
        identifying=identifying,
        details=rel.details,
        columns=cols,
        epsilon=eps,
    )


def _mask(
    X: np.ndarray,
    columns: list[str],
    params: BoxParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    return box_release(X, columns, params)


def _promises(params: BoxParams) -> dict[str, float]:
    gates = {
        **k_gate(params),
        "box_max_records_outside": 0.0,  # every original record lies in its box
        "box_max_targets_outside": 0.0,  # every guaranteed interval holds its statistic
    }
    if params.l is not None:
        gates["box_l_diversity"] = float(params.l)
    return gates


def _check_spec(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """Numeric keys only, all in one box, and no column published beside the boxes under a
    name they take (what the mask step refused only after the run had started)."""
    _, categorical = masked_as(keys)
    if categorical:
        refuse(
            "method box masks numeric keys and this release has categorical ones "
            f"({', '.join(categorical)}); use mdav, ps, fuzzy or heterogeneous, which "
            "handle them"
        )
    if spec.blocks:
        refuse(
            "method box publishes one box per record over every quasi-identifier (its "
            "box_id, weight and interval estimates); remove `blocks:`"
        )
    check_box_columns(spec.method, spec.quasi_identifiers)
    box_columns = {f"{q}_{end}" for q in spec.quasi_identifiers for end in ("lo", "hi")}
    box_columns |= {"box_id", "weight"}
    passed = [*spec.keep, *spec.sensitive]
    if spec.weight_column and spec.weight_column not in spec.quasi_identifiers:
        passed.append(spec.weight_column)
    clash = [c for c in passed if c in box_columns]
    if clash:
        refuse(
            f"column {clash[0]} is published unchanged and method box publishes a column "
            "of that name (<key>_lo, <key>_hi, box_id, weight), so one would overwrite the "
            f"other; rename {clash[0]} in the source",
            field=str(clash[0]),
        )


def _check_data(spec: ReleaseView, data: Any, keys: Sequence[Key]) -> None:
    """The values box cannot release (magnitudes, a key with fewer than ``l`` distinct
    values), refused before the run starts rather than in the mask step; the keys are
    numeric and complete by then (:func:`_check_spec`, ``missing_numbers``)."""
    if not data.num_rows:
        return
    cols = list(spec.quasi_identifiers)
    check_box_values(key_numbers(data, cols), cols, spec.method)


BOX = Method(
    BoxParams,
    _mask,
    promises=_promises,
    summary="box anonymization shaped for target statistics",
    key_kinds=frozenset({"numeric"}),
    blocks=False,
    output="boxes",
    groups="boxes",
    check_spec=_check_spec,
    check_data=_check_data,
)
