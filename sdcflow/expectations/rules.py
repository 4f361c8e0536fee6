"""The edit-rule language: parse rule strings into a small typed AST (no ``eval``).

A rule reads like arithmetic, as in R's ``validate`` package [1]_::

    total == 1.16*exp16 + 1.07*exp7          linear equality (coefficients, constants, both sides)
    wages >= 0.2 * total_costs                linear inequality (<, <=, >, >=; != is allowed too)
    profit == turnover - total_costs
    0 <= employees <= 100000                  chained range (one direction, two or more links)
    region in ['N', 'S', 'E', 'W']            set (also ``not in``, R's ``%in% c(...)``)
    not_null(region)                          not-null (also ``region is not null``, ``!is.na(x)``)
    if employees == 0 then wages == 0         conditional: condition and consequent are any
                                              non-conditional rules; text compares with a column
                                              by ``==`` / ``!=`` (``if region == 'N' then ...``)

A column name that is not a plain identifier is written in backticks, as in R
(`` `total costs` <= turnover ``). Arithmetic must be linear: a column may be multiplied or
divided by a constant, never by another column. Each linear, unconditional rule is an edit
constraint ``a . x = b`` or ``a . x <= b`` in the sense of [2]_ Sec. 2.3, which the masking
methods and the repair step consume (:func:`sdcflow.preflight.plan.linear_constraints`).

An edit item is a string or a mapping ``{rule, name, severity, tolerance, description}``.
``severity`` is ``error`` (default: a violation blocks a release) or ``warning`` (reported only);
``tolerance`` (default 1e-8, ``validate``'s ``lin.eq.eps``) is the absolute slack allowed for
``==``, ``<=`` and ``>=`` so that rounding does not count as a violation. On top of it, a
comparison allows ``ROUNDING_SLACK`` (1e-14) of its terms' magnitude
``sum_j |a_j x_j| + |c|`` for binary rounding (:mod:`sdcflow.core.tolerances`): amounts of 1e9 with
cents are off by up to 2.4e-7 in double arithmetic. ``!=`` is the negation of ``==``, in a
condition as anywhere. Strict comparisons
(``<``, ``>``) are exact, so that a condition such as ``if employees > 0`` does not fire at 0.
A rule is *violated* by a record when it evaluates to false; a record with a missing value in a
rule's columns is *undetermined* for that rule (as ``NA`` in ``validate``), and the ``not_null``
rules are the way to forbid missing values.

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
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from sdcflow.core.tolerances import DEFAULT_TOLERANCE, ROUNDING_SLACK
from sdcflow.errors import Reason, RuleError
from sdcflow.limits import MAX_RULES_FILE_BYTES, load_yaml, read_bounded

__all__ = [
    "ROUNDING_SLACK",
    "Chain",
    "Comparison",
    "Conditional",
    "InSet",
    "LinearForm",
    "NotNull",
    "Rule",
    "RuleError",
    "TextComparison",
    "load_rules_file",
    "parse_rule",
    "parse_rules",
]

SEVERITIES = ("error", "warning")
ITEM_KEYS = ("rule", "name", "severity", "tolerance", "description")
RESERVED_NAMES = frozenset({"sdc_row_id"})
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,62}$")

GRAMMAR = r"""
?start: rule

?rule: conditional
     | simple

conditional: "if" simple "then" simple

?simple: chain
       | membership
       | nullcheck

chain: sum (COMP_OP sum)+

membership: NAME IN_OP set_literal          -> in_set
          | NAME NOT IN_OP set_literal      -> not_in_set

set_literal: "[" [literal ("," literal)*] "]"
           | "c(" [literal ("," literal)*] ")"

literal: STRING                              -> lit_string
       | NUMBER                              -> lit_number
       | "-" NUMBER                          -> lit_negative

nullcheck: "not_null" "(" NAME ")"           -> not_null
         | "!" "is.na" "(" NAME ")"          -> not_null
         | NAME "is" NOT "null"              -> not_null

