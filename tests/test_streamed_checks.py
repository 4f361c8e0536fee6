"""The gates, the disclosure figures and the report from warehouse aggregates (issue 45, the
streamed path, :mod:`sdcflow.tasks.aggregates`) equal the in-memory steps' on the same
release: each release is masked in memory (``mask``, ``released_frame``), its raw and
released records written to a warehouse, then ``check_release`` / ``disclosure_summary`` /
``run_report`` are compared outcome for outcome and figure for figure with the streamed
versions, which read nothing but DuckDB aggregates."""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pandas as pd
import pytest
from prefect.logging import disable_run_logger

from sdcflow.gates import GateOutcome
from sdcflow.methods.keys import Key
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks.aggregates import (
    aggregate_gates,
    check_streamed,
    disclosure_streamed,
    report_streamed,
)
from sdcflow.tasks.checks import check_release
from sdcflow.tasks.mask import disclosure_summary, mask, released_frame
from sdcflow.tasks.report import run_report
from sdcflow.warehouse import aggregates as aggregate_sql
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse, table_name

RUN = "c" * 32
REL = 1e-9


def _frame(kind: str, n: int = 700, seed: int = 0) -> tuple[pd.DataFrame, list[Key]]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) * [1.0, 50.0, 1.0] + [0.0, 100.0, 0.0]
    if kind == "magnitudes":  # never negative: the p % rule gate defaults on
        X = np.abs(X) * [10.0, 1.0, 3.0]
        X[: n // 50, 0] *= 40.0  # a few dominant contributors
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    keys = [Key(c, "numeric") for c in ("a", "b", "c")]
    if kind in ("missing", "categorical", "magnitudes"):
        frame = frame.mask(rng.random(frame.shape) < 0.06)
    if kind in ("categorical", "magnitudes"):
        region = rng.choice(np.array(["N", "S", "E"], dtype=object), n)
        region[rng.random(n) < 0.04] = None
        frame["region"] = region
        keys.append(Key("region", "nominal"))
    frame[ROW_ID] = np.arange(n, dtype=np.int64)
    return frame, keys


def _spec(keys: list[Key], checks: dict | None = None, **method) -> ReleaseSpec:
    return ReleaseSpec.model_validate(
        {
            "release": "streamed",
            "source": "data.csv",
            "quasi_identifiers": [k.name for k in keys],
            "method": {"name": "mdav", "k": 5, "cell_size": 250, **method},
            "checks": checks
            if checks is not None
            else {"k_anonymity": 5, "max_information_loss": 60},
        }
    )


def _released(tmp_path, spec, frame, keys):
    with disable_run_logger():
        result = mask.fn(spec, frame, np.random.default_rng(1), None, keys, ())
    released = released_frame(spec, frame, result)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, frame)
    wh.write_frame("masked", RUN, released)
    return wh, result


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == pytest.approx(b, rel=REL, abs=1e-12)


def _assert_outcomes(streamed: list[GateOutcome], memory: list[GateOutcome]) -> None:
    assert [o.key for o in streamed] == [o.key for o in memory]
    for s, m in zip(streamed, memory, strict=True):
        assert _same(s.figure, m.figure), (s.key, s.figure, m.figure)
        assert (s.threshold, s.direction, s.passed, s.checked, s.note, s.verdict) == (
            m.threshold,
            m.direction,
            m.passed,
            m.checked,
            m.note,
            m.verdict,
        )


def _assert_nested(a, b, path=""):
    if isinstance(b, dict):
        assert set(a) == set(b), (path, set(a) ^ set(b))
        for key in b:
            _assert_nested(a[key], b[key], f"{path}.{key}")
    elif isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_nested(x, y, f"{path}[{i}]")
    elif isinstance(b, float):
        assert _same(float(a), b), (path, a, b)
    else:
        assert a == b, (path, a, b)


CASES = {
    "numeric": {},
    "missing": {},
    "categorical": {},
    "magnitudes": {
        "k_anonymity": 5,
        "max_information_loss": 60,
        "max_nk_dominated_groups": 1000,
        "max_individual_risk": 0.2,
        "max_global_risk": 50,
        "k_anonymity_missing_matches_any": 5,
    },
}


