"""JSON that every reader takes: no ``NaN`` or ``Infinity``.

Python's ``json.dumps`` writes a non-finite float as ``NaN``, ``Infinity`` or ``-Infinity``,
which JSON (RFC 8259) does not have: a strict reader (``jq``, JavaScript's ``JSON.parse``,
DuckDB's JSON type) refuses the whole document. A recoding's outer edge ``.inf`` made
``manifest.json`` such a document. Here a non-finite float is written as the string
``"inf"``, ``"-inf"`` or ``"nan"`` -- the words the spec and the bin labels use -- and the
text is produced with ``allow_nan=False``, so that none can slip through.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth of mappings, lists and tuples,
    replaced by ``"inf"``, ``"-inf"`` or ``"nan"``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`finite` ``(value)``, with ``allow_nan=False``; ``default``
    (when given) is applied first, so that what it returns is made finite too."""
    default = kwargs.pop("default", None)
    if default is not None:
        value = _apply(value, default)
    return json.dumps(finite(value), allow_nan=False, **kwargs)


def _apply(value: Any, default: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _apply(v, default) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_apply(v, default) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return _apply(default(value), default)
