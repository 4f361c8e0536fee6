"""Source files as statistical offices have them: European and tab-separated CSV, codes with
leading zeros, values past the type detector's sample, files that are not CSV text."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from errorline import cli_error

from sdcflow.cli.main import main
from sdcflow.errors import InputError, Reason
from sdcflow.methods.keys import as_text
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec
from sdcflow.warehouse.sources import read_source
from sdcflow.warehouse.warehouse import Warehouse

PAST_SAMPLE = 25_000  # DuckDB's type detector sampled 20 480 lines


def test_codes_with_leading_zeros_past_the_sample_stay_text(tmp_path):
    # Before: the column was typed BIGINT from the first lines and 00100 became 100.
    lines = [f"{10000 + i},1" for i in range(PAST_SAMPLE)] + ["00100,2", "01234,3"]
    (tmp_path / "pc.csv").write_text("postcode,x\n" + "\n".join(lines) + "\n")
    data = read_source(tmp_path / "pc.csv")
    assert pa.types.is_string(data.schema.field("postcode").type)
    assert data.column("postcode").to_pylist()[-2:] == ["00100", "01234"]


def test_decimals_past_the_sample_are_not_rounded(tmp_path):
    # Before: 199.5 past the sample was read as the integer 200, silently.
    lines = [f"{i},1" for i in range(PAST_SAMPLE)] + ["199.5,2"]
    (tmp_path / "a.csv").write_text("a,x\n" + "\n".join(lines) + "\n")
    assert read_source(tmp_path / "a.csv").column("a").to_pylist()[-1] == 199.5


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_duplicate_names_in_a_semicolon_or_tab_file_are_refused(tmp_path, sep):
    # Before: only a comma header was checked; DuckDB renamed the second `a` to `a_1`.
    (tmp_path / "d.csv").write_text(sep.join("aab") + "\n" + sep.join("123") + "\n")
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "d.csv")
    assert e.value.code is Reason.SOURCE_COLUMNS


@pytest.mark.parametrize("late", [False, True])
def test_a_ragged_semicolon_file_is_named_as_ragged(tmp_path, late):
    # Before: read as one column `a;b;c` (the spec's columns "not in the file"), or an
    # unexplained reader error when the short line came past the sample.
    good = ["1;2;3"] * (PAST_SAMPLE if late else 1)
    (tmp_path / "r.csv").write_text("\n".join(["a;b;c", *good, "4;5", "7;8;9"]) + "\n")
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "r.csv")
    assert e.value.code is Reason.SOURCE_FORMAT


def test_a_semicolon_file_reads_its_columns(tmp_path):
    (tmp_path / "s.csv").write_text('pc;a;city\r\n01234;-1.5e3;Zürich\r\n00501;2;"Köln; Nord"\r\n')
    data = read_source(tmp_path / "s.csv")
    assert data.column_names == ["pc", "a", "city"]
    assert data.column("pc").to_pylist() == ["01234", "00501"]
    assert data.column("a").to_pylist() == [-1500.0, 2.0]
    assert data.column("city").to_pylist() == ["Zürich", "Köln; Nord"]


def test_a_gzip_or_parquet_file_named_csv_is_a_format_error(tmp_path):
    (tmp_path / "g.csv").write_bytes(gzip.compress(b"a,b\n1,2\n"))
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "p.csv")
    (tmp_path / "c.parquet").write_text("a,b\n1,2\n")
    for name in ("g.csv", "p.csv", "c.parquet"):
        with pytest.raises(InputError) as e:
            read_source(tmp_path / name)
        assert e.value.code is Reason.SOURCE_FORMAT, name


@pytest.mark.parametrize("time", ["", " 10:30:00"])
@pytest.mark.parametrize("missing", [None, ["?"]])
def test_dates_whose_day_and_month_cannot_be_told_apart_are_refused(tmp_path, time, missing):
    # Before: 02/01/2024 was read as 2 January without a word, in an American file too;
    # and with a missing-value token in the column, the check's sniffer saw text and let
    # the dates through.
    gap = "?" if missing else ""
    (tmp_path / "d.csv").write_text(f"d,x\n02/01/2024{time},1\n04/03/2024{time},2\n{gap},3\n")
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "d.csv", missing)
    assert (e.value.code, e.value.field) == (Reason.SOURCE_FORMAT, "d")


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("02/01/2024\n01/13/2024", dt.date(2024, 2, 1)),
        ("02.01.2024\n25.03.2024", dt.date(2024, 1, 2)),
    ],
)
def test_dates_a_day_above_12_disambiguates_are_read(tmp_path, text, day):
    (tmp_path / "d.csv").write_text("d\n" + text + "\n")
    assert read_source(tmp_path / "d.csv").column("d").to_pylist()[0] == day


def test_an_iso_date_column_beside_unambiguous_day_month_dates_is_read(tmp_path):
    # Before: the file's day-first format made every date column suspect, and an ISO
    # column with no day above 12 was refused though its text says which is the month.
    rows = [f"{d:02d}/03/2024,2024-0{1 + d % 9}-0{1 + d % 9}" for d in range(1, 29)]
    (tmp_path / "d.csv").write_text("a,b\n" + "\n".join(rows) + "\n")
    assert str(read_source(tmp_path / "d.csv").column("b")[0])[:10] == "2024-02-02"


def test_an_ambiguous_date_column_the_release_does_not_use_is_not_refused(tmp_path, capsys):
    # Before: an honest file was refused (exit 2) for a column the release never publishes.
    rows = ["age;income;when"] + [
        f"{20 + i % 40};{1000 + 37 * i};0{1 + i % 9}/03/2024" for i in range(60)
    ]
    assert main(["check", str(_spec(tmp_path, rows))]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("name", ["a;b;c", "a\tb\tc", "a|b|c"])
def test_a_quoted_header_name_holding_another_delimiter_keeps_the_comma(tmp_path, name):
    # Before: the name cut the header at ; (or tab, bar) into more fields than the commas,
    # and an honest comma file was refused as ragged.
    (tmp_path / "q.csv").write_text(f'id,"{name}"\n1,2\n3,4\n')
    assert read_source(tmp_path / "q.csv").column_names == ["id", name]


def test_a_quoted_name_and_values_holding_the_same_semicolons_keep_the_comma(tmp_path):
    # The records agree with the semicolons too (3 fields each); the comma cut is whole.
    (tmp_path / "q.csv").write_text('id,"a;b;c"\n1,"x;y;z"\n2,"u;v;w"\n')
    assert read_source(tmp_path / "q.csv").column_names == ["id", "a;b;c"]


def test_a_semicolon_file_whose_header_has_a_comma_in_a_name_is_read(tmp_path):
    (tmp_path / "s.csv").write_text("id;a,b\n1;x\n2;y\n")
    assert read_source(tmp_path / "s.csv").column_names == ["id", "a,b"]


def test_a_first_record_over_the_csv_field_limit_does_not_hide_the_header(tmp_path):
    # The delimiter is checked against the first record: one csv cannot read (a field of
    # 200 000 characters) must leave the header's own cut, not fail the header.
    (tmp_path / "h.csv").write_text("id,a\n1," + "x" * 200_000 + "\n2,y\n")
    assert read_source(tmp_path / "h.csv").column_names == ["id", "a"]


def test_latin1_past_the_first_block_is_a_format_error(tmp_path):
    text = "city,x\n" + "Zurich,1\n" * PAST_SAMPLE + "Zürich,2\n"
    (tmp_path / "l.csv").write_bytes(text.encode("latin-1"))
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "l.csv")
    assert e.value.code is Reason.SOURCE_FORMAT


def _spec(tmp: Path, rows: list[str], sep: str = ";") -> Path:
    (tmp / "data.csv").write_text("\n".join(rows) + "\n")
    spec = {
        "release": "euro",
        "source": "data.csv",
        "quasi_identifiers": ["age", "income"],
        "method": {"name": "mdav", "k": 3},
    }
    (tmp / "release.yaml").write_text(yaml.safe_dump(spec))
    return tmp / "release.yaml"


@pytest.mark.parametrize(
    "values",
    [
        ["1.234,56", "12,5", "880,00"],  # European: decimal comma, point for thousands
        ["1 234,5", "12,5", "99"],
        ["12%", "7.5 %", "100%"],
    ],
)
def test_a_key_of_numbers_with_a_decimal_comma_is_refused(tmp_path, capsys, values):
    # Before: read as text, the key was masked as categories: most incomes suppressed and
    # the others published exactly, with exit 0.
    rows = ["age;income"] + [f"{20 + i % 40};{values[i % 3]}" for i in range(60)]
    assert main(["check", str(_spec(tmp_path, rows))]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[:2] == (Reason.COLUMN_TYPE, "income"), err
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_a_date_column_comes_back_from_the_warehouse_as_dates(tmp_path):
    # Before: DuckDB's .df() gave midnight timestamps, labelled "2021-06-10 00:00:00", where
    # the preflight had ordered the ordinal key's dates as "2021-06-10": every value was
    # "not among its declared categories" (exit 2 at the mask step, for a key the spec did
    # not declare), and a kept date was published as a timestamp.
    days = [dt.date(2021, 6, 10), None, dt.date(2020, 1, 1)]
    table = pa.table({"day": pa.array(days, pa.date32()), "x": [1, 2, 3]})
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    run = "0" * 32
    wh.ingest(table, run)
    frame = wh.read_frame("raw", run)
    assert frame["day"].tolist() == days
    assert as_text(frame["day"]).tolist() == as_text(table.column("day").to_pandas()).tolist()
    assert pa.Table.from_pandas(frame[["day"]]).schema.field("day").type == pa.date32()


def test_a_decimal_of_more_than_15_digits_is_read_as_its_nearest_float(tmp_path):
    # DuckDB's frame gave about a quarter of such values a float one unit off in its last
    # bit, where Parquet's reader (the streamed path's pieces) gives the nearest: the two
    # paths masked different numbers
    cents = list(range(10**16 + 1, 10**16 + 4001, 7))
    values = [decimal.Decimal(c) / 100 for c in cents]
    table = pa.table({"x": pa.array(values, pa.decimal128(20, 2))})
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    run = "0" * 32
    wh.ingest(table, run)
    frame = wh.read_frame("raw", run)
    assert frame["x"].tolist() == [float(v) for v in values]


def test_a_date_key_declared_ordinal_is_released_and_undeclared_refused(tmp_path, capsys):
    # Undeclared, a date (a timestamp: every value unique) was masked as categories and its
    # unsuppressed values published exactly; it is masked so only when the spec says so.
    rows = ["age,day"] + [f"{20 + i % 4},2021-0{1 + i % 3}-1{i % 2}" for i in range(48)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = {
        "release": "dates",
        "source": "data.csv",
        "quasi_identifiers": ["age", "day"],
        "method": {"name": "mdav", "k": 3},
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "release.yaml")]) == 2
    assert cli_error(capsys.readouterr().err)[:2] == (Reason.COLUMN_TYPE, "day")
    spec["quasi_identifiers"] = ["age", {"name": "day", "type": "ordinal"}]
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["release", str(tmp_path / "release.yaml")]) == 0, capsys.readouterr().err
    published = pq.read_table(tmp_path / "published" / "dates" / "data.parquet").to_pandas()
    assert len(published) == 48
    assert set(published["day"].dropna()) <= {r.split(",")[1] for r in rows[1:]}


@pytest.mark.parametrize("digits", [20, 24, 40])
def test_integers_beyond_64_bits_are_read_as_their_digits(tmp_path, digits):
    # Before: HUGEINT (or BIGNUM) reached pandas as float64, and a kept 20-digit id was
    # published as 1.0000000000000002e+19 for every record.
    ids = [str(10 ** (digits - 1) + 7 * i + 1) for i in range(3)]
    (tmp_path / "i.csv").write_text("id,x\n" + "".join(f"{v},{i}\n" for i, v in enumerate(ids)))
    assert read_source(tmp_path / "i.csv").column("id").to_pylist() == ids


@pytest.mark.parametrize("sep", [",", ";"])
def test_a_title_line_above_the_header_is_refused_not_skipped(tmp_path, sep):
    # Before: DuckDB skipped the title and took line 2 as the header, which the duplicate
    # check had not seen (a, a came out as a, a_1); with the header's delimiter and no skip,
    # a semicolon file with a title was one column of whole lines.
    rows = ["Survey 2024, table 1" if sep == ";" else "Survey 2024", sep.join("aac"), "1;2;3"]
    (tmp_path / "t.csv").write_text("\n".join(r.replace(";", sep) for r in rows) + "\n")
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "t.csv")
    assert e.value.code is Reason.SOURCE_FORMAT


def test_a_one_column_file_is_read(tmp_path):
    (tmp_path / "o.csv").write_text("pc\n01234\n00501\n")
    assert read_source(tmp_path / "o.csv").column("pc").to_pylist() == ["01234", "00501"]


@pytest.mark.parametrize("sep", [";", ",", "|"])
def test_a_one_column_file_whose_values_hold_a_delimiter_is_one_column(tmp_path, sep):
    # Before: the second line's `a;b` chose `;`, and line 1 was refused as a title line above
    # two columns. Lines that do not cut into one table at any delimiter are one column.
    (tmp_path / "o.csv").write_text(f"note\na{sep}b\nc\nd{sep}e{sep}f\n")
    data = read_source(tmp_path / "o.csv")
    assert data.column_names == ["note"]
    assert data.column("note").to_pylist() == [f"a{sep}b", "c", f"d{sep}e{sep}f"]


def test_a_kept_decimal_a_float_cannot_hold_is_refused(tmp_path, capsys):
    # Before: the warehouse handed DECIMAL(38,10) on as float64, and the "unchanged" column
    # was published rounded to about 15 digits (exit 0).
    import decimal

    n = 30
    amounts = [decimal.Decimal(f"12345678901.{i:010d}") for i in range(n)]
    table = pa.table(
        {
            "age": [20 + i % 3 for i in range(n)],
            "amount": pa.array(amounts, pa.decimal128(38, 10)),
        }
    )
    pq.write_table(table, tmp_path / "d.parquet")
    spec = {
        "release": "dec",
        "source": "d.parquet",
        "quasi_identifiers": ["age"],
        "keep": ["amount"],
        "method": {"name": "mdav", "k": 3},
        "checks": {"keep_k_anonymity": 1},
        "accept": {"looser_checks": ["keep_k_anonymity"]},
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "release.yaml")]) == 2
    assert cli_error(capsys.readouterr().err)[:2] == (Reason.COLUMN_TYPE, "amount")


@pytest.mark.parametrize(
    ("values", "read_as"),
    [
        (["0.1234567890123456789", "12345678901234567.25"], "VARCHAR"),  # rounded as floats
        (["0.30000000000000004", "-0.001", "12.5", "1e+16"], "DOUBLE"),  # as data.csv writes
        (["0.30000000000000004", "-0.001", "+12.50", "1e16"], "VARCHAR"),  # held, not as written
        # numpy's savetxt ('%.18e'): each its float written out, but not as data.csv writes it
        (["1.731136370204654495e-01", "5.125730221093393624e+01"], "VARCHAR"),
    ],
)
def test_a_sensitive_csv_number_a_float_cannot_hold_is_published_as_written(
    tmp_path, capsys, values, read_as
):
    # Before: read as DOUBLE, the "unchanged" column was published as 0.12345678901234568
    # and 1.2345678901234568e+16 with exit 0; then it was refused. Now a column with a value
    # data.csv would not write back as the file writes it is read, and published, as text.
    rows = ["age;amount"] + [f"{20 + i % 3};{values[i % len(values)]}" for i in range(30)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    spec = {
        "release": "dbl",
        "source": "data.csv",
        "quasi_identifiers": ["age"],
        "sensitive": ["amount"],
        "method": {"name": "mdav", "k": 3},
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "release.yaml")]) == 0, capsys.readouterr().err
    plan = plan_release(load_spec(tmp_path / "release.yaml"))
    assert plan.profile.types["amount"] == read_as


def test_weights_with_a_decimal_comma_are_refused_naming_the_column(tmp_path, capsys):
    rows = ["age;w"] + [f"{20 + i % 4};{1 + i % 3},5" for i in range(30)]
    spec = _spec(tmp_path, rows)
    data = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**data, "quasi_identifiers": ["age"], "weight_column": "w"}))
    assert main(["check", str(spec)]) == 2
    assert cli_error(capsys.readouterr().err)[:2] == (Reason.WEIGHTS, "w")


@pytest.mark.parametrize("sep", [",", ";"])
def test_a_byte_order_mark_does_not_hide_a_duplicate_first_column(tmp_path, sep):
    # Before: the header was read with the mark ("\ufeffa" != "a"); DuckDB strips it and
    # renamed the second `a` to `a_1`.
    (tmp_path / "b.csv").write_text(f"a{sep}a{sep}b\n1{sep}2{sep}3\n", encoding="utf-8-sig")
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "b.csv")
    assert e.value.code is Reason.SOURCE_COLUMNS


@pytest.mark.parametrize(
    ("column", "role", "code"),
    [
        ("w", "weight_column", Reason.WEIGHTS),  # a pandas timedelta64: was a BIGINT weight
        ("w", "quasi_identifiers", Reason.COLUMN_TYPE),  # was masked as a count of seconds
        ("b", "weight_column", Reason.WEIGHTS),
        ("day", "weight_column", Reason.WEIGHTS),
    ],
)
def test_a_parquet_duration_boolean_or_date_is_no_weight_or_numeric_key(
    tmp_path, capsys, column, role, code
):
    """Parquet has no duration type: Arrow writes a duration as int64 and records the type in
    its own schema, which DuckDB ignored (BIGINT, its unit lost). A weight is a real number."""
    n = 30
    pq.write_table(
        pa.table({
            "age": [20 + i % 4 for i in range(n)],
            "w": pa.array([60 * (i + 1) for i in range(n)], type=pa.duration("s")),
            "b": [i % 2 == 0 for i in range(n)],
            "day": [dt.date(2024, 1, 1 + i % 28) for i in range(n)],
        }),
        tmp_path / "d.parquet",
    )  # fmt: skip
    assert pa.types.is_duration(read_source(tmp_path / "d.parquet").schema.field("w").type)
    spec = {"release": "dur", "source": "d.parquet", "quasi_identifiers": ["age"],
            "method": {"name": "mdav", "k": 3}}  # fmt: skip
    spec[role] = ["age", column] if role == "quasi_identifiers" else column
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "release.yaml")]) == 2
    assert cli_error(capsys.readouterr().err)[:2] == (code, column)


# -- issue 41, item 7: messages that pointed at the wrong thing ---------------------------------


def test_a_field_past_duckdbs_line_limit_is_read_and_an_overlong_line_named(tmp_path, monkeypatch):
    """A valid CSV with a long field on line 7 was refused as "CSV Error on Line: 1"."""
    import sdcflow.warehouse.sources as sources

    long = "x" * (3 * 2**20)  # past DuckDB's 2 MB line
    (tmp_path / "l.csv").write_text("a,b\n" + "1,2\n" * 5 + f"3,{long}\n4,5\n")
    data = read_source(tmp_path / "l.csv")
    assert data.num_rows == 7 and data.column("b").to_pylist()[5] == long
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 2**21)  # past sdcflow's own: named
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "l.csv")
    assert e.value.code is Reason.SOURCE_FORMAT and "line 7 " in str(e.value)
    assert "xxx" not in str(e.value)


@pytest.mark.parametrize(
    ("header", "first", "second"),
    [
        ("Turnover,turnover,b", "Turnover", "turnover"),
        ("a,a ,b", "a", "a "),
        ("b, a,A", " a", "A"),
        ("ÉTÉ,été,b", "ÉTÉ", "été"),
    ],
)
def test_names_that_differ_only_in_case_or_spaces_are_duplicates(tmp_path, capsys, header,
                                                                  first, second):  # fmt: skip
    """DuckDB renamed the second (``turnover_1``), and the error then named a column the file
    does not have."""
    (tmp_path / "d.csv").write_text(header + "\n1,2,3\n4,5,6\n")
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "d.csv")
    assert e.value.code is Reason.SOURCE_COLUMNS and e.value.field == second
    assert f"{first!r} and {second!r}" in str(e.value) and "_1" not in str(e.value)
    pq.write_table(pa.table({first: [1, 2], second: [3, 4]}), tmp_path / "d.parquet")
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "d.parquet")
    assert e.value.code is Reason.SOURCE_COLUMNS


@pytest.mark.parametrize("text", ["\n", "\n\n\n", "\r\n \r\n\t\r\n", "   "])
def test_a_csv_of_blank_lines_is_empty(tmp_path, capsys, text):
    """It gave ``column-unknown ... column0``."""
    (tmp_path / "d.csv").write_text(text)
    spec = {"release": "r", "source": "d.csv", "quasi_identifiers": ["a"],
            "method": {"name": "mdav", "k": 2}}  # fmt: skip
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "r.yaml")]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SOURCE_EMPTY and "column0" not in err