@pytest.mark.parametrize(
    ("kind", "method"), [*((k, "mdav") for k in CASES), ("categorical", "ps"), ("magnitudes", "ps")]
)
def test_streamed_gates_are_the_in_memory_outcomes(tmp_path, kind, method):
    """Every outcome (key, figure, threshold, verdict, note) of ``check_release``, the
    default gates included (the p % rule on never-negative keys), with and without edit
    violations passed in; ``mdav`` and ``ps``."""
    frame, keys = _frame(kind)
    spec = _spec(keys, CASES[kind] or None, name=method)
    assert aggregate_gates(spec, [k.name for k in keys if k.kind == "numeric"]) is None
    wh, result = _released(tmp_path, spec, frame, keys)
    # edit violations passed in, none, and an error rule not checked on the release
    for violations, unchecked in (
        (None, ()),
        ({"rule": 0}, ()),
        ({"rule": 3}, ()),
        (None, ("r2",)),
    ):
        with disable_run_logger():
            memory = check_release.fn(
                spec,
                frame,
                result,
                violations,
                np.random.default_rng(2),
                ("max_global_risk",),
                frame,
                unchecked,
            )
            streamed = check_streamed.fn(
                spec,
                wh,
                RUN,
                result.point_columns,
                result.details,
                violations,
                unchecked,
                ("max_global_risk",),
            )
        _assert_outcomes(streamed[0], memory[0])
        assert set(streamed[1]) == set(memory[1])
        for key, value in memory[1].items():
            assert _same(streamed[1][key], value), key
        assert streamed[2].information_loss.keys() == memory[2].information_loss.keys()
        for key, value in memory[2].information_loss.items():
            assert _same(streamed[2].information_loss[key], value)
    if kind == "magnitudes":
        keys_run = [o.key for o in memory[0]]
        assert "max_p_dominated_groups" in keys_run  # the default the preflight adds
        assert any(o.figure > 0 for o in memory[0] if o.key == "max_p_dominated_groups")


@pytest.mark.parametrize("kind", list(CASES))
def test_streamed_disclosure_is_the_in_memory_summary(tmp_path, kind):
    frame, keys = _frame(kind)
    spec = _spec(keys)
    wh, result = _released(tmp_path, spec, frame, keys)
    memory = disclosure_summary(spec, frame, keys, result)
    streamed = disclosure_streamed(spec, wh, RUN, keys)
    assert "not_computed" in streamed.pop("suda")
    memory.pop("suda")
    _assert_nested(streamed, memory)
    assert streamed["risk"]["after"]["records"] == len(frame)


def test_sdcmicro_count_with_many_patterns_on_small_classes(tmp_path):
    """sdcMicro's count by per-pattern joins on a file where it differs from identical rows:
    a blank key matches any value, several patterns of blanks."""
    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 4, n).astype(float),
            "b": rng.integers(0, 3, n).astype(float),
            "g": rng.choice(np.array(["x", "y"], dtype=object), n),
        }
    )
    frame = frame.mask(rng.random(frame.shape) < 0.2)
    frame[ROW_ID] = np.arange(n)
    keys = [Key("a", "numeric"), Key("b", "numeric"), Key("g", "nominal")]
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, frame)
    wh.write_frame("masked", RUN, frame)
    from sdcflow.core.measures.risk import risk_summary

    streamed = disclosure_streamed(_spec(keys), wh, RUN, keys)["missing_matches_any"]
    loose = risk_summary(frame[["a", "b", "g"]], None, convention="missing_matches_any")
    assert streamed["k_anonymity"] == int(loose.fk.min())
    assert streamed["records_below_k_after"] == int((loose.fk < 5).sum())
    assert streamed["expected_reidentifications_after"] == loose.expected_reidentifications


@pytest.mark.parametrize("complete", [0, 50], ids=["only-blank-records", "beside-others"])
def test_sdcmicro_count_with_records_missing_every_key(tmp_path, complete):
    """A record missing every key matches every record. Its pattern shares no key with any
    other, and the query's branch for such a pair named no column: the count stopped the
    release (exit 3) whenever DuckDB listed that pattern first."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {
            "a": np.r_[np.full(7, np.nan), rng.integers(0, 3, complete).astype(float)],
            "g": np.r_[np.full(7, None, dtype=object), rng.choice(["x", "y"], complete)],
        }
    )
    frame[ROW_ID] = np.arange(len(frame))
    keys = [Key("a", "numeric"), Key("g", "nominal")]
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, frame)
    wh.write_frame("masked", RUN, frame)
    from sdcflow.core.measures.risk import risk_summary

    streamed = disclosure_streamed(_spec(keys), wh, RUN, keys)["missing_matches_any"]
    loose = risk_summary(frame[["a", "g"]], None, convention="missing_matches_any")
    assert streamed["k_anonymity"] == int(loose.fk.min()) >= 7
    assert streamed["expected_reidentifications_after"] == loose.expected_reidentifications


def test_aggregate_gates_refuses_what_needs_the_records():
    keys = [Key("a", "numeric"), Key("b", "numeric")]
    assert aggregate_gates(_spec(keys), ["a", "b"]) is None
    linkage = _spec(keys, {"k_anonymity": 5, "max_record_linkage": 10})
    assert "max_record_linkage" in aggregate_gates(linkage, ["a", "b"])
    fuzzy = ReleaseSpec.model_validate(
        {
            "release": "r",
            "source": "d.csv",
            "quasi_identifiers": ["a", "b"],
            "method": {"name": "fuzzy", "k": 5},
            "checks": {"k_anonymity": 5},
        }
    )
    assert "crisp microaggregation" in aggregate_gates(fuzzy, ["a", "b"])
    weighted = _spec(keys).model_copy(update={"weight_column": "w"})
    assert "weight_column" in aggregate_gates(weighted, ["a", "b"])


def _numbers(html: str) -> list[str]:
    """The report's table cells, as text (figures formatted by ``fmt``)."""
    return re.findall(r"<td[^>]*>([^<]*)</td>", html)