?sum: product
    | sum "+" product                        -> add
    | sum "-" product                        -> sub

?product: unary
        | product "*" unary                  -> mul
        | product "/" unary                  -> div

?unary: atom
      | "-" unary                            -> neg
      | "+" unary

?atom: NUMBER                                -> number
     | NAME                                  -> column
     | STRING                                -> string
     | "(" sum ")"

COMP_OP: "==" | "!=" | "<=" | ">=" | "<" | ">"
IN_OP: "in" | "%in%"
NOT: "not"
NAME: /[^\W\d]\w*/ | /`[^`]+`/
NUMBER: /([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?/
STRING: /'[^']*'/ | /"[^"]*"/

%import common.WS
%ignore WS
"""


# --- AST ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinearForm:
    """``sum_j coef_j * column_j + const``; columns in order of first appearance, no zero terms."""

    terms: tuple[tuple[str, float], ...] = ()
    const: float = 0.0

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.terms)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def scaled(self, factor: float) -> LinearForm:
        if factor == 0:
            return LinearForm((), 0.0)
        return LinearForm(tuple((c, a * factor) for c, a in self.terms), self.const * factor)

    def plus(self, other: LinearForm, sign: float = 1.0) -> LinearForm:
        coefs = dict(self.terms)
        for c, a in other.terms:
            coefs[c] = coefs.get(c, 0.0) + sign * a
        return LinearForm(
            tuple((c, a) for c, a in coefs.items() if a != 0.0), self.const + sign * other.const
        )


LINEAR_OPS = ("==", "<=", "<", ">=", ">")


@dataclass(frozen=True)
class Comparison:
    """``lhs op rhs`` between linear forms, ``op`` one of ``== != <= < >= >``."""

    lhs: LinearForm
    op: str
    rhs: LinearForm

    @property
    def residual(self) -> LinearForm:
        """``lhs - rhs``."""
        return self.lhs.plus(self.rhs, -1.0)

    @property
    def columns(self) -> tuple[str, ...]:
        return _unique(self.lhs.columns + self.rhs.columns)


@dataclass(frozen=True)
class Chain:
    """A chained comparison ``t0 op1 t1 op2 t2 ...``: the conjunction of its links."""

    links: tuple[Comparison, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return _unique(tuple(c for link in self.links for c in link.columns))


@dataclass(frozen=True)
class TextComparison:
    """``column == 'text'`` or ``column != 'text'``."""

    column: str
    op: Literal["==", "!="]
    value: str

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)


@dataclass(frozen=True)
class InSet:
    """``column in [v1, v2, ...]`` (``negated``: ``not in``); values are str or float."""

    column: str
    values: tuple[str | float, ...]
    negated: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)


@dataclass(frozen=True)
class NotNull:
    """``not_null(column)``."""

    column: str

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)


Condition = Comparison | Chain | TextComparison | InSet | NotNull


@dataclass(frozen=True)
class Conditional:
    """``if condition then consequent``: violated when the condition holds and the consequent
    does not."""

    condition: Condition
    consequent: Condition

    @property
    def columns(self) -> tuple[str, ...]:
        return _unique(self.condition.columns + self.consequent.columns)


Node = Condition | Conditional


def numeric_columns(node: Node) -> set[str]:
    """The columns ``node`` reads as numbers: in comparisons and arithmetic, and in a set of
    numbers (``x in [1, 2]``); not in text comparisons or ``is not null``."""
    if isinstance(node, Conditional):
        return numeric_columns(node.condition) | numeric_columns(node.consequent)
    if isinstance(node, Comparison | Chain):
        return set(node.columns)
    if isinstance(node, InSet) and any(not isinstance(v, str) for v in node.values):
        return {node.column}
    return set()


def is_linear_node(node: Node) -> bool:
    """True for a comparison or chain of linear (in)equalities (not ``!=``, not conditional)."""
    if isinstance(node, Comparison):
        return node.op in LINEAR_OPS
    if isinstance(node, Chain):
        return all(link.op in LINEAR_OPS for link in node.links)
    return False


@dataclass(frozen=True)
class Rule:
    """One parsed edit rule.

    Attributes
    ----------
    name : str
        Unique name (given, or ``R<i>`` from the rule's 1-based position).
    text : str
        The rule as written (whitespace normalized).
    severity : {"error", "warning"}
        ``error`` rules block a release when violated; ``warning`` rules are only reported.
    tolerance : float
        Absolute slack for ``==``, ``<=``, ``>=``, added to :data:`ROUNDING_SLACK` of the
        terms' magnitude (strict comparisons are exact).
    node : Comparison, Chain, TextComparison, InSet, NotNull or Conditional
        The AST.
    columns : tuple of str
        The columns the rule reads, in order of first appearance.
    description : str
        Free text from the rule item.
    """

    name: str
    text: str
    node: Node
    severity: Literal["error", "warning"] = "error"
    tolerance: float = DEFAULT_TOLERANCE
    columns: tuple[str, ...] = field(default=())
    description: str = ""

    @property
    def is_linear(self) -> bool:
        """A linear (in)equality or range without a condition: a row of ``A x = b``/``G x <= h``."""
        return is_linear_node(self.node)

    @property
    def is_conditional(self) -> bool:
        return isinstance(self.node, Conditional)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# --- parsing -----------------------------------------------------------------------------------

_TERMINALS = {
    "NAME": "a column",
    "NUMBER": "a number",
    "STRING": "a quoted text",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "COMP_OP": "a comparison (==, !=, <=, <, >=, >)",
    "IN_OP": "'in'",
    "NOT": "'not'",
    "IS": "'is'",
    "THEN": "'then'",
    "IF": "'if'",
    "NULL": "'null'",
    "BANG": "'!'",
    "$END": "the end of the rule",
}


@cache
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=False)


class _Builder:
    """Turn a lark parse tree into the AST, raising :class:`RuleError` at the offending token."""

    def __init__(self, text: str, name: str | None, known: Sequence[str] | None) -> None:
        self.text = text
        self.name = name
        self.known = None if known is None else tuple(known)
        self.known_set = None if known is None else set(known)

    def error(
        self,
        message: str,
        at: Tree | Token | None,
        hint: str = "",
        code: Reason = Reason.RULE_SYNTAX,
    ) -> RuleError:
        column, width = _span(at)
        return RuleError(
            message,
            rule=self.text,
            name=self.name,
            column=column,
            width=width,
            hint=hint,
            code=code,
        )

    def rule(self, tree: Tree) -> Node:
        if tree.data == "conditional":
            condition, consequent = tree.children
            return Conditional(self.simple(condition), self.simple(consequent))
        return self.simple(tree)

    def simple(self, tree: Tree) -> Condition:
        kind = tree.data
        if kind == "chain":
            return self.chain(tree)
        if kind in ("in_set", "not_in_set"):
            name_tok = tree.children[0]
            values = tuple(self.literal(lit) for lit in tree.children[-1].children)
            if not values:
                raise self.error(
                    "the set is empty", tree.children[-1], "list at least one allowed value"
                )
            kinds = {isinstance(v, str) for v in values}
            if len(kinds) > 1:
                raise self.error(
                    "the set mixes text and numbers",
                    tree.children[-1],
                    "quote every value of a text column, or none of a numeric one",
                )
            return InSet(self.column(name_tok), values, negated=kind == "not_in_set")
        if kind == "not_null":
            return NotNull(self.column(tree.children[0]))
        raise self.error("this is not a rule", tree)  # pragma: no cover - grammar has no others

    def literal(self, tree: Tree) -> str | float:
        tok = tree.children[0]
        if tree.data == "lit_string":
            return str(tok)[1:-1]
        value = float(tok)
        if not math.isfinite(value):
            raise self.error(
                "this number is too large (beyond 1.8e308)", tok, "write a smaller constant"
            )
        return -value if tree.data == "lit_negative" else value

    def column(self, tok: Token) -> str:
        name = str(tok)
        if name.startswith("`"):  # `a column name` with spaces or other characters, as in R
            name = name[1:-1]
        if self.known_set is not None and name not in self.known_set:
            known = ", ".join(self.known) if self.known else "(none)"
            raise self.error(
                f"unknown column {name!r}",
                tok,
                f"known columns: {known}; fix the column name in the rule or add the column to "
                "the data" + _backtick_hint(name, self.known),
                code=Reason.RULE_COLUMN,
            )
        return name

    def chain(self, tree: Tree) -> Comparison | Chain | TextComparison:
        terms = tree.children[0::2]
        ops = tree.children[1::2]
        strings = [t for t in terms if isinstance(t, Tree) and t.data == "string"]
        if strings:
            return self.text_comparison(terms, ops, strings[0])
        forms = [self.linear(t) for t in terms]
        links = []
        for i, op in enumerate(ops):
            link = Comparison(forms[i], str(op), forms[i + 1])
            self.finite(link.residual, _cover(terms[i], terms[i + 1]))
            if not link.columns:
                raise self.error(
                    "this comparison has constants on both sides",
                    _cover(terms[i], terms[i + 1]),
                    "compare at least one column",
                )
            if not link.residual.terms:
                raise self.error(
                    "the columns cancel out: this comparison does not depend on the data",
                    _cover(terms[i], terms[i + 1]),
                    "check the coefficients",
                )
            links.append(link)
        if len(links) == 1:
            return links[0]
        up, down = {"<", "<="}, {">", ">="}
        direction = up if str(ops[0]) in up else down
        for op in ops:
            if str(op) not in direction:
                raise self.error(
                    f"a chained comparison must run one way; {str(op)!r} breaks the chain",
                    op,
                    "write a range as 'lo <= x <= hi' (or with >=), or split it into two rules",
                )
        return Chain(tuple(links))

    def text_comparison(self, terms: list[Tree], ops: list[Token], string: Tree) -> TextComparison:
        hint = "compare a column with a quoted text by == or !=, e.g. region == 'N'"
        if len(terms) != 2:
            raise self.error("quoted text cannot be part of a chained comparison", string, hint)
        op = str(ops[0])
        if op not in ("==", "!="):
            raise self.error(f"quoted text cannot be compared with {op!r}", ops[0], hint)
        other = terms[1] if terms[0] is string else terms[0]
        if not (isinstance(other, Tree) and other.data == "column"):
            raise self.error("quoted text must be compared with a single column", other, hint)
        return TextComparison(self.column(other.children[0]), op, str(string.children[0])[1:-1])

    def linear(self, tree: Tree) -> LinearForm:
        form = self._linear(tree)
        self.finite(form, tree)
        return form

    def finite(self, form: LinearForm, at: Tree | Token) -> None:
        """A constant or coefficient beyond float range (1e400, 1e200 * 1e200) is refused here:
        it would reach the feasibility check and the SQL as inf or nan and crash them."""
        values = [form.const, *(a for _, a in form.terms)]
        if not all(math.isfinite(v) for v in values):
            raise self.error(
                "a number here is too large (beyond 1.8e308 once multiplied out)",
                at,
                "write the rule with smaller constants (rescale the column if need be)",
            )

    def _linear(self, tree: Tree) -> LinearForm:
        kind = tree.data
        if kind == "number":
            return LinearForm((), float(tree.children[0]))
        if kind == "column":
            return LinearForm(((self.column(tree.children[0]), 1.0),), 0.0)
        if kind == "string":
            raise self.error(
                "quoted text cannot be used in arithmetic",
                tree,
                "compare a column with a text by == or != only",
            )
        if kind == "neg":
            return self.linear(tree.children[0]).scaled(-1.0)
        if kind in ("add", "sub"):
            left, right = (self.linear(c) for c in tree.children)
            return left.plus(right, 1.0 if kind == "add" else -1.0)
        if kind == "mul":
            left, right = (self.linear(c) for c in tree.children)
            if not left.is_constant and not right.is_constant:
                raise self.error(
                    "product of two columns: only linear rules are supported",
                    tree,
                    "multiply columns by constants only (e.g. 0.2 * total_costs)",
                )
            if left.is_constant:
                return right.scaled(left.const)
            return left.scaled(right.const)
        if kind == "div":
            left, right = (self.linear(c) for c in tree.children)
            if not right.is_constant:
                raise self.error(
                    "division by a column: only linear rules are supported",
                    tree.children[1],
                    "divide by constants only, or multiply out (a / b <= c  ->  a <= c * b)",
                )
            if right.const == 0:
                raise self.error("division by zero", tree.children[1])
            return left.scaled(1.0 / right.const)
        raise self.error("unsupported expression", tree)  # pragma: no cover


