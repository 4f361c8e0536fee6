"""The preflight and ingest without the whole source in the flow's memory (issue 45): DuckDB
reads the file into ``raw.run_<id>`` with the preflight's reader, the records are those the
whole table gave, a file rewritten after the preflight is never ingested under its hash,
and the peak memory does not grow with the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from sdcflow.errors import InputError, Reason
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec
from sdcflow.tasks import ingest as ingest_module
from sdcflow.warehouse.sources import open_source, open_source_hashed, read_source
from sdcflow.warehouse.warehouse import Warehouse

RUN_A, RUN_B = "a" * 32, "b" * 32


def _raw(wh: Warehouse, run: str) -> tuple[list[tuple], pa.Table]:
    """The ``raw`` table of ``run``: its columns and types, and its records in row-id order."""
    with wh.connect(read_only=True) as con:
        table = f"raw.run_{run}"
        types = con.execute(f"DESCRIBE {table}").fetchall()
        records = con.sql(f"SELECT * FROM {table} ORDER BY sdc_row_id").to_arrow_table()
    return [(name, kind) for name, kind, *_ in types], records


def _both(tmp: Path, source: Path, missing=None, columns=None, as_written=()) -> None:
    """The raw table ingested from the Arrow table (the in-memory path, as before) and from
    the file by DuckDB: the same columns, types and records."""
    wh = Warehouse(tmp / "wh.duckdb")
    wh.initialize()
    wh.ingest(read_source(source, missing, columns, as_written), RUN_A)
    data, digest = open_source_hashed(source, missing, columns, as_written)
    assert not data.in_memory
    wh.ingest_source(data, RUN_B, digest)
    (types_a, records_a), (types_b, records_b) = _raw(wh, RUN_A), _raw(wh, RUN_B)
    assert types_b == types_a
    assert records_b.num_rows == records_a.num_rows
    # value by value, row id by row id (DuckDB's IS DISTINCT FROM: NULL is NULL, NaN is NaN,
    # and a NULL is not a NaN)
    differ = " OR ".join(f'a."{c}" IS DISTINCT FROM b."{c}"' for c, _ in types_a)
    with wh.connect(read_only=True) as con:
        (unequal,) = con.execute(
            f"SELECT count(*) FROM raw.run_{RUN_A} a FULL JOIN raw.run_{RUN_B} b "
            f"USING (sdc_row_id) WHERE {differ}"
        ).fetchone()
    assert unequal == 0
    assert not list(tmp.glob(".wh.duckdb.ingest-*"))  # the private copy is gone


def test_a_csv_with_tokens_dates_and_numbers_not_as_written_is_ingested_as_before(tmp_path):
    # 300,000 records: several of DuckDB's chunks and threads, so that file order is tested
    n = 300_000
    rng = np.random.default_rng(3)
    income = rng.normal(1000, 100, n).round(2).astype(str).astype(object)
    income[rng.random(n) < 0.05] = "?"
    code = np.array([f"{v:05d}" for v in rng.integers(0, 99_999, n)], dtype=object)  # 0444
    kept = rng.integers(0, 100, n).astype(str).astype(object)
    kept[7] = "1.50"  # not as data.csv writes 1.5: text (`_not_as_written`)
    region = rng.choice(["north", "south", "NA"], n)
    day = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D")
    frame = pd.DataFrame(
        {
            "id": np.arange(n),
            "income": income,
            "code": code,
            "kept": kept,
            "region": region,
            "day": day.strftime("%d/%m/%Y"),  # days above 12: read day first, unambiguous
            "note": np.where(rng.random(n) < 0.01, "a, quoted; one", "plain"),
        }
    )
    source = tmp_path / "data.csv"
    frame.to_csv(source, index=False)
    _both(tmp_path, source, missing=["?", "NA"], as_written={"kept"})
    types = dict(open_source(source, ["?", "NA"], None, {"kept"}).types)
    assert types["income"] == "DOUBLE" and types["kept"] == "VARCHAR"
    assert types["code"] == "VARCHAR" and types["day"] == "DATE"


def test_a_parquet_file_with_tokens_in_its_text_is_ingested_as_before(tmp_path):
    n = 60_000
    rng = np.random.default_rng(4)
    table = pa.table(
        {
            "x": pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))),
            "y": pa.array(rng.integers(0, 9, n), pa.int32()),
            "name": pa.array(rng.choice(["a", "b", "?", "n/a"], n)),
            "when": pa.array(pd.date_range("2021-01-01", periods=n, freq="h")),
            "amount": pa.array([None if i % 11 == 0 else i / 4 for i in range(n)]),
        }
    )
    source = tmp_path / "data.parquet"
    pq.write_table(table, source, row_group_size=7_000)
    _both(tmp_path, source, missing=["?", "n/a"])
    (tmp_path / "no-tokens").mkdir()
    _both(tmp_path / "no-tokens", source)


def test_a_parquet_file_with_durations_keeps_the_arrow_path(tmp_path):
    source = tmp_path / "data.parquet"
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "d": pd.to_timedelta([1, 2, 3], unit="s")})
    frame.to_parquet(source)
    data, digest = open_source_hashed(source)
    assert data.in_memory and data.types["d"] == "INTERVAL"
    wh = Warehouse(tmp_path / "wh.duckdb")
    wh.initialize()
    wh.ingest_source(data, RUN_A, digest)
    assert _raw(wh, RUN_A)[0][1] == ("d", "INTERVAL")


@pytest.mark.parametrize("how", ["appended", "same size and times"])
def test_a_file_rewritten_after_the_preflight_is_never_ingested(tmp_path, how):
    source = tmp_path / "data.csv"
    source.write_text("x,y\n1,2\n3,4\n")
    data, digest = open_source_hashed(source)
    info = source.stat()
    if how == "appended":
        source.write_text("x,y\n1,2\n3,4\n5,6\n")
    else:  # another record of the same length, its modification time put back
        source.write_text("x,y\n1,2\n3,5\n")
        os.utime(source, ns=(info.st_atime_ns, info.st_mtime_ns))
    wh = Warehouse(tmp_path / "wh.duckdb")
    wh.initialize()
    with pytest.raises(InputError) as caught:
        wh.ingest_source(data, RUN_A, digest)
    assert caught.value.code == Reason.SOURCE_CHANGED
    assert "changed after the preflight read it" in str(caught.value)
    with wh.connect(read_only=True) as con:
        tables = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'raw'"
        ).fetchone()
    assert tables == (0,)
    assert not list(tmp_path.glob(".wh.duckdb.ingest-*"))


def test_ingest_streamed_returns_the_record_count_and_reads_nothing_back(tmp_path, monkeypatch):
    source = tmp_path / "data.csv"
    source.write_text("id,x,y\n" + "".join(f"{i},{i % 7},{i % 5}\n" for i in range(40)))
    spec = tmp_path / "release.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "release": "t",
                "source": "data.csv",
                "id_column": "id",
                "quasi_identifiers": ["x", "y"],
                "method": {"name": "mdav", "k": 3},
                "output": "out",
                "warehouse": "wh.duckdb",
                "reports": "reports",
            }
        )
    )
    plan = plan_release(load_spec(spec))
    wh = Warehouse(plan.spec.warehouse_path)
    wh.initialize()
    monkeypatch.setattr(ingest_module, "get_run_logger", lambda: _Quiet())
    monkeypatch.setattr(
        Warehouse, "read_frame", lambda *a: pytest.fail("the streamed ingest read the table back")
    )
    assert ingest_module.ingest_streamed.fn(plan, wh, RUN_A) == 40
    assert wh.count_rows("raw", RUN_A) == 40


class _Quiet:
    def info(self, *args: object) -> None:
        pass


# ---------------------------------------------------------------------------------------
# the memory of the preflight and ingest does not grow with the file

_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from sdcflow.preflight.plan import plan_release
    from sdcflow.spec.load import load_spec
    from sdcflow.warehouse.warehouse import Warehouse
    plan = plan_release(load_spec(sys.argv[1]))
    wh = Warehouse(plan.spec.warehouse_path)
    wh.initialize()
    wh.ingest_source(plan.data, "c" * 32, plan.source_sha256)
    rows = wh.count_rows("raw", "c" * 32)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"rows": rows, "peak": peak}))
    """
)


