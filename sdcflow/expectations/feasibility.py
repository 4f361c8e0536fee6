"""Feasibility of a rule set: can any record satisfy every rule? Checked before a run.

The linear, unconditional rules (ranges included) define the polyhedron
``P = {x : A x = b, G x <= h}`` ([1]_ Sec. 2.3); a numeric set rule ``x in [v1, ...]``
adds its relaxation ``min v <= x <= max v``. ``P`` is empty exactly when the linear program
``min 0 s.t. x in P`` (scipy ``linprog``, HiGHS [2]_, free variables) is infeasible. A strict
inequality ``g . x < h`` excludes its bound, so when there are strict rows the check asks what
a published record must meet: when every column a strict row reads has decimals (integers, or a
key's ``precision:``), the grid's last value below ``h`` (``0 < x < 1`` on integers is
``1 <= x <= 0``, empty; the grid is checked row by row, not jointly, which would be an integer
program); otherwise some record strictly inside, beyond the rounding of the row's evaluation
(:func:`sdcflow.core.lp.open_room`): ``x < 5`` with ``x >= 5`` is refused, a window of 1e-9 at 1e-6
is not. This is what any release needs; masking aims further inside
(:func:`sdcflow.core.tolerances.strict_bound`), and a set too thin for that is refused by the checks
after masking, which count every record. Text, not-null and ``!=`` rules cannot make
a numeric set empty and are left out.

When ``P`` is empty, a small conflicting subset of rules is found by the *deletion filter* of
Chinneck and Dravnieks [3]_: drop each rule in turn and keep it out when the rest stays
infeasible. What remains is an irreducible infeasible subset (IIS): infeasible, and feasible
without any one of its rules, so the error names rules that truly conflict (``x >= 5`` and
``x <= 3``) and not the whole list.

Conditional rules ``if C then D`` are disjunctions (``not C or D``), so the full problem is a
disjunctive program. This module checks the practical necessary condition for each conditional
separately: if records meeting ``C`` can exist (``P and C`` feasible) but none of them can also
meet ``D`` (``P and C and D`` infeasible), the rule silently forbids its own condition, which is
almost always a mistake (``if employees == 0 then wages == 0`` with ``wages >= 1``): it is
reported with the rules it conflicts with. A conditional whose condition cannot occur at all is
vacuous and reported in the result, not raised. Only the linear parts of ``C`` and ``D`` are
used (a relaxation: some conflicts involving text conditions go unnoticed).

References
----------
.. [1] V. Torra, "Fuzzy clustering-based microaggregation to achieve probabilistic k-anonymity
   for data with constraints", Journal of Intelligent & Fuzzy Systems (2020),
   doi:10.3233/JIFS-189074, Sec. 2.3 "Constraints and linear constraints".
.. [2] Q. Huangfu, J.A.J. Hall, "Parallelizing the dual revised simplex method", Mathematical
   Programming Computation 10(1) (2018) 119-142 (HiGHS, behind ``scipy.optimize.linprog``).
.. [3] J.W. Chinneck, E.W. Dravnieks, "Locating minimal infeasible constraint sets in linear
   programs", ORSA Journal on Computing 3(2) (1991) 157-168.
.. [4] A.R. Curtis, J.K. Reid, "On the automatic scaling of matrices for Gaussian
   elimination", IMA Journal of Applied Mathematics 10(1) (1972) 118-124 (geometric scaling
   of rows and columns by powers of the base).

Coefficients of any finite magnitude are handled: every LP is homogenized and equilibrated
(:func:`sdcflow.core.lp.equilibrate`) before HiGHS sees it, which otherwise refuses coefficients of
1e15 and more and drops those of 1e-9 and less (so that rules that can hold would be reported as
contradicting each other). The same LP (``sdcflow.core.lp``) decides for the projector of repair and
constrained fuzzy microaggregation, so a rule set this check accepts is not refused there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sdcflow.core.lp import feasibility_status, open_room
from sdcflow.core.tolerances import grid_bound
from sdcflow.errors import InfeasibleRulesError
from sdcflow.expectations.compile import linear_rows, strict_rows
from sdcflow.expectations.rules import (
    LINEAR_OPS,
    Chain,
    Comparison,
    Condition,
    Conditional,
    InSet,
    Rule,
)

__all__ = ["FeasibilityReport", "InfeasibleRulesError", "check_feasible"]

# equalities (a, b): a . x = b; inequalities (g, h, h_grid, open): g . x <= h, and what a
# strict one asks of a published record: g . x <= h_grid, the last value of the published
# grid below h, when its columns have decimals (open False), else g . x < h (open True)
Rows = tuple[
    list[tuple[dict[str, float], float]], list[tuple[dict[str, float], float, float, bool]]
]
Decimals = Mapping[str, int | None]


@dataclass
class FeasibilityReport:
    """What :func:`check_feasible` checked.

    Attributes
    ----------
    linear_rules : list of str
        The rules that entered the linear program.
    conditionals_checked : list of str
        Conditional rules whose branch ``P and C and D`` was checked.
    vacuous : list of str
        Conditional rules whose condition no record satisfying the other rules can meet.
    linear_programs : int
        Number of LPs solved.
    """

    linear_rules: list[str] = field(default_factory=list)
    conditionals_checked: list[str] = field(default_factory=list)
    vacuous: list[str] = field(default_factory=list)
    linear_programs: int = 0


def _rule_rows(rule: Rule, decimals: Decimals | None) -> Rows:
    """Rows of a linear rule; a strict row with what it asks of a published record."""
    eqs, ineqs = linear_rows(rule)
    rows = []
    for (coefs, h), strict in zip(ineqs, strict_rows(rule), strict=True):
        on_grid = None
        if strict and decimals is not None:
            on_grid = grid_bound(h, list(coefs.values()), [decimals.get(c) for c in coefs])
        if on_grid is None:
            rows.append((coefs, h, h, strict))
        else:
            rows.append((coefs, h, on_grid, False))
    return eqs, rows


def _condition_rows(node: Condition, name: str, decimals: Decimals | None) -> Rows:
    """Linear rows of a condition / consequent (empty when it has no linear part)."""
    if isinstance(node, (Comparison, Chain)):
        links = node.links if isinstance(node, Chain) else (node,)
        if all(link.op in LINEAR_OPS for link in links):
            return _rule_rows(Rule(name=name, text="", node=node), decimals)
    if isinstance(node, InSet):
        return _set_rows(node)
    return [], []


def _set_rows(node: InSet) -> Rows:
    if node.negated or not node.values or isinstance(node.values[0], str):
        return [], []
    lo, hi = min(node.values), max(node.values)
    lower, upper = -float(lo), float(hi)
    return [], [
        ({node.column: -1.0}, lower, lower, False),
        ({node.column: 1.0}, upper, upper, False),
    ]


class _LP:
    """Feasibility LPs over a fixed variable order."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.index = {c: j for j, c in enumerate(columns)}
        self.count = 0

    def _matrix(self, rows: Sequence[tuple]) -> tuple[np.ndarray, np.ndarray]:
        M = np.zeros((len(rows), len(self.index)))
        v = np.zeros(len(rows))
        for i, (coefs, rhs, *_) in enumerate(rows):
            for c, a in coefs.items():
                M[i, self.index[c]] = a
            v[i] = rhs
        return M, v

    def feasible(self, blocks: Sequence[Rows], strict: bool = True) -> bool:
        """Whether some record meets every row of ``blocks``: with ``strict``, a strict row
        as a published record must (on its grid, else strictly), else as its closure."""
        eq = [row for block in blocks for row in block[0]]
        ub = [row for block in blocks for row in block[1]]
        if not eq and not ub:
            return True
        self.count += 1
        A, b = self._matrix(eq)
        G = self._matrix(ub)[0]
        h = np.array([row[2] if strict else row[1] for row in ub])
        opened = np.array([strict and row[3] for row in ub], dtype=bool)
        if strict and any(row[1] != row[2] or row[3] for row in ub):  # strict rows: on the grid
            return bool(open_room(A, b, G, h, opened))  # or open; None: the closed set is empty
        # Homogenized and equilibrated by powers of two (sdcflow.core.lp), so that no coefficient
        # reaches HiGHS's thresholds: it treats |a| >= 1e15 as too large and drops |a| <= 1e-9.
        status, message = feasibility_status(A, b, G, h)
        if status == 2:
            return False
        if status in (0, 3):
            return True
        raise RuntimeError(f"the feasibility LP did not finish: {message}")