def _span(at: Tree | Token | None) -> tuple[int | None, int]:
    """0-based start column and width of a token or tree (single-line rules)."""
    if at is None:
        return None, 1
    if isinstance(at, Token):
        start, end = at.column, at.end_column
    else:
        meta = at.meta
        if meta.empty:
            return None, 1
        start, end = meta.column, meta.end_column
    if start is None:
        return None, 1
    return start - 1, max(1, (end or start + 1) - start)


def _cover(first: Tree | Token, last: Tree | Token) -> Tree:
    """A tree whose span runs from the start of ``first`` to the end of ``last``."""
    c0, _ = _span(first)
    c1, w1 = _span(last)
    node = Tree("span", [])
    if c0 is not None and c1 is not None:
        node.meta.empty = False
        node.meta.column = c0 + 1
        node.meta.end_column = c1 + w1 + 1
    return node


def _syntax_error(e: UnexpectedInput, text: str, name: str | None) -> RuleError:
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        expected = getattr(e, "expected", None) or getattr(e, "accepts", None) or ()
        return RuleError(
            "the rule ends too early",
            rule=text,
            name=name,
            column=len(text),
            hint=_expected_hint(expected),
        )
    column = (e.column - 1) if isinstance(e.column, int) and e.column > 0 else None
    if isinstance(e, UnexpectedCharacters):
        char = text[column] if column is not None and column < len(text) else "?"
        hint = _expected_hint(e.allowed or ())
        if char == "=":
            hint = "use == for equality; " + hint
        return RuleError(
            f"unexpected character {char!r}", rule=text, name=name, column=column, hint=hint
        )
    token = getattr(e, "token", None)
    shown = str(token) if token is not None else "?"
    width = len(shown) if token is not None else 1
    expected = getattr(e, "accepts", None) or getattr(e, "expected", None) or ()
    return RuleError(
        f"unexpected {shown!r}",
        rule=text,
        name=name,
        column=column,
        width=width,
        hint=_expected_hint(expected),
    )


