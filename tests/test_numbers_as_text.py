"""Issue 40, item 3: every key is read as what it is, or refused.

A column of numbers written as text (zero-padded, beyond 64 bits, hex, a stray ``inf`` or
``N/A``, digit strings in Parquet) was a nominal key: masked as categories, its unsuppressed
values were published exactly with ``k_anonymity pass`` and exit 0. It is refused (exit 2,
one line naming the column, the line of the first value to fix, and the fixes), unless the
spec declares it categorical. Kept columns are published as the file writes them: DuckDB
read ``0x0007`` as the number 7.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from errorline import cli_error

from sdcflow.cli.main import main
from sdcflow.errors import Reason
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec
from sdcflow.warehouse.sources import read_source

N = 60
BAD = 17  # the record holding the stray value: line 19 of the CSV (the header is line 1)


def _turnover(stray: str | None = None) -> list[str]:
    values = [str(400 + 37 * i) for i in range(N)]
    if stray is not None:
        values[BAD] = stray
    return values


def _csv_spec(tmp: Path, turnover: list[str], key: object = "turnover", **fields) -> Path:
    rows = ["employees,turnover,region"] + [
        f"{3 + i % 7},{t},{'NSEW'[i % 4]}" for i, t in enumerate(turnover)
    ]
    (tmp / "data.csv").write_text("\n".join(rows) + "\n")
    return _spec(tmp, "data.csv", ["employees", key, "region"], **fields)


def _spec(tmp: Path, source: str, keys: list, **fields) -> Path:
    body = {"release": "r", "source": source, "quasi_identifiers": keys,
            "method": {"name": "mdav", "k": 5}, **fields}  # fmt: skip
    (tmp / "release.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return tmp / "release.yaml"


def _refused(spec: Path, capsys) -> tuple[Reason, str | None, str]:
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # one line
    code, field = cli_error(err)
    return code, field, lines[0]


@pytest.mark.parametrize(
    "stray",
    [
        "0444",  # zero-padded: the whole column was text, a nominal key
        "-0444",  # read as the number -444 before
        "12345678901234567890123",  # beyond 64 bits
        "0x01BC",  # hex: read as the number 444 before
        "0b101",  # binary
        "N/A",  # an undeclared missing-value token
        "1_000",  # digits grouped with _
    ],
)
def test_a_key_of_numbers_written_as_text_is_refused_with_its_line(tmp_path, capsys, stray):
    code, field, line = _refused(_csv_spec(tmp_path, _turnover(stray)), capsys)
    assert (code, field) == (Reason.COLUMN_TYPE, "turnover"), line
    assert f"line {BAD + 2}" in line and stray not in line  # the place, never the value
    assert "missing_values" in line and "type: nominal" in line and "type: ordinal" in line
    assert not (tmp_path / "warehouse.duckdb").exists()


def _script(text: str, zero: str) -> str:
    """``text`` with its digits 0-9 written in the script whose zero is ``zero``."""
    return text.translate({ord("0") + d: ord(zero) + d for d in range(10)})


@pytest.mark.parametrize(
    "zero", ["\u0660", "\uff10", "\u0966"]
)  # Arabic-Indic, full-width, Devanagari
def test_a_key_of_numbers_in_another_script_s_digits_is_refused_with_its_line(
    tmp_path, capsys, zero
):
    # float() reads them as numbers, DuckDB's DOUBLE does not: the key was masked as categories
    ages = [_script(str(20 + i % 40), zero) for i in range(N)]
    rows = ["id,age,income"] + [f"{i},{a},{1000 + 17 * i}" for i, a in enumerate(ages)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = _spec(tmp_path, "data.csv", ["age", "income"])
    code, field, line = _refused(spec, capsys)
    assert (code, field) == (Reason.COLUMN_TYPE, "age"), line
    assert "line 2" in line and not any(a in line for a in ages)


@pytest.mark.parametrize("stray", [_script("512", "\u0660"), "-" + _script("5.5", "\uff10")])
def test_one_number_in_another_script_s_digits_in_a_key_is_refused_with_its_line(
    tmp_path, capsys, stray
):
    code, field, line = _refused(_csv_spec(tmp_path, _turnover(stray)), capsys)
    assert (code, field) == (Reason.COLUMN_TYPE, "turnover"), line
    assert f"line {BAD + 2}" in line and stray not in line


@pytest.mark.parametrize("stray", ["inf", "-Infinity", "nan"])
def test_a_stray_inf_in_a_key_is_refused_with_its_line(tmp_path, capsys, stray):
    code, field, line = _refused(_csv_spec(tmp_path, _turnover(stray)), capsys)
    assert (code, field) == (Reason.VALUES_NONFINITE, "turnover"), line
    assert f"line {BAD + 2}" in line


def test_the_line_counts_quoted_line_breaks_as_the_file_has_them(tmp_path, capsys):
    spec = _csv_spec(tmp_path, _turnover("0444"))
    text = (tmp_path / "data.csv").read_text().replace(",N\n", ',"N\nN"\n', 1)  # line 2
    (tmp_path / "data.csv").write_text(text)
    assert f"line {BAD + 3}" in _refused(spec, capsys)[2]


def test_a_declared_token_or_a_declared_category_is_accepted(tmp_path):
    spec = _csv_spec(tmp_path, _turnover("N/A"), missing_values=["N/A"])
    kinds = [(k.name, k.kind) for k in plan_release(load_spec(spec)).resolved_keys]
    assert kinds == [("employees", "numeric"), ("turnover", "numeric"), ("region", "nominal")]
    spec = _csv_spec(tmp_path, _turnover("0444"), key={"name": "turnover", "type": "nominal"})
    assert plan_release(load_spec(spec)).resolved_keys[1].kind == "nominal"


def test_a_key_declared_numeric_that_reads_as_text_names_the_line(tmp_path, capsys):
    spec = _csv_spec(tmp_path, _turnover("0444"), key={"name": "turnover", "type": "numeric"})
    code, field, line = _refused(spec, capsys)
    assert (code, field) == (Reason.COLUMN_TYPE, "turnover") and f"line {BAD + 2}" in line


def test_a_text_key_with_a_few_numbers_is_refused_unless_declared(tmp_path, capsys):
    regions = ["North", "South", "East"] * (N // 3)
    regions[BAD] = "7"
    rows = ["age,region"] + [f"{20 + i % 9},{r}" for i, r in enumerate(regions)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = _spec(tmp_path, "data.csv", ["age", "region"])
    code, field, line = _refused(spec, capsys)
    assert (code, field) == (Reason.COLUMN_TYPE, "region") and f"line {BAD + 2}" in line
    spec = _spec(tmp_path, "data.csv", ["age", {"name": "region", "type": "nominal"}])
    assert plan_release(load_spec(spec)).resolved_keys[1].kind == "nominal"


def _parquet(tmp: Path, turnover: pa.Array) -> None:
    table = pa.table({
        "employees": [3 + i % 7 for i in range(N)],
        "turnover": turnover,
        "region": ["NSEW"[i % 4] for i in range(N)],
    })  # fmt: skip
    pq.write_table(table, tmp / "data.parquet")


def test_a_parquet_key_of_digit_strings_is_refused(tmp_path, capsys):
    _parquet(tmp_path, pa.array(_turnover()))
    code, field, line = _refused(_spec(tmp_path, "data.parquet", ["turnover", "region"]), capsys)
    assert (code, field) == (Reason.COLUMN_TYPE, "turnover") and "row 1" in line


@pytest.mark.parametrize(
    "values",
    [
        pa.array(
            [
                dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=400 + 37 * i)
                for i in range(N)
            ],
            pa.timestamp("us", tz="UTC"),
        ),
        pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=37 * i) for i in range(N)]),
        pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(N)]),
    ],
)
def test_a_date_or_time_key_is_masked_as_categories_only_when_declared(tmp_path, capsys, values):
    _parquet(tmp_path, values)
    code, field, line = _refused(_spec(tmp_path, "data.parquet", ["turnover", "region"]), capsys)
    assert (code, field) == (Reason.COLUMN_TYPE, "turnover") and "type: ordinal" in line
    keys = ["employees", {"name": "turnover", "type": "ordinal"}, "region"]
    assert plan_release(load_spec(_spec(tmp_path, "data.parquet", keys))).resolved_keys[1].kind == (
        "ordinal"
    )


def test_numbers_duckdb_would_not_give_back_as_written_are_read_as_text(tmp_path):
    written = {
        "hex": ["0x0007", "0x00ff", "0x10"],
        "binary": ["0b101", "0b11", "0b1"],
        "padded": ["-0444", "5", "6"],
        "wide": ["1e400", "3", "4"],
    }
    plain = {"n": ["1", "-2", "3"], "x": ["1.5", "inf", "1e3"], "z": ["0", "0.5", "-0.25"]}
    cols = {**written, **plain}
    lines = [",".join(cols)] + [",".join(v[i] for v in cols.values()) for i in range(3)]
    (tmp_path / "w.csv").write_text("\n".join(lines) + "\n")
    data = read_source(tmp_path / "w.csv")
    for name, values in written.items():
        assert data.column(name).to_pylist() == values, name
    assert data.column("n").to_pylist() == [1, -2, 3]
    assert data.column("x").to_pylist() == [1.5, float("inf"), 1000.0]
    assert data.column("z").to_pylist() == [0, 0.5, -0.25]


@pytest.mark.flow
def test_a_hex_keep_column_is_published_as_written(tmp_path, capsys, prefect_api):
    # Before: DuckDB read 0x0007 as the integer 7, and the kept column was published as 7.
    rows = ["age,code,flags"] + [f"{20 + i % 6},0x{i % 3:04X},0b{1 + i % 2:b}" for i in range(N)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = _spec(tmp_path, "data.csv", ["age"], keep=["code"], sensitive=["flags"])
    assert main(["release", str(spec)]) == 0, capsys.readouterr().err
    out = pd.read_parquet(tmp_path / "published" / "r" / "data.parquet")
    assert sorted(out["code"]) == sorted(r.split(",")[1] for r in rows[1:])
    assert sorted(out["flags"]) == sorted(r.split(",")[2] for r in rows[1:])


# a value DuckDB reads as a number, that data.csv would write back otherwise
ODD = ["1.50", "1e3", "-0", ".5", "5.", " 5", "1E5", "+5", "0x0007", "Infinity", "nan"]


def _kept_rows(odd: str) -> list[str]:
    shares = [f"{i % 9}.25" for i in range(N)]
    counts = [str(3 + i) for i in range(N)]
    shares[BAD] = counts[BAD + 1] = odd
    return ["age,share,count,plain"] + [
        f"{20 + i % 6},{s},{c},{i}.5" for i, (s, c) in enumerate(zip(shares, counts, strict=True))
    ]


@pytest.mark.parametrize("odd", ODD)
def test_a_kept_number_the_published_file_would_write_otherwise_is_read_as_written(tmp_path, odd):
    (tmp_path / "data.csv").write_text("\n".join(_kept_rows(odd)) + "\n")
    data = read_source(tmp_path / "data.csv", as_written={"share", "count", "plain"})
    assert data.column("share").to_pylist()[BAD] == odd
    assert data.column("count").to_pylist()[BAD + 1] == odd
    assert pa.types.is_floating(data.schema.field("plain").type)  # 0.5, 1.5...: written back
    # a key is read as before: it is masked, not published as written
    keyed = read_source(tmp_path / "data.csv")
    if odd in ("1.50", "1e3", ".5", "5.", "1E5"):
        assert pa.types.is_floating(keyed.schema.field("share").type)


def test_kept_numbers_written_as_data_csv_writes_them_stay_numbers(tmp_path):
    rows = ["n,x,e"] + [f"{i - 3},{i}.25,{1000 * i}.0" if i else "0,-0.0,1e+20" for i in range(N)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    data = read_source(tmp_path / "data.csv", as_written={"n", "x", "e"})
    assert [str(t) for t in data.schema.types] == ["int64", "double", "double"]


def test_a_weight_written_otherwise_than_data_csv_writes_it_stays_a_number(tmp_path):
    # weights are computed with: read as text, every risk figure would break
    rows = ["age,region,w"] + [f"{20 + i % 6},{'NSEW'[i % 4]},{1 + i % 3}.50" for i in range(N)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = _spec(tmp_path, "data.csv", ["age", "region"], weight_column="w")
    plan = plan_release(load_spec(spec))
    assert plan.profile.types["w"] == "DOUBLE"


def test_a_sensitive_number_an_edit_rule_computes_with_stays_a_number(tmp_path):
    # money written 100.50 is published 100.5, but read as text the rule could not use it
    rows = ["age,region,wages,other,total"] + [
        f"{20 + i % 6},{'NSEW'[i % 4]},{100 + i}.50,{i}.25,{100 + 2 * i}.75" for i in range(N)
    ]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = _spec(tmp_path, "data.csv", ["age", "region"], sensitive=["wages", "other", "total"],
                 edits=["total == wages + other"])  # fmt: skip
    types = plan_release(load_spec(spec)).profile.types
    assert (types["wages"], types["other"], types["total"]) == ("DOUBLE", "DOUBLE", "DOUBLE")


@pytest.mark.flow
def test_kept_and_sensitive_numbers_are_published_as_the_file_writes_them(
    tmp_path, capsys, prefect_api
):
    # Before: one 1.50 among 2.25s was published 1.5, 1e3 1000.0, -0 -0.0, " 5" 5.0
    rows = _kept_rows("1.50")
    for i, odd in enumerate(["1e3", "-0", ".5", "5.", " 5", "1E5"], start=1):
        fields = rows[i].split(",")
        fields[1] = odd
        rows[i] = ",".join(fields)
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = _spec(tmp_path, "data.csv", ["age"], sensitive=["share", "count", "plain"])
    assert main(["release", str(spec)]) == 0, capsys.readouterr().err
    out = tmp_path / "published" / "r"
    with (out / "data.csv").open(newline="") as fh:
        published = list(csv.DictReader(fh))
    source = list(csv.DictReader(rows))
    for name in ("share", "count", "plain"):
        assert sorted(r[name] for r in published) == sorted(r[name] for r in source), name
    parquet = pd.read_parquet(out / "data.parquet")
    assert sorted(parquet["share"]) == sorted(r["share"] for r in source)
    assert parquet["plain"].dtype == "float64"  # every value written back as it is
