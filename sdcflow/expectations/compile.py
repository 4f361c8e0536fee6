"""Compile parsed edit rules to DuckDB SQL, to expectation parameters and to matrices.

Each rule becomes one *check column*: an SQL expression evaluated per record (next to
``sdc_row_id``) and an expectation on that column that Great Expectations validates
(:mod:`sdcflow.expectations.suite`):

=====================================  ==========================  ==============================
rule                                   check column (SQL)          expectation on it
=====================================  ==========================  ==============================
``lhs == rhs``                         residual ``lhs - rhs`` (1)  between ``-tol`` and ``tol``
``lhs <= rhs`` / ``lhs < rhs``         residual ``lhs - rhs`` (1)  at most ``tol`` / below 0
``lhs >= rhs`` / ``lhs > rhs``         residual ``rhs - lhs`` (1)  at most ``tol`` / below 0
``lo <= expr <= hi`` (constant ends)   value of ``expr`` (2)       between ``lo-tol``, ``hi+tol``
``x in [...]`` / ``x not in [...]``    ``x``                       in set / not in set
``not_null(x)``                        ``x``                       not null
anything else (conditional, ``!=``,    boolean "rule holds"        the custom ``ExpectRuleToHold``
text comparison, general chain)
=====================================  ==========================  ==============================

(1) Of a non-strict comparison, clamped into ``[-tol, tol]`` (``==``) or to at most ``tol``
where the rule holds: within ``tol`` plus :data:`~sdcflow.core.tolerances.ROUNDING_SLACK` times the
terms' magnitude ``sum_j |a_j x_j| + |c|``, which fixed bounds cannot express. The
expectation then agrees with :func:`holds_sql` record by record, to the bit. Strict
comparisons keep the exact residual.
(2) Clamped into ``[lo, hi]`` where the rule holds, for the same reason.

A missing value makes a linear residual NULL, and SQL's three-valued logic makes a boolean NULL:
such records are *undetermined* for the rule, not violations, in both DuckDB and GE (which
skips nulls in column-map expectations), as ``NA`` in R's ``validate`` [1]_.

:func:`linear_rows` gives the rows of a linear rule, from which the preflight assembles the
feasible set ``{x : A x = b, G x <= h}`` (the form ``alpha . v = A`` of [2]_ Sec. 2.3)
that masking methods and the repair step consume.

Identifiers are always double-quoted (with ``"`` doubled); only constants written in the rule are
inlined, as numeric literals (``repr`` of a finite float) or escaped string literals. Values from
the data are never pasted into SQL.

References
----------
.. [1] M.P.J. van der Loo, E. de Jonge, "Data validation infrastructure for R", Journal of
   Statistical Software 97(10) (2021) 1-31, doi:10.18637/jss.v097.i10 (package ``validate``).
.. [2] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems (2020),
   doi:10.3233/JIFS-189074, Sec. 2.3 "Constraints and linear constraints".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from sdcflow.core.tolerances import ROUNDING_SLACK
from sdcflow.expectations.rules import (
    Chain,
    Comparison,
    Condition,
    Conditional,
    InSet,
    LinearForm,
    Node,
    NotNull,
    Rule,
    TextComparison,
)
from sdcflow.warehouse.sql import quote_identifier

__all__ = [
    "CompiledRule",
    "compile_rule",
    "condition_sql",
    "holds_sql",
    "linear_rows",
    "strict_rows",
    "to_sql",
]

CheckKind = Literal["between", "in_set", "not_in_set", "not_null", "holds"]


def _quote_text(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _num(value: float) -> str:
    if not math.isfinite(value):  # pragma: no cover - the grammar only yields finite numbers
        raise ValueError(f"non-finite constant {value!r} in a rule")
    text = repr(float(value))
    return f"({text})" if text.startswith("-") else text


def _literal(value: str | float) -> str:
    return _quote_text(value) if isinstance(value, str) else _num(value)


def _term_sql(column: str, coef: float) -> str:
    """SQL of ``coef * column`` in DOUBLE arithmetic."""
    ref = f"CAST({quote_identifier(column)} AS DOUBLE)"
    return ref if coef == 1.0 else f"{_num(coef)} * {ref}"


def linear_sql(form: LinearForm) -> str:
    """SQL of ``sum_j coef_j * col_j + const`` in DOUBLE arithmetic."""
    parts = [_term_sql(column, coef) for column, coef in form.terms]
    if form.const != 0.0 or not parts:
        parts.append(_num(form.const))
    return "(" + " + ".join(parts) + ")"


def _slack_sql(form: LinearForm, tol: float) -> str:
    """SQL of a non-strict comparison's allowance on ``form``'s residual: ``tol`` plus
    ``ROUNDING_SLACK * (sum_j |coef_j col_j| + |const|)``, the binary rounding a double
    evaluation of the terms can carry (:mod:`sdcflow.core.tolerances`)."""
    parts = [f"abs({_term_sql(column, coef)})" for column, coef in form.terms]
    if form.const != 0.0:
        parts.append(_num(abs(form.const)))
    if not parts:
        return _num(tol)
    return f"({_num(tol)} + {_num(ROUNDING_SLACK)} * ({' + '.join(parts)}))"


def _where_holds(holds: str, clamped: str, value: str) -> str:
    """The check column: ``clamped`` (inside the expectation's bounds) where ``holds`` is
    TRUE, ``value`` otherwise (outside them when FALSE, NULL when undetermined)."""
    return f"(CASE WHEN {holds} THEN {clamped} ELSE {value} END)"


def _normalized(link: Comparison) -> tuple[LinearForm, bool]:
    """The residual ``r`` with the link meaning ``r <= 0`` (or ``r < 0`` when strict; ``r == 0``
    for ``==``) and whether the link is strict."""
    if link.op in ("<=", "<", "=="):
        return link.residual, link.op == "<"
    if link.op in (">=", ">"):
        return link.rhs.plus(link.lhs, -1.0), link.op == ">"
    raise ValueError(f"{link.op!r} has no residual form")  # pragma: no cover


def _condition_sql(node: Condition, tol: float) -> str:
    """Boolean SQL that is TRUE when ``node`` holds (within ``tol``), NULL when undetermined."""
    if isinstance(node, Comparison):
        if node.op == "!=":
            r = node.residual
            return f"(abs({linear_sql(r)}) > {_slack_sql(r, tol)})"
        r, strict = _normalized(node)
        if node.op == "==":
            return f"(abs({linear_sql(r)}) <= {_slack_sql(r, tol)})"
        if strict:
            return f"({linear_sql(r)} < 0.0)"
        return f"({linear_sql(r)} <= {_slack_sql(r, tol)})"
    if isinstance(node, Chain):
        return "(" + " AND ".join(_condition_sql(link, tol) for link in node.links) + ")"
    if isinstance(node, TextComparison):
        op = "=" if node.op == "==" else "<>"
        return f"({quote_identifier(node.column)} {op} {_quote_text(node.value)})"
    if isinstance(node, InSet):
        values = ", ".join(_literal(v) for v in node.values)
        neg = "NOT " if node.negated else ""
        return f"({quote_identifier(node.column)} {neg}IN ({values}))"
    if isinstance(node, NotNull):
        return f"({quote_identifier(node.column)} IS NOT NULL)"
    raise TypeError(f"not a condition: {node!r}")  # pragma: no cover


def _node_holds_sql(node: Node, tol: float) -> str:
    if isinstance(node, Conditional):
        # if C then D  ==  (NOT C) OR D, in three-valued logic: NULL when C or D is unknown
        # and the other side does not decide the result.
        condition = _condition_sql(node.condition, tol)
        consequent = _condition_sql(node.consequent, tol)
        return f"((NOT {condition}) OR {consequent})"
    return _condition_sql(node, tol)


def condition_sql(rule: Rule) -> str:
    """Boolean DuckDB SQL of the condition ``C`` of a conditional rule ``if C then D``."""
    if not isinstance(rule.node, Conditional):
        raise ValueError(f"rule {rule.name!r} is not conditional")
    return _condition_sql(rule.node.condition, rule.tolerance)


def holds_sql(rule: Rule) -> str:
    """Boolean DuckDB SQL: TRUE where ``rule`` holds, FALSE where it is violated, NULL where it
    is undetermined (a missing value)."""
    if isinstance(rule.node, NotNull):
        return _condition_sql(rule.node, rule.tolerance)
    return _node_holds_sql(rule.node, rule.tolerance)


@dataclass(frozen=True)
class CompiledRule:
    """A rule as one check column and the expectation on it.

    Attributes
    ----------
    rule : Rule
    value_sql : str
        SQL of the check column (residual, value, the raw column, or a boolean).
    holds_sql : str
        SQL that is TRUE / FALSE / NULL as the rule holds / is violated / is undetermined.
    kind : {"between", "in_set", "not_in_set", "not_null", "holds"}
        Which expectation validates the check column.
    min_value, max_value : float or None
        Bounds for ``between`` (None: unbounded).
    strict_min, strict_max : bool
        Strict bounds for ``between``.
    value_set : tuple
        Allowed (``in_set``) or forbidden (``not_in_set``) values.
    """

    rule: Rule
    value_sql: str
    holds_sql: str
    kind: CheckKind
    min_value: float | None = None
    max_value: float | None = None
    strict_min: bool = False
    strict_max: bool = False
    value_set: tuple[str | float, ...] = ()

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def text(self) -> str:
        return self.rule.text


def compile_rule(rule: Rule) -> CompiledRule:
    """Choose the check column and expectation for ``rule`` (see the module table)."""
    node, tol = rule.node, rule.tolerance
    holds = holds_sql(rule)
    if isinstance(node, Comparison) and node.op != "!=":
        r, strict = _normalized(node)
        res = linear_sql(r)
        if strict:
            return CompiledRule(rule, res, holds, "between", None, 0.0, strict_max=True)
        # within the rounding slack the residual is judged at the tolerance: the expectation's
        # fixed bounds then agree with ``holds`` to the bit (an excess ``r - slack`` computed
        # apart rounds differently from ``|r| <= tol + slack`` within an ulp of the boundary)
        if node.op == "==":
            value = _where_holds(holds, f"greatest(least({res}, {_num(tol)}), {_num(-tol)})", res)
            return CompiledRule(rule, value, holds, "between", -tol, tol)
        value = _where_holds(holds, f"least({res}, {_num(tol)})", res)
        return CompiledRule(rule, value, holds, "between", None, tol)
    if isinstance(node, Chain) and len(node.links) == 2:
        first, second = node.links
        lo, mid, hi = first.lhs, first.rhs, second.rhs
        if first.op in (">", ">="):
            lo, hi = hi, lo
            lo_strict, hi_strict = second.op == ">", first.op == ">"
        else:
            lo_strict, hi_strict = first.op == "<", second.op == "<"
        if lo.is_constant and hi.is_constant and not mid.is_constant:
            lo_v = lo.const if lo_strict else lo.const - tol
            hi_v = hi.const if hi_strict else hi.const + tol
            x = linear_sql(mid)
            # within the tolerance and rounding slack of an end, the value is judged at it
            clamped = f"least(greatest({x}, {_num(lo.const)}), {_num(hi.const)})"
            return CompiledRule(
                rule,
                _where_holds(holds, clamped, x),
                holds,
                "between",
                lo_v,
                hi_v,
                strict_min=lo_strict,
                strict_max=hi_strict,
            )
    if isinstance(node, InSet):
        kind: CheckKind = "not_in_set" if node.negated else "in_set"
        return CompiledRule(rule, quote_identifier(node.column), holds, kind, value_set=node.values)
    if isinstance(node, NotNull):
        return CompiledRule(rule, quote_identifier(node.column), holds, "not_null")
    return CompiledRule(rule, holds, holds, "holds")


def to_sql(rule: Rule) -> str:
    """DuckDB SQL of the rule's check column: a residual or value (numeric), the column itself
    (sets, not-null) or a boolean (everything else). See :func:`compile_rule` for how it is
    judged and :func:`holds_sql` for the plain boolean."""
    return compile_rule(rule).value_sql


def linear_rows(
    rule: Rule,
) -> tuple[list[tuple[dict[str, float], float]], list[tuple[dict[str, float], float]]]:
    """Rows of a linear rule: equalities ``(a, b)`` meaning ``a . x = b`` and inequalities
    ``(g, h)`` meaning ``g . x <= h`` (strict inequalities as their closure)."""
    eqs, ineqs = [], []
    for link in _links(rule):
        if not isinstance(link, Comparison) or link.op == "!=":
            raise ValueError(f"rule {rule.name!r} is not linear")
        r, _ = _normalized(link)
        row = dict(r.terms)
        (eqs if link.op == "==" else ineqs).append((row, 0.0 - r.const))
    return eqs, ineqs


def strict_rows(rule: Rule) -> tuple[bool, ...]:
    """Per inequality row of :func:`linear_rows` (same order), whether it is strict: ``<`` or
    ``>``, which no record on the row's boundary meets."""
    return tuple(
        link.op in ("<", ">")
        for link in _links(rule)
        if isinstance(link, Comparison) and link.op != "=="
    )


def _links(rule: Rule) -> tuple:
    """The comparisons of a rule: a chain's links, or the rule's one node."""
    node = rule.node
    return node.links if isinstance(node, Chain) else (node,)