def _expected_hint(expected: Iterable[str]) -> str:
    names = sorted({_TERMINALS.get(t, t.strip('"').lower()) for t in expected})
    if not names:
        return "fix the rule's syntax"
    return (
        "expected " + " or ".join(names)
        if len(names) < 3
        else "expected one of: " + ", ".join(names)
    )


def parse_rule(
    text: str,
    *,
    name: str | None = None,
    known_columns: Sequence[str] | None = None,
) -> Node:
    """Parse one rule string into its AST.

    Parameters
    ----------
    text : str
        The rule (whitespace is normalized first).
    name : str, optional
        Used in error messages.
    known_columns : sequence of str, optional
        When given, a column outside it is a :class:`RuleError`.

    Returns
    -------
    Node

    Raises
    ------
    RuleError
        With the rule quoted and a caret under the offending token.
    """
    text = " ".join(str(text).split())
    if not text:
        raise RuleError("the rule is empty", name=name, hint="write a rule such as 'a == b + c'")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, name) from e
    return _Builder(text, name, known_columns).rule(tree)


def parse_rules(
    items: Sequence[str | Mapping[str, Any]] | None,
    *,
    known_columns: Sequence[str] | None = None,
    source: str = "edits",
    first_index: int = 1,
) -> list[Rule]:
    """Parse the items of an ``edits:`` list or a rules file.

    Parameters
    ----------
    items : sequence of str or mapping
        Each a rule string or a mapping with keys ``rule`` (required), ``name``, ``severity``
        (``error`` | ``warning``, default ``error``), ``tolerance`` (default 1e-8) and
        ``description``.
    known_columns : sequence of str, optional
        The columns of the data; rules naming any other column are rejected.
    source : str
        Where the items come from, for error messages (``edits``, a file name...).
    first_index : int
        Position of the first item for default names (to continue a list parsed before).

    Returns
    -------
    list of Rule
        In the given order; unnamed rules are called ``R<i>`` (``i`` counts from
        ``first_index``).

    Raises
    ------
    RuleError
        For the first malformed item (quoted, with a caret under the offending token).
    """
    if items is None:
        return []
    if isinstance(items, (str, Mapping)) or not isinstance(items, Sequence):
        raise RuleError(
            f"{source} must be a list of rules, got {type(items).__name__}",
            code=Reason.RULE_OPTION,
            field=source,
        )
    specs = [_item_spec(item, i, source) for i, item in enumerate(items)]
    taken = {s["name"] for s in specs if s["name"] is not None}
    seen: set[str] = set()
    rules = []
    for i, spec in enumerate(specs):
        name = spec["name"]
        if name is None:
            name = f"R{i + first_index}"
            k = 1
            while name in taken:
                k += 1
                name = f"R{i + first_index}_{k}"
            taken.add(name)
        if name in seen:
            raise RuleError(
                f"the name {name!r} is used by two rules ({source}[{i}])",
                rule=spec["text"],
                name=name,
                hint="give every rule its own name",
                code=Reason.RULE_OPTION,
                field=f"{source}[{i}].name",
            )
        seen.add(name)
        node = parse_rule(spec["text"], name=name, known_columns=known_columns)
        rules.append(
            Rule(
                name=name,
                text=" ".join(spec["text"].split()),
                node=node,
                severity=spec["severity"],
                tolerance=spec["tolerance"],
                columns=node.columns,
                description=spec["description"],
            )
        )
    return rules