def _census_csv(folder: Path, n: int) -> Path:
    """A census-like CSV (written by DuckDB, never held here): ``id``, 10 numeric keys, three
    categorical keys (two of them missing now and then, as ``''``), a text column the
    release does not publish."""
    folder.mkdir()
    numbers = ", ".join(f"round(random() * 100 - 50, 3) AS x{j}" for j in range(10))
    con = duckdb.connect()
    con.execute("SELECT setseed(0.5)")
    con.execute(
        f"COPY (SELECT range AS id, {numbers}, "
        "CASE WHEN random() < 0.002 THEN NULL ELSE 'sex_' || (range % 2) END AS sex, "
        "CASE WHEN random() < 0.002 THEN NULL ELSE 'region_' || (range % 12) END AS region, "
        "'activity_' || (range % 8) AS activity, 'note ' || (range % 1000) AS note "
        f"FROM range({n})) TO '{folder / 'data.csv'}' (HEADER, DELIMITER ',')"
    )
    con.close()
    spec = {
        "release": "mem",
        "source": "data.csv",
        "id_column": "id",
        "quasi_identifiers": [*(f"x{j}" for j in range(10)), "sex", "region", "activity"],
        "edits": ["x0 >= -1000"],
        "method": {"name": "mdav", "k": 5, "cell_size": 125000},
        "missing_values": [""],
        "output": "out",
        "warehouse": "wh.duckdb",
        "reports": "reports",
    }
    (folder / "release.yaml").write_text(yaml.safe_dump(spec))
    return folder / "release.yaml"


def _peak(spec: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(spec)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "SDCFLOW_DUCKDB_MEMORY_LIMIT": "512MiB"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_preflight_and_ingest_peak_does_not_grow_with_the_file(tmp_path):
    """2,000,000 records against 200,000: the Arrow table of the larger file alone is about
    190 MB (15 columns: 11 of 8 bytes, four short texts); the peak of the process that
    plans and ingests it grows by less than a third of that. The numeric keys have no
    missing value and no column is published as it is: else the undeclared-relation search
    holds the numeric keys and those columns whole, about 28 bytes a record for each
    (docs/concepts/scale.md, "The source, read once by DuckDB")."""
    small, large = 200_000, 2_000_000
    a = _peak(_census_csv(tmp_path / "small", small))
    b = _peak(_census_csv(tmp_path / "large", large))
    assert (a["rows"], b["rows"]) == (small, large)
    table_bytes = read_source(tmp_path / "small" / "data.csv", [""]).nbytes * (large // small)
    assert b["peak"] - a["peak"] < table_bytes / 3, (a, b, table_bytes)
