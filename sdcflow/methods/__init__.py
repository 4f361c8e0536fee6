"""The registry of masking methods: one entry per method, keyed by its spec name.

Adding a method is one core module (its numerical code in its own folder of
``sdcflow.core``) plus one module here with its parameters, adapter and declarations (the
key kinds it accepts, blocks, missing numbers, cells, its output, its promises, its own
spec and data checks: :class:`~sdcflow.methods.base.Method`), and one entry in
:data:`METHODS` (:func:`register_method` for a method kept outside sdcflow). Nothing else
names a method: the preflight, the gates, the report and the flows ask its entry.
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
    ReleaseView,
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
from sdcflow.methods.perturbation import (
    NOISE,
    PRAM,
    RANK_SWAP,
    SHUFFLE,
    NoiseParams,
    PramParams,
    RankSwapParams,
    ShuffleParams,
)
from sdcflow.methods.suppression import LOCAL_SUPPRESSION, LocalSuppressionParams

#: Every method by its spec name; :func:`register_method` adds one.
METHODS: dict[str, Method] = {
    method.name: method
    for method in (
        MDAV,
        PS,
        UNIVARIATE,
        BOX,
        FUZZY,
        CONSTRAINED_FUZZY,
        HETEROGENEOUS,
        LOCAL_SUPPRESSION,
        NOISE,
        RANK_SWAP,
        SHUFFLE,
        PRAM,
    )
}


def register_method(method: Method) -> Method:
    """Add ``method`` to :data:`METHODS` under its name (its parameters' ``name`` default):
    the spec, the preflight, the gates, ``compare`` and the report then know it. Refuses a
    name already taken (``ParameterError``). Returns ``method``."""
    if method.name in METHODS:
        raise ParameterError(f"a method named {method.name!r} is already registered")
    METHODS[method.name] = method
    return method


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
    "NoiseParams",
    "PramParams",
    "PsParams",
    "RankSwapParams",
    "ReleaseView",
    "ShuffleParams",
    "UnivariateParams",
    "get_method",
    "register_method",
]