def _item_spec(item: object, i: int, source: str) -> dict[str, Any]:
    where = f"{source}[{i}]"
    if isinstance(item, str):
        return {
            "text": item,
            "name": None,
            "severity": "error",
            "tolerance": DEFAULT_TOLERANCE,
            "description": "",
        }
    if not isinstance(item, Mapping):
        raise RuleError(
            f"{where} must be a rule string or a mapping with a 'rule' key, "
            f"got {type(item).__name__}",
            code=Reason.RULE_OPTION,
            field=where,
        )
    unknown = sorted(set(map(str, item)) - set(ITEM_KEYS))
    if unknown:
        raise RuleError(
            f"{where} has unknown key(s) {', '.join(unknown)}; allowed: {', '.join(ITEM_KEYS)}",
            code=Reason.RULE_OPTION,
            field=f"{where}.{unknown[0]}",
        )
    text = item.get("rule")
    if not isinstance(text, str) or not text.strip():
        raise RuleError(
            f"{where} needs a 'rule' string, e.g. rule: total == a + b",
            code=Reason.RULE_OPTION,
            field=f"{where}.rule",
        )
    for key in ("name", "description"):
        if isinstance(item.get(key), bool):  # str() would make it "True"
            raise RuleError(
                f"{where}: YAML read the unquoted {key} as a boolean (yes/no/on/off/true/"
                f"false); quote it: {key}: 'no'",
                rule=text,
                code=Reason.RULE_OPTION,
                field=f"{where}.{key}",
            )
    name = item.get("name")
    if name is not None:
        name = str(name)
        if not _NAME_RE.match(name) or name in RESERVED_NAMES:
            raise RuleError(
                f"{where}: invalid rule name {name!r}",
                rule=text,
                hint="a name starts with a letter or '_' and has up to 63 letters, digits, "
                "'_', '.' or '-' (and is not sdc_row_id)",
                code=Reason.RULE_OPTION,
                field=f"{where}.name",
            )
    severity = item.get("severity", "error")
    if severity not in SEVERITIES:
        raise RuleError(
            f"{where}: severity must be 'error' or 'warning', got {severity!r}",
            rule=text,
            name=name,
            code=Reason.RULE_OPTION,
            field=f"{where}.severity",
        )
    tolerance = item.get("tolerance", DEFAULT_TOLERANCE)
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not math.isfinite(tolerance)
        or tolerance < 0
    ):
        raise RuleError(
            f"{where}: tolerance must be a number >= 0, got {tolerance!r}",
            rule=text,
            name=name,
            code=Reason.RULE_OPTION,
            field=f"{where}.tolerance",
        )
    description = item.get("description", "")
    return {
        "text": text,
        "name": name,
        "severity": severity,
        "tolerance": float(tolerance),
        "description": "" if description is None else str(description),
    }


