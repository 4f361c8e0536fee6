"""sdcflow: statistical disclosure control as a Prefect release pipeline.

Subpackages (kept as top-level folders in the repository):

- ``sdcflow.tasks``: numerical core (numpy/scipy) of every masking method and measure,
  plus thin Prefect task wrappers in ``sdcflow.tasks.steps``;
- ``sdcflow.expectations``: the edit-rule language and its Great Expectations suites;
- ``sdcflow.warehouse``: the DuckDB warehouse, the only code that opens a connection;
- ``sdcflow.flows``: the release flow and the ``sdcflow`` command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sdcflow")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
