"""The ``fuzzy_map:`` block of a release spec, one entry per mapped column.

```yaml
sensitive: [age]
fuzzy_map:
  age: {sets: 3, membership: modified, combiner: highest_affinity}
  # or custom ranges, uncovered parts of the domain filled with extra sets:
  # age: {ranges: [[0, 20], [10, 40], [20, 60], [80, 100]], domain: [0, 100],
  #       membership: triangular, combiner: random_pick}
```

Every field is part of the data owner's secret: a release records which columns were mapped,
never how (see :mod:`sdcflow.warehouse.secrets`).
"""

from __future__ import annotations

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from sdcflow.core.fuzzy_mapping.combiners import Combiner
from sdcflow.core.fuzzy_mapping.membership import (
    Definition,
    FuzzySets,
    custom_sets,
    uniform_sets,
)
from sdcflow.errors import DataError
from sdcflow.spec_model import SpecModel


class FuzzyMapParams(SpecModel):
    """How one sensitive column is mapped (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sets: int | None = Field(None, ge=2, le=1000, description="k uniform fuzzy sets")
    ranges: list[tuple[float, float]] | None = Field(
        None, min_length=1, max_length=1000, description="custom set ranges [lo, hi]"
    )
    domain: tuple[float, float] | None = Field(
        None, description="[min, max] of the attribute; default: the column's own range"
    )
    membership: Definition = "modified"
    combiner: Combiner

    @model_validator(mode="after")
    def _one_layout(self) -> FuzzyMapParams:
        if (self.sets is None) == (self.ranges is None):
            raise ValueError("give exactly one of `sets: k` (uniform) or `ranges: [[lo, hi], ...]`")
        for lo, hi in self.ranges or []:
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValueError("every range must be [lo, hi] with finite lo < hi")
        if self.domain is not None:
            lo, hi = self.domain
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValueError("domain must be [min, max] with finite min < max")
            if self.ranges and (
                min(r[0] for r in self.ranges) < lo or max(r[1] for r in self.ranges) > hi
            ):
                raise ValueError("every range must lie inside the domain; widen the domain")
        return self

    def build(self, values: np.ndarray, *, column: str = "column") -> FuzzySets:
        """The fuzzy sets for a column with these values (its domain when none is given).

        Raises ``DataError`` when the values leave the given domain (their count, no value).
        """
        v = np.asarray(values, dtype=np.float64)
        lo, hi = float(v.min()), float(v.max())
        if self.domain is not None:
            dmin, dmax = self.domain
            outside = int(((v < dmin) | (v > dmax)).sum())
            if outside:
                raise DataError(
                    f"fuzzy_map.{column}: {outside} value(s) lie outside the domain; widen "
                    "`domain:` or leave it out (the column's own range is used)"
                )
        elif self.ranges:
            dmin = min(lo, *(r[0] for r in self.ranges))
            dmax = max(hi, *(r[1] for r in self.ranges))
        else:
            dmin, dmax = lo, hi
        if not dmax > dmin:
            raise DataError(
                f"fuzzy_map.{column}: the column has a single value; a mapping needs a range "
                "(give `domain: [min, max]`)"
            )
        if self.sets is not None:
            return uniform_sets(self.sets, (dmin, dmax), self.membership)
        return custom_sets(self.ranges or [], (dmin, dmax), self.membership)
