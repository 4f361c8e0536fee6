"""The spine's edit check: rules of the form ``a == b + c - d`` with unit coefficients.

Evaluated on the released rows; a rule holds on a row when
``|lhs - rhs| <= 1e-9 * max(1, |lhs|, sum of |terms|)`` (relative, with an absolute floor).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdcflow.tasks._validation import InputError

_TERM = re.compile(r"\s*([+-])?\s*([A-Za-z_][A-Za-z0-9_]*)\s*")


def parse_sum_rule(rule: str) -> tuple[str, list[tuple[int, str]]]:
    """Split ``'a == b + c - d'`` into ``('a', [(1, 'b'), (1, 'c'), (-1, 'd')])``."""
    if rule.count("==") != 1:
        raise InputError(f"edit rule {rule!r}: expected the form `total == part + part`")
    lhs, rhs = (side.strip() for side in rule.split("=="))
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", lhs):
        raise InputError(f"edit rule {rule!r}: left side must be one column name")
    terms, pos = [], 0
    while pos < len(rhs):
        m = _TERM.match(rhs, pos)
        if not m or m.end() == pos or (terms and not m.group(1)):
            raise InputError(f"edit rule {rule!r}: cannot read {rhs[pos:]!r}; use `a == b + c`")
        terms.append((-1 if m.group(1) == "-" else 1, m.group(2)))
        pos = m.end()
    if not terms:
        raise InputError(f"edit rule {rule!r}: right side is empty")
    return lhs, terms


def sum_rule_violations(frame: pd.DataFrame, rules: Sequence[str]) -> dict[str, int]:
    """Number of rows of ``frame`` violating each rule (rule text -> count)."""
    out = {}
    for rule in rules:
        lhs, terms = parse_sum_rule(rule)
        missing = [c for c in [lhs, *(t for _, t in terms)] if c not in frame.columns]
        if missing:
            raise InputError(f"edit rule {rule!r}: column(s) {missing} are not released")
        left = frame[lhs].to_numpy(float)
        parts = np.stack([s * frame[c].to_numpy(float) for s, c in terms])
        right = parts.sum(axis=0)
        scale = np.maximum(1.0, np.maximum(np.abs(left), np.abs(parts).sum(axis=0)))
        out[rule] = int((np.abs(left - right) > 1e-9 * scale).sum())
    return out