@pytest.mark.parametrize("kind", ["missing", "categorical"])
def test_streamed_report_holds_the_in_memory_figures(tmp_path, kind):
    """The report writes; its tables' figures (checks, IL, moments, correlations summary,
    class sizes, risk) equal the in-memory report's where both draw them; no record value."""
    frame, keys = _frame(kind)
    spec = _spec(keys)
    wh, result = _released(tmp_path, spec, frame, keys)
    with disable_run_logger():
        outcomes, _, evidence = check_release.fn(
            spec, frame, result, None, np.random.default_rng(2), (), frame
        )
        memory = run_report.fn(
            spec,
            tmp_path / "memory",
            RUN,
            "published",
            outcomes,
            None,
            (),
            frame,
            result,
            evidence,
        )
        s_outcomes, _, s_evidence = check_streamed.fn(
            spec, wh, RUN, result.point_columns, result.details, None, ()
        )
        details = {**result.details, "disclosure": disclosure_streamed(spec, wh, RUN, keys)}
        streamed = report_streamed.fn(
            spec,
            tmp_path / "streamed",
            RUN,
            "published",
            s_outcomes,
            None,
            (),
            wh,
            result.point_columns,
            details,
            s_evidence,
        )
    m_html, s_html = memory.read_text(), streamed.read_text()
    m_cells, s_cells = _numbers(m_html), _numbers(s_html)
    # every cell of the in-memory report's tables is in the streamed one's, in order, but
    # for the SUDA rows the streamed path does not compute
    suda = {"largest DIS-SUDA score", "records with a DIS-SUDA score"}
    drop = set()
    for i, cell in enumerate(m_cells):
        if any(cell.startswith(s) for s in suda):
            drop |= {i, i + 1}
    expected = [c for i, c in enumerate(m_cells) if i not in drop]
    assert len(expected) > 60  # checks, IL, moments, risk, keys' figures, method
    assert s_cells == expected
    for sentence in ("Mean absolute change of the", "each released row is shared by"):
        m_line = re.search(sentence + r"[^<]*", m_html).group(0)
        s_line = re.search(sentence + r"[^<]*", s_html).group(0)
        assert s_line == m_line
    assert "streamed path" in s_html
    assert s_html.count("data:image/") == m_html.count("data:image/")
    # no record value: none of the raw values appears as printed by fmt
    raw_values = {f"{v:.6g}" for v in frame[["a", "b", "c"]].to_numpy().ravel()[:200] if v == v}
    assert not raw_values & set(s_cells)


def test_report_quantiles_of_many_keys_fit_a_limit_that_one_key_fits(tmp_path, monkeypatch):
    """An exact quantile holds its column's values in DuckDB's memory, which DuckDB cannot
    spill: asked of every key in one scan they were all held at once, and a census of ten
    million records failed its report under a 1 GB limit. One scan a key holds one."""
    monkeypatch.setenv("SDCFLOW_DUCKDB_MEMORY_LIMIT", "96MB")
    n, keys = 1_500_000, 16  # 16 keys' values are twice the limit, one key's an eighth
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    table = table_name("raw", RUN)
    columns = ", ".join(f"(hash(i * {c + 1}) % 1000003)::DOUBLE AS x{c}" for c in range(keys))
    with wh.connect() as con:
        con.execute(f"CREATE TABLE {table} AS SELECT i AS {ROW_ID}, {columns} FROM range({n}) t(i)")
    probabilities = [0.1, 0.5, 0.9]
    got = aggregate_sql.quantiles(wh, "raw", RUN, {f"x{c}": probabilities for c in range(keys)})
    with wh.connect(read_only=True) as con:
        x5 = con.execute(f"SELECT x5 FROM {table}").fetchnumpy()["x5"]
        all_at_once = ", ".join(f"quantile_cont(x{c}, 0.5)" for c in range(keys))
        with pytest.raises(duckdb.OutOfMemoryException):  # what the report asked before
            con.execute(f"SELECT {all_at_once} FROM {table}").fetchone()
    assert list(got) == [f"x{c}" for c in range(keys)]
    np.testing.assert_array_equal(got["x5"], np.quantile(x5, probabilities))
