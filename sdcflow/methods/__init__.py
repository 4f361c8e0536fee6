"""The registry of masking methods: one entry per method, keyed by its spec name.

Adding a method is one core module (its numerical code in its own folder of
``sdcflow.core``) plus one module here with its parameters, adapter and promises, and one
entry in :data:`METHODS`.
"""

from __future__ import annotations

from sdcflow.errors import ParameterError
from sdcflow.methods.base import (
    BlockResult,
    CrispIntruder,
    Intruder,
    MaskResult,
    Method,
    MethodParams,
)
from sdcflow.methods.box import BOX, BoxParams, BoxResult
from sdcflow.methods.fuzzy import (
    CONSTRAINED_FUZZY,
    FUZZY,
    ConstrainedFuzzyParams,
    FuzzyIntruder,
    FuzzyParams,
)
from sdcflow.methods.heterogeneous import HETEROGENEOUS, HeterogeneousParams
from sdcflow.methods.microaggregation import (
    MDAV,
    PS,
    UNIVARIATE,
    MdavParams,
    PsParams,
    UnivariateParams,
)
from sdcflow.methods.suppression import LOCAL_SUPPRESSION, LocalSuppressionParams

METHODS: dict[str, Method] = {
    "mdav": MDAV,
    "ps": PS,
    "univariate": UNIVARIATE,
    "box": BOX,
    "fuzzy": FUZZY,
    "constrained_fuzzy": CONSTRAINED_FUZZY,
    "heterogeneous": HETEROGENEOUS,
    "local_suppression": LOCAL_SUPPRESSION,
}


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ParameterError(
            f"unknown method {name!r}; choose one of {', '.join(sorted(METHODS))}"
        ) from None


__all__ = [
    "METHODS",
    "BlockResult",
    "BoxParams",
    "BoxResult",
    "ConstrainedFuzzyParams",
    "CrispIntruder",
    "FuzzyIntruder",
    "FuzzyParams",
    "HeterogeneousParams",
    "Intruder",
    "LocalSuppressionParams",
    "MaskResult",
    "MdavParams",
    "Method",
    "MethodParams",
    "PsParams",
    "UnivariateParams",
    "get_method",
]
