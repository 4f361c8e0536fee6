"""The numerical core: plain numpy/scipy/numba code, one folder per concept.

Microaggregation, fuzzy c-means, box anonymization, local suppression, fuzzy mapping, linear
rules and their projection, perturbation (PRAM, noise, rank swapping, top and bottom coding),
the measures and the risk measures beyond k (SUDA2, households, t-closeness, record linkage,
dominance), and the numerics they share (``distinct``, ``lp``, ``tolerances``, ``validation``,
``parallel``, the hook through which a runner spreads the core's independent pieces, and
``jit``, the compiled kernels' decorators and their cache). The core imports nothing of
sdcflow but :mod:`sdcflow.errors`, and no Prefect, DuckDB, Great Expectations or pydantic
(pyproject.toml's import contracts).
"""
