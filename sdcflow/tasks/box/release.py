"""The ``box`` method for the release spec: target parsing and the released columns.

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
Each box is the bounding box of its cell, so every bound is the value of one of the cell's
>= k records (as in Mondrian generalization), without saying which.

References
----------
[1] G. Xiang, S. Ferson, L. Ginzburg, L. Longpré, E. Mayorga, O. Kosheleva, "Data anonymization
    that leads to the most accurate estimates of statistical characteristics: fuzzy-motivated
    approach", Proc. Joint IFSA World Congress and NAFIPS Annual Meeting (IFSA-NAFIPS 2013),
    611-616, doi:10.1109/IFSA-NAFIPS.2013.6608471.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from sdcflow.errors import ParameterError
from sdcflow.tasks.box.anonymize import box_anonymize
from sdcflow.tasks.box.partition import default_grid
from sdcflow.tasks.box.sensitivity import STAT_ARITY, Target, default_delta0

StatName = Literal["mean", "variance", "std", "covariance", "correlation"]


class BoxTarget(BaseModel):
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
    specs = list(targets) or [BoxTarget(stat="mean", vars=[c]) for c in cols]
    out = []
    for i, t in enumerate(specs):
        unknown = [v for v in t.vars if v not in cols]
        if unknown:
            raise ParameterError(
                f"method.targets[{i}].vars: {unknown} not among the quasi-identifiers "
                f"{cols}; name quasi-identifiers only"
            )
        idx = tuple(cols.index(v) for v in t.vars)
        p = t.p if t.p is not None else 1.0 / len(specs)
        delta0 = t.delta0 if t.delta0 is not None else default_delta0(X, t.stat, idx)
        out.append(Target(t.stat, idx, p, delta0))
    return out


def box_release(X: np.ndarray, columns: Sequence[str], params: Any) -> dict[str, Any]:
    """Run box anonymization for the spec parameters; the fields of a ``MaskResult``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Quasi-identifiers, original units.
    columns : sequence of str, length d
    params : BoxParams

    Returns
    -------
    dict with ``masked`` (DataFrame: ``<q>_lo``, ``<q>_hi``..., ``box_id``, ``weight``),
    ``points`` (box centres, (n, d)), ``groups`` (box ids), ``details``, ``identifying``.
    """
    cols = list(columns)
    unknown = sorted((set(params.epsilon) | set(params.grid)) - set(cols))
    if unknown:
        raise ParameterError(
            f"method.epsilon/grid: {unknown} not among the quasi-identifiers {cols}; "
            "give resolutions for quasi-identifiers only"
        )
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
    return {
        "masked": pd.DataFrame(data),
        "points": rel.centres,
        "groups": rel.labels,
        "details": rel.details,
        "identifying": identifying,
    }
