"""sdcflow: statistical disclosure control as a Prefect release pipeline.

- ``sdcflow.tasks``: the steps of a release. Each concept has one folder of plain
  numpy/scipy code (``microaggregation``, ``fuzzy``, ``box``, ``linear``, ``measures``,
  ``gates``, ``methods``); the Prefect ``@task`` layer over them is ``sdcflow.tasks.steps``.
- ``sdcflow.expectations``: the edit-rule language and its Great Expectations suites.
- ``sdcflow.warehouse``: the DuckDB warehouse, the only code that opens a connection.
- ``sdcflow.flows``: the release flow, comparisons and the ``sdcflow`` command line.
- ``sdcflow.tasks.spec``: the release spec; ``sdcflow.errors``: every error, with a reason code.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sdcflow")
except PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
