"""DuckDB SQL, audit.violations and Great Expectations agree with numpy on random rules and data.

Coefficients are multiples of 1/2 and data are integers, so every residual is computed exactly
in floating point by numpy and DuckDB alike and boundary cases (``x == 3`` at 3, ``x < 3`` at 3)
are judged identically: a disagreement is a semantic bug, not rounding.
"""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdcflow.errors import InputError, Reason
from sdcflow.expectations.compile import compile_rule, to_sql
from sdcflow.expectations.rules import parse_rules
from sdcflow.expectations.suite import validate_frame
from sdcflow.preflight.plan import linear_constraints
from sdcflow.warehouse.edits import evaluate_rules, record_violations, violating_row_ids
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

COLS = ["a", "b", "c"]
OPS = ["==", "<=", ">=", "<", ">"]
TOL = 1e-8

halves = st.integers(-4, 4).map(lambda k: k / 2)


@st.composite
def linear_rule(draw) -> tuple[str, np.ndarray, float, str]:
    """Text of ``sum coef_j col_j  op  const`` with its coefficients (in COLS order)."""
    coefs = np.array([draw(halves) for _ in COLS])
    if not coefs.any():
        coefs[draw(st.integers(0, 2))] = 1.0
    const = float(draw(st.integers(-6, 6)))
    op = draw(st.sampled_from(OPS))
    terms = " + ".join(f"{a}*{c}" for a, c in zip(coefs, COLS, strict=True) if a != 0)
    return f"{terms} {op} {const}", coefs, const, op


def np_compare(r: np.ndarray, op: str) -> np.ndarray:
    """Float array: 1 holds, 0 violated, NaN undetermined, for ``r op 0`` with the tolerance."""
    with np.errstate(invalid="ignore"):
        out = {
            "==": np.abs(r) <= TOL,
            "<=": r <= TOL,
            ">=": -r <= TOL,
            "<": r < 0,
            ">": -r < 0,
        }[op].astype(float)
    out[np.isnan(r)] = np.nan
    return out


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Warehouse:
    wh = Warehouse(tmp_path_factory.mktemp("wh") / "rules.duckdb")
    wh.initialize()
    return wh


def store(warehouse: Warehouse, frame: pd.DataFrame) -> str:
    run_id = uuid.uuid4().hex
    warehouse.write_frame("raw", run_id, frame.assign(**{ROW_ID: np.arange(len(frame))}))
    return run_id


@st.composite
def dataset(draw) -> pd.DataFrame:
    n = draw(st.integers(5, 40))
    values = st.one_of(st.integers(-6, 6).map(float), st.just(np.nan))
    data = {c: draw(st.lists(values, min_size=n, max_size=n)) for c in COLS}
    data["r"] = draw(st.lists(st.sampled_from(["N", "S", "E", None]), min_size=n, max_size=n))
    return pd.DataFrame(data)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    frame=dataset(),
    linear=st.lists(linear_rule(), min_size=1, max_size=3),
    lo=st.integers(-3, 0),
    width=st.integers(0, 4),
    cond_k=st.integers(-2, 2),
)
def test_sql_and_ge_agree_with_numpy(warehouse, frame, linear, lo, width, cond_k) -> None:
    X = frame[COLS].to_numpy(float)
    texts, expected = [], []
    for text, coefs, const, op in linear:
        texts.append(text)
        used = coefs != 0  # a column the rule does not read cannot make it undetermined
        expected.append(np_compare(X[:, used] @ coefs[used] - const, op))
    hi = lo + width
    texts.append(f"{lo} <= b <= {hi}")
    b = X[:, 1]
    rng_ok = np.fmin(np_compare(lo - b, "<="), np_compare(b - hi, "<="))
    expected.append(rng_ok)
    texts.append(f"if a >= {cond_k} then c < b")
    cond = np_compare(cond_k - X[:, 0], "<=")
    cons = np_compare(X[:, 2] - X[:, 1], "<")
    cond_rule = np.where(cond == 0, 1.0, np.where(cons == 1, 1.0, np.nan))
    cond_rule[(cond == 1) & (cons == 0)] = 0.0
    expected.append(cond_rule)
    texts.append("r in ['N', 'S']")
    r = frame["r"]
    expected.append(np.where(r.isna(), np.nan, r.isin(["N", "S"]).astype(float)))
    texts.append("not_null(a)")
    expected.append((~np.isnan(X[:, 0])).astype(float))
    texts.append("if r == 'E' then a != 0")
    is_e = np.where(r.isna(), np.nan, (r == "E").astype(float))
    nonzero = np.where(np.isnan(X[:, 0]), np.nan, (np.abs(X[:, 0]) > TOL).astype(float))
    e_rule = np.where(is_e == 0, 1.0, np.where(nonzero == 1, 1.0, np.nan))
    e_rule[(is_e == 1) & (nonzero == 0)] = 0.0
    expected.append(e_rule)

    rules = parse_rules(texts, known_columns=[*COLS, "r"])
    compiled = [compile_rule(rule) for rule in rules]
    run_id = store(warehouse, frame)

    checks = evaluate_rules(warehouse, "raw", run_id, compiled)
    assert list(checks[ROW_ID]) == list(range(len(frame)))
    counts = record_violations(warehouse, "raw", run_id, compiled)
    report = validate_frame(checks, compiled)
    stored = violating_row_ids(warehouse, "raw", run_id)

    for rule, exp in zip(rules, expected, strict=True):
        want_viol = int((exp == 0).sum())
        want_undet = int(np.isnan(exp).sum())
        assert counts[rule.name] == {"violations": want_viol, "undetermined": want_undet}, rule
        outcome = next(o for o in report.outcomes if o.name == rule.name)
        assert outcome.violations == want_viol, (rule.text, outcome)
        if rule.node.__class__.__name__ != "NotNull":
            assert outcome.undetermined == want_undet, (rule.text, outcome)
        ids = stored.loc[stored["rule"] == rule.name, ROW_ID].tolist()
        assert ids == np.flatnonzero(exp == 0).tolist()
    assert report.success == all((e == 0).sum() == 0 for e in expected)


