"""sdcflow: statistical disclosure control as a Prefect release pipeline.

From Python (the heavy parts are imported on first use, so ``import sdcflow`` is quick):

- :func:`sdcflow.release` — a release from a spec file or mapping, returning the typed
  :class:`~sdcflow.flows.outcome.ReleaseOutcome` (:mod:`sdcflow.api`);
- ``sdcflow.MDAV``, ``PS``, ``Fuzzy``, ``ConstrainedFuzzy``, ``Box`` — the masking methods as
  scikit-learn-style transformers (:mod:`sdcflow.transformers`);
- :class:`sdcflow.SdcFrame` — the working object: risk, recoding, suppression, masking,
  utility and undo on a DataFrame, and the release spec of what was tried
  (:mod:`sdcflow.working`);
- :mod:`sdcflow.measures` — information loss, k-anonymity, disclosure risk as plain functions;
- ``sdcflow.InputError``, ``sdcflow.Reason`` — what bad input raises, with its reason code.

The package:

- ``sdcflow.core``: the numerical core, one folder of plain numpy/scipy code per concept
  (``microaggregation``, ``fuzzy``, ``box``, ``suppression``, ``linear``, ``measures``...).
- ``sdcflow.methods`` and ``sdcflow.gates``: the method and gate registries over the core;
  ``sdcflow.report``: the run report.
- ``sdcflow.spec``: the release spec; ``sdcflow.preflight``: what is checked before a flow
  run exists; ``sdcflow.tasks``: the Prefect ``@task`` layer of the steps of a release.
- ``sdcflow.expectations``: the edit-rule language and its Great Expectations suites.
- ``sdcflow.warehouse``: the DuckDB warehouse, the only code that opens a connection.
- ``sdcflow.flows``: the release flow, comparisons and the ``sdcflow`` command line.
- ``sdcflow.errors``: every error, with a reason code.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from sdcflow.errors import InputError, Reason

try:
    __version__ = version("sdcflow")
except PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0.0.0"

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    "release": "sdcflow.api",
    "ReleaseOutcome": "sdcflow.flows.outcome",
    "MDAV": "sdcflow.transformers",
    "PS": "sdcflow.transformers",
    "Fuzzy": "sdcflow.transformers",
    "ConstrainedFuzzy": "sdcflow.transformers",
    "Box": "sdcflow.transformers",
    "LocalSuppression": "sdcflow.transformers",
    "Recoding": "sdcflow.transformers",
    "Heterogeneous": "sdcflow.transformers",
    "Noise": "sdcflow.transformers",
    "RankSwap": "sdcflow.transformers",
    "Shuffle": "sdcflow.transformers",
    "TopBottomCoding": "sdcflow.transformers",
    "Pram": "sdcflow.transformers",
    "SdcFrame": "sdcflow.working",
    "measures": "sdcflow.measures",
}

__all__ = ["InputError", "Reason", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sdcflow' has no attribute {name!r}")
    loaded = import_module(module)
    value = loaded if module == f"sdcflow.{name}" else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
