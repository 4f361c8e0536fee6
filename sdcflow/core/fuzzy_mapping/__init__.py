"""Fuzzy mapping of a sensitive numeric attribute for outsourced mining ([1]_).

A data owner replaces the values of a sensitive attribute by ``set number + affinity`` to
fuzzy sets over its range, combined into one value by one of seven combiners; an outside
miner works on the mapped file, returns rules, and the owner maps the rules' intervals back
(:mod:`.remap`). The mapping (:class:`FuzzyMapping`: sets, combiner, the random pick's seed) is
the owner's secret.

* :mod:`.membership`: the sets (uniform, custom with fillers) and the three shapes
  (``earlier``, ``modified``, ``triangular``).
* :mod:`.combiners`: the seven combiners.
* :mod:`.similarity`: Pearson, Jaccard, Dice, cosine, raw and rescaled; rank figures.
* :mod:`.remap`: preimages of intervals, rules rewritten in the original domain.
* :mod:`.rules`: equal-width bins as Weka makes them, Apriori (mlxtend), rule counts.

References
----------
.. [1] "Fuzzy-based Methods for Privacy-Preserving Data Mining", Eighth International
   Conference on Information Technology: New Generations (ITNG), IEEE, 2011,
   doi:10.1109/ITNG.2011.68.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sdcflow.core.fuzzy_mapping.combiners import (
    COMBINERS,
    DETERMINISTIC,
    PAPER_LABELS,
    check_combiner,
    combine,
)
from sdcflow.core.fuzzy_mapping.membership import (
    DEFINITIONS,
    FuzzySets,
    Memberships,
    custom_sets,
    memberships,
    uniform_sets,
)
from sdcflow.core.fuzzy_mapping.remap import (
    Interval,
    hull,
    integer_hull,
    integer_preimage,
    integer_ranges,
    preimage,
)


@dataclass(frozen=True)
class FuzzyMapping:
    """Everything needed to redo or invert a mapping: the data owner's secret.

    Attributes
    ----------
    sets : FuzzySets
    combiner : str
    seed : int or None
        Seed of the generator of ``random_pick`` (None for the deterministic combiners).
    """

    sets: FuzzySets
    combiner: str
    seed: int | None = None

    def apply(self, x: object, *, name: str = "x") -> np.ndarray:
        """The mapped values. Shapes: x (n,) -> (n,)."""
        rng = np.random.default_rng(self.seed) if self.combiner == "random_pick" else None
        return combine(memberships(x, self.sets, name=name), self.combiner, rng)

    @property
    def mapped_range(self) -> tuple[float, float]:
        """The range mapped values can take: ``[1, k + 1]``."""
        return 1.0, float(self.sets.k + 1)

    def preimage(self, interval: tuple[float, float], **closed: bool) -> list[Interval]:
        return preimage(interval, self.sets, self.combiner, **closed)

    def to_dict(self) -> dict[str, Any]:
        return {"sets": self.sets.to_dict(), "combiner": self.combiner, "seed": self.seed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FuzzyMapping:
        seed = data.get("seed")
        return cls(
            sets=FuzzySets.from_dict(data["sets"]),
            combiner=check_combiner(data["combiner"]),
            seed=None if seed is None else int(seed),
        )


__all__ = [
    "COMBINERS",
    "DEFINITIONS",
    "DETERMINISTIC",
    "PAPER_LABELS",
    "FuzzyMapping",
    "FuzzySets",
    "Interval",
    "Memberships",
    "combine",
    "custom_sets",
    "hull",
    "integer_hull",
    "integer_preimage",
    "integer_ranges",
    "memberships",
    "preimage",
    "uniform_sets",
]