def load_rules_file(path: str | Path) -> list[str | dict[str, Any]]:
    """Read a YAML rules file: a list of rule items, or a mapping with a ``rules:`` list.

    Returns the raw items for :func:`parse_rules` (parse them with the data's columns).

    Raises
    ------
    RuleError
        When the file is missing, is not valid YAML, or has another structure.
    """
    path = Path(path)
    try:
        raw = read_bounded(path, MAX_RULES_FILE_BYTES, what="rules file")
    except UnicodeDecodeError as e:
        raise RuleError(
            f"rules file {str(path)!r} is not UTF-8 text; convert it",
            code=Reason.RULE_OPTION,
            field="rules_file",
        ) from e
    except FileNotFoundError as e:
        raise RuleError(
            f"rules file {str(path)!r} not found; fix rules_file (relative to the spec file)",
            code=Reason.RULE_OPTION,
            field="rules_file",
        ) from e
    except OSError as e:
        raise RuleError(
            f"rules file {str(path)!r} cannot be read: {e.strerror}",
            code=Reason.RULE_OPTION,
            field="rules_file",
        ) from e
    try:
        data = load_yaml(raw, where=f"rules file {path}")
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise RuleError(
            f"rules file {str(path)!r} is not valid YAML{at}; fix its syntax",
            code=Reason.RULE_OPTION,
            field="rules_file",
        ) from e
    if isinstance(data, Mapping):
        extra = sorted(set(map(str, data)) - {"rules"})
        if "rules" not in data or extra:
            raise RuleError(
                f"rules file {str(path)!r} must be a list of rules or a mapping with only a "
                f"'rules:' list" + (f" (unknown keys: {', '.join(extra)})" if extra else ""),
                code=Reason.RULE_OPTION,
                field="rules_file",
            )
        data = data["rules"]
    if not isinstance(data, list):
        raise RuleError(
            f"rules file {str(path)!r} must hold a list of rules (strings or mappings with a "
            "'rule' key)",
            code=Reason.RULE_OPTION,
            field="rules_file",
        )
    return data


def _backtick_hint(name: str, known: Sequence[str]) -> str:
    """When a known column is not an identifier (``hours-per-week``), the rule must quote it
    in backticks, as in R; say so, naming the column the unknown word starts."""
    odd = [c for c in known if not c.isidentifier()]
    if not odd:
        return ""
    near = [c for c in odd if re.split(r"[^0-9A-Za-z_]", c, maxsplit=1)[0] == name]
    example = (near or odd)[0]
    return (
        f"; a column name that is not an identifier goes in backticks, e.g. `{example}`"
        if near
        else f"; column names that are not identifiers go in backticks, e.g. `{example}`"
    )
