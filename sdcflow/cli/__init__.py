"""The ``sdcflow`` command line: one module per command, and :mod:`sdcflow.cli.main`.

Each command module registers its subparser with ``set_defaults(func=..., aftermath=...)``
and imports what it needs when it runs (Prefect, numba and Great Expectations take seconds
to import), so that ``sdcflow --help`` and a bad spec answer at once. :mod:`sdcflow.cli.main`
parses, dispatches, maps what could not complete to its exit code, and is the one module
that touches the process's signal handlers and exit.

Exit codes: 0 published / all checks passed; 1 a check or edit rule failed (nothing
published); 2 bad input (one line naming the field, file or column and the fix); 3 the run
could not complete (another release holds the warehouse, Prefect's API did not start, an
unexpected error); nothing was published; 130 interrupted before publication, nothing was
published. What it prints agrees with what is on disk: a run interrupted once its release is
live says ``published`` and exits 0.
"""