def test_to_sql_quotes_identifiers_and_inlines_only_rule_constants() -> None:
    (rule,) = parse_rules(["total == 1.16*exp16 + 1.07*exp7 - 3"])
    sql = to_sql(rule)
    assert '"total"' in sql and '"exp16"' in sql and '"exp7"' in sql
    assert "(-1.16)" in sql and "3.0" in sql
    (text_rule,) = parse_rules(['if region == "O\'Neil" then a >= 0'])
    assert "'O''Neil'" in compile_rule(text_rule).holds_sql


def test_linear_constraints_rows() -> None:
    rules = parse_rules(
        [
            "total == 1.16*exp16 + 1.07*exp7",
            "wages >= 0.2 * total",
            "0 <= exp7 <= 100",
            "exp16 < 50",
            "if exp7 == 0 then wages == 0",
            "region in ['N']",
            "other >= 0",
        ]
    )
    lc = linear_constraints(rules, ["total", "exp16", "exp7", "wages"])
    np.testing.assert_allclose(lc.A, [[1.0, -1.16, -1.07, 0.0]])
    np.testing.assert_allclose(lc.b, [0.0])
    np.testing.assert_allclose(
        lc.G,
        [[0.2, 0.0, 0.0, -1.0], [0.0, 0.0, -1.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]],
    )
    np.testing.assert_allclose(lc.h, [0.0, 0.0, 100.0, 50.0])
    assert lc.eq_names == ("R1",) and lc.ineq_names == ("R2", "R3", "R3", "R4")


def test_ge_data_docs_and_no_values(tmp_path, warehouse) -> None:
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 123456.0], "c": [0.0, 0, 0]})
    frame["r"] = ["N", "S", "SECRET"]
    rules = parse_rules(["a == b", "r in ['N', 'S']", {"rule": "c >= 1", "severity": "warning"}])
    compiled = [compile_rule(rule) for rule in rules]
    run_id = store(warehouse, frame)
    checks = evaluate_rules(warehouse, "raw", run_id, compiled)
    report = validate_frame(checks, compiled, docs_dir=tmp_path / "docs")
    assert report.counts() == {"R1": 1, "R2": 1}
    assert report.counts(None) == {"R1": 1, "R2": 1, "R3": 3}
    assert not report.success and [o.name for o in report.failed] == ["R1", "R2"]
    assert report.docs_path == tmp_path / "docs" / "index.html" and report.docs_path.is_file()
    pages = "".join(p.read_text() for p in (tmp_path / "docs").rglob("*.html"))
    assert "edit rule R1" in pages
    for secret in ("SECRET", "123456", "123455"):
        assert secret not in pages
        assert secret not in report.as_markdown()
        assert secret not in str(report.as_dict())


def test_evaluation_error_names_the_rule_not_the_value(warehouse) -> None:
    frame = pd.DataFrame({"a": ["1", "SECRET"], "b": [1.0, 2.0], "c": [0.0, 0.0], "r": "N"})
    run_id = store(warehouse, frame)
    compiled = [compile_rule(rule) for rule in parse_rules(["b >= 0", "a >= 1"])]
    for step in (evaluate_rules, record_violations):
        with pytest.raises(InputError) as info:
            step(warehouse, "raw", run_id, compiled)
        assert info.value.code is Reason.RULE_EVALUATION and info.value.field == "R2"
        assert "SECRET" not in str(info.value)


def test_sql_only_validation_counts_what_great_expectations_counts(warehouse) -> None:
    """The release whose table stays in the warehouse counts its rules in SQL alone: the same
    violating and undetermined records per rule as Great Expectations, of every rule kind
    (linear with a missing value, set, not-null, conditional, text), and no Data Docs."""
    from sdcflow.tasks.edits import _ge_report, _sql_report

    frame = pd.DataFrame(
        {
            "a": [1.0, 2.0, np.nan, -3.0, 5.0, 0.0],
            "b": [2.0, np.nan, 1.0, 1.0, -1.0, 0.0],
            "c": [0.0, 1.0, 2.0, 3.0, 4.0, np.nan],
            "r": ["N", "S", None, "E", "N", "S"],
        }
    )
    run_id = store(warehouse, frame)
    texts = [
        "a + b >= 0",
        "a < 4",
        'r in ["N", "S"]',
        "c is not null",
        'if r == "N" then b >= 0',
        "2 * a == c",
    ]
    compiled = [compile_rule(r) for r in parse_rules(texts, known_columns=[*COLS, "r"])]
    sql = _sql_report(warehouse, "raw", run_id, compiled)
    ge = _ge_report(warehouse, "raw", run_id, compiled, None)
    got = [(o.name, o.violations, o.undetermined) for o in sql.outcomes]
    assert got == [(o.name, o.violations, o.undetermined) for o in ge.outcomes]
    assert sql.records == ge.records == len(frame)
    assert sql.success == ge.success and sql.docs_path is None
    # hand counts: a + b >= 0 -> row 3 violates (-2), rows 1, 2 undetermined
    assert got[0][1:] == (1, 2)
    assert any(v for _, v, _ in got[1:])