def _deletion_filter(
    lp: _LP, names: list[str], blocks: dict[str, Rows], fixed: Rows, strict: bool = True
) -> list[str]:
    """An irreducible infeasible subset of ``names`` (given that ``fixed`` is always in)."""
    keep = list(names)
    for name in list(keep):
        trial = [n for n in keep if n != name]
        if not lp.feasible([fixed, *(blocks[n] for n in trial)], strict):
            keep = trial
    return keep


def _quote(rules: dict[str, Rule], names: Sequence[str]) -> str:
    return "; ".join(f"{n}: {rules[n].text}" for n in names)


def check_feasible(
    rules: Sequence[Rule],
    columns: Sequence[str] | None = None,
    decimals: Decimals | None = None,
) -> FeasibilityReport:
    """Raise :class:`InfeasibleRulesError` (an ``InputError``, exit 2) when no record can satisfy
    ``rules``; see the module docstring for what is checked.

    Parameters
    ----------
    rules : sequence of Rule
    columns : sequence of str, optional
        The numeric columns (LP variables). Rules reading other columns are left out. Default:
        every column a linear rule reads.
    decimals : mapping column -> int or None, optional
        The decimals each column is published with (0: integers), where it has them: a strict
        row over such columns must leave room for a value on their grid.

    Returns
    -------
    FeasibilityReport

    Raises
    ------
    InfeasibleRulesError
        Naming an irreducible conflicting subset of rules, with their text.
    """
    by_name = {r.name: r for r in rules}
    if columns is None:
        columns = list(dict.fromkeys(c for r in rules for c in r.columns))
    allowed = set(columns)
    lp = _LP(list(columns))
    report = FeasibilityReport()
    blocks: dict[str, Rows] = {}
    for r in rules:
        if not set(r.columns) <= allowed:
            continue
        if r.is_linear:
            blocks[r.name] = _rule_rows(r, decimals)
        elif isinstance(r.node, InSet) and _set_rows(r.node) != ([], []):
            blocks[r.name] = _set_rows(r.node)
    report.linear_rules = list(blocks)
    names = list(blocks)
    if not lp.feasible([blocks[n] for n in names], strict=False):
        conflict = _deletion_filter(lp, names, blocks, ([], []), strict=False)
        report.linear_programs = lp.count
        raise InfeasibleRulesError(
            f"edit rules {', '.join(conflict)} contradict each other: no record can satisfy all "
            f"of them ({_quote(by_name, conflict)}); fix or drop one of them",
            conflict,
        )
    if not lp.feasible([blocks[n] for n in names]):
        conflict = _deletion_filter(lp, names, blocks, ([], []))
        report.linear_programs = lp.count
        which = (
            f"edit rules {', '.join(conflict)} hold"
            if len(conflict) > 1
            else (f"edit rule {conflict[0]} holds")
        )
        raise InfeasibleRulesError(
            f"{which} only on the bound of a strict comparison, which `<` and `>` exclude "
            "(on whole numbers or published decimals, up to the next value of their grid), so no "
            f"record can satisfy them ({_quote(by_name, conflict)}); write `<=` or "
            "`>=`, or widen the bound",
            conflict,
        )
    for r in rules:
        if not isinstance(r.node, Conditional) or not set(r.columns) <= allowed:
            continue
        cond = _condition_rows(r.node.condition, r.name, decimals)
        cons = _condition_rows(r.node.consequent, r.name, decimals)
        if cond == ([], []) and cons == ([], []):
            continue
        report.conditionals_checked.append(r.name)
        base = [blocks[n] for n in names]
        if not lp.feasible([*base, cond]):
            report.vacuous.append(r.name)
            continue
        if lp.feasible([*base, cond, cons]):
            continue
        both = ([*cond[0], *cons[0]], [*cond[1], *cons[1]])
        others = _deletion_filter(lp, names, blocks, both)
        conflict = [r.name, *others]
        with_others = f" together with {', '.join(others)}" if others else ""
        report.linear_programs = lp.count
        raise InfeasibleRulesError(
            f"edit rule {r.name} can never hold when its condition holds{with_others}: records "
            f"meeting the condition can exist, but every one of them would violate it "
            f"({_quote(by_name, conflict)}); fix the condition, the consequent or the other "
            "rules",
            conflict,
        )
    report.linear_programs = lp.count
    return report
