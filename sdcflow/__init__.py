"""sdcflow: statistical disclosure control as a Prefect release pipeline.

Subpackages (kept as top-level folders in the repository):

- ``sdcflow.tasks``: numerical core (numpy/scipy) of every masking method and measure,
  plus thin Prefect task wrappers in ``sdcflow.tasks.steps``;
- ``sdcflow.expectations``: the edit-rule language and its Great Expectations suites;
- ``sdcflow.warehouse``: the DuckDB warehouse, the only code that opens a connection;
- ``sdcflow.flows``: the release flow and the ``sdcflow`` command line.
"""

import os
from importlib.metadata import PackageNotFoundError, version

# In a source checkout (``python -m pytest`` from the repository root puts the root on
# sys.path) the subpackages sit beside this folder rather than inside it.
_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isfile(os.path.join(_root, "tasks", "__init__.py")):
    __path__.append(_root)

try:
    __version__ = version("sdcflow")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
