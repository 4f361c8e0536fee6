"""The edit-rule language: every rule form, every error form with its caret, rule items."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcflow.errors import InputError, Reason, RuleError
from sdcflow.expectations.rules import (
    Chain,
    Comparison,
    Conditional,
    InSet,
    LinearForm,
    NotNull,
    TextComparison,
    load_rules_file,
    parse_rule,
    parse_rules,
)

COLUMNS = [
    "total",
    "exp16",
    "exp7",
    "wages",
    "total_costs",
    "profit",
    "turnover",
    "employees",
    "region",
    "other_costs",
]


def residual(node: Comparison) -> dict[str, float]:
    r = node.residual
    return {**dict(r.terms), "const": r.const}


# --- every rule form -----------------------------------------------------------------------


def test_equality_with_coefficients_on_the_right() -> None:
    node = parse_rule("total == 1.16*exp16 + 1.07*exp7", known_columns=COLUMNS)
    assert isinstance(node, Comparison) and node.op == "=="
    assert residual(node) == {"total": 1.0, "exp16": -1.16, "exp7": -1.07, "const": 0.0}


def test_inequality_with_coefficient() -> None:
    node = parse_rule("wages >= 0.2 * total_costs")
    assert node.op == ">="
    assert residual(node) == {"wages": 1.0, "total_costs": -0.2, "const": 0.0}


def test_difference_and_constants_on_both_sides() -> None:
    node = parse_rule("profit + 10 == turnover - total_costs - 2 * (5 - 3)")
    assert residual(node) == {"profit": 1.0, "turnover": -1.0, "total_costs": 1.0, "const": 14.0}


def test_division_by_constant_and_unary_minus() -> None:
    node = parse_rule("-(wages + other_costs) / 2 <= -3e2")
    assert residual(node) == {"wages": -0.5, "other_costs": -0.5, "const": 300.0}


def test_repeated_column_terms_are_collected() -> None:
    node = parse_rule("2*wages - wages == total")
    assert residual(node) == {"wages": 1.0, "total": -1.0, "const": 0.0}


def test_chained_range() -> None:
    node = parse_rule("0 <= employees <= 100000")
    assert isinstance(node, Chain) and [link.op for link in node.links] == ["<=", "<="]
    assert node.links[0].lhs == LinearForm((), 0.0)
    assert node.links[1].rhs == LinearForm((), 100000.0)


def test_descending_chain() -> None:
    node = parse_rule("100 > employees >= 1")
    assert [link.op for link in node.links] == [">", ">="]


@pytest.mark.parametrize(
    ("text", "values", "negated"),
    [
        ("region in ['N', 'S', 'E', 'W']", ("N", "S", "E", "W"), False),
        ('region in ["N"]', ("N",), False),
        ("region not in ['X']", ("X",), True),
        ("region %in% c('N', 'S')", ("N", "S"), False),
        ("employees in [1, 2.5, -3]", (1.0, 2.5, -3.0), False),
    ],
)
def test_sets(text: str, values: tuple, negated: bool) -> None:
    node = parse_rule(text)
    assert node == InSet(node.column, values, negated)


@pytest.mark.parametrize("text", ["not_null(region)", "region is not null", "!is.na(region)"])
def test_not_null_forms(text: str) -> None:
    assert parse_rule(text) == NotNull("region")


def test_conditional() -> None:
    node = parse_rule("if employees == 0 then wages == 0")
    assert isinstance(node, Conditional)
    assert node.condition.op == "==" and node.consequent.op == "=="
    assert node.columns == ("employees", "wages")


@pytest.mark.parametrize(
    "text",
    [
        "if region == 'N' then 0 <= wages <= 10",
        "if region in ['N', 'S'] then not_null(wages)",
        "if wages is not null then region != 'X'",
        "if 0 < employees <= 5 then turnover >= 0.5 * wages",
    ],
)
def test_conditional_with_any_simple_rule(text: str) -> None:
    node = parse_rule(text, known_columns=COLUMNS)
    assert isinstance(node, Conditional)


def test_text_comparison_either_side() -> None:
    assert parse_rule("region == 'N'") == TextComparison("region", "==", "N")
    assert parse_rule("'N' != region") == TextComparison("region", "!=", "N")


def test_keywords_inside_names_are_names() -> None:
    node = parse_rule("iffy == thenx + notes + inx")
    assert node.columns == ("iffy", "thenx", "notes", "inx")


def test_whitespace_is_normalized() -> None:
    rules = parse_rules(["total  ==\n   wages +\tother_costs"])
    assert rules[0].text == "total == wages + other_costs"


# --- rule items ----------------------------------------------------------------------------


def test_items_strings_and_mappings() -> None:
    rules = parse_rules(
        [
            "total_costs == wages + other_costs",
            {"rule": "wages >= 0", "name": "wages_nonneg", "severity": "warning"},
            {"rule": "profit == turnover - total_costs", "tolerance": 0.5},
        ],
        known_columns=COLUMNS,
    )
    assert [r.name for r in rules] == ["R1", "wages_nonneg", "R3"]
    assert [r.severity for r in rules] == ["error", "warning", "error"]
    assert rules[0].tolerance == 1e-8 and rules[2].tolerance == 0.5
    assert [r.is_linear for r in rules] == [True, True, True]


def test_default_names_avoid_given_names() -> None:
    rules = parse_rules([{"rule": "wages >= 0", "name": "R2"}, "total >= 0"])
    assert [r.name for r in rules] == ["R2", "R2_2"]


def test_is_linear() -> None:
    rules = parse_rules(
        ["a == b", "0 <= a <= 1", "a != b", "if a == 0 then b == 0", "r in ['x']", "not_null(a)"]
    )
    assert [r.is_linear for r in rules] == [True, True, False, False, False, False]
    assert [r.is_conditional for r in rules] == [False, False, False, True, False, False]


def test_rules_file_list_and_mapping(tmp_path) -> None:
    listed = tmp_path / "a.yaml"
    listed.write_text("- a == b + c\n- {rule: 'a >= 0', name: pos}\n")
    mapped = tmp_path / "b.yaml"
    mapped.write_text("rules:\n  - a == b + c\n")
    assert len(parse_rules(load_rules_file(listed))) == 2
    assert parse_rules(load_rules_file(mapped))[0].text == "a == b + c"


@pytest.mark.parametrize(
    "content",
    [
        "rules: [a == b]\nother: 1\n",  # a key other than rules:
        "a: [\n",  # not YAML
        "just a string\n",  # not a list of rules
    ],
)
def test_rules_file_errors(tmp_path, content: str) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(content)
    with pytest.raises(RuleError) as info:
        load_rules_file(path)
    assert info.value.code is Reason.RULE_OPTION and info.value.field == "rules_file"


def test_rules_file_missing(tmp_path) -> None:
    with pytest.raises(RuleError) as info:
        load_rules_file(tmp_path / "nope.yaml")
    assert info.value.code is Reason.RULE_OPTION and info.value.field == "rules_file"
    assert isinstance(info.value.__cause__, FileNotFoundError)


# --- every error form, with the caret under the offending token ------------------------------


def caret(message: str) -> tuple[int, int]:
    """(0-based column, width) of the caret line under the quoted rule."""
    lines = message.splitlines()
    line = next(ln for ln in lines if ln.strip() and set(ln.strip()) == {"^"})
    stripped = line[4:]
    start = len(stripped) - len(stripped.lstrip())
    return start, len(stripped.strip())


@pytest.mark.parametrize(
    ("text", "code", "column", "width"),
    [
        ("total == wages + ) other", Reason.RULE_SYNTAX, 17, 1),  # unexpected ')'
        ("total = wages", Reason.RULE_SYNTAX, 6, 1),  # unexpected character '='
        ("total == wages +", Reason.RULE_SYNTAX, 16, 1),  # ends too early
        ("if total then wages == 0", Reason.RULE_SYNTAX, 9, 4),  # unexpected 'then'
        ("region in [N]", Reason.RULE_SYNTAX, 11, 1),  # unexpected 'N'
        ("total == wages $ 3", Reason.RULE_SYNTAX, 15, 1),  # unexpected character '$'
        ("wages * total >= 0", Reason.RULE_SYNTAX, 0, 13),  # product of two columns
        ("wages / total >= 0", Reason.RULE_SYNTAX, 8, 5),  # division by a column
        ("wages / 0 >= 1", Reason.RULE_SYNTAX, 8, 1),  # division by zero
        ("total == wagez + other_costs", Reason.RULE_COLUMN, 9, 5),  # unknown column 'wagez'
        ("0 <= employees == 5", Reason.RULE_SYNTAX, 15, 2),  # chain must run one way
        ("region > 'N'", Reason.RULE_SYNTAX, 7, 1),  # text cannot be compared with '>'
        ("region + 1 == 'N'", Reason.RULE_SYNTAX, 0, 10),  # text vs a single column only
        ("wages + 'N' == 1", Reason.RULE_SYNTAX, 8, 3),  # text in arithmetic
        ("0 <= 1", Reason.RULE_SYNTAX, 0, 6),  # constants on both sides
        ("region in []", Reason.RULE_SYNTAX, 10, 2),  # the set is empty
        ("region in ['N', 1]", Reason.RULE_SYNTAX, 10, 8),  # the set mixes text and numbers
        # digits of other scripts read as numbers (`1\u0665` was 15 and looks like 1.), and
        # fullwidth ones (`\uff11\uff10` was 10): a number is written in ASCII digits
        ("wages <= 1\u0665", Reason.RULE_SYNTAX, 10, 1),
        ("wages <= \uff11\uff10", Reason.RULE_SYNTAX, 9, 1),
        # a nested 'if' reads as a column named "if", so the parser stops at the next word
        ("if wages >= 0 then if wages >= 1 then total >= 0", Reason.RULE_SYNTAX, 22, 5),
    ],
)
def test_error_caret(text: str, code: Reason, column: int, width: int) -> None:
    with pytest.raises(RuleError) as info:
        parse_rules([text], known_columns=COLUMNS)
    err = info.value
    assert isinstance(err, InputError)
    assert err.code is code and err.field == "R1"
    assert err.rule == text and err.name == "R1"
    assert f"    {text}" in str(err)
    assert err.column == column
    assert caret(str(err)) == (column, width)


def test_unknown_column_lists_known_ones() -> None:
    with pytest.raises(RuleError) as info:
        parse_rules(["wagez >= 0"], known_columns=["wages", "total"])
    assert "known columns: wages, total" in str(info.value)


def test_equals_sign_hint() -> None:
    with pytest.raises(RuleError) as info:
        parse_rule("a = b")
    assert info.value.code is Reason.RULE_SYNTAX and info.value.column == 2
    assert "use == for equality" in str(info.value)  # the hint, which is the point here


@pytest.mark.parametrize(
    ("items", "code", "field"),
    [
        ("a == b", Reason.RULE_OPTION, "edits"),
        ([42], Reason.RULE_OPTION, "edits[0]"),
        ([{"rule": "a == b", "weight": 2}], Reason.RULE_OPTION, "edits[0].weight"),
        ([{"name": "x"}], Reason.RULE_OPTION, "edits[0].rule"),
        ([{"rule": "a == b", "severity": "fatal"}], Reason.RULE_OPTION, "edits[0].severity"),
        ([{"rule": "a == b", "tolerance": -1}], Reason.RULE_OPTION, "edits[0].tolerance"),
        ([{"rule": "a == b", "tolerance": True}], Reason.RULE_OPTION, "edits[0].tolerance"),
        ([{"rule": "a == b", "name": "has space"}], Reason.RULE_OPTION, "edits[0].name"),
        ([{"rule": "a == b", "name": "sdc_row_id"}], Reason.RULE_OPTION, "edits[0].name"),
        (
            [{"rule": "a == b", "name": "x"}, {"rule": "a >= 0", "name": "x"}],
            Reason.RULE_OPTION,
            "edits[1].name",
        ),
        (["   "], Reason.RULE_SYNTAX, "R1"),  # an empty rule
    ],
)
def test_item_errors(items, code: Reason, field: str) -> None:
    with pytest.raises(RuleError) as info:
        parse_rules(items)
    assert info.value.code is code and info.value.field == field


def test_backticks_quote_unusual_column_names() -> None:
    node = parse_rule(
        "`total costs` <= 2 * `turn-over`", known_columns=["total costs", "turn-over"]
    )
    assert node.columns == ("total costs", "turn-over")
    with pytest.raises(RuleError) as info:
        parse_rule("`total cost` >= 0", known_columns=["total costs"])
    assert info.value.code is Reason.RULE_COLUMN
    assert caret(str(info.value)) == (0, len("`total cost`"))  # the whole quoted name


def test_column_names_with_accents_are_identifiers() -> None:
    # `Région`, `Größe` are identifiers (str.isidentifier, and R reads them unquoted); the
    # rule language refused them with "unexpected character 'é'" (exit 2).
    known = ["Région", "Größe", "âge", "net"]
    assert parse_rule("Région in ['Nord', 'Sud']", known_columns=known).columns == ("Région",)
    assert parse_rule("Größe + âge == net", known_columns=known).columns == ("Größe", "âge", "net")
    with pytest.raises(RuleError) as info:
        parse_rule("Regíon in ['Nord']", known_columns=known)
    assert info.value.code is Reason.RULE_COLUMN


# --- property: the linear form of any arithmetic expression evaluates like the expression ----


@st.composite
def expression(draw, depth: int = 0) -> tuple[str, object]:
    """A random linear expression over x, y, z: its text and a function of (x, y, z)."""
    if depth >= 3 or draw(st.booleans()):
        if draw(st.booleans()):
            name = draw(st.sampled_from(["x", "y", "z"]))
            return name, lambda v, n=name: v[n]
        k = draw(st.integers(0, 9))
        return str(k), lambda v, k=k: float(k)
    kind = draw(st.sampled_from(["+", "-", "*", "/", "neg", "()"]))
    left_text, left = draw(expression(depth + 1))
    if kind == "neg":
        return f"-({left_text})", lambda v: -left(v)
    if kind == "()":
        return f"({left_text})", left
    if kind in "*/":
        k = draw(st.integers(1, 5))
        if kind == "*":
            return f"{k} * ({left_text})", lambda v: k * left(v)
        return f"({left_text}) / {k}", lambda v: left(v) / k
    right_text, right = draw(expression(depth + 1))
    if kind == "+":
        return f"{left_text} + {right_text}", lambda v: left(v) + right(v)
    return f"{left_text} - ({right_text})", lambda v: left(v) - right(v)


@settings(max_examples=60, deadline=None)
@given(lhs=expression(), rhs=expression(), point=st.tuples(*[st.integers(-9, 9)] * 3))
def test_linear_form_matches_the_expression(lhs, rhs, point) -> None:
    (lhs_text, f), (rhs_text, g) = lhs, rhs
    values = dict(zip("xyz", map(float, point), strict=True))
    try:
        node = parse_rule(f"{lhs_text} <= {rhs_text}")
    except RuleError as e:  # only when both sides are constants or the columns cancel out
        assert "constants on both sides" in str(e) or "cancel" in str(e)
        return
    r = node.residual
    value = sum(a * values[c] for c, a in r.terms) + r.const
    assert value == pytest.approx(f(values) - g(values), abs=1e-9)


@pytest.mark.parametrize(
    "text",
    [
        "employees <= 1e400",  # a literal beyond float range
        "1e200 * 1e200 * employees >= 0",  # a coefficient that overflows once multiplied
        "employees / 1e-320 >= 0",  # division by a subnormal: coefficient 1e320
        "employees + 1e308 <= -1e308",  # the residual's constant overflows
        "employees in [1, 1e400]",  # a set value
    ],
)
def test_a_number_beyond_float_range_is_a_rule_syntax_error(text: str) -> None:
    # it reached the feasibility LP as inf ("run failed: ValueError ... linprog", exit 3)
    with pytest.raises(RuleError) as e:
        parse_rule(text, known_columns=COLUMNS)
    assert e.value.code is Reason.RULE_SYNTAX
